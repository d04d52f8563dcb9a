# frozen_string_literal: true

# `read(timeout: 0)` polling, the way an interactive caller does a round trip:
# read takes what the background drainer buffered and then reads the pipes
# itself. These check that nothing is lost, duplicated or reordered by the two
# readers, that the output bound and EOF still hold on that path, and that the
# Chunk it builds is the same value Chunk.new builds.
RSpec.describe LittleGhost::Sandbox::ProcessSession do
  include ProcessHelpers

  let(:path_env) { { "PATH" => "/usr/bin:/bin" } }
  let(:sessions) { [] }
  let(:chunk_class) { LittleGhost::Sandbox::ProcessSession::Chunk }

  after { sessions.each(&:close) }

  def start(command, **options)
    described_class.new(command: command, **options).tap { |session| sessions << session }
  end

  # Polls with timeout 0 until EOF (or 20 s), collecting both streams.
  def poll_to_eof(session)
    stdout = +"".b
    stderr = +"".b
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 20
    loop do
      chunk = session.read(timeout: 0)
      stdout << chunk.stdout
      stderr << chunk.stderr
      return [stdout, stderr] if chunk.eof
      raise "no EOF within 20 s" if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
    end
  end

  it "echoes every line back through cat in order when polled with timeout 0" do
    session = start(["cat"])
    received = +"".b
    500.times do |index|
      line = "line #{index}\n"
      session.write(line)
      received << session.read(timeout: 0).stdout until received.end_with?(line)
    end
    expect(received).to eq(500.times.map { |index| "line #{index}\n" }.join)
  end

  it "loses, duplicates and reorders nothing of a fast stream on both pipes" do
    script = "seq 1 100000; seq 1 50000 >&2"
    session = start(["/bin/sh", "-c", script], environment: path_env, output_bytes: 10_000_000)
    stdout, stderr = poll_to_eof(session)
    expect(stdout).to eq((1..100_000).map { |n| "#{n}\n" }.join)
    expect(stderr).to eq((1..50_000).map { |n| "#{n}\n" }.join)
    expect(session.alive?).to be(false)
  end

  it "still terminates the group and raises once the combined bound is passed" do
    session = start(["/bin/sh", "-c", "while :; do echo flood; done"], environment: path_env, output_bytes: 5000)
    kept = 0
    expect do
      200_000.times { kept += session.read(timeout: 0).stdout.bytesize }
    end.to raise_error(LittleGhost::ToolError, "Program output exceeded 5000 bytes")
    expect(kept).to be <= 5000
    # SIGKILL is delivered when the runner returns; a loaded machine may take a moment to retire the process.
    expect(eventually(5) { live_group_members(session.pid).empty? }).to be(true)
  end

  it "builds the same frozen Data-like Chunk as Chunk.new" do
    session = start(["/usr/bin/printf", "out\\377"])
    session.wait(timeout: 5)
    chunk = session.read(timeout: 1)
    same = chunk_class.new(stdout: "out\xFF".b, stderr: "".b, eof: true)
    expect(chunk).to eq(same)
    expect(chunk).to eql(same)
    expect(chunk.hash).to eq(same.hash)
    expect(chunk.class).to equal(chunk_class)
    expect(chunk.inspect).to eq(same.inspect)
    expect(chunk.to_h).to eq(stdout: "out\xFF".b, stderr: "", eof: true)
    expect(chunk.instance_variables).to eq(same.instance_variables)
    expect([chunk.frozen?, chunk.stdout.frozen?, chunk.stderr.frozen?]).to eq([true, true, true])
    expect([chunk.stdout.encoding, chunk.stderr.encoding]).to eq([Encoding::BINARY, Encoding::BINARY])
    expect(chunk.with(eof: false)).to eq(chunk_class.new(stdout: "out\xFF".b, stderr: "", eof: false))
    expect { chunk.instance_variable_set(:@eof, false) }.to raise_error(FrozenError)
  end

  it "still coerces and checks the timeout keyword" do
    session = start(["cat"])
    expect(session.read(timeout: "0").stdout).to eq("")
    expect { session.read(timeout: -3) }.to raise_error(ArgumentError, /finite number of seconds, 0 or more/)
    expect(session.read(timeout: nil).stdout).to eq("")
    expect { session.read(timeout: "soon") }.to raise_error(ArgumentError)
    expect { session.read(wait: 1) }.to raise_error(ArgumentError, /unknown keyword/)
  end
end
