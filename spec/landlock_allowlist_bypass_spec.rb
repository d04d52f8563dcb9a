# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"

# Allowlists under Landlock (docs/security.md, "Allowlists under Landlock"): the child shares the host's network, so
# every way a destination can reach the kernel is attacked from inside a sandbox whose allowlist names nothing the
# attack wants. A second Landlock sandbox allows the attack's target (a listener on the host's loopback) through its
# own gateway; the attacker must reach neither the target nor that gateway. Each run is a separate Ruby process, as
# root and as uid 65534; the attack is a Python program (raw sockets through ctypes).
RSpec.describe "Landlock allowlist bypass attempts" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  before do
    reason = AllowlistBackends.unavailable(:landlock)
    skip reason if reason
    skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
  end

  BYPASS_RACES = 10_000

  BYPASS_ATTACK = <<~PYTHON
    import ctypes, errno, os, socket, struct, sys, threading
    target_port = int(sys.argv[1])
    other_gateway = sys.argv[2]
    libc = ctypes.CDLL(None, use_errno=True)

    def outcome(attempt):
        try:
            attempt()
            return "ok"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    def report(name, value):
        print(f"{name}: {value}", flush=True)

    # A second thread rewrites the address between the proxy and the target while connect runs.
    def sockaddr(ip, port):
        return struct.pack("=H", socket.AF_INET) + struct.pack("!H", port) + socket.inet_aton(ip) + bytes(8)
    proxy, target = sockaddr("127.0.0.1", 3128), sockaddr("127.0.0.1", target_port)
    address = ctypes.create_string_buffer(proxy, 16)
    done = False
    def rewrite():
        while not done:
            ctypes.memmove(address, target, 16)
            ctypes.memmove(address, proxy, 16)
    rewriter = threading.Thread(target=rewrite)
    rewriter.start()
    counts = {"connected": 0, "refused": 0, "other": 0}
    for _ in range(#{BYPASS_RACES}):
        s = socket.socket()
        if libc.connect(s.fileno(), address, 16) == 0:
            counts["connected"] += 1
        elif ctypes.get_errno() == errno.ECONNREFUSED:
            counts["refused"] += 1
        else:
            counts["other"] += 1
        s.close()
    done = True
    rewriter.join()
    report("race", " ".join(f"{k}={v}" for k, v in counts.items()))

    report("fast open", outcome(lambda: socket.socket().sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", target_port))))
    report("sendto with an address", outcome(lambda: socket.socket().sendto(b"x", ("127.0.0.1", target_port))))
    report("udp socket", outcome(lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)))
    report("datagram pair", outcome(lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)))
    report("raw socket", outcome(lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)))
    report("packet socket", outcome(lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)))
    report("netlink socket", outcome(lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)))
    setup = libc.syscall(425, 8, ctypes.create_string_buffer(120))
    report("io_uring", "ok" if setup >= 0 else errno.errorcode[ctypes.get_errno()])

    # A socket made here, passed over SCM_RIGHTS to another process, which connects it.
    near, far = socket.socketpair()
    child = os.fork()
    if child == 0:
        passed = socket.socket(fileno=socket.recv_fds(far, 1, 1)[1][0])
        os.write(1, f"passed socket: {outcome(lambda: passed.connect(('127.0.0.1', target_port)))}\\n".encode())
        os._exit(0)
    made = socket.socket()
    socket.send_fds(near, [b"x"], [made.fileno()])
    os.waitpid(child, 0)

    # The gateway's port on other addresses of this host.
    for host in ["127.0.0.2", "0.0.0.0"]:
        report(f"gateway port on {host}", outcome(lambda: socket.create_connection((host, 3128), timeout=5)))
    report("gateway port on ::1", outcome(lambda: socket.create_connection(("::1", 3128), timeout=5)))

    # Another sandbox's gateway: its socket, then its destination through this sandbox's own gateway.
    report("unix socket", outcome(lambda: socket.socket(socket.AF_UNIX).connect(other_gateway)))
    own = socket.create_connection(("127.0.0.1", 3128), timeout=10)
    own.sendall(f"CONNECT 127.0.0.1:{target_port} HTTP/1.1\\r\\nHost: 127.0.0.1:{target_port}\\r\\n\\r\\n".encode())
    report("target through the own gateway", own.recv(64).split(b"\\r\\n")[0].decode())
  PYTHON

  # Opens both sandboxes (in a fresh directory the running user owns), runs the attack, and reports as JSON.
  BYPASS_RUNNER = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    require "socket"
    require "tmpdir"
    attack = ARGV.fetch(0)
    target = TCPServer.new("127.0.0.1", 0)
    port = target.addr[1]
    workspace = LittleGhost::Workspace.new(root: Dir.mktmpdir("lg-landlock-bypass"))
    gateway = {provider: :builtin, allow_private_destinations: true}
    other = LittleGhost::Sandboxes::Landlock.new(workspace: workspace,
                                                 policy: {network: {allow: ["127.0.0.1:#{port}"], gateway: gateway}})
    other.open
    attacker = LittleGhost::Sandboxes::Landlock.new(workspace: workspace,
                                                    policy: {network: {allow: ["localhost:1"], gateway: gateway}})
    attacker.open
    result = attacker.execute_program(["/usr/bin/python3", "-c", attack, port.to_s, other.gateway.proxy_mount_path],
                                      timeout: 600)
    accepted = 0
    begin
      loop do
        target.accept_nonblock.close
        accepted += 1
      end
    rescue IO::WaitReadable
      nil
    end
    report = {stdout: result.stdout, stderr: result.stderr, exit_code: result.exit_code, accepted: accepted,
              port: port, denied: attacker.denials.map(&:target).uniq,
              other_served: other.gateway.denials.size + other.network_log.size}
    attacker.close
    other.close
    puts JSON.generate(report)
  RUBY

  def attack(*prefix)
    lib = File.expand_path("../lib", __dir__)
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", BYPASS_RUNNER, BYPASS_ATTACK, chdir: "/tmp")
    raise "#{prefix.inspect} failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  end

  def expect_nothing_reached(report)
    expect(report[:exit_code]).to eq(0), report[:stderr]
    lines = report[:stdout].lines.to_h { |line| line.chomp.split(": ", 2) }
    race = lines.fetch("race").split.to_h { |pair| pair.split("=") }.transform_values(&:to_i)
    # Both addresses were read by the supervisor (the race was live), and neither won the target.
    expect(race["connected"]).to be > 0
    expect(race["refused"]).to be > 0
    expect(race.values.sum).to eq(BYPASS_RACES)
    expect(lines.fetch("fast open")).to eq("EPERM")
    expect(lines.fetch("sendto with an address")).to match(/EPIPE|ENOTCONN/)
    %w[udp\ socket datagram\ pair raw\ socket packet\ socket netlink\ socket io_uring unix\ socket].each do |name|
      expect(lines.fetch(name)).to eq("EPERM"), "#{name}: #{lines[name]}"
    end
    expect(lines.fetch("passed socket")).to eq("ECONNREFUSED")
    ["127.0.0.2", "0.0.0.0", "::1"].each do |host|
      expect(lines.fetch("gateway port on #{host}")).to eq("ECONNREFUSED")
    end
    expect(lines.fetch("target through the own gateway")).to match(%r{\AHTTP/1\.1 403})
    # The target and the other sandbox's gateway saw nothing; the refusals name the address tried.
    expect(report[:accepted]).to eq(0)
    expect(report[:other_served]).to eq(0)
    expect(report[:denied]).to include("127.0.0.1:#{report[:port]}", "127.0.0.2:3128")
  end

  it "reaches neither the target nor another sandbox's gateway, as root" do
    expect_nothing_reached(attack)
  end

  it "reaches neither the target nor another sandbox's gateway, as uid 65534" do
    expect_nothing_reached(attack(*drop_to_nobody!))
  end

  it "refuses a gateway reached by a path (G.4) rather than by the built-in gateway's socket handle" do
    workspace = open_workspace(paths: {proxy: "proxy"})
    socket = File.join(workspace.path(:proxy), "app.sock")
    gateway = {provider: :external, runtime_paths: [:proxy], proxy_mount_path: socket}
    sandbox = LittleGhost::Sandboxes::Landlock.new(
      workspace: workspace,
      policy: {runtime_paths: {proxy: :read_only}, network: {mode: :allowlist, allow: ["localhost:1"], gateway: gateway}}
    )
    expect { sandbox.execute_program(["/bin/true"], timeout: 30) }
      .to raise_error(LittleGhost::CapabilityError, /only through the built-in network gateway/)
  ensure
    sandbox&.close
  end
end
