# frozen_string_literal: true

require "spec_helper"

# A command run by the Landlock backend starts with the signal dispositions any other launch gives it: none
# ignored. The supervisor helper is a Rust program whose runtime ignores SIGPIPE, and an ignored signal stays
# ignored across execve, so before the fix `yes | head -c 1` left `yes` writing into a closed pipe, failing with
# EPIPE ("Broken pipe") instead of ending on SIGPIPE the way it does everywhere else.
RSpec.describe "Landlock launches and signal dispositions" do
  include ProcessHelpers

  before do
    probe = LittleGhost::Sandboxes::Landlock.probe
    skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "needs /bin/bash" unless File.executable?("/bin/bash")
  end

  let(:workspace) { open_workspace }
  let(:sandbox) { LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}}) }

  after { sandbox.close }

  it "a command writing into a closed pipe ends on SIGPIPE, as it does outside the sandbox" do
    script = 'yes | head -c 1 >/dev/null; echo "${PIPESTATUS[0]}"'
    outside = IO.popen(["/bin/bash", "-c", script], &:read)
    expect(outside.strip).to eq((128 + Signal.list.fetch("PIPE")).to_s)
    result = sandbox.execute_program(["/bin/bash", "-c", script], timeout: 20)
    expect([result.stdout.strip, result.stderr]).to eq([outside.strip, ""])
  end
end
