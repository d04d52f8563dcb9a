# frozen_string_literal: true

require "spec_helper"

# What a caller gets from a program while it runs and when it is cut off:
# streamed chunks, the partial Execution of a
# timeout, a flood ended at the output cap, a session that says what it is,
# and a memory limit that ends every descendant.
RSpec.describe "process output while it runs" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  let(:path_env) { {"PATH" => "/usr/bin:/bin"} }

  shared_examples "a backend that reports output as it comes" do
    it "keeps what a timed-out program wrote on the raised error, which is still a ToolError" do
      raised = nil
      begin
        sandbox.execute_program(["sh", "-c", "echo partial; echo oops >&2; sleep 3"], timeout: 1)
      rescue LittleGhost::ToolError => e
        raised = e
      end
      expect(raised).to be_a(LittleGhost::Sandbox::TimeoutError)
      expect(raised.message).to eq("Command timed out after 1.0 seconds")
      execution = raised.execution
      expect(execution).to be_a(LittleGhost::Sandbox::Execution)
      expect([execution.stdout, execution.stderr, execution.exit_code]).to eq(["partial\n", "oops\n", nil])
      expect(execution).to be_frozen
    end

    it "ends a flood at the output cap with kill_on_output_limit, long before its timeout" do
      result = sandbox.execute_program(["sh", "-c", "yes; sleep 60"], timeout: 60, max_output_bytes: 1000,
                                                                      kill_on_output_limit: true)
      expect(result.stdout).to eq("#{"y\n" * 500}\n[output truncated]")
      expect(result.exit_code).to be_nil
      expect(result).not_to be_success
    end

    it "yields stdout and stderr chunks in the caller's thread while the program runs" do
      flag = File.join(workspace_root, "go")
      script = "echo first; echo warn >&2; while [ ! -e #{flag} ]; do sleep 0.01; done; echo second"
      chunks = []
      threads = []
      result = sandbox.execute_program(["sh", "-c", script], timeout: 20) do |stream, chunk|
        threads << Thread.current
        chunks << [stream, chunk]
        # The child waits for this file: a block only called at the end would time out.
        File.write(flag, "") if chunk.include?("first")
      end
      expect(result.stdout).to eq("first\nsecond\n")
      expect(result.stderr).to eq("warn\n")
      expect(chunks.select { |stream, _| stream == :stdout }.map(&:last).join).to eq("first\nsecond\n")
      expect(chunks.select { |stream, _| stream == :stderr }.map(&:last).join).to eq("warn\n")
      expect(chunks.map(&:last)).to all(be_frozen)
      expect(threads.uniq).to eq([Thread.current])
    end

    it "stops the program and raises the block's exception" do
      expect do
        sandbox.execute_program(["sh", "-c", "echo x; sleep 30"], timeout: 30) { |_stream, _chunk| raise IOError, "stop" }
      end.to raise_error(IOError, "stop")
      expect(live_children).to be_empty
    end
  end

  describe LittleGhost::Sandboxes::Unrestricted do
    let(:workspace) { open_workspace }
    let(:workspace_root) { workspace.root }
    let(:sandbox) { described_class.new(workspace: workspace) }

    it_behaves_like "a backend that reports output as it comes"

    it "streams through Scope#execute_program to its sandbox" do
      chunks = []
      scope = sandbox.scope(files: {root: :read_only}, runtime_paths: [])
      result = scope.execute_program(["echo", "scoped"], timeout: 10) { |stream, chunk| chunks << [stream, chunk] }
      expect(result.stdout).to eq("scoped\n")
      expect(chunks).to eq([[:stdout, "scoped\n"]])
    end
  end

  describe LittleGhost::Sandboxes::Bubblewrap do
    bwrap_ready = described_class.probe[:available]
    before { skip "bubblewrap is unavailable here: #{described_class.probe[:reason]}" unless bwrap_ready }

    let(:workspace) { open_workspace }
    let(:workspace_root) { workspace.root }
    let(:sandbox) { described_class.new(workspace: workspace, policy: {files: {root: :read_write}}) }

    it_behaves_like "a backend that reports output as it comes"
  end

  describe LittleGhost::Sandbox::ProcessSession do
    let(:sessions) { [] }

    after { sessions.each(&:close) }

    def start(command, **options)
      described_class.new(command: command, environment: path_env, **options).tap { |session| sessions << session }
    end

    it "inspects as its pid, whether it is alive, and its command" do
      session = start(["sleep", "30"])
      expect(session.inspect).to eq(
        "#<LittleGhost::Sandbox::ProcessSession pid=#{session.pid} alive=true command=[\"sleep\", \"30\"]>"
      )
      session.close
      expect(session.inspect).to eq(
        "#<LittleGhost::Sandbox::ProcessSession pid=#{session.pid} alive=false closed command=[\"sleep\", \"30\"]>"
      )
    end

    it "ends a descendant that left the group when the memory limit is passed" do
      armed = false
      session = start(["sh", "-c", "setsid sleep 60 & echo $!; wait"], memory_bytes: 1000,
                                                                        memory_reader: ->(_pid) { armed ? 10**9 : 1 })
      output = +""
      eventually(5) { (output << session.read(timeout: 0.1).stdout).include?("\n") }
      escaped = output.to_i
      expect(process_alive?(escaped)).to be(true)
      armed = true
      expect { session.wait(timeout: 10) }.to raise_error(LittleGhost::ToolError, "Program memory exceeded 1000 bytes")
      expect(eventually(5) { !process_alive?(escaped) }).to be(true)
    end
  end
end
