# frozen_string_literal: true

# Process execution benchmarks (not part of the tests). Run with
#   ruby -Ilib bench/process.rb
# Every figure is a median of samples measured in this run, next to a Ruby
# baseline measured in alternating rounds of the same run (BenchSupport.compare),
# so both see the same machine state; ratios are ours / baseline.

require_relative "support"
require "littleghost/sandbox"
require "open3"
require "tmpdir"
require "etc"

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def rss_bytes = File.read("/proc/self/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024
def open_fds = Dir.children("/proc/self/fd").size

def children
  Dir["/proc/[0-9]*/stat"].count do |path|
    File.read(path).then { |text| text[(text.rindex(")") + 2)..].split[1].to_i == Process.pid }
  rescue Errno::ENOENT
    false
  end
end

# The real Unrestricted backend when it can run programs, else ProcessRunner.
def executor(root)
  workspace = LittleGhost::Workspace.new(root: root)
  sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace)
  sandbox.execute_program(["/bin/true"], timeout: 5)
  ["Unrestricted#execute_program", ->(argv) { sandbox.execute_program(argv, timeout: 5) }]
rescue StandardError, NotImplementedError => e
  warn "Unrestricted#execute_program unavailable (#{e.class}); using ProcessRunner.run"
  ["ProcessRunner.run", ->(argv) { LittleGhost::Sandbox::ProcessRunner.run(command: argv, timeout: 5) }]
end

Dir.mktmpdir("lg-bench") do |root|
  name, execute = executor(root)
  puts "littleghost-sandbox process bench (Ruby #{RUBY_VERSION}, #{Etc.respond_to?(:nprocessors) ? Etc.nprocessors : '?'} cpus)"

  true_run = -> { execute.call(["/bin/true"]) }
  BenchSupport.compare("#{name}(/bin/true) vs Process.spawn+wait", iterations: 20, target: 1.15,
                       ours: true_run, baseline: -> { Process.wait(Process.spawn("/bin/true")) })
  BenchSupport.compare("#{name}(/bin/true) vs Open3.capture3", iterations: 20, target: 1.15,
                       ours: true_run, baseline: -> { Open3.capture3("/bin/true") })

  # A round trip polls read(timeout: 0): a positive timeout keeps collecting
  # until its deadline (18.5), so it cannot return as soon as the line is back.
  session = LittleGhost::Sandbox::ProcessSession.new(command: ["cat"])
  IO.popen(["cat"], "r+") do |io|
    session_trip = lambda do
      session.write("ping\n")
      received = +""
      received << session.read(timeout: 0).stdout until received.end_with?("ping\n")
    end
    popen_trip = lambda do
      io.write("ping\n")
      io.flush
      io.gets
    end
    BenchSupport.compare("ProcessSession write+read (cat) vs IO.popen write+gets",
                         iterations: 200, rounds: 21, target: 1.2, ours: session_trip, baseline: popen_trip)
  end
  session.close

  serial_started = now
  20.times { execute.call(["/bin/sleep", "0.2"]) }
  serial = now - serial_started
  threaded_started = now
  2.times.map { Thread.new { 10.times { execute.call(["/bin/sleep", "0.2"]) } } }.each(&:join)
  threaded = now - threaded_started
  printf("%-44s %9.3f s   vs %-22s %9.3f s   ratio %.2f (target <= 0.60) %s\n",
         "2 threads x 10 x sleep 0.2", threaded, "serial 20 x sleep 0.2", serial, threaded / serial,
         threaded / serial <= 0.6 ? "ok" : "ABOVE TARGET")

  GC.start
  rss_before = rss_bytes
  fds_before = open_fds
  soak_started = now
  10_000.times { execute.call(["/bin/true"]) }
  soak = now - soak_started
  GC.start
  printf("soak: 10000 runs in %.1f s (%.0f us each); RSS %+.1f MB (%.1f -> %.1f MB); fds %d -> %d; children left %d\n",
         soak, soak / 10_000 * 1e6, (rss_bytes - rss_before) / 1e6, rss_before / 1e6, rss_bytes / 1e6,
         fds_before, open_fds, children)
end
