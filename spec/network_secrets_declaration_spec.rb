# frozen_string_literal: true

require "spec_helper"
require "socket"

# Secrets as declared: `secrets: {name => {value:, destinations: [...]}}`. Invariant: the child gets a
# random stand-in as LITTLEGHOST_SECRET_<NAME>, new per sandbox, and the real value appears nowhere a user, a log or
# the child can read: not in inspect, to_h, effective_policy, ==, error messages, the child's environment or files.
RSpec.describe "network secrets as declared" do
  value = "ghp_#{"s3cr3t" * 6}"
  network_policy = LittleGhost::Sandbox::NetworkPolicy
  declared = { allow: [{ destination: "api.github.com:443", inspect: true }],
               secrets: { github: { value: value, destinations: ["api.github.com:443"] } } }

  it "shows every secret as [REDACTED] in the readers, inspect and to_h" do
    network = network_policy.new(**declared)
    expect(network.secrets).to eq({ github: { value: "[REDACTED]", destinations: ["api.github.com:443"] } })
    expect(network.secrets).to be_frozen
    policy = LittleGhost::Sandbox::Policy.new(network: declared)
    [network.inspect, network.to_s, policy.inspect, policy.to_h.inspect, network.secrets.inspect].each do |text|
      expect(text).not_to include(value)
      expect(text).to include("[REDACTED]")
    end
  end

  it "compares the value in == (two tokens are two policies) without hashing or showing it" do
    same = network_policy.new(**declared)
    other = network_policy.new(allow: declared[:allow],
                               secrets: { "github" => { "value" => "ghp_other", "destinations" => ["api.github.com:443"] } })
    expect(network_policy.new(**declared)).to eq(same)
    expect(network_policy.new(**declared).hash).to eq(same.hash)
    expect(other).not_to eq(same)
  end

  it "refuses a secret that could never be sent, a value that is not a String, and unknown keys, never showing the value" do
    messages = []
    [
      [{ allow: ["api.github.com:443"], secrets: { github: { value: value, destinations: ["gist.github.com:443"] } } },
       LittleGhost::PolicyError, /destination "gist.github.com:443" is not covered by the allow list/],
      [{ allow: ["a.test:1"], secrets: { github: { value: value.to_sym, destinations: ["a.test:1"] } } },
       LittleGhost::PolicyError, /needs value: a String/],
      [{ allow: ["a.test:1"], secrets: { github: { value: "#{value}\n", destinations: ["a.test:1"] } } },
       LittleGhost::PolicyError, /without control characters/],
      [{ allow: ["a.test:1"], secrets: { github: { value: value, destination: ["a.test:1"] } } },
       ArgumentError, /unknown network secret "github" key: :destination \(valid keys: :value, :destinations\)/],
      [{ allow: ["a.test:1"], secrets: [value] }, LittleGhost::PolicyError, /must be a Hash/],
      [{ mode: :none, secrets: { github: { value: value, destinations: ["a.test:1"] } } },
       LittleGhost::PolicyError, /does not take allow, secrets/]
    ].each do |keywords, error_class, pattern|
      expect { network_policy.new(**keywords) }.to raise_error(error_class, pattern) { |e| messages << e.message }
    end
    expect(messages.size).to eq(6)
    messages.each { |message| expect(message).not_to include(value) }
  end

  it "refuses secrets for a gateway that cannot swap them" do
    expect { network_policy.new(**declared, gateway: Object.new) }
      .to raise_error(LittleGhost::PolicyError, /enforced by the built-in gateway only/)
  end

  it "gives each gateway its own random stand-ins in environment (never the value)" do
    first = LittleGhost::Network::BuiltinGateway.new(allow: declared[:allow], secrets: declared[:secrets])
    second = LittleGhost::Network::BuiltinGateway.new(allow: declared[:allow], secrets: declared[:secrets])
    stand_in = first.environment.fetch("LITTLEGHOST_SECRET_GITHUB")
    expect(stand_in).to match(/\Algsecret_[0-9a-f]{32}\z/)
    expect(second.environment.fetch("LITTLEGHOST_SECRET_GITHUB")).not_to eq(stand_in)
    expect(first.environment).to be_frozen
    expect(first.inspect).not_to include(value)
  end

  it "reads upstream_ca: at open: a missing or malformed file is a PolicyError naming the path" do
    missing = File.join(temporary_directory, "missing-ca.pem")
    inspected = [{ destination: "a.test:443", inspect: true }]
    network = network_policy.new(allow: inspected, upstream_ca: missing)
    expect(network.upstream_ca).to eq(missing)
    gateway = LittleGhost::Network::BuiltinGateway.new(allow: inspected, upstream_ca: missing)
    expect { gateway.open }.to raise_error(LittleGhost::PolicyError, /#{Regexp.escape(missing)}/)
    expect(gateway).not_to be_open
    malformed = File.join(temporary_directory, "bad-ca.pem")
    File.write(malformed, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
    gateway = LittleGhost::Network::BuiltinGateway.new(allow: inspected, upstream_ca: malformed)
    expect { gateway.open }.to raise_error(LittleGhost::PolicyError, /#{Regexp.escape(malformed)}.*not a PEM certificate/)
  end

  context "with Bubblewrap", if: LittleGhost::Sandbox.probe(:bubblewrap)[:available] do
    it "gives the child the stand-in and the value reaches neither the child nor anything the user reads" do
      workspace = open_workspace
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: { files: { root: :read_write },
                                                                                       network: declared })
      sandbox.open do
        printed = sandbox.execute_program(["/usr/bin/printenv", "LITTLEGHOST_SECRET_GITHUB"], timeout: 30)
        expect(printed.exit_code).to eq(0)
        stand_in = printed.stdout.chomp
        expect(stand_in).to match(/\Algsecret_[0-9a-f]{32}\z/)
        expect(stand_in).to eq(sandbox.gateway.environment["LITTLEGHOST_SECRET_GITHUB"])
        # The child dumps everything it can read about itself into the workspace.
        # (Every process it can see, the relay included, and every writable or runtime place; the script spells the
        # value in pieces so that its own command line does not carry it.)
        dump = "env > env.txt; cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline > processes.bin; " \
               "v=ghp_; for i in 1 2 3 4 5 6; do v=${v}s3cr3t; done; " \
               "grep -rs -- \"$v\" /tmp /run /dev/shm /etc \"$HOME\" . > found.txt; true"
        result = sandbox.execute_program(["/bin/sh", "-c", dump], timeout: 120)
        expect(result.exit_code).to eq(0)
        expect(result.stdout + result.stderr).not_to include(value)
        expect(File.read(File.join(workspace.root, "found.txt"))).to eq("")
        expect(File.binread(File.join(workspace.root, "processes.bin"))).to include(stand_in)
        Dir.glob("#{workspace.root}/*").each { |path| expect(File.binread(path)).not_to include(value) }
        expect(File.read(File.join(workspace.root, "env.txt"))).to include("LITTLEGHOST_SECRET_GITHUB=#{stand_in}")
        [sandbox.inspect, sandbox.effective_policy.inspect, sandbox.policy.inspect, sandbox.gateway.inspect,
         sandbox.effective_policy.to_h.inspect].each { |text| expect(text).not_to include(value) }
      end
      # A new sandbox of the same policy has another stand-in.
      again = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: { network: declared })
      other = again.open { again.execute_program(["/usr/bin/printenv", "LITTLEGHOST_SECRET_GITHUB"], timeout: 30) }
      expect(other.stdout).to match(/\Algsecret_/)
      expect(File.read(File.join(workspace.root, "env.txt"))).not_to include(other.stdout.chomp)
    end
  end
end
