# frozen_string_literal: true

require "spec_helper"
require "openssl"
require "socket"

# Every refusal by the gateway carries its reason where a user looks: the denial (`reason`, and `detail` with the
# resolver's, the system's or the TLS library's words) and the network event (`reason`, `detail`), not only the body
# of a 502 a client does not show (curl prints "CONNECT tunnel failed, response 502"). The destinations are servers
# on the host's loopback this spec starts (allow_private_destinations: true), reached by real curl inside Bubblewrap and Landlock.
RSpec.describe "gateway refusal reasons" do # rubocop:disable RSpec/DescribeClass
  include LoopbackHttpHelpers

  extend AllowlistBackends

  before do
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
  end

  after { @tls_servers&.each(&:close) }

  # An HTTPS server on 127.0.0.1 whose certificate for localhost signs itself (no CA anyone trusts).
  def self_signed_server
    key = OpenSSL::PKey::EC.generate("prime256v1")
    certificate = OpenSSL::X509::Certificate.new
    certificate.version = 2
    certificate.serial = OpenSSL::BN.rand(64)
    certificate.subject = certificate.issuer = OpenSSL::X509::Name.parse("/CN=localhost")
    certificate.public_key = key
    certificate.not_before = Time.now - 3600
    certificate.not_after = Time.now + 3600
    extensions = OpenSSL::X509::ExtensionFactory.new
    extensions.subject_certificate = extensions.issuer_certificate = certificate
    certificate.add_extension(extensions.create_extension("subjectAltName", "DNS:localhost,IP:127.0.0.1"))
    certificate.sign(key, OpenSSL::Digest.new("SHA256"))
    context = OpenSSL::SSL::SSLContext.new
    context.cert = certificate
    context.key = key
    tcp = TCPServer.new("127.0.0.1", 0)
    (@tls_servers ||= []) << tcp
    server = OpenSSL::SSL::SSLServer.new(tcp, context)
    Thread.new do
      loop do
        client = server.accept
        client.close
      rescue OpenSSL::SSL::SSLError, SystemCallError
        next
      end
    rescue IOError
      nil
    end
    tcp.addr[1]
  end

  # A loopback port nothing listens on.
  def closed_port
    server = TCPServer.new("127.0.0.1", 0)
    server.addr[1].tap { server.close }
  end

  def open_sandbox(allow)
    network = {allow: allow, allow_private_destinations: true}
    backend.new(workspace: open_workspace, policy: {network: network}).open
  end

  def failed_event(sandbox, destination)
    sandbox.network_log.find { |event| event.destination == destination && event.decision == :denied }
  end

  each_allowlist_backend do |name|
    it "names a certificate the gateway cannot verify: :upstream_certificate with the TLS library's words" do
      port = self_signed_server
      sandbox = open_sandbox([{destination: "localhost:#{port}", inspect: true}])
      result = curl(sandbox, "https://localhost:#{port}/")
      expect(result.stderr).to include("502")
      denial = sandbox.denials.last
      expect([denial.kind, denial.operation, denial.target, denial.reason])
        .to eq([:network, :connect, "localhost:#{port}", :upstream_certificate])
      expect(denial.detail).to match(/UnknownIssuer|invalid peer certificate/)
      expect(denial.message).to end_with(denial.detail)
      expect(denial.to_h).to include(detail: denial.detail)
      event = failed_event(sandbox, "localhost:#{port}")
      expect([event.http_method, event.status, event.reason, event.detail])
        .to eq(["CONNECT", 502, :upstream_certificate, denial.detail])
      expect(event.to_h).to include(reason: :upstream_certificate, detail: denial.detail)
      expect(event.inspect).to include("502 upstream_certificate")
    ensure
      sandbox&.close
    end

    it "names an allowed port nothing answers: :upstream_unreachable, for plain HTTP and for a tunnel" do
      port = closed_port
      sandbox = open_sandbox(["localhost:#{port}"])
      expect(curl(sandbox, "http://localhost:#{port}/").stdout).to end_with(" 502")
      curl(sandbox, "https://localhost:#{port}/")
      expect(sandbox.denials.map { |d| [d.target, d.reason] }).to eq([["localhost:#{port}", :upstream_unreachable]] * 2)
      expect(sandbox.denials.map(&:detail)).to all(match(/127\.0\.0\.1:#{port}: .*[Cc]onnection refused/))
      events = sandbox.network_log.select { |event| event.decision == :denied }
      expect(events.map { |e| [e.http_method, e.status, e.reason] })
        .to eq([["GET", 502, :upstream_unreachable], ["CONNECT", 502, :upstream_unreachable]])
    ensure
      sandbox&.close
    end

    it "names an allowed name that does not resolve: :dns" do
      sandbox = open_sandbox(["nowhere.invalid:80"])
      expect(curl(sandbox, "http://nowhere.invalid/").stdout).to end_with(" 502")
      denial = sandbox.denials.last
      expect([denial.target, denial.reason]).to eq(["nowhere.invalid:80", :dns])
      expect(denial.detail).to be_a(String).and(satisfy { |text| !text.empty? })
      expect(failed_event(sandbox, "nowhere.invalid:80").reason).to eq(:dns)
    ensure
      sandbox&.close
    end
  end
end
