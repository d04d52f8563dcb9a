# frozen_string_literal: true

require "spec_helper"
require "socket"

# A `network:` declaration means what a user writes: `allow:` alone is an allowlist, `allow_private_destinations:`
# stands beside it, and a key that does not exist is refused with the list of those that do (never ignored).
# Invariant: whatever the spelling, the policy a sandbox reports is exactly what it enforces.
RSpec.describe "network declarations as users write them" do
  policy = LittleGhost::Sandbox::Policy

  it "reads {allow: [...]} without a mode as :allowlist" do
    network = policy.new(network: {allow: ["Example.com:443"]}).network
    expect(network.mode).to eq(:allowlist)
    expect(network.allow).to eq(["example.com:443"])
    expect(LittleGhost::Sandbox::NetworkPolicy.coerce(allow: ["a.example:80"]).mode).to eq(:allowlist)
  end

  it "keeps an explicit mode: allow: with mode: :none is still refused as before" do
    expect { policy.new(network: {mode: :none, allow: ["a.example:80"]}) }.to raise_error(LittleGhost::PolicyError)
  end

  it "refuses an unknown key, naming it and listing the valid keys, instead of ignoring it" do
    expect { policy.new(network: {allowlist: ["a.example:80"]}) }.to raise_error(ArgumentError) { |error|
      expect(error.message).to include("unknown network policy key: :allowlist")
      expect(error.message).to include(":mode, :allow, :allow_private_destinations")
    }
    expect { LittleGhost::Sandbox::NetworkPolicy.new(mode: :none, hosts: []) }
      .to raise_error(ArgumentError, /unknown network policy key: :hosts/)
  end

  it "accepts allow_private_destinations: beside allow: and gives it to the built-in gateway" do
    network = policy.new(network: {allow: ["localhost:8080"], allow_private_destinations: true}).network
    expect(network.mode).to eq(:allowlist)
    expect(network.gateway).to eq({allow_private_destinations: true})
    named = policy.new(network: {allow: ["localhost:1"], gateway: :builtin, allow_private_destinations: true}).network
    expect(named.gateway).to eq({provider: :builtin, allow_private_destinations: true})
    object = Object.new
    expect { policy.new(network: {allow: ["localhost:1"], gateway: object, allow_private_destinations: true}) }
      .to raise_error(ArgumentError, /give it to the gateway object/)
  end

  it "never changes the caller's Hash" do
    declaration = {allow: ["a.example:80"], allow_private_destinations: false}.freeze
    expect { policy.new(network: declaration) }.not_to raise_error
    expect(declaration).to eq({allow: ["a.example:80"], allow_private_destinations: false})
  end

  context "with Bubblewrap", if: LittleGhost::Sandbox.probe(:bubblewrap)[:available] do
    include LoopbackHttpHelpers

    it "lets curl, Python and Ruby reach an allowlisted local service with no extra environment" do
      port = start_server(body: "local service")
      workspace = open_workspace
      sandbox = LittleGhost::Sandbox.build(
        {provider: :bubblewrap, files: {root: :read_only},
         network: {allow: ["localhost:#{port}"], allow_private_destinations: true}},
        workspace: workspace
      )
      url = "http://localhost:#{port}/"
      clients = {
        curl: ["/usr/bin/curl", "-sS", "--max-time", "20", url],
        python: ["/usr/bin/python3", "-c", "import urllib.request; print(urllib.request.urlopen('#{url}').read().decode(), end='')"],
        ruby: [SANDBOXED_RUBY, "-rnet/http", "-e", "print Net::HTTP.get(URI('#{url}'))"]
      }
      sandbox.open do
        clients.each do |name, argv|
          result = sandbox.execute_program(argv, timeout: 60)
          expect([name, result.exit_code, result.stdout]).to eq([name, 0, "local service"]), result.stderr
        end
        # An unlisted port of the same host stays refused.
        refused = sandbox.execute_program(["/usr/bin/curl", "-s", "-o", "/dev/null", "-w", "%{http_code}",
                                           "http://localhost:#{port + 1}/"], timeout: 60)
        expect(refused.stdout).to eq("403")
      end
    end
  end
end
