# frozen_string_literal: true

require "spec_helper"

RSpec.describe "LittleGhost configuration layer" do
  # A Ruby backend, registered like a built-in one, that records what it was built with.
  let(:recording_sandbox) do
    Class.new(LittleGhost::Sandbox) do
      attr_reader :options

      def initialize(workspace:, policy: nil, profiles: {}, limits: {}, **options)
        super(workspace: workspace, policy: policy, profiles: profiles, limits: limits)
        @options = options
      end
    end
  end

  around do |example|
    Dir.mktmpdir("configuration-spec") do |dir|
      @workspace = LittleGhost::Workspace.new(root: dir, paths: { source: "src", home: "home" })
      example.run
    end
  end

  attr_reader :workspace

  let(:configuration) { LittleGhost::Sandbox::Configuration.new }

  describe "LittleGhost.configure" do
    it "yields the configuration and returns it" do
      yielded = nil
      result = LittleGhost.configure { |config| yielded = config }
      expect(result).to equal(yielded)
      expect(result).to equal(LittleGhost.configuration)
    end

    it "leaves a framework's configure and configuration alone (0.3)" do
      script = <<~RUBY
        module LittleGhost
          def self.configuration = :framework_configuration
          def self.configure = :framework_configure
        end
        $LOAD_PATH.unshift(#{File.expand_path("../lib", __dir__).inspect})
        require "littleghost/sandbox"
        print [LittleGhost.configure, LittleGhost.configuration, LittleGhost::Sandbox.respond_to?(:build)].inspect
      RUBY
      output = IO.popen([RbConfig.ruby, "-e", script], err: %i[child out], &:read)
      expect(output).to eq("[:framework_configure, :framework_configuration, true]")
    end

    it "runs the class-page example and builds the sandbox it declares" do
      LittleGhost::Sandbox.register_provider(:recording_for_spec, recording_sandbox)
      previous = LittleGhost.configuration.sandbox
      LittleGhost.configure do |config|
        config.sandbox = {
          provider: :recording_for_spec,
          files: { root: :read_write, source: :read_only },
          runtime_paths: { home: :read_write },
          network: :none
        }
      end
      sandbox = LittleGhost::Sandbox.build(LittleGhost.configuration.sandbox, workspace: workspace)
      expect(sandbox).to be_a(recording_sandbox)
      expect(sandbox.workspace).to equal(workspace)
      expect(sandbox.policy).to eq(LittleGhost::Sandbox::Policy.new(files: { root: :read_write, source: :read_only },
                                                                   runtime_paths: { home: :read_write },
                                                                   network: :none))
      expect(sandbox.options).to eq({})
    ensure
      LittleGhost.configuration.sandbox = previous
    end

    it "stores the class-page declaration for :native as written" do
      declaration = { provider: :native, files: { root: :read_write, source: :read_only },
                      runtime_paths: { home: :read_write }, network: :none }
      configuration.sandbox = declaration
      expect(configuration.sandbox).to eq(declaration)
      expect(configuration.sandbox).to be_frozen
    end
  end

  describe "declaration validation (CF.2)" do
    it "accepts Symbols, callables, Hashes with a provider, and nil" do
      callable = ->(**) {}
      [:bubblewrap, callable, { provider: :native }, { provider: callable },
       { "provider" => recording_sandbox }, nil].each do |declaration|
        configuration.sandbox = declaration
      end
      expect(configuration.sandbox).to be_nil
      configuration.sandbox = { "provider" => :native, "limits" => { read_bytes: 1 } }
      expect(configuration.sandbox).to eq(provider: :native, limits: { read_bytes: 1 })
    end

    it "rejects everything else with ArgumentError" do
      expect { configuration.sandbox = { files: {} } }.to raise_error(ArgumentError, /needs :provider/)
      expect { configuration.sandbox = { provider: 5 } }
        .to raise_error(ArgumentError, /sandbox provider must be a Symbol, a callable, or a LittleGhost::Sandbox subclass/)
      expect { configuration.sandbox = "\xff".b.force_encoding("UTF-8") }.to raise_error(ArgumentError, /not valid text/)
      expect { configuration.sandbox = { provider: String } }.to raise_error(ArgumentError, /sandbox provider must be/)
      expect { configuration.sandbox = { provider: LittleGhost::Workspace } }
        .to raise_error(ArgumentError, /sandbox provider must be/)
      expect { configuration.workspace = { provider: recording_sandbox } }
        .to raise_error(ArgumentError, /workspace provider must be/)
      expect { configuration.workspace = 5 }.to raise_error(ArgumentError, /workspace declaration must be/)
    end
  end

  describe "String provider names" do
    it "accepts \"native\" wherever :native is accepted" do
      configuration.sandbox = "native"
      expect(configuration.sandbox).to eq(:native)
      configuration.sandbox = { provider: "native", network: :none }
      expect(configuration.sandbox).to eq(provider: :native, network: :none)
      expect(LittleGhost::Sandbox.build("unrestricted", workspace: workspace))
        .to be_an_instance_of(LittleGhost::Sandboxes::Unrestricted)
      expect(LittleGhost::Sandbox.build({ provider: "unrestricted" }, workspace: workspace))
        .to be_an_instance_of(LittleGhost::Sandboxes::Unrestricted)
    end

    it "says an unknown name is unknown and lists the registered ones, instead of sounding like a missing install" do
      expect { LittleGhost::Sandbox.build(:bwrap, workspace: workspace) }
        .to raise_error(LittleGhost::DependencyError, /:bwrap is not available; it is not a registered sandbox provider \(registered: .*:bubblewrap/)
    end
  end

  describe "LittleGhost.reset_configuration!" do
    it "gives the next example a fresh configuration, so settings never leak between tests" do
      LittleGhost.configure { |config| config.sandbox = :bubblewrap }
      LittleGhost.reset_configuration!
      expect(LittleGhost.configuration.sandbox).to be_nil
      expect(LittleGhost.configure).to equal(LittleGhost.configuration)
    end
  end

  describe "LittleGhost::Sandbox.build (CF.3)" do
    it "builds Sandboxes::Unrestricted when nothing is declared" do
      sandbox = LittleGhost::Sandbox.build(nil, workspace: workspace)
      expect(sandbox).to be_an_instance_of(LittleGhost::Sandboxes::Unrestricted)
      expect(sandbox.workspace).to equal(workspace)
    end

    it "resolves a Symbol provider through the registry" do
      expect(LittleGhost::Sandbox.build(:unrestricted, workspace: workspace))
        .to be_an_instance_of(LittleGhost::Sandboxes::Unrestricted)
      expect { LittleGhost::Sandbox.build(:no_such_backend, workspace: workspace) }
        .to raise_error(LittleGhost::DependencyError, /\Asandbox provider :no_such_backend is not available; it is not a registered sandbox provider \(registered: .*:bubblewrap, :landlock, :native, .*:seatbelt, :unrestricted.*\)\z/)
    end

    it "merges the common keys over :policy and passes the rest to the class" do
      declaration = { provider: recording_sandbox, policy: { files: { root: :read_write }, network: :inherit },
                      network: :none, limits: { read_bytes: 10 }, profiles: { docs: { files: {} } },
                      executable: "/usr/bin/true" }
      sandbox = LittleGhost::Sandbox.build(declaration, workspace: workspace)
      expect(sandbox.policy.files).to eq(root: :read_write)
      expect(sandbox.policy.network.mode).to eq(:none)
      expect(sandbox.limits.read_bytes).to eq(10)
      expect(sandbox.options).to eq(executable: "/usr/bin/true")
    end

    it "calls a callable provider with workspace:, policy: and the options" do
      received = nil
      built = recording_sandbox.new(workspace: workspace)
      provider = lambda do |**options|
        received = options
        built
      end
      expect(LittleGhost::Sandbox.build({ provider: provider, files: { root: :read_write }, extra: 1 },
                                        workspace: workspace)).to equal(built)
      expect(received.keys).to contain_exactly(:workspace, :policy, :extra)
      expect(received[:policy].workspace_writable?).to be(true)
      expect(LittleGhost::Sandbox.build(provider, workspace: workspace)).to equal(built)
    end

    it "refuses a provider result that is not a Sandbox" do
      expect { LittleGhost::Sandbox.build(->(**) { :nope }, workspace: workspace) }
        .to raise_error(LittleGhost::ConfigurationError, "sandbox provider returned Symbol, expected LittleGhost::Sandbox")
    end

    it "raises the policy's own errors for a bad declaration" do
      expect { LittleGhost::Sandbox.build({ provider: recording_sandbox, files: { root: :execute } }, workspace: workspace) }
        .to raise_error(LittleGhost::PolicyError, /must be :read_only or :read_write/)
      expect { LittleGhost::Sandbox.build({ provider: recording_sandbox, policy: :strict }, workspace: workspace) }
        .to raise_error(LittleGhost::PolicyError, /sandbox policy must be a Hash/)
    end
  end

  describe "LittleGhost::Workspace.build (CF.4)" do
    it "builds through :directory, a subclass or a callable" do
      Dir.mktmpdir do |dir|
        workspace = LittleGhost::Workspace.build(provider: :directory, root: dir, paths: { src: "src" })
        expect(workspace).to be_an_instance_of(LittleGhost::Workspace)
        expect(workspace.path(:src)).to eq(File.join(File.expand_path(dir), "src"))
        subclass = Class.new(LittleGhost::Workspace)
        expect(LittleGhost::Workspace.build(provider: subclass, root: dir)).to be_an_instance_of(subclass)
        built = LittleGhost::Workspace.build(->(**) { workspace })
        expect(built).to equal(workspace)
      end
    end

    it "reports missing configuration, unknown providers and bad results" do
      expect { LittleGhost::Workspace.build(nil) }.to raise_error(LittleGhost::ConfigurationError, /no workspace/)
      expect { LittleGhost::Workspace.build(:s3) }
        .to raise_error(LittleGhost::DependencyError, /\Aworkspace provider :s3 is not available; it is not a registered workspace provider \(registered: .*:directory.*\)\z/)
      expect { LittleGhost::Workspace.build(->(**) { "/tmp" }) }
        .to raise_error(LittleGhost::ConfigurationError, "workspace provider returned String, expected LittleGhost::Workspace")
    end
  end
end
