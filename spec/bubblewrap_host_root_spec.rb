# frozen_string_literal: true

require "spec_helper"
require "open3"
require "rbconfig"

# SPEC H.2 and H.3. The suite runs as root, and uid 0 in a Bubblewrap child is
# then host root: whatever the child leaves in a writable grant carries that
# authority on the host. Every example attempts the plant from inside the
# child and then checks the host side.
RSpec.describe "Bubblewrap children and the host" do # rubocop:disable RSpec/DescribeClass
  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  let(:bubblewrap) { LittleGhost::Sandboxes::Bubblewrap }
  let(:workspace) { open_workspace }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_write}} }
  let(:python) { "/usr/bin/python3" }

  def sandbox_for(root_filesystem: :isolated, **options)
    bubblewrap.new(workspace: workspace, policy: policy.merge(root_filesystem: root_filesystem), **options)
  end

  def sh(script, sandbox: sandbox_for, **options)
    sandbox.execute_program(["/bin/sh", "-c", script], timeout: 20, **options)
  end

  def py(code, sandbox: sandbox_for)
    sandbox.execute_program([python, "-c", code], timeout: 20)
  end

  def in_root(name) = File.join(root, name)

  # The extended attribute names of path, read on the host.
  def host_xattrs(path)
    out, status = Open3.capture2(python, "-c", "import os, sys; print(os.listxattr(sys.argv[1], follow_symlinks=False))", path)
    raise "listxattr failed" unless status.success?

    out.strip
  end

  describe "set-id files, devices, owners and attributes (H.2)" do
    it "cannot leave a set-user-ID copy of a program in the workspace" do
      result = sh("cp /usr/bin/id x && chmod 4755 x; echo chmod=$?; chmod u+s x; echo chmod=$?")
      expect(result.stdout).to eq("chmod=1\nchmod=1\n")
      expect(result.stderr).to include("Operation not permitted")
      expect(File.stat(in_root("x"))).not_to be_setuid
      expect(File.stat(in_root("x")).uid).to eq(Process.euid)
    end

    it "cannot set the set-group-ID bit on a file or a directory" do
      result = sh("touch f && chmod g+s f; echo $?; mkdir d && chmod 2775 d; echo $?")
      expect(result.stdout).to eq("1\n1\n")
      expect(result.stderr).to include("Operation not permitted")
      expect(File.stat(in_root("f"))).not_to be_setgid
      expect(File.stat(in_root("d"))).not_to be_setgid
    end

    it "cannot create a set-id file through open, O_TMPFILE or openat2" do
      code = <<~PY
        import ctypes, errno, os
        for name, mode in (("u", 0o4755), ("g", 0o2755)):
            try:
                os.open(name, os.O_CREAT | os.O_WRONLY, mode)
                print(name, "created")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
        try:
            os.open(".", os.O_TMPFILE | os.O_RDWR, 0o4755)
            print("tmpfile created")
        except OSError as e:
            print("tmpfile", errno.errorcode[e.errno])
        libc = ctypes.CDLL(None, use_errno=True)
        how = (ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, 0o4755, 0)
        rc = libc.syscall(437, -100, b"o2", ctypes.byref(how), 24)
        print("openat2", rc, errno.errorcode.get(ctypes.get_errno()))
        fd = os.open("plain", os.O_CREAT | os.O_WRONLY, 0o755)
        print("plain", oct(os.fstat(fd).st_mode & 0o7777))
      PY
      result = py(code)
      expect(result.stdout).to eq("u EPERM\ng EPERM\ntmpfile EPERM\nopenat2 -1 ENOSYS\nplain 0o755\n"), result.stderr
      expect(%w[u g o2].map { |name| File.exist?(in_root(name)) }).to eq([false, false, false])
    end

    it "cannot copy a host set-uid program with its bit, and install -m 4755 fails" do
      result = sh("cp -a /usr/bin/passwd p1; echo cp=$?; install -m 4755 /usr/bin/id p2; echo install=$?")
      expect(result.stdout).to eq("cp=1\ninstall=1\n")
      %w[p1 p2].each do |name|
        next unless File.exist?(in_root(name))

        expect(File.stat(in_root(name)).mode & 0o6000).to eq(0), name
      end
    end

    it "cannot create a device node, while FIFOs still work" do
      code = <<~PY
        import errno, os, stat
        for name, kind, dev in (("null", stat.S_IFCHR, os.makedev(1, 3)), ("sda", stat.S_IFBLK, os.makedev(8, 0))):
            try:
                os.mknod(name, kind | 0o666, dev)
                print(name, "created")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
        os.mkfifo("fifo")
        print("fifo", stat.S_ISFIFO(os.stat("fifo").st_mode))
      PY
      result = py(code)
      expect(result.stdout).to eq("null EPERM\nsda EPERM\nfifo True\n"), result.stderr
      expect(sh("mknod tty c 5 0; echo $?").stdout).to eq("1\n")
      %w[null sda tty].each { |name| expect(File.exist?(in_root(name))).to be(false) }
    end

    it "cannot hand a file to another user or group, while its own ids stay accepted" do
      File.write(in_root("mine"), "x")
      result = sh("chown 4242 mine; echo $?; chgrp 4242 mine; echo $?; chown 4242:4242 mine; echo $?; " \
                  "chown $(id -u):$(id -g) mine; echo $?; cp -p mine copy; echo $?")
      expect(result.stdout).to eq("1\n1\n1\n0\n0\n"), result.stderr
      expect(result.stderr).to include("Operation not permitted")
      stat = File.stat(in_root("mine"))
      expect([stat.uid, stat.gid]).to eq([Process.euid, Process.egid])
    end

    it "cannot set file capabilities, trusted or security attributes (nor any other)" do
      File.write(in_root("tool"), "x")
      code = <<~PY
        import errno, os
        for name in ("security.capability", "trusted.lg", "security.lg", "user.lg"):
            try:
                os.setxattr("tool", name, b"\\x01\\x00\\x00\\x02" + b"\\xff" * 16)
                print(name, "set")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
      PY
      result = py(code)
      # EOPNOTSUPP (Python names it ENOTSUP), as on a file system without xattrs: tools fall back.
      expect(result.stdout).to eq("security.capability ENOTSUP\ntrusted.lg ENOTSUP\nsecurity.lg ENOTSUP\nuser.lg ENOTSUP\n"),
                               result.stderr
      expect(host_xattrs(in_root("tool"))).to eq("[]")
    end

    it "cannot hard-link a file owned by another user (fs.protected_hardlinks)" do
      skip "fs.protected_hardlinks is off on this host" unless File.read("/proc/sys/fs/protected_hardlinks").strip == "1"

      File.write(in_root("theirs"), "x")
      File.chown(65_534, 65_534, in_root("theirs"))
      result = sh("ln theirs link; echo $?")
      expect(result.stdout).to eq("1\n")
      expect(result.stderr).to include("Operation not permitted")
      expect(File.exist?(in_root("link"))).to be(false)
    end

    it "applies under allow_subprocesses: false and under a read-only root too" do
      strict = sandbox_for.start_program([python, "-c", "import os; open('s', 'w'); os.chmod('s', 0o4755)"],
                                         allow_subprocesses: false)
      expect(strict.wait(timeout: 20).exitstatus).not_to eq(0)
      expect(strict.read(timeout: 1).stderr).to include("PermissionError")
      strict.close
      expect(File.stat(in_root("s"))).not_to be_setuid
      result = sh("touch r && chmod 4755 r; echo $?", sandbox: sandbox_for(root_filesystem: :read_only))
      expect(result.stdout).to eq("1\n")
      expect(File.stat(in_root("r"))).not_to be_setuid
    end

    it "holds when the gem runs as an unprivileged user" do
      skip "needs root to switch users" unless Process.euid.zero?

      lib = File.expand_path("../lib", __dir__)
      skip "#{lib} is not readable by uid 65534" unless File.world_readable?(lib)
      File.chown(65_534, 65_534, root)
      script = <<~RUBY
        require "littleghost/sandbox"
        ws = LittleGhost::Workspace.new(root: ARGV[0]).open
        sb = LittleGhost::Sandboxes::Bubblewrap.new(workspace: ws, policy: {files: {root: :read_write}})
        r = sb.execute_program(["/bin/sh", "-c", "id -u; touch x && chmod 4755 x; echo $?; mkdir d && chmod g+s d; echo $?"], timeout: 20)
        print r.stdout
      RUBY
      out, err, status = Open3.capture3("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                        RbConfig.ruby, "-I", lib, "-e", script, root)
      expect(status).to be_success, err
      expect(out).to eq("65534\n1\n1\n")
      expect(File.stat(in_root("x"))).not_to be_setuid
      expect(File.stat(in_root("x")).uid).to eq(65_534)
      expect(File.stat(in_root("d"))).not_to be_setgid
    end
  end

  describe "tmpfs size (H.3)" do
    mib = 1024 * 1024

    it "stops a child filling /tmp, /run and /dev/shm past a small tmpfs_size" do
      sandbox = sandbox_for(tmpfs_size: 8 * mib)
      %w[/tmp /run /dev/shm].each do |dir|
        result = sh("head -c 20000000 /dev/zero > #{dir}/fill; echo $?; stat -c %s #{dir}/fill", sandbox: sandbox)
        status, size = result.stdout.split("\n")
        expect(status).not_to eq("0"), dir
        expect(result.stderr).to include("No space left on device"), dir
        expect(Integer(size)).to be <= 8 * mib
      end
    end

    it "bounds /tmp at 256 MiB by default, under every root mode" do
      # 270 MB is past 256 MiB (268,435,456 bytes).
      %i[isolated read_only].each do |mode|
        result = sh("head -c 270000000 /dev/zero > /tmp/fill; echo $?; stat -c %s /tmp/fill; rm /tmp/fill",
                    sandbox: sandbox_for(root_filesystem: mode))
        status, size = result.stdout.split("\n")
        expect(status).not_to eq("0"), mode.to_s
        expect(result.stderr).to include("No space left on device")
        expect(Integer(size)).to be <= 256 * mib
      end
    end

    it "leaves /dev read-only, so its unsized tmpfs cannot be filled" do
      result = sh("echo x > /dev/fill; echo $?; echo y > /dev/null; echo $?")
      expect(result.stdout).to eq("2\n0\n")
      expect(result.stderr).to include("Read-only file system")
    end

    it "takes tmpfs_size from a Sandbox.build declaration" do
      sandbox = LittleGhost::Sandbox.build({provider: :bubblewrap, files: {root: :read_write}, tmpfs_size: 4 * mib},
                                           workspace: workspace)
      result = sh("head -c 8000000 /dev/zero > /tmp/fill; echo $?", sandbox: sandbox)
      expect(result.stdout).to eq("1\n")
      expect(result.stderr).to include("No space left on device")
      expect(sandbox.bubblewrap_args).to include("--size", (4 * mib).to_s)
    end

    it "exposes the default size" do
      expect(bubblewrap::DEFAULT_TMPFS_SIZE).to eq(256 * mib)
      expect(sandbox_for(tmpfs_size: nil).bubblewrap_args.each_cons(2)).to include(["--size", (256 * mib).to_s])
    end

    it "refuses a tmpfs_size that is not a positive Integer" do
      [0, -1, "1", 1.5, 2**64].each do |size|
        expect { sandbox_for(tmpfs_size: size) }
          .to raise_error(LittleGhost::PolicyError, /tmpfs_size must be a positive Integer/), size.inspect
      end
    end
  end
end
