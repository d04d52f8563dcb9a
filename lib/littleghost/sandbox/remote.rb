# frozen_string_literal: true

#--
# The Ruby-shaped part of LittleGhost::Sandboxes::Remote (docs/design.md "The remote provider"): its keywords, the
# placeholder workspace that stands for the daemon's root, and Remote::Scope, which carries its narrowings with each
# call. The client, every call and every conversion of an answer are the Rust extension's (ruby_api/remote.rs).
#++
module LittleGhost
  module Sandboxes
    # A sandbox whose files and programs are those of a littleghost-sandboxd (or any agent-sandbox sandboxd) reached
    # over the network: files through its REST API, programs through its gRPC process service, denials streamed
    # back. What confines them is the daemon's <tt>--policy</tt>; #capabilities reports what the daemon says it
    # enforces.
    #
    #   sandbox = LittleGhost::Sandbox.build(
    #     {provider: :remote, endpoint: {grpc: "127.0.0.1:9090", rest: "http://127.0.0.1:8080"}, token: ENV["SANDBOX_TOKEN"]}
    #   )
    #   sandbox.write("main.py", "print(6 * 7)\n")
    #   sandbox.execute_program(["python3", "main.py"], timeout: 10).stdout   # => "42\n"
    #   sandbox.close
    #
    # Errors: a malformed endpoint or token raises ArgumentError; a daemon that cannot be reached, or that refuses
    # the token, LittleGhost::DependencyError; a refused or failed operation LittleGhost::ToolError with the daemon's
    # (the broker's) message; an option the protocol cannot carry LittleGhost::CapabilityError.
    class Remote < Sandbox
      # Stands for the daemon's root where a Sandbox keeps its workspace: there is no local directory.
      #
      #   sandbox.workspace.root   # => "remote:http://127.0.0.1:8080"
      class Root
        # "remote:" and the daemon's REST address.
        #
        #   sandbox.workspace.root   # => "remote:http://127.0.0.1:8080"
        attr_reader :root

        # The root of the daemon at +rest+.
        #
        #   LittleGhost::Sandboxes::Remote::Root.new("http://127.0.0.1:8080").root   # => "remote:http://127.0.0.1:8080"
        def initialize(rest)
          @root = "remote:#{rest}"
          freeze
        end

        # Raises ArgumentError: no local path stands for a remote file.
        #
        #   sandbox.workspace.resolve("notes.md")   # ArgumentError
        def resolve(_reference)
          raise ArgumentError, "a remote sandbox's files are the daemon's; use the sandbox's file operations"
        end

        # No variables: a program's environment is the daemon's to give.
        #
        #   sandbox.workspace.environment   # => {}
        def environment
          {}.freeze
        end

        # No named paths: the daemon has its root alone.
        #
        #   sandbox.workspace.paths   # => {}
        def paths
          {}.freeze
        end
      end

      # :call-seq:
      #   new(endpoint:, token: nil, profiles: {}, limits: {}) -> Remote
      #
      # +endpoint+ is <tt>{grpc: "HOST:PORT", rest: "http://HOST:PORT"}</tt>; +token+ is sent as
      # <tt>authorization: Bearer TOKEN</tt> with every call. Sends nothing: the first call (or #open) connects.
      # A policy (+files+, +network+...) cannot be given here: the daemon's <tt>--policy</tt> is the policy, and a
      # rule given here could not be enforced, so it raises LittleGhost::CapabilityError. +limits+ gives the default
      # +max_output_bytes+ of a run.
      #
      #   LittleGhost::Sandboxes::Remote.new(endpoint: {grpc: "127.0.0.1:9090", rest: "http://127.0.0.1:8080"})
      def initialize(endpoint:, token: nil, workspace: nil, policy: nil, profiles: {}, limits: {})
        unless endpoint.respond_to?(:to_h)
          raise ArgumentError, "remote endpoint must be a Hash {grpc: \"HOST:PORT\", rest: \"http://HOST:PORT\"}"
        end

        endpoint = endpoint.to_h.transform_keys(&:to_sym)
        unknown = endpoint.keys - %i[grpc rest]
        raise ArgumentError, "unknown remote endpoint keys: #{unknown.map(&:inspect).join(", ")}" unless unknown.empty?

        addresses = %i[grpc rest].map do |key|
          endpoint.fetch(key) { raise ArgumentError, "remote endpoint needs #{key}:" }.then do |value|
            raise TypeError, "remote endpoint #{key}: must be a String (got #{value.class})" unless value.is_a?(String)

            value
          end
        end
        raise TypeError, "remote token must be a String (got #{token.class})" unless token.nil? || token.is_a?(String)
        unless policy.nil? || Sandbox::Policy.coerce(policy) == Sandbox::Policy.coerce(nil)
          raise CapabilityError, "the remote provider's policy is littleghost-sandboxd's --policy; " \
                                 "give files, network and limits there, not here"
        end

        super(workspace: workspace || Root.new(addresses[1]), profiles: profiles, limits: limits)
        connect(addresses[0], addresses[1], token)
      end

      # Whether file mutation is possible: the daemon enforces writes and one of the grants its policy publishes is
      # read-write (a daemon that publishes no grants: writes alone). See Sandbox#writable?.
      #
      #   sandbox.writable?   # => false for a daemon whose --policy has files: {root: read_only}
      def writable?
        scoped_writable?(nil)
      end

      # :call-seq:
      #   scope(profile = nil, files: nil, capabilities: nil, network: nil) -> Remote::Scope
      #
      # A narrower view of the same daemon: each call through it carries its narrowing (the
      # <tt>x-littleghost-scope</tt> header, gRPC metadata) and the daemon only ever narrows. +files+ names the
      # daemon's grants (<tt>:root</tt>) with their access; +capabilities+ must be among #capabilities' features.
      #
      #   sandbox.scope(files: {root: :read_only}).write("a.txt", "x")   # LittleGhost::ToolError (the daemon refuses)
      def scope(profile = nil, files: nil, runtime_paths: nil, capabilities: nil, network: nil)
        Scope.new(self, []).scope(profile, files: files, runtime_paths: runtime_paths, capabilities: capabilities,
                                           network: network)
      end

      # A narrowed view of a Remote: the same operations, each call sent with every narrowing of its chain.
      class Scope
        # The Remote sandbox.
        #
        #   sandbox.scope(network: :none).sandbox.equal?(sandbox)   # => true
        attr_reader :sandbox
        # The narrowings, outermost first: Hashes of +files+, +capabilities+ and +network+.
        #
        #   sandbox.scope(network: :none).narrowings   # => [{network: :none}]
        attr_reader :narrowings

        # A view of +sandbox+ narrowed by +narrowings+ (Remote#scope builds it).
        #
        #   LittleGhost::Sandboxes::Remote::Scope.new(sandbox, [{capabilities: [:filesystem_read]}])
        def initialize(sandbox, narrowings)
          @sandbox = sandbox
          @narrowings = narrowings.freeze
          freeze
        end

        # What this scope may do: the sandbox's capabilities, only the features every narrowing kept.
        #
        #   sandbox.scope(capabilities: [:read]).capabilities.features   # => [:filesystem_read]
        def capabilities
          narrowings.reduce(sandbox.capabilities) do |kept, narrowing|
            next kept unless narrowing[:capabilities]

            kept.intersect(Sandbox::Capabilities.new(features: narrowing[:capabilities],
                                                     network_modes: kept.network_modes, isolation: kept.isolation))
          end
        end

        # Whether capabilities support +feature+ (and +value+).
        #
        #   sandbox.scope(capabilities: [:read]).supports?(:write)   # => false
        def supports?(feature, value = nil)
          capabilities.supports?(feature, value)
        end

        # Whether writes are possible through this scope: the daemon's published grants, each at the narrowest access
        # of the chain (see Remote#writable?).
        #
        #   sandbox.scope(files: {root: :read_only}).writable?   # => false
        def writable?
          supports?(:filesystem_write) && sandbox.__send__(:scoped_writable?, self)
        end

        # Whether +operation+ (<tt>:read</tt>, <tt>:list</tt>, <tt>:write</tt>, <tt>:replace</tt>, <tt>:execute</tt> or a
        # feature name) is allowed through this scope, and with a logical +path+ whether the daemon's broker allows it
        # there under the scope's narrowings (docs/spec.md SC.13, 14.12: a file not there yet may be written, a symlink
        # or an escaping path is not). A bad, hidden or escaping path gives false; an unreachable daemon raises
        # LittleGhost::DependencyError.
        #
        #   sandbox.scope(files: {root: :read_only}).allows?(:write, "notes.md")   # => false
        def allows?(operation, path = nil)
          unless path.nil? || path.is_a?(String) || (path.respond_to?(:to_path) && path.to_path.is_a?(String))
            raise TypeError, "path must be a String or respond to to_path (got #{path.class})"
          end

          feature = Sandbox::Capabilities.normalize(operation)
          return false unless supports?(feature)
          return true if path.nil?

          sandbox.__send__(:scoped_allows?, feature.to_s, path, self)
        rescue PolicyError, ToolError, KeyError, ArgumentError
          false
        end

        # A narrower scope (see Remote#scope); a capability this scope lacks raises LittleGhost::CapabilityError.
        #
        #   sandbox.scope(capabilities: [:read, :list]).scope(capabilities: [:read])
        def scope(profile = nil, files: nil, runtime_paths: nil, capabilities: nil, network: nil)
          raise ArgumentError, "scope profile cannot be combined with explicit options" if profile && (files || runtime_paths || capabilities || network)

          raise CapabilityError, "the remote provider's scopes take explicit options, not profiles" if profile
          raise CapabilityError, "the remote provider's scopes take no runtime_paths:" if runtime_paths

          narrowing = {}
          if files
            narrowing[:files] = files.to_h.to_h { |name, access| [name.to_sym, access.to_sym] }.freeze
          end
          if capabilities
            kept = self.capabilities
            wanted = Array(capabilities).map { |feature| Sandbox::Capabilities.normalize(feature) }
            widened = wanted.reject { |feature| kept.supports?(feature) }
            raise CapabilityError, "scope cannot widen capabilities: #{widened.map(&:inspect).join(", ")}" unless widened.empty?

            narrowing[:capabilities] = wanted.freeze
          end
          if network
            mode = network.to_sym
            unless mode == :none || self.capabilities.supports?(:network, mode)
              raise CapabilityError, "scope cannot widen network to #{mode.inspect}"
            end

            narrowing[:network] = mode
          end
          self.class.new(sandbox, narrowings + [narrowing.freeze])
        end

        %i[read list write replace].each do |operation|
          feature = Sandbox::Capabilities.normalize(operation)
          define_method(operation) do |*args, context: nil|
            refuse(feature) unless supports?(feature)
            sandbox.__send__(operation, *args, context: context, scope: self)
          end
        end

        %i[execute_program start_program].each do |operation|
          define_method(operation) do |command, **options, &block|
            refuse(:process_execute) unless supports?(:process_execute)
            sandbox.__send__(operation, command, **options, scope: self, &block)
          end
        end

        # Runs +command+ through <tt>/bin/sh -c</tt> (as Sandbox#execute).
        #
        #   sandbox.scope(network: :none).execute("echo $((6 * 7))", timeout: 5).stdout   # => "42\n"
        def execute(command, timeout:, **options, &block)
          execute_program(["/bin/sh", "-c", String(command)], timeout: timeout, **options, &block)
        end

        # Without a block self; with one, yields self and returns the block's value. A scope owns nothing.
        #
        #   sandbox.scope(network: :none).open { |scope| scope.read("notes.md") }
        def open(run: nil)
          block_given? ? yield(self) : self
        end

        # A scope owns nothing: nil.
        #
        #   sandbox.scope(network: :none).close   # => nil
        def close
          nil
        end

        # The narrowings, not the sandbox.
        #
        #   sandbox.scope(network: :none).inspect   # => "#<LittleGhost::Sandboxes::Remote::Scope narrowings=[{network: :none}]>"
        def inspect
          "#<#{self.class.name} narrowings=#{narrowings.inspect}>"
        end

        private

        def refuse(feature)
          raise ToolError, "Sandbox scope does not allow #{feature.to_s.tr("_", " ")}"
        end
      end
    end
  end
end
