# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::Policy do
  let(:policy_error) { LittleGhost::PolicyError }
  let(:sandbox) { LittleGhost::Sandbox }

  it "publishes its constants, frozen" do
    expect(described_class::COMMON_KEYS).to eq(%i[files runtime_paths root_filesystem environment network protect])
    expect(described_class::ACCESS_MODES).to eq(%i[read_only read_write])
    expect(described_class::ROOT_FILESYSTEM_MODES).to eq(%i[isolated read_only read_write])
    expect([described_class::COMMON_KEYS, described_class::ACCESS_MODES, described_class::ROOT_FILESYSTEM_MODES])
      .to all(be_frozen)
  end

  describe ".new" do
    it "has the documented defaults" do
      policy = described_class.new
      expect(policy.files).to eq(root: :read_only)
      expect(policy.runtime_paths).to eq({})
      expect(policy.root_filesystem).to eq(:isolated)
      expect(policy.environment).to eq(sandbox::EnvironmentPolicy.new)
      expect(policy.network).to be_nil
      expect(policy.workspace_writable?).to be(false)
      expect(policy).to be_frozen
      expect(policy.files).to be_frozen
      expect(policy.runtime_paths).to be_frozen
    end

    it "symbolises names and accesses and coerces environment and network" do
      policy = described_class.new(files: { "root" => "read_write", source: :read_only },
                                   runtime_paths: { "home" => "read_write", source: :read_write },
                                   root_filesystem: "read_only",
                                   environment: { "LANG" => "C" }, network: :none)
      expect(policy.files).to eq(root: :read_write, source: :read_only)
      expect(policy.runtime_paths).to eq(home: :read_write, source: :read_write)
      expect(policy.root_filesystem).to eq(:read_only)
      expect(policy.environment.values).to eq("LANG" => "C")
      expect(policy.network).to eq(sandbox::NetworkPolicy.new(mode: :none))
      expect(policy.workspace_writable?).to be(true)
    end

    it "rejects unknown keywords with ArgumentError" do
      expect { described_class.new(mounts: []) }.to raise_error(ArgumentError, /mounts/) { |error|
        expect(error).to be_an_instance_of(ArgumentError)
      }
      expect(described_class.new).not_to respond_to(:mounts)
      expect(described_class.new).not_to respond_to(:workspace_path)
    end

    it "requires files and runtime_paths to be Hashes" do
      expect { described_class.new(files: [:root]) }.to raise_error(policy_error, "sandbox files must be a Hash")
      expect { described_class.new(runtime_paths: "home") }
        .to raise_error(policy_error, "sandbox runtime_paths must be a Hash")
    end

    it "rejects accesses outside ACCESS_MODES, naming the path" do
      expect { described_class.new(files: { root: :execute }) }
        .to raise_error(policy_error, /sandbox files access for :root must be :read_only or :read_write/)
      expect { described_class.new(runtime_paths: { home: nil }) }
        .to raise_error(policy_error, /sandbox runtime_paths access for :home/)
      expect { described_class.new(files: { 1 => :read_only }) }.to raise_error(policy_error, /names must be/)
    end

    it "rejects root filesystem modes outside ROOT_FILESYSTEM_MODES" do
      expect { described_class.new(root_filesystem: :host) }
        .to raise_error(policy_error, /sandbox root_filesystem must be :isolated, :read_only or :read_write/)
    end

    it "passes environment and network errors through" do
      expect { described_class.new(environment: "A=1") }
        .to raise_error(policy_error, "sandbox environment must be a Hash")
      expect { described_class.new(network: 1) }
        .to raise_error(policy_error, "network policy must be a mode, Hash, or Sandbox::NetworkPolicy")
    end

    it "accepts any each_pair object for grants" do
      grants = Struct.new(:root).new(:read_write)
      expect(described_class.new(files: grants).files).to eq(root: :read_write)
    end
  end

  describe ".coerce" do
    it "returns a Policy given without options as is, and treats nil as {}" do
      policy = described_class.new(files: { root: :read_write })
      expect(described_class.coerce(policy)).to equal(policy)
      expect(described_class.coerce).to eq(described_class.new)
      expect(described_class.coerce(nil)).to eq(described_class.new)
    end

    it "symbolises a Hash and merges options over it" do
      policy = described_class.coerce({ "files" => { root: :read_write }, "network" => :none },
                                      network: :inherit, runtime_paths: { home: :read_only })
      expect(policy.files).to eq(root: :read_write)
      expect(policy.network.mode).to eq(:inherit)
      expect(policy.runtime_paths).to eq(home: :read_only)
      expect(described_class.coerce(nil, files: { root: :read_write }).workspace_writable?).to be(true)
    end

    it "rejects non-Hash values, including a Policy with options" do
      message = /sandbox policy must be a Hash or Sandbox::Policy/
      expect { described_class.coerce(:strict) }.to raise_error(policy_error, message)
      expect { described_class.coerce(described_class.new, network: :none) }.to raise_error(policy_error, message)
    end
  end

  describe "#process_grants" do
    around do |example|
      Dir.mktmpdir("policy-spec") do |dir|
        @workspace = LittleGhost::Workspace.new(root: dir, paths: { source: "src", cache: "src/cache/x",
                                                                    home: "/tmp" })
        example.run
      end
    end

    attr_reader :workspace

    it "returns frozen Mounts, longest target first, file grants tool-visible and runtime grants not" do
      policy = described_class.new(files: { root: :read_write, source: :read_only },
                                   runtime_paths: { cache: :read_write, home: :read_only })
      grants = policy.process_grants(workspace)
      expect(grants).to be_frozen
      expect(grants).to all(be_a(sandbox::Mount).and(be_frozen))
      expect(grants.map(&:target)).to eq([workspace.path(:cache), workspace.path(:source), workspace.root, "/tmp"]
        .sort_by { |path| -path.length })
      by_target = grants.to_h { |grant| [grant.target, grant] }
      root = by_target.fetch(workspace.root)
      expect([root.source, root.access, root.tools, root.protect_aliases])
        .to eq([workspace.root, :read_write, true, true])
      cache = by_target.fetch(workspace.path(:cache))
      expect([cache.source, cache.access, cache.tools]).to eq([workspace.path(:cache), :read_write, false])
      expect(by_target.fetch("/tmp").read_only?).to be(true)
    end

    it "keeps a name present in both tables as two grants" do
      policy = described_class.new(files: { source: :read_only }, runtime_paths: { source: :read_write })
      grants = policy.process_grants(workspace)
      expect(grants.map { |grant| [grant.tools, grant.access] }).to eq([[true, :read_only], [false, :read_write]])
    end

    it "raises KeyError for a name the workspace does not have" do
      policy = described_class.new(files: { root: :read_only, secrets: :read_only })
      expect { policy.process_grants(workspace) }.to raise_error(KeyError, /secrets/)
    end
  end

  describe "value semantics" do
    it "compares all fields and hashes consistently" do
      a = described_class.new(files: { root: :read_write }, network: :none)
      b = described_class.coerce(files: { "root" => "read_write" }, network: "none")
      expect(a).to eq(b)
      expect(a).to eql(b)
      expect(a.hash).to eq(b.hash)
      expect(a).not_to eq(described_class.new(files: { root: :read_write }))
      expect(a).not_to eq(described_class.new(files: { root: :read_write }, network: :none, root_filesystem: :read_only))
    end

    it "inspects readably" do
      expect(described_class.new.inspect).to start_with(
        "#<LittleGhost::Sandbox::Policy files={root: :read_only} runtime_paths={} root_filesystem=:isolated"
      )
      expect(described_class.new.to_h.keys).to eq(described_class::COMMON_KEYS)
    end
  end
end
