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
      # The extension's own methods are reached through Native itself, so a subclass's method of the same name
      # cannot stand in for them. An explicit <tt>workspace: nil</tt> is a missing workspace, as it always was.
      def initialize(workspace: nil, platform: nil, **options) # :nodoc:
        raise ArgumentError, "missing keyword: :workspace" if workspace.nil?

        platform = RUBY_PLATFORM if platform.nil?
        backend_class = Native.singleton_class.instance_method(:backend_class).bind_call(Native, platform, options)
        backend = backend_class.new(workspace: workspace, platform: platform, **options)
        Native.instance_method(:adopt).bind_call(self, backend)
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
