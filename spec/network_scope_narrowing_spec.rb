# frozen_string_literal: true

require "spec_helper"
require "socket"

# Scopes: `sandbox.scope(network: {allow: [...], secrets: [...]})` may drop destinations, methods, paths and
# secrets, never add them. Invariant: a scope's launches go through a gateway enforcing the narrowed rules (a view of
# the sandbox's gateway on its own socket), so a child in the scope cannot reach what the scope dropped, even though the
# sandbox itself can, and cannot see the sandbox's own gateway socket to go around its view.
RSpec.describe "network scopes narrowing an allowlist" do
  extend AllowlistBackends

  widen = /sandbox scope cannot widen network access/
  # Port 8443: a secret bound to port 443 would need an inspect: true entry, and scopes keep inspection.
  parent_network = {
    allow: ["*.github.com:8443", { destination: "api.example.com:443", methods: %w[GET HEAD], paths: ["/v1/"] },
            "10.0.0.0/8:*"],
    secrets: { github: { value: "ghp_parent_value", destinations: ["*.github.com:8443"] } }
  }

  def sandbox_with(network) = sandbox_under(LittleGhost::Sandboxes::Bubblewrap, network)

  def sandbox_under(backend, network)
    backend.new(workspace: open_workspace, policy: { network: network })
  end

  it "keeps only covered rules and the parent's reachable secrets" do
    sandbox = sandbox_with(parent_network)
    scope = sandbox.scope(network: { allow: ["api.github.com:8443",
                                             { destination: "api.example.com:443", methods: ["GET"],
                                               paths: ["/v1/users/"] }] })
    expect(scope.network.allow).to eq(["api.github.com:8443",
                                       { destination: "api.example.com:443", inspect: false, methods: ["GET"],
                                         paths: ["/v1/users/"] }])
    expect(scope.network.secrets).to eq({ github: { value: "[REDACTED]", destinations: ["api.github.com:8443"] } })
    expect(scope.network.gateway).to eq(sandbox.effective_policy.network.gateway)
    expect(scope.network.inspect).not_to include("ghp_parent_value")
    expect(sandbox.scope(network: { allow: ["api.github.com:8443"], secrets: [] }).network.secrets).to eq({})
    expect(sandbox.scope(network: { secrets: [] }).network.allow).to eq(sandbox.effective_policy.network.allow)
    # Secrets alone drop what they do not name: the parent's own secrets are not a request for them.
    expect(sandbox.scope(network: { secrets: [] }).network.secrets).to eq({})
    expect(sandbox.scope(network: { allow: ["10.1.0.0/16:5432"] }).network.secrets).to eq({})
    # A scope of a scope narrows the scope.
    inner = sandbox.scope(network: { allow: ["api.github.com:8443"] })
    expect(LittleGhost::Sandbox::Scope.new(sandbox: sandbox, parent_scope: inner,
                                           network: { allow: ["api.github.com:8443"], secrets: [] }).network.allow)
      .to eq(["api.github.com:8443"])
    expect { LittleGhost::Sandbox::Scope.new(sandbox: sandbox, parent_scope: inner, network: { allow: ["x.github.com:8443"] }) }
      .to raise_error(LittleGhost::CapabilityError, widen)
  end

  it "refuses a scope that adds a destination, a port, a method, a path or a secret" do
    sandbox = sandbox_with(parent_network)
    [
      { allow: ["github.com:8443"] },                                          # the apex is not a subdomain
      { allow: ["api.github.com:*"] },                                        # any port is wider than 8443
      { allow: ["api.example.com:443"] },                                     # drops the parent's HTTP rules
      { allow: [{ destination: "api.example.com:443", methods: ["POST"], paths: ["/v1/"] }] },
      { allow: [{ destination: "api.example.com:443", methods: ["GET"], paths: ["/v2/"] }] },
      { allow: ["11.0.0.0/8:1"] },
      { allow: ["api.github.com:8443"], secrets: [:aws] },
      { allow: ["api.github.com:8443"], secrets: { github: { destinations: ["evil.example.org:443"] } } },
      { allow: ["api.github.com:8443"], gateway: Object.new },
      :inherit
    ].each do |requested|
      expect { sandbox.scope(network: requested) }.to raise_error(LittleGhost::CapabilityError, widen),
                                                      requested.inspect
    end
    # Another value under the parent's secret's name is another secret.
    other_value = { github: { value: "ghp_other_value", destinations: ["api.github.com:8443"] } }
    expect { sandbox.scope(network: { allow: ["api.github.com:8443"], secrets: other_value }) }
      .to raise_error(LittleGhost::CapabilityError, widen)
    same_value = { github: { value: "ghp_parent_value", destinations: ["api.github.com:8443"] } }
    expect(sandbox.scope(network: { allow: ["api.github.com:8443"], secrets: same_value }).network.secrets.keys)
      .to eq([:github])
    [{ github: { destinations: ["api.github.com:8443"], bogus: 1 } }, "github"].each do |misshapen|
      expect { sandbox.scope(network: { allow: ["api.github.com:8443"], secrets: misshapen }) }
        .to raise_error(ArgumentError, /names the parent's secrets/)
    end
  end

  it "keeps network: false, :none and nil working" do
    sandbox = sandbox_with(parent_network)
    expect(sandbox.scope(network: false).network.mode).to eq(:none)
    expect(sandbox.scope(network: :none).network.mode).to eq(:none)
    expect(sandbox.scope(network: nil).network).to eq(sandbox.effective_policy.network)
    expect(sandbox.scope(network: parent_network).network).to eq(sandbox.effective_policy.network)
  end

  each_allowlist_backend do
    before { skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl") }

    include LoopbackHttpHelpers

    it "a child in a scope narrowed to one destination cannot reach the other, which the sandbox still reaches" do
      kept = start_server
      dropped = start_server
      sandbox = sandbox_under(backend, { allow: ["127.0.0.0/8:*"], allow_private_destinations: true,
                                         secrets: { token: { value: "tok_parent_value",
                                                             destinations: ["127.0.0.1:#{kept}"] } } })
      sandbox.open do
        scope = sandbox.scope(network: { allow: ["127.0.0.1:#{kept}"], secrets: [] })
        expect(curl(sandbox, "http://127.0.0.1:#{kept}/", scope: scope).stdout).to eq("served by #{kept} 200")
        refused = curl(sandbox, "http://127.0.0.1:#{dropped}/", scope: scope)
        expect(refused.stdout).to end_with(" 403")
        tunnel = sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", "--proxytunnel", "-w",
                                          " %{http_code}", "http://127.0.0.1:#{dropped}/"],
                                         timeout: 60, environment: { "NO_PROXY" => "", "no_proxy" => "" }, scope: scope)
        expect(tunnel.stdout).not_to include("served by")
        denial = sandbox.denials.reverse.find { |d| d.kind == :network }
        expect([denial.target, denial.reason]).to eq(["127.0.0.1:#{dropped}", :not_allowed])
        # The sandbox itself still reaches it: the narrowing is the scope's.
        expect(curl(sandbox, "http://127.0.0.1:#{dropped}/").stdout).to eq("served by #{dropped} 200")
        # The scope dropped the secret: its child has no stand-in; the sandbox's has one.
        env = sandbox.execute_program(["/usr/bin/env"], timeout: 30, scope: scope).stdout
        expect(env).not_to include("LITTLEGHOST_SECRET_TOKEN")
        expect(sandbox.execute_program(["/usr/bin/env"], timeout: 30).stdout).to include("LITTLEGHOST_SECRET_TOKEN=lgsecret_")
      end
    end
  end

  context "with Bubblewrap", if: LittleGhost::Sandbox.probe(:bubblewrap)[:available] do
    before { skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl") }

    include LoopbackHttpHelpers

    it "a scope's child cannot connect to the sandbox's own gateway socket around its view" do
      kept = start_server
      dropped = start_server
      sandbox = sandbox_with(allow: ["127.0.0.0/8:*"], allow_private_destinations: true)
      sandbox.open do
        scope = sandbox.scope(network: { allow: ["127.0.0.1:#{kept}"] })
        socket = sandbox.gateway.proxy_mount_path
        script = "import socket,sys\n" \
                 "s=socket.socket(socket.AF_UNIX)\n" \
                 "try:\n s.connect(sys.argv[1])\nexcept OSError as e:\n print('refused', e.errno); sys.exit(0)\n" \
                 "s.sendall(b'CONNECT 127.0.0.1:#{dropped} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n" \
                 "print(s.recv(12).decode())\n"
        result = sandbox.execute_program(["/usr/bin/python3", "-c", script, socket], timeout: 60, scope: scope)
        expect(result.stdout).to start_with("refused"), result.stdout + result.stderr
        # Without the scope the same program reaches the gateway (the probe above can succeed).
        direct = sandbox.execute_program(["/usr/bin/python3", "-c", script, socket], timeout: 60)
        expect(direct.stdout).to start_with("HTTP/1.1 200"), direct.stdout + direct.stderr
      end
    end
  end
end
