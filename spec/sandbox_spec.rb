# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox do
  let(:workspace) { open_workspace(paths: {source: "source", cache: "cache"}) }

  describe ".new (10.1, 10.2)" do
    it "stores the workspace and normalises policy and limits" do
      sandbox = described_class.new(workspace: workspace, policy: {files: {root: :read_write}}, limits: {read_bytes: "10"})
      expect(sandbox.workspace).to equal(workspace)
      expect(sandbox.policy).to be_a(LittleGhost::Sandbox::Policy)
      expect(sandbox.policy.files).to eq(root: :read_write)
      expect(sandbox.limits).to be_a(LittleGhost::Sandbox::Limits)
      expect(sandbox.limits.read_bytes).to eq(10)
      expect(sandbox.limits.write_bytes).to eq(1_000_000)
    end

    it "defaults the policy to files: {root: :read_only}" do
      sandbox = described_class.new(workspace: workspace)
      expect(sandbox.policy.files).to eq(root: :read_only)
      expect(sandbox.effective_policy).to equal(sandbox.policy)
    end

    it "does no filesystem I/O, so a workspace that does not exist yet is fine" do
      missing = File.join(temporary_directory, "not", "yet")
      sandbox = described_class.new(workspace: LittleGhost::Workspace.new(root: missing))
      expect(sandbox.workspace.root).to eq(missing)
      expect(File.exist?(missing)).to be(false)
    end

    it "requires workspace: and rejects unknown keywords and positionals" do
      expect { described_class.new }.to raise_error(ArgumentError, /workspace/)
      expect { described_class.new(workspace: workspace, mounts: {}) }.to raise_error(ArgumentError, /mounts/)
      expect { described_class.new(workspace) }.to raise_error(ArgumentError)
    end

    it "rejects profiles that are not Hash-like" do
      expect { described_class.new(workspace: workspace, profiles: 42) }
        .to raise_error(LittleGhost::PolicyError, /sandbox profiles must be a Hash/)
    end

    it "rejects invalid policies and limits with PolicyError" do
      expect { described_class.new(workspace: workspace, policy: 3) }.to raise_error(LittleGhost::PolicyError)
      expect { described_class.new(workspace: workspace, limits: {read_bytes: 0}) }
        .to raise_error(LittleGhost::PolicyError, /must be positive/)
    end
  end

  describe "capabilities and predicates (10.4–10.7)" do
    subject(:sandbox) { described_class.new(workspace: workspace, policy: {files: {root: :read_write}}) }

    it "implements nothing on the base class" do
      expect(sandbox.capabilities.features).to eq([])
      expect(sandbox.capabilities.network_modes).to eq([])
      expect(sandbox.supports?(:filesystem_read)).to be(false)
      expect(sandbox.supports?(:network, :inherit)).to be(false)
      expect(sandbox.writable?).to be(false)
      expect(sandbox.allows?(:read)).to be(false)
    end

    it "never raises from allows? for a path or scope problem" do
      expect(sandbox.allows?(:read, "../outside")).to be(false)
      expect(sandbox.allows?(:read, "workspace://unknown/x")).to be(false)
      expect(sandbox.allows?(:read, "/etc/passwd")).to be(false)
      expect(sandbox.allows?(:no_such_feature, "a.txt")).to be(false)
    end

    it "answers through Ruby dispatch so subclass overrides win (0.4)" do
      klass = Class.new(described_class) do
        def capabilities
          LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read filesystem_write], network_modes: [])
        end
      end
      sandbox = klass.new(workspace: workspace, policy: {files: {root: :read_write}})
      File.write(File.join(workspace.root, "a.txt"), "a")
      expect(sandbox.supports?(:read)).to be(true)
      expect(sandbox.writable?).to be(true)
      expect(sandbox.allows?(:write)).to be(true)
      expect(sandbox.allows?(:read, "a.txt")).to be(true)
      expect(sandbox.allows?(:list, ".")).to be(false)
    end

    it "asks scope, which a subclass may override, for path questions" do
      klass = Class.new(described_class) do
        attr_reader :scoped

        def scope(*)
          @scoped = true
          raise LittleGhost::CapabilityError, "no scope here"
        end
      end
      sandbox = klass.new(workspace: workspace)
      expect(sandbox.allows?(:read, "a.txt")).to be(false)
      expect(sandbox.scoped).to be(true)
    end
  end

  describe "#scope (10.8)" do
    let(:profiles) do
      {
        reader: {files: {source: :read_only}, runtime_paths: []},
        "dynamic" => lambda { |workspace:, policy:|
          @profile_call = [workspace, policy]
          {"files" => [:root]}
        },
        broken: -> { nil },
        not_a_hash: ->(**) { [:files] },
        extra: {files: [:root], mounts: []}
      }
    end
    let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write}} }
    subject(:sandbox) { described_class.new(workspace: workspace, policy: policy, profiles: profiles) }

    it "builds a Scope from explicit options" do
      scope = sandbox.scope(files: {source: :read_only}, runtime_paths: [])
      expect(scope).to be_a(LittleGhost::Sandbox::Scope)
      expect(scope.sandbox).to equal(sandbox)
      expect(scope.process_grants.map(&:target)).to eq([workspace.path(:source)])
    end

    it "looks profiles up with to_sym" do
      expect(sandbox.scope("reader").process_grants.map(&:target)).to eq([workspace.path(:source)])
    end

    it "calls a callable profile with workspace: and policy: and symbolises its keys" do
      scope = sandbox.scope(:dynamic)
      expect(@profile_call).to eq([workspace, sandbox.effective_policy])
      expect(scope.process_grants.map(&:target)).to include(workspace.root)
    end

    it "refuses a profile combined with explicit options" do
      expect { sandbox.scope(:reader, files: [:root]) }
        .to raise_error(ArgumentError, /scope profile cannot be combined with explicit options/)
    end

    it "raises PolicyError for unknown profiles, non-Hash results and unknown keys" do
      expect { sandbox.scope(:missing) }.to raise_error(LittleGhost::PolicyError, /unknown sandbox scope profile: missing/)
      expect { sandbox.scope(:not_a_hash) }.to raise_error(LittleGhost::PolicyError, /sandbox scope profile must be a Hash/)
      expect { sandbox.scope(:extra) }.to raise_error(LittleGhost::PolicyError, /unknown sandbox scope profile options: :mounts/)
      expect { sandbox.scope(:broken) }.to raise_error(ArgumentError)
    end

    it "rejects unknown keywords" do
      expect { sandbox.scope(mounts: []) }.to raise_error(ArgumentError, /mounts/)
    end
  end

  describe "lifecycle and abstract operations (10.9–10.11)" do
    subject(:sandbox) { described_class.new(workspace: workspace) }

    it "opens to self and closes to nil" do
      expect(sandbox.open).to equal(sandbox)
      expect(sandbox.open(run: :a_run)).to equal(sandbox)
      expect(sandbox.close).to be_nil
    end

    it "raises AbstractMethodError naming the class and the operation" do
      {
        read: ["a.txt"], list: [], write: ["a.txt", "x"], replace: ["a.txt", "a", "b"],
        execute_program: [["true"], {timeout: 1}], start_program: [["true"]]
      }.each do |operation, args|
        keywords = args.last.is_a?(Hash) ? args.pop : {}
        expect { sandbox.public_send(operation, *args, **keywords) }
          .to raise_error(LittleGhost::AbstractMethodError, /LittleGhost::Sandbox.*#{operation}/)
      end
      named = Class.new(described_class)
      stub_const("MyBackend", named)
      expect { named.new(workspace: workspace).read("a") }
        .to raise_error(LittleGhost::AbstractMethodError, /MyBackend does not implement read/)
    end

    it "executes a shell command through execute_program with /bin/sh -c" do
      klass = Class.new(described_class) do
        attr_reader :calls

        def execute_program(command, **options)
          (@calls ||= []) << [command, options]
          :result
        end
      end
      sandbox = klass.new(workspace: workspace)
      expect(sandbox.execute(:"echo hi | cat", timeout: 2, cwd: "source")).to eq(:result)
      expect(sandbox.calls).to eq([[["/bin/sh", "-c", "echo hi | cat"],
                                    {timeout: 2, context: nil, max_output_bytes: nil, cwd: "source"}]])
      expect { sandbox.execute("true") }.to raise_error(ArgumentError, /timeout/)
    end
  end

  describe "provider registry (12.1, 12.2, 12.4)" do
    around do |example|
      saved = LittleGhost::Sandbox::TestHooks.provider_snapshot
      example.run
    ensure
      LittleGhost::Sandbox::TestHooks.restore_providers(saved)
    end

    it "registers the four built-in providers" do
      expect(described_class.resolve_provider(:unrestricted)).to eq(LittleGhost::Sandboxes::Unrestricted)
      expect(described_class.resolve_provider("bubblewrap")).to eq(LittleGhost::Sandboxes::Bubblewrap)
      expect(described_class.resolve_provider(:seatbelt)).to eq(LittleGhost::Sandboxes::Seatbelt)
      expect(described_class.resolve_provider(:native)).to eq(LittleGhost::Sandboxes::Native)
    end

    it "accepts only Sandbox classes and replaces an earlier entry" do
      expect { described_class.register_provider(:bad, String) }
        .to raise_error(ArgumentError, /sandbox provider must be a Sandbox class/)
      expect { described_class.register_provider(:bad, described_class.new(workspace: workspace)) }
        .to raise_error(ArgumentError, /sandbox provider must be a Sandbox class/)
      first = Class.new(described_class)
      second = Class.new(described_class)
      described_class.register_provider("mine", first)
      LittleGhost::Sandboxes::Unrestricted.register_provider(:mine, second)
      expect(described_class.resolve_provider(:mine)).to eq(second)
    end

    it "never falls back for an unknown name" do
      expect { described_class.resolve_provider(:nope) }
        .to raise_error(LittleGhost::DependencyError, /sandbox provider :nope is not available/)
    end
  end

  describe ".probe (12.3)" do
    around do |example|
      saved = LittleGhost::Sandbox::TestHooks.provider_snapshot
      example.run
    ensure
      LittleGhost::Sandbox::TestHooks.restore_providers(saved)
    end

    def empty?(capabilities)
      capabilities.features.empty? && capabilities.network_modes.empty?
    end

    it "reports an unknown provider as unavailable with empty capabilities" do
      result = described_class.probe(:nope)
      expect(result.keys).to eq(%i[available reason capabilities])
      expect(result[:available]).to be(false)
      expect(result[:reason]).to match(/sandbox provider :nope is not available/)
      expect(empty?(result[:capabilities])).to be(true)
    end

    it "reports a provider without its own probe as available, and refuses options" do
      described_class.register_provider(:plain, Class.new(described_class))
      result = described_class.probe(:plain)
      expect(result[:available]).to be(true)
      expect(result[:reason]).to be_nil
      expect(empty?(result[:capabilities])).to be(true)
      expect { described_class.probe(:plain, executable: "/x") }
        .to raise_error(ArgumentError, /sandbox provider :plain does not accept probe options/)
    end

    it "calls a provider's own singleton probe, also when an ancestor below Sandbox defines it" do
      parent = Class.new(described_class) do
        def self.probe(**options)
          {available: :custom, reason: options, capabilities: nil}
        end
      end
      described_class.register_provider(:custom, Class.new(parent))
      expect(described_class.probe(:custom, flag: 1)).to eq(available: :custom, reason: {flag: 1}, capabilities: nil)
    end

    it "turns a DependencyError from the provider's probe into unavailable" do
      klass = Class.new(described_class) do
        def self.probe(**)
          raise LittleGhost::DependencyError, "tool is missing"
        end
      end
      described_class.register_provider(:broken, klass)
      result = described_class.probe(:broken)
      expect(result[:available]).to be(false)
      expect(result[:reason]).to eq("tool is missing")
      expect(empty?(result[:capabilities])).to be(true)
    end

    it "lets other errors from the provider's probe propagate" do
      klass = Class.new(described_class) do
        def self.probe(**)
          raise LittleGhost::PolicyError, "bad"
        end
      end
      described_class.register_provider(:loud, klass)
      expect { described_class.probe(:loud) }.to raise_error(LittleGhost::PolicyError, "bad")
    end

    it "reports the capabilities Unrestricted really has (15.8, W14)" do
      result = described_class.probe(:unrestricted)
      expect(result[:available]).to be(true)
      owns_tree = result[:limits][:process_tree_ownership] == true
      expect(result[:capabilities].features.first(4))
        .to eq(%i[filesystem_read filesystem_list process_execute process_spawn])
      expect(result[:capabilities].network_modes).to eq([:inherit])
      # L.2: ownership through launch cgroups, only where they can be made.
      expect(result[:capabilities].supports?(:process_tree_ownership)).to be(owns_tree)
      expect { described_class.probe(:unrestricted, executable: "/x") }
        .to raise_error(ArgumentError, /does not accept probe options/)
    end
  end
end
