# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# SPEC LL.2 where user namespaces are blocked: a Ruby process started inside
# `bwrap --unshare-user --disable-userns` cannot create a user namespace
# (exactly as in a locked-down container), so `:native` must pick Landlock
# and still confine the child. Inside a real container (bin/container-test)
# Bubblewrap is already unavailable and bwrap cannot nest, so the Ruby
# process is started directly. The inner script reports what the child
# managed to do; this spec asserts nothing escaped.
RSpec.describe "Native without user namespaces" do
  BWRAP = "/usr/bin/bwrap"
  LOCKED_DOWN = [BWRAP, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"].freeze

  INNER = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    require "socket"
    require "tmpdir"
    report = {}
    Dir.mktmpdir("lg-native-landlock") do |dir|
      dir = File.realpath(dir)
      Dir.mkdir(File.join(dir, "src"))
      File.write(File.join(dir, "src", "code"), "code")
      secret = File.join(File.dirname(dir), "lg-native-secret-#{Process.pid}")
      File.write(secret, "secret")
      workspace = LittleGhost::Workspace.new(root: dir, paths: {source: "src"}).open
      probe = LittleGhost::Sandboxes::Native.probe
      report["probe_backend"] = probe[:backend].to_s
      report["bubblewrap_reason"] = probe[:bubblewrap_reason].to_s
      native = LittleGhost::Sandboxes::Native.new(workspace: workspace,
                                                  policy: {files: {root: :read_only, source: :read_only}})
      report["backend"] = native.backend.class.name
      report["isolation"] = native.capabilities.isolation.to_s
      server = TCPServer.new("127.0.0.1", 0)
      script = "cat #{secret} && echo READ-SECRET; echo x > src/code && echo WROTE-SOURCE; " \
               "echo x > /tmp/lg-native-escape-#{Process.pid} && echo WROTE-OUTSIDE; " \
               "kill -0 #{Process.pid} && echo SIGNALLED; " \
               "/usr/bin/python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", #{server.addr[1]}), timeout=5); print(\"CONNECTED\")'; " \
               "echo done"
      report["stdout"] = native.execute_program(["/bin/sh", "-c", script], timeout: 20).stdout
      session = native.start_program(["/bin/sh", "-c", "/bin/true && echo SPAWNED"], allow_subprocesses: false)
      session.wait(timeout: 10)
      report["no_subprocesses"] = session.read(timeout: 1).stdout
      session.close
      begin
        native.execute_program(["/bin/sh", "-c", "setsid /bin/sleep 1000 & echo $! > $TMPDIR/pid; wait"], timeout: 1)
      rescue LittleGhost::ToolError
        report["timed_out"] = true
      end
      pid = File.read(File.join(native.backend.tmpdir, "pid")).to_i
      report["sleeper_alive"] = begin
        Process.kill(0, pid)
        true
      rescue Errno::ESRCH
        false
      end
      report["source"] = File.read(File.join(dir, "src", "code"))
      report["escaped_file"] = File.exist?("/tmp/lg-native-escape-#{Process.pid}")
      native.close
      File.delete(secret)
    end
    puts JSON.generate(report)
  RUBY

  # The command prefix that puts a process where user namespaces are blocked: none where they already
  # are (inside a container: bin/container-test runs this file there), else `bwrap --disable-userns`.
  let(:locked_down) do
    next [] unless LittleGhost::Sandboxes::Bubblewrap.probe[:available]

    _, _, status = Open3.capture3(*LOCKED_DOWN, "/bin/true")
    status.success? ? LOCKED_DOWN : nil
  end

  before do
    skip "Landlock is unavailable here" unless LittleGhost::Sandboxes::Landlock.probe[:available]
    skip "bwrap cannot run here to lock user namespaces" if locked_down.nil?
  end

  it "picks Landlock and confines the child" do
    lib = File.expand_path("../lib", __dir__)
    stdout, stderr, status = Open3.capture3(*locked_down, RbConfig.ruby, "-I", lib, "-e", INNER)
    expect(status).to be_success, stderr
    report = JSON.parse(stdout.lines.last)
    expect(report["probe_backend"]).to eq("landlock")
    expect(report["bubblewrap_reason"]).to include("Bubblewrap")
    expect(report["backend"]).to eq("LittleGhost::Sandboxes::Landlock")
    expect(report["isolation"]).to eq("landlock")
    expect(report["stdout"]).to end_with("done\n")
    expect(report["stdout"]).not_to include("READ-SECRET", "WROTE-SOURCE", "WROTE-OUTSIDE", "SIGNALLED", "CONNECTED")
    expect(report["no_subprocesses"]).not_to include("SPAWNED")
    expect(report["timed_out"]).to be(true)
    expect(report["sleeper_alive"]).to be(false)
    expect(report["source"]).to eq("code")
    expect(report["escaped_file"]).to be(false)
  end

  it "passes the whole Landlock suite where user namespaces are blocked" do
    # The same attacks as spec/landlock_spec.rb (hidden reads, read-only writes, sockets, signals, fork,
    # timeouts, close), run by an RSpec process that cannot create a user namespace.
    root = File.expand_path("..", __dir__)
    rspec = Gem.bin_path("rspec-core", "rspec")
    stdout, stderr, status = Open3.capture3(*locked_down, RbConfig.ruby, rspec, "--no-color",
                                            "spec/landlock_spec.rb", "spec/landlock_hardening_spec.rb", chdir: root)
    expect(status).to be_success, stdout + stderr
    expect(stdout).to match(/(\d+) examples, 0 failures/)
    expect(stdout[/(\d+) examples/, 1].to_i).to be >= 9
    expect(stdout).not_to match(/pending/i)
  end
end
