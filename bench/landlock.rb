# frozen_string_literal: true

# Landlock launch overhead (not part of the tests). Run with
#   ruby -Ilib bench/landlock.rb
# Compares execute_program(["/bin/true"]) through Sandboxes::Landlock (the
# gem's supervisor helper applies Landlock + seccomp, then runs the command)
# with Process.spawn + wait of the same program (target <= 1.5x), interleaved
# in this run, under a root-only policy and a nested one. Every launch runs
# in its own cgroup where the host can make one.
#
# Then, where the kernel lets the supervisor intercept connect, an
# allowlisted launch (the built-in gateway already open; the child hands its
# filter's listener to the supervisor, which starts a thread for it) vs a
# :none one (target: within 2 ms).
#
# The baseline is not the same cost for every user: Ruby's Process.spawn
# uses vfork only when the process is unprivileged, and forks (copying the
# page tables of the whole Ruby process) when its uid or gid is 0. So as
# root the baseline is about 1.4 ms and the ratio is what the issue's
# 1.5x bar means; as an ordinary user it is about 0.55 ms, and a Landlock
# launch (the helper's exec, Landlock, seccomp and its own fork, then the
# command's exec) costs about three of them. Both sides are wall time:
# on a loaded machine a launch, which hands over between more threads and
# processes than a plain spawn, suffers more than its baseline.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "littleghost/sandbox"
require "tmpdir"
require_relative "support"

probe = LittleGhost::Sandboxes::Landlock.probe
unless probe[:available]
  puts "skipped: #{probe[:reason]}"
  exit 0
end

Dir.mktmpdir("lg-bench-landlock") do |dir|
  workspace = LittleGhost::Workspace.new(root: dir, paths: {source: "src"}).open
  spawn = lambda do
    pid = Process.spawn("/bin/true", in: :close, out: File::NULL, err: File::NULL, pgroup: true)
    Process.wait(pid)
    raise "true failed" unless $?.success?
  end
  {
    "root read-write" => {files: {root: :read_write}},
    # A read-only grant inside a writable one is refused (CapabilityError):
    # the nested case that remains is a writable grant inside a read-only one.
    "root read-only, source read-write" => {files: {root: :read_only, source: :read_write}}
  }.each do |label, policy|
    landlock = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: policy).open
    ours = -> { raise "landlock launch failed" unless landlock.execute_program(["/bin/true"], timeout: 10).success? }
    BenchSupport.compare("Landlock#execute_program(/bin/true), #{label}, vs Process.spawn+wait",
                         iterations: 10, rounds: 15, target: 1.5, ours: ours, baseline: spawn)
    landlock.close
  end
  if probe[:allowlist_unavailable].nil?
    allowlist = {allow: ["localhost:1"], gateway: {allow_private_destinations: true}}
    gated = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {network: allowlist}).open
    none = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {network: :none}).open
    ours = -> { raise "allowlist launch failed" unless gated.execute_program(["/bin/true"], timeout: 10).success? }
    baseline = -> { raise "none launch failed" unless none.execute_program(["/bin/true"], timeout: 10).success? }
    BenchSupport.compare("Landlock#execute_program(/bin/true), :allowlist vs :none", iterations: 10, rounds: 15,
                                                                                    ours: ours, baseline: baseline)
    difference = (BenchSupport.last_medians[0] - BenchSupport.last_medians[1]) * 1000
    printf("an allowlisted Landlock launch costs %.2f ms more than a :none one (target <= 2 ms: %s)\n", difference,
           difference <= 2 ? "met" : "MISSED")
    [gated, none].each(&:close)
  end
end
