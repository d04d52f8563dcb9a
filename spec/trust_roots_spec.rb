# frozen_string_literal: true

require "spec_helper"
require "socket"
require "openssl"
require "open3"
require "json"

# G.5: under an allowlist, a program in Bubblewrap's isolated root trusts what the host trusts, with no setup of its
# own: the host's certificate directories are bound read-only (from handles) at their own paths, and SSL_CERT_FILE /
# SSL_CERT_DIR (and the other bundle variables) name them. Without inspection TLS is end to end, so the proof is a
# destination whose certificate only the host's trust store vouches for.
#
# The host's real trust store is never modified: each example runs its sandbox in a throwaway mount namespace
# (`unshare --mount`) in which a private copy of /etc/ssl/certs, with this spec's CA added as a root, is bound over
# the real one. Inside it the gem sees that copy as "the system's trust roots", exactly as after
# `update-ca-certificates`.
RSpec.describe "Trust roots under an allowlist" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  CLIENTS = {
    "curl" => "/usr/bin/curl", "python" => "/usr/bin/python3", "ruby" => "/usr/bin/ruby",
    "git" => "/usr/local/bin/git", "node" => "/usr/bin/node"
  }.select { |_, path| File.executable?(path) }.freeze

  before do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "needs root for a private mount namespace" unless Process.uid.zero?
    skip "the host has no /etc/ssl/certs/ca-certificates.crt" unless File.file?("/etc/ssl/certs/ca-certificates.crt")
    skip "unshare cannot make a mount namespace here" unless system("unshare", "--mount", "true", err: File::NULL)
  end

  after do
    @thread&.kill
    @tcp&.close
  end

  # A CA of this spec, and an HTTPS server on 127.0.0.1 with a certificate it signed for localhost.
  def ca_key = @ca_key ||= OpenSSL::PKey::EC.generate("prime256v1")

  def ca_certificate
    @ca_certificate ||= certificate("/CN=Trust roots spec CA", ca_key, ca_key, nil, ca: true)
  end

  def certificate(subject, key, signer, issuer, ca: false)
    cert = OpenSSL::X509::Certificate.new
    cert.version = 2
    cert.serial = OpenSSL::BN.rand(64)
    cert.subject = OpenSSL::X509::Name.parse(subject)
    cert.issuer = issuer ? issuer.subject : cert.subject
    cert.public_key = key
    cert.not_before = Time.now - 3600
    cert.not_after = Time.now + 3600
    extensions = OpenSSL::X509::ExtensionFactory.new
    extensions.subject_certificate = cert
    extensions.issuer_certificate = issuer || cert
    cert.add_extension(extensions.create_extension("basicConstraints", ca ? "CA:TRUE" : "CA:FALSE", true))
    cert.add_extension(extensions.create_extension("subjectAltName", "DNS:localhost,IP:127.0.0.1")) unless ca
    cert.sign(signer, OpenSSL::Digest.new("SHA256"))
    cert
  end

  # Answers every request with "trusted" (an empty ref list for git's info/refs), and counts them.
  def start_server
    key = OpenSSL::PKey::EC.generate("prime256v1")
    context = OpenSSL::SSL::SSLContext.new
    context.cert = certificate("/CN=localhost", key, ca_key, ca_certificate)
    context.key = key
    @tcp = TCPServer.new("127.0.0.1", 0)
    server = OpenSSL::SSL::SSLServer.new(@tcp, context)
    @thread = Thread.new do
      loop do
        Thread.new(server.accept) do |client|
          request = client.gets.to_s
          while (line = client.gets) && line != "\r\n"; end
          body = request.include?("info/refs") ? "" : "trusted"
          client.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: #{body.bytesize}\r\n" \
                       "Connection: close\r\n\r\n#{body}")
          client.close
        rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
          nil
        end
      rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
        retry unless @tcp.closed?
      end
    end
    @tcp.addr[1]
  end

  # A copy of the host's /etc/ssl/certs (its links into /usr/share/ca-certificates kept) with this spec's CA added
  # to the bundle and as a hashed file, as update-ca-certificates would add it.
  def private_trust_store
    copy = File.join(temporary_directory, "certs")
    system("cp", "-a", "/etc/ssl/certs", copy, exception: true)
    File.open(File.join(copy, "ca-certificates.crt"), "a") { |file| file.write(ca_certificate.to_pem) }
    File.write(File.join(copy, format("%08x.0", ca_certificate.subject.hash)), ca_certificate.to_pem)
    FileUtils.chmod_R("a+rX", File.dirname(copy))
    copy
  end

  # Runs the sandbox in a mount namespace seeing `store` as /etc/ssl/certs (as `prefix`, e.g. uid 65534); returns
  # the report of its programs.
  def report(port, store, prefix = [])
    lib = File.expand_path("../lib", __dir__)
    script = File.join(temporary_directory, "clients.rb")
    File.write(script, <<~RUBY)
      $LOAD_PATH.unshift(#{lib.inspect})
      require "littleghost/sandbox"
      require "json"
      require "tmpdir"
      url = "https://localhost:#{port}/"
      clients = {
        "curl" => ["/usr/bin/curl", "-sS", "--max-time", "20", url],
        "python" => ["/usr/bin/python3", "-c", "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=20).read().decode(), end='')", url],
        "ruby" => ["/usr/bin/ruby", "-rnet/http", "-e", "print Net::HTTP.get(URI(ARGV[0]))", url],
        "git" => ["/usr/local/bin/git", "ls-remote", url + "repo.git"],
        "node" => ["/usr/bin/node", "-e", "require('https').get(process.argv[1], r => { r.on('data', d => process.stdout.write(d)) }).on('error', e => { console.error(e.message); process.exit(1) })", url],
      }.select { |name, _| #{CLIENTS.keys.inspect}.include?(name) }
      Dir.mktmpdir do |root|
        workspace = LittleGhost::Workspace.new(root: root).open
        sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {
          files: {root: :read_write},
          network: {allow: ["localhost:#{port}"], allow_private_destinations: true},
        })
        results = clients.transform_values do |argv|
          run = sandbox.execute_program(argv, timeout: 60)
          [run.exit_code, run.stdout, run.stderr]
        end
        seen = sandbox.execute_program(["/bin/sh", "-c", 'sha256sum < /etc/ssl/certs/ca-certificates.crt; echo "$SSL_CERT_FILE|$SSL_CERT_DIR"; test -r "$SSL_CERT_FILE" && test -d "$SSL_CERT_DIR" && echo readable; ls -a /etc/ssl'], timeout: 10)
        print JSON.generate("clients" => results, "seen" => seen.stdout.lines.map(&:chomp))
        sandbox.close
      end
    RUBY
    FileUtils.chmod("a+rX", [File.dirname(script), script])
    mount = "mount --bind #{store} /etc/ssl/certs && exec \"$@\""
    out, err, status = Open3.capture3("unshare", "--mount", "--propagation", "private", "--", "sh", "-c", mount, "sh",
                                      *prefix, RbConfig.ruby, script)
    raise "the sandbox run failed: #{err}" unless status.success?

    JSON.parse(out)
  end

  def expect_host_trust(report, store)
    digest = OpenSSL::Digest::SHA256.hexdigest(File.binread(File.join(store, "ca-certificates.crt")))
    expect(report["seen"][0]).to start_with(digest)
    expect(report["seen"][1]).to eq("/etc/ssl/certs/ca-certificates.crt|/etc/ssl/certs")
    expect(report["seen"][2]).to eq("readable")
    # Only the certificate directory: never /etc/ssl/private (the host's keys) nor anything else of /etc/ssl.
    expect(report["seen"][3..]).to contain_exactly(".", "..", "certs")
    expect(report["clients"].keys).to include("curl", "python", "ruby")
    report["clients"].each do |client, (status, stdout, stderr)|
      expected = client == "git" ? "" : "trusted"
      expect([client, status, stdout]).to eq([client, 0, expected]), "#{client}: #{stderr}"
    end
  end

  it "curl, Python, Ruby, git and Node verify a destination the host trusts, with no setup" do
    port = start_server
    store = private_trust_store
    expect_host_trust(report(port, store), store)
  end

  it "holds as uid 65534" do
    prefix = drop_to_nobody!
    port = start_server
    store = private_trust_store
    expect_host_trust(report(port, store, prefix), store)
  end

  it "a certificate the host does not trust is still refused (the roots are the host's, not a blanket yes)" do
    port = start_server
    store = File.join(temporary_directory, "certs")
    system("cp", "-a", "/etc/ssl/certs", store, exception: true)
    FileUtils.chmod_R("a+rX", File.dirname(store))
    status, _, stderr = report(port, store)["clients"].fetch("curl")
    expect(status).to eq(60)
    expect(stderr).to match(/certificate/i)
  end
end
