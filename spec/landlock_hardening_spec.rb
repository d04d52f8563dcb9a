# frozen_string_literal: true

require "spec_helper"

# What a Landlock child could still do to the host after
# the first battery of attacks. Each example has the child attempt the
# escape against a real host process or object and then checks the host
# side. spec/native_landlock_spec.rb runs this file again where user
# namespaces are blocked (Native picks Landlock there).
RSpec.describe "Landlock hardening" do
  include ProcessHelpers

  before do
    probe = LittleGhost::Sandboxes::Landlock.probe
    skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
  end

  let(:workspace) { open_workspace(paths: {source: "src", out: "out"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_only, source: :read_only, out: :read_write}} }
  let(:sandbox) { LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: policy) }

  before do
    next unless LittleGhost::Sandboxes::Landlock.probe[:available]

    FileUtils.mkdir_p([File.join(root, "src"), File.join(root, "out")])
  end

  after { sandbox.close }

  def sh(script, timeout: 20)
    sandbox.execute_program(["/bin/sh", "-c", script], timeout: timeout)
  end

  # A process of the gem's user outside the sandbox, standing for the Ruby
  # process (which must not be the target: the old build let the child
  # lower its limits).
  def with_host_process
    pid = Process.spawn("/bin/sleep", "1000", pgroup: true)
    yield pid
  ensure
    if pid
      Process.kill(:KILL, pid)
      Process.wait(pid)
    end
  end

  def limits_of(pid)
    File.read("/proc/#{pid}/limits")
  end

  def sched_of(pid)
    fields = File.read("/proc/#{pid}/stat").then { |text| text[(text.rindex(")") + 2)..].split }
    # nice (19th field overall), policy (41st); /proc/PID/stat counts from pid as 1.
    {nice: fields[16], policy: fields[38], affinity: File.read("/proc/#{pid}/status")[/^Cpus_allowed_list:\s*(\S+)/, 1]}
  end

  it "a child cannot change the resource limits, priority, scheduling or I/O class of a host process, only its own" do
    with_host_process do |target|
      limits = limits_of(target)
      sched = sched_of(target)
      result = sh("prlimit --pid #{target} --nofile=7:7 && echo SET-LIMIT; " \
                  "prlimit --pid #{target} --cpu=1:1 && echo SET-CPU; " \
                  "renice -n 19 -p #{target} && echo RENICED; " \
                  "taskset -p 1 #{target} && echo PINNED; " \
                  "chrt -i -p 0 #{target} && echo IDLED; " \
                  "ionice -c 3 -p #{target} && echo IONICED; " \
                  "ulimit -n 64 && echo own-limit; ionice -c 3 /bin/true && echo own-ionice; " \
                  "echo done")
      expect(result.stdout).to include("own-limit", "own-ionice", "done")
      expect(result.stdout).not_to include("SET-LIMIT", "SET-CPU", "RENICED", "PINNED", "IDLED", "IONICED")
      expect(limits_of(target)).to eq(limits)
      expect(sched_of(target)).to eq(sched)
      expect(Process.getrlimit(:NOFILE)[0]).to be > 7
    end
  end

  # A size nothing else on the host uses: 64 MiB and one page.
  CHILD_SEGMENT = 64 * 1024 * 1024 + 4096

  # The host's segments of the child's size (key id size ... per line).
  def host_segments_of_child_size
    File.readlines("/proc/sysvipc/shm").drop(1).count { |line| line.split[3].to_i == CHILD_SEGMENT }
  end

  it "a child cannot attach the host's System V shared memory, and no segment it makes outlives close" do
    created = `ipcmk -M 4096 -p 0600 2>&1`
    id = created[/(\d+)\s*\z/, 1]
    skip "ipcmk cannot make a segment here: #{created}" unless $?.success? && id
    before = host_segments_of_child_size
    attach = <<~PY
      import ctypes
      libc = ctypes.CDLL(None, use_errno=True)
      libc.shmat.restype = ctypes.c_void_p
      address = libc.shmat(#{id}, None, 0o10000)
      print("ATTACHED" if address not in (None, 2**64 - 1) else "refused %d" % ctypes.get_errno())
    PY
    result = sh("/usr/bin/python3 -c '#{attach}'; ipcmk -M #{CHILD_SEGMENT} >/dev/null 2>&1 && echo made-own; echo done")
    expect(result.stdout).to include("refused", "done")
    expect(result.stdout).not_to include("ATTACHED")
    sandbox.close
    # Whatever the child made (in its own IPC namespace as root) went with
    # it; without one it could make nothing.
    expect(eventually(5) { host_segments_of_child_size == before }).to be(true)
  ensure
    system("ipcrm", "-m", id, err: File::NULL) if id
  end

  it "a child cannot create a user namespace (clone3 falls back to clone, which works)" do
    result = sh("unshare --user /bin/true && echo NEW-USERNS; unshare -r /bin/true && echo ROOT-USERNS; " \
                "/bin/true && echo forked; echo done")
    expect(result.stdout).to include("forked", "done")
    expect(result.stdout).not_to include("NEW-USERNS", "ROOT-USERNS")
  end

  it "after the supervisor is SIGKILLed from outside, close leaves no process of the launch, or tree ownership is not claimed" do
    session = sandbox.start_program(["/bin/sh", "-c", "setsid /bin/sleep 1000 & echo $! > $TMPDIR/pid; wait"])
    sleeper = read_pid(File.join(sandbox.tmpdir, "pid"))
    expect(process_alive?(sleeper)).to be(true)
    Process.kill(:KILL, session.pid)
    session.close
    sandbox.close
    if sandbox.capabilities.features.include?(:process_tree_ownership)
      expect(eventually(5) { !process_alive?(sleeper) }).to be(true)
    else
      # No cgroup could be made: the claim is not made (and the survivor is
      # the documented limit of this host).
      expect(LittleGhost::Sandboxes::Landlock.probe[:capabilities].features).not_to include(:process_tree_ownership)
      expect(LittleGhost::Sandbox.probe(:unrestricted)[:limits][:process_tree_ownership]).not_to be(true)
    end
  ensure
    Process.kill(:KILL, sleeper) if sleeper && process_alive?(sleeper)
  end

  it "a :read_only grant inside a writable one is refused naming both, never run with less than effective_policy" do
    nested = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write, source: :read_only}})
    expect { nested.open }.to raise_error(LittleGhost::CapabilityError) { |error|
      expect(error.message).to include(":read_only grant #{File.realpath(workspace.path(:source))}",
                                       "inside the writable grant #{File.realpath(root)}")
      expect(error.message).to include("files: {root: :read_only, source: :read_only, out: :read_write}", "Bubblewrap")
    }
    # The alternative the message names does what it says: the top stays
    # read-only, the writable grant writable.
    result = sh("echo x > top && echo WROTE-TOP; echo y > src/new && echo WROTE-SOURCE; echo z > out/new && echo wrote-out")
    expect(result.stdout).to include("wrote-out")
    expect(result.stdout).not_to include("WROTE-TOP", "WROTE-SOURCE")
  ensure
    nested&.close
  end
end
