# frozen_string_literal: true

require "spec_helper"
require "open3"
require "json"
require "rbconfig"

# Issue 18, item 6. Each connection the built-in gateway serves costs the host's Ruby process descriptors (the client's
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
      reasons = gateway.denials.map { |d| d[:reason].to_s }.uniq
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
end
