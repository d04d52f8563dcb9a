# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# A limit reads the same whatever enforces it. A program
# ended at its CPU or memory limit raises LittleGhost::Sandbox::LimitError (a
# ToolError with the documented L.2 message) carrying the Execution of what
# it wrote before it was ended, and is one `:limit` denial, whether a
# launch cgroup enforced the limit (root here) or the L.3 fallback did
# (uid 65534: per-process RLIMIT_CPU, sampled memory).
# What a reporting script prints as JSON when a new Ruby runs it (under `prefix`, e.g. setpriv).
module LimitReport
  include ProcessHelpers

  def limit_report(script, *prefix)
    lib = File.expand_path("../lib", __dir__)
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", script, chdir: "/tmp")
    raise "#{prefix.inspect} failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  end

  # The backend named `name` (a Sandboxes class), or a skip saying why it cannot run here.
  def backend!(name)
    probe = LittleGhost::Sandboxes.const_get(name).probe
    skip "#{name} is unavailable here: #{probe[:reason]}" unless probe[:available]
  end
end

RSpec.describe LittleGhost::Sandbox::LimitError do
  SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    root = Dir.mktmpdir
    backend = LittleGhost::Sandboxes.const_get(ENV.fetch("LIMIT_BACKEND", "Unrestricted"))
    sandbox = backend.new(workspace: LittleGhost::Workspace.new(root: root))
    seen = []
    sandbox.on_denial { |denial| seen << denial.to_h.except(:time).transform_values(&:to_s) }
    spin = ["sh", "-c", "echo started; while :; do :; done"]
    # The system's Ruby, which the sandbox shows (spec/support/sandboxed_ruby.rb), not the one running this script.
    grow = ["sh", "-c", "echo started; exec /usr/bin/ruby -e 'a = []; loop { a << (\"x\" * 1_048_576) }'"]
    report = {}
    {cpu: [spin, {cpu_seconds: 1}], memory: [grow, {memory_bytes: 64 << 20}]}.each do |name, (argv, limits)|
      seen.clear
      begin
        execution = sandbox.execute_program(argv, timeout: 60, **limits)
        report[name] = {returned: [execution.exit_code, execution.signal]}
      rescue LittleGhost::ToolError => e
        report[name] = {class: e.class.name, message: e.message,
                        stdout: e.respond_to?(:execution) ? e.execution&.stdout : :none}
      end
      report[name][:denials] = seen.dup
    end
    report[:limits] = backend.probe[:limits].transform_values(&:to_s)
    puts JSON.generate(report)
  RUBY

  include LimitReport

  def outcome(*prefix, backend: "Unrestricted")
    limit_report(SCRIPT, "env", "LIMIT_BACKEND=#{backend}", *prefix)
  end


  def expect_limit(result, message, reason)
    expect(result.except(:denials)).to eq(class: "LittleGhost::Sandbox::LimitError", message: message, stdout: "started\n")
    expect(result[:denials]).to eq([{kind: "limit", operation: "execute", target: "sh", reason: reason, message: message}])
  end

  def expect_one_outcome(report)
    expect_limit(report[:cpu], "Program CPU time exceeded 1 second", "cpu_limit")
    expect_limit(report[:memory], "Program memory exceeded #{64 << 20} bytes", "memory_limit")
  end

  it "is a ToolError carrying an execution" do
    expect(described_class.ancestors).to include(LittleGhost::ToolError)
    expect(described_class.instance_method(:execution)).to be_a(UnboundMethod)
  end

  it "a CPU or memory limit kill raises it with the output so far and is one denial, as this user" do
    expect_one_outcome(outcome)
  end

  it "reads the same as uid 65534, where RLIMIT_CPU and sampling stand in for the cgroup" do
    report = outcome(*drop_to_nobody!)
    expect(report[:limits][:cpu_seconds]).not_to eq("true"), "uid 65534 has a writable cgroup here"
    expect_one_outcome(report)
  end

  # Bubblewrap stands between the program and the gem: its status is
  # bwrap's, where a program a signal ended reads as an exit of 128+N.
  it "reads the same on Bubblewrap, as this user and as uid 65534 (RLIMIT_CPU behind bwrap)" do
    backend!(:Bubblewrap)
    expect_one_outcome(outcome(backend: "Bubblewrap"))
    report = outcome(*drop_to_nobody!, backend: "Bubblewrap")
    expect(report[:limits][:cpu_seconds]).not_to eq("true"), "uid 65534 has a writable cgroup here"
    expect_one_outcome(report)
  end

  # The Landlock helper stands between the program and the gem and dies of
  # the program's signal.
  it "reads the same on Landlock, as this user and as uid 65534" do
    backend!(:Landlock)
    expect_one_outcome(outcome(backend: "Landlock"))
    expect_one_outcome(outcome(*drop_to_nobody!, backend: "Landlock"))
  end
end

# A task limit that stops a fork bomb is visible. The kernel
# refuses the extra processes (EAGAIN) and kills nothing, so the program's
# own result stands, and the refusal is one `:limit` denial (`:task_limit`).
# Where no cgroup can bound the tree, `tasks:` is refused before spawning
# (CapabilityError, spec/process_limits_spec.rb).
RSpec.describe "A task limit that refuses processes" do
  let(:workspace) { open_workspace }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace) }

  it "is one task_limit denial, and the program's own result is returned" do
    limits = LittleGhost::Sandbox.probe(:unrestricted)[:limits]
    skip "no pids cgroup here: #{limits[:tasks]}" unless limits[:tasks] == true
    seen = []
    sandbox.on_denial { |denial| seen << denial }
    bomb = ["sh", "-c", "echo started; for i in 1 2 3 4 5 6 7 8 9 10 11 12; do sleep 2 & done; wait"]
    execution = sandbox.execute_program(bomb, timeout: 30, tasks: 4)
    # sh gives up when fork fails: its own exit and message, not a kill.
    expect(execution.stdout).to eq("started\n")
    expect(execution.stderr).to match(/fork/i)
    expect(execution.exit_code).not_to eq(0)
    expect(seen.map { |d| [d.kind, d.operation, d.target, d.reason] }).to eq([[:limit, :execute, "sh", :task_limit]])
    expect(seen.first.message).to eq("Program task limit of 4 refused a new process")
    expect(sandbox.denials).to eq(seen)
  end

  it "a program that stays under it records nothing" do
    limits = LittleGhost::Sandbox.probe(:unrestricted)[:limits]
    skip "no pids cgroup here: #{limits[:tasks]}" unless limits[:tasks] == true
    expect(sandbox.execute_program(["sh", "-c", "sleep 0 & wait; echo ok"], timeout: 30, tasks: 4).stdout).to eq("ok\n")
    expect(sandbox.denials).to be_empty
  end
end

# A session ended at its CPU or memory limit reads the same
# whatever enforced it: its next call raises LimitError with the L.2 message
# carrying an Execution of the output no `read` returned (here all of it:
# "started"), and the limit is one denial, under a cgroup (root) and under
# RLIMIT_CPU and sampled memory (uid 65534).
RSpec.describe "A session ended at its CPU or memory limit" do
  SESSION_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    workspace = LittleGhost::Workspace.new(root: Dir.mktmpdir)
    sandbox = LittleGhost::Sandboxes.const_get(ENV.fetch("LIMIT_BACKEND", "Unrestricted")).new(workspace: workspace)
    seen = []
    sandbox.on_denial { |denial| seen << denial.reason.to_s }
    spin = ["sh", "-c", "echo started; while :; do :; done"]
    # The system's Ruby, which the sandbox shows (spec/support/sandboxed_ruby.rb), not the one running this script.
    grow = ["sh", "-c", "echo started; exec /usr/bin/ruby -e 'a = []; loop { a << (\"x\" * 1_048_576) }'"]
    report = {}
    {cpu: [spin, {cpu_seconds: 1}], memory: [grow, {memory_bytes: 64 << 20}]}.each do |name, (argv, limits)|
      seen.clear
      session = sandbox.start_program(argv, **limits)
      report[name] = begin
        session.wait(timeout: 60)
        {returned: true}
      rescue LittleGhost::ToolError => e
        {class: e.class.name, message: e.message, stdout: e.execution&.stdout}
      end
      session.close
      report[name][:denials] = seen.dup
    end
    puts JSON.generate(report)
  RUBY

  include LimitReport

  def session_outcome(*prefix, backend: "Unrestricted")
    limit_report(SESSION_SCRIPT, "env", "LIMIT_BACKEND=#{backend}", *prefix)
  end

  let(:expected) do
    {cpu: {class: "LittleGhost::Sandbox::LimitError", message: "Program CPU time exceeded 1 second",
           stdout: "started\n", denials: ["cpu_limit"]},
     memory: {class: "LittleGhost::Sandbox::LimitError", message: "Program memory exceeded #{64 << 20} bytes",
              stdout: "started\n", denials: ["memory_limit"]}}
  end

  it "raises LimitError carrying the unread output on its next call and is one denial, as this user" do
    expect(session_outcome).to eq(expected)
  end

  it "reads the same as uid 65534 (RLIMIT_CPU, sampled memory)" do
    expect(session_outcome(*drop_to_nobody!)).to eq(expected)
  end

  it "reads the same on Bubblewrap, as this user and as uid 65534 (RLIMIT_CPU behind bwrap)" do
    backend!(:Bubblewrap)
    expect(session_outcome(backend: "Bubblewrap")).to eq(expected)
    expect(session_outcome(*drop_to_nobody!, backend: "Bubblewrap")).to eq(expected)
  end
end
