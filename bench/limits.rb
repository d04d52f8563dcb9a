# frozen_string_literal: true

# Cost of kernel-enforced launch limits (SPEC §25). Run as root (or
# with a delegated cgroup) with
#   ruby -Ilib bench/limits.rb
# Interleaved rounds (BenchSupport.compare); prints the ratio and the
# absolute time added per launch (target: at most 1.5 ms).

require_relative "support"
require "littleghost/sandbox"
require "tmpdir"

TARGET_ADDED = 0.0015

def report_added(label)
  ours, base = BenchSupport.last_medians
  added = ours - base
  verdict = added <= TARGET_ADDED ? "met" : "MISSED"
  printf("  %-56s added %7.3f ms per launch (target <= %.1f ms: %s)\n", label, added * 1e3, TARGET_ADDED * 1e3, verdict)
end

Dir.mktmpdir("lg-bench-limits") do |root|
  workspace = LittleGhost::Workspace.new(root: root)
  sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace)
  puts "kernel limits here: #{LittleGhost::Sandbox.probe(:unrestricted)[:limits].inspect}"
  limits = { memory_bytes: 256 << 20, tasks: 64, cpu_seconds: 60 }
  limited = -> { sandbox.execute_program(["/bin/true"], timeout: 5, **limits) }
  plain = -> { sandbox.execute_program(["/bin/true"], timeout: 5) }
  uncontained = -> { LittleGhost::Sandbox::ProcessRunner.run(command: ["/bin/true"], timeout: 5) }

  BenchSupport.compare("execute_program(/bin/true): all 3 limits vs none", iterations: 20, ours: limited, baseline: plain)
  report_added("limits over a plain (tree-owning) launch")
  BenchSupport.compare("execute_program(/bin/true): all 3 limits vs no cgroup", iterations: 20,
                       ours: limited, baseline: uncontained)
  report_added("limits over a launch without any cgroup")
  BenchSupport.compare("execute_program(/bin/true): tree-owning vs no cgroup", iterations: 20,
                       ours: plain, baseline: uncontained)
  report_added("tree ownership (Unrestricted default) over no cgroup")
end
