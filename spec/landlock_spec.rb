# frozen_string_literal: true

require "spec_helper"
require "socket"

# Landlock + seccomp (SPEC LL.1): every example has the child actually
# attempt the escape. Landlock does not need user namespaces, so these run in
# the ordinary spec process; spec/native_landlock_spec.rb repeats the core of
# them where user namespaces are blocked.
RSpec.describe LittleGhost::Sandboxes::Landlock do
  include ProcessHelpers

  before do
    skip "Landlock is unavailable here: #{described_class.probe[:reason]}" unless described_class.probe[:available]
  end

  let(:workspace) { open_workspace(paths: {source: "src", out: "out"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_only, source: :read_only, out: :read_write}} }
  let(:sandbox) { described_class.new(workspace: workspace, policy: policy) }

  before do
    next unless described_class.probe[:available]

    FileUtils.mkdir_p([File.join(root, "src"), File.join(root, "out")])
    File.write(File.join(root, "src", "code.rb"), "code")
  end

  after { sandbox.close }

  def sh(script, timeout: 10)
    sandbox.execute_program(["/bin/sh", "-c", script], timeout: timeout)
  end

  it "reports the kernel's ABI and what it enforces" do
    probe = described_class.probe
    expect(probe[:abi]).to be >= described_class::MINIMUM_ABI
    expect(probe[:capabilities].isolation).to eq(:landlock)
    expect(sandbox.capabilities.features).to include(:process_spawn_denial)
    # Tree ownership through a cgroup per launch, only where one can be made
    # (the helper alone dies with a supervisor killed from outside).
    owns_tree = LittleGhost::Sandbox.probe(:unrestricted)[:limits][:process_tree_ownership] == true
    expect(sandbox.capabilities.supports?(:process_tree_ownership)).to be(owns_tree)
    # :allowlist through the supervisor's connect interception (seccomp user notification, here on Linux 6.12+).
    expect(sandbox.capabilities.network_modes).to eq(%i[inherit none allowlist])
    expect(LittleGhost::Sandbox.resolve_provider(:landlock)).to eq(described_class)
  end

  it "enforces :allowlist networking through the built-in gateway" do
    allowlisted = described_class.new(workspace: workspace, policy: {network: {mode: :allowlist, allow: ["example.com:443"]}})
    expect(allowlisted.effective_policy.network.mode).to eq(:allowlist)
    expect(allowlisted.capabilities.supports?(:network, :allowlist)).to be(true)
  ensure
    allowlisted&.close
  end

  it "refuses reads outside grants and runtime roots, and writes to read-only grants" do
    secret = File.join(File.dirname(root), "lg-landlock-secret-#{Process.pid}")
    File.write(secret, "secret")
    result = sh("cat src/code.rb; cat #{secret} && echo READ-SECRET; cat /etc/hostname && echo READ-ETC; " \
                "echo x > src/code.rb && echo WROTE-SOURCE; echo x > new && echo WROTE-ROOT; " \
                "echo y > out/result && echo wrote-out; echo z > $TMPDIR/t && echo wrote-tmp; " \
                "echo w > /tmp/lg-landlock-escape && echo WROTE-TMP")
    expect(result.stdout).to start_with("code")
    expect(result.stdout).to include("wrote-out", "wrote-tmp")
    expect(result.stdout).not_to include("READ-SECRET", "READ-ETC", "WROTE-SOURCE", "WROTE-ROOT", "WROTE-TMP")
    expect(File.read(File.join(root, "src", "code.rb"))).to eq("code")
    expect(File.read(File.join(root, "out", "result"))).to eq("y\n")
    expect(File.exist?("/tmp/lg-landlock-escape")).to be(false)
  ensure
    File.delete(secret) if secret && File.exist?(secret)
  end

  it "refuses a scope launch that leaves out a grant Landlock would still show, never a wider view (W12)" do
    File.write(File.join(root, "out", "secret"), "SECRET")
    keeps_root = sandbox.scope(files: {root: :read_only, source: :read_only})
    expect { keeps_root.execute_program(["/bin/cat", "out/secret"], timeout: 10) }
      .to raise_error(LittleGhost::CapabilityError, %r{cannot hide .*/out from a scope})
    # A scope that leaves nothing out launches as usual.
    same = sandbox.scope(files: {root: :read_only, source: :read_only, out: :read_write})
    expect(same.execute_program(["/bin/cat", "out/secret"], timeout: 10).stdout).to eq("SECRET")
  end

  it "serves a writable grant nested inside a read-only one without widening the read-only one" do
    nested = described_class.new(workspace: workspace, policy: {files: {root: :read_only, source: :read_only, out: :read_write}})
    result = nested.execute_program(["/bin/sh", "-c", "echo x > src/code.rb && echo WROTE-SOURCE; echo z > top && echo WROTE-TOP; " \
                                                      "echo y > out/new && echo wrote-out; mv src/code.rb out/ && echo MOVED"],
                                    timeout: 10)
    expect(result.stdout).to include("wrote-out")
    expect(result.stdout).not_to include("WROTE-SOURCE", "WROTE-TOP", "MOVED")
    expect(File.read(File.join(root, "src", "code.rb"))).to eq("code")
  ensure
    nested&.close
  end

  it "cannot reach a host TCP listener on 127.0.0.1 or a host abstract Unix socket under :none" do
    server = TCPServer.new("127.0.0.1", 0)
    name = "lg-landlock-#{Process.pid}"
    abstract = Socket.new(:UNIX, :STREAM)
    abstract.bind(Socket.pack_sockaddr_un("\0#{name}"))
    abstract.listen(1)
    python = <<~PY
      import socket
      for attempt in ("tcp", "abstract"):
          try:
              if attempt == "tcp":
                  socket.create_connection(("127.0.0.1", #{server.addr[1]}), timeout=5)
              else:
                  s = socket.socket(socket.AF_UNIX); s.connect("\\0#{name}")
              print(attempt, "CONNECTED")
          except OSError as error:
              print(attempt, "refused", error.errno)
    PY
    result = sandbox.execute_program(["/usr/bin/python3", "-c", python], timeout: 10)
    expect(result.stdout).to include("tcp refused", "abstract refused")
    expect(result.stdout).not_to include("CONNECTED")
  ensure
    server&.close
    abstract&.close
  end

  # Landlock below ABI 9 does not mediate a pathname Unix socket, and a
  # datagram socket from `socketpair` may `sendto` any path (docs/security.md,
  # "Landlock"): under :none a pair is a stream or a sequenced-packet one.
  it "cannot send to a host's pathname datagram socket under :none, not even from a socket pair" do
    path = File.join(Dir.tmpdir, "lg-dgram-#{Process.pid}.sock")
    host = Socket.new(:UNIX, :DGRAM)
    host.bind(Socket.pack_sockaddr_un(path))
    python = <<~PY
      import socket
      try:
          near, far = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
          near.sendto(b"FROM-THE-SANDBOX", #{path.inspect})
          print("SENT")
      except OSError as error:
          print("refused", error.errno)
      near, far = socket.socketpair()
      near.sendall(b"ok"); print("stream pair", far.recv(2).decode())
    PY
    result = sandbox.execute_program(["/usr/bin/python3", "-c", python], timeout: 10)
    expect(result.stdout).to include("refused 1", "stream pair ok")
    expect(result.stdout).not_to include("SENT")
    expect(host.recvmsg_nonblock(64, exception: false)).to eq(:wait_readable)
  ensure
    host&.close
    File.unlink(path) if path && File.exist?(path)
  end

  it "cannot signal the Ruby process" do
    received = false
    previous = trap("USR1") { received = true }
    result = sh("kill -USR1 #{Process.pid} && echo SIGNALLED")
    expect(result.stdout).not_to include("SIGNALLED")
    expect(received).to be(false)
  ensure
    trap("USR1", previous || "DEFAULT")
  end

  it "stops fork when subprocesses are not allowed, and allows it otherwise" do
    denied = sandbox.start_program(["/bin/sh", "-c", "/bin/true && echo SPAWNED; echo done"], allow_subprocesses: false)
    denied.wait(timeout: 10)
    expect(denied.read(timeout: 1).stdout).not_to include("SPAWNED")
    expect(sh("/bin/true && echo spawned").stdout).to eq("spawned\n")
  ensure
    denied&.close
  end

  it "leaves no descendant alive after a timeout" do
    pid_file = File.join(root, "out", "pid")
    expect do
      sh("setsid /bin/sleep 1000 & echo $! > out/pid; wait", timeout: 1)
    end.to raise_error(LittleGhost::ToolError)
    pid = read_pid(pid_file)
    expect(eventually { !process_alive?(pid) }).to be(true)
  end

  it "gives each sandbox a private TMPDIR, removed at close" do
    tmpdir = sh("echo $TMPDIR").stdout.strip
    expect(tmpdir).to eq(sandbox.tmpdir)
    expect(File.stat(tmpdir).mode & 0o777).to eq(0o700)
    sandbox.close
    expect(File.exist?(tmpdir)).to be(false)
  end
end
