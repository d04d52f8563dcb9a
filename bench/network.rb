# frozen_string_literal: true

# Allowlist networking cost (not part of the tests). Run with
#   rake compile && ruby -Ilib bench/network.rb
# 1. Per-command overhead of network :allowlist (gateway already open; each launch starts the relay helper) over
#    :none for execute_program(["/bin/true"]), interleaved (target <= 10 ms); then what an exact entry on a port
#    below 1024 adds (the launch is held while the host lowers the sandbox's ip_unprivileged_port_start) over the
#    same allowlist without it.
# 2. Throughput of a 100 MB download by curl through the relay and the built-in gateway vs curl direct, both inside
#    a Bubblewrap sandbox (the direct one with network :inherit), from a python3 http.server on the host's loopback
#    (target >= 0.5x).
# 3. TLS inspection: from an HTTPS server on the host's loopback (python3 http.server wrapped in TLS, with a
#    certificate of a CA made here and given as upstream_ca:), curl's time for one small HTTPS request on a fresh
#    connection through an inspected destination vs the same through an uninspected tunnel of the same gateway
#    (target: inspection adds <= 2 ms per request), the same amortised over 50 requests on one kept-alive
#    connection, and a 100 MB HTTPS download inspected vs direct (target >= 0.5x). The direct download verifies the
#    server too, with a bundle as large as the sandbox's (without it curl skips loading ~145 roots, about 25 ms of
#    a download that takes 100-250 ms).
# 4. Landlock (where it enforces :allowlist): the per-connection cost of the supervisor's interception (each
#    connect is read, decided, joined to the gateway and replaced by a loopback TCP pair) as 500 connect+close
#    of a Python child to the proxy address under :allowlist vs 500 to a host listener under :inherit; one small
#    request through the gateway; and the 100 MB download through the gateway vs direct (:inherit).

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "littleghost/sandbox"
require "socket"
require "tmpdir"
require "openssl"
require_relative "support"

unless LittleGhost::Sandboxes::Bubblewrap.probe[:available]
  puts "skipped: #{LittleGhost::Sandboxes::Bubblewrap.probe[:reason]}"
  exit 0
end

SIZE = 100 * 1024 * 1024

def wait_for_port(port)
  200.times do
    TCPSocket.new("127.0.0.1", port).close
    return
  rescue SystemCallError
    sleep 0.05
  end
  raise "the HTTP server did not start on port #{port}"
end

Dir.mktmpdir("lg-bench-net") do |dir|
  served = File.join(dir, "served")
  Dir.mkdir(served)
  File.open(File.join(served, "big"), "wb") { |f| f.write("\0" * (1 << 20)) while f.size < SIZE }
  port = TCPServer.new("127.0.0.1", 0).then { |s| s.addr[1].tap { s.close } }
  server = Process.spawn("/usr/bin/python3", "-m", "http.server", port.to_s, "--bind", "127.0.0.1",
                         chdir: served, out: File::NULL, err: File::NULL)
  begin
    wait_for_port(port)
    workspace = LittleGhost::Workspace.new(root: File.join(dir, "ws").tap { |d| Dir.mkdir(d) }).open
    bwrap = LittleGhost::Sandboxes::Bubblewrap
    allowlist = {mode: :allowlist, allow: ["localhost:#{port}"], gateway: {allow_private_destinations: true}}
    gated = bwrap.new(workspace: workspace, policy: {network: allowlist}).open
    none = bwrap.new(workspace: workspace, policy: {network: :none}).open
    inherit = bwrap.new(workspace: workspace, policy: {network: :inherit}).open

    ours = -> { gated.execute_program(["/bin/true"], timeout: 10).success? or raise "allowlist launch failed" }
    baseline = -> { none.execute_program(["/bin/true"], timeout: 10).success? or raise "none launch failed" }
    BenchSupport.compare("execute_program(/bin/true): :allowlist vs :none", iterations: 10, ours: ours,
                                                                             baseline: baseline)
    samples = Array.new(15) do
      a = BenchSupport.clock
      ours.call
      b = BenchSupport.clock
      baseline.call
      (b - a) - (BenchSupport.clock - b)
    end
    overhead = BenchSupport.median_per_op(samples) * 1000
    printf("per-command overhead of :allowlist over :none: %.2f ms (target <= 10 ms: %s)\n", overhead,
           overhead <= 10 ? "met" : "MISSED")

    # The same allowlist plus a name on port 443: one more listener, and the hold.
    low_list = allowlist.merge(allow: ["localhost:#{port}", "low-port.invalid:443"])
    low = bwrap.new(workspace: workspace, policy: {network: low_list}).open
    held = -> { low.execute_program(["/bin/true"], timeout: 10).success? or raise "low-port launch failed" }
    BenchSupport.compare("execute_program(/bin/true): a port below 1024 vs not", iterations: 10, ours: held,
                                                                                 baseline: ours)
    samples = Array.new(15) do
      a = BenchSupport.clock
      held.call
      b = BenchSupport.clock
      ours.call
      (b - a) - (BenchSupport.clock - b)
    end
    printf("per-command cost of an allowlisted port below 1024: %.2f ms\n", BenchSupport.median_per_op(samples) * 1000)
    low.close

    curl = ["/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", "http://localhost:#{port}/big"]
    speed = lambda do |sandbox, environment|
      result = sandbox.execute_program(curl, timeout: 120, environment: environment)
      raise "download failed: #{result.stderr}" unless result.success?

      result.stdout.to_f
    end
    through = []
    direct = []
    5.times do
      direct << speed.call(inherit, {})
      through << speed.call(gated, {"NO_PROXY" => "", "no_proxy" => ""})
    end
    gateway_speed = BenchSupport.median_per_op(through)
    direct_speed = BenchSupport.median_per_op(direct)
    ratio = gateway_speed / direct_speed
    printf("100 MB download: through the gateway %.0f MB/s, direct %.0f MB/s, ratio %.2fx (target >= 0.5x: %s)\n",
           gateway_speed / 1e6, direct_speed / 1e6, ratio, ratio >= 0.5 ? "met" : "MISSED")
    [gated, none, inherit].each(&:close)

    if LittleGhost::Sandboxes::Landlock.probe[:allowlist_unavailable].nil?
      landlock = LittleGhost::Sandboxes::Landlock
      intercepted = landlock.new(workspace: workspace, policy: {network: allowlist}).open
      open_network = landlock.new(workspace: workspace, policy: {network: :inherit}).open
      listener = TCPServer.new("127.0.0.1", 0)
      acceptor = Thread.new { loop { listener.accept.close } }
      connects = <<~PY
        import socket, sys, time
        address = (sys.argv[1], int(sys.argv[2]))
        start = time.monotonic()
        for _ in range(500):
            socket.create_connection(address).close()
        print(time.monotonic() - start)
      PY
      timed = lambda do |sandbox, host, target|
        result = sandbox.execute_program(["/usr/bin/python3", "-c", connects, host, target.to_s], timeout: 120)
        raise "connects failed: #{result.stderr}" unless result.success?

        result.stdout.to_f / 500
      end
      through_gateway = []
      direct_connects = []
      7.times do
        direct_connects << timed.call(open_network, "127.0.0.1", listener.addr[1])
        through_gateway << timed.call(intercepted, "127.0.0.1", 3128)
      end
      per_connect = (BenchSupport.median_per_op(through_gateway) - BenchSupport.median_per_op(direct_connects)) * 1e6
      printf("Landlock: one connect+close through the supervisor to the gateway %.0f us, direct %.0f us: " \
             "%.0f us per connection\n", BenchSupport.median_per_op(through_gateway) * 1e6,
             BenchSupport.median_per_op(direct_connects) * 1e6, per_connect)
      small = ["/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{time_total}", "http://localhost:#{port}/"]
      request = lambda do |sandbox, environment|
        result = sandbox.execute_program(small, timeout: 30, environment: environment)
        raise "request failed: #{result.stderr}" unless result.success?

        result.stdout.to_f
      end
      landlock_request = []
      bubblewrap_request = []
      15.times do
        landlock_request << request.call(intercepted, {"NO_PROXY" => "", "no_proxy" => ""})
        bubblewrap_request << request.call(gated.open, {"NO_PROXY" => "", "no_proxy" => ""})
      end
      printf("one small request through the gateway (curl's time): Landlock %.2f ms, Bubblewrap %.2f ms\n",
             BenchSupport.median_per_op(landlock_request) * 1000, BenchSupport.median_per_op(bubblewrap_request) * 1000)
      through = []
      direct = []
      5.times do
        direct << speed.call(open_network, {})
        through << speed.call(intercepted, {"NO_PROXY" => "", "no_proxy" => ""})
      end
      ratio = BenchSupport.median_per_op(through) / BenchSupport.median_per_op(direct)
      printf("Landlock 100 MB download: through the gateway %.0f MB/s, direct %.0f MB/s, ratio %.2fx\n",
             BenchSupport.median_per_op(through) / 1e6, BenchSupport.median_per_op(direct) / 1e6, ratio)
      acceptor.kill
      listener.close
      [intercepted, open_network, gated].each(&:close)
    end
    workspace.close
  ensure
    Process.kill(:TERM, server)
    Process.wait(server)
  end
end

# A CA and a certificate it signed for localhost, as PEM files in `dir`: [ca_path, cert_path, key_path].
def test_certificates(dir)
  sign = lambda do |subject, key, issuer, issuer_key, ca|
    certificate = OpenSSL::X509::Certificate.new
    certificate.version = 2
    certificate.serial = OpenSSL::BN.rand(64)
    certificate.subject = OpenSSL::X509::Name.parse(subject)
    certificate.issuer = issuer ? issuer.subject : certificate.subject
    certificate.public_key = key
    certificate.not_before = Time.now - 3600
    certificate.not_after = Time.now + 86_400
    extensions = OpenSSL::X509::ExtensionFactory.new
    extensions.subject_certificate = certificate
    extensions.issuer_certificate = issuer || certificate
    certificate.add_extension(extensions.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
    certificate.add_extension(extensions.create_extension("subjectAltName", "DNS:localhost")) unless ca
    certificate.sign(issuer_key || key, OpenSSL::Digest.new("SHA256"))
  end
  ca_key = OpenSSL::PKey::EC.generate("prime256v1")
  ca = sign.call("/CN=Bench CA", ca_key, nil, nil, true)
  key = OpenSSL::PKey::EC.generate("prime256v1")
  leaf = sign.call("/CN=localhost", key, ca, ca_key, false)
  paths = %w[ca.pem cert.pem key.pem].map { |name| File.join(dir, name) }
  File.write(paths[0], ca.to_pem)
  File.write(paths[1], leaf.to_pem)
  File.write(paths[2], key.private_to_pem)
  paths
end

HTTPS_SERVER = <<~PY
  import http.server, ssl, sys
  class Handler(http.server.SimpleHTTPRequestHandler):
      protocol_version = "HTTP/1.1"
      disable_nagle_algorithm = True
      def log_message(self, *args):
          pass
  server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
  context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
  context.load_cert_chain(sys.argv[2], sys.argv[3])
  server.socket = context.wrap_socket(server.socket, server_side=True)
  server.serve_forever()
PY

Dir.mktmpdir("lg-bench-tls") do |dir|
  served = File.join(dir, "served")
  Dir.mkdir(served)
  File.open(File.join(served, "big"), "wb") { |f| f.write("\0" * (1 << 20)) while f.size < SIZE }
  File.write(File.join(served, "small"), "x" * 100)
  ca_path, cert_path, key_path = test_certificates(dir)
  inspected_port, tunnelled_port = 2.times.map { TCPServer.new("127.0.0.1", 0).then { |s| s.addr[1].tap { s.close } } }
  servers = [inspected_port, tunnelled_port].map do |port|
    Process.spawn("/usr/bin/python3", "-c", HTTPS_SERVER, port.to_s, cert_path, key_path,
                  chdir: served, out: File::NULL, err: File::NULL)
  end
  begin
    [inspected_port, tunnelled_port].each { |port| wait_for_port(port) }
    workspace = LittleGhost::Workspace.new(root: File.join(dir, "ws").tap { |d| Dir.mkdir(d) }).open
    bwrap = LittleGhost::Sandboxes::Bubblewrap
    allowlist = {allow: [{destination: "localhost:#{inspected_port}", inspect: true}, "localhost:#{tunnelled_port}"],
                 upstream_ca: ca_path, allow_private_destinations: true}
    gated = bwrap.new(workspace: workspace, policy: {network: allowlist}).open
    inherit = bwrap.new(workspace: workspace, policy: {network: :inherit}).open
    through_proxy = {"NO_PROXY" => "", "no_proxy" => ""}
    # The tunnelled requests verify with a bundle as large as the gateway's (the system's roots plus the bench CA):
    # curl's time includes loading it.
    tunnel_bundle = File.join(workspace.root, "tunnel-bundle.pem")
    sandbox_bundle = File.read(gated.gateway.environment.fetch("SSL_CERT_FILE"))
    sandbox_ca = sandbox_bundle[/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n\z/]
    File.write(tunnel_bundle, sandbox_bundle.delete_suffix(sandbox_ca) + File.read(ca_path))

    # Seconds curl reports for `urls` (each -w line is one transfer), summed.
    timed = lambda do |sandbox, urls, environment, *options|
      argv = ["/usr/bin/curl", "-sS", *options, "-w", "%{time_total}\n"] + urls.flat_map { |url| ["-o", "/dev/null", url] }
      result = sandbox.execute_program(argv, timeout: 120, environment: environment)
      raise "request failed: #{result.stderr}" unless result.success?

      result.stdout.lines.sum(&:to_f)
    end
    small = ->(port) { "https://localhost:#{port}/small" }
    inspected_times = []
    tunnelled_times = []
    31.times do
      inspected_times << timed.call(gated, [small.call(inspected_port)], through_proxy)
      tunnelled_times << timed.call(gated, [small.call(tunnelled_port)], through_proxy, "--cacert", tunnel_bundle)
    end
    inspected = BenchSupport.median_per_op(inspected_times) * 1000
    tunnelled = BenchSupport.median_per_op(tunnelled_times) * 1000
    overhead = inspected - tunnelled
    printf("one HTTPS request on a new connection: inspected %.2f ms, tunnelled %.2f ms, overhead %.2f ms " \
           "(target <= 2 ms: %s)\n", inspected, tunnelled, overhead, overhead <= 2 ? "met" : "MISSED")

    many_inspected = []
    many_tunnelled = []
    7.times do
      many_inspected << timed.call(gated, [small.call(inspected_port)] * 50, through_proxy) / 50
      many_tunnelled << timed.call(gated, [small.call(tunnelled_port)] * 50, through_proxy, "--cacert", tunnel_bundle) / 50
    end
    kept = (BenchSupport.median_per_op(many_inspected) - BenchSupport.median_per_op(many_tunnelled)) * 1000
    printf("50 HTTPS requests on one kept-alive connection: inspection adds %.3f ms per request\n", kept)

    big = "https://localhost:#{inspected_port}/big"
    speed = lambda do |sandbox, environment, *options|
      argv = ["/usr/bin/curl", "-sS", *options, "-o", "/dev/null", "-w", "%{speed_download}", big]
      result = sandbox.execute_program(argv, timeout: 120, environment: environment)
      raise "download failed: #{result.stderr}" unless result.success?

      result.stdout.to_f
    end
    through = []
    direct = []
    5.times do
      direct << speed.call(inherit, {}, "--cacert", tunnel_bundle)
      through << speed.call(gated, through_proxy)
    end
    inspected_speed = BenchSupport.median_per_op(through)
    direct_speed = BenchSupport.median_per_op(direct)
    ratio = inspected_speed / direct_speed
    printf("100 MB HTTPS download: inspected %.0f MB/s, direct %.0f MB/s, ratio %.2fx (target >= 0.5x: %s)\n",
           inspected_speed / 1e6, direct_speed / 1e6, ratio, ratio >= 0.5 ? "met" : "MISSED")
    [gated, inherit].each(&:close)
    workspace.close
  ensure
    servers.each do |server|
      Process.kill(:TERM, server)
      Process.wait(server)
    end
  end
end
