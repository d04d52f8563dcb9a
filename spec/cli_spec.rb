# frozen_string_literal: true

require "json"
require "openssl"
require "open3"
require "rbconfig"
require "socket"

# The littleghost-sandbox command, run as a user runs it: a separate Ruby process on exe/littleghost-sandbox.
# (spec/gem_install_spec.rb also runs the installed executable from a fresh GEM_HOME.)
RSpec.describe "littleghost-sandbox command" do
  root = File.expand_path("..", __dir__)
  executable = File.join(root, "exe", "littleghost-sandbox")
  lib = File.join(root, "lib")

  include ProcessHelpers

  define_method(:command_line) { |*args| [RbConfig.ruby, "-I", lib, executable, *args] }

  # Runs the command in +chdir+ (the default workspace root); returns [stdout, stderr, status].
  def cli(*args, chdir:, stdin_data: "")
    Open3.capture3(*command_line(*args), stdin_data: stdin_data, chdir: chdir)
  end

  let(:work) { temporary_directory }

  describe "the gem" do
    it "ships the executable from exe/" do
      spec = Gem::Specification.load(File.join(root, "littleghost-sandbox.gemspec"))
      expect(spec.bindir).to eq("exe")
      expect(spec.executables).to eq(["littleghost-sandbox"])
      expect(spec.files).to include("exe/littleghost-sandbox")
      expect(File.executable?(executable)).to be(true)
    end
  end

  describe "run" do
    it "prints the command's stdout and stderr on its own and exits with its status" do
      out, err, status = cli("run", "--", "sh", "-c", "echo to-out; echo to-err >&2", chdir: work)
      expect([out, err, status.exitstatus]).to eq(["to-out\n", "to-err\n", 0])
    end

    it "passes a failing command's exit status through" do
      _, _, status = cli("run", "--", "sh", "-c", "exit 7", chdir: work)
      expect(status.exitstatus).to eq(7)
    end

    it "leaves the command's own options alone when -- is omitted" do
      out, _, status = cli("run", "--timeout", "30", "sh", "-c", "echo $0", "--rw", chdir: work)
      expect([out, status.exitstatus]).to eq(["--rw\n", 0])
    end

    it "exits 127 like a shell when an unsandboxed command does not exist" do
      _, err, status = cli("run", "--provider", "unrestricted", "--", "no-such-program-here", chdir: work)
      expect([status.exitstatus, err]).to eq([127, "littleghost-sandbox: no-such-program-here: command not found\n"])
    end

    it "exits 128 + the signal when the command is killed, under Bubblewrap and unsandboxed" do
      _, _, status = cli("run", "--provider", "bubblewrap", "--", "sh", "-c", "kill -KILL $$", chdir: work)
      expect(status.exitstatus).to eq(128 + 9)
      _, _, status = cli("run", "--provider", "unrestricted", "--", "sh", "-c", "kill -TERM $$", chdir: work)
      expect(status.exitstatus).to eq(128 + 15)
    end

    it "streams output as it arrives instead of when the command ends" do
      gate = File.join(work, "gate")
      script = "echo first; echo first-err >&2; while [ ! -e #{gate} ]; do sleep 0.01; done; echo second"
      Open3.popen3(*command_line("run", "--", "sh", "-c", script), chdir: work) do |stdin, stdout, stderr, thread|
        stdin.close
        # The command is still blocked on the gate, so these lines can only have been streamed.
        expect(stdout.gets).to eq("first\n")
        expect(stderr.gets).to eq("first-err\n")
        File.write(gate, "") # the spec runs outside the sandbox; the root is read-only only inside it
        expect(stdout.read).to eq("second\n")
        expect(thread.value.exitstatus).to eq(0)
      end
    end

    it "feeds its stdin to the command" do
      out, _, status = cli("run", "--", "cat", chdir: work, stdin_data: "from stdin\n")
      expect([out, status.exitstatus]).to eq(["from stdin\n", 0])
    end

    it "refuses a write outside the --rw grants: nothing is created in the host's /etc" do
      writable = temporary_directory
      # A name of this run's own, so a stale file from elsewhere cannot decide the example.
      evil = "/etc/littleghost-cli-spec-#{Process.pid}-#{rand(1 << 30)}"
      script = "echo x > #{evil}; echo \"etc=$?\"; echo y > #{writable}/ok; echo \"grant=$?\""
      out, _, status = cli("run", "--provider", "bubblewrap", "--rw", "out=#{writable}", "--", "sh", "-c", script,
                           chdir: work)
      expect(out).to include("etc=").and include("grant=0")
      expect(out[/etc=(\d+)/, 1]).not_to eq("0")
      expect(File.exist?(evil)).to be(false)
      expect(File.read(File.join(writable, "ok"))).to eq("y\n")
      expect(status.exitstatus).to eq(0)
    end

    it "keeps the workspace root read-only unless --rw root is given" do
      _, _, status = cli("run", "--", "sh", "-c", "echo x > planted", chdir: work)
      expect(status.exitstatus).not_to eq(0)
      expect(File.exist?(File.join(work, "planted"))).to be(false)

      _, _, status = cli("run", "--rw", "root", "--", "sh", "-c", "echo x > planted", chdir: work)
      expect(status.exitstatus).to eq(0)
      expect(File.read(File.join(work, "planted"))).to eq("x\n")
    end

    it "lets the command read an --ro grant but not change it" do
      data = temporary_directory
      File.write(File.join(data, "notes.txt"), "original\n")
      script = "cat #{data}/notes.txt; echo changed > #{data}/notes.txt || echo refused; touch #{data}/new || echo refused"
      out, _, status = cli("run", "--ro", "data=#{data}", "--", "sh", "-c", script, chdir: work)
      expect(out.lines.first).to eq("original\n")
      expect(out.lines.count("refused\n")).to eq(2)
      expect(File.read(File.join(data, "notes.txt"))).to eq("original\n")
      expect(File.exist?(File.join(data, "new"))).to be(false)
      expect(status.exitstatus).to eq(0)
    end

    it "blocks a socket to a host listener under --network none, and not under --network inherit" do
      skip "python3 is not in /usr/bin" unless File.executable?("/usr/bin/python3")
      server = TCPServer.new("127.0.0.1", 0)
      port = server.addr[1]
      script = <<~PY
        import socket
        try:
            socket.create_connection(("127.0.0.1", #{port}), timeout=5).close()
            print("connected")
        except OSError as error:
            print("blocked", type(error).__name__)
      PY
      out, _, status = cli("run", "--network", "none", "--", "python3", "-c", script, chdir: work)
      expect(out).to start_with("blocked")
      expect(status.exitstatus).to eq(0)
      expect(server.accept_nonblock(exception: false)).to eq(:wait_readable)

      # The same command reaches the listener when the network is shared, so the refusal above is the sandbox's.
      out, = cli("run", "--network", "inherit", "--", "python3", "-c", script, chdir: work)
      expect(out).to eq("connected\n")
    ensure
      server&.close
    end

    it "stops a command at --timeout, keeps what it printed, says so, and exits 124" do
      out, err, status = cli("run", "--timeout", "1", "--", "sh", "-c", "echo partial; sleep 60", chdir: work)
      expect(out).to eq("partial\n")
      expect(err).to eq("littleghost-sandbox: command timed out after 1.0 seconds\n")
      expect(status.exitstatus).to eq(124)
    end

    it "kills a command that goes over --memory and exits 137" do
      skip "python3 is not in /usr/bin" unless File.executable?("/usr/bin/python3")
      script = "import time; block = bytearray(300 * 1024 * 1024); time.sleep(60)"
      _, err, status = cli("run", "--memory", "50000000", "--", "python3", "-c", script, chdir: work)
      expect(err).to eq("littleghost-sandbox: Program memory exceeded 50000000 bytes\n")
      expect(status.exitstatus).to eq(137)
    end

    it "ends the command when interrupted (Ctrl-C) and exits 130" do
      marker = "#{rand(1 << 30)}"
      Open3.popen3(*command_line("run", "--", "sh", "-c", "echo started; exec sleep 1000#{marker}"),
                   chdir: work) do |stdin, stdout, _stderr, thread|
        stdin.close
        expect(stdout.gets).to eq("started\n")
        Process.kill("INT", thread.pid)
        expect(thread.value.exitstatus).to eq(130)
      end
      still_running = eventually do
        Dir["/proc/[0-9]*/cmdline"].none? { |file| (File.read(file) rescue "").include?("1000#{marker}") }
      end
      expect(still_running).to be(true)
    end

    it "rejects a bad option with the usage on stderr and exit 125, a status the command's own 2 cannot be" do
      out, err, status = cli("run", "--no-such-option", "--", "true", chdir: work)
      expect(out).to eq("")
      expect(err).to include("invalid option: --no-such-option").and include("Usage:")
      expect(status.exitstatus).to eq(125)

      ["--network", "everything", "--timeout", "0", "--rw", "name="].each_slice(2) do |option, value|
        _, err, status = cli("run", option, value, "--", "true", chdir: work)
        expect([status.exitstatus, err]).to match([125, /Usage:/])
      end
      [%w[run], %w[run --], %w[frobnicate], []].each do |args|
        _, err, status = cli(*args, chdir: work)
        expect([status.exitstatus, err]).to match([125, /Usage:/])
      end
    end

    it "prints what fit under --output-bytes, then says the limit ended the command and exits 137" do
      out, err, status = cli("run", "--output-bytes", "100", "--", "seq", "1", "1000", chdir: work)
      expect(out).to eq((1..1000).map { |n| "#{n}\n" }.join.byteslice(0, 100))
      expect(err).to eq("littleghost-sandbox: Program output exceeded 100 bytes\n")
      expect(status.exitstatus).to eq(137)
    end

    it "answers a subcommand's --help on the out: it is given and returns 0, leaving the process running" do
      require "littleghost/sandbox/cli"
      require "stringio"
      %w[run probe].each do |subcommand|
        out = StringIO.new
        err = StringIO.new
        expect(LittleGhost::Sandbox::CLI.start([subcommand, "--help"], out: out, err: err)).to eq(0)
        expect(out.string).to include("Usage:").and include("--output-bytes").and include("--json")
        expect(err.string).to eq("")
      end
      out = StringIO.new
      expect(LittleGhost::Sandbox::CLI.start(%w[run --version], out: out, err: StringIO.new)).to eq(0)
      expect(out.string).to eq("littleghost-sandbox #{LittleGhost::Sandbox::VERSION}\n")
    end

    it "exits 125 naming the problem when the sandbox cannot be set up" do
      _, err, status = cli("run", "--provider", "bwrap", "--", "true", chdir: work)
      expect(status.exitstatus).to eq(125)
      expect(err).to include(":bwrap").and include(":bubblewrap")

      _, err, status = cli("run", "--ro", "data=#{File.join(work, 'absent')}", "--", "true", chdir: work)
      expect(status.exitstatus).to eq(125)
      expect(err).to include("absent")
      _, err, status = cli("run", "--rw", "missing-path", "--", "true", chdir: work) # an unnamed grant: PATH
      expect([status.exitstatus, err]).to match([125, /not a directory: .*missing-path/])
    end
  end

  describe "run with the gateway: secrets, inspection, an upstream CA, names" do
    # A loopback HTTP(S) server answering each request with the Authorization header it was sent.
    def authorization_server(tls: nil)
      tcp = TCPServer.new("127.0.0.1", 0)
      listener = tls ? OpenSSL::SSL::SSLServer.new(tcp, tls) : tcp
      (@servers ||= []) << tcp
      Thread.new do
        loop do
          Thread.new(listener.accept) do |client|
            authorization = "none"
            while (line = client.gets) && line != "\r\n"
              authorization = line.split(": ", 2).last.strip if line.downcase.start_with?("authorization:")
            end
            body = "saw #{authorization}"
            client.write("HTTP/1.1 200 OK\r\nContent-Length: #{body.bytesize}\r\nConnection: close\r\n\r\n#{body}")
            client.close
          rescue IOError, SystemCallError, OpenSSL::SSL::SSLError
            nil
          end
        end
      rescue IOError, SystemCallError
        nil
      end
      tcp.addr[1]
    end

    after { @servers&.each(&:close) }

    before do
      skip "curl is not in /usr/bin" unless File.executable?("/usr/bin/curl")
    end

    let(:secret_environment) { { "CLI_SPEC_TOKEN" => "real-token-#{rand(1 << 30)}" } }
    let(:request) { 'curl -sS -H "Authorization: Bearer $LITTLEGHOST_SECRET_API" ' }

    def cli_with(environment, *args)
      Open3.capture3(environment, *command_line(*args), stdin_data: "", chdir: work)
    end

    it "gives the command a stand-in for --secret, which the gateway swaps for the real value toward its destination" do
      port = authorization_server
      script = "env; #{request} http://localhost:#{port}/user"
      out, err, status = cli_with(secret_environment, "run", "--provider", "bubblewrap", "--allow-private",
                                  "--secret", "api=CLI_SPEC_TOKEN@localhost:#{port}", "--", "sh", "-c", script)
      expect([err, status.exitstatus]).to eq(["", 0])
      stand_in = out[/^LITTLEGHOST_SECRET_API=(lgsecret_\h{32})$/, 1]
      expect(stand_in).not_to be_nil
      expect(out).to end_with("saw Bearer #{secret_environment['CLI_SPEC_TOKEN']}")
      expect(out.lines[0...-1].join).not_to include(secret_environment["CLI_SPEC_TOKEN"]) # env shows only the stand-in
      expect(out).not_to include("CLI_SPEC_TOKEN")
    end

    it "reads HTTPS requests to an --inspect destination, trusting --upstream-ca, so a secret rides in their headers" do
      require "openssl"
      ca_key = OpenSSL::PKey::EC.generate("prime256v1")
      ca = certificate("/CN=CLI spec CA", ca_key, ca_key, nil, ca: true)
      key = OpenSSL::PKey::EC.generate("prime256v1")
      leaf = certificate("/CN=localhost", key, ca_key, ca, ca: false)
      context = OpenSSL::SSL::SSLContext.new
      context.cert = leaf
      context.key = key
      port = authorization_server(tls: context)
      ca_file = File.join(temporary_directory, "upstream-ca.pem")
      File.write(ca_file, ca.to_pem)
      out, err, status = cli_with(secret_environment, "run", "--provider", "bubblewrap", "--allow-private",
                                  "--inspect", "localhost:#{port}", "--upstream-ca", ca_file,
                                  "--secret", "api=CLI_SPEC_TOKEN@localhost:#{port}",
                                  "--", "sh", "-c", "#{request} https://localhost:#{port}/user")
      expect([out, err, status.exitstatus]).to eq(["saw Bearer #{secret_environment['CLI_SPEC_TOKEN']}", "", 0])
    end

    def certificate(subject, key, signer, issuer, ca:)
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

    it "prints each gateway refusal with its reason on stderr" do
      port = authorization_server
      script = "curl -s -o /dev/null -w '%{http_code}' http://localhost:1/elsewhere"
      out, err, status = cli("run", "--provider", "bubblewrap", "--allow-private", "--allow", "localhost:#{port}",
                             "--", "sh", "-c", script, chdir: work)
      expect([out, status.exitstatus]).to eq(["403", 0])
      expect(err).to match(/\Alittleghost-sandbox: gateway refused .*localhost:1.*: not_allowed/)
    end

    it "maps a name for the gateway with --resolve, as curl --resolve does" do
      port = authorization_server
      out, err, status = cli("run", "--provider", "bubblewrap", "--allow-private", "--allow", "api.example.test:#{port}",
                             "--resolve", "api.example.test=127.0.0.1",
                             "--", "curl", "-sS", "http://api.example.test:#{port}/", chdir: work)
      expect([out, err, status.exitstatus]).to eq(["saw none", "", 0])
    end

    it "maps a name with --resolve as uid 65534 and prints why an unreachable destination was refused" do
      prefix = drop_to_nobody!
      port = authorization_server
      closed = TCPServer.new("127.0.0.1", 0).then { |server| server.addr[1].tap { server.close } }
      shared = temporary_directory.tap { |dir| File.chmod(0o755, dir) }
      script = "curl -sS http://api.example.test:#{port}/; echo; curl -s -o /dev/null -w '%{http_code}' http://localhost:#{closed}/"
      out, err, status = Open3.capture3(*prefix, *command_line("run", "--provider", "bubblewrap", "--allow-private",
                                                               "--allow", "api.example.test:#{port}",
                                                               "--allow", "localhost:#{closed}",
                                                               "--resolve", "api.example.test=127.0.0.1",
                                                               "--", "sh", "-c", script),
                                        stdin_data: "", chdir: shared)
      expect([out, status.exitstatus]).to eq(["saw none\n502", 0]), err
      expect(err).to match(/\Alittleghost-sandbox: gateway refused connect localhost:#{closed}: upstream_unreachable \(cannot connect to the destination: 127\.0\.0\.1:#{closed}: .*refused/)
    end

    it "refuses --resolve without HOST=ADDR with exit 125" do
      out, err, status = cli("run", "--allow", "a.test:80", "--resolve", "a.test", "--", "true", chdir: work)
      expect([out, status.exitstatus]).to eq(["", 125])
      expect(err).to match(/--resolve needs HOST=ADDR/)
    end

    it "refuses --resolve giving one host two addresses with exit 125, not the last one silently" do
      out, err, status = cli("run", "--allow", "a.test:80", "--allow-private", "--resolve", "a.test=127.0.0.1",
                             "--resolve", "a.test=127.0.0.2", "--", "true", chdir: work)
      expect([out, status.exitstatus]).to eq(["", 125])
      expect(err).to match(/--resolve gives a\.test two addresses: 127\.0\.0\.1 and 127\.0\.0\.2/)
    end

    it "refuses --secret with exit 125 when its variable is unset, with --inherit-env, or with --network" do
      [[%w[--secret api=CLI_SPEC_UNSET_VARIABLE@localhost:80], /CLI_SPEC_UNSET_VARIABLE is not set/],
       [%w[--secret api=CLI_SPEC_TOKEN@localhost:80 --inherit-env], /--inherit-env: the command would inherit CLI_SPEC_TOKEN/],
       [%w[--secret api=CLI_SPEC_TOKEN@localhost:80 --network none], /--secret needs the allowlist/],
       [%w[--secret api-CLI_SPEC_TOKEN], /NAME=ENVVAR@HOST:PORT/]].each do |args, message|
        out, err, status = cli_with(secret_environment, "run", *args, "--", "true")
        expect([out, status.exitstatus]).to eq(["", 125])
        expect(err).to match(message)
      end
    end
  end

  describe "probe" do
    it "says which backends are available here and what they enforce" do
      out, _, status = cli("probe", chdir: work)
      expect(status.exitstatus).to eq(0)
      expect(out).to include("bubblewrap: available").and include("isolation:     namespace")
      expect(out).to match(/seatbelt: unavailable\n  reason: .*macOS/)
    end

    it "prints JSON naming bubblewrap available, with its features, network modes and isolation" do
      out, _, status = cli("probe", "--json", chdir: work)
      expect(status.exitstatus).to eq(0)
      report = JSON.parse(out)
      expect(report.keys).to include("native", "bubblewrap", "seatbelt", "unrestricted")
      expect(report["bubblewrap"]).to include("available" => true, "reason" => nil, "isolation" => "namespace")
      expect(report["bubblewrap"]["features"]).to include("filesystem_write", "process_tree_ownership")
      expect(report["bubblewrap"]["network_modes"]).to include("none")
      expect(report["seatbelt"]).to include("available" => false, "features" => [], "network_modes" => [])
      expect(report["seatbelt"]["reason"]).to include("macOS")
    end

    it "exits 1 when a --provider it was asked about is unavailable" do
      _, _, status = cli("probe", "--provider", "bubblewrap", chdir: work)
      expect(status.exitstatus).to eq(0)
      out, _, status = cli("probe", "--json", "--provider", "seatbelt", chdir: work)
      expect(status.exitstatus).to eq(1)
      expect(JSON.parse(out).keys).to eq(["seatbelt"])
    end
  end
end
