# frozen_string_literal: true

require "spec_helper"

# A closed ProcessSession answers every call predictably, and concurrent
# writers never interleave within one write.
RSpec.describe LittleGhost::Sandbox::ProcessSession do
  include ProcessHelpers

  let(:sessions) { [] }

  after { sessions.each(&:close) }

  def start(command, **options)
    described_class.new(command: command, **options).tap { |session| sessions << session }
  end

  it "answers after close: closed, not alive, IOError for I/O, close stays idempotent" do
    session = start(["cat"])
    pid = session.pid
    expect([session.close, session.close]).to eq([nil, nil])
    expect(session.closed?).to be(true)
    expect(session.alive?).to be(false)
    expect(session.pid).to eq(pid)
    expect(session.close_write).to be_nil
    expect { session.write("x") }.to raise_error(IOError, "process session is closed")
    expect { session.read }.to raise_error(IOError, "process session is closed")
    expect(session.wait(timeout: 1).termsig).to eq(15)
    # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(pid).empty? }).to be(true)
    expect(zombie_children).to be_empty
  end

  it "never interleaves two threads' writes" do
    session = start(["cat"], output_bytes: 10**8)
    line_a = "#{'A' * 70_000}\n"
    line_b = "#{'B' * 70_000}\n"
    reader = Thread.new do
      output = +"".b
      until (chunk = session.read(timeout: 0.1)).eof
        output << chunk.stdout
      end
      output << chunk.stdout
    end
    [line_a, line_b].map { |line| Thread.new { 50.times { session.write(line) } } }.each(&:join)
    session.close_write
    lines = reader.value.lines
    expect(lines.size).to eq(100)
    expect(lines.uniq.sort).to eq([line_a, line_b])
  end
end
