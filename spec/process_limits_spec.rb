# frozen_string_literal: true

require "open3"
require "rbconfig"
require "pathname"

# SPEC §25 L.1-L.3: whole-tree limits enforced by a per-launch cgroup (as root on this host: cgroup v1),
# and the documented fallbacks for a user without a writable cgroup (uid 65534, through setpriv).
RSpec.describe "Kernel-enforced process limits (L.1-L.3)" do
  include ProcessHelpers
  include SandboxWorkspaceHelpers

  MIB = 1 << 20
  RUBY = RbConfig.ruby
  # Allocates 16 MiB (touched) per step and prints its resident size after each.
  ALLOCATOR = [SANDBOXED_RUBY, "--disable-gems", "-e", <<~RUBY].freeze
    kept = []
    40.times do
      kept << ("x" * (16 << 20))
      puts File.read("/proc/self/status")[/VmRSS:\\s+(\\d+)/, 1].to_i * 1024
      STDOUT.flush
    end
  RUBY

  let(:workspace) { open_workspace }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace) }
  let(:sessions) { [] }
  let(:kernel) { LittleGhost::Sandbox.probe(:unrestricted)[:limits] }

  after do
    sessions.each(&:close)
    clean_up_sandbox_workspaces
  end

  def start(target, argv, **options)
    target.start_program(argv, **options).tap { |session| sessions << session }
  end

  def require_kernel_limits!
    skip "no writable cgroup here: #{kernel.inspect}" unless kernel.values.all?(true)
  end

  # Streams the output of execute_program and returns [output, raised error].
  def run_streaming(target, argv, **options)
    output = +""
    error = nil
    begin
      target.execute_program(argv, timeout: 30, **options) { |_stream, chunk| output << chunk }
    rescue LittleGhost::ToolError => e
      error = e
    end
    [output, error]
  end

  # Reads a session until it raises; returns [output, error].
  def read_until_error(session, seconds = 20)
    output = +""
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      begin
        output << session.read(timeout: 0.1).stdout
      rescue LittleGhost::ToolError => e
        return [output, e]
      end
    end
    [output, nil]
  end

  describe "as root (cgroup v1 here)" do
    before { require_kernel_limits! }

    it "lists :memory_limit, :task_limit and (Unrestricted) :process_tree_ownership" do
      features = sandbox.capabilities.features
      expect(features).to include(:memory_limit, :task_limit, :process_tree_ownership)
    end

    it "stops an allocating child at memory_bytes: no printed size passes the limit (execute_program)" do
      output, error = run_streaming(sandbox, ALLOCATOR, memory_bytes: 64 * MIB)
      sizes = output.lines.map(&:to_i)
      expect(error).to be_a(LittleGhost::ToolError)
      expect(error.message).to eq("Program memory exceeded #{64 * MIB} bytes")
      expect(sizes).not_to be_empty
      expect(sizes.max).to be <= 64 * MIB
      expect(sizes.size).to be < 40
    end

    it "stops an allocating session and reports it on the next call" do
      session = start(sandbox, ALLOCATOR, memory_bytes: 64 * MIB)
      output, error = read_until_error(session)
      expect(error&.message).to eq("Program memory exceeded #{64 * MIB} bytes")
      expect(output.lines.map(&:to_i).max.to_i).to be <= 64 * MIB
    end

    it "charges a Bubblewrap child's tmpfs pages: 200 MB written to /tmp under 64 MiB is stopped" do
      probe = LittleGhost::Sandbox.probe(:bubblewrap)
      skip "bubblewrap unavailable: #{probe[:reason]}" unless probe[:available]

      bubblewrap = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace)
      bubblewrap.open
      begin
        _output, error = run_streaming(
          bubblewrap, ["sh", "-c", "head -c 200000000 /dev/zero > /tmp/big; ls -l /tmp/big"],
          memory_bytes: 64 * MIB
        )
        expect(error&.message).to eq("Program memory exceeded #{64 * MIB} bytes")
      ensure
        bubblewrap.close
      end
    end

    it "bounds the tasks of the whole tree: a spawn loop never has more than 16 alive, and nothing is killed" do
      # perl's fork reports EAGAIN at once (Ruby and bash retry).
      spawner = ["perl", "-e", <<~'PERL']
        $| = 1; my ($ok, $failed) = (0, 0);
        for (1 .. 40) {
          my $pid = fork;
          if (!defined $pid) { $failed++ } elsif ($pid == 0) { exec "sleep", "5" } else { $ok++ }
        }
        print "spawned ok=$ok failed=$failed\n";
        1 while wait() != -1;
        print "done\n";
      PERL
      session = start(sandbox, spawner, tasks: 16)
      output = +""
      eventually(10) { (output << session.read(timeout: 0.1).stdout).include?("spawned") }
      tasks = live_group_members(session.pid).sum { |member| Dir.children("/proc/#{member[:pid]}/task").size rescue 0 }
      expect(tasks).to be_between(2, 16)
      ok, failed = output.match(/ok=(\d+) failed=(\d+)/).captures.map(&:to_i)
      expect(failed).to be > 0
      expect(ok).to be < 16
      status = session.wait(timeout: 20)
      output << session.read(timeout: 0.1).stdout
      expect(output).to include("done")
      expect(status.success?).to be(true)
    end

    it "stops four busy children after about 1 s of CPU time in total (cpu_seconds: 1)" do
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      _output, error = run_streaming(
        sandbox, ["sh", "-c", "for i in 1 2 3 4; do (while :; do :; done) & done; wait"], cpu_seconds: 1
      )
      elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - started
      expect(error&.message).to eq("Program CPU time exceeded 1 second")
      # 4 busy children on this host's cores: whole-tree accounting stops them long before each used 1 s.
      expect(elapsed).to be < 10
    end

    it "reports a session's CPU time limit on its next call" do
      session = start(sandbox, ["sh", "-c", "(while :; do :; done) & while :; do :; done"], cpu_seconds: 1)
      _output, error = read_until_error(session)
      expect(error&.message).to eq("Program CPU time exceeded 1 second")
      expect(eventually(5) { live_group_members(session.pid).empty? }).to be(true)
    end

    it "kills a session's setsid daemon when the session is closed, and removes its cgroup" do
      own = File.read("/proc/self/cgroup")[/^\d+:pids:(.*)$/, 1]
      session = start(sandbox, ["sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!; wait"])
      output = +""
      eventually(5) { (output << session.read(timeout: 0.1).stdout).include?("\n") }
      daemon = output.to_i
      expect(process_alive?(daemon)).to be(true)
      # The daemon's own launch cgroup, not a count of them all: an earlier launch's cgroup may be
      # removed by its background cleanup at the same time.
      launch_cgroup = File.read("/proc/#{daemon}/cgroup")[/^\d+:pids:(.*)$/, 1]
      expect(File.basename(launch_cgroup.to_s)).to start_with("littleghost-#{Process.pid}-") if own
      session.close
      expect(process_alive?(daemon)).to be(false)
      expect(Dir.exist?(File.join("/sys/fs/cgroup/pids", launch_cgroup))).to be(false) if own
    end

    it "kills a setsid daemon under Unrestricted when its launch ends" do
      execution = sandbox.execute_program(
        ["sh", "-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"], timeout: 10
      )
      daemon = execution.stdout.to_i
      expect(daemon).to be > 0
      expect(eventually(5) { !process_alive?(daemon) }).to be(true)
    end

    it "applies process_limits: defaults to a plain execute_program(argv, timeout:), and per-call values override" do
      limited = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace,
                                                         process_limits: { memory_bytes: 64 * MIB })
      expect { limited.execute_program(ALLOCATOR, timeout: 30) }
        .to raise_error(LittleGhost::ToolError, "Program memory exceeded #{64 * MIB} bytes")
      execution = limited.execute_program(ALLOCATOR, timeout: 30, memory_bytes: 2048 * MIB)
      expect(execution.exit_code).to eq(0)
    end

    it "takes process_limits: from a Sandbox.build declaration" do
      built = LittleGhost::Sandbox.build({ provider: :unrestricted, process_limits: { tasks: 4 } },
                                         workspace: workspace)
      execution = built.execute_program(["sh", "-c", "for i in 1 2 3 4 5 6; do sleep 1 & done; wait"],
                                        timeout: 10)
      expect(execution.stderr).to match(/fork/i)
    end

    it "leaves no cgroup directory behind after 1,000 launches" do
      own = File.read("/proc/self/cgroup")[/^\d+:pids:(.*)$/, 1]
      skip "no pids hierarchy" unless own
      directory = File.join("/sys/fs/cgroup/pids", own)
      pattern = File.join(directory, "littleghost-#{Process.pid}-*")
      before = Dir.glob(pattern)
      1000.times { sandbox.execute_program(["/bin/true"], timeout: 10, tasks: 64) }
      expect(Dir.glob(pattern) - before).to be_empty
    end
  end

  describe "bad values" do
    it "raises ArgumentError for a limit that is not a positive Integer" do
      [0, -1, "many", 1.5].each do |value|
        %i[memory_bytes tasks cpu_seconds].each do |name|
          expect { sandbox.execute_program(["true"], timeout: 5, name => value) }
            .to raise_error(ArgumentError, /#{name}/)
          expect { sandbox.start_program(["true"], name => value) }.to raise_error(ArgumentError, /#{name}/)
        end
      end
    end

    it "takes a delegated cgroup directory as cgroup: on every Linux backend, and refuses one that is not a path" do
      delegated = Dir.mktmpdir("lg-delegated")
      backends = [LittleGhost::Sandboxes::Unrestricted, LittleGhost::Sandboxes::Bubblewrap, LittleGhost::Sandboxes::Landlock]
      backends.each do |backend|
        expect { backend.new(workspace: workspace, cgroup: 5) }.to raise_error(TypeError, /cgroup/)
        expect { backend.new(workspace: workspace, cgroup: delegated) }.not_to raise_error
        expect { backend.new(workspace: workspace, cgroup: Pathname(delegated)) }.not_to raise_error
      end
      # On this host (cgroup v1 for memory, pids and cpuacct) the v2 directory is not needed: launches keep
      # their own cgroups and their limits.
      limited = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, cgroup: delegated)
      expect(limited.execute_program(["/bin/echo", "ok"], timeout: 10, memory_bytes: 64 << 20).stdout).to eq("ok\n")
    ensure
      FileUtils.rm_rf(delegated) if delegated
    end

    it "raises ArgumentError for bad process_limits: defaults" do
      expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, process_limits: { tasks: 0 }) }
        .to raise_error(ArgumentError, /tasks/)
      expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, process_limits: { threads: 1 }) }
        .to raise_error(ArgumentError, /unknown process limit :threads/)
      expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, process_limits: 5) }
        .to raise_error(ArgumentError, /process_limits/)
    end
  end

  describe "as an unprivileged user without a writable cgroup (uid 65534)" do
    # Runs +body+ as uid 65534 in a fresh Ruby with this gem; returns its stdout lines.
    def as_nobody(body)
      lib = File.expand_path("../lib", __dir__)
      script = <<~RUBY
        require "littleghost/sandbox"
        require "tmpdir"
        root = Dir.mktmpdir
        sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: LittleGhost::Workspace.new(root: root))
        allocator = #{ALLOCATOR.inspect}
        #{body}
      RUBY
      # Already uid 65534 (bin/container-test's second pass runs as --user 65534:65534): no setpriv needed.
      drop = Process.uid == 65_534 ? [] : ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
      command = [*drop, RUBY, "-I", lib, "-e", script]
      output, errors, status = Open3.capture3(*command, chdir: "/tmp")
      raise "as uid 65534 failed: #{errors}" unless status.success?

      output.lines.map(&:chomp)
    end

    before do
      next if Process.uid == 65_534

      skip "needs root to drop to uid 65534" unless Process.uid.zero?
      skip "setpriv unavailable" unless system("command -v setpriv >/dev/null 2>&1")
    end

    it "refuses tasks: with CapabilityError before spawning, and lists neither :task_limit nor :memory_limit" do
      lines = as_nobody(<<~RUBY)
        marker = File.join(root, "ran")
        begin
          sandbox.execute_program(["touch", marker], timeout: 5, tasks: 16)
          puts "no error"
        rescue LittleGhost::CapabilityError => e
          puts "capability: \#{e.message}"
        end
        puts File.exist?(marker)
        puts sandbox.capabilities.features.inspect
        puts LittleGhost::Sandbox.probe(:unrestricted)[:limits][:tasks]
      RUBY
      expect(lines[0]).to start_with("capability: tasks cannot be limited here")
      expect(lines[1]).to eq("false")
      expect(lines[2]).not_to include(":task_limit")
      expect(lines[2]).not_to include(":memory_limit")
      expect(lines[2]).not_to include(":process_tree_ownership")
      expect(lines[3]).to match(%r{/sys/fs/cgroup})
    end

    it "falls back to the sampled memory limit and the per-process CPU rlimit" do
      lines = as_nobody(<<~RUBY)
        begin
          sandbox.execute_program(allocator, timeout: 30, memory_bytes: 64 << 20)
          puts "no error"
        rescue LittleGhost::ToolError => e
          puts e.message
        end
        begin
          sandbox.execute_program(["sh", "-c", "while :; do :; done"], timeout: 30, cpu_seconds: 1)
          puts "no error"
        rescue LittleGhost::ToolError => e
          puts e.message
          puts e.execution.signal.inspect
        end
      RUBY
      expect(lines[0]).to eq("Program memory exceeded #{64 * MIB} bytes")
      # The rlimit's kill reads as the cgroup's; the signal stays visible on the execution.
      expect(lines[1]).to eq("Program CPU time exceeded 1 second")
      expect([Signal.list["XCPU"], Signal.list["KILL"]]).to include(Integer(lines[2]))
    end
  end
end
