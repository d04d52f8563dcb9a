# frozen_string_literal: true

require "spec_helper"

# Every refusal the gem makes is observable without
# parsing messages. A refusal appears once in `sandbox.denials` and reaches
# each `on_denial` block, in the thread that was refused; the refused call
# still raises (or returns) exactly what it did before.
RSpec.describe LittleGhost::Sandbox::Denial do
  include ProcessHelpers

  let(:root) { Dir.mktmpdir("lg-denials") }
  let(:outside) { Dir.mktmpdir("lg-denials-outside") }
  let(:workspace) do
    FileUtils.mkdir_p(File.join(root, "docs"))
    File.write(File.join(root, "docs", "a.md"), "a")
    File.write(File.join(root, "notes.txt"), "n")
    LittleGhost::Workspace.new(root: root, paths: {docs: "docs", secret: outside}).open
  end
  let(:sandbox) do
    LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace,
                                             policy: {files: {root: :read_write, docs: :read_only}})
  end
  let(:seen) { [] }

  before { sandbox.on_denial { |denial| seen << [denial, Thread.current] } }

  after { FileUtils.rm_rf([root, outside]) }

  # The one denial recorded, after checking the subscriber got the same in this thread.
  def only_denial
    expect(sandbox.denials.size).to eq(1)
    expect(seen.map(&:first)).to eq(sandbox.denials)
    expect(seen.map(&:last)).to eq([Thread.current])
    sandbox.denials.first
  end

  def fields(denial)
    denial.to_h.except(:time)
  end

  it "records a read outside the scope, with the caller's original error" do
    File.write(File.join(outside, "key"), "k")
    expect { sandbox.read("workspace://secret/key") }
      .to raise_error(LittleGhost::ToolError, "Path is outside the sandbox scope: workspace://secret/key")
    expect(fields(only_denial)).to eq(kind: :filesystem, operation: :read, target: "workspace://secret/key",
                                      reason: :outside_scope,
                                      message: "Path is outside the sandbox scope: workspace://secret/key")
  end

  it "records a write through a read-only grant, and the file is unchanged" do
    expect { sandbox.write("docs/a.md", "changed") }
      .to raise_error(LittleGhost::ToolError, "Sandbox scope is read-only: docs/a.md")
    expect(File.read(File.join(root, "docs", "a.md"))).to eq("a")
    expect(fields(only_denial)).to include(kind: :filesystem, operation: :write, target: "docs/a.md",
                                           reason: :read_only)
  end

  it "records a listing outside the scope" do
    expect { sandbox.list("workspace://secret") }.to raise_error(LittleGhost::ToolError, /outside the sandbox scope/)
    expect(fields(only_denial)).to include(kind: :filesystem, operation: :list, target: "workspace://secret",
                                           reason: :outside_scope)
  end

  it "records a limit refusal of the broker with the limit as its reason" do
    small = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}},
                                                     limits: {read_bytes: 1})
    small.on_denial { |denial| seen << [denial, Thread.current] }
    File.write(File.join(root, "big.txt"), "too big")
    expect { small.read("big.txt") }.to raise_error(LittleGhost::ToolError, /read limit of 1 bytes: big.txt/)
    expect(small.denials.map { |d| fields(d).slice(:kind, :operation, :target, :reason) })
      .to eq([{kind: :filesystem, operation: :read, target: "big.txt", reason: :read_limit}])
    expect(seen.map(&:last)).to eq([Thread.current])
  end

  it "records what a scope refuses in its sandbox, and the scope's capability refusals" do
    scope = sandbox.scope(files: {docs: :read_only}, capabilities: [:filesystem_read])
    expect { scope.read("notes.txt") }.to raise_error(LittleGhost::ToolError, /outside the sandbox scope: notes.txt/)
    expect { scope.write("docs/a.md", "x") }
      .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow filesystem write")
    expect(sandbox.denials.map { |d| fields(d).slice(:operation, :target, :reason) })
      .to eq([{operation: :read, target: "notes.txt", reason: :outside_scope},
              {operation: :write, target: "docs/a.md", reason: :capability}])
    expect(seen.map(&:last)).to eq([Thread.current, Thread.current])
  end

  it "records a run ended at its output bound, and the Execution is returned as before" do
    result = sandbox.execute_program(["sh", "-c", "yes; sleep 60"], timeout: 60, max_output_bytes: 1000,
                                                                    kill_on_output_limit: true)
    expect(result.stdout).to eq("#{"y\n" * 500}\n[output truncated]")
    expect(fields(only_denial)).to eq(kind: :limit, operation: :execute, target: "sh", reason: :output_limit,
                                      message: "Program output exceeded 1000 bytes")
  end

  it "records a session ended at its memory limit" do
    session = sandbox.start_program(["sh", "-c", "x=$(head -c 80000000 /dev/zero | tr '\\0' a); sleep 30"],
                                    memory_bytes: 20_000_000)
    expect { session.wait(timeout: 20) }
      .to raise_error(LittleGhost::ToolError, "Program memory exceeded 20000000 bytes")
    # With a cgroup the waiting thread notices; with the sampled fallback, the session's monitor thread.
    eventually(5) { seen.any? }
    expect(sandbox.denials.map { |d| fields(d) })
      .to eq([{kind: :limit, operation: :execute, target: "sh", reason: :memory_limit,
               message: "Program memory exceeded 20000000 bytes"}])
  ensure
    session&.close
  end

  it "records a run ended at its memory or CPU limit, in the refused thread" do
    skip "no writable cgroup here" unless LittleGhost::Sandbox.probe(:unrestricted).fetch(:limits, {}).values.all?(true)

    expect do
      sandbox.execute_program(["sh", "-c", "x=$(head -c 80000000 /dev/zero | tr '\\0' a); sleep 30"],
                              timeout: 30, memory_bytes: 20_000_000)
    end.to raise_error(LittleGhost::ToolError, "Program memory exceeded 20000000 bytes")
    expect do
      sandbox.execute_program(["sh", "-c", "while :; do :; done"], timeout: 30, cpu_seconds: 1)
    end.to raise_error(LittleGhost::ToolError, "Program CPU time exceeded 1 second")
    expect(sandbox.denials.map { |d| fields(d).slice(:kind, :target, :reason) })
      .to eq([{kind: :limit, target: "sh", reason: :memory_limit}, {kind: :limit, target: "sh", reason: :cpu_limit}])
    expect(seen.map(&:last)).to eq([Thread.current, Thread.current])
  end

  it "records nothing for failures that refuse nothing: a missing file, text not found, a timeout" do
    expect { sandbox.read("missing.txt") }.to raise_error(LittleGhost::ToolError, /does not exist/)
    expect { sandbox.replace("notes.txt", "zzz", "y") }.to raise_error(LittleGhost::ToolError, /not found/)
    expect { sandbox.execute_program(["sleep", "5"], timeout: 0.2) }.to raise_error(LittleGhost::ToolError)
    expect(sandbox.denials).to be_empty
    expect(seen).to be_empty
  end

  it "keeps the last 100 denials, oldest first" do
    105.times { |i| expect { sandbox.write("docs/#{i}.md", "x") }.to raise_error(LittleGhost::ToolError) }
    denials = sandbox.denials
    expect(denials.size).to eq(100)
    expect(denials.first.target).to eq("docs/5.md")
    expect(denials.last.target).to eq("docs/104.md")
    expect(denials).to be_frozen
    expect(seen.size).to eq(105)
  end

  it "is a frozen value compared by value" do
    expect { sandbox.write("docs/a.md", "x") }.to raise_error(LittleGhost::ToolError)
    first = sandbox.denials.first
    again = sandbox.denials.first
    expect(first).not_to equal(again)
    expect(first).to eq(again)
    expect(first).to eql(again)
    expect(first.hash).to eq(again.hash)
    expect({first => 1}[again]).to eq(1)
    expect(first).to be_frozen
    expect([first.kind, first.operation, first.target, first.reason]).to eq([:filesystem, :write, "docs/a.md", :read_only])
    expect(first.target).to be_frozen
    expect(first.time).to be_a(Time)
    expect(first.time).to be_within(60).of(Time.now)
    expect(first.inspect).to eq('#<LittleGhost::Sandbox::Denial filesystem write "docs/a.md" read_only>')
    expect { sandbox.write("docs/a.md", "x") }.to raise_error(LittleGhost::ToolError)
    expect(sandbox.denials.last).not_to eq(first) # a later refusal is another event
    expect { described_class.new }.to raise_error(NoMethodError)
  end

  it "keeps the refused call's error when a subscriber raises, warns, and still calls the others" do
    later = []
    sandbox.on_denial { |_denial| raise ArgumentError, "subscriber bug" }
    sandbox.on_denial { |denial| later << denial }
    expect { sandbox.write("docs/a.md", "x") }
      .to raise_error(LittleGhost::ToolError, "Sandbox scope is read-only: docs/a.md")
      .and output(/on_denial subscriber raised ArgumentError: subscriber bug/).to_stderr
    expect(later.size).to eq(1)
    expect(seen.size).to eq(1)
  end

  it "warns in the subscriber's own UTF-8 words, so a Warning.warn filter that matches on them keeps working" do
    sandbox.on_denial { |_denial| raise ArgumentError, "refusé" }
    seen_warnings = []
    filter = Module.new do
      define_method(:warn) do |message, **|
        seen_warnings << message
        message.match?(/déprécié/) ? nil : super(message)
      end
    end
    Warning.singleton_class.prepend(filter)
    expect { sandbox.write("docs/a.md", "x") }
      .to raise_error(LittleGhost::ToolError, "Sandbox scope is read-only: docs/a.md")
      .and output("LittleGhost::Sandbox#on_denial subscriber raised ArgumentError: refusé\n").to_stderr
    expect(seen_warnings.map(&:encoding)).to eq([Encoding::UTF_8])
  ensure
    filter&.send(:remove_method, :warn)
  end

  it "stops calling a block after off_denial, and on_denial requires a block" do
    calls = 0
    handle = sandbox.on_denial { calls += 1 }
    expect(handle).to be_a(Proc)
    expect { sandbox.write("docs/a.md", "x") }.to raise_error(LittleGhost::ToolError)
    expect(sandbox.off_denial(handle)).to be(true)
    expect(sandbox.off_denial(handle)).to be(false)
    expect { sandbox.write("docs/a.md", "x") }.to raise_error(LittleGhost::ToolError)
    expect(calls).to eq(1)
    expect(sandbox.denials.size).to eq(2)
    expect { sandbox.on_denial }.to raise_error(ArgumentError, "on_denial requires a block")
  end
end
