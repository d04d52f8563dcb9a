# frozen_string_literal: true

require "forwardable"

module LittleGhost
  module Sandboxes
    # The Rust extension defines Native's construction and probe (the choice of backend is the core's); every
    # operation is the backend's, delegated here. The delegated methods are documented in documentation/native.rb.
    class Native < LittleGhost::Sandbox
      extend Forwardable

      def_delegators :backend, :effective_policy, :capabilities, :writable?, :allows?, :scope,
        :read, :list, :write, :replace, :execute_program, :start_program

      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> result of the block
      #
      # Opens the backend and returns this Native sandbox (or, with a block, the block's value after closing).
      #
      # Raises what the backend's open raises (LittleGhost::DependencyError when +bwrap+ is missing or user
      # namespaces are blocked).
      #
      #   sandbox.open.equal?(sandbox)   # => true
      def open(**options, &block)
        backend.open(**options)
        super
      end

      # :call-seq:
      #   close -> nil
      #
      # Closes the backend (terminating the processes and sessions it started).
      #
      #   sandbox.close   # => nil
      def close
        backend.close
        super
      end
    end
  end
end
