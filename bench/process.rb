# frozen_string_literal: true

# Process execution benchmarks (not part of the tests). Run with
#   ruby -Ilib bench/process.rb
# Every figure is a median of samples measured in this run, next to a Ruby
# baseline measured in the same run; ratios are ours / baseline.

require "littleghost/sandbox"
require "open3"
require "tmpdir"
require "etc"

def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def median(samples)
  sorted = samples.sort
  mid = sorted.size / 2
  sorted.size.odd? ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2.0
end

# Median seconds per call over +rounds+ rounds of +batch+ calls.
def measure(rounds: 15, batch: 20)
  2.times { yield } # warm up
  samples = Array.new(rounds) do
    started = now
    batch.times { yield }
    (now - started) / batch
  end
  median(samples)
end

def report(name, ours, baseline, baseline_name, target)
  ratio = ours / baseline
  verdict = ratio <= target ? "ok" : "ABOVE TARGET"
  printf("%-44s %9.1f us  vs %-22s %9.1f us  ratio %.2f (target <= %.2f) %s\n",
         name, ours * 1e6, baseline_name, baseline * 1e6, ratio, target, verdict)
end

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

  ours = measure { execute.call(["/bin/true"]) }
  spawn_wait = measure { Process.wait(Process.spawn("/bin/true")) }
  capture3 = measure { Open3.capture3("/bin/true") }
  report("#{name}(/bin/true)", ours, spawn_wait, "Process.spawn+wait", 1.15)
  report("#{name}(/bin/true)", ours, capture3, "Open3.capture3", 1.15)

  session = LittleGhost::Sandbox::ProcessSession.new(command: ["cat"])
  round_trip = measure(batch: 50) do
    session.write("ping\n")
    received = +""
    received << session.read(timeout: 0).stdout until received.end_with?("ping\n")
  end
  session.close
  popen_trip = IO.popen(["cat"], "r+") do |io|
    measure(batch: 50) do
      io.write("ping\n")
      io.flush
      io.gets
    end
  end
  report("ProcessSession write+read (cat)", round_trip, popen_trip, "IO.popen write+gets", 1.2)

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
