# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# Nothing survives `close` (docs/security.md, "Sandbox lifecycle and process
# ownership"), whatever happened to the process the gem started. A session's
# program starts a daemon (`setsid sleep`, out of its process group), then
# the session's own process (the Landlock supervisor, bwrap, or the program
# itself on Unrestricted) is SIGKILLed from outside and reaped before the
# sandbox closes. `sandbox.close` must still end the daemon: through the
# launch's cgroup where there is one (a pooled v1 `pids` cgroup as root on
# this host, a delegated cgroup2 as uid 65534), through bwrap's pid
# namespace on Bubblewrap.
RSpec.describe "A daemon of a session whose supervisor was SIGKILLed" do
  include ProcessHelpers

  # Run by a new Ruby (as root, or as uid 65534 behind setpriv): prints the
  # daemon's host pid and whether it was still alive 5 s after `close`.
  SURVIVOR_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    marker = ENV.fetch("DAEMON_SECONDS")
    within = lambda do |seconds, &check|
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
      sleep 0.02 until (result = check.call) || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
      result
    end
    alive = lambda do |pid|
      state = File.read("/proc/#{pid}/stat").split(") ").last[0]
      !%w[Z X].include?(state)
    rescue Errno::ENOENT, Errno::ESRCH
      false
    end
    backend = LittleGhost::Sandboxes.const_get(ENV.fetch("CLOSE_BACKEND"))
    sandbox = backend.new(workspace: LittleGhost::Workspace.new(root: Dir.mktmpdir))
    session = sandbox.start_program(
      ["sh", "-c", "setsid sleep #{marker} </dev/null >/dev/null 2>&1 & echo started; exec sleep 1000"]
    )
    output = +""
    within.call(10) { output << session.read(timeout: 0.1).stdout; output.include?("started") }
    # Its host pid (inside bwrap, `$!` would be a namespace's pid).
    daemon = within.call(5) do
      Dir["/proc/[0-9]*/cmdline"].find { |path| File.read(path) == "sleep\0#{marker}\0" rescue false }
    end
    raise "the daemon never showed up (output: #{output.inspect})" unless daemon
    daemon = daemon[%r{/proc/(\d+)/}, 1].to_i
    Process.kill(:KILL, session.pid)
    # The session's process is gone and reaped before `close`.
    raise "the session's process outlived SIGKILL" unless within.call(5) { !session.alive? }
    sandbox.close
    survived = !within.call(5) { !alive.call(daemon) }
    puts JSON.generate(daemon: daemon, survived: survived,
                       cgroups: (File.read("/proc/#{daemon}/cgroup").lines.grep(/littleghost/).join if survived))
  RUBY

  # The daemons this example started, killed whatever the outcome.
  let(:daemons) { [] }

  after do
    daemons.each do |pid|
      Process.kill(:KILL, pid)
    rescue Errno::ESRCH, Errno::EPERM
      nil
    end
  end

  def backend!(name)
    probe = LittleGhost::Sandboxes.const_get(name).probe
    skip "#{name} is unavailable here: #{probe[:reason]}" unless probe[:available]
  end

  # What SURVIVOR_SCRIPT reports for `backend`, run under `prefix`.
  def close_outcome(backend, *prefix)
    lib = File.expand_path("../lib", __dir__)
    seconds = "1000.#{Process.pid}#{rand(1_000_000)}"
    environment = { "CLOSE_BACKEND" => backend, "DAEMON_SECONDS" => seconds }
    output, errors, status = Open3.capture3(environment, *prefix, RbConfig.ruby, "-I", lib, "-e", SURVIVOR_SCRIPT,
                                            chdir: "/tmp")
    raise "#{backend} #{prefix.inspect} failed: #{errors}" unless status.success?

    report = JSON.parse(output.lines.last, symbolize_names: true)
    daemons << report[:daemon]
    report
  end

  def expect_nothing_survives(report)
    expect(report[:survived]).to be(false), "the daemon #{report[:daemon]} survived close in #{report[:cgroups]}"
    expect(process_alive?(report[:daemon])).to be(false)
  end

  def require_root!
    skip "needs root (a launch cgroup of its own)" unless Process.uid.zero?
  end

  # A cgroup2 directory owned by uid 65534 (the delegation a systemd user
  # manager gets on a v2 host), yielded as the command prefix that runs uid
  # 65534 inside it; removed afterwards. Skips where none can be made.
  def in_delegated_cgroup
    nobody = drop_to_nobody!
    mount = File.readlines("/proc/self/mountinfo").map(&:split).find { |fields| fields[fields.index("-") + 1] == "cgroup2" }
    skip "no cgroup2 hierarchy is mounted" unless mount
    dir = File.join(mount[4], "littleghost-close-spec-#{Process.pid}")
    begin
      Dir.mkdir(dir)
    rescue SystemCallError => e
      skip "cannot make a cgroup2 directory: #{e.message}"
    end
    skip "this kernel has no cgroup.kill" unless File.exist?(File.join(dir, "cgroup.kill"))
    %w[. cgroup.procs cgroup.threads cgroup.subtree_control].each { |name| File.chown(65534, 65534, File.join(dir, name)) }
    yield ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', dir, *nobody]
  ensure
    if dir && File.directory?(dir)
      Dir.children(dir).select { |name| File.directory?(File.join(dir, name)) }.each { |child| Dir.rmdir(File.join(dir, child)) rescue nil }
      Dir.rmdir(dir) rescue nil
    end
  end

  it "is killed by close on Landlock as root (the launch's pooled v1 cgroup)" do
    backend!(:Landlock)
    require_root!
    expect_nothing_survives(close_outcome("Landlock"))
  end

  it "is killed by close on Landlock as uid 65534 in a delegated cgroup2" do
    backend!(:Landlock)
    in_delegated_cgroup { |prefix| expect_nothing_survives(close_outcome("Landlock", *prefix)) }
  end

  it "is killed by close on Bubblewrap as root" do
    backend!(:Bubblewrap)
    require_root!
    expect_nothing_survives(close_outcome("Bubblewrap"))
  end

  it "is killed by close on Bubblewrap as uid 65534, without any cgroup (its pid namespace ends with bwrap)" do
    backend!(:Bubblewrap)
    expect_nothing_survives(close_outcome("Bubblewrap", *drop_to_nobody!))
  end

  it "is killed by close on Unrestricted as root, where the SIGKILLed process is the program itself" do
    require_root!
    expect_nothing_survives(close_outcome("Unrestricted"))
  end
end
