# frozen_string_literal: true

# Bubblewrap launch overhead (not part of the tests). Run with
#   ruby -Ilib bench/bubblewrap.rb
# Compares execute_program(["/bin/true"]) through Sandboxes::Bubblewrap with
# spawning the identical bwrap argv directly from Ruby (target <= 1.10x), and
# prints the absolute medians of both and of the Unrestricted backend, all
# measured interleaved in this run.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "littleghost/sandbox"
require "tmpdir"
require_relative "support"

unless LittleGhost::Sandboxes::Bubblewrap.probe[:available]
  puts "skipped: #{LittleGhost::Sandboxes::Bubblewrap.probe[:reason]}"
  exit 0
end

Dir.mktmpdir("lg-bench-bwrap") do |dir|
  workspace = LittleGhost::Workspace.new(root: dir, paths: {source: "src"}).open
  policy = {files: {root: :read_write, source: :read_only}}
  bubblewrap = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy).open
  unrestricted = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy)

  # The argv execute_program builds: bwrap, its options, "--", the command.
  environment = workspace.environment.to_h
  direct_argv = ["/usr/bin/bwrap", *bubblewrap.bubblewrap_args(environment: environment), "--", "/bin/true"]
  direct = lambda do
    pid = Process.spawn({}, *direct_argv, unsetenv_others: true, in: :close, out: File::NULL, err: File::NULL, pgroup: true)
    Process.wait(pid)
    raise "bwrap failed" unless $?.success?
  end
  ours = -> { raise "bwrap failed" unless bubblewrap.execute_program(["/bin/true"], timeout: 10).success? }
  host = -> { raise "true failed" unless unrestricted.execute_program(["/bin/true"], timeout: 10).success? }

  BenchSupport.compare("Bubblewrap#execute_program(/bin/true) vs direct bwrap spawn",
                       iterations: 10, rounds: 15, target: 1.10, ours: ours, baseline: direct)
  BenchSupport.compare("Unrestricted#execute_program(/bin/true) vs direct bwrap spawn",
                       iterations: 10, rounds: 15, ours: host, baseline: direct)
end
