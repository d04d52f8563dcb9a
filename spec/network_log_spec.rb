# frozen_string_literal: true

require "spec_helper"
require "socket"
require "stringio"
require "timeout"

# Every connection and request through the built-in gateway is a frozen NetworkEvent, kept
# (bounded, like the denials) in `sandbox.network_log` and delivered to `on_network` subscribers in order, on a
# Ruby thread the sandbox owns (never the caller's), none lost by `close`. Real clients (curl, Python's urllib)
# run inside Bubblewrap and Landlock against loopback servers this spec starts (private destinations, hence the flag); they
# clear NO_PROXY so loopback names go through the gateway (G.5).
#
# Only what the event promises callers is asserted (destination, method, path for plain HTTP, status, decision, bytes
# where data flowed, a positive duration), so the specs hold whichever request engine records the events.
RSpec.describe "The network log and on_network" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers
  include LoopbackHttpHelpers

  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  let(:workspace) { open_workspace }
  let(:through_proxy) { {"NO_PROXY" => "", "no_proxy" => ""} }
  let(:body) { "hello from the destination" }
  let(:port) { start_server }
  let(:refused_port) { start_server }
  let(:policy) do
    {network: {mode: :allowlist, allow: ["localhost:#{port}"],
               gateway: {provider: :builtin, allow_private_destinations: true}}}
  end
  let(:sandbox) { backend.new(workspace: workspace, policy: policy) }

  after do
    sandbox.close
  end

  # A loopback server answering each request (one per connection) with `body`; returns its port.
  def start_server = super(body: body)

  def curl(*args)
    sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", *args], timeout: 30,
                                                                               environment: through_proxy)
  end

  # The log once it holds `count` events (the gateway records an exchange as it ends, which may be just after
  # the client saw its answer).
  def log_of(count, of: sandbox)
    eventually(10) { of.network_log.size >= count }
    of.network_log
  end

  each_allowlist_backend do |name|
    it "records an allowed plain-HTTP request, a tunnel and a refused request, in order" do
      sandbox.open
      expect(curl("http://localhost:#{port}/plain?x=1").stdout).to eq(body)
      expect(curl("--proxytunnel", "http://localhost:#{port}/tunnelled").stdout).to eq(body)
      expect(curl("-o", "/dev/null", "-w", "%{http_code}", "http://localhost:#{refused_port}/nope").stdout).to eq("403")

      plain, tunnel, refused = log_of(3)
      expect(plain.to_h.slice(:destination, :method, :path, :status, :decision))
        .to eq(destination: "localhost:#{port}", method: "GET", path: "/plain?x=1", status: 200, decision: :allowed)
      expect(plain.bytes_received).to be > body.bytesize # the answer's head and body crossed the gateway
      expect(plain.duration).to be_a(Float).and be > 0

      expect(tunnel.to_h.slice(:destination, :method, :status, :decision))
        .to eq(destination: "localhost:#{port}", method: "CONNECT", status: 200, decision: :allowed)
      expect(tunnel.bytes_sent).to be > 0 # the request inside the tunnel
      expect(tunnel.bytes_received).to be > body.bytesize
      expect(tunnel.duration).to be > 0
      expect(tunnel.inspected).to be(false)

      expect(refused.to_h.slice(:destination, :method, :path, :status, :decision))
        .to eq(destination: "localhost:#{refused_port}", method: "GET", path: "/nope", status: 403, decision: :denied)
      expect(refused.bytes_received).to eq(0) # nothing came from the destination: it was never reached

      # The refusal is also a denial, and the gateway keeps the same events.
      expect(sandbox.denials.map { |d| [d.operation, d.target, d.reason] })
        .to eq([[:connect, "localhost:#{refused_port}", :not_allowed]])
      expect(sandbox.gateway.network_log).to eq(sandbox.network_log)
    end

    it "records what Python's urllib fetches through the proxy variables" do
      skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
      sandbox.open
      script = "import urllib.request; print(urllib.request.urlopen('http://localhost:#{port}/py').read().decode())"
      result = sandbox.execute_program(["/usr/bin/python3", "-c", script], timeout: 30, environment: through_proxy)
      expect(result.stdout).to eq("#{body}\n")
      event = log_of(1).last
      expect([event.destination, event.http_method, event.path, event.status, event.decision])
        .to eq(["localhost:#{port}", "GET", "/py", 200, :allowed])
    end

    it "delivers every event to each subscriber in order on the sandbox's event thread, none lost by close" do
      seen = []
      threads = []
      other = Queue.new
      sandbox.on_network do |event|
        sleep 0.05 # slower than the gateway: events queue up behind it
        seen << event
        threads << Thread.current
      end
      sandbox.on_network { |event| other << event }
      sandbox.open
      curl("http://localhost:#{port}/a", "http://localhost:#{port}/b", "http://localhost:#{refused_port}/c")
      recorded = log_of(3)
      sandbox.close
      expect(seen).to eq(recorded)
      expect(seen.map(&:path)).to eq(%w[/a /b /c])
      expect(Array.new(3) { Timeout.timeout(10) { other.pop } }).to eq(recorded)
      expect(threads.uniq.size).to eq(1)
      expect(threads.first).not_to eq(Thread.current)
      expect(threads.first).not_to be_alive # close ended the event thread after delivering
    end

    it "an exchange still open at close is recorded and delivered before close returns" do
      held = TCPServer.new("127.0.0.1", 0) # accepts, reads, never answers
      accepted = Queue.new
      holder = Thread.new { loop { accepted << held.accept } }
      policy[:network][:allow] << "localhost:#{held.addr[1]}"
      seen = []
      sandbox.on_network { |event| seen << event }
      sandbox.open
      session = sandbox.start_program(["/usr/bin/curl", "-sS", "--max-time", "60", "http://localhost:#{held.addr[1]}/held"],
                                      environment: through_proxy)
      Timeout.timeout(20) { accepted.pop }
      sandbox.close
      expect(seen.map { |event| [event.destination, event.http_method, event.path] })
        .to eq([["localhost:#{held.addr[1]}", "GET", "/held"]])
      expect(seen).to eq(sandbox.network_log)
    ensure
      session&.close
      holder&.kill
      held&.close
    end

    it "a subscriber's exception is warned about and the next events still arrive" do
      later = Queue.new
      sandbox.on_network { |event| raise ArgumentError, "subscriber bug #{event.path}" }
      sandbox.on_network { |_event| raise Exception, "not even a StandardError" } # rubocop:disable Lint/RaiseException
      sandbox.on_network { |event| later << event.path }
      stderr = StringIO.new
      original = $stderr
      $stderr = stderr
      begin
        sandbox.open
        curl("http://localhost:#{port}/first")
        curl("http://localhost:#{port}/second")
        expect(Array.new(2) { Timeout.timeout(10) { later.pop } }).to eq(%w[/first /second])
        sandbox.close
      ensure
        $stderr = original
      end
      expect(stderr.string).to include("on_network subscriber raised ArgumentError: subscriber bug /first")
      expect(stderr.string).to include("subscriber bug /second")
      expect(stderr.string).to include("on_network subscriber raised Exception: not even a StandardError")
    end

    it "a subscriber that never returns does not hold up the gateway" do
      release = Queue.new
      sandbox.on_network { |_event| release.pop }
      sandbox.open
      3.times { |i| expect(curl("http://localhost:#{port}/#{i}").stdout).to eq(body) }
      expect(log_of(3).size).to eq(3)
    ensure
      3.times { release << true }
    end

    it "off_network stops deliveries to that handler only" do
      kept = Queue.new
      dropped = []
      handler = sandbox.on_network { |event| dropped << event }
      sandbox.on_network { |event| kept << event }
      expect(sandbox.off_network(handler)).to be(true)
      expect(sandbox.off_network(handler)).to be(false)
      sandbox.open
      curl("http://localhost:#{port}/after")
      expect(Timeout.timeout(10) { kept.pop }.path).to eq("/after")
      sandbox.close
      expect(dropped).to be_empty
    end

    it "keeps the last 100 events, oldest first, while the gateway keeps its own longer record" do
      sandbox.open
      urls = Array.new(105) { |i| "http://localhost:#{port}/#{i}" }
      curl("-o", "/dev/null", *urls)
      eventually(20) { sandbox.gateway.network_log.size == 105 }
      log = sandbox.network_log
      expect(log.size).to eq(100)
      expect(log.map(&:path)).to eq(Array.new(100) { |i| "/#{i + 5}" })
      expect(sandbox.gateway.network_log.size).to eq(105)
    end

    it "hands out frozen values compared by value" do
      sandbox.open
      curl("http://localhost:#{port}/value")
      event = log_of(1).first
      expect(sandbox.network_log).to be_frozen
      expect(event).to be_frozen
      expect(event.destination).to be_frozen
      expect(event.time).to be_a(Time).and be_frozen
      expect(event).to eq(sandbox.network_log.first)
      expect(event).not_to equal(sandbox.network_log.first)
      expect({event => 1}[sandbox.network_log.first]).to eq(1)
      expect(event.to_h.keys)
        .to eq(%i[destination method path status bytes_sent bytes_received duration decision reason detail inspected time])
      expect(event.inspect).to match(
        %r{\A#<LittleGhost::Sandbox::NetworkEvent allowed GET "localhost:#{port}" "/value" 200 sent=0 received=\d+ \d+\.\d{3}s>\z}
      )
      expect(event.to_s).to eq(event.inspect)
      expect(event.inspected?).to be(false)
      # `method` stays Object#method.
      expect(event.method(:path)).to be_a(Method)
      expect { LittleGhost::Sandbox::NetworkEvent.new }.to raise_error(NoMethodError)
    end

    it "is answered by a Native sandbox as by the backend it chose" do
      native = LittleGhost::Sandboxes::Native.new(workspace: workspace, policy: policy)
      skip "Native chose #{native.backend.class}, which has no gateway" unless native.backend.respond_to?(:gateway)
      seen = Queue.new
      native.on_network { |event| seen << event }
      native.open
      native.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", "http://localhost:#{port}/native"],
                             timeout: 30, environment: through_proxy)
      expect(Timeout.timeout(10) { seen.pop }.path).to eq("/native")
      expect(native.network_log).to eq(native.backend.network_log)
      expect(native.network_log.size).to eq(1)
    ensure
      native&.close
    end
  end
end

RSpec.describe "The network log of a sandbox without a gateway" do # rubocop:disable RSpec/DescribeClass
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: open_workspace) }

  it "is empty and frozen, and on_network needs a block" do
    expect(sandbox.network_log).to eq([]).and be_frozen
    expect { sandbox.on_network }.to raise_error(ArgumentError, "on_network requires a block")
    handler = sandbox.on_network { |_event| nil }
    expect(handler).to be_a(Proc)
    expect(sandbox.off_network(handler)).to be(true)
  end
end
