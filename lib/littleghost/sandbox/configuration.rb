# frozen_string_literal: true

#--
# The thin configuration layer (SPEC §23): LittleGhost.configure stores
# validated sandbox and workspace declarations; Sandbox.build and
# Workspace.build turn a declaration into an instance.
#++
module LittleGhost
  class Sandbox
    # Declarations: a Symbol (or String) provider name, a callable, or a Hash with :provider (CF.2).
    module Declaration
      module_function

      # Returns the declaration (a String name becomes a Symbol; a Hash gets Symbol keys and is frozen);
      # raises ArgumentError otherwise.
      def validate(declaration, base:, label:)
        return declaration if declaration.nil? || declaration.is_a?(Symbol)
        return provider_name(declaration, label) if declaration.is_a?(String)
        return validate_hash(declaration, base: base, label: label) if declaration.is_a?(Hash)
        return declaration if declaration.respond_to?(:call)

        raise ArgumentError, "#{label} declaration must be a Symbol, a callable, or a Hash with :provider, " \
                             "got #{declaration.inspect}"
      end

      # Symbolises and freezes a Hash declaration after checking its :provider.
      def validate_hash(declaration, base:, label:)
        declaration = declaration.to_h { |key, value| [symbolize_key(key, label), value] }
        declaration[:provider] = provider_name(declaration[:provider], label) if declaration[:provider].is_a?(String)
        unless declaration.key?(:provider)
          raise ArgumentError, "#{label} declaration Hash needs :provider " \
                               "(a Symbol, a callable, or a #{base} subclass)"
        end
        provider = declaration[:provider]
        unless provider_like?(provider, base)
          raise ArgumentError, "#{label} provider must be a Symbol, a callable, or a #{base} subclass, " \
                               "got #{provider.inspect}"
        end
        declaration.freeze
      end

      # A declaration key as a Symbol; a String that is not valid text raises ArgumentError, not EncodingError.
      def symbolize_key(key, label)
        return key unless key.respond_to?(:to_sym)
        raise ArgumentError, "#{label} declaration key #{key.inspect} is not valid text" if key.is_a?(String) && !key.valid_encoding?

        key.to_sym
      end

      # A String provider name ("native") as the Symbol the registry uses.
      def provider_name(name, label)
        raise ArgumentError, "#{label} provider name #{name.inspect} is not valid text" unless name.valid_encoding?

        name.to_sym
      end

      # True for a Symbol, a callable, or a subclass of base.
      def provider_like?(provider, base)
        provider.is_a?(Symbol) || (provider.is_a?(Class) ? provider <= base : provider.respond_to?(:call))
      end

      # A backend's "unknown keyword: ...; valid keywords: ..." read as a declaration's: the valid list also
      # names :provider and the Policy keys that Sandbox.build takes before the backend sees the rest.
      def with_declaration_keys(error)
        match = /\A(unknown keywords?: .*); valid keywords: (.*)\z/m.match(error.message)
        return error unless match

        valid = (match[2].split(", ").map { |name| name.delete_prefix(":").to_sym } +
                 [:provider, *Policy::COMMON_KEYS] - [:workspace]).uniq.sort
        ArgumentError.new("#{match[1]}; valid keys: #{valid.map(&:inspect).join(', ')}").tap do |replaced|
          replaced.set_backtrace(error.backtrace)
        end
      end

      # The provider as a Class or callable, resolving a Symbol through registry.
      def resolve(provider, registry)
        provider.is_a?(Symbol) ? registry.resolve_provider(provider) : provider
      end

      # klass.new(**options) or callable.call(**options), checked to return an instance of expected.
      def instantiate(provider, options, expected:, label:)
        result = provider.is_a?(Class) ? provider.new(**options) : provider.call(**options)
        return result if result.is_a?(expected)

        raise ConfigurationError, "#{label} provider returned #{result.class}, expected #{expected}"
      end
    end

    # Holds what LittleGhost.configure sets (CF.1): the sandbox and workspace declarations.
    #
    #   LittleGhost.configure do |config|
    #     config.workspace = {provider: :directory, root: "/srv/agent", paths: {source: "source"}}
    #     config.sandbox = {provider: :native, files: {root: :read_write, source: :read_only}, network: :none}
    #   end
    class Configuration
      # The sandbox declaration (nil until set): a Symbol provider name, a callable, or a frozen Hash with
      # <tt>:provider</tt>; pass it to Sandbox.build.
      #
      #   LittleGhost.configuration.sandbox   # => {provider: :native, files: {...}, network: :none}
      attr_reader :sandbox

      # The workspace declaration (nil until set); pass it to Workspace.build.
      #
      #   LittleGhost.configuration.workspace   # => {provider: :directory, root: "/srv/agent"}
      attr_reader :workspace

      # Stores a validated sandbox declaration (nil means Sandboxes::Unrestricted): a provider name (Symbol or
      # String), a callable, or a Hash with <tt>:provider</tt> plus Policy keys, +limits+, +profiles+ and backend
      # options. Raises ArgumentError for anything else.
      #
      #   config.sandbox = {provider: "native", files: {root: :read_write}, tmpfs_size: 64 << 20}
      def sandbox=(declaration)
        @sandbox = Declaration.validate(declaration, base: Sandbox, label: "sandbox")
      end

      # Stores a validated workspace declaration: a Hash with <tt>:provider</tt> (<tt>:directory</tt> is
      # Workspace) and the keywords of Workspace.new, a provider name, or a callable. Raises ArgumentError for
      # anything else.
      #
      #   config.workspace = {provider: :directory, root: "/srv/agent", paths: {source: "source"}}
      def workspace=(declaration)
        @workspace = Declaration.validate(declaration, base: Workspace, label: "workspace")
      end
    end

    # :call-seq:
    #   build(declaration, workspace:) -> Sandbox
    #   build({provider: :remote, endpoint: {...}}) -> Sandboxes::Remote
    #
    # Builds the sandbox a declaration describes for +workspace+ (CF.3), unopened. A provider without a local
    # workspace (<tt>:remote</tt>, whose files are a daemon's) is built without one; any other says it is missing. +declaration+ is nil
    # (Sandboxes::Unrestricted), a provider name (Symbol or String, resolved with ::resolve_provider), a callable, or
    # a Hash with <tt>:provider</tt>: its Policy keys (+files+, +runtime_paths+, +root_filesystem+, +environment+,
    # +network+) become the policy and the rest (+limits+, +profiles+, backend options) go to the backend's +new+.
    #
    # Raises ArgumentError for a malformed declaration, LittleGhost::DependencyError for an unknown provider
    # (listing the registered ones), LittleGhost::ConfigurationError when a callable returns something else than a
    # Sandbox, and what the backend's constructor raises (LittleGhost::PolicyError, LittleGhost::CapabilityError).
    #
    #   sandbox = LittleGhost::Sandbox.build(
    #     {provider: :native, files: {root: :read_write, source: :read_only}, network: :none, limits: {read_bytes: 65_536}},
    #     workspace: workspace
    #   )
    #   sandbox.class   # => LittleGhost::Sandboxes::Native
    def self.build(declaration, workspace: nil)
      declaration = Declaration.validate(declaration, base: Sandbox, label: "sandbox")
      return Sandboxes::Unrestricted.new(workspace: workspace) if declaration.nil?

      declaration = { provider: declaration } unless declaration.is_a?(Hash)
      common = declaration.slice(*Policy::COMMON_KEYS)
      options = declaration.reject { |key, _| key == :provider || key == :policy || common.key?(key) }
      policy = Policy.coerce(declaration[:policy], **common)
      provider = Declaration.resolve(declaration[:provider], Sandbox)
      begin
        # A provider with no local workspace (:remote) is built without one; the others say it is missing.
        given = workspace.nil? ? {} : { workspace: workspace }
        Declaration.instantiate(provider, { **given, policy: policy, **options },
                                expected: Sandbox, label: "sandbox")
      rescue ArgumentError => e
        raise Declaration.with_declaration_keys(e)
      end
    end
  end

  class Workspace
    # :call-seq:
    #   build(declaration) -> Workspace
    #
    # Builds the (unopened) workspace a declaration describes (CF.4): a Hash with <tt>:provider</tt>
    # (<tt>:directory</tt> is Workspace itself) and the keywords of ::new, a provider name or a callable.
    #
    # Raises LittleGhost::ConfigurationError "no workspace is configured" for nil, LittleGhost::DependencyError for
    # an unknown provider, ArgumentError for a malformed declaration.
    #
    #   workspace = LittleGhost::Workspace.build({provider: :directory, root: "/srv/agent", paths: {source: "source"}})
    def self.build(declaration)
      declaration = Sandbox::Declaration.validate(declaration, base: Workspace, label: "workspace")
      if declaration.nil?
        raise ConfigurationError, "no workspace is configured; set config.workspace = " \
                                  "{provider: :directory, root: \"...\"}"
      end

      declaration = { provider: declaration } unless declaration.is_a?(Hash)
      provider = Sandbox::Declaration.resolve(declaration[:provider], Workspace)
      Sandbox::Declaration.instantiate(provider, declaration.except(:provider),
                                       expected: Workspace, label: "workspace")
    end
  end

  # Defined only when the framework has not defined them already (0.3).
  unless respond_to?(:configuration)
    # The process-wide LittleGhost::Sandbox::Configuration (created on first use).
    #
    #   LittleGhost::Sandbox.build(LittleGhost.configuration.sandbox, workspace: workspace)
    def self.configuration
      @configuration ||= Sandbox::Configuration.new
    end

    # Forgets every LittleGhost.configure setting, so the next LittleGhost.configuration is a fresh one.
    # For test suites, so one example's configuration never leaks into the next:
    #
    #   RSpec.configure { |config| config.after { LittleGhost.reset_configuration! } }
    #   # Minitest: def teardown = LittleGhost.reset_configuration!
    #
    # Defined only with our configuration: a framework that brings its own resets its own.
    def self.reset_configuration!
      @configuration = nil
    end
  end

  unless respond_to?(:configure)
    # :call-seq:
    #   configure { |config| ... } -> Configuration
    #
    # Yields the process-wide LittleGhost::Sandbox::Configuration and returns it.
    #
    #   LittleGhost.configure do |config|
    #     config.sandbox = {provider: :native, files: {root: :read_write}, network: :none}
    #   end
    def self.configure
      yield configuration if block_given?
      configuration
    end
  end
end
