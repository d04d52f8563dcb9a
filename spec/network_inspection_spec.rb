# frozen_string_literal: true

require "spec_helper"
require "socket"
require "openssl"

# TLS inspection under Bubblewrap and Landlock. For a destination marked for inspection the child's TLS ends at
# the gateway, which shows a certificate of its own per-gateway CA (trusted by the child only through the bundle the
# gateway exports) and opens its own TLS connection to the destination, verifying the destination's certificate
# against the system's roots plus `upstream_ca`. A ClientHello naming another host than the CONNECT target is refused.
# A destination not marked stays an end-to-end tunnel: the child sees the destination's own certificate.
#
# There is no internet here: the destinations are HTTPS servers on the host's loopback whose certificates a CA made
# by this spec signed, reached as `localhost` with `allow_private_destinations: true`.
RSpec.describe "Network TLS inspection" do # rubocop:disable RSpec/DescribeClass
  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
    skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
  end

  after { @servers&.each(&:close) }

  let(:workspace) { open_workspace }
  let(:through_proxy) { {"NO_PROXY" => "", "no_proxy" => ""} }
  let(:bundle_variables) { %w[SSL_CERT_FILE REQUESTS_CA_BUNDLE CURL_CA_BUNDLE NODE_EXTRA_CA_CERTS GIT_SSL_CAINFO] }

  # A CA of this spec and an HTTPS server on 127.0.0.1 with a certificate it signed for localhost and 127.0.0.1;
  # every request is answered with `body`.
  class TestCA
    attr_reader :certificate, :key

    def initialize(name)
      @key = OpenSSL::PKey::EC.generate("prime256v1")
      @certificate = sign(subject: "/CN=#{name}", key: @key, ca: true)
    end

    def pem = @certificate.to_pem

    def issue(names)
      key = OpenSSL::PKey::EC.generate("prime256v1")
      [sign(subject: "/CN=#{names.first}", key: key, ca: false, names: names), key]
    end

    private

    def sign(subject:, key:, ca:, names: [])
      certificate = OpenSSL::X509::Certificate.new
      certificate.version = 2
      certificate.serial = OpenSSL::BN.rand(64)
      certificate.subject = OpenSSL::X509::Name.parse(subject)
      certificate.issuer = ca ? certificate.subject : @certificate.subject
      certificate.public_key = key
      certificate.not_before = Time.now - 3600
      certificate.not_after = Time.now + 3600
      extensions = OpenSSL::X509::ExtensionFactory.new
      extensions.subject_certificate = certificate
      extensions.issuer_certificate = ca ? certificate : @certificate
      certificate.add_extension(extensions.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
      unless names.empty?
        alt = names.map { |n| n.match?(/\A[\d.]+\z/) ? "IP:#{n}" : "DNS:#{n}" }.join(",")
        certificate.add_extension(extensions.create_extension("subjectAltName", alt))
      end
      certificate.sign(ca ? key : @key, OpenSSL::Digest.new("SHA256"))
      certificate
    end
  end

  class HttpsServer
    attr_reader :port, :accepted

    def initialize(ca, body)
      certificate, key = ca.issue(%w[localhost 127.0.0.1])
      context = OpenSSL::SSL::SSLContext.new
      context.cert = certificate
      context.key = key
      @tcp = TCPServer.new("127.0.0.1", 0)
      @port = @tcp.addr[1]
      @accepted = Queue.new
      @server = OpenSSL::SSL::SSLServer.new(@tcp, context)
      @server.start_immediately = false
      @thread = Thread.new { accept_loop(body) }
    end

    def close
      @thread.kill
      @tcp.close
    end

    private

    def accept_loop(body)
      loop do
        client = @server.accept
        Thread.new(client) { |c| serve(c, body) }
      end
    end

    def serve(client, body)
      client.accept
      @accepted << true
      while (line = client.gets) && line != "\r\n"; end
      client.write("HTTP/1.1 200 OK\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
      client.close
    rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
      nil
    end
  end

  def ca
    @ca ||= TestCA.new("Test upstream CA")
  end

  def ca_path
    @ca_path ||= File.join(temporary_directory, "upstream-ca.pem").tap { |path| File.write(path, ca.pem) }
  end

  def server(body)
    (@servers ||= []) << HttpsServer.new(ca, body)
    @servers.last
  end

  # A sandbox allowing `inspect` (inspected) and `allow` (tunnelled) localhost ports.
  def sandbox_for(inspect: [], allow: [], upstream_ca: ca_path)
    entries = inspect.map { |port| {destination: "localhost:#{port}", inspect: true} } +
              allow.map { |port| "localhost:#{port}" }
    network = {allow: entries, allow_private_destinations: true}
    network[:upstream_ca] = upstream_ca if upstream_ca
    backend.new(workspace: workspace, policy: {network: network})
  end

  def run(sandbox, argv)
    sandbox.execute_program(argv, timeout: 60, environment: through_proxy)
  end

  def curl(sandbox, *args)
    run(sandbox, ["/usr/bin/curl", "-sS", "--max-time", "30", *args])
  end

  # The issuer's common name of the certificate a Python client is shown through a CONNECT to `target`, presenting
  # `server_name` as SNI and verifying with the default roots (SSL_CERT_FILE), then the response's status and body.
  def python_fetch(sandbox, target, server_name: "localhost")
    host, port = target.split(":")
    script = <<~PY
      import socket, ssl, sys
      sock = socket.create_connection(("127.0.0.1", 3128), timeout=30)
      sock.sendall(b"CONNECT #{host}:#{port} HTTP/1.1\\r\\nHost: #{host}:#{port}\\r\\n\\r\\n")
      head = b""
      while not head.endswith(b"\\r\\n\\r\\n"):
          head += sock.recv(1)
      print(head.split(b"\\r\\n")[0].decode())
      sys.stdout.flush()
      context = ssl.create_default_context()
      tls = context.wrap_socket(sock, server_hostname="#{server_name}")
      issuer = dict(pair[0] for pair in tls.getpeercert()["issuer"])
      print(issuer["commonName"])
      tls.sendall(b"GET / HTTP/1.1\\r\\nHost: #{host}\\r\\nConnection: close\\r\\n\\r\\n")
      answer = b""
      while True:
          chunk = tls.recv(65536)
          if not chunk:
              break
          answer += chunk
      print(answer.split(b"\\r\\n")[0].decode(), answer.split(b"\\r\\n\\r\\n", 1)[1].decode())
    PY
    run(sandbox, ["/usr/bin/python3", "-c", script])
  end

  # Python's http.server over TLS, HTTP/1.1: after a response it keeps the connection open for the next request.
  PYTHON_HTTPS = <<~PY
    import http.server, ssl, sys
    class Handler(http.server.SimpleHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def log_message(self, *args):
            pass
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(sys.argv[1], sys.argv[2])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()
  PY

  each_allowlist_backend do |name|
    it "lets a child's curl and Python reach an inspected destination, shown a certificate of the sandbox's own CA" do
      target = server("inspected body")
      sandbox = sandbox_for(inspect: [target.port])
      bundle = nil
      sandbox.open do
        env = sandbox.execute_program(["/usr/bin/env"], timeout: 30).stdout.lines.to_h { |l| l.chomp.split("=", 2) }
        bundle = env.fetch("SSL_CERT_FILE")
        expect(bundle_variables.map { |name| env[name] }).to eq([bundle] * 5)
        expect(File.basename(bundle)).to eq("ca-bundle.pem")
        expect(sandbox.gateway.environment).to eq(bundle_variables.to_h { |name| [name, bundle] })

        # curl verifies with CURL_CA_BUNDLE (the bundle) and is shown a leaf of the sandbox CA, not the server's.
        fetched = curl(sandbox, "-v", "https://localhost:#{target.port}/")
        expect([fetched.exit_code, fetched.stdout]).to eq([0, "inspected body"]), fetched.stderr
        expect(fetched.stderr).to match(/issuer: .*CN *= *LittleGhost sandbox CA \h+/)
        expect(fetched.stderr).not_to include("Test upstream CA")
        expect(fetched.stderr).to include("ALPN: server accepted http/1.1")

        # urllib with Python's default verification (SSL_CERT_FILE).
        script = "import urllib.request; print(urllib.request.urlopen('https://localhost:#{target.port}/').read().decode())"
        urllib = run(sandbox, ["/usr/bin/python3", "-c", script])
        expect([urllib.exit_code, urllib.stdout]).to eq([0, "inspected body\n"]), urllib.stderr
        python = python_fetch(sandbox, "localhost:#{target.port}")
        expect(python.exit_code).to eq(0), python.stderr
        status, issuer, response = python.stdout.lines.map(&:chomp)
        expect(status).to eq("HTTP/1.1 200 Connection Established")
        expect(issuer).to match(/\ALittleGhost sandbox CA \h+\z/)
        expect(response).to eq("HTTP/1.1 200 OK inspected body")
      end
      expect(File.exist?(bundle)).to be(false)
    end

    it "delivers every byte of a large response while the destination keeps the connection open" do
      directory = temporary_directory
      size = 20 << 20
      File.binwrite(File.join(directory, "big"), "z" * size)
      certificate, key = ca.issue(%w[localhost 127.0.0.1])
      File.write(File.join(directory, "cert.pem"), certificate.to_pem)
      File.write(File.join(directory, "key.pem"), key.private_to_pem)
      output, writer = IO.pipe
      python = Process.spawn("/usr/bin/python3", "-c", PYTHON_HTTPS, "cert.pem", "key.pem", chdir: directory,
                                                                                          out: writer, err: File::NULL)
      writer.close
      port = Integer(output.gets)
      sandbox = sandbox_for(inspect: [port])
      sandbox.open do
        3.times do
          fetched = curl(sandbox, "-o", "/dev/null", "-w", "%{size_download}", "--max-time", "20",
                         "https://localhost:#{port}/big")
          expect([fetched.exit_code, fetched.stdout]).to eq([0, size.to_s]), fetched.stderr
        end
      end
    ensure
      if python
        Process.kill(:TERM, python)
        Process.wait(python)
      end
      output&.close
    end

    it "gives each sandbox its own CA and removes the bundle with the gateway" do
      target = server("x")
      first = sandbox_for(inspect: [target.port])
      second = sandbox_for(inspect: [target.port])
      issuers = [first, second].map do |sandbox|
        sandbox.open
        path = sandbox.gateway.environment.fetch("SSL_CERT_FILE")
        [path, File.read(path)[/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n\z/]]
      end
      expect(issuers.map(&:last).uniq.size).to eq(2)
      first.close
      expect(File.exist?(issuers.first.first)).to be(false)
      expect(File.exist?(File.dirname(issuers.first.first))).to be(false)
    ensure
      first&.close
      second&.close
    end

    it "leaves a destination without inspection an end-to-end tunnel: the child sees the destination's certificate" do
      inspected = server("inspected")
      tunnelled = server("tunnelled")
      sandbox = sandbox_for(inspect: [inspected.port], allow: [tunnelled.port])
      sandbox.open do
        shown = curl(sandbox, "-v", "-k", "https://localhost:#{tunnelled.port}/")
        expect([shown.exit_code, shown.stdout]).to eq([0, "tunnelled"]), shown.stderr
        expect(shown.stderr).to match(/issuer: CN *= *Test upstream CA/)
        expect(shown.stderr).not_to include("LittleGhost sandbox CA")
        # The bundle does not vouch for the destination's own certificate: nothing re-signed it.
        refused = curl(sandbox, "https://localhost:#{tunnelled.port}/")
        expect(refused.exit_code).to eq(60)
        expect(sandbox.gateway.denials).to be_empty
      end
    end

    it "refuses a TLS ClientHello naming another host than the CONNECT target, recording a host_mismatch denial" do
      target = server("never shown")
      sandbox = sandbox_for(inspect: [target.port])
      sandbox.open do
        python = python_fetch(sandbox, "localhost:#{target.port}", server_name: "api.github.com")
        expect(python.exit_code).not_to eq(0)
        expect(python.stdout).to eq("HTTP/1.1 200 Connection Established\n")
        expect(python.stderr).to match(/UNRECOGNIZED_NAME/i)
        denial = sandbox.gateway.denials.last
        expect([denial.kind, denial.target, denial.reason]).to eq([:network, "localhost:#{target.port}", :host_mismatch])
        event = sandbox.denials.find { |d| d.kind == :network }
        expect(event&.reason).to eq(:host_mismatch)
      end
    end

    it "refuses an inspected destination whose certificate the gateway cannot verify, before the tunnel opens" do
      target = server("unverified")
      # No upstream_ca: the system's roots do not vouch for the test CA.
      sandbox = sandbox_for(inspect: [target.port], upstream_ca: nil)
      sandbox.open do
        refused = curl(sandbox, "-v", "https://localhost:#{target.port}/")
        expect(refused.exit_code).to eq(56)
        expect(refused.stderr).to include("CONNECT tunnel failed, response 502")
        expect(refused.stdout).to be_empty
      end
    end

    it "raises PolicyError at open naming an upstream_ca file that holds no certificate" do
      path = File.join(temporary_directory, "company-ca.pem")
      File.write(path, "this is not PEM\n")
      sandbox = sandbox_for(inspect: [443], upstream_ca: path)
      expect { sandbox.open }.to raise_error(LittleGhost::PolicyError, /upstream_ca #{Regexp.escape(path)} .*PEM/)
      expect(sandbox.gateway&.open?).to be_falsey
    ensure
      sandbox&.close
    end
  end
end
