# frozen_string_literal: true

require "spec_helper"
require "socket"
require "open3"
require "timeout"

# Escapes from Bubblewrap attempted by a real child (a small compiled
# attacker, a shell, Ruby), each with a control showing that the same attempt
# succeeds where it is not confined. More escapes: bubblewrap_escape_spec.rb.
RSpec.describe "Bubblewrap confinement, attacked from inside" do # rubocop:disable RSpec/DescribeClass
  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  # A small attacker that prints "<attempt>: ok(<result>)" or "<attempt>: <ERRNO>" per line.
  ATTACKER_SOURCE = <<~C
    #define _GNU_SOURCE
    #include <errno.h>
    #include <fcntl.h>
    #include <sched.h>
    #include <signal.h>
    #include <spawn.h>
    #include <stdio.h>
    #include <string.h>
    #include <unistd.h>
    #include <sys/ioctl.h>
    #include <sys/mount.h>
    #include <sys/syscall.h>
    #include <linux/perf_event.h>
    extern char **environ;
    static void report(const char *name, long rc) {
      if (rc < 0) printf("%s: %s\\n", name, strerrorname_np(errno)); else printf("%s: ok\\n", name);
      fflush(stdout);
    }
    int main(int argc, char **argv) {
      if (!strcmp(argv[1], "spawn")) {
        pid_t f = fork(); if (f == 0) _exit(0); report("fork", f);
        long v = syscall(SYS_vfork); if (v == 0) _exit(0); report("vfork", v);
        long c = syscall(SYS_clone, CLONE_VM | CLONE_VFORK | SIGCHLD, 0, 0, 0, 0); if (c == 0) _exit(0);
        report("clone_vm_vfork", c);
        long c3 = syscall(SYS_clone3, 0, 88); report("clone3", c3 == -1 && errno == EFAULT ? 0 : c3);
        pid_t pid; char *args[] = {"/bin/true", 0};
        int e = posix_spawn(&pid, "/bin/true", 0, 0, args, environ); errno = e; report("posix_spawn", e ? -1 : 0);
        return 0;
      }
      if (!strcmp(argv[1], "nested")) {
        report("unshare", unshare(CLONE_NEWUSER | CLONE_NEWNS));
        report("remount_rw", mount(NULL, argv[2], NULL, MS_REMOUNT | MS_BIND, NULL));
        report("umount", umount2(argv[2], MNT_DETACH));
        int fd = open(argv[3], O_WRONLY | O_TRUNC); report("write", fd);
        if (fd >= 0) write(fd, "pwned", 5);
        return 0;
      }
      if (!strcmp(argv[1], "keyring")) {
        char buf[256] = {0};
        long id = syscall(SYS_keyctl, 10 /* SEARCH */, -3 /* session */, "user", argv[2], 0);
        report("search", id);
        if (id >= 0 && syscall(SYS_keyctl, 11 /* READ */, id, buf, sizeof buf - 1) >= 0) printf("payload: %s\\n", buf);
        return 0;
      }
      if (!strcmp(argv[1], "add_key")) {
        syscall(SYS_keyctl, 1 /* JOIN_SESSION_KEYRING */, 0); /* a fresh one: the runner's keyring stays clean */
        report("add_key", syscall(SYS_add_key, "user", argv[2], argv[3], strlen(argv[3]), -3 /* session */));
        execv(argv[4], argv + 4);
        return 1;
      }
      if (!strcmp(argv[1], "kernel")) {
        struct perf_event_attr attr; memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr; attr.type = PERF_TYPE_SOFTWARE; attr.config = PERF_COUNT_SW_CPU_CLOCK;
        report("perf_system_wide", syscall(SYS_perf_event_open, &attr, -1, 0, -1, 0));
        char c = 'x'; int denied = 1;
        for (int i = 0; i < 3; i++) if (ioctl(i, TIOCSTI, &c) == 0) denied = 0;
        report("tiocsti", denied ? -1 : 0);
        report("dev_tty", open("/dev/tty", O_RDWR));
        report("fd3", read(3, &c, 1));
        report("mknod", mknod("dev-sda", S_IFBLK | 0600, 0x800));
        return 0;
      }
      return 2;
    }
  C

  # Compiled once, outside every workspace; copied into each workspace (the only host path a child sees).
  attacker_binary = nil
  after(:all) { FileUtils.rm_rf(File.dirname(attacker_binary)) if attacker_binary }
  let(:attacker) do
    skip "gcc is needed to build the attacker" unless system("command -v gcc >/dev/null 2>&1")
    attacker_binary ||= begin
      directory = Dir.mktmpdir("lg-attacker")
      File.write(File.join(directory, "attack.c"), ATTACKER_SOURCE)
      output, status = Open3.capture2e("gcc", "-static", "-O1", "-o", File.join(directory, "attack"), File.join(directory, "attack.c"))
      raise "cannot build the attacker: #{output}" unless status.success?

      File.join(directory, "attack")
    end
    FileUtils.cp(attacker_binary, File.join(root, "attack"))
    File.join(root, "attack")
  end

  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_write, source: :read_only}} }
  let(:outside) do
    directory = File.realpath(Dir.mktmpdir("lg-confinement", "/var/tmp"))
    (@temporary_directories ||= []) << directory
    File.write(File.join(directory, "secret.txt"), "host secret")
    directory
  end

  def bubblewrap(root_filesystem: :isolated, **policy_overrides)
    LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace,
                                           policy: policy.merge(root_filesystem: root_filesystem, **policy_overrides))
  end

  def unrestricted
    LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy)
  end

  # The child's report as {"attempt" => "ok" | "ERRNO"}.
  def attempts(stdout)
    stdout.lines.to_h { |line| line.chomp.split(": ", 2) }
  end

  def run_session(sandbox, argv, allow_subprocesses:)
    session = sandbox.start_program(argv, allow_subprocesses: allow_subprocesses)
    session.wait(timeout: 10)
    session.read(timeout: 1).stdout
  ensure
    session&.close
  end

  describe "network" do
    it "refuses the host loopback server under :none and reaches the very same server under :inherit" do
      server = TCPServer.new("127.0.0.1", 0)
      port = server.addr[1]
      script = "require 'socket'; begin; s = TCPSocket.new('127.0.0.1', #{port}); s.write(ARGV[0]); s.close; " \
               "print 'connected'; rescue SystemCallError => e; print e.class; end"
      received = Queue.new
      acceptor = Thread.new do
        loop do
          connection = server.accept
          received << connection.read
          connection.close
        end
      rescue IOError
        nil
      end

      denied = bubblewrap(network: :none).execute_program(["/usr/bin/ruby", "--disable-gems", "-e", script, "none"], timeout: 10)
      allowed = bubblewrap(network: :inherit).execute_program(["/usr/bin/ruby", "--disable-gems", "-e", script, "inherit"], timeout: 10)
      expect(denied.stdout).to eq("Errno::ECONNREFUSED")
      expect(allowed.stdout).to eq("connected")
      expect(Timeout.timeout(5) { received.pop }).to eq("inherit")
      expect(received.size).to eq(0) # the :none child never got through
    ensure
      server&.close
      acceptor&.join(1)
    end
  end

  describe "subprocess denial" do
    it "refuses fork, vfork, clone(CLONE_VM|CLONE_VFORK), clone3 and posix_spawn, which all work when allowed" do
      denied = attempts(run_session(bubblewrap, [attacker, "spawn"], allow_subprocesses: false))
      expect(denied).to eq("fork" => "EPERM", "vfork" => "EPERM", "clone_vm_vfork" => "EPERM",
                           "clone3" => "ENOSYS", "posix_spawn" => "EPERM")
      allowed = attempts(run_session(bubblewrap, [attacker, "spawn"], allow_subprocesses: true))
      # clone3 fails with ENOSYS in every filter (its flags, CLONE_NEWUSER among them, live in user memory the
      # filter cannot read); glibc then falls back to clone, so posix_spawn and threads still work.
      expect(allowed).to eq("fork" => "ok", "vfork" => "ok", "clone_vm_vfork" => "ok", "clone3" => "ENOSYS", "posix_spawn" => "ok")
    end

    it "is enforced in every root mode" do
      %i[read_only isolated].each do |mode|
        expect(attempts(run_session(bubblewrap(root_filesystem: mode), [attacker, "spawn"], allow_subprocesses: false))["fork"])
          .to eq("EPERM")
      end
    end
  end

  describe "filesystem escapes" do
    it "cannot reach a host file through /proc/<pid>/root, while the same path works on the host" do
      script = "cat /proc/[0-9]*/root#{outside}/secret.txt; ls /proc/1/root/"
      result = bubblewrap.execute_program(["/bin/sh", "-c", script], timeout: 10)
      expect(result.stdout).not_to include("host secret", "etc")
      expect(result.stderr).to include("No such file or directory")
      control = unrestricted.execute_program(["/bin/sh", "-c", "cat /proc/$$/root#{outside}/secret.txt"], timeout: 10)
      expect(control.stdout).to eq("host secret")
    end

    it "keeps /tmp, /run and /dev/shm writes inside the sandbox" do
      names = %w[/tmp /run /dev/shm].to_h { |dir| [dir, File.join(dir, "lg-confinement-#{Process.pid}-#{rand(1 << 30)}")] }
      script = names.values.map { |path| "echo inside > #{path} && cat #{path}" }.join("; ")
      %i[isolated read_only].each do |mode|
        result = bubblewrap(root_filesystem: mode).execute_program(["/bin/sh", "-c", script], timeout: 10)
        expect(result.stdout).to eq("inside\n" * 3) # the writes really happened, inside
        names.each_value { |path| expect(File.exist?(path)).to be(false), "#{path} leaked to the host under #{mode}" }
      end
    end

    it "cannot create a nested user namespace, nor remount or unmount a read-only grant" do
      File.write(File.join(root, "src", "main.rb"), "original")
      source = File.join(root, "src")
      %i[isolated read_only].each do |mode|
        result = bubblewrap(root_filesystem: mode).execute_program([attacker, "nested", source, File.join(source, "main.rb")], timeout: 10)
        # No nested user namespace, so no capabilities to remount or unmount with: the seccomp filter refuses
        # CLONE_NEWUSER (EPERM) before --disable-userns would (ENOSPC).
        expect(attempts(result.stdout)).to eq("unshare" => "EPERM", "remount_rw" => "EPERM", "umount" => "EPERM", "write" => "EROFS")
      end
      expect(File.read(File.join(source, "main.rb"))).to eq("original")
    end

    it "cannot change a host-global sysctl through the sandbox's own /proc" do
      path = "/proc/sys/fs/lease-break-time"
      before = File.read(path)
      changed = (before.to_i + 1).to_s
      %i[isolated read_only].each do |mode|
        result = bubblewrap(root_filesystem: mode).execute_program(["/bin/sh", "-c", "echo #{changed} > #{path}; cat #{path}"], timeout: 10)
        expect(result.stderr).to include("Read-only file system")
        expect(result.stdout).to eq(before) # and still readable
      end
    ensure
      File.write(path, before) if before && File.read(path) != before
    end
  end

  describe "kernel interfaces" do
    it "denies system-wide perf, TIOCSTI, a controlling tty, fd 3 and device nodes; the host allows perf and mknod" do
      sandboxed = attempts(run_session(bubblewrap, [attacker, "kernel"], allow_subprocesses: false))
      expect(sandboxed).to eq("perf_system_wide" => "EACCES", "tiocsti" => "ENOTTY", "dev_tty" => "ENXIO",
                              "fd3" => "EBADF", "mknod" => "EPERM")
      host = attempts(unrestricted.execute_program([attacker, "kernel"], timeout: 10).stdout)
      expect(host).to include("perf_system_wide" => "ok", "mknod" => "ok")
    end

    it "does not let a child read keys in the host's session keyring" do
      name = "lg-confinement-#{Process.pid}-#{rand(1 << 30)}"
      # A Ruby process holding a secret key in its session keyring launches the sandbox.
      driver = <<~RUBY
        $LOAD_PATH.unshift(#{File.expand_path("../lib", __dir__).inspect})
        require "littleghost/sandbox"
        $stdout.sync = true
        workspace = LittleGhost::Workspace.new(root: #{root.inspect}).open
        sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write}})
        print sandbox.execute_program([#{attacker.inspect}, "keyring", #{name.inspect}], timeout: 10).stdout
        Process.wait(Process.spawn(#{attacker.inspect}, "keyring", #{name.inspect}))
      RUBY
      # The Ruby running the suite: the extension in lib/ is compiled for it.
      output, = Open3.capture2e(attacker, "add_key", name, "key secret", RbConfig.ruby, "--disable-gems", "-e", driver)
      lines = output.lines
      expect(lines.first).to start_with("add_key: ok")
      expect(lines.last(2).join).to include("payload: key secret") # the control: the host process sees it
      expect(lines[1..-3].join).not_to include("key secret")
    end
  end

  describe "scope masks" do
    it "refuses to launch rather than mask a dropped grant whose path is not UTF-8 at a look-alike path" do
      name = "priv\xFF".b
      workspace = open_workspace(paths: {priv: name})
      root = workspace.root
      File.binwrite(File.join(root.b, name, "secret.txt"), "hidden")
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(
        workspace: workspace, policy: {files: {root: :read_write, priv: :read_write}}
      )
      scope = sandbox.scope(files: [:root])
      before = Dir.children(root).sort
      expect do
        sandbox.execute_program(["/bin/sh", "-c", "cat #{root}/priv*/secret.txt"], scope: scope, timeout: 10)
      end.to raise_error(LittleGhost::PolicyError, /must be valid UTF-8/)
      expect(Dir.children(root).sort).to eq(before)
    end
  end
end
