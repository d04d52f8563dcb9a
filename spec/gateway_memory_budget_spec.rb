# frozen_string_literal: true

require "spec_helper"
require "open3"
require "json"
require "rbconfig"

# Every byte the built-in gateway buffers for a connection lives in the host's Ruby process. An inspected download the
# child never reads fills the gateway's buffers (what it decrypted from the destination and has not yet encrypted
# toward the child) and keeps them full. A child opening a hundred of them must meet the gateway's memory budget
# (32 MiB): the host's resident memory grows by about the budget, not by a megabyte or more per connection, and a
# connection the budget has no room for gets a 503 recorded as a `:memory_budget` denial.
#
# The host runs in a subprocess of its own so its resident memory is the gateway's; the destination is an HTTPS server
# in another process streaming an endless body, with a certificate of a CA it makes (given as upstream_ca:).
RSpec.describe "The built-in gateway's memory budget" do # rubocop:disable RSpec/DescribeClass
  server = <<~'RUBY'
    require "openssl"
    require "socket"
    ca_path = ARGV[0]
    def sign(subject, key, issuer, issuer_key, ca:, names: [])
      certificate = OpenSSL::X509::Certificate.new
      certificate.version = 2
      certificate.serial = OpenSSL::BN.rand(64)
      certificate.subject = OpenSSL::X509::Name.parse(subject)
      certificate.issuer = issuer ? issuer.subject : certificate.subject
      certificate.public_key = key
      certificate.not_before = Time.now - 3600
      certificate.not_after = Time.now + 3600
      extensions = OpenSSL::X509::ExtensionFactory.new
      extensions.subject_certificate = certificate
      extensions.issuer_certificate = issuer || certificate
      certificate.add_extension(extensions.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
      certificate.add_extension(extensions.create_extension("subjectAltName", names.join(","))) unless names.empty?
      certificate.sign(issuer_key, OpenSSL::Digest.new("SHA256"))
      certificate
    end
    ca_key = OpenSSL::PKey::EC.generate("prime256v1")
    ca = sign("/CN=Memory budget test CA", ca_key, nil, ca_key, ca: true)
    key = OpenSSL::PKey::EC.generate("prime256v1")
    context = OpenSSL::SSL::SSLContext.new
    context.cert = sign("/CN=localhost", key, ca, ca_key, ca: false, names: ["DNS:localhost", "IP:127.0.0.1"])
    context.key = key
    File.write(ca_path, ca.to_pem)
    tcp = TCPServer.new("127.0.0.1", 0)
    listener = OpenSSL::SSL::SSLServer.new(tcp, context)
    listener.start_immediately = false
    puts tcp.addr[1]
    $stdout.flush
    chunk = "x" * 65_536
    loop do
      Thread.new(listener.accept) do |client|
        client.accept
        while (line = client.gets) && line != "\r\n"; end
        client.write("HTTP/1.1 200 OK\r\nContent-Length: #{1 << 40}\r\n\r\n")
        loop { client.write(chunk) }
      rescue StandardError
        client.close rescue nil # rubocop:disable Style/RescueModifier
      end
    end
  RUBY

  # Opens COUNT inspected downloads through the gateway's socket, reads nothing of any, and reports how each CONNECT
  # was answered. Should none be refused, it goes on opening (up to 100 more) until one is.
  attacker = <<~'RUBY'
    require "socket"
    require "openssl"
    socket_path, port, bundle, count = ARGV[0], Integer(ARGV[1]), ARGV[2], Integer(ARGV[3])
    context = OpenSSL::SSL::SSLContext.new
    context.ca_file = bundle
    context.verify_mode = OpenSSL::SSL::VERIFY_PEER
    held = []
    answers = Hash.new(0)
    download = lambda do
      socket = UNIXSocket.new(socket_path)
      begin
        socket.write("CONNECT localhost:#{port} HTTP/1.1\r\nHost: localhost:#{port}\r\n\r\n")
      rescue Errno::EPIPE, Errno::ECONNRESET
        nil # refused before its request was read: the answer is there to read
      end
      status = socket.gets.to_s[%r{\AHTTP/1\.1 (\d+)}, 1] || "none"
      if status == "200"
        while (line = socket.gets) && line != "\r\n"; end
        tls = OpenSSL::SSL::SSLSocket.new(socket, context)
        tls.hostname = "localhost"
        tls.connect
        tls.write("GET /big HTTP/1.1\r\nHost: localhost:#{port}\r\n\r\n")
        held << tls
      end
      held << socket
      status
    rescue StandardError => e
      e.class.name
    end
    count.times { answers[download.call] += 1 }
    100.times do
      break if answers["503"].positive?
      sleep 0.1
      answers[download.call] += 1
    end
    puts answers.map { |status, n| "#{status}=#{n}" }.join(",")
    $stdout.flush
    sleep
  RUBY

  host = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    require "tmpdir"
    require "rbconfig"
    server, attacker = ARGV[0], ARGV[1]
    def resident_mib = File.read("/proc/self/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i / 1024.0
    Dir.mktmpdir("memory-budget") do |dir|
      ca_path = File.join(dir, "ca.pem")
      port_reader, port_writer = IO.pipe
      server_pid = Process.spawn(RbConfig.ruby, "-e", server, ca_path, out: port_writer)
      port_writer.close
      port = Integer(port_reader.gets)
      gateway = LittleGhost::Network::BuiltinGateway.new(allow: [{destination: "localhost:#{port}", inspect: true}],
                                                         allow_private_destinations: true, upstream_ca: ca_path)
      gateway.open
      before = resident_mib
      reader, writer = IO.pipe
      attacker_pid = Process.spawn(RbConfig.ruby, "-e", attacker, gateway.proxy_mount_path, port.to_s,
                                   gateway.environment.fetch("SSL_CERT_FILE"), "100", out: writer)
      writer.close
      answers = reader.gets.to_s.strip
      # The last connections' buffers fill after their CONNECT was answered: the most seen over a while.
      peak = Array.new(20) { sleep 0.25; resident_mib }.max
      reasons = gateway.denials.map { |d| d.reason.to_s }.uniq
      [attacker_pid, server_pid].each { |pid| Process.kill(:KILL, pid) }
      [attacker_pid, server_pid].each { |pid| Process.wait(pid) }
      gateway.close
      puts JSON.generate(answers: answers, growth_mib: (peak - before).round(1), reasons: reasons)
    end
  RUBY

  it "keeps a hundred unread inspected downloads within the budget and refuses one past it with memory_budget" do
    lib = File.expand_path("../lib", __dir__)
    output, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", host, server, attacker)
    expect(status).to be_success, output
    result = JSON.parse(output.lines.last, symbolize_names: true)
    answers = result[:answers].split(",").to_h { |pair| pair.split("=") }
    expect(answers["200"].to_i).to be > 0, result.inspect
    expect(answers["503"].to_i).to be > 0, result.inspect
    expect(result[:reasons]).to eq(["memory_budget"]), result.inspect
    # The budget (32 MiB) plus what is not buffered data: each connection's TLS and task state, the allocator's slack.
    expect(result[:growth_mib]).to be < 48, result.inspect
  end
end
