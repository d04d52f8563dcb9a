# frozen_string_literal: true

require "spec_helper"
require "open3"
require "rbconfig"

# No Ruby code runs while the binding holds a lock its GC mark function takes. off_denial compares
# subscribers with Ruby's ==, which a subscriber may define; a GC started there marks the sandbox, whose mark
# function lists the subscribers. Holding their lock across == deadlocked the process with the GVL held, which only
# SIGKILL ends: the script runs in a child process that is killed if it does not finish, so a regression fails.
RSpec.describe "unsubscribing from denials" do # rubocop:disable RSpec/DescribeClass
  let(:lib) { File.expand_path("../lib", __dir__) }

  # Runs `script` in a fresh Ruby with the gem loaded; returns [stdout+stderr, status], or nil if it hung.
  def run_script(script, seconds: 60)
    Open3.popen2e(RbConfig.ruby, "-I", lib, "-rlittleghost/sandbox", "-rtmpdir", "-e", script) do |_stdin, output, waiter|
      reader = Thread.new { output.read }
      unless waiter.join(seconds)
        Process.kill(:KILL, waiter.pid)
        waiter.join
        return nil
      end
      [reader.value, waiter.value]
    end
  end

  it "returns when a subscriber's == runs the GC, and removes exactly that subscriber" do
    script = <<~RUBY
      workspace = LittleGhost::Workspace.new(root: File.realpath(Dir.mktmpdir), paths: {}).open
      sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_only}})
      seen = []
      kept = sandbox.on_denial { |denial| seen << [:kept, denial.kind] }
      handler = sandbox.on_denial { |denial| seen << [:removed, denial.kind] }
      # Comparing `kept` with `handler` runs the GC, which marks the sandbox and its subscribers.
      Proc.prepend(Module.new { def ==(other) = (GC.start; super) })
      first = sandbox.off_denial(handler)
      again = sandbox.off_denial(handler)
      begin
        sandbox.write("note.txt", "x")
      rescue LittleGhost::ToolError
      end
      puts [first, again, sandbox.off_denial(kept), seen.map(&:first).uniq].inspect
    RUBY
    output, status = run_script(script)
    expect(output).not_to be_nil, "off_denial hung (deadlock between == and the GC mark function)"
    expect(status).to be_success, output
    first, again, kept_removed, callers = eval(output.lines.last) # rubocop:disable Security/Eval
    expect([first, again, kept_removed]).to eq([true, false, true])
    expect(callers).to eq([:kept])
  end

  it "hands an exception raised by a subscriber's == to the caller, leaving the subscribers as they were" do
    script = <<~RUBY
      workspace = LittleGhost::Workspace.new(root: File.realpath(Dir.mktmpdir), paths: {}).open
      sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}})
      handler = sandbox.on_denial { |_denial| nil }
      Proc.prepend(Module.new { def ==(other) = raise(ArgumentError, "no comparison") })
      outcome = begin
        sandbox.off_denial(proc {})
      rescue ArgumentError => e
        e.message
      end
      puts [outcome, sandbox.off_denial(handler)].inspect
    RUBY
    output, status = run_script(script)
    expect(output).not_to be_nil, "off_denial hung"
    expect(status).to be_success, output
    expect(eval(output.lines.last)).to eq(["no comparison", true]) # rubocop:disable Security/Eval
  end
end
