# frozen_string_literal: true

require "spec_helper"

# A session that passes its output bound (18.5) ends as every other limit does. Its error is
# LittleGhost::Sandbox::LimitError (a ToolError, the message of 18.5) carrying an Execution of the output no `read`
# handed out, up to the bound, and how the program ended; the sandbox records one `:output_limit` denial; every later
# call raises that same error object. Nothing the program wrote up to the bound is lost: what `read` returned plus
# what the error carries is exactly the first `output_bytes` bytes.
{
  "Unrestricted" => -> { LittleGhost::Sandboxes::Unrestricted },
  "Bubblewrap" => -> { LittleGhost::Sandboxes::Bubblewrap },
  "Landlock" => -> { LittleGhost::Sandboxes::Landlock }
}.each do |name, backend|
  RSpec.describe "A session past its output bound on #{name}" do # rubocop:disable RSpec/DescribeClass
    let(:sandbox) do
      probe = backend.call.probe
      skip "#{name} is unavailable here: #{probe[:reason]}" unless probe[:available]
      backend.call.new(workspace: open_workspace, policy: {files: {root: :read_write}}).open
    end
    let(:bound) { 1000 }
    # 5 bytes, then far more than the bound, then it waits to be terminated.
    let(:flood) { ["sh", "-c", "printf head-; head -c 5000 /dev/zero | tr '\\0' x; sleep 30"] }

    after do
      @session&.close
      sandbox.close
    end

    def expect_the_limit(error)
      expect(error).to be_a(LittleGhost::Sandbox::LimitError)
      expect(error.message).to eq("Program output exceeded #{bound} bytes")
      expect(error.execution).to be_a(LittleGhost::Sandbox::Execution)
      # Terminated (17.12) before the error was raised.
      expect(error.execution.signal).to eq(Signal.list.fetch("TERM"))
      expect(sandbox.denials.map { |d| [d.kind, d.operation, d.target, d.reason, d.message] })
        .to eq([[:limit, :execute, "sh", :output_limit, "Program output exceeded #{bound} bytes"]])
    end

    it "raises LimitError from wait, carrying the output up to the bound, and is one output_limit denial" do
      @session = sandbox.start_program(flood, output_bytes: bound)
      error = (@session.wait(timeout: 30) rescue $!) # rubocop:disable Style/RescueModifier
      expect_the_limit(error)
      expect(error.execution.stdout).to eq("head-#{"x" * (bound - 5)}")
      expect(error.execution.stderr).to eq("")
      expect { @session.alive? }.to raise_error { |again| expect(again).to equal(error) }
      expect { @session.read }.to raise_error { |again| expect(again).to equal(error) }
      expect(sandbox.denials.size).to eq(1)
    end

    it "raises LimitError from the read that passes the bound, carrying what no read returned" do
      @session = sandbox.start_program(flood, output_bytes: bound)
      returned = +""
      error = nil
      200.times do
        returned << @session.read(timeout: 0.05).stdout
      rescue LittleGhost::ToolError => e
        error = e
        break
      end
      expect_the_limit(error)
      expect(returned + error.execution.stdout).to eq("head-#{"x" * (bound - 5)}")
      expect { @session.wait(timeout: 1) }.to raise_error { |again| expect(again).to equal(error) }
    end

    it "names the caller's program in the denial, as execute_program's output kill does (never the wrapper)" do
      execution = sandbox.execute_program(flood, timeout: 30, max_output_bytes: bound, kill_on_output_limit: true)
      expect(execution.stdout).to start_with("head-")
      expect(sandbox.denials.map { |d| [d.reason, d.target] }).to eq([[:output_limit, "sh"]])
    end

    it "counts stderr in the same bound and keeps it in the error" do
      script = "printf oops >&2; head -c 5000 /dev/zero | tr '\\0' x >&2; sleep 30"
      @session = sandbox.start_program(["sh", "-c", script], output_bytes: bound)
      error = (@session.wait(timeout: 30) rescue $!) # rubocop:disable Style/RescueModifier
      expect_the_limit(error)
      expect(error.execution.stdout).to eq("")
      expect(error.execution.stderr).to eq("oops#{"x" * (bound - 4)}")
    end
  end
end
