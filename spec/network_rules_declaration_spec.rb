# frozen_string_literal: true

require "spec_helper"
require "open3"
require "rbconfig"
require "socket"

# The declaration: an allow entry is a "host:port" String (also "*.suffix:port", "host:*", "net/len:port")
# or a Hash {destination:, inspect:, methods:, paths:}. Invariant: the same rules are read the same way through every
# door (NetworkPolicy.new, a policy's network: Hash, LittleGhost.configure, BuiltinGateway.new), a Hash saying no more
# than its destination IS the String entry, and a rule another gateway could not enforce is refused, never dropped.
RSpec.describe "network allow rules as declared" do
  network_policy = LittleGhost::Sandbox::NetworkPolicy
  policy = LittleGhost::Sandbox::Policy
  github = { destination: "API.GitHub.com:443", inspect: true, methods: %w[get HEAD], paths: ["/repos/org/"] }
  shown = { destination: "api.github.com:443", inspect: true, methods: %w[GET HEAD], paths: ["/repos/org/"] }

  it "keeps String entries as Strings and shows a Hash entry as a frozen, normalised Hash" do
    network = network_policy.new(allow: ["Example.com:443", github, "*.githubusercontent.com:443", "db.internal:*",
                                         "10.1.0.0/16:5432"])
    expect(network.mode).to eq(:allowlist)
    expect(network.allow).to eq(["example.com:443", shown, "*.githubusercontent.com:443", "db.internal:*",
                                 "10.1.0.0/16:5432"])
    expect(network.allow).to be_frozen
    expect(network.allow[1]).to be_frozen
    expect(network.allow[1][:methods]).to be_frozen
  end

  it "reads a Hash that says only its destination as that String entry (==, hash and allow agree)" do
    plain = network_policy.new(allow: ["a.test:443"])
    hashed = network_policy.new(allow: [{ destination: "A.test:443" }])
    stringly = network_policy.new(allow: [{ "destination" => "a.test:443", "inspect" => false, "methods" => [] }])
    expect(hashed.allow).to eq(["a.test:443"])
    expect([hashed, stringly]).to all(eq(plain))
    expect([hashed.hash, stringly.hash]).to all(eq(plain.hash))
    expect(network_policy.new(allow: [github])).not_to eq(network_policy.new(allow: ["api.github.com:443"]))
  end

  it "reads the same rules through a policy's network:, NetworkPolicy.new, LittleGhost.configure and the gateway" do
    direct = network_policy.new(mode: :allowlist, allow: [github])
    expect(policy.new(network: { allow: [github] }).network).to eq(direct)
    expect(policy.new(network: { allow: [github] }).to_h[:network]).to eq(direct)
    previous = LittleGhost.configuration.sandbox
    LittleGhost.configure { |config| config.sandbox = { provider: :bubblewrap, network: { allow: [github] } } }
    workspace = open_workspace
    sandbox = LittleGhost::Sandbox.build(LittleGhost.configuration.sandbox, workspace: workspace)
    expect(sandbox.policy.network).to eq(direct)
    expect(sandbox.effective_policy.network.allow).to eq([shown])
    gateway = LittleGhost::Network::BuiltinGateway.new(allow: [github, "b.test:80"])
    expect(gateway.allow).to eq([shown, "b.test:80"])
  ensure
    LittleGhost.configuration.sandbox = previous
  end

  it "refuses an unknown key of an entry with ArgumentError listing the valid ones" do
    expect { network_policy.new(allow: [{ destination: "a.test:1", method: ["GET"] }]) }
      .to raise_error(ArgumentError, "unknown network allow entry key: :method (valid keys: :destination, :inspect, " \
                                     ":methods, :paths)")
    expect { network_policy.new(allow: [{ methods: ["GET"] }]) }.to raise_error(ArgumentError, /needs destination:/)
    expect { LittleGhost::Network::BuiltinGateway.new(allow: [{ destination: "a.test:1", path: "/" }]) }
      .to raise_error(ArgumentError, /unknown network allow entry key: :path/)
  end

  it "refuses inspect: other than true or false, method names that are not tokens and unclean path prefixes" do
    expect { network_policy.new(allow: [{ destination: "a.test:1", inspect: "yes" }]) }
      .to raise_error(LittleGhost::PolicyError, /inspect: must be true or false, got "yes"/)
    ["GE T", "", "GET\r\nX: y"].each do |method|
      expect { network_policy.new(allow: [{ destination: "a.test:1", methods: [method] }]) }
        .to raise_error(LittleGhost::PolicyError, /is not an HTTP method token/)
    end
    ["repos", "/a b", "/a/../b", "/a/%2e%2e/b", "/a?q", "/a\u0000", "/x%25", "/x%4"].each do |path|
      expect { network_policy.new(allow: [{ destination: "a.test:1", paths: [path] }]) }
        .to raise_error(LittleGhost::PolicyError, %r{must start with "/"})
    end
    expect { network_policy.new(allow: [{ destination: "*.com:443" }]) }
      .to raise_error(LittleGhost::PolicyError, /single label/)
  end

  it "refuses HTTP rules for a gateway that cannot enforce them instead of dropping them" do
    custom = Object.new
    expect { network_policy.new(allow: [github], gateway: custom) }
      .to raise_error(LittleGhost::PolicyError, /enforced by the built-in gateway only/)
    expect(network_policy.new(allow: ["a.test:1"], gateway: custom).gateway).to equal(custom)
  end

  it "keeps the entries the CLI's --allow gives as Strings" do
    network = policy.new(network: { allow: ["localhost:8080"], allow_private_destinations: true }).network
    expect(network.allow).to eq(["localhost:8080"])
    expect(network.gateway).to eq({ allow_private_destinations: true })
  end

  it "builds and shows Hash entries and secrets while every allocation collects (GC.stress, in a child process)" do
    script = <<~RUBY
      require "littleghost/sandbox"
      GC.stress = true
      allow = (1..20).map { |i| {destination: "h\#{i}.example:443", methods: ["get"], paths: ["/p\#{i}/"]} }
      network = LittleGhost::Sandbox::NetworkPolicy.new(allow: allow + ["a.example:1"],
                                                        secrets: {tok: {value: "v-secret", destinations: ["a.example:1"]}})
      shown = [network.inspect, network.allow, network.secrets, network.hash]
      scope_rules = LittleGhost::Sandbox::NetworkPolicy.coerce(allow: allow.first(2))
      GC.stress = false
      puts shown[0].scan("/p").size, shown[1].size, shown[0].include?("v-secret"), scope_rules.allow.size
    RUBY
    out, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "-e", script)
    expect([status.success?, out]).to eq([true, "20\n21\nfalse\n2\n"])
  end

  context "with Bubblewrap", if: LittleGhost::Sandbox.probe(:bubblewrap)[:available] do
    before { skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl") }

    include LoopbackHttpHelpers

    it "lets a real client reach any port of an allowed IP network and nothing outside it" do
      first = start_server
      second = start_server
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(
        workspace: open_workspace,
        policy: { network: { allow: ["127.0.0.0/8:*"], allow_private_destinations: true } }
      )
      sandbox.open do
        expect(curl(sandbox, "http://127.0.0.1:#{first}/").stdout).to eq("served by #{first} 200")
        expect(curl(sandbox, "http://127.0.0.1:#{second}/x").stdout).to eq("served by #{second} 200")
        # localhost is a name: a network entry matches IP literals only, never a name that resolves into it.
        expect(curl(sandbox, "http://localhost:#{first}/").stdout).to end_with(" 403")
        denial = sandbox.denials.find { |d| d.kind == :network }
        expect([denial.target, denial.reason]).to eq(["localhost:#{first}", :not_allowed])
      end
    end

    it "sends 127.0.0.1 through the gateway when an IP-network entry covers it (no NO_PROXY override needed)" do
      port = start_server
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(
        workspace: open_workspace,
        policy: { network: { allow: ["127.0.0.0/8:*"], allow_private_destinations: true } }
      )
      url = "http://127.0.0.1:#{port}/"
      clients = {
        curl: ["/usr/bin/curl", "-sS", "--max-time", "20", url],
        python: ["/usr/bin/python3", "-c", "import urllib.request; print(urllib.request.urlopen('#{url}').read().decode(), end='')"]
      }
      # (Ruby's Net::HTTP never proxies an address in 127.0.0.0/8, whatever the environment says: not a client here.)
      sandbox.open do
        expect(sandbox.execute_program(["/usr/bin/printenv", "no_proxy"], timeout: 30).stdout).to eq("localhost\n")
        clients.each do |name, argv|
          result = sandbox.execute_program(argv, timeout: 60)
          expect([name, result.exit_code, result.stdout]).to eq([name, 0, "served by #{port}"]), result.stderr
        end
      end
    end

    it "enforces the port of an entry: another port of the same host is refused" do
      allowed = start_server
      other = start_server
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(
        workspace: open_workspace,
        policy: { network: { allow: [{ destination: "127.0.0.1:#{allowed}" }], allow_private_destinations: true } }
      )
      sandbox.open do
        expect(curl(sandbox, "http://127.0.0.1:#{allowed}/").stdout).to eq("served by #{allowed} 200")
        expect(curl(sandbox, "http://127.0.0.1:#{other}/").stdout).to end_with(" 403")
      end
    end
  end
end
