# frozen_string_literal: true

require "open3"
require "rbconfig"
require "timeout"

# Whoever interrupts a wait, the child's whole process group is terminated and
# reaped, and the interrupting exception reaches the caller unchanged (17.11,
# 17.12, 0.7). Nothing is left behind: no live group member, no zombie, no fd.
RSpec.describe "process ownership" do
  include ProcessHelpers

  let(:dir) { Dir.mktmpdir("lg-ownership") }
  let(:pid_file) { File.join(dir, "pids") }
  let(:runner) { LittleGhost::Sandbox::ProcessRunner }
  # The leader records its pid (= pgid) and a grandchild's pid, then waits.
  let(:family) { ["/bin/sh", "-c", "sleep 30 & echo $$ $! > #{pid_file}; wait"] }
  let(:path_env) { { "PATH" => "/usr/bin:/bin" } }

  after { FileUtils.rm_rf(dir) }

  def family_pids
    eventually(5) { File.exist?(pid_file) && File.read(pid_file).split.size == 2 }
    File.read(pid_file).split.map(&:to_i)
  end

  def expect_family_gone
    leader, grandchild = family_pids
    # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(leader).empty? }).to be(true)
    expect(process_alive?(grandchild)).to be(false)
    expect(zombie_children).to be_empty
  end

  def run_family_in_thread
    Thread.new do
      runner.run(command: family, timeout: 30, environment: path_env)
    rescue Exception => e # rubocop:disable Lint/RescueException
      e
    end.tap { family_pids }
  end

  it "terminates members a finished leader left behind before returning" do
    daemon = ["/bin/sh", "-c", "sleep 30 >/dev/null 2>&1 </dev/null & echo $$ $! > #{pid_file}"]
    result = runner.run(command: daemon, timeout: 10, environment: path_env)
    expect(result.exit_code).to eq(0)
    expect_family_gone
  end

  it "cleans up on Thread#raise and delivers the very same exception promptly" do
    thread = run_family_in_thread
    error = RuntimeError.new("stop now")
    started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    thread.raise(error)
    expect(thread.value).to equal(error)
    # TERM kills sh and sleep at once; the grace wait ends as soon as they are dead.
    expect(Process.clock_gettime(Process::CLOCK_MONOTONIC) - started).to be < 0.45
    expect_family_gone
  end

  it "cleans up on Thread#kill" do
    thread = run_family_in_thread
    thread.kill
    expect(thread.join(5)).to eq(thread)
    expect(thread.alive?).to be(false)
    expect_family_gone
  end

  it "cleans up on Timeout.timeout and raises its error" do
    expect do
      Timeout.timeout(0.3) { runner.run(command: family, timeout: 30, environment: path_env) }
    end.to raise_error(Timeout::Error)
    expect_family_gone
  end

  it "cleans up on Ctrl-C (SIGINT to the Ruby process) and raises Interrupt" do
    lib = File.expand_path("../lib", __dir__)
    script = <<~RUBY
      require "littleghost/sandbox"
      begin
        LittleGhost::Sandbox::ProcessRunner.run(command: #{family.inspect}, timeout: 30,
                                                environment: { "PATH" => "/usr/bin:/bin" })
      rescue Interrupt
        puts "interrupted"
        exit 42
      end
    RUBY
    Open3.popen2(RbConfig.ruby, "-I", lib, "-e", script) do |_stdin, stdout, wait_thread|
      family_pids
      Process.kill("INT", wait_thread.pid)
      expect(wait_thread.value.exitstatus).to eq(42)
      expect(stdout.read).to eq("interrupted\n")
    end
    leader, grandchild = family_pids
    # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(leader).empty? }).to be(true)
    expect(process_alive?(grandchild)).to be(false)
  end

  it "kills the group of a session that is garbage collected without close" do
    LittleGhost::Sandbox::ProcessSession.new(command: family, environment: path_env)
    leader, = family_pids
    expect(eventually(5) { GC.start; live_group_members(leader).empty? }).to be(true)
  end

  def open_and_close_session
    session = LittleGhost::Sandbox::ProcessSession.new(command: ["cat"])
    session.write("x\n")
    session.close
    nil
  end

  it "leaks no file descriptors and leaves no zombies" do
    runner.run(command: ["/bin/true"], timeout: 5) # warm up the runtime
    GC.start
    before = open_fds
    20.times { runner.run(command: ["/bin/echo", "x"], timeout: 5) }
    5.times do
      expect { runner.run(command: ["/bin/sleep", "5"], timeout: 0.05) }.to raise_error(LittleGhost::ToolError)
    end
    3.times { open_and_close_session }
    runner.run(command: ["no-such-program-xyz"], timeout: 5)
    # A closed session keeps only its notification fd, until it is collected.
    expect(eventually { GC.start; open_fds <= before }).to be(true)
    expect(zombie_children).to be_empty
  end
end
