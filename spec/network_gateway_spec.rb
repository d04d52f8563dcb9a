# frozen_string_literal: true

require "spec_helper"

RSpec.describe "LittleGhost::Network gateways (SPEC G.2, G.4)" do
  describe LittleGhost::Network::Gateway do
    subject(:gateway) { described_class.new }

    it "is the no-op base of the gateway protocol" do
      expect(gateway.open(run: nil)).to equal(gateway)
      expect(gateway.open).to equal(gateway)
      expect(gateway.validate!).to equal(gateway)
      expect(gateway.close).to be_nil
      expect(gateway.close).to be_nil
      expect(gateway.environment).to eq({}).and be_frozen
      expect(gateway.mounts).to eq([]).and be_frozen
      expect(gateway.proxy_mount_path).to be_nil
      expect(gateway.client_network).to eq(:none)
      expect { gateway.open(bogus: 1) }.to raise_error(ArgumentError, /unknown keyword: :bogus/)
    end

    it "can be subclassed by an application" do
      custom = Class.new(described_class) { def environment = { "HTTP_PROXY" => "http://proxy:1" } }.new
      expect(custom.open).to equal(custom)
      expect(custom.environment).to eq("HTTP_PROXY" => "http://proxy:1")
    end
  end

  describe LittleGhost::Network::ExternalGateway do
    around do |example|
      Dir.mktmpdir("external-gateway") do |dir|
        @tmp = File.realpath(dir)
        example.run
      end
    end

    attr_reader :tmp

    let(:workspace) { LittleGhost::Workspace.new(root: File.join(tmp, "root"), paths: { proxy: File.join(tmp, "proxy") }) }
    let(:policy) { LittleGhost::Sandbox::Policy.new(runtime_paths: { proxy: :read_only }) }

    def build(**options)
      described_class.new(policy: policy, workspace: workspace, runtime_paths: [:proxy],
                          proxy_mount_path: File.join(tmp, "proxy/./envoy.sock"), **options)
    end

    it "is a Gateway with the declared socket, environment and no extra mounts" do
      gateway = build(environment: { HTTPS_PROXY: "http://127.0.0.1:3128" })
      expect(gateway).to be_a(LittleGhost::Network::Gateway)
      expect(gateway.policy).to equal(policy)
      expect(gateway.workspace).to equal(workspace)
      expect(gateway.runtime_paths).to eq([:proxy]).and be_frozen
      expect(gateway.proxy_mount_path).to eq(File.join(tmp, "proxy/envoy.sock"))
      expect(gateway.environment).to eq("HTTPS_PROXY" => "http://127.0.0.1:3128")
      expect(gateway.mounts).to eq([])
      expect(gateway.client_network).to eq(:none)
    end

    it "refuses a declaration G.4 forbids" do
      expect { build(validate: 42) }.to raise_error(LittleGhost::PolicyError, /validate must be nil or respond to call/)
      expect do
        described_class.new(policy: policy, workspace: workspace, runtime_paths: [], proxy_mount_path: "/x")
      end.to raise_error(LittleGhost::PolicyError, "external gateway runtime_paths cannot be empty")
      expect do
        described_class.new(policy: policy, workspace: workspace, runtime_paths: [:proxy],
                            proxy_mount_path: File.join(tmp, "proxy/../root/s.sock"))
      end.to raise_error(LittleGhost::PolicyError, /must be inside a runtime path/)
      expect do
        described_class.new(policy: policy, workspace: workspace, runtime_paths: [:nope], proxy_mount_path: "/x")
      end.to raise_error(KeyError)
      expect { build(environment: "A=1") }.to raise_error(LittleGhost::PolicyError, "sandbox environment must be a Hash")
      expect { described_class.new(policy: policy) }.to raise_error(ArgumentError, /missing keyword/)
    end

    it "requires its runtime paths to be process grants at open" do
      FileUtils.mkdir_p(File.join(tmp, "proxy"))
      ungranted = LittleGhost::Sandbox::Policy.new(runtime_paths: {})
      gateway = described_class.new(policy: ungranted, workspace: workspace, runtime_paths: [:proxy],
                                    proxy_mount_path: File.join(tmp, "proxy/s.sock"))
      expect { gateway.open }
        .to raise_error(LittleGhost::PolicyError, "external gateway runtime paths are not process grants: :proxy")
      expect(gateway).not_to be_open
    end

    it "pins its roots at open and refuses a launch after a swap" do
      gateway = build
      expect { gateway.open }.to raise_error(LittleGhost::DependencyError, /is missing/)
      File.write(File.join(tmp, "proxy"), "")
      expect { gateway.open }.to raise_error(LittleGhost::PolicyError, /is not a directory/)
      File.delete(File.join(tmp, "proxy"))
      FileUtils.mkdir_p(File.join(tmp, "proxy"))
      expect(gateway.open(run: nil)).to equal(gateway)
      expect(gateway.validate!).to equal(gateway)

      File.rename(File.join(tmp, "proxy"), File.join(tmp, "moved"))
      File.symlink(File.join(tmp, "moved"), File.join(tmp, "proxy"))
      expect { gateway.validate! }
        .to raise_error(LittleGhost::DependencyError, "external gateway runtime path changed after opening")
      expect(gateway.close).to be_nil
      expect(gateway.close).to be_nil
      expect(gateway).not_to be_open
    end

    it "opens itself on the first validate!, as the framework's gateway does, then runs the validator" do
      seen = []
      gateway = build(validate: -> { seen << :validated })
      expect { gateway.validate! }.to raise_error(LittleGhost::DependencyError, /is missing/)
      expect(seen).to be_empty # a gateway that cannot open never reaches the validator
      FileUtils.mkdir_p(File.join(tmp, "proxy"))
      expect(gateway.validate!).to equal(gateway)
      expect(gateway).to be_open
      expect(seen).to eq([:validated])
      File.rename(File.join(tmp, "proxy"), File.join(tmp, "moved"))
      FileUtils.mkdir_p(File.join(tmp, "proxy"))
      expect { gateway.validate! } # opened once: a later swap is still refused, not re-pinned
        .to raise_error(LittleGhost::DependencyError, "external gateway runtime path changed after opening")
    end

    it "calls the application's validator after its own checks" do
      FileUtils.mkdir_p(File.join(tmp, "proxy"))
      seen = []
      with_argument = build(validate: ->(gateway) { seen << gateway })
      with_argument.open
      with_argument.validate!
      expect(seen).to eq([with_argument])
      failing = build(validate: -> { raise LittleGhost::DependencyError, "proxy not ready" })
      failing.open
      expect { failing.validate! }.to raise_error(LittleGhost::DependencyError, "proxy not ready")
    end
  end

  it "names the missing allow list for a bare allowlist (7.2)" do
    expect { LittleGhost::Sandbox::NetworkPolicy.coerce(:allowlist) }
      .to raise_error(LittleGhost::PolicyError, /:allowlist requires a non-empty allow list/)
  end
end
