# frozen_string_literal: true

require "json"
require "timeout"

# Starts littleghost-sandboxd (built by `rake compile`) on ephemeral loopback ports over a temporary root, for the
# :remote provider's specs, and stops it after the example.
module RemoteDaemonHelpers
  DAEMON = [
    File.expand_path("../../lib/littleghost-sandboxd", __dir__),
    File.expand_path("../../target/release/littleghost-sandboxd", __dir__)
  ].find { |path| File.executable?(path) }

  # Why the daemon's specs cannot run here, or nil.
  def self.missing
    return nil if DAEMON

    "littleghost-sandboxd is not built (rake compile leaves it at lib/littleghost-sandboxd)"
  end

  Daemon = Struct.new(:pid, :root, :grpc, :rest, :log, keyword_init: true) do
    def endpoint
      {grpc: grpc, rest: "http://#{rest}"}
    end
  end

  # Starts the daemon over a new temporary root; +policy+ is its --policy JSON (a Hash), +token+ its token.
  def start_daemon(policy: nil, token: nil, health_without_token: false)
    directory = Dir.mktmpdir("littleghost-remote")
    @remote_directories = (@remote_directories || []) << directory
    root = File.join(directory, "root")
    Dir.mkdir(root)
    arguments = [DAEMON, "--root", root, "--grpc", "127.0.0.1:0", "--rest", "127.0.0.1:0"]
    if policy
      File.write(File.join(directory, "policy.json"), JSON.generate(policy))
      arguments += ["--policy", File.join(directory, "policy.json")]
    end
    arguments << "--health-without-token" if health_without_token
    if token
      File.write(File.join(directory, "token"), "#{token}\n")
      arguments += ["--token-file", File.join(directory, "token")]
    end
    log = File.join(directory, "daemon.log")
    reader, writer = IO.pipe
    pid = Process.spawn(*arguments, out: writer, err: log)
    writer.close
    line = Timeout.timeout(60) { reader.gets }
    reader.close
    match = line.to_s.match(/\Alittleghost-sandboxd listening grpc=(\S+) rest=(\S+)/)
    raise "littleghost-sandboxd did not start: #{line.inspect} #{File.read(log)}" unless match

    daemon = Daemon.new(pid: pid, root: root, grpc: match[1], rest: match[2], log: log)
    (@remote_daemons ||= []) << daemon
    daemon
  end

  # A :remote sandbox of +daemon+, built as a configuration would.
  def remote_sandbox(daemon, **options)
    LittleGhost::Sandbox.build({provider: :remote, endpoint: daemon.endpoint, **options})
  end

  # Waits (at most +seconds+) until the block is truthy; returns its last value. For events that arrive over the
  # network: the assertion is on what arrived, not on when.
  def eventually(seconds = 20)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      value = yield
      return value if value || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.05
    end
  end

  def stop_remote_daemons
    (@remote_daemons || []).each do |daemon|
      Process.kill(:TERM, daemon.pid)
      Timeout.timeout(30) { Process.wait(daemon.pid) }
    rescue Errno::ESRCH, Errno::ECHILD
      nil
    rescue Timeout::Error
      Process.kill(:KILL, daemon.pid)
      Process.wait(daemon.pid)
    end
    (@remote_directories || []).each { |directory| FileUtils.rm_rf(directory) }
  end
end
