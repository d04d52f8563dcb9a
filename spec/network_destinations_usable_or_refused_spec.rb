# frozen_string_literal: true

require "spec_helper"

# A declaration's destinations are usable or refused at build, never silently useless. A secret is swapped only in
# requests the gateway reads; over HTTPS (port 443, which a `*` port includes) it reads them only with `inspect: true`,
# so a secret bound there without an inspected entry would reach the destination as its stand-in (a 401, and no
# denial anywhere). `upstream_ca:` verifies inspected destinations only. And keys that only an allowlist takes, given
# without `allow:`, name the missing key instead of Ruby's "missing keyword: :mode".
RSpec.describe "network destinations usable or refused at build" do # rubocop:disable RSpec/DescribeClass
  value = "ghp_#{"usable" * 6}"

  def build(network)
    LittleGhost::Sandbox.build({provider: :bubblewrap, network: network}, workspace: open_workspace)
  end

  it "refuses a secret bound to an HTTPS destination without inspect: true, naming it and never the value, and builds it with one" do
    secret = {api: {value: value, destinations: ["api.example.test:443"]}}
    [["api.example.test:443"], ["*.example.test:443"]].each do |allow|
      expect { build(allow: allow, secrets: secret) }
        .to raise_error(LittleGhost::PolicyError,
                        /secret "api" destination "api.example.test:443" .*\{destination: "api.example.test:443", inspect: true\}/) { |e|
          expect(e.message).not_to include(value)
        }
    end
    # Any port includes 443.
    expect { build(allow: ["db.example.test:*"], secrets: {db: {value: value, destinations: ["db.example.test:*"]}}) }
      .to raise_error(LittleGhost::PolicyError, /"db.example.test:443", inspect: true/)
    # The same secret builds once an inspected entry covers its HTTPS destination, or on a plain HTTP port.
    expect(build(allow: [{destination: "api.example.test:443", inspect: true}], secrets: secret))
      .to be_a(LittleGhost::Sandbox)
    expect(build(allow: [{destination: "*.example.test:443", inspect: true}], secrets: secret))
      .to be_a(LittleGhost::Sandbox)
    expect(build(allow: ["api.example.test:8080"], secrets: {api: {value: value, destinations: ["api.example.test:8080"]}}))
      .to be_a(LittleGhost::Sandbox)
  end

  it "refuses upstream_ca: when no destination is inspected" do
    ca = File.join(temporary_directory, "ca.pem")
    expect { build(allow: ["api.example.test:443"], upstream_ca: ca) }
      .to raise_error(LittleGhost::PolicyError, /upstream_ca: .*no allow entry has inspect: true/)
    expect(build(allow: [{destination: "api.example.test:443", inspect: true}], upstream_ca: ca).effective_policy.network.upstream_ca)
      .to eq(ca)
  end

  it "names the missing allow: when secrets: (or another allowlist key) comes without it" do
    expect { build(secrets: {api: {value: value, destinations: ["a.test:80"]}}) }
      .to raise_error(ArgumentError, /\Anetwork secrets: needs allow: /) { |e| expect(e.message).not_to include(value) }
    expect { build(upstream_ca: "/ca.pem", allow_private_destinations: true) }
      .to raise_error(ArgumentError, /network upstream_ca:, allow_private_destinations: needs allow: /)
    expect { LittleGhost::Sandbox::NetworkPolicy.new(resolve: {"a.test" => "127.0.0.1"}) }
      .to raise_error(ArgumentError, /network resolve: needs allow: /)
  end
end
