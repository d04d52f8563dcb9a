# frozen_string_literal: true

RSpec.describe LittleGhost::Sandbox::ProcessSession do
  include ProcessHelpers

  let(:dir) { Dir.mktmpdir("lg-session") }
  let(:path_env) { { "PATH" => "/usr/bin:/bin" } }
  let(:sessions) { [] }

  after do
    sessions.each(&:close)
    FileUtils.rm_rf(dir)
  end

  def start(command, **options)
    described_class.new(command: command, **options).tap { |session| sessions << session }
  end

  # Reads until +text+ arrived on stdout (or a few seconds passed).
  def read_until(session, text)
    collected = +""
    eventually(5) do
      collected << session.read(timeout: 0.05).stdout
      collected.include?(text)
    end
    collected
  end

  describe "spawning (18.1, 18.2)" do
    it "runs an echo loop with cat" do
      session = start(["cat"])
      %w[one two three].each do |word|
        session.write("#{word}\n")
        expect(read_until(session, "#{word}\n")).to eq("#{word}\n")
      end
      session.close_write
      status = session.wait(timeout: 5)
      expect([status.exitstatus, status.success?, status.exited?, status.pid]).to eq([0, true, true, session.pid])
    end

    it "makes the child lead its own process group" do
      session = start(["sleep", "5"])
      stat = File.read("/proc/#{session.pid}/stat")
      expect(stat[(stat.rindex(")") + 2)..].split[2].to_i).to eq(session.pid)
    end

    it "needs an executable, raises Errno::ENOENT for a missing one and checks output_bytes" do
      expect { start([]) }.to raise_error(LittleGhost::ToolError, /Command must contain an executable/)
      expect { start(["no-such-program-xyz"]) }.to raise_error(Errno::ENOENT, /no-such-program-xyz/)
      [0, -1, "many", nil].each do |bytes|
        expect { start(["true"], output_bytes: bytes) }.to raise_error(ArgumentError, /output_bytes/)
      end
      expect { start(["true"], shell: true) }.to raise_error(ArgumentError)
    end

    it "gives the child only the explicit environment unless inheriting" do
      ENV["LG_SESSION_SECRET"] = "hunter2"
      session = start(["/usr/bin/env"], environment: { ONLY: "this" })
      session.wait(timeout: 5)
      expect(session.read.stdout).to eq("ONLY=this\n")
      inherited = start(["/usr/bin/env"], inherit_environment: true)
      inherited.wait(timeout: 5)
      expect(inherited.read.stdout).to include("LG_SESSION_SECRET=hunter2")
      expect { start(["/usr/bin/env"], environment: { "A=B" => "1" }) }.to raise_error(ArgumentError)
    ensure
      ENV.delete("LG_SESSION_SECRET")
    end

    it "runs in chdir" do
      session = start(["pwd"], chdir: dir)
      session.wait(timeout: 5)
      expect(session.read.stdout).to eq("#{File.realpath(dir)}\n")
    end
  end

  describe "#alive? (18.3)" do
    it "stays true while a forked member of the group still runs after the leader exited" do
      pid_file = File.join(dir, "child")
      gate = File.join(dir, "gate")
      # The forked member runs until the spec opens the gate, not for a fixed time.
      member = "while [ ! -e #{gate} ]; do sleep 0.01; done"
      session = start(["/bin/sh", "-c", "(#{member}) >/dev/null 2>&1 & echo $! > #{pid_file}; exit 0"],
                      environment: path_env)
      read_pid(pid_file)
      eventually { session.read.eof == false && !File.exist?("/proc/#{session.pid}/status") }
      expect(session.alive?).to be(true)
      FileUtils.touch(gate)
      expect(eventually(5) { !session.alive? }).to be(true)
    end
  end

  describe "input (18.4)" do
    it "raises IOError after close and on a broken pipe; close_write is idempotent" do
      session = start(["true"])
      session.wait(timeout: 5)
      expect { session.write("x" * 200_000) }.to raise_error(IOError, "sandboxed process has exited")
      session.close_write
      session.close_write
      session.close
      expect { session.write("x") }.to raise_error(IOError, "process session is closed")
    end
  end

  describe "#read (18.5)" do
    it "makes one pass for timeout 0 and returns raw bytes, with eof at the end" do
      session = start(["/usr/bin/printf", "\\377raw"])
      session.wait(timeout: 5)
      chunk = session.read(timeout: 1)
      expect(chunk.stdout).to eq("\xFFraw".b)
      expect([chunk.stderr, chunk.eof]).to eq(["", true])
      expect(session.read(timeout: 0)).to eq(LittleGhost::Sandbox::ProcessSession::Chunk.new(stdout: "", stderr: "", eof: true))
    end

    it "separates stdout and stderr" do
      session = start(["/bin/sh", "-c", "echo out; echo err >&2"], environment: path_env)
      session.wait(timeout: 5)
      chunk = session.read(timeout: 1)
      expect([chunk.stdout, chunk.stderr]).to eq(["out\n", "err\n"])
    end

    it "terminates the group and raises once the combined output passes output_bytes" do
      session = start(["/bin/sh", "-c", "printf 12345; printf 678 >&2; sleep 30"], output_bytes: 7,
                                                                                  environment: path_env)
      expect { 50.times { session.read(timeout: 0.05) } }
        .to raise_error(LittleGhost::ToolError, "Program output exceeded 7 bytes")
      expect { session.alive? }.to raise_error(LittleGhost::ToolError, /Program output exceeded/)
      # The background termination may still be in its grace (it stops the
      # leader while it lists descendants).
      expect(eventually(5) { live_group_members(session.pid).empty? }).to be(true)
    end

    it "keeps draining for a caller that never reads, so the child never blocks (W15)" do
      session = start(["/usr/bin/head", "-c", "500000", "/dev/zero"], output_bytes: 1_000_000)
      status = session.wait(timeout: 10)
      expect(status.exitstatus).to eq(0)
    end
  end

  describe "#wait (18.6)" do
    it "raises ToolError on timeout and terminates the group" do
      session = start(["sleep", "30"])
      expect { session.wait(timeout: 0.3) }.to raise_error(LittleGhost::ToolError, "Program timed out after 0.3 seconds")
      expect(live_group_members(session.pid)).to be_empty
    end

    it "leaves the child running with terminate: false" do
      session = start(["sleep", "30"])
      expect { session.wait(timeout: 0.2, terminate: false) }.to raise_error(LittleGhost::ToolError, /timed out/)
      expect(session.alive?).to be(true)
    end

    it "re-raises the context's exception unchanged after terminating" do
      cancelled = LittleGhost::CancelledError.new("The run was cancelled")
      calls = 0
      context = Object.new
      context.define_singleton_method(:check!) { (calls += 1) > 3 ? raise(cancelled) : nil }
      session = start(["sleep", "30"])
      expect { session.wait(timeout: 5, context: context) }.to raise_error { |error| expect(error).to equal(cancelled) }
      expect(live_group_members(session.pid)).to be_empty
    end

    it "returns a Process::Status-like object for a signal death" do
      session = start(["/bin/sh", "-c", "kill -TERM $$"], environment: path_env)
      status = session.wait(timeout: 5)
      expect([status.signaled?, status.termsig, status.exitstatus, status.success?, status.exited?])
        .to eq([true, 15, nil, nil, false])
      expect(status.to_i).to be_a(Integer)
    end

    it "lets a sibling fiber run under Async while waiting on a 1 s child" do
      skip ASYNC_MISSING if ASYNC_MISSING
      ticks = 0
      status = nil
      Async do |task|
        task.async { 40.times { ticks += 1; sleep 0.02 } }
        task.async { status = start(["sleep", "1"]).wait(timeout: 5) }
      end
      expect(status.exitstatus).to eq(0)
      expect(ticks).to eq(40)
    end
  end

  describe "#terminate and #close (18.7, 18.8)" do
    it "terminates and reaps, then closes idempotently" do
      session = start(["sleep", "30"])
      status = session.terminate
      expect([status.signaled?, status.termsig]).to eq([true, 15])
      expect(session.close).to be_nil
      expect(session.close).to be_nil
      expect(session.closed?).to be(true)
      expect(zombie_children).to be_empty
    end

    it "close kills a running group" do
      session = start(["/bin/sh", "-c", "sleep 30 & wait"], environment: path_env)
      pgid = session.pid
      session.close
      expect(live_group_members(pgid)).to be_empty
      expect { session.read }.to raise_error(IOError, "process session is closed")
    end
  end

  describe "rlimits" do
    it "applies cpu_seconds so a busy loop is stopped" do
      session = start(["/bin/sh", "-c", "while :; do :; done"], cpu_seconds: 1)
      status = session.wait(timeout: 10)
      expect(status.signaled?).to be(true)
      expect([Signal.list["XCPU"], Signal.list["KILL"]]).to include(status.termsig)
    end

    it "applies file_bytes so a large write stops at the limit" do
      target = File.join(dir, "big")
      session = start(["/usr/bin/head", "-c", "100000", "/dev/zero"], file_bytes: 4096)
      session.close
      session = start(["/bin/sh", "-c", "head -c 100000 /dev/zero > #{target}"], file_bytes: 4096,
                                                                                  environment: path_env)
      status = session.wait(timeout: 10)
      expect(File.size(target)).to be <= 4096
      expect(status.success?).to be_falsey
    end
  end

  describe "memory supervision (18.9)" do
    it "stops after exactly 1 sample above the limit and reports it" do
      samples = 0
      session = start(["sleep", "30"], memory_bytes: 1000, memory_reader: ->(_pid) { samples += 1; 10**9 })
      expect { session.wait(timeout: 5) }.to raise_error(LittleGhost::ToolError, "Program memory exceeded 1000 bytes")
      consistently(0.3) { samples == 1 } # no sample after the stop
      expect(samples).to eq(1)
      expect(live_group_members(session.pid)).to be_empty
    end

    it "fails closed after exactly 3 consecutive reader failures, hiding the reader's message" do
      samples = 0
      session = start(["sleep", "30"], memory_bytes: 1000,
                                       memory_reader: ->(_pid) { samples += 1; raise ArgumentError, "secret detail" })
      expect { session.wait(timeout: 5) }.to raise_error(LittleGhost::ToolError) { |error|
        expect(error.message).to eq("Program memory supervisor failed (ArgumentError)")
        expect(error.message).not_to include("secret")
        expect(error.cause).to be_a(ArgumentError)
        expect(error.cause.message).to eq("secret detail")
      }
      consistently(0.3) { samples == 3 } # no sample after the stop
      expect(samples).to eq(3)
      expect(live_group_members(session.pid)).to be_empty
    end

    it "resets the failure count on success: [fail, fail, 0, fail, fail, fail] takes 6 samples" do
      plan = [:fail, :fail, 0, :fail, :fail, :fail]
      samples = 0
      reader = lambda do |_pid|
        step = plan.fetch(samples, :fail)
        samples += 1
        step == :fail ? raise("nope") : step
      end
      session = start(["sleep", "30"], memory_bytes: 1000, memory_reader: reader)
      expect { session.wait(timeout: 5) }.to raise_error(LittleGhost::ToolError, /supervisor failed \(RuntimeError\)/)
      consistently(0.3) { samples == 6 } # no sample after the stop
      expect(samples).to eq(6)
    end

    it "passes the pid to the reader and surfaces the error through alive? and read too" do
      seen = []
      session = start(["sleep", "30"], memory_bytes: 10, memory_reader: ->(pid) { seen << pid; 11 })
      expect(eventually { (session.alive? rescue $!).is_a?(LittleGhost::ToolError) }).to be(true)
      expect { session.read }.to raise_error(LittleGhost::ToolError, /memory exceeded 10 bytes/)
      expect(seen).to eq([session.pid])
    end

    it "uses the /proc reader by default" do
      quiet = start(["sleep", "30"], memory_bytes: 10**12)
      consistently(0.35) { quiet.alive? } # several samples at /proc, no false stop
      expect(quiet.alive?).to be(true)
      tiny = start(["sleep", "30"], memory_bytes: 1024)
      expect { tiny.wait(timeout: 5) }.to raise_error(LittleGhost::ToolError, "Program memory exceeded 1024 bytes")
    end

    it "wants a callable reader" do
      expect { start(["true"], memory_bytes: 1, memory_reader: 42) }.to raise_error(ArgumentError, /memory_reader/)
    end
  end

  describe LittleGhost::Sandbox::ProcessSession::Chunk do
    it "behaves like Data" do
      chunk = described_class.new(stdout: "a", stderr: "", eof: false)
      expect(described_class.members).to eq(%i[stdout stderr eof])
      expect(chunk).to eq(described_class.new(stdout: "a", stderr: "", eof: false))
      expect(chunk.to_h).to eq(stdout: "a", stderr: "", eof: false)
      expect(chunk.with(eof: true).eof).to be(true)
      expect(chunk).to be_frozen
      expect { described_class.new(stdout: "a") }.to raise_error(ArgumentError, /missing keywords/)
    end
  end
end
