# frozen_string_literal: true

require "spec_helper"
require "timeout"

# Waiting on a child: sibling fibers run *during* the wait (not merely
# afterwards), an interrupted wait leaks no fd and no process, and a child
# that closes its pipes early is still waited for.
RSpec.describe "waiting on a child process" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  let(:runner) { LittleGhost::Sandbox::ProcessRunner }
  let(:path_env) { {"PATH" => "/usr/bin:/bin"} }
  let(:sessions) { [] }

  after { sessions.each(&:close) }

  def start(command, **options)
    LittleGhost::Sandbox::ProcessSession.new(command: command, **options).tap { |session| sessions << session }
  end

  def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

  # Polls until `thread` is blocked in a wait on a child it started (one that
  # is not among `earlier` children), so an interrupt lands inside the wait.
  def wait_until_blocked_on_child(thread, earlier)
    expect(eventually(5) { thread.status == "sleep" && !(live_children - earlier).empty? }).to be(true)
  end

  describe "under a Fiber scheduler, sibling fibers run while we wait, not only after" do
    before { skip ASYNC_MISSING if ASYNC_MISSING }

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

  describe "when interrupted" do
    it "leaks no file descriptor and no zombie after Thread#raise, Thread#kill and Timeout" do
      runner.run(command: ["/bin/true"], timeout: 5) # warm up the runtime
      GC.start
      before = open_fds
      3.times do
        earlier = live_children
        thread = Thread.new { runner.run(command: ["/bin/sleep", "30"], timeout: 30) rescue $! }
        wait_until_blocked_on_child(thread, earlier)
        thread.raise(RuntimeError, "stop")
        expect(thread.value).to be_a(RuntimeError)
        earlier = live_children
        thread = Thread.new { runner.run(command: ["/bin/sleep", "30"], timeout: 30) }
        wait_until_blocked_on_child(thread, earlier)
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
      expect(eventually(5) { thread.status == "sleep" }).to be(true)
      thread.raise(error)
      expect(thread.value).to equal(error)
      expect(live_group_members(session.pid)).to be_empty
    end
  end

  it "waits for a child that closed stdout and stderr but keeps running" do
    started = now
    execution = runner.run(command: ["/bin/sh", "-c", "exec >&- 2>&-; sleep 0.6; exit 4"], timeout: 10,
                           environment: path_env)
    expect(execution.exit_code).to eq(4)
    expect(now - started).to be >= 0.6
  end
end
