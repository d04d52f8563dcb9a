# frozen_string_literal: true

require "spec_helper"

# `network: {resolve: {"api.example.test" => "127.0.0.1"}}` points a name at a local service (tests, staging), like
# curl's --resolve: the gateway answers the name from the map instead of asking DNS, for proxied clients and for
# clients that ignore the proxy (the sandbox's /etc/hosts sends them to the relay, which hands the same name to the
# gateway). The mapped address is vetted like any other: loopback still needs allow_private_destinations: true.
RSpec.describe "network resolve:" do # rubocop:disable RSpec/DescribeClass
  extend AllowlistBackends
  include LoopbackHttpHelpers

  network_policy = LittleGhost::Sandbox::NetworkPolicy

  it "reads back as a frozen Hash of name => address, down-cased, and is part of the policy's value" do
    network = network_policy.new(allow: ["api.example.test:80"], resolve: {"API.example.test" => "127.0.0.1", v6: "[::1]"})
    expect(network.resolve).to eq({"api.example.test" => "127.0.0.1", "v6" => "::1"})
    expect(network.resolve).to be_frozen
    expect(network.inspect).to include(%(resolve={"api.example.test" => "127.0.0.1", "v6" => "::1"}))
    expect(network).not_to eq(network_policy.new(allow: ["api.example.test:80"]))
  end

  it "refuses a value that is not an IP address, a name that is not a host name, and lists the key when misspelt" do
    [[{"api.example.test" => "localhost"}, /"api.example.test" => "localhost" is not an IP address/],
     [{"" => "127.0.0.1"}, /"" is not a host name/],
     [{"api.example.test:80" => "127.0.0.1"}, /is not a host name/],
     [["api.example.test", "127.0.0.1"], /resolve: must be a Hash/]].each do |resolve, message|
      expect { network_policy.new(allow: ["a.test:80"], resolve: resolve) }.to raise_error(LittleGhost::PolicyError, message)
    end
    expect { LittleGhost::Sandbox::Policy.new(network: {allow: ["a.test:80"], resolv: {"a.test" => "127.0.0.1"}}) }
      .to raise_error(ArgumentError, /unknown network policy key: :resolv \(valid keys: .*:resolve/)
    expect { network_policy.new(mode: :none, resolve: {"a.test" => "127.0.0.1"}) }
      .to raise_error(LittleGhost::PolicyError, /does not take .*resolve/)
  end

  context "with Bubblewrap" do
    probe = LittleGhost::Sandboxes::Bubblewrap.probe
    before do
      skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
      skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
    end

    def open_sandbox(port, private_destinations:)
      network = {allow: ["api.example.test:#{port}"], resolve: {"api.example.test" => "127.0.0.1"},
                 allow_private_destinations: private_destinations}
      LittleGhost::Sandboxes::Bubblewrap.new(workspace: open_workspace, policy: {network: network}).open
    end

    it "reaches the local server by name through the gateway, and through the hosts file for a client ignoring the proxy" do
      port = start_server
      sandbox = open_sandbox(port, private_destinations: true)
      expect(curl(sandbox, "http://api.example.test:#{port}/").stdout).to eq("served by #{port} 200")
      # --noproxy '*': curl resolves the name itself (/etc/hosts: the relay) and connects directly.
      direct = sandbox.execute_program(["/usr/bin/curl", "-sS", "--noproxy", "*", "--max-time", "20", "-w", " %{http_code}",
                                        "http://api.example.test:#{port}/"], timeout: 60)
      expect(direct.stdout).to eq("served by #{port} 200"), direct.stderr
      expect(sandbox.network_log.map { |event| [event.destination, event.decision] })
        .to all(eq(["api.example.test:#{port}", :allowed]))
      expect(sandbox.denials).to be_empty
    ensure
      sandbox&.close
    end

  end

  # The gateway's answer for proxied clients, on each backend (a client ignoring the proxy is Bubblewrap's above).
  each_allowlist_backend do
    before { skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl") }

    def open_mapped(port, private_destinations:)
      network = {allow: ["api.example.test:#{port}"], resolve: {"api.example.test" => "127.0.0.1"},
                 allow_private_destinations: private_destinations}
      backend.new(workspace: open_workspace, policy: {network: network}).open
    end

    it "reaches the local server by name through the gateway" do
      port = start_server
      sandbox = open_mapped(port, private_destinations: true)
      expect(curl(sandbox, "http://api.example.test:#{port}/").stdout).to eq("served by #{port} 200")
      expect(sandbox.network_log.map { |event| [event.destination, event.decision] })
        .to eq([["api.example.test:#{port}", :allowed]])
    ensure
      sandbox&.close
    end

    it "refuses a loopback mapping without allow_private_destinations: true (:private_destination)" do
      port = start_server
      sandbox = open_mapped(port, private_destinations: false)
      expect(curl(sandbox, "http://api.example.test:#{port}/").stdout).to end_with(" 403")
      expect(sandbox.denials.map { |d| [d.target, d.reason] }).to eq([["api.example.test:#{port}", :private_destination]])
    ensure
      sandbox&.close
    end
  end
end
