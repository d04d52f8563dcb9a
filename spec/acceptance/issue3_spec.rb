# frozen_string_literal: true

require "async"
require "timeout"

# Acceptance checks for issue 3 that the unit specs leave open: sibling fibers
# must run *during* a wait (not merely afterwards), interrupted waits leak no
# fd, hostile inputs raise documented errors, and awkward children (closing
# their pipes early, flooding stderr, never being read) stay bounded and owned.
RSpec.describe "issue 3 acceptance" do
  include ProcessHelpers

  let(:runner) { LittleGhost::Sandbox::ProcessRunner }
  let(:session_class) { LittleGhost::Sandbox::ProcessSession }
  let(:path_env) { { "PATH" => "/usr/bin:/bin" } }
  let(:dir) { Dir.mktmpdir("lg-issue3") }
  let(:sessions) { [] }

  after do
    sessions.each(&:close)
    FileUtils.rm_rf(dir)
  end

  def start(command, **options)
    session_class.new(command: command, **options).tap { |session| sessions << session }
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  describe "Fiber.scheduler: sibling fibers run while we wait, not only after" do
    # The 40 ticks take 0.8 s; the child takes 1 s. A wait that blocked the
    # scheduler would see 0 ticks when it returns (the specs next to the code
    # only count ticks after Async finished, which is 40 either way).
    def ticks_when_done
      ticks = 0
      seen = nil
      Async do |task|
        task.async { 40.times { ticks += 1; sleep 0.02 } }
        task.async { yield; seen = ticks }
      end
      seen
    end

    it "for ProcessRunner.run" do
      expect(ticks_when_done { runner.run(command: ["/bin/sleep", "1"], timeout: 5) }).to be >= 30
    end

    it "for ProcessSession#wait and #read" do
      expect(ticks_when_done { start(["/bin/sleep", "1"]).wait(timeout: 5) }).to be >= 30
      expect(ticks_when_done { start(["/bin/sleep", "5"]).read(timeout: 1) }).to be >= 30
    end
  end

  describe "interrupted waits" do
    it "leak no file descriptor and no zombie after Thread#raise, Thread#kill and Timeout" do
      runner.run(command: ["/bin/true"], timeout: 5) # warm up the runtime
      GC.start
      before = open_fds
      3.times do
        thread = Thread.new { runner.run(command: ["/bin/sleep", "30"], timeout: 30) rescue $! }
        sleep 0.1
        thread.raise(RuntimeError, "stop")
        expect(thread.value).to be_a(RuntimeError)
        thread = Thread.new { runner.run(command: ["/bin/sleep", "30"], timeout: 30) }
        sleep 0.1
        thread.kill
        expect(thread.join(5)).to eq(thread)
        expect { Timeout.timeout(0.1) { runner.run(command: ["/bin/sleep", "30"], timeout: 30) } }
          .to raise_error(Timeout::Error)
      end
      expect(eventually { GC.start; open_fds <= before }).to be(true)
      expect(zombie_children).to be_empty
    end

    it "lets Timeout interrupt ProcessSession#read promptly, leaving the session usable" do
      session = start(["/bin/sleep", "30"])
      started = now
      expect { Timeout.timeout(0.3) { session.read(timeout: 20) } }.to raise_error(Timeout::Error)
      expect(now - started).to be < 2
      expect(session.alive?).to be(true)
    end

    it "terminates the group when Thread#raise interrupts ProcessSession#wait, re-raising the same error" do
      session = start(["/bin/sh", "-c", "sleep 30 & wait"], environment: path_env)
      error = RuntimeError.new("stop")
      thread = Thread.new { session.wait(timeout: 30) rescue $! }
      sleep 0.2
      thread.raise(error)
      expect(thread.value).to equal(error)
      expect(live_group_members(session.pid)).to be_empty
    end
  end

  describe "hostile inputs raise documented errors and spawn nothing" do
    let(:marker) { File.join(dir, "spawned") }

    it "refuses NUL bytes in argv and environment with ArgumentError" do
      expect { runner.run(command: ["/usr/bin/touch", marker, "a\0b"], timeout: 2) }
        .to raise_error(ArgumentError, /NUL/)
      expect { start(["/usr/bin/touch", marker, "a\0b"]) }.to raise_error(ArgumentError, /NUL/)
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, environment: { "A" => "\0" }) }
        .to raise_error(ArgumentError)
      expect(File.exist?(marker)).to be(false)
    end

    it "accepts binary Strings holding UTF-8 and refuses other bytes with ArgumentError, not EncodingError" do
      expect(runner.run(command: ["/bin/echo", "caf\xC3\xA9".b], timeout: 2).stdout).to eq("café\n")
      expect(runner.run(command: ["/usr/bin/env"], environment: { "A" => "\xC3\xA9".b }, timeout: 2).stdout)
        .to eq("A=é\n")
      expect { runner.run(command: ["/usr/bin/touch", marker, "\xFF".b], timeout: 2) }
        .to raise_error(ArgumentError, "command arguments must be valid UTF-8")
      expect { runner.run(command: ["/usr/bin/touch", marker], environment: { "A" => "\xFF" }, timeout: 2) }
        .to raise_error(ArgumentError, "environment values must be valid UTF-8")
      expect { start(["/usr/bin/touch", marker, "\xFF"]) }
        .to raise_error(ArgumentError, "command arguments must be valid UTF-8")
      expect(File.exist?(marker)).to be(false)
    end

    it "raises TypeError for a non-Hash environment or a Hash chdir" do
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, environment: "A=1") }
        .to raise_error(TypeError)
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, chdir: {}) }.to raise_error(TypeError)
      expect { start(["/usr/bin/touch", marker], chdir: {}) }.to raise_error(TypeError)
      expect(File.exist?(marker)).to be(false)
    end

    it "rejects NaN, infinite and negative timeouts for run and ProcessSession#wait" do
      session = start(["/bin/sleep", "5"])
      [Float::NAN, Float::INFINITY, -Float::INFINITY, -1, nil].each do |timeout|
        expect { runner.run(command: ["/usr/bin/touch", marker], timeout: timeout) }
          .to raise_error(ArgumentError, "timeout must be positive")
        next if timeout.nil? # nil means "no timeout" for wait (18.6)

        expect { session.wait(timeout: timeout) }.to raise_error(ArgumentError, "timeout must be positive")
      end
      expect(session.alive?).to be(true)
      expect(File.exist?(marker)).to be(false)
    end

    it "rejects bad rlimits and memory limits with ArgumentError" do
      [Float::NAN, -1, 0, "x"].each do |value|
        expect { start(["/usr/bin/touch", marker], cpu_seconds: value) }.to raise_error(ArgumentError, /cpu_seconds/)
        expect { start(["/usr/bin/touch", marker], file_bytes: value) }.to raise_error(ArgumentError, /file_bytes/)
        expect { start(["/usr/bin/touch", marker], memory_bytes: value) }.to raise_error(ArgumentError, /memory_bytes/)
      end
      expect(File.exist?(marker)).to be(false)
    end

    it "copes with a max_output_bytes beyond 64 bits" do
      expect(runner.run(command: ["/bin/echo", "x"], timeout: 2, max_output_bytes: 2**70).stdout).to eq("x\n")
    end
  end

  describe "awkward children" do
    it "waits for a child that closed stdout and stderr but keeps running" do
      started = now
      execution = runner.run(command: ["/bin/sh", "-c", "exec >&- 2>&-; sleep 0.6; exit 4"], timeout: 10,
                             environment: path_env)
      expect(execution.exit_code).to eq(4)
      expect(now - started).to be >= 0.6
    end

    it "drains 100 MB on stderr alone with a 1 MB bound in bounded memory" do
      GC.start
      before = rss_bytes
      execution = runner.run(command: ["/bin/sh", "-c", "head -c 100000000 /dev/zero >&2"], timeout: 60,
                             environment: path_env)
      expect([execution.exit_code, execution.stdout]).to eq([0, ""])
      expect(execution.stderr.bytesize).to eq(1_000_000 + "\n[output truncated]".bytesize)
      expect(rss_bytes - before).to be < 40 * 1024 * 1024
    end

    it "stops a flooding session that is never read at output_bytes, in bounded memory" do
      GC.start
      before = rss_bytes
      session = start(["/bin/sh", "-c", "head -c 100000000 /dev/zero"], environment: path_env)
      expect { session.wait(timeout: 30) }.to raise_error(LittleGhost::ToolError, "Program output exceeded 1000000 bytes")
      expect(live_group_members(session.pid)).to be_empty
      expect(rss_bytes - before).to be < 40 * 1024 * 1024
    end
  end

  describe "session lifecycle" do
    it "answers after close: closed, not alive, IOError for I/O, close stays idempotent" do
      session = start(["cat"])
      pid = session.pid
      expect([session.close, session.close]).to eq([nil, nil])
      expect(session.closed?).to be(true)
      expect(session.alive?).to be(false)
      expect(session.pid).to eq(pid)
      expect(session.close_write).to be_nil
      expect { session.write("x") }.to raise_error(IOError, "process session is closed")
      expect { session.read }.to raise_error(IOError, "process session is closed")
      expect(session.wait(timeout: 1).termsig).to eq(15)
      expect(live_group_members(pid)).to be_empty
      expect(zombie_children).to be_empty
    end

    it "never interleaves two threads' writes" do
      session = start(["cat"], output_bytes: 10**8)
      line_a = "#{'A' * 70_000}\n"
      line_b = "#{'B' * 70_000}\n"
      reader = Thread.new do
        output = +"".b
        until (chunk = session.read(timeout: 0.1)).eof
          output << chunk.stdout
        end
        output << chunk.stdout
      end
      [line_a, line_b].map { |line| Thread.new { 50.times { session.write(line) } } }.each(&:join)
      session.close_write
      lines = reader.value.lines
      expect(lines.size).to eq(100)
      expect(lines.uniq.sort).to eq([line_a, line_b])
    end
  end
end
