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

      # Documented as Native.new in documentation/native.rb; the choice of backend is the extension's, and the
      # backend's state (workspace, policy, limits, what it enforces) is adopted rather than built by Sandbox#initialize.
      def initialize(workspace:, platform: nil, **options) # :nodoc:
        platform = RUBY_PLATFORM if platform.nil?
        backend_class = Native.__send__(:backend_class, platform, options)
        adopt(backend_class.new(workspace: workspace, platform: platform, **options))
      end

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
