# frozen_string_literal: true

require "spec_helper"
require "socket"
require "rbconfig"

# An allowlisted `host:port` is reachable from inside a Bubblewrap
# sandbox by clients that ignore the proxy variables (Node.js before 22.21, a
# raw socket), with no extra environment. The relay listens on a loopback
# address of the sandbox's own for each exact entry, the sandbox's
# /etc/hosts points the name at it, and every connection still goes through
# the gateway as `CONNECT host:port`: the gateway's rules (allowlist, private
# addresses) and its denials are exactly those of the proxy path, and a port
# the allowlist does not name stays unreachable.
RSpec.describe "Allowlisted destinations for clients that ignore the proxy" do
  include ProcessHelpers
  include LoopbackHttpHelpers

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  let(:workspace) { open_workspace }

  # An HTTP server on +address+ answering every request with "hi from the host"; returns its port.
  def serve(address)
    start_server(address, body: "hi from the host")
  end

  def sandbox_for(allow, private_ok: true)
    LittleGhost::Sandbox.build(
      {provider: :bubblewrap, network: {allow: allow, allow_private_destinations: private_ok}},
      workspace: workspace
    )
  end

  # Python with the proxy variables removed and a plain socket: a client that
  # knows nothing of proxies.
  def direct_get(sandbox, host, port)
    script = <<~PY
      import os, socket
      for name in [n for n in os.environ if n.lower().endswith("_proxy")]:
          del os.environ[name]
      try:
          s = socket.create_connection((#{host.inspect}, #{port}), timeout=10)
          s.sendall(b"GET / HTTP/1.1\\r\\nHost: #{host}\\r\\nConnection: close\\r\\n\\r\\n")
          data = b""
          while True:
              chunk = s.recv(4096)
              if not chunk:
                  break
              data += chunk
          print(data.decode(errors="replace"))
      except OSError as e:
          print("FAILED", type(e).__name__)
    PY
    sandbox.execute_program(["python3", "-c", script], timeout: 30).stdout
  end

  it "lets a client that ignores the proxy reach an allowlisted localhost:PORT through the gateway" do
    port = serve("127.0.0.1")
    sandbox = sandbox_for(["localhost:#{port}"])
    sandbox.open do
      reply = direct_get(sandbox, "localhost", port)
      expect(reply).to start_with("HTTP/1.1 200").and end_with("hi from the host\n")
      # Not allowlisted: nothing listens for it inside the sandbox.
      expect(direct_get(sandbox, "localhost", port + 1)).to include("FAILED ConnectionRefusedError")
    end
  end

  it "gives an allowlisted host name its own loopback address in the sandbox's /etc/hosts, kept beside localhost" do
    name = Socket.gethostname
    address = Addrinfo.getaddrinfo(name, nil, :INET).first&.ip_address
    skip "#{name} does not resolve to an IPv4 address here" unless address
    port = serve(address)
    sandbox = sandbox_for(["#{name}:#{port}"])
    sandbox.open do
      hosts = sandbox.execute_program(["cat", "/etc/hosts"], timeout: 30).stdout
      entries = hosts.lines.reject { |line| line.start_with?("#") }.map(&:split)
      mine = entries.select { |words| words.drop(1).include?(name) }
      expect(mine.map(&:first)).to eq(["127.80.0.1"])
      expect(entries.any? { |words| words.drop(1).include?("localhost") }).to be(true)
      expect(direct_get(sandbox, name, port)).to end_with("hi from the host\n")
    end
    # The host's own /etc/hosts is untouched.
    expect(File.read("/etc/hosts")).not_to include("127.80.0.1")
  end

  it "keeps every gateway rule: a private destination is refused with 403 and recorded as a Denial" do
    port = serve("127.0.0.1")
    sandbox = sandbox_for(["localhost:#{port}"], private_ok: false)
    sandbox.open do
      reply = direct_get(sandbox, "localhost", port)
      expect(reply).to start_with("HTTP/1.1 403")
      expect(eventually(5) { sandbox.denials.any? }).to be(true)
      denial = sandbox.denials.last
      expect([denial.kind, denial.reason]).to eq(%i[network private_destination])
    end
  end

  it "lets curl, Python, Ruby's Net::HTTP and Node.js reach an allowlisted local service with no extra environment" do
    port = serve("127.0.0.1")
    sandbox = sandbox_for(["localhost:#{port}"])
    url = "http://localhost:#{port}/"
    clients = {
      curl: ["curl", "-s", "--max-time", "20", url],
      python: ["python3", "-c", "import urllib.request; print(urllib.request.urlopen('#{url}', timeout=20).read().decode(), end='')"],
      ruby: [SANDBOXED_RUBY, "-rnet/http", "-e", "print Net::HTTP.get(URI('#{url}'))"],
      node: ["node", "-e", "require('http').get('#{url}', r => r.on('data', d => process.stdout.write(d)))"]
    }
    sandbox.open do
      clients.each do |name, argv|
        next if name == :node && !system("command -v node >/dev/null 2>&1")

        run = sandbox.execute_program(argv, timeout: 30)
        expect([name, run.stdout]).to eq([name, "hi from the host"])
      end
    end
  end

  it "reaches an allowlisted destination from Node.js with no extra environment" do
    node = ENV.fetch("PATH", "").split(":").map { |dir| File.join(dir, "node") }.find { |f| File.executable?(f) }
    skip "Node.js is not installed" unless node
    port = serve("127.0.0.1")
    sandbox = sandbox_for(["localhost:#{port}"])
    script = "require('http').get('http://localhost:#{port}/', r => { let b = ''; r.on('data', d => b += d); " \
             "r.on('end', () => console.log(r.statusCode, b)); }).on('error', e => { console.log('ERR', e.message); process.exit(1); })"
    sandbox.open do
      run = sandbox.execute_program([node, "-e", script], timeout: 30)
      expect(run.stdout).to eq("200 hi from the host\n")
      expect(run.exit_code).to eq(0)
    end
  end
end
