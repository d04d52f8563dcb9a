# frozen_string_literal: true

require "spec_helper"
require "socket"

# Escape attempts made from inside a Bubblewrap child. The suite runs as
# root, so every denial here must come from namespaces, mount flags or the
# seccomp filter, never from file modes: each example also checks that the
# host side is unchanged.
RSpec.describe "Bubblewrap escapes" do # rubocop:disable RSpec/DescribeClass
  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  let(:bubblewrap) { LittleGhost::Sandboxes::Bubblewrap }
  let(:workspace) { open_workspace(paths: {source: "src", cache: "cache"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write}} }

  # A host directory outside /tmp and /run (those are tmpfs in every root mode).
  let(:outside) do
    directory = File.realpath(Dir.mktmpdir("lg-outside", "/var/tmp"))
    (@temporary_directories ||= []) << directory
    File.write(File.join(directory, "secret.txt"), "host secret")
    directory
  end
  let(:secret) { File.join(outside, "secret.txt") }

  def sandbox_for(root_filesystem: :isolated, network: nil, **options)
    bubblewrap.new(workspace: workspace, policy: policy.merge(root_filesystem: root_filesystem, network: network), **options)
  end

  def sh(sandbox, script, **options)
    sandbox.execute_program(["/bin/sh", "-c", script], timeout: 10, **options)
  end

  it "hides a host file outside the grants under :isolated" do
    result = sh(sandbox_for, "cat #{secret}; ls #{outside}")
    expect(result.stdout).to eq("")
    expect(result.stderr).to include("No such file or directory")
    expect(result.exit_code).not_to eq(0)
  end

  it "shows the host read-only under :read_only: it can be read but not changed" do
    sandbox = sandbox_for(root_filesystem: :read_only)
    expect(sh(sandbox, "cat #{secret}").stdout).to eq("host secret")
    result = sh(sandbox, "echo changed > #{secret}; rm -f #{secret}; touch #{outside}/new")
    expect(result.stderr).to include("Read-only file system")
    expect(snapshot(outside)).to eq("secret.txt" => [:file, "host secret", File.stat(secret).mode])
  end

  it "cannot write outside writable grants" do
    result = sh(sandbox_for, "touch /usr/lg-escape; touch /lg-escape; touch #{outside}/new; echo $?")
    expect(result.stderr).to include("Read-only file system")
    expect(File.exist?("/usr/lg-escape")).to be(false)
    expect(File.exist?("/lg-escape")).to be(false)
    expect(File.exist?(File.join(outside, "new"))).to be(false)
  end

  it "cannot write into a read-only grant nested under the writable root" do
    File.write(File.join(root, "src", "main.rb"), "original")
    before = snapshot(File.join(root, "src"))
    result = sh(sandbox_for, "echo changed > src/main.rb; rm -f src/main.rb; touch src/new; mv src/main.rb x")
    expect(result.stderr).to include("Read-only file system")
    expect(snapshot(File.join(root, "src"))).to eq(before)
    expect(sh(sandbox_for, "echo ok > written.txt").exit_code).to eq(0)
    expect(File.read(File.join(root, "written.txt"))).to eq("ok\n")
  end

  it "keeps a read-only grant read-only when a scope selected only the writable root" do
    File.write(File.join(root, "src", "main.rb"), "original")
    sandbox = sandbox_for
    scope = sandbox.scope(files: [:root])
    result = sandbox.execute_program(["/bin/sh", "-c", "echo changed > src/main.rb"], timeout: 10, scope: scope)
    expect(result.stderr).to include("Read-only file system")
    expect(File.read(File.join(root, "src", "main.rb"))).to eq("original")
  end

  it "cannot reach a runtime path that a scope dropped (W12)" do
    File.write(File.join(root, "cache", "token"), "runtime secret")
    sandbox = sandbox_for
    scope = sandbox.scope(files: [:root], runtime_paths: [])
    result = sandbox.execute_program(["/bin/sh", "-c", "ls -A cache; cat cache/token; echo x > cache/token"],
                                     timeout: 10, scope: scope)
    expect(result.stdout).to eq("")
    expect(result.stderr).to include("No such file or directory")
    expect(File.read(File.join(root, "cache", "token"))).to eq("runtime secret")
    expect { sandbox.execute_program(["/bin/true"], timeout: 10, scope: scope, cwd: "cache") }
      .to raise_error(LittleGhost::ToolError, /outside the selected scope: .*cache/)
    # The full sandbox still reaches it.
    expect(sh(sandbox, "cat cache/token").stdout).to eq("runtime secret")
  end

  describe "networking" do
    let(:server) { TCPServer.new("127.0.0.1", 0) }
    let(:port) { server.addr[1] }
    let(:client) do
      "require 'socket'; begin; s = TCPSocket.new('127.0.0.1', #{port}); s.write('hello'); s.close; print 'connected'; " \
        "rescue SystemCallError => e; print e.class; end"
    end

    after { server.close }

    def accepted_within(server, seconds)
      return nil unless server.wait_readable(seconds)

      connection = server.accept
      data = connection.read
      connection.close
      data
    end

    it "cannot connect to a host TCP server under :none" do
      result = sandbox_for.execute_program(["/usr/bin/ruby", "--disable-gems", "-e", client], timeout: 10)
      expect(result.stdout).to eq("Errno::ECONNREFUSED")
      expect(accepted_within(server, 0.2)).to be_nil
    end

    it "connects under :inherit" do
      sandbox = sandbox_for(network: :inherit)
      reader = Thread.new { accepted_within(server, 10) }
      result = sandbox.execute_program(["/usr/bin/ruby", "--disable-gems", "-e", client], timeout: 10)
      expect(result.stdout).to eq("connected")
      expect(reader.value).to eq("hello")
    end
  end

  describe "host processes" do
    let!(:host_pid) { Process.spawn("/bin/sleep", "30", pgroup: true) }

    after do
      Process.kill(:KILL, host_pid)
      Process.wait(host_pid)
    end

    it "cannot see or signal a host process by PID" do
      result = sh(sandbox_for, "ls /proc/#{host_pid} >/dev/null 2>&1 && echo visible; kill -TERM #{host_pid} && echo signalled; kill -0 1 && echo own-pid1")
      expect(result.stdout).to eq("own-pid1\n")
      expect(Process.waitpid(host_pid, Process::WNOHANG)).to be_nil
    end

    it "cannot ptrace a host process" do
      skip "python3 is not in /usr/bin" unless File.executable?("/usr/bin/python3")

      script = "import ctypes; libc = ctypes.CDLL(None, use_errno=True); " \
               "print(libc.ptrace(16, #{host_pid}, 0, 0), ctypes.get_errno())"
      result = sandbox_for.execute_program(["/usr/bin/python3", "-c", script], timeout: 10)
      expect(result.stdout).to eq("-1 3\n") # ESRCH: the PID does not exist in the sandbox
      expect(File.read("/proc/#{host_pid}/status")[/^State:\s+(\S)/, 1]).to eq("S")
    end
  end

  it "cannot mount, unshare or remount from inside" do
    File.write(File.join(root, "cache", "token"), "runtime secret")
    sandbox = sandbox_for
    scope = sandbox.scope(files: [:root], runtime_paths: [])
    script = "mount -t tmpfs none src && echo mounted; mount -o remount,rw src && echo remounted; " \
             "unshare -m true && echo unshared; unshare -Urm sh -c 'umount cache && cat cache/token' && echo unmasked; " \
             "echo x > src/f && echo wrote"
    result = sandbox.execute_program(["/bin/sh", "-c", script], timeout: 10, scope: scope)
    expect(result.stdout).to eq("")
    expect(File.exist?(File.join(root, "src", "f"))).to be(false)
  end

  # Host processes whose environment carries `token` (survivors of a sandbox).
  def host_processes_with(token)
    Dir.glob("/proc/[0-9]*/environ").count do |path|
      File.binread(path).include?(token)
    rescue SystemCallError
      false
    end
  end

  # Shell that polls inside the sandbox until the daemon carrying +token+ in
  # its environment runs, so "started" means it really started (the call's
  # timeout is the deadline).
  def wait_for_daemon(token)
    "until grep -qs #{token} /proc/[0-9]*/environ; do sleep 0.01; done"
  end

  it "ends a setsid daemon when the call returns" do
    token = "LG_TOKEN=daemon-#{Process.pid}-#{rand(1_000_000)}"
    script = "setsid /usr/bin/env #{token} /bin/sleep 30 </dev/null >/dev/null 2>&1 & #{wait_for_daemon(token)}; echo started"
    expect(sh(sandbox_for, script).stdout).to eq("started\n")
    expect(ProcessHelpers.eventually { host_processes_with(token).zero? }).to be(true)
  end

  it "ends a setsid daemon when the session closes" do
    token = "LG_TOKEN=session-#{Process.pid}-#{rand(1_000_000)}"
    session = sandbox_for.start_program(
      ["/bin/sh", "-c", "setsid /usr/bin/env #{token} /bin/sleep 30 </dev/null >/dev/null 2>&1 & #{wait_for_daemon(token)}; echo started; exec /bin/sleep 30"]
    )
    expect(session.read(timeout: 5).stdout).to eq("started\n")
    expect(host_processes_with(token)).to eq(1) # the daemon is really running
    session.close
    expect(ProcessHelpers.eventually { host_processes_with(token).zero? }).to be(true)
  end

  it "stops a fork bomb under allow_subprocesses: false while threads still work" do
    sandbox = sandbox_for
    bomb = sandbox.start_program(["/bin/sh", "-c", "bomb() { bomb | bomb & }; bomb; echo survived"], allow_subprocesses: false)
    status = bomb.wait(timeout: 10)
    output = bomb.read(timeout: 1)
    expect(status.exitstatus).not_to eq(0)
    expect(output.stdout).to eq("")
    expect(output.stderr).to include("Cannot fork")
    bomb.close
    threads = sandbox.start_program(["/usr/bin/ruby", "--disable-gems", "-e", "print 4.times.map { |i| Thread.new { i } }.sum(&:value)"],
                                    allow_subprocesses: false)
    expect(threads.wait(timeout: 10).exitstatus).to eq(0)
    expect(threads.read(timeout: 1).stdout).to eq("6")
  ensure
    threads&.close
  end

  it "scrubs the host environment unless both the policy and the call inherit" do
    ENV["LG_HOST_SECRET"] = "leaked"
    plain = sandbox_for.execute_program(["/usr/bin/env"], timeout: 10, inherit_environment: true)
    expect(plain.stdout).not_to include("LG_HOST_SECRET")
    inheriting = bubblewrap.new(workspace: workspace, policy: policy.merge(environment: {inherit: true, set: {"EXTRA" => "1"}}))
    expect(inheriting.execute_program(["/usr/bin/env"], timeout: 10).stdout).not_to include("LG_HOST_SECRET")
    both = inheriting.execute_program(["/usr/bin/env"], timeout: 10, inherit_environment: true, environment: {"CALL" => 2})
    expect(both.stdout).to include("LG_HOST_SECRET=leaked", "EXTRA=1", "CALL=2")
  ensure
    ENV.delete("LG_HOST_SECRET")
  end

  it "refuses a working directory outside the scope" do
    sandbox = sandbox_for
    [["/etc"], [outside], ["/usr"]].each do |(cwd)|
      expect { sandbox.execute_program(["/bin/true"], timeout: 10, cwd: cwd) }
        .to raise_error(LittleGhost::ToolError, /sandbox working directory is outside the selected scope: #{Regexp.escape(cwd)}/)
    end
    expect { sandbox.start_program(["/bin/true"], cwd: "/etc") }.to raise_error(LittleGhost::ToolError, %r{: /etc})
  end

  it "never runs unsandboxed when bwrap is missing" do
    marker = File.join(root, "ran")
    sandbox = bubblewrap.new(workspace: workspace, policy: policy, bubblewrap: "/nonexistent/bwrap")
    expect { sandbox.execute_program(["/usr/bin/touch", marker], timeout: 10) }
      .to raise_error(LittleGhost::DependencyError, /not installed at \/nonexistent\/bwrap/)
    expect { sandbox.start_program(["/usr/bin/touch", marker]) }.to raise_error(LittleGhost::DependencyError)
    expect(File.exist?(marker)).to be(false)
  end
end
