# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# Invariant: whatever bytes the child sends, the destination parses exactly the requests the gateway decided on,
# each framed as the gateway read it, and a secret's real value leaves only inside allowed requests to its
# destinations. The attack: a request whose `Connection` names `Content-Length` (a hop-by-hop header, were it
# dropped) carries a body that is itself a request; the destination would read that body as a second request, and
# the child's next request (carrying the secret's stand-in, swapped for the real value) as part of it. Two shapes,
# each sent with Python raw sockets from inside a Bubblewrap sandbox, plain HTTP and inspected HTTPS, against a
# loopback server this spec starts, as root and as uid 65534 (the whole host side runs as that user):
# - echo: the body is `POST /echo` whose own body swallows the next request; the echo would return the real value.
# - forbidden method: the body is the prefix `DELETE /x HTTP/1.1\r\nX-Ignore: `; under rules allowing only
#   `GET /ok/` the destination would run a DELETE carrying the real value.
# The gateway refuses such a request with 400 and a :malformed_request denial; nothing of it reaches the destination.
RSpec.describe "Request smuggling through the Connection header" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  SMUGGLING_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    require "openssl"
    require "securerandom"
    require "socket"
    require "tmpdir"

    shape, inspect = ARGV.fetch(0), ARGV.fetch(1) == "inspect"
    value = "sk_#{SecureRandom.hex(8)}"
    dir = Dir.mktmpdir

    key = OpenSSL::PKey::EC.generate("prime256v1")
    sign = lambda do |subject, public_key, ca|
      cert = OpenSSL::X509::Certificate.new
      cert.version = 2
      cert.serial = OpenSSL::BN.rand(64)
      cert.subject = OpenSSL::X509::Name.parse(subject)
      cert.issuer = OpenSSL::X509::Name.parse("/CN=Smuggling spec CA")
      cert.public_key = public_key
      cert.not_before = Time.now - 3600
      cert.not_after = Time.now + 3600
      ext = OpenSSL::X509::ExtensionFactory.new
      ext.subject_certificate = cert
      ext.issuer_certificate = cert
      cert.add_extension(ext.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
      cert.add_extension(ext.create_extension("subjectAltName", "DNS:localhost,IP:127.0.0.1")) unless ca
      cert.sign(key, OpenSSL::Digest.new("SHA256"))
      cert
    end
    ca = sign.call("/CN=Smuggling spec CA", key, true)
    leaf_key = OpenSSL::PKey::EC.generate("prime256v1")
    leaf = sign.call("/CN=localhost", leaf_key, false)
    File.write(File.join(dir, "ca.pem"), ca.to_pem)

    # The destination: keep-alive HTTP/1.1; records each request line and the whole of what it received; `/echo`
    # answers with its body, anything else with "ok".
    lines = Queue.new
    received = +"".b
    lock = Mutex.new
    tcp = TCPServer.new("127.0.0.1", 0)
    port = tcp.addr[1]
    listener = if inspect
                 context = OpenSSL::SSL::SSLContext.new
                 context.cert, context.key = leaf, leaf_key
                 OpenSSL::SSL::SSLServer.new(tcp, context).tap { |s| s.start_immediately = true }
               else
                 tcp
               end
    Thread.new do
      loop do
        Thread.new(listener.accept) do |client|
          loop do
            head = +""
            while (line = client.gets)
              head << line
              break if line == "\r\n"
            end
            lock.synchronize { received << head.b }
            break unless head.end_with?("\r\n\r\n")

            request_line, *fields = head.split("\r\n")
            lines << request_line
            length = fields.find { |f| f =~ /\Acontent-length:/i }.to_s.split(":", 2)[1].to_i
            body = length.positive? ? client.read(length).to_s : ""
            lock.synchronize { received << body.b }
            answer = request_line.include?("/echo") ? body : "ok"
            client.write("HTTP/1.1 200 OK\r\nContent-Length: #{answer.bytesize}\r\n\r\n#{answer}")
          end
        rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
          nil
        ensure
          client.close
        end
      end
    rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
      retry unless tcp.closed?
    end

    workspace = LittleGhost::Workspace.new(root: File.join(dir, "root").tap { |r| Dir.mkdir(r) })
    network = {allow: [{destination: "localhost:#{port}", inspect: inspect, methods: %w[GET], paths: ["/ok/"]}],
               allow_private_destinations: true,
               secrets: {tok: {value: value, destinations: ["localhost:#{port}"]}}}
    # upstream_ca: verifies inspected destinations only (refused at build without one).
    network[:upstream_ca] = File.join(dir, "ca.pem") if inspect
    sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {network: network}).open

    client = <<~PY
      import os, socket, ssl, sys
      shape, inspect, port = sys.argv[1], sys.argv[2] == "inspect", sys.argv[3]
      stand_in = os.environ["LITTLEGHOST_SECRET_TOK"]
      base = "" if inspect else "http://localhost:%s" % port
      def connect():
          sock = socket.create_connection(("127.0.0.1", 3128), timeout=10)
          if inspect:
              sock.sendall(("CONNECT localhost:%s HTTP/1.1\\r\\nHost: localhost:%s\\r\\n\\r\\n" % (port, port)).encode())
              head = b""
              while not head.endswith(b"\\r\\n\\r\\n"):
                  head += sock.recv(1)
              sock = ssl.create_default_context().wrap_socket(sock, server_hostname="localhost")
          return sock
      def exchange(*parts):
          sock, out = connect(), b""
          try:
              for part in parts:
                  sock.sendall(part.encode())
                  import time; time.sleep(0.3)
              while True:
                  chunk = sock.recv(65536)
                  if not chunk:
                      break
                  out += chunk
          except (socket.timeout, ConnectionError, ssl.SSLError, OSError):
              pass
          return out.decode("latin-1")
      if shape == "echo":
          smuggled = "POST /echo HTTP/1.1\\r\\nHost: localhost:%s\\r\\nContent-Length: 100\\r\\n\\r\\n" % port
      else:
          smuggled = "DELETE /x HTTP/1.1\\r\\nX-Ignore: "
      first = ("GET %s/ok/a HTTP/1.1\\r\\nHost: localhost:%s\\r\\nConnection: keep-alive, Content-Length\\r\\n"
               "Content-Length: %d\\r\\n\\r\\n%s" % (base, port, len(smuggled), smuggled))
      follow = "GET %s/ok/b HTTP/1.1\\r\\nHost: localhost:%s\\r\\nAuthorization: Bearer %s\\r\\n\\r\\n" % (base, port, stand_in)
      attack = exchange(first, follow)
      # The same secret in an allowed request on a connection of its own: it reaches the destination.
      allowed = exchange("GET %s/ok/c HTTP/1.1\\r\\nHost: localhost:%s\\r\\nAuthorization: Bearer %s\\r\\n"
                         "Connection: close\\r\\n\\r\\n" % (base, port, stand_in))
      sys.stdout.write(repr((attack, allowed)))
    PY
    result = sandbox.execute_program(["/usr/bin/python3", "-c", client, shape, inspect ? "inspect" : "plain", port.to_s],
                                     timeout: 60, environment: {"NO_PROXY" => "", "no_proxy" => ""})
    sleep 0.5
    seen = []
    seen << lines.pop until lines.empty?
    denials = sandbox.denials.map { |d| [d.reason.to_s, d.http_method, d.path] }
    sandbox.close
    out = result.stdout
    puts JSON.generate(child_saw_value: out.include?(value) || result.stderr.include?(value),
                       child_output: out.gsub(value, "[VALUE]"), stderr: result.stderr[-2000..] || result.stderr,
                       request_lines: seen, value_requests: received.scan("Bearer #{value}").size,
                       denials: denials)
  RUBY

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
  end

  def attack(shape, inspect, prefix = [])
    lib = File.expand_path("../lib", __dir__)
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", SMUGGLING_SCRIPT, shape,
                                            inspect ? "inspect" : "plain", chdir: "/tmp")
    raise "#{prefix.inspect} #{shape} failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  end

  def expect_refused(report)
    expect(report[:child_saw_value]).to be(false), report[:child_output]
    # Only the allowed request on its own connection reached the destination, and only it carried the value.
    expect(report[:request_lines]).to eq(["GET /ok/c HTTP/1.1"]), report.inspect
    expect(report[:value_requests]).to eq(1), report.inspect
    expect(report[:child_output]).to include("HTTP/1.1 400 ")
    expect(report[:denials]).to eq([["malformed_request", "GET", "/ok/a"]])
  end

  [[:root, []], [:nobody, :drop]].each do |user, prefix|
    [false, true].each do |inspect|
      channel = inspect ? "inspected HTTPS" : "plain HTTP"

      it "never echoes the secret back to the child through a smuggled POST (#{channel}, as #{user})" do
        expect_refused(attack("echo", inspect, prefix == :drop ? drop_to_nobody! : prefix))
      end

      it "never lets a smuggled DELETE reach a destination whose rules allow only GET /ok/ (#{channel}, as #{user})" do
        expect_refused(attack("delete", inspect, prefix == :drop ? drop_to_nobody! : prefix))
      end
    end
  end
end
