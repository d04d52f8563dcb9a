# frozen_string_literal: true

RSpec.describe LittleGhost::Sandbox::ProcessRunner do
  include ProcessHelpers

  let(:dir) { Dir.mktmpdir("lg-runner") }
  let(:path_env) { { "PATH" => "/usr/bin:/bin" } }

  after { FileUtils.rm_rf(dir) }

  def run(command, timeout: 5, **options)
    described_class.run(command: command, timeout: timeout, **options)
  end

  describe "argv (17.1, 17.2)" do
    it "never uses a shell, even for one element with metacharacters" do
      marker = File.join(dir, "pwned")
      execution = run(["echo hi; touch #{marker}"])
      expect(execution.exit_code).to eq(127)
      expect(execution.stderr).to eq("echo hi; touch #{marker}: command not found\n")
      expect(File.exist?(marker)).to be(false)
    end

    it "passes arguments verbatim and converts them with to_s" do
      execution = run(["/bin/echo", "a;b", "$(id)", :sym, 7])
      expect(execution.stdout).to eq("a;b $(id) sym 7\n")
      expect(run("/bin/true").exit_code).to eq(0)
    end

    it "needs an executable" do
      [[], "", [""], nil].each do |command|
        expect { run(command) }.to raise_error(LittleGhost::ToolError, /Command must contain an executable/)
      end
    end
  end

  describe "argument checks (17.3)" do
    it "accepts anything Float() accepts and rejects non-positive or non-finite timeouts" do
      expect(run(["/bin/true"], timeout: "0.5").exit_code).to eq(0)
      [0, -1, "abc", nil, Float::INFINITY, Float::NAN].each do |timeout|
        expect { run(["/bin/true"], timeout: timeout) }.to raise_error(ArgumentError, /timeout must be positive/)
      end
    end

    it "wants a positive Integer() max_output_bytes" do
      expect(run(["/bin/echo", "abc"], max_output_bytes: "2").stdout).to eq("ab\n[output truncated]")
      [0, -5, "x", 1.0 / 0].each do |bytes|
        expect { run(["/bin/true"], max_output_bytes: bytes) }.to raise_error(ArgumentError, /max_output_bytes/)
      end
    end

    it "rejects unknown keywords and missing required ones" do
      expect { described_class.run(command: ["true"], timeout: 1, shell: true) }.to raise_error(ArgumentError)
      expect { described_class.run(command: ["true"]) }.to raise_error(ArgumentError)
    end
  end

  describe "finding the program (17.4)" do
    it "reports a missing program as exit 127 without raising" do
      expect(run(["no-such-program-xyz"])).to eq(
        LittleGhost::Sandbox::Execution.new(stdout: "", stderr: "no-such-program-xyz: command not found\n",
                                            exit_code: 127)
      )
      expect(run([File.join(dir, "missing")]).exit_code).to eq(127)
    end

    it "reports an existing but non-executable program as exit 126" do
      script = File.join(dir, "script")
      File.write(script, "#!/bin/sh\necho ran\n")
      File.chmod(0o644, script)
      execution = run([script])
      expect([execution.exit_code, execution.stderr, execution.stdout]).to eq([126, "#{script}: permission denied\n", ""])
      expect(run([dir]).exit_code).to eq(126)
    end

    it "searches a bare name in the child's PATH before the parent's" do
      script = File.join(dir, "only-in-child-path")
      File.write(script, "#!/bin/sh\necho found\n")
      File.chmod(0o755, script)
      expect(run(["only-in-child-path"]).exit_code).to eq(127)
      expect(run(["only-in-child-path"], environment: { "PATH" => "#{dir}:/bin" }).stdout).to eq("found\n")
    end
  end

  describe "environment (17.5, 17.6, W17)" do
    around do |example|
      ENV["LG_RUNNER_SECRET"] = "hunter2"
      example.run
    ensure
      ENV.delete("LG_RUNNER_SECRET")
    end

    it "gives the child only the explicit set" do
      execution = run(["/usr/bin/env"], environment: { ONLY: "this", "N" => 1 })
      expect(execution.stdout.lines.sort).to eq(["N=1\n", "ONLY=this\n"])
      expect(execution.stdout).not_to include("hunter2")
    end

    it "inherits the host environment only when asked, with explicit values winning" do
      inherited = run(["/usr/bin/env"], inherit_environment: true, environment: { "HOME" => "/nowhere" })
      expect(inherited.stdout).to include("LG_RUNNER_SECRET=hunter2")
      expect(inherited.stdout).to include("HOME=/nowhere\n")
      expect(inherited.stdout).not_to include("HOME=#{ENV.fetch('HOME', '/root')}\n") if ENV["HOME"] != "/nowhere"
    end

    it "rejects bad names and values before spawning anything" do
      marker = File.join(dir, "spawned")
      [{ "" => "x" }, { "A=B" => "x" }, { "A\0B" => "x" }, { "A" => "x\0y" }].each do |environment|
        expect { run(["/usr/bin/touch", marker], environment: environment) }.to raise_error(ArgumentError)
      end
      expect(File.exist?(marker)).to be(false)
    end
  end

  describe "child setup (17.7)" do
    it "closes stdin so the child reads EOF at once" do
      execution = run(["/bin/cat"], timeout: 2)
      expect([execution.stdout, execution.exit_code]).to eq(["", 0])
    end

    it "runs in chdir, or in the current directory" do
      expect(run(["/bin/pwd"], chdir: dir).stdout).to eq("#{File.realpath(dir)}\n")
      expect(run(["/bin/pwd"]).stdout).to eq("#{Dir.pwd}\n")
      expect { run(["/bin/pwd"], chdir: File.join(dir, "nope")) }
        .to raise_error(LittleGhost::ToolError, /Working directory is not available/)
    end

    it "makes the child lead a new process group" do
      stat = run(["/bin/cat", "/proc/self/stat"]).stdout
      fields = stat[(stat.rindex(")") + 2)..].split
      pid = stat.to_i
      expect(fields[2].to_i).to eq(pid)
      expect(pid).not_to eq(Process.getpgrp)
    end
  end

  describe "output (17.9)" do
    it "keeps max_output_bytes per stream and marks truncation (upstream example)" do
      execution = run(["/bin/sh", "-c", "printf '%020d' 0 | tr 0 a; printf problem >&2"], max_output_bytes: 5,
                                                                                      environment: path_env)
      expect([execution.stdout, execution.stderr, execution.exit_code])
        .to eq(["aaaaa\n[output truncated]", "probl\n[output truncated]", 0])
    end

    it "adds no marker for output of exactly the limit" do
      expect(run(["/usr/bin/printf", "abcde"], max_output_bytes: 5).stdout).to eq("abcde")
    end

    it "scrubs invalid UTF-8 to U+FFFD" do
      stdout = run(["/usr/bin/printf", "ok\\377\\376end"]).stdout
      expect(stdout).to eq("ok\uFFFD\uFFFDend")
      expect(stdout.encoding).to eq(Encoding::UTF_8)
      expect(stdout).to be_valid_encoding
    end

    it "drains a 100 MB flood with a 1 MB bound in bounded memory" do
      GC.start
      before = rss_bytes
      execution = run(["/usr/bin/head", "-c", "100000000", "/dev/zero"], timeout: 60)
      expect(execution.exit_code).to eq(0)
      expect(execution.stdout.bytesize).to eq(1_000_000 + "\n[output truncated]".bytesize)
      expect(rss_bytes - before).to be < 40 * 1024 * 1024
    end
  end

  describe "exit (17.14)" do
    it "reports exit codes, and nil plus the signal for a signal death" do
      expect(run(["/bin/sh", "-c", "exit 3"]).exit_code).to eq(3)
      killed = run(["/bin/sh", "-c", "kill -KILL $$"])
      expect([killed.exit_code, killed.signal, killed.error, killed.success?]).to eq([nil, 9, nil, false])
    end
  end

  describe "timeout (17.8, 17.10, 17.12)" do
    it "raises ToolError and kills the whole group, grandchildren included" do
      pid_file = File.join(dir, "grandchild")
      script = "sleep 30 & echo $! > #{pid_file}; wait"
      expect { run(["/bin/sh", "-c", script], timeout: 1, environment: path_env) }
        .to raise_error(LittleGhost::ToolError, "Command timed out after 1.0 seconds")
      grandchild = read_pid(pid_file)
      expect(process_alive?(grandchild)).to be(false)
      expect(zombie_children).to be_empty
    end

    it "waits for EOF, so a grandchild holding the pipe runs into the timeout" do
      expect { run(["/bin/sh", "-c", "sleep 30 & exit 0"], timeout: 0.4, environment: path_env) }
        .to raise_error(LittleGhost::ToolError, /timed out/)
    end

    it "sends KILL when TERM is ignored (at once: nothing left alive can act on it)" do
      pid_file = File.join(dir, "stubborn")
      script = "trap '' TERM; echo $$ > #{pid_file}; while :; do sleep 0.05; done"
      expect { run(["/bin/sh", "-c", script], timeout: 0.3, environment: path_env) }
        .to raise_error(LittleGhost::ToolError, /timed out/)
      # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(read_pid(pid_file)).empty? }).to be(true)
    end
  end

  describe "context (2.2, 2.3, 0.8)" do
    it "calls check! before spawning and then on the calling thread while waiting" do
      threads = []
      context = Object.new
      context.define_singleton_method(:check!) { threads << Thread.current }
      run(["/bin/sleep", "0.2"], context: context)
      expect(threads.size).to be > 5
      expect(threads.uniq).to eq([Thread.current])
    end

    it "spawns nothing when check! raises first" do
      marker = File.join(dir, "spawned")
      context = Object.new
      context.define_singleton_method(:check!) { raise LittleGhost::CancelledError, "The run was cancelled" }
      expect { run(["/usr/bin/touch", marker], context: context) }.to raise_error(LittleGhost::CancelledError)
      expect(File.exist?(marker)).to be(false)
    end

    it "cancels a running child from another thread and re-raises the same exception" do
      cancelled = LittleGhost::CancelledError.new("The run was cancelled")
      flag = false
      context = Object.new
      context.define_singleton_method(:check!) { raise cancelled if flag }
      pid_file = File.join(dir, "leader")
      Thread.new { read_pid(pid_file); flag = true } # cancel once the child is running
      expect { run(["/bin/sh", "-c", "echo $$ > #{pid_file}; sleep 30"], timeout: 30, context: context) }
        .to raise_error { |error| expect(error).to equal(cancelled) }
      # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(read_pid(pid_file)).empty? }).to be(true)
    end
  end

  describe "concurrency and Ruby responsiveness (0.7)" do
    it "runs 4 executions at once with separate results" do
      threads = 4.times.map do |index|
        Thread.new { run(["/bin/sh", "-c", "sleep 0.3; echo #{index}; echo e#{index} >&2; exit #{index}"]) }
      end
      results = threads.map(&:value)
      expect(results.map(&:stdout)).to eq(%W[0\n 1\n 2\n 3\n])
      expect(results.map(&:stderr)).to eq(%W[e0\n e1\n e2\n e3\n])
      expect(results.map(&:exit_code)).to eq([0, 1, 2, 3])
    end

    it "lets a sibling thread run while a 1 s child runs" do
      ticks = 0
      sibling = Thread.new { loop { ticks += 1; sleep 0.01 } }
      expect(run(["/bin/sleep", "1"]).exit_code).to eq(0)
      sibling.kill
      expect(ticks).to be > 20
    end

    it "lets a sibling fiber run under Async while a 1 s child runs" do
      skip ASYNC_MISSING if ASYNC_MISSING
      ticks = 0
      result = nil
      Async do |task|
        task.async { 40.times { ticks += 1; sleep 0.02 } }
        task.async { result = run(["/bin/sleep", "1"]) }
      end
      expect(result.exit_code).to eq(0)
      expect(ticks).to eq(40)
    end

    it "lets Async's with_timeout interrupt the wait and cleans up" do
      skip ASYNC_MISSING if ASYNC_MISSING
      pid_file = File.join(dir, "leader")
      error = nil
      Async do |task|
        task.with_timeout(0.3) { run(["/bin/sh", "-c", "echo $$ > #{pid_file}; exec sleep 30"], timeout: 30) }
      rescue Async::TimeoutError => e
        error = e
      end
      expect(error).to be_a(Async::TimeoutError)
      # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(read_pid(pid_file)).empty? }).to be(true)
    end

    it "works in a forked child after the parent used it" do
      expect(run(["/bin/true"]).exit_code).to eq(0)
      pid = fork do
        execution = described_class.run(command: ["/bin/sh", "-c", "echo forked; exit 7"], timeout: 5)
        exit!(execution.stdout == "forked\n" ? execution.exit_code : 1)
      end
      _, status = Process.wait2(pid)
      expect(status.exitstatus).to eq(7)
      expect(run(["/bin/echo", "parent"]).stdout).to eq("parent\n")
    end
  end
end
