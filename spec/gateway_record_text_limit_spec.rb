# frozen_string_literal: true

require "spec_helper"

# What the gateway records of a request (its path in the network log and in a denial) is cut to 1 KiB, with a marker
# saying it was cut and how long it was: a child chooses its paths up to the head limit (32 KiB), and the kept records
# (1,000 events, 1,024 denials, a sandbox's own 100 of each) would otherwise hold tens of MiB outside the gateway's
# memory budget (docs/security.md, "The gateway: descriptor and memory budgets and a strict request parser").
RSpec.describe "The gateway's records of a request with a long path" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers
  include LoopbackHttpHelpers

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  let(:port) { start_server(body: "ok") }
  let(:policy) do
    {network: {allow: [{destination: "localhost:#{port}", methods: %w[GET], paths: ["/ok/"]}],
               allow_private_destinations: true}}
  end
  let(:sandbox) { LittleGhost::Sandboxes::Bubblewrap.new(workspace: open_workspace, policy: policy) }
  let(:long_path) { "/refused/#{"a" * (30 * 1024)}" }

  after { sandbox.close }

  def expect_cut(path)
    expect(path.bytesize).to be <= 1024
    expect(path).to start_with("/refused/aaaa").and end_with("...[cut from #{long_path.bytesize} bytes]")
  end

  it "denies a request with a 30 KiB path and keeps at most 1 KiB of it, saying it was cut" do
    sandbox.open
    curl = ["/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:#{port}#{long_path}"]
    result = sandbox.execute_program(curl, timeout: 30, environment: {"NO_PROXY" => "", "no_proxy" => ""})
    expect(result.stdout).to eq("403")
    eventually(10) { sandbox.network_log.size >= 1 && sandbox.gateway.denials.size >= 1 }

    denial = sandbox.denials.last
    expect([denial.reason, denial.http_method]).to eq([:request_not_allowed, "GET"])
    expect_cut(denial.path)
    expect_cut(sandbox.gateway.denials.last.path)
    event = sandbox.network_log.last
    expect([event.decision, event.status]).to eq([:denied, 403])
    expect_cut(event.path)
    expect_cut(sandbox.gateway.network_log.last.path)
  end
end
