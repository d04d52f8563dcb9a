# frozen_string_literal: true

require "spec_helper"

# One vocabulary for both launch methods: the output bound is `output_bytes:` everywhere (the older
# `max_output_bytes:` still works everywhere), and `allow_subprocesses:` is accepted by execute_program as by
# start_program. Invariant: a keyword accepted by one launch method means the same in the other.
RSpec.describe "launch keywords shared by execute_program and start_program" do
  let(:workspace) { open_workspace }
  let(:unrestricted) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace) }
  let(:bubblewrap_available) { LittleGhost::Sandbox.probe(:bubblewrap)[:available] }

  after { unrestricted.close }

  it "bounds execute_program's output with output_bytes: as with max_output_bytes:" do
    long = ["/bin/sh", "-c", "printf 0123456789"]
    expect(unrestricted.execute_program(long, timeout: 10, output_bytes: 4).stdout).to eq("0123\n[output truncated]")
    expect(unrestricted.execute_program(long, timeout: 10, max_output_bytes: 4).stdout).to eq("0123\n[output truncated]")
    expect { unrestricted.execute_program(long, timeout: 10, output_bytes: 4, max_output_bytes: 4) }
      .to raise_error(ArgumentError, /output_bytes: or its older spelling max_output_bytes:, not both/)
    expect { unrestricted.execute_program(long, timeout: 10, output_bytes: 0) }.to raise_error(ArgumentError)
  end

  it "bounds a session's output with max_output_bytes: as with output_bytes:" do
    session = unrestricted.start_program(["/bin/sh", "-c", "head -c 100 /dev/zero; sleep 5"], max_output_bytes: 10)
    expect { 50.times { session.read(timeout: 0.1) } }.to raise_error(LittleGhost::ToolError, /output exceeded 10 bytes/)
  ensure
    session&.close
  end

  it "streams execute's output to a block as execute_program does, and still returns the Execution" do
    chunks = []
    result = unrestricted.execute("printf out; printf err >&2", timeout: 10) { |stream, chunk| chunks << [stream, chunk] }
    expect(chunks.sort).to eq([[:stderr, "err"], [:stdout, "out"]])
    expect([result.stdout, result.stderr]).to eq(%w[out err])
    scope_chunks = []
    unrestricted.scope.execute("printf scoped", timeout: 10) { |stream, chunk| scope_chunks << [stream, chunk] }
    expect(scope_chunks).to eq([[:stdout, "scoped"]])
    expect(unrestricted.execute("printf 0123456789", timeout: 10, max_output_bytes: 3).stdout)
      .to eq("012\n[output truncated]")
  end

  it "refuses allow_subprocesses: false on the host for execute_program as for start_program" do
    expect { unrestricted.execute_program(["/bin/true"], timeout: 10, allow_subprocesses: false) }
      .to raise_error(LittleGhost::CapabilityError, /cannot prohibit subprocess creation/)
  end

  it "stops a child's fork under Bubblewrap with execute_program(allow_subprocesses: false)" do
    skip "Bubblewrap is unavailable here" unless bubblewrap_available

    sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace)
    forked = sandbox.execute_program(["/bin/sh", "-c", "/bin/true && echo forked"], timeout: 10,
                                                                                   allow_subprocesses: false)
    expect(forked.stdout).not_to include("forked")
    allowed = sandbox.execute_program(["/bin/sh", "-c", "/bin/true && echo forked"], timeout: 10)
    expect(allowed.stdout).to eq("forked\n")
  ensure
    sandbox&.close
  end
end
