# frozen_string_literal: true

require "spec_helper"
require "rbconfig"

# 17.12: TERM, a grace, then KILL. The grace is for processes that can act on TERM; KILL goes
# early only once every process still alive is deaf to TERM (it ignores TERM, or it is a pid namespace's init with no
# TERM handler, like bwrap's sandbox process while it sets up). A process that catches TERM keeps its grace even when
# everything around it ignores TERM.
RSpec.describe "terminating a tree" do # rubocop:disable RSpec/DescribeClass
  let(:workspace) { open_workspace }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}}) }
  let(:marker) { File.join(workspace.root, "cleaned") }

  stop = Class.new(StandardError)

  it "gives a process that catches TERM its grace although its parent ignores TERM" do
    # The Ruby child catches TERM, takes a moment to clean up and writes the marker; its shell parent ignores TERM.
    handler = "trap(:TERM) { sleep 0.2; File.write(ARGV[0], %q(cleaned)); exit!(0) }; puts :ready; $stdout.flush; sleep"
    script = "\"$0\" -e '#{handler}' \"$1\" & trap '' TERM; wait; while :; do sleep 1; done"
    argv = ["sh", "-c", script, RbConfig.ruby, marker]
    expect do
      sandbox.execute_program(argv, timeout: 60) { |_stream, chunk| raise stop if chunk.include?("ready") }
    end.to raise_error(stop)
    expect(File.read(marker)).to eq("cleaned")
  end
end
