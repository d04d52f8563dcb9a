# frozen_string_literal: true

require "spec_helper"
require "socket"

# Allowlist networking (SPEC §20, SC.10) under each backend that enforces it (spec/support/allowlist_backends.rb):
# Bubblewrap (the built-in gateway and the relay) and Landlock (the gateway and the supervisor that makes the child's
# connections): a child reaches exactly the listed destinations, and nothing else. There is no internet here, so the
# destinations are HTTP servers this spec starts on the host's loopback, reached with
# `allow_private_destinations: true`. G.5 puts localhost and 127.0.0.1 in NO_PROXY, so the children clear it to send
# loopback names through the proxy.
RSpec.describe "Network allowlist" do # rubocop:disable RSpec/DescribeClass
  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  after { @servers&.each(&:close) }

  let(:workspace) { open_workspace(paths: {proxy: "proxy"}) }
  let(:through_proxy) { {"NO_PROXY" => "", "no_proxy" => ""} }
  let(:private_ok) { {provider: :builtin, allow_private_destinations: true} }

  # A loopback HTTP server answering every request with `body`; `hold` keeps each response open after the headers
  # until the server is closed; `barrier` answers only once that many requests arrived (they are all open at once).
  class LoopbackServer
    attr_reader :port, :accepted

    def initialize(body: "hello", hold: false, barrier: nil)
      @server = TCPServer.new("127.0.0.1", 0)
      @port = @server.addr[1]
      @accepted = Queue.new
      @clients = []
      @lock = Mutex.new
      @arrived = 0
      @ready = ConditionVariable.new
      @thread = Thread.new { accept_loop(body, hold, barrier) }
    end

    def close
      @thread.kill
      @server.close
      @lock.synchronize { @clients.each { |c| c.close rescue nil } } # rubocop:disable Style/RescueModifier
    end

    private

    def accept_loop(body, hold, barrier)
      loop do
        client = @server.accept
        @lock.synchronize { @clients << client }
        Thread.new(client) { |c| serve(c, body, hold, barrier) }
      end
    end

    def serve(client, body, hold, barrier)
      while (line = client.gets) && line != "\r\n"; end
      @accepted << client
      wait_for(barrier) if barrier
      client.write("HTTP/1.1 200 OK\r\nContent-Length: #{hold ? 1 << 30 : body.bytesize}\r\nConnection: close\r\n\r\n")
      client.write(body)
      hold ? sleep : client.close
    rescue IOError, SystemCallError
      nil
    end

    def wait_for(count)
      @lock.synchronize do
        @arrived += 1
        @ready.broadcast
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 30
        @ready.wait(@lock, 1) while @arrived < count && Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      end
    end
  end

  def server(**options)
    (@servers ||= []) << LoopbackServer.new(**options)
    @servers.last
  end

  def sandbox_for(allow, gateway: private_ok, **options)
    backend.new(workspace: workspace, policy: {network: {mode: :allowlist, allow: allow, gateway: gateway}}, **options)
  end

  def curl(sandbox, *args, **options)
    sandbox.execute_program(["/usr/bin/curl", "-sS", "--max-time", "20", *args], timeout: 30,
                                                                               environment: through_proxy, **options)
  end

  def relay_processes(socket)
    Dir.glob("/proc/[0-9]*/cmdline").filter_map do |path|
      File.read(path).split("\0").then { |argv| argv if argv.include?("relay") && argv.include?(socket) }
    rescue SystemCallError
      nil
    end
  end

  each_allowlist_backend do |name|
    it "fetches from the allowed server, answers 403 to an unlisted one and records the denial" do
      allowed = server(body: "allowed body")
      other = server(body: "other body")
      sandbox = sandbox_for(["localhost:#{allowed.port}"])
      sandbox.open do
        fetched = curl(sandbox, "http://localhost:#{allowed.port}/file")
        expect([fetched.exit_code, fetched.stdout]).to eq([0, "allowed body"])
        tunnelled = curl(sandbox, "--proxytunnel", "http://localhost:#{allowed.port}/tunnel")
        expect([tunnelled.exit_code, tunnelled.stdout]).to eq([0, "allowed body"])

        refused = curl(sandbox, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:#{other.port}/")
        expect(refused.stdout).to eq("403")
        expect(other.accepted).to be_empty
        denial = sandbox.gateway.denials.last
        expect(denial).to be_a(LittleGhost::Sandbox::Denial)
        expect([denial.kind, denial.target, denial.reason]).to eq([:network, "localhost:#{other.port}", :not_allowed])
        expect(denial.time).to be_a(Time)
        # The same 403 is one of the sandbox's denial events.
        event = sandbox.denials.find { |d| d.kind == :network }
        expect(event).not_to be_nil
        expect([event.operation, event.target, event.reason]).to eq([:connect, "localhost:#{other.port}", :not_allowed])
      end
    end

    it "sets the G.5 proxy variables, configured values overriding them" do
      sandbox = sandbox_for(["localhost:1"])
      env = sandbox.execute_program(["/usr/bin/env"], timeout: 30, environment: {"NO_PROXY" => "internal"}).stdout
      %w[HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy].each do |name|
        expect(env).to include("#{name}=http://127.0.0.1:3128\n")
      end
      # localhost is allowlisted (the host's service behind the gateway), so only 127.0.0.1 stays direct.
      expect(env).to include("NO_PROXY=internal\n", "no_proxy=127.0.0.1\n")
    ensure
      sandbox&.close
    end

    # An allowlisted host:port is served on the sandbox's loopback by the relay (through the gateway, see
    # spec/network_transparent_spec.rb), or asked of the gateway by the Landlock supervisor; anything the allowlist
    # does not name stays out of reach.
    it "reaches nothing the allowlist does not name with a direct connection that ignores the proxy variables" do
      allowed = server
      target = server
      sandbox = sandbox_for(["localhost:#{allowed.port}"])
      direct = curl(sandbox, "--noproxy", "*", "http://127.0.0.1:#{target.port}/")
      expect(direct.exit_code).to eq(7)
      script = "import socket; socket.create_connection(('127.0.0.1', #{target.port}), timeout=5)"
      python = sandbox.execute_program(["/usr/bin/python3", "-c", script], timeout: 30)
      expect(python.exit_code).not_to eq(0)
      expect(python.stderr).to match(/ConnectionRefused|Network is unreachable|Errno/)
      expect(target.accepted).to be_empty
    ensure
      sandbox&.close
    end

    it "refuses a name that resolves to a private address unless allow_private_destinations is set" do
      target = server
      sandbox = sandbox_for(["localhost:#{target.port}"], gateway: :builtin)
      refused = curl(sandbox, "-o", "/dev/null", "-w", "%{http_code}", "http://localhost:#{target.port}/")
      expect(refused.stdout).to eq("403")
      expect(target.accepted).to be_empty
      expect(sandbox.gateway.denials.last.reason).to eq(:private_destination)
      sandbox.close
      expect { sandbox_for(["127.0.0.1:#{target.port}"], gateway: :envoy).open }
        .to raise_error(LittleGhost::PolicyError, /127\.0\.0\.1/)
    ensure
      sandbox&.close
    end

    it "raises PolicyError for malformed entries and unknown providers, leaving no gateway behind" do
      ["localhost", "http://example.com:80", "example.com:0", "-bad.example:443", "example.com:99999"].each do |entry|
        sandbox = sandbox_for([entry])
        expect { sandbox.open }.to raise_error(LittleGhost::PolicyError, /#{Regexp.escape(entry)}/)
        expect(sandbox.gateway).to be_nil
      end
      expect { sandbox_for(["example.com:443"], gateway: {provider: :squid}).open }
        .to raise_error(LittleGhost::PolicyError, /unknown network gateway provider/)
      expect { sandbox_for(["example.com:443"], gateway: Object.new).open }
        .to raise_error(LittleGhost::PolicyError, /must respond to open and close/)
      expect { LittleGhost::Sandbox::NetworkPolicy.coerce(:allowlist) }
        .to raise_error(LittleGhost::PolicyError, /non-empty allow list/)
    end

    it "serves 20 concurrent connections through one gateway" do
      target = server(body: "ok", barrier: 20)
      sandbox = sandbox_for(["localhost:#{target.port}"])
      urls = Array.new(20) { |i| "http://localhost:#{target.port}/#{i}" }
      result = curl(sandbox, "--parallel", "--parallel-immediate", "--parallel-max", "20", *urls)
      expect(result.exit_code).to eq(0), result.stderr
      expect(result.stdout).to eq("ok" * 20)
      expect(target.accepted.size).to eq(20)
    ensure
      sandbox&.close
    end

    it "leaves no relay, socket or directory behind when closed with a connection open" do
      relayed = name == :bubblewrap
      target = server(body: "x", hold: true)
      sandbox = sandbox_for(["localhost:#{target.port}"])
      sandbox.open
      gateway = sandbox.gateway
      socket = gateway.proxy_mount_path
      session = sandbox.start_program(["/usr/bin/curl", "-sS", "-o", "/dev/null", "http://localhost:#{target.port}/"],
                                      environment: through_proxy)
      expect(ProcessHelpers.eventually(20) { !target.accepted.empty? }).to be(true)
      upstream = target.accepted.pop
      expect(relay_processes(socket)).not_to be_empty if relayed
      sandbox.close
      expect(gateway.open?).to be(false)
      expect(File.exist?(File.dirname(socket))).to be(false)
      expect(relay_processes(socket)).to be_empty if relayed
      expect(ProcessHelpers.eventually { upstream.wait_readable(0) && upstream.read_nonblock(1 << 20, exception: false).nil? }).to be(true)
      sandbox.close
    ensure
      session&.close
    end

    it "lets a scope narrow :allowlist to :none but not widen it (SC.10)" do
      target = server(body: "scoped")
      sandbox = sandbox_for(["localhost:#{target.port}"])
      sandbox.open do
        narrowed = sandbox.scope(network: :none)
        result = curl(sandbox, "http://localhost:#{target.port}/", scope: narrowed)
        expect(result.exit_code).not_to eq(0)
        expect(target.accepted).to be_empty
        env = sandbox.execute_program(["/usr/bin/env"], timeout: 30, scope: narrowed).stdout
        expect(env).not_to include("HTTP_PROXY")
        expect { sandbox.scope(network: :inherit) }
          .to raise_error(LittleGhost::CapabilityError, /cannot widen network access/)
        expect { sandbox.scope(network: {mode: :allowlist, allow: ["localhost:1"]}) }
          .to raise_error(LittleGhost::CapabilityError, /cannot widen network access/)
        expect(curl(sandbox, "http://localhost:#{target.port}/", scope: sandbox.scope(network: true)).stdout).to eq("scoped")
      end
    end
  end

  context "under bubblewrap only" do
    let(:backend) { LittleGhost::Sandboxes::Bubblewrap }

    before do
      reason = AllowlistBackends.unavailable(:bubblewrap)
      skip reason if reason
    end

    it "takes allow_private_destinations from gateway_options" do
      target = server(body: "via options")
      sandbox = sandbox_for(["localhost:#{target.port}"], gateway: nil,
                                                          gateway_options: {allow_private_destinations: true})
      expect(curl(sandbox, "http://localhost:#{target.port}/").stdout).to eq("via options")
    ensure
      sandbox&.close
    end


    it "uses an external gateway's socket under a runtime path" do
      target = server(body: "external")
      directory = workspace.path(:proxy)
      helper = LittleGhost::Network::BuiltinGateway.new(allow: ["localhost:#{target.port}"], allow_private_destinations: true)
      helper.open
      # The application's proxy: a Unix socket under the runtime path, forwarding to the built-in gateway standalone.
      socket_path = File.join(directory, "app.sock")
      listener = UNIXServer.new(socket_path)
      forwarder = Thread.new do
        loop do
          client = listener.accept
          upstream = UNIXSocket.new(helper.proxy_mount_path)
          [[client, upstream], [upstream, client]].each do |from, to|
            Thread.new { IO.copy_stream(from, to) rescue nil; to.close_write rescue nil } # rubocop:disable Style/RescueModifier
          end
        end
      end
      gateway = {provider: :external, runtime_paths: [:proxy], proxy_mount_path: socket_path}
      sandbox = backend.new(workspace: workspace, policy: {runtime_paths: {proxy: :read_only},
                                                              network: {mode: :allowlist, allow: ["localhost:#{target.port}"],
                                                                        gateway: gateway}})
      expect(curl(sandbox, "http://localhost:#{target.port}/").stdout).to eq("external")
      expect(sandbox.gateway).to be_a(LittleGhost::Network::ExternalGateway)
    ensure
      sandbox&.close
      forwarder&.kill
      listener&.close
      helper&.close
    end


    it "needs the relay helper, naming the path it looked at" do
      sandbox = sandbox_for(["localhost:1"], relay: "/nonexistent/littleghost-sandbox-helper")
      expect { sandbox.open }.to raise_error(LittleGhost::DependencyError, %r{/nonexistent/littleghost-sandbox-helper})
    end
  end

  it "is refused by the backends that cannot enforce it (G.8)" do
    allowlist = {network: {mode: :allowlist, allow: ["a.example:443"]}}
    expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: allowlist) }
      .to raise_error(LittleGhost::CapabilityError, /:allowlist/)
    expect { LittleGhost::Sandboxes::Seatbelt.new(workspace: workspace, policy: allowlist, platform: "arm64-darwin23", executable: "/bin/true").open }
      .to raise_error(LittleGhost::CapabilityError, /allowlisted network egress/)
  end
end
