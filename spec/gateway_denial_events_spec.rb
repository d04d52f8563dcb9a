# frozen_string_literal: true

require "spec_helper"
require "stringio"
require "timeout"

# A gateway refusal (a 403 answered on the gateway's own
# threads, without the GVL) is a denial event like any other: it shows in
# `sandbox.denials` at once and reaches every `on_denial` subscriber, in the
# order the gateway refused, on a Ruby thread the sandbox owns (never the
# caller's, never a gateway thread). A subscriber's exception is reported
# with `warn` and never stops the next deliveries; a slow subscriber never
# holds up the gateway; `close` delivers what is queued before it returns.
RSpec.describe "Gateway denial events" do
  include ProcessHelpers

  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  let(:workspace) { open_workspace }
  let(:sandbox) do
    backend.new(
      workspace: workspace,
      policy: {network: {mode: :allowlist, allow: ["allowed.invalid:1"], gateway: {provider: :builtin}}}
    )
  end

  after { sandbox.close }

  # A request the gateway refuses (the name is not allowlisted): 403 before any resolution.
  def refused(host)
    result = sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}",
                                      "http://#{host}/"], timeout: 30, environment: {"NO_PROXY" => "", "no_proxy" => ""})
    expect(result.stdout).to eq("403")
  end

  each_allowlist_backend do |name|
    it "reaches every subscriber, in order, on the sandbox's event thread" do
      seen = Queue.new
      sandbox.on_denial { |denial| seen << [denial, Thread.current] }
      sandbox.open
      %w[a.invalid:1 b.invalid:2 c.invalid:3].each { |host| refused(host) }
      events = Array.new(3) { Timeout.timeout(10) { seen.pop } }
      expect(events.map { |denial, _| denial.target }).to eq(%w[a.invalid:1 b.invalid:2 c.invalid:3])
      expect(events.map { |denial, _| [denial.kind, denial.operation, denial.reason] }.uniq)
        .to eq([%i[network connect not_allowed]])
      threads = events.map(&:last).uniq
      expect(threads.size).to eq(1)
      expect(threads.first).not_to eq(Thread.current)
      expect(sandbox.denials.map(&:target)).to eq(%w[a.invalid:1 b.invalid:2 c.invalid:3])
    end

    it "a subscriber's exception is warned about and the next denials still arrive" do
      later = Queue.new
      sandbox.on_denial { |denial| raise ArgumentError, "subscriber bug #{denial.target}" }
      sandbox.on_denial { |_denial| raise Exception, "not even a StandardError" } # rubocop:disable Lint/RaiseException
      sandbox.on_denial { |denial| later << denial.target }
      stderr = StringIO.new
      original = $stderr
      $stderr = stderr
      begin
        sandbox.open
        refused("a.invalid:1")
        refused("b.invalid:2")
        expect(Array.new(2) { Timeout.timeout(10) { later.pop } }).to eq(%w[a.invalid:1 b.invalid:2])
        sandbox.close
      ensure
        $stderr = original
      end
      expect(stderr.string).to include("on_denial subscriber raised ArgumentError: subscriber bug a.invalid:1")
      expect(stderr.string).to include("subscriber bug b.invalid:2")
      expect(stderr.string).to include("on_denial subscriber raised Exception: not even a StandardError")
    end

    it "a subscriber that never returns does not hold up the gateway" do
      release = Queue.new
      sandbox.on_denial { |_denial| release.pop }
      sandbox.open
      3.times { |i| refused("slow#{i}.invalid:1") } # each still answered 403 at once
      expect(sandbox.denials.size).to eq(3)
      release << true << true << true
    end

    it "close delivers every queued denial before it returns, then ends the event thread" do
      seen = []
      threads = []
      sandbox.on_denial do |denial|
        sleep 0.05
        seen << denial.target
        threads << Thread.current
      end
      sandbox.open
      %w[a.invalid:1 b.invalid:2 c.invalid:3].each { |host| refused(host) }
      sandbox.close
      expect(seen).to eq(%w[a.invalid:1 b.invalid:2 c.invalid:3])
      expect(threads.uniq.size).to eq(1)
      expect(threads.first).not_to be_alive
    end

    it "a reopened sandbox delivers again on a new event thread" do
      seen = Queue.new
      sandbox.on_denial { |denial| seen << [denial.target, Thread.current] }
      sandbox.open
      refused("a.invalid:1")
      first = Timeout.timeout(10) { seen.pop }
      sandbox.close
      sandbox.open
      refused("b.invalid:2")
      second = Timeout.timeout(10) { seen.pop }
      expect([first.first, second.first]).to eq(%w[a.invalid:1 b.invalid:2])
      expect(second.last).not_to eq(first.last)
    end

    it "a fork child delivers its own gateway's denials on a thread of its own" do
      seen = Queue.new
      sandbox.on_denial { |denial| seen << [denial.target, Thread.current] }
      sandbox.open
      refused("parent.invalid:1")
      parent_thread = Timeout.timeout(10) { seen.pop }.last
      reader, writer = IO.pipe
      pid = fork do
        reader.close
        # The child inherited the parent's event Thread object, not its thread.
        sandbox.close
        sandbox.open
        refused("child.invalid:1")
        target, thread = Timeout.timeout(10) { seen.pop }
        writer.write([target, thread != parent_thread, thread != Thread.current].inspect)
        sandbox.close
        exit!(0)
      rescue Exception => e # rubocop:disable Lint/RescueException
        writer.write(e.inspect)
        exit!(1)
      end
      writer.close
      report = reader.read
      _, status = Process.wait2(pid)
      expect(report).to eq(["child.invalid:1", true, true].inspect)
      expect(status).to be_success
    end
  end
end
