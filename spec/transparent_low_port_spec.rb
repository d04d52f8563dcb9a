# frozen_string_literal: true

require "spec_helper"
require "socket"
require "rbconfig"

# An exact allowlist entry on a port below 1024 (`api.example.com:443`) is reachable, with no proxy environment, by
# clients that ignore the proxy variables (Node.js 20's http, a raw socket), as root and as any other user.
#
# Invariants:
# - the relay listens for an allowlisted name on its own loopback address, on the allowlisted port, and only ever asks
#   the gateway for that exact `host:port`; the gateway decides (allowlist, private addresses) and records its denials
#   as for every other request;
# - to let the relay listen below 1024, the launch lowers `net.ipv4.ip_unprivileged_port_start` of the sandbox's own
#   network namespace (to the lowest allowlisted port), never the host's, and the program cannot change it further;
# - nothing else becomes reachable: the namespace still has only its own loopback, a port or address the allowlist
#   does not name refuses the connection, and the host's own loopback services stay out of reach.
RSpec.describe "Allowlisted destinations below port 1024 for clients that ignore the proxy" do
  include ProcessHelpers
  include LoopbackHttpHelpers

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  let(:workspace) { open_workspace }
  let(:name) { Socket.gethostname }
  let(:address) do
    Addrinfo.getaddrinfo(name, nil, :INET).first&.ip_address ||
      skip("#{name} does not resolve to an IPv4 address here")
  end

  HOST_PORT_START = "/proc/sys/net/ipv4/ip_unprivileged_port_start"

  # An HTTP server on the host at +address+:+port+ answering "hi from PORT". Ports below 1024 need root here.
  def serve(address, port)
    skip "a test server on the host's port #{port} needs root (run the suite as root to cover it)" unless Process.uid.zero?
    start_server(address, port, body: "hi from #{port}")
  rescue Errno::EADDRINUSE
    skip "the host's #{address}:#{port} is already in use"
  end

  def sandbox_for(allow, private_ok: true)
    LittleGhost::Sandbox.build(
      {provider: :bubblewrap, network: {allow: allow, allow_private_destinations: private_ok}},
      workspace: workspace
    )
  end

  # The command with every proxy variable removed: a client that knows nothing of proxies.
  def without_proxies(*argv)
    unset = %w[HTTP_PROXY HTTPS_PROXY ALL_PROXY http_proxy https_proxy all_proxy NODE_USE_ENV_PROXY]
    ["env", *unset.flat_map { |variable| ["-u", variable] }, *argv]
  end

  # A raw socket from bash: `exec 3<>/dev/tcp/HOST/PORT`, one GET, the answer (or the error).
  def raw_get(sandbox, host, port)
    script = "exec 3<>/dev/tcp/#{host}/#{port} || exit 7; " \
             "printf 'GET / HTTP/1.1\\r\\nHost: #{host}\\r\\nConnection: close\\r\\n\\r\\n' >&3; cat <&3"
    sandbox.execute_program(without_proxies("bash", "-c", script), timeout: 30)
  end

  def node
    @node ||= ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, "node") }.find { |f| File.executable?(f) }
  end

  def node_get(sandbox, url)
    script = "require('http').get(#{url.inspect}, r => { let b = ''; r.on('data', d => b += d); " \
             "r.on('end', () => console.log(r.statusCode, b)); }).on('error', e => console.log('ERR', e.code))"
    sandbox.execute_program(without_proxies(node, "-e", script), timeout: 30)
  end

  it "lets Node.js and a raw socket reach an allowlisted name on port 443 with no proxy environment" do
    serve(address, 443)
    sandbox = sandbox_for(["#{name}:443"])
    sandbox.open do
      run = raw_get(sandbox, name, 443)
      expect([run.exit_code, run.stdout]).to match([0, a_string_starting_with("HTTP/1.1 200").and(ending_with("hi from 443"))])
      if node
        expect(node_get(sandbox, "http://#{name}:443/").stdout).to eq("200 hi from 443\n")
      end
      # Through the gateway, as a CONNECT to exactly the allowlisted pair.
      expect(eventually(10) { sandbox.network_log.any? { |event| event.destination == "#{name}:443" } }).to be(true)
      expect(sandbox.network_log.map { |event| event.to_h.values_at(:method, :destination, :decision) }.uniq)
        .to eq([["CONNECT", "#{name}:443", :allowed]])
    end
  end

  it "lets curl, Python, Ruby's Net::HTTP and Node.js reach an allowlisted name on port 443 with no extra environment" do
    serve(address, 443)
    sandbox = sandbox_for(["#{name}:443"])
    url = "http://#{name}:443/"
    clients = {
      curl: ["curl", "-s", "--max-time", "20", url],
      python: ["python3", "-c", "import urllib.request; print(urllib.request.urlopen('#{url}', timeout=20).read().decode(), end='')"],
      ruby: [SANDBOXED_RUBY, "-rnet/http", "-e", "print Net::HTTP.get(URI('#{url}'))"]
    }
    clients[:node] = [node, "-e", "require('http').get('#{url}', r => r.on('data', d => process.stdout.write(d)))"] if node
    sandbox.open do
      clients.each do |client, argv|
        run = sandbox.execute_program(argv, timeout: 30)
        expect([client, run.stdout]).to eq([client, "hi from 443"])
      end
    end
  end

  it "serves localhost:80 on the sandbox's own 127.0.0.1:80, still through the gateway" do
    serve("127.0.0.1", 80)
    sandbox = sandbox_for(["localhost:80"])
    sandbox.open do
      run = raw_get(sandbox, "localhost", 80)
      expect(run.stdout).to end_with("hi from 80")
      expect(node_get(sandbox, "http://localhost/").stdout).to eq("200 hi from 80\n") if node
    end
  end

  it "refuses a port and an address the allowlist does not name, and the host's own loopback stays out of reach" do
    serve(address, 443)
    serve("127.0.0.1", 80) unless address == "127.0.0.1"
    sandbox = sandbox_for(["#{name}:443"])
    sandbox.open do
      # Nothing listens for a port the allowlist does not name, nor on the sandbox's own loopback at 443: the host's
      # server on 127.0.0.1 is not the sandbox's 127.0.0.1.
      expect(raw_get(sandbox, name, 80).exit_code).to eq(7)
      expect(raw_get(sandbox, "127.0.0.1", 443).exit_code).to eq(7)
      expect(raw_get(sandbox, "127.0.0.1", 80).exit_code).to eq(7)
      # Only loopback exists in the sandbox.
      expect(raw_get(sandbox, "192.0.2.1", 443).exit_code).to eq(7)
      # Through the proxy the gateway decides and records the refusal.
      curl = sandbox.execute_program(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                                      "http://#{name}:80/"], timeout: 30)
      expect(curl.stdout).to eq("403")
      expect(eventually(5) { sandbox.denials.any? { |d| d.target == "#{name}:80" } }).to be(true)
      expect(sandbox.denials.find { |d| d.target == "#{name}:80" }.reason).to eq(:not_allowed)
    end
  end

  # A tunnel cannot enforce method or path rules, so such a destination gets no listener and no /etc/hosts line:
  # Net::HTTP (which goes direct to a name that resolves to loopback) keeps using the proxy, where the rules hold.
  it "leaves a port-80 destination with HTTP rules to the proxy, where its rules are enforced" do
    serve(address, 80)
    sandbox = sandbox_for([{destination: "#{name}:80", methods: %w[GET]}])
    url = "http://#{name}:80/"
    sandbox.open do
      hosts = sandbox.execute_program(["cat", "/etc/hosts"], timeout: 30).stdout
      expect(hosts).not_to include("127.80.0.1")
      get = sandbox.execute_program([SANDBOXED_RUBY, "-rnet/http", "-e", "print Net::HTTP.get(URI('#{url}'))"],
                                    timeout: 30)
      expect(get.stdout).to eq("hi from 80")
      post = sandbox.execute_program([SANDBOXED_RUBY, "-rnet/http", "-e",
                                      "print Net::HTTP.post(URI('#{url}'), 'x').code"], timeout: 30)
      expect(post.stdout).to eq("403")
      expect(eventually(5) { sandbox.denials.any? { |d| d.reason == :request_not_allowed } }).to be(true)
    end
  end

  # Needs no host server: the relay's listener on 443 answers with the gateway's refusal.
  it "keeps the gateway's rules on a low port: a private destination is refused with 403 and recorded" do
    skip "#{name} does not resolve to a private address here" unless Addrinfo.ip(address).ipv4_private? ||
                                                                       Addrinfo.ip(address).ipv4_loopback?
    sandbox = sandbox_for(["#{name}:443"], private_ok: false)
    sandbox.open do
      expect(raw_get(sandbox, name, 443).stdout).to start_with("HTTP/1.1 403")
      expect(eventually(5) { sandbox.denials.any? { |d| d.target == "#{name}:443" } }).to be(true)
      denial = sandbox.denials.find { |d| d.target == "#{name}:443" }
      expect([denial.kind, denial.reason]).to eq(%i[network private_destination])
      if node
        expect(node_get(sandbox, "http://#{name}:443/").stdout).to start_with("403")
      end
    end
  end

  it "lowers ip_unprivileged_port_start only inside the sandbox, only as far as needed, and the program cannot change it" do
    host_value = File.read(HOST_PORT_START)
    sandbox = sandbox_for(["#{name}:8443", "#{name}:443", "other.invalid:993"])
    script = "cat #{HOST_PORT_START}; echo 80 > #{HOST_PORT_START} 2>/dev/null && echo WROTE; " \
             "python3 -c 'import socket; s = socket.socket(); s.bind((\"127.0.0.1\", 80))' 2>/dev/null && echo BOUND80; true"
    sandbox.open do
      run = sandbox.execute_program(["bash", "-c", script], timeout: 30)
      # The lowest allowlisted port; 80 stays privileged, and the sysctl is read-only to the program.
      expect(run.stdout).to eq("443\n")
      # A sandbox whose allowlist needs no low port keeps the kernel's default.
      high = sandbox_for(["#{name}:8443"])
      high.open { expect(high.execute_program(["cat", HOST_PORT_START], timeout: 30).stdout).to eq("1024\n") }
    end
    expect(File.read(HOST_PORT_START)).to eq(host_value)
  end

  it "prepares a ProcessSession's sandbox the same way as a run's" do
    sandbox = sandbox_for(["#{name}:443"], private_ok: false)
    sandbox.open do
      session = sandbox.start_program(["cat", HOST_PORT_START])
      expect(session.wait(timeout: 30).exitstatus).to eq(0)
      expect(session.read.stdout).to eq("443\n")
    ensure
      session&.close
    end
  end
end
