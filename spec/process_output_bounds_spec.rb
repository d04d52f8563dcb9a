# frozen_string_literal: true

require "spec_helper"

# A child flooding its output, read or not, is cut off at the output bound and
# costs the Ruby process bounded memory.
RSpec.describe "a child that floods its output" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  let(:path_env) { {"PATH" => "/usr/bin:/bin"} }
  let(:sessions) { [] }

  after { sessions.each(&:close) }

  it "is drained from stderr alone (100 MB) with a 1 MB bound in bounded memory" do
    GC.start
    before = rss_bytes
    execution = LittleGhost::Sandbox::ProcessRunner.run(command: ["/bin/sh", "-c", "head -c 100000000 /dev/zero >&2"],
                                                        timeout: 60, environment: path_env)
    expect([execution.exit_code, execution.stdout]).to eq([0, ""])
    expect(execution.stderr.bytesize).to eq(1_000_000 + "\n[output truncated]".bytesize)
    expect(rss_bytes - before).to be < 40 * 1024 * 1024
  end

  it "is stopped at output_bytes when its session is never read, in bounded memory" do
    GC.start
    before = rss_bytes
    session = LittleGhost::Sandbox::ProcessSession.new(command: ["/bin/sh", "-c", "head -c 100000000 /dev/zero"],
                                                       environment: path_env)
    sessions << session
    expect { session.wait(timeout: 30) }.to raise_error(LittleGhost::ToolError, "Program output exceeded 1000000 bytes")
    # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(session.pid).empty? }).to be(true)
    expect(rss_bytes - before).to be < 40 * 1024 * 1024
  end
end
