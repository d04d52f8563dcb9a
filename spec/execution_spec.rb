# frozen_string_literal: true

RSpec.describe LittleGhost::Sandbox::Execution do
  subject(:execution) { described_class.new(stdout: "out", stderr: "err", exit_code: 0) }

  it "takes keywords, defaults error to nil and reads its members" do
    expect([execution.stdout, execution.stderr, execution.exit_code, execution.error]).to eq(["out", "err", 0, nil])
    expect(described_class.members).to eq(%i[stdout stderr exit_code error])
    expect(execution.members).to eq(%i[stdout stderr exit_code error])
  end

  it "also takes positional values in member order, like Data" do
    expect(described_class.new("o", "e", 3)).to eq(described_class.new(stdout: "o", stderr: "e", exit_code: 3))
  end

  it "rejects missing and unknown keywords with Data's messages" do
    expect { described_class.new(stdout: "") }.to raise_error(ArgumentError, "missing keywords: :stderr, :exit_code")
    expect { described_class.new(stdout: "", stderr: "", exit_code: 0, status: 1) }
      .to raise_error(ArgumentError, "unknown keyword: :status")
    expect { described_class.new(1, 2, 3, 4, 5) }.to raise_error(ArgumentError, /wrong number of arguments/)
  end

  describe "#success?" do
    it "is true only for a nil error and exit code 0" do
      expect(execution.success?).to be(true)
      expect(execution.with(exit_code: 1).success?).to be(false)
      expect(execution.with(exit_code: nil).success?).to be(false)
      expect(execution.with(error: RuntimeError.new("x")).success?).to be(false)
    end
  end

  it "compares, hashes and eql?s by value and class" do
    same = described_class.new(stdout: +"out", stderr: "err", exit_code: 0, error: nil)
    expect(execution).to eq(same)
    expect(execution).to eql(same)
    expect(execution.hash).to eq(same.hash)
    expect({ execution => 1 }[same]).to eq(1)
    expect(execution).to eq(described_class.new(stdout: "out", stderr: "err", exit_code: 0.0))
    expect(execution).not_to eql(described_class.new(stdout: "out", stderr: "err", exit_code: 0.0))
    expect(execution).not_to eq(execution.with(stdout: "other"))
    other_class = Class.new(described_class)
    expect(execution).not_to eq(other_class.new(stdout: "out", stderr: "err", exit_code: 0))
  end

  it "converts to a Hash, with or without a block" do
    expect(execution.to_h).to eq(stdout: "out", stderr: "err", exit_code: 0, error: nil)
    expect(execution.to_h { |key, value| [key.to_s, value] }).to include("stdout" => "out")
  end

  it "builds modified copies with #with and leaves itself unchanged" do
    copy = execution.with(exit_code: 2)
    expect(copy).to be_a(described_class)
    expect(copy.exit_code).to eq(2)
    expect(execution.exit_code).to eq(0)
    expect(execution.with).to equal(execution)
    expect { execution.with(1) }.to raise_error(ArgumentError)
    expect { execution.with(nope: 1) }.to raise_error(ArgumentError, /unknown keyword: :nope/)
  end

  it "inspects like Data" do
    expect(execution.inspect)
      .to eq('#<data LittleGhost::Sandbox::Execution stdout="out", stderr="err", exit_code=0, error=nil>')
  end

  it "is frozen, and so are its Strings, without freezing the caller's String" do
    text = +"mutable"
    built = described_class.new(stdout: text, stderr: "", exit_code: 0)
    expect(built).to be_frozen
    expect(built.stdout).to be_frozen
    expect(text).not_to be_frozen
    expect { built.instance_variable_set(:@stdout, "x") }.to raise_error(FrozenError)
  end

  it "supports pattern matching" do
    matched = case execution
              in { stdout: "out", exit_code: 0 } then :hash
              end
    expect(matched).to eq(:hash)
    expect(execution.deconstruct).to eq(["out", "err", 0, nil])
  end

  describe "#signal (W16)" do
    it "is an optional extra that stays outside the value semantics of the four members" do
      killed = described_class.new(stdout: "", stderr: "", exit_code: nil, signal: 9)
      expect(killed.signal).to eq(9)
      expect(killed.to_h).to eq(stdout: "", stderr: "", exit_code: nil, error: nil)
      expect(killed).to eq(described_class.new(stdout: "", stderr: "", exit_code: nil))
      expect(killed.with(stdout: "x").signal).to eq(9)
      expect(killed.inspect).not_to include("signal")
      expect(execution.signal).to be_nil
    end
  end
end
