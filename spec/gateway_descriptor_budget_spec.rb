# frozen_string_literal: true

require "spec_helper"
require "open3"
require "json"
require "rbconfig"

# Each connection the built-in gateway serves costs the host's Ruby process descriptors (the client's
# socket and the upstream one). A child that connects straight to the gateway's socket, over and over, holding every
# tunnel open, must meet the gateway's descriptor budget (derived from RLIMIT_NOFILE) and get 503s that are recorded
# as denials, while the host's own File.open, execute_program and sandbox.read keep working. The host runs in a
# subprocess whose soft NOFILE limit is lowered to 96, so the attack needs only a couple of hundred connections.
RSpec.describe "The built-in gateway's descriptor budget" do # rubocop:disable RSpec/DescribeClass
  attacker = <<~'RUBY'
    require "socket"
    socket_path, port, count = ARGV[0], Integer(ARGV[1]), Integer(ARGV[2])
    Process.setrlimit(:NOFILE, Process.getrlimit(:NOFILE)[1])
    upstream = TCPServer.new("127.0.0.1", port)
    held = []
    Thread.new { loop { held << upstream.accept } }
    answers = Hash.new(0)
    count.times do
      client = UNIXSocket.new(socket_path)
      client.write("CONNECT 127.0.0.1:#{port} HTTP/1.1\r\nHost: 127.0.0.1:#{port}\r\n\r\n")
      status = client.gets.to_s[/\AHTTP\/1\.1 (\d+)/, 1] || "none"
      answers[status] += 1
      held << client
    rescue SystemCallError => e
      answers[e.class.name] += 1
    end
    puts answers.map { |status, n| "#{status}=#{n}" }.join(",")
    $stdout.flush
    sleep
  RUBY

  host = <<~'RUBY'
    require "littleghost/sandbox"
    require "socket"
    require "json"
    require "tmpdir"
    attacker, soft = ARGV[0], Integer(ARGV[1])
    def check
      "ok:#{yield}"
    rescue StandardError => e
      "#{e.class}: #{e.message}"
    end
    Process.setrlimit(:NOFILE, soft, Process.getrlimit(:NOFILE)[1])
    probe = TCPServer.new("127.0.0.1", 0)
    port = probe.addr[1]
    probe.close
    gateway = LittleGhost::Network::BuiltinGateway.new(allow: ["127.0.0.1:#{port}"], allow_private_destinations: true)
    gateway.open
    out, pid = nil
    Dir.mktmpdir("budget") do |dir|
      workspace = LittleGhost::Workspace.new(root: dir).open
      File.write(File.join(dir, "a.txt"), "hello")
      sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}}).open
      reader, writer = IO.pipe
      pid = Process.spawn(RbConfig.ruby, "-e", attacker, gateway.proxy_mount_path, port.to_s, "300", out: writer)
      writer.close
      answers = reader.gets.to_s.strip
      reader.close
      files = check { Array.new(8) { File.open(File.join(dir, "a.txt")) }.each(&:close).size }
      run = check { sandbox.execute_program(["/bin/echo", "ran"], timeout: 20).stdout.strip }
      read = check { sandbox.read("a.txt") }
      reasons = gateway.denials.map { |d| d.reason.to_s }.uniq
      out = {answers: answers, files: files, run: run, read: read, reasons: reasons}
      sandbox.close
      workspace.close
    end
    Process.kill(:KILL, pid)
    Process.wait(pid)
    gateway.close
    puts JSON.generate(out)
  RUBY

  it "refuses a child's flood of tunnels with 503 denials before the host process runs out of descriptors" do
    lib = File.expand_path("../lib", __dir__)
    output, status = Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", host, attacker, "96")
    expect(status).to be_success, output
    result = JSON.parse(output.lines.last, symbolize_names: true)
    expect(result[:files]).to eq("ok:8"), result.inspect
    expect(result[:run]).to eq("ok:ran"), result.inspect
    expect(result[:read]).to eq("ok:hello"), result.inspect
    answers = result[:answers].split(",").to_h { |pair| pair.split("=") }
    expect(answers["503"].to_i).to be > 0, result.inspect
    expect(answers["200"].to_i).to be > 0, result.inspect
    expect(result[:reasons]).to eq(["descriptor_budget"])
  end

  context "with a sandboxed child under Bubblewrap" do
    probe = LittleGhost::Sandboxes::Bubblewrap.probe
    before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

    # Inside the sandbox: connect to the gateway's socket (mounted read-only at the same path) COUNT times, send
    # nothing, and hold every connection; then count the 503s.
    flood = <<~'CHILD'
      require "socket"
      Process.setrlimit(:NOFILE, Process.getrlimit(:NOFILE)[1])
      path, count = ARGV[0], Integer(ARGV[1])
      held = []
      errors = 0
      count.times do
        held << UNIXSocket.new(path)
      rescue SystemCallError
        errors += 1
      end
      sleep 2
      refused = held.count { |s| s.read_nonblock(64, exception: false).to_s.start_with?("HTTP/1.1 503") }
      puts "held=#{held.size} refused=#{refused} errors=#{errors}"
      $stdout.flush
      sleep
    CHILD

    sandboxed_host = <<~'RUBY'
      require "littleghost/sandbox"
      require "json"
      require "tmpdir"
      flood = ARGV[0]
      Process.setrlimit(:NOFILE, 128, Process.getrlimit(:NOFILE)[1])
      def check
        "ok:#{yield}"
      rescue StandardError => e
        "#{e.class}: #{e.message}"
      end
      Dir.mktmpdir("budget") do |dir|
        File.write(File.join(dir, "a.txt"), "hello")
        workspace = LittleGhost::Workspace.new(root: dir).open
        network = {mode: :allowlist, allow: ["127.0.0.1:9"], gateway: {provider: :builtin, allow_private_destinations: true}}
        sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace,
                                                         policy: {files: {root: :read_write}, network: network}).open
        session = sandbox.start_program(["/usr/bin/ruby", "-e", flood, sandbox.gateway.proxy_mount_path, "300"])
        report = +""
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
        until report.include?("\n") || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
          chunk = session.read(timeout: 1)
          report << chunk.stdout << chunk.stderr
          break if chunk.eof
        end
        result = {
          child: report.strip,
          files: check { Array.new(8) { File.open(File.join(dir, "a.txt")) }.each(&:close).size },
          run: check { sandbox.execute_program(["/bin/echo", "ran"], timeout: 20).stdout.strip },
          read: check { sandbox.read("a.txt") },
          reasons: sandbox.gateway.denials.map { |d| d.reason.to_s }.uniq,
          events: sandbox.denials.select { |d| d.kind == :network }.map { |d| d.reason.to_s }.uniq
        }
        session.close
        sandbox.close
        workspace.close
        puts JSON.generate(result)
      end
    RUBY

    it "keeps the host's File.open, execute_program and read working while the child floods the gateway's socket" do
      output, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "-e", sandboxed_host,
                                       flood)
      expect(status).to be_success, output
      result = JSON.parse(output.lines.last, symbolize_names: true)
      expect(result[:child]).to match(/\Aheld=300 refused=(\d+) errors=0\z/), result.inspect
      expect(result[:child][/refused=(\d+)/, 1].to_i).to be > 200, result.inspect
      expect(result.values_at(:files, :run, :read)).to eq(["ok:8", "ok:ran", "ok:hello"]), result.inspect
      expect(result[:reasons]).to eq(["descriptor_budget"])
      expect(result[:events]).to eq(["descriptor_budget"])
    end
  end
end
