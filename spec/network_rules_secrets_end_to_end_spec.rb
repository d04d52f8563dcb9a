# frozen_string_literal: true

require "spec_helper"
require "digest"
require "openssl"
require "securerandom"
require "socket"

# The gateway's rules and secrets end to end: real clients (curl, Python's urllib and http.client, Ruby's Net::HTTP, git over smart HTTP,
# raw sockets for the attacks) inside Bubblewrap and Landlock, through the built-in gateway, against loopback HTTP and HTTPS
# servers this spec starts (HTTPS with a CA of its own, given to the gateway as upstream_ca:), all declared through
# the public API.
#
# Invariants:
# 1. A request outside a destination's rules (methods:, paths:) never reaches it: refused 403 with a
#    :request_not_allowed denial naming its method and path, whatever the client's spelling (dot segments, encoded
#    dots or slashes, path parameters, method case), on every request of a keep-alive connection, in plain HTTP and
#    inside inspected TLS, and not by switching an allowed request to another HTTP (Upgrade: h2c) either. (A
#    WebSocket upgrade of an allowed request is let through: its messages are not requests the rules speak of.)
# 2. A secret's value never reaches the child or any destination but its own: the child holds a stand-in; the
#    gateway puts the value only into request heads bound for the secret's destinations; the stand-in bound
#    anywhere else (URL, header, body, chunk extension, uninspected tunnel) is refused with a :secret_exfiltration
#    denial and never delivered (a tunnel or a switched WebSocket is cut before the piece that completes it); the
#    value appears in no denial, event, message or inspect.
# 3. Every request leaves one egress event (method, path, status, bytes; inspected: true inside inspected TLS).
#
# (DNS answering differently on a second lookup is proven in the core, through its resolver seam:
# ext/littleghost_sandbox_core/tests/gateway_http.rs, a_name_rebinding_to_a_private_address_is_never_connected. SNI
# disagreeing with the CONNECT target is in network_inspection_spec.rb.)
RSpec.describe "Network rules and secrets, end to end through the built-in gateway" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
    skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
  end

  after do
    @sandbox&.close
    @servers&.each(&:close)
    Process.kill(:KILL, @git_server) && Process.wait(@git_server) if @git_server
  end

  # A CA of this spec, signing server certificates for localhost.
  class EndToEndCA
    def initialize
      @key = OpenSSL::PKey::EC.generate("prime256v1")
      @certificate = sign(OpenSSL::X509::Name.parse("/CN=End-to-end test CA"), @key, ca: true)
    end

    def pem = @certificate.to_pem

    # A certificate for localhost and 127.0.0.1 and its key.
    def issue
      key = OpenSSL::PKey::EC.generate("prime256v1")
      [sign(OpenSSL::X509::Name.parse("/CN=localhost"), key, ca: false), key]
    end

    def context
      context = OpenSSL::SSL::SSLContext.new
      context.cert, context.key = issue
      context
    end

    private

    def sign(subject, key, ca:)
      certificate = OpenSSL::X509::Certificate.new
      certificate.version = 2
      certificate.serial = OpenSSL::BN.rand(64)
      certificate.subject = subject
      certificate.issuer = ca ? subject : @certificate.subject
      certificate.public_key = key
      certificate.not_before = Time.now - 3600
      certificate.not_after = Time.now + 3600
      extensions = OpenSSL::X509::ExtensionFactory.new
      extensions.subject_certificate = certificate
      extensions.issuer_certificate = ca ? certificate : @certificate
      certificate.add_extension(extensions.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
      certificate.add_extension(extensions.create_extension("subjectAltName", "DNS:localhost,IP:127.0.0.1")) unless ca
      certificate.sign(ca ? key : @key, OpenSSL::Digest.new("SHA256"))
      certificate
    end
  end

  # A loopback HTTP/1.1 server (HTTPS when given a TLS context) serving keep-alive connections. It keeps every byte
  # it receives and the request line of each request, and answers "METHOD PATH auth=<sha256 of Authorization>
  # body=<length>": never a header's or a body's content, so a response cannot carry a secret to the child. With
  # `switch:` it answers 101 to any Upgrade and then goes on reading HTTP/1.1 requests on that connection (as a
  # server that speaks h2c reads HTTP/2 requests after the switch).
  class RecordingServer
    attr_reader :port

    def initialize(tls: nil, switch: false, raw: false)
      @tcp = TCPServer.new("127.0.0.1", 0)
      @port = @tcp.addr[1]
      @switch = switch
      @raw = raw
      @lock = Mutex.new
      @bytes = +"".b
      @requests = []
      listener = tls ? OpenSSL::SSL::SSLServer.new(@tcp, tls).tap { |s| s.start_immediately = false } : @tcp
      @thread = Thread.new do
        loop { Thread.new(listener.accept) { |client| serve(client) } }
      rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
        retry unless @tcp.closed?
      end
    end

    def received = @lock.synchronize { @bytes.dup }
    def requests = @lock.synchronize { @requests.dup }

    def close
      @thread.kill
      @tcp.close
    end

    private

    def keep(bytes) = @lock.synchronize { @bytes << bytes.b }

    def serve(client)
      client.accept if client.is_a?(OpenSSL::SSL::SSLSocket)
      keep(client.readpartial(65_536)) while @raw

      loop do
        head = +""
        while (line = client.gets)
          keep(line)
          head << line
          break if line == "\r\n"
        end
        break unless head.end_with?("\r\n\r\n")

        request_line, *fields = head.split("\r\n")
        headers = fields.to_h { |field| field.split(":", 2).then { |k, v| [k.downcase, v.to_s.strip] } }
        body = read_body(client, headers)
        @lock.synchronize { @requests << request_line }
        if @switch && headers["upgrade"]
          client.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: #{headers["upgrade"]}\r\nConnection: Upgrade\r\n\r\n")
          next
        end
        auth = headers["authorization"]
        answer = "#{request_line.split(" ")[0, 2].join(" ")} auth=#{auth ? Digest::SHA256.hexdigest(auth) : "none"} " \
                 "body=#{body.bytesize}"
        client.write("HTTP/1.1 200 OK\r\nContent-Length: #{answer.bytesize}\r\n\r\n#{answer}")
      end
    rescue IOError, SystemCallError, OpenSSL::SSL::SSLError, EOFError
      nil
    ensure
      client.close
    end

    def read_body(client, headers)
      if (length = headers["content-length"])
        client.read(length.to_i).to_s.tap { |body| keep(body) }
      elsif headers["transfer-encoding"].to_s.casecmp?("chunked")
        body = +""
        loop do
          size_line = client.gets.to_s
          keep(size_line)
          size = size_line.to_i(16)
          if size.zero?
            while (line = client.gets) && line != "\r\n"; keep(line); end
            return body
          end
          body << client.read(size + 2).tap { |chunk| keep(chunk) }[0, size]
        end
      else
        ""
      end
    end
  end

  # A smart-HTTP git server over HTTPS: git http-backend behind Python's CGI handler (no web server package needed).
  END_TO_END_GIT_SERVER = <<~'PY'
    # A smart-HTTP git server over HTTPS: git http-backend behind Python's CGI handler. Writes its port to argv[1];
    # appends "METHOD PATH sha256(Authorization)" per request to argv[2]. Usage: server.py PORTFILE LOG ROOT CERT KEY
    import hashlib, http.server, os, ssl, sys, warnings
    warnings.simplefilter("ignore")
    port_file, log, root, cert, key = sys.argv[1:6]
    os.chdir(root)
    os.environ.update(GIT_PROJECT_ROOT=os.path.join(root, "repos"), GIT_HTTP_EXPORT_ALL="1")

    class Handler(http.server.CGIHTTPRequestHandler):
        cgi_directories = ["/cgi-bin"]
        have_fork = False  # Popen, not fork+setuid(nobody)
        def record(self):
            auth = self.headers.get("Authorization")
            with open(log, "a") as f:
                f.write("%s %s %s\n" % (self.command, self.path, hashlib.sha256(auth.encode()).hexdigest() if auth else "none"))
        def do_GET(self):
            self.record(); super().do_GET()
        def do_POST(self):
            self.record(); super().do_POST()
        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        # A response framed by the close ends with TLS close_notify, as git (GnuTLS) demands.
        def shutdown_request(self, request):
            try:
                request.settimeout(5)
                request.unwrap()
            except Exception:
                pass
            super().shutdown_request(request)

    httpd = Server(("127.0.0.1", 0), Handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(httpd.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    httpd.serve_forever()
  PY

  let(:workspace) { open_workspace }
  let(:through_proxy) { {"NO_PROXY" => "", "no_proxy" => ""} }
  let(:ca) { EndToEndCA.new }
  let(:ca_path) { File.join(temporary_directory, "upstream-ca.pem").tap { |path| File.write(path, ca.pem) } }
  let(:value) { "ghp_#{SecureRandom.hex(20)}" }
  let(:bearer) { Digest::SHA256.hexdigest("Bearer #{value}") }

  def server(**options)
    (@servers ||= []) << RecordingServer.new(**options)
    @servers.last
  end

  def https_server(**options) = server(tls: ca.context, **options)

  def open_sandbox(allow:, secrets: nil, files: nil)
    network = {allow: allow, allow_private_destinations: true}
    # upstream_ca: verifies inspected destinations only (without one it is refused at build).
    network[:upstream_ca] = ca_path if allow.any? { |entry| entry.is_a?(Hash) && entry[:inspect] }
    network[:secrets] = secrets if secrets
    policy = {network: network}
    policy[:files] = files if files
    @sandbox = backend.new(workspace: workspace, policy: policy)
    @sandbox.open
    @sandbox
  end

  def run(argv) = @sandbox.execute_program(argv, timeout: 60, environment: through_proxy)

  # curl's output (errors first) with the status appended: "body 200".
  def curl(*args)
    result = run(["/bin/sh", "-c", 'exec /usr/bin/curl -sS --max-time 30 -w " %{http_code}" "$@"', "curl", *args])
    result.stderr + result.stdout
  end

  def python(script)
    result = run(["/usr/bin/python3", "-c", script])
    [result.stdout, result.stderr]
  end

  # Python's urllib (proxied by the environment the sandbox sets): "body status".
  def urllib(url)
    python(<<~PY).first
      import urllib.request, urllib.error
      try:
          with urllib.request.urlopen(#{url.dump}) as answer:
              print(answer.read().decode(), answer.status, end="")
      except urllib.error.HTTPError as refused:
          print(refused.read().decode().strip(), refused.code, end="")
    PY
  end

  # Ruby's Net::HTTP through the gateway at 127.0.0.1:3128 (Net::HTTP never proxies loopback from the environment,
  # so the proxy is named): "body status".
  def net_http(method, url, headers: {})
    script = <<~RUBY
      require "net/http"
      uri = URI(#{url.dump})
      http = Net::HTTP.new(uri.host, uri.port, "127.0.0.1", 3128)
      http.use_ssl = uri.scheme == "https"
      request = Net::HTTPGenericRequest.new(#{method.dump}, false, true, uri.request_uri, #{headers.inspect})
      answer = http.start { |h| h.request(request) }
      print answer.body.to_s.strip, " ", answer.code
    RUBY
    result = run([SANDBOXED_RUBY, "-e", script])
    expect(result.stderr).to eq(""), result.stderr
    result.stdout
  end

  # Raw bytes to the gateway (a proxy client of our own): each part is sent in turn ("@STANDIN@" is replaced by the
  # child's LITTLEGHOST_SECRET_TOKEN); with `tls:` a CONNECT to it comes first, then TLS (verified with the
  # bundle the gateway exports). Prints what came back until the connection ended.
  def raw(*parts, tls: nil, pause: 0.3)
    script = <<~PY
      import os, socket, ssl, sys, time
      stand_in = os.environ.get("LITTLEGHOST_SECRET_TOKEN", "").encode()
      sock = socket.create_connection(("127.0.0.1", 3128), timeout=15)
      tls = #{tls.to_s.dump}
      if tls:
          sock.sendall(("CONNECT %s HTTP/1.1\\r\\nHost: %s\\r\\n\\r\\n" % (tls, tls)).encode())
          head = b""
          while not head.endswith(b"\\r\\n\\r\\n"):
              head += sock.recv(1)
          sock = ssl.create_default_context().wrap_socket(sock, server_hostname=tls.split(":")[0])
      out = b""
      try:
          for part in sys.argv[1:]:
              sock.sendall(bytes.fromhex(part).replace(b"@STANDIN@", stand_in))
              time.sleep(#{pause})
          while True:
              chunk = sock.recv(65536)
              if not chunk:
                  break
              out += chunk
      except (socket.timeout, ConnectionError, ssl.SSLError):
          pass
      sys.stdout.write(out.decode("latin-1"))
    PY
    run(["/usr/bin/python3", "-c", script, *parts.map { |part| part.unpack1("H*") }]).stdout
  end

  # The status of every response in `text` (a body need not end with a line end).
  def statuses(text) = text.scan(%r{HTTP/1\.1 (\d{3}) }).flatten.map(&:to_i)

  def stand_in = @sandbox.gateway.environment.fetch("LITTLEGHOST_SECRET_TOKEN")

  def denials_of(reason) = @sandbox.denials.select { |d| d.reason == reason }

  def events(count)
    eventually(10) { @sandbox.network_log.size >= count }
    @sandbox.network_log
  end

  def rules(port, inspect: false)
    {destination: "localhost:#{port}", inspect: inspect, methods: %w[GET], paths: ["/allowed/"]}
  end

  each_allowlist_backend do |name|
    context "with HTTP rules on a plain-HTTP destination" do
      it "lets an allowed request through and refuses every request outside the rules before it reaches the server" do
        target = server
        open_sandbox(allow: [rules(target.port)])
        base = "http://localhost:#{target.port}"

        expect(curl("#{base}/allowed/curl?x=1")).to eq("GET /allowed/curl?x=1 auth=none body=0 200")
        expect(urllib("#{base}/allowed/urllib")).to eq("GET /allowed/urllib auth=none body=0 200")
        expect(net_http("GET", "#{base}/allowed/ruby")).to eq("GET /allowed/ruby auth=none body=0 200")

        expect(curl("-X", "POST", "-d", "x=1", "#{base}/allowed/curl")).to end_with(" 403")
        expect(net_http("DELETE", "#{base}/allowed/ruby")).to end_with(" 403")
        expect(curl("#{base}/other")).to end_with(" 403")
        expect(curl("--path-as-is", "#{base}/allowed/../other")).to end_with(" 403")
        expect(urllib("#{base}/allowed/%2e%2e/other")).to end_with(" 403")
        expect(net_http("GET", "#{base}/allowed/..%2Fother")).to end_with(" 403")
        expect(curl("--path-as-is", "#{base}/allowed/.%2E/other")).to end_with(" 403")
        expect(curl("#{base}/allowed%2Fx")).to end_with(" 403")
        # A tunnel would hide its requests from the rules: refused unless the destination is inspected.
        expect(curl("--proxytunnel", "#{base}/allowed/tunnel")).to include("CONNECT tunnel failed, response 403")
        expect(denials_of(:inspection_required).map(&:target)).to eq(["localhost:#{target.port}"])

        expect(target.requests).to eq(["GET /allowed/curl?x=1 HTTP/1.1", "GET /allowed/urllib HTTP/1.1",
                                       "GET /allowed/ruby HTTP/1.1"])
        refused = denials_of(:request_not_allowed)
        expect(refused.map { |d| [d.kind, d.target, d.http_method, d.path] }.first(2))
          .to eq([[:network, "localhost:#{target.port}", "POST", "/allowed/curl"],
                  [:network, "localhost:#{target.port}", "DELETE", "/allowed/ruby"]])
        expect(refused.size).to eq(8)

        # One event per request: method, path, status, bytes; a refused one received nothing from the destination.
        log = events(12)
        expect(log.map { |e| [e.http_method, e.path, e.status, e.decision, e.inspected] }.first(4))
          .to eq([["GET", "/allowed/curl?x=1", 200, :allowed, false], ["GET", "/allowed/urllib", 200, :allowed, false],
                  ["GET", "/allowed/ruby", 200, :allowed, false], ["POST", "/allowed/curl", 403, :denied, false]])
        expect(log.first.bytes_received).to be > "GET /allowed/curl?x=1 auth=none body=0".bytesize
        expect(log.first.bytes_sent).to eq(0) # no body
        expect(log[3].bytes_received).to eq(0)
        expect(log.size).to eq(12)
      end

      it "checks every request of a keep-alive connection and every spelling of a method or path" do
        target = server
        open_sandbox(allow: [rules(target.port)])
        host = "localhost:#{target.port}"
        # Python's http.client on one connection: the first request passes, the second (outside) is refused.
        out, err = python(<<~PY)
          import http.client
          c = http.client.HTTPConnection("127.0.0.1", 3128, timeout=20)
          for path in ["/allowed/first", "/other/second"]:
              c.request("GET", "http://#{host}" + path)
              r = c.getresponse()
              r.read()
              print(r.status, end=" ")
        PY
        expect(out).to eq("200 403 "), err

        attempts = {
          "lower-case method" => "get http://#{host}/allowed/x HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "mixed-case method" => "gEt http://#{host}/allowed/x HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "OPTIONS" => "OPTIONS http://#{host}/allowed/x HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "TRACE" => "TRACE http://#{host}/allowed/x HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "HTTP/1.0" => "GET http://#{host}/other HTTP/1.0\r\n\r\n",
          "path parameter dot segment" => "GET http://#{host}/allowed/..;/other HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "path parameter dot segment 2" => "GET http://#{host}/allowed/.;x/..;y/other HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "backslash" => "GET http://#{host}/allowed/..\\other HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "userinfo" => "GET http://user@#{host}/allowed/x HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n",
          "folded header" => "GET http://#{host}/allowed/x HTTP/1.1\r\nX-A: 1\r\n X-B: 2\r\nConnection: close\r\n\r\n",
          "very long header" => "GET http://#{host}/allowed/x HTTP/1.1\r\nX-A: #{"a" * 40_000}\r\n\r\n"
        }
        answers = attempts.transform_values { |request| statuses(raw(request)) }
        expect(answers).to eq("lower-case method" => [403], "mixed-case method" => [403], "OPTIONS" => [403],
                              "TRACE" => [403], "HTTP/1.0" => [403], "path parameter dot segment" => [403],
                              "path parameter dot segment 2" => [403], "backslash" => [403], "userinfo" => [400],
                              "folded header" => [400], "very long header" => [431])

        # Pipelined in one write: the allowed request passes, the next one (outside) is refused.
        pipelined = raw("GET http://#{host}/allowed/1 HTTP/1.1\r\n\r\nPOST http://#{host}/allowed/2 HTTP/1.1\r\n" \
                        "Content-Length: 0\r\n\r\nGET http://#{host}/allowed/3 HTTP/1.1\r\nConnection: close\r\n\r\n")
        expect(statuses(pipelined)).to eq([200, 403, 200])

        expect(target.requests).to eq(["GET /allowed/first HTTP/1.1", "GET /allowed/1 HTTP/1.1",
                                       "GET /allowed/3 HTTP/1.1"])
      end

      it "does not let an allowed request switch to another HTTP (h2c) to send requests outside the rules" do
        target = server(switch: true)
        open_sandbox(allow: [rules(target.port)])
        host = "localhost:#{target.port}"
        %w[h2c H2C].each do |protocol|
          answer = raw("GET http://#{host}/allowed/switch HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\n" \
                       "Upgrade: #{protocol}\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n",
                       "GET /other/after-switch HTTP/1.1\r\nHost: #{host}\r\nConnection: close\r\n\r\n")
          expect(answer).not_to include("/other/after-switch")
          # The upgrade is refused (the connection stays HTTP/1.1 to the gateway), so what follows is read as the next
          # proxy request: a bad one (origin-form).
          expect(statuses(answer)).to eq([403, 400])
        end
        expect(target.requests).to eq([])
        expect(denials_of(:request_not_allowed).map { |d| [d.http_method, d.path] })
          .to eq([%w[GET /allowed/switch]] * 2)
      end
    end

    context "with HTTP rules on an inspected HTTPS destination" do
      it "applies the same rules inside TLS and refuses a Host naming another host than the CONNECT target" do
        target = https_server
        open_sandbox(allow: [rules(target.port, inspect: true)])
        base = "https://localhost:#{target.port}"

        expect(curl("#{base}/allowed/curl")).to eq("GET /allowed/curl auth=none body=0 200")
        expect(urllib("#{base}/allowed/urllib")).to eq("GET /allowed/urllib auth=none body=0 200")
        expect(net_http("GET", "#{base}/allowed/ruby")).to eq("GET /allowed/ruby auth=none body=0 200")

        expect(curl("-X", "POST", "-d", "x=1", "#{base}/allowed/curl")).to end_with(" 403")
        expect(net_http("PUT", "#{base}/allowed/ruby")).to end_with(" 403")
        expect(curl("--path-as-is", "#{base}/allowed/../other")).to end_with(" 403")
        expect(urllib("#{base}/allowed/%2E%2E/other")).to end_with(" 403")
        expect(statuses(raw("GET /allowed/..;/other HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
                            tls: "localhost:#{target.port}"))).to eq([403])

        # Keep-alive inside TLS: each request is checked on its own.
        kept = raw("GET /allowed/1 HTTP/1.1\r\nHost: localhost\r\n\r\n",
                   "GET /other/2 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", tls: "localhost:#{target.port}")
        expect(statuses(kept)).to eq([200, 403])

        expect(curl("-H", "Host: other.test", "#{base}/allowed/host")).to end_with(" 403")
        expect(denials_of(:host_mismatch).map { |d| [d.target, d.http_method, d.path] })
          .to eq([["localhost:#{target.port}", "GET", "/allowed/host"]])

        # A CONNECT to the inspected destination carrying plain HTTP instead of TLS reaches nothing.
        plain = raw("CONNECT localhost:#{target.port} HTTP/1.1\r\n\r\nGET /other/plain HTTP/1.1\r\nHost: localhost\r\n\r\n")
        expect(plain).not_to include("/other/plain")

        expect(target.requests).to eq(["GET /allowed/curl HTTP/1.1", "GET /allowed/urllib HTTP/1.1",
                                       "GET /allowed/ruby HTTP/1.1", "GET /allowed/1 HTTP/1.1"])
        refused = denials_of(:request_not_allowed)
        expect(refused.map { |d| [d.http_method, d.path] }.first(2)).to eq([%w[POST /allowed/curl], %w[PUT /allowed/ruby]])

        # One event per request inside TLS, marked inspected, beside one per CONNECT.
        log = events(10)
        requests = log.reject { |e| e.http_method == "CONNECT" }
        expect(requests.map { |e| [e.http_method, e.path, e.status, e.inspected] }.first(4))
          .to eq([["GET", "/allowed/curl", 200, true], ["GET", "/allowed/urllib", 200, true],
                  ["GET", "/allowed/ruby", 200, true], ["POST", "/allowed/curl", 403, true]])
        expect(requests.first.bytes_received).to be > 0
        expect(log.select { |e| e.http_method == "CONNECT" }).to all(have_attributes(inspected: true))
      end
    end

    context "with git over HTTPS" do
      def git_server(root)
        host_git = ENV.fetch("PATH").split(":").map { |dir| File.join(dir, "git") }.find { |path| File.executable?(path) }
        skip "git is not installed" unless host_git
        exec_path = `#{host_git} --exec-path`.strip
        skip "git http-backend is not installed" unless File.executable?(File.join(exec_path, "git-http-backend"))
        FileUtils.mkdir_p(["#{root}/cgi-bin", "#{root}/repos"])
        File.write("#{root}/cgi-bin/git", "#!/bin/sh\nexec #{exec_path}/git-http-backend\n")
        File.chmod(0o755, "#{root}/cgi-bin/git")
        git = [host_git, "-c", "safe.directory=*", "-c", "user.name=t", "-c", "user.email=t@example.test"]
        system(*git, "init", "-q", "--bare", "-b", "main", "#{root}/repos/repo.git", exception: true)
        system(*git, "init", "-q", "-b", "main", "#{root}/work", exception: true)
        system(*git, "-C", "#{root}/work", "commit", "-q", "--allow-empty", "-m", "served through the gateway",
               exception: true)
        system(*git, "-C", "#{root}/work", "push", "-q", "#{root}/repos/repo.git", "main", exception: true)
        certificate, key = ca.issue
        File.write("#{root}/cert.pem", certificate.to_pem)
        File.write("#{root}/key.pem", key.private_to_pem)
        File.write("#{root}/server.py", END_TO_END_GIT_SERVER)
        @git_server = Process.spawn("/usr/bin/python3", "#{root}/server.py", "#{root}/port", "#{root}/log", root,
                                    "#{root}/cert.pem", "#{root}/key.pem")
        eventually(20) { File.exist?("#{root}/port") }
        [host_git, Integer(File.read("#{root}/port"))]
      end

      it "clones through an inspected destination with the secret swapped in, and refuses a repository outside the rules" do
        root = File.join(temporary_directory, "git")
        host_git, port = git_server(root)
        open_sandbox(allow: [{destination: "localhost:#{port}", inspect: true, methods: %w[GET POST],
                              paths: ["/cgi-bin/git/repo.git/"]}],
                     secrets: {token: {value: value, destinations: ["localhost:#{port}"]}},
                     files: {root: :read_write})
        git = "#{host_git} -c 'http.extraHeader=Authorization: Bearer '\"$LITTLEGHOST_SECRET_TOKEN\""
        clone = run(["/bin/sh", "-c", "#{git} clone -q https://localhost:#{port}/cgi-bin/git/repo.git clone && " \
                                      "#{host_git} -C clone log --format=%s"])
        expect([clone.exit_code, clone.stdout]).to eq([0, "served through the gateway\n"]), clone.stderr
        other = run(["/bin/sh", "-c", "#{git} ls-remote https://localhost:#{port}/cgi-bin/git/other.git"])
        expect(other.exit_code).not_to eq(0)
        expect(other.stderr).to include("403")

        seen = File.readlines("#{root}/log", chomp: true)
        expect(seen).to eq(["GET /cgi-bin/git/repo.git/info/refs?service=git-upload-pack #{bearer}",
                            "POST /cgi-bin/git/repo.git/git-upload-pack #{bearer}"])
        expect(denials_of(:request_not_allowed).map { |d| [d.http_method, d.path] })
          .to eq([%w[GET /cgi-bin/git/other.git/info/refs?service=git-upload-pack]])
        expect(@sandbox.network_log.reject { |e| e.http_method == "CONNECT" }.map { |e| [e.http_method, e.status] })
          .to eq([["GET", 200], ["POST", 200], ["GET", 403]])
      end
    end

    context "with a secret" do
      def open_with_secret
        @home = server
        @home_tls = https_server
        @other = server
        @tunnel = server(raw: true)
        @switching = server(switch: true)
        open_sandbox(
          allow: ["localhost:#{@home.port}", {destination: "localhost:#{@home_tls.port}", inspect: true},
                  "localhost:#{@other.port}", "localhost:#{@tunnel.port}", "localhost:#{@switching.port}"],
          secrets: {token: {value: value, destinations: ["localhost:#{@home.port}", "localhost:#{@home_tls.port}"]}}
        )
      end

      it "sends the value to the secret's destinations only, while the child holds a stand-in" do
        open_with_secret
        expect(stand_in).to match(/\Algsecret_\h{32}\z/)
        env = run(["/usr/bin/env"]).stdout
        expect(env).to include("LITTLEGHOST_SECRET_TOKEN=#{stand_in}")
        expect(env).not_to include(value)

        auth = 'Authorization: Bearer $LITTLEGHOST_SECRET_TOKEN'
        curl_with_secret = lambda do |url|
          run(["/bin/sh", "-c", "exec /usr/bin/curl -sS --max-time 30 -w ' %{http_code}' -H \"#{auth}\" #{url}"])
        end
        [
          "http://localhost:#{@home.port}/curl", "https://localhost:#{@home_tls.port}/curl"
        ].each do |url|
          answer = curl_with_secret.call(url)
          expect(answer.stdout).to eq("GET /curl auth=#{bearer} body=0 200"), answer.stderr
        end
        # urllib and Net::HTTP read the stand-in from their own environment.
        py = <<~PY
          import os, urllib.request
          request = urllib.request.Request("https://localhost:#{@home_tls.port}/py",
                                           headers={"Authorization": "Bearer " + os.environ["LITTLEGHOST_SECRET_TOKEN"]})
          print(urllib.request.urlopen(request).read().decode(), end="")
        PY
        expect(python(py).first).to eq("GET /py auth=#{bearer} body=0")
        ruby = net_http("GET", "http://localhost:#{@home.port}/rb",
                        headers: {"Authorization" => "Bearer #{stand_in}"})
        expect(ruby).to eq("GET /rb auth=#{bearer} body=0 200")

        expect(@home.received).to include("Bearer #{value}")
        expect(@home_tls.received).to include("Bearer #{value}")
        expect(@home.received + @home_tls.received).not_to include(stand_in)
        expect(@sandbox.denials).to eq([])
      end

      # A secret's value never changes a request's shape or carries it outside the rules it passed: a value that
      # cannot stand in a request line as is (a space) is refused there (:secret_placement), and the rules are checked
      # again on the request as forwarded (a value "v/../../admin" under /allowed/ would leave the prefix).
      it "never lets a value change the request line or carry a request outside its destination's rules" do
        target = server
        other = "localhost:#{target.port}"
        open_sandbox(allow: [rules(target.port)],
                     secrets: {token: {value: "sec ret", destinations: [other]},
                               path: {value: "v/../../admin", destinations: [other]}})
        path_stand_in = @sandbox.gateway.environment.fetch("LITTLEGHOST_SECRET_PATH")
        spaced = raw("GET http://#{other}/allowed/x?t=@STANDIN@ HTTP/1.1\r\nConnection: close\r\n\r\n")
        climbing = raw("GET http://#{other}/allowed/#{path_stand_in} HTTP/1.1\r\nConnection: close\r\n\r\n")
        in_header = raw("GET http://#{other}/allowed/h HTTP/1.1\r\nX-Token: @STANDIN@\r\nConnection: close\r\n\r\n")
        expect([statuses(spaced), statuses(climbing), statuses(in_header)]).to eq([[403], [403], [200]])
        expect(target.requests).to eq(["GET /allowed/h HTTP/1.1"])
        expect(target.received).to include("X-Token: sec ret\r\n")
        expect(@sandbox.denials.map { |d| [d.reason, d.path] })
          .to eq([[:secret_placement, "/allowed/x?t={secret:token}"], [:request_not_allowed, "/allowed/{secret:path}"]])
      end

      it "refuses the stand-in bound anywhere else and never lets it or the value out" do
        open_with_secret
        other = "localhost:#{@other.port}"
        attempts = {
          "header to another host" => "GET http://#{other}/h HTTP/1.1\r\nAuthorization: Bearer @STANDIN@\r\nConnection: close\r\n\r\n",
          "URL to another host" => "GET http://#{other}/u?token=@STANDIN@ HTTP/1.1\r\nConnection: close\r\n\r\n",
          "header name" => "GET http://localhost:#{@home.port}/n HTTP/1.1\r\nX-@STANDIN@: 1\r\nConnection: close\r\n\r\n",
          "TRACE to its own destination" =>
            "TRACE http://localhost:#{@home.port}/t HTTP/1.1\r\nAuthorization: Bearer @STANDIN@\r\nConnection: close\r\n\r\n"
        }
        answers = attempts.transform_values { |request| statuses(raw(request)) }
        expect(answers).to eq(attempts.transform_values { [403] })

        body = raw("POST http://#{other}/b HTTP/1.1\r\nContent-Length: 58\r\n\r\n", "token=@STANDIN@&pad=xxxxxx")
        expect(statuses(body)).to eq([403])
        chunked = raw("POST http://#{other}/c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                      "1;ext=@STANDIN@\r\na\r\n0\r\n\r\n")
        expect(statuses(chunked)).to eq([403])
        userinfo = raw("GET http://@STANDIN@@#{other}/ HTTP/1.1\r\n\r\n")
        expect(statuses(userinfo)).to eq([400])
        # Inside TLS the gateway reads, a header to another host than the secret's.
        curl_out = run(["/bin/sh", "-c",
                        "exec /usr/bin/curl -sS -w ' %{http_code}' -H \"X-Token: $LITTLEGHOST_SECRET_TOKEN\" " \
                        "http://#{other}/curl"]).stdout
        expect(curl_out).to end_with(" 403")

        # An uninspected tunnel: harmless bytes pass, the stand-in cuts it before it is passed on.
        tunnel = raw("CONNECT localhost:#{@tunnel.port} HTTP/1.1\r\n\r\n", "hello ", "token=@STANDIN@")
        expect(statuses(tunnel)).to eq([200])
        eventually(10) { @tunnel.received.include?("hello ") }
        expect(@tunnel.received).not_to include("lgsecret_")
        # Even toward the secret's own destination: in a tunnel the gateway could not swap it, so it is refused.
        home = raw("CONNECT localhost:#{@home.port} HTTP/1.1\r\n\r\n",
                   "GET /tunnelled HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer @STANDIN@\r\n\r\n")
        expect(statuses(home)).to eq([200])
        expect(@home.requests).to eq([])
        # A WebSocket upgrade is a tunnel once switched: the stand-in cuts it too.
        switched = raw("GET http://localhost:#{@switching.port}/ws HTTP/1.1\r\nConnection: Upgrade\r\n" \
                       "Upgrade: websocket\r\n\r\n", "frame @STANDIN@\r\n\r\n")
        expect(statuses(switched)).to eq([101])
        expect(@switching.requests).to eq(["GET /ws HTTP/1.1"])

        [@other, @tunnel, @switching].each do |destination|
          expect(destination.received).not_to include(stand_in)
          expect(destination.received).not_to include(value)
        end
        expect(@other.requests.grep(/u\?token|\/h |\/curl/)).to eq([])
        expect(@home.received).not_to include(value) # the refused TRACE and header name never left

        exfiltrations = denials_of(:secret_exfiltration)
        expect(exfiltrations.size).to be >= 7
        expect(exfiltrations.map(&:target))
          .to include("localhost:#{@other.port}", "localhost:#{@tunnel.port}", "localhost:#{@home.port}",
                      "localhost:#{@switching.port}")
        shown = [@sandbox.denials, @sandbox.network_log].flatten.flat_map { |x| [x.inspect, x.to_h.to_s, x.to_s] } +
                [@sandbox.inspect, @sandbox.gateway.inspect, @sandbox.policy.inspect, @sandbox.effective_policy.inspect]
        shown.each do |text|
          expect(text).not_to include(value)
          expect(text).not_to include(stand_in)
        end
        exfiltrations.each { |denial| expect(denial.message).not_to include(value) }
        expect(@sandbox.network_log.map(&:path).compact).to include("/u?token={secret:token}")
      end
    end
  end
end
