# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# `capabilities` says how `cpu_seconds` holds, and the claim is what a program sees. `:cpu_limit` means the
# CPU time of the whole tree is bounded (a launch cgroup): two processes that each stay under the limit but together
# pass it are ended (LimitError). `:process_cpu_limit` means the per-process RLIMIT_CPU fallback (L.3, no writable
# cgroup, e.g. as uid 65534): each process may use that much, so the same pair runs to its end. Exactly one of the
# two is listed, by every Linux backend and by Sandbox.probe.
RSpec.describe "How capabilities report cpu_seconds" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  CPU_SCOPE_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    ruby = ARGV.fetch(0)
    # Two processes of 0.8 CPU seconds each: under cpu_seconds: 1 apiece, 1.6 together.
    spin = "nil while Process.clock_gettime(Process::CLOCK_PROCESS_CPUTIME_ID) < 0.8"
    pair = ["sh", "-c", "\"$0\" -e '#{spin}' & \"$0\" -e '#{spin}' & wait; echo both-finished", ruby]
    report = {}
    {unrestricted: LittleGhost::Sandboxes::Unrestricted, bubblewrap: LittleGhost::Sandboxes::Bubblewrap,
     landlock: LittleGhost::Sandboxes::Landlock}.each do |name, backend|
      probe = backend.probe
      next report[name] = {unavailable: probe[:reason]} unless probe[:available]

      root = Dir.mktmpdir
      sandbox = backend.new(workspace: LittleGhost::Workspace.new(root: root), policy: {files: {root: :read_write}}).open
      entry = {features: sandbox.capabilities.features.map(&:to_s) & %w[cpu_limit process_cpu_limit],
               probed: probe[:capabilities].features.map(&:to_s) & %w[cpu_limit process_cpu_limit]}
      begin
        entry[:stdout] = sandbox.execute_program(pair, timeout: 60, cpu_seconds: 1).stdout
      rescue LittleGhost::ToolError => e
        entry[:error] = [e.class.name, e.message]
      end
      sandbox.close
      report[name] = entry
    end
    report[:probe_cpu_seconds] = LittleGhost::Sandbox.probe(:unrestricted)[:limits][:cpu_seconds].to_s
    puts JSON.generate(report)
  RUBY

  def report(*prefix)
    lib = File.expand_path("../lib", __dir__)
    # The script runs under the suite's Ruby; the pair it launches in each sandbox, under the one the sandbox shows.
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", CPU_SCOPE_SCRIPT, SANDBOXED_RUBY,
                                            chdir: "/tmp")
    raise "#{prefix.inspect} failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  end

  # Every available backend claims one scope and behaves as it claims.
  def expect_honest(report, scope)
    backends = report.slice(:unrestricted, :bubblewrap, :landlock).reject { |_, entry| entry.key?(:unavailable) }
    expect(backends).not_to be_empty
    backends.each do |name, entry|
      expect([name, entry[:features], entry[:probed]]).to eq([name, [scope], [scope]])
      if scope == "cpu_limit"
        expect([name, entry[:error]]).to eq([name, ["LittleGhost::Sandbox::LimitError", "Program CPU time exceeded 1 second"]])
      else
        expect([name, entry[:stdout]]).to eq([name, "both-finished\n"])
      end
    end
  end

  it "says :cpu_limit where the tree is bounded and :process_cpu_limit where only each process is, as this user" do
    result = report
    expect_honest(result, result[:probe_cpu_seconds] == "true" ? "cpu_limit" : "process_cpu_limit")
  end

  it "says :process_cpu_limit as uid 65534, where RLIMIT_CPU stands in for the cgroup, and each process may use it" do
    result = report(*drop_to_nobody!)
    expect(result[:probe_cpu_seconds]).not_to eq("true"), "uid 65534 has a writable cgroup here"
    expect_honest(result, "process_cpu_limit")
  end
end
