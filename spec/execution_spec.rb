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

  describe "the Data protocol (lib/littleghost/sandbox/data_like.rb over Rust storage)" do
    it "reports every constructor mistake with Data's messages" do
      expect { described_class.new(1, 2, 3, 4, 5) }
        .to raise_error(ArgumentError, "wrong number of arguments (given 5, expected 0..4)")
      expect { described_class.new("o", stdout: "x", stderr: "", exit_code: 0) }
        .to raise_error(ArgumentError, "duplicate value for :stdout")
      expect { described_class.new(foo: 1, bar: 2, stdout: "") }
        .to raise_error(ArgumentError, "unknown keywords: :foo, :bar")
      expect { described_class.new("o", "e") }.to raise_error(ArgumentError, "missing keyword: :exit_code")
      expect(described_class.new("stdout" => "s", "stderr" => "", "exit_code" => 1).stdout).to eq("s")
    end

    it "maps #to_h pairs like Hash#to_h, with its errors" do
      expect(execution.to_h(&->(key, value) { [value, key] })).to include("out" => :stdout)
      expect { execution.to_h { 1 } }.to raise_error(TypeError, "wrong element type Integer (expected array)")
      expect { execution.to_h { [1] } }
        .to raise_error(ArgumentError, "element has wrong array length (expected 2, was 1)")
      expect { execution.to_h(1) }.to raise_error(ArgumentError, "wrong number of arguments (given 1, expected 0)")
    end

    it "builds #with copies of frozen Strings, extras included, without positional values" do
      copy = execution.with(stdout: +"new", signal: 15)
      expect([copy.stdout, copy.stdout.frozen?, copy.signal, copy.frozen?]).to eq(["new", true, 15, true])
      expect { execution.with(1, 2) }.to raise_error(ArgumentError, "wrong number of arguments (given 2, expected 0)")
      expect { execution.with(nope: 1, zip: 2) }.to raise_error(ArgumentError, "unknown keywords: :nope, :zip")
    end

    it "compares with any object, and an identical member (NaN) equals itself" do
      expect(execution == BasicObject.new).to be(false)
      expect(execution.eql?(Object.new)).to be(false)
      nan = described_class.new(stdout: "", stderr: "", exit_code: Float::NAN)
      expect(nan).to eq(nan.with(stdout: ""))
      expect(nan).to eql(nan.with(stdout: ""))
    end

    it "deconstructs the requested keys in member order" do
      expect(execution.deconstruct_keys(%i[exit_code stdout other])).to eq(stdout: "out", exit_code: 0)
      expect(execution.deconstruct_keys(%i[exit_code stdout]).keys).to eq(%i[stdout exit_code])
      expect(execution.deconstruct_keys(nil).keys).to eq(described_class.members)
      expect { execution.deconstruct_keys(1) }.to raise_error(TypeError, "no implicit conversion of Integer into Array")
    end

    it "inspects any member like Data, and an anonymous subclass without a name" do
      odd = described_class.new(stdout: :sym, stderr: :"a b", exit_code: 1.5, error: true)
      expect(odd.inspect)
        .to eq('#<data LittleGhost::Sandbox::Execution stdout=:sym, stderr=:"a b", exit_code=1.5, error=true>')
      expect(Class.new(described_class).new(stdout: "", stderr: "", exit_code: nil).to_s)
        .to eq('#<data stdout="", stderr="", exit_code=nil, error=nil>')
    end

    it "keeps its values in Rust, set once" do
      expect(execution.instance_variables).to be_empty
      expect(described_class.private_instance_methods(false)).to eq([:initialize_values])
      expect { execution.send(:initialize, stdout: "x", stderr: "", exit_code: 0) }
        .to raise_error(FrozenError, "can't modify frozen value")
      expect { described_class.allocate.send(:initialize_values, []) }
        .to raise_error(ArgumentError, "5 values expected, 0 given")
      expect { described_class.allocate.stdout }.to raise_error(RuntimeError, /Execution was not initialized/)
      expect(described_class.constants).not_to include(:MEMBERS, :OPTIONAL, :EXTRAS)
    end

    it "keeps its Strings frozen and its members fixed whatever a caller or a subclass does" do
      raw = described_class.allocate
      raw.send(:initialize_values, [+"out", +"err", 0, nil, nil])
      expect([raw.stdout, raw.stderr]).to all(be_frozen)
      subclass = Class.new(described_class) do
        const_set(:MEMBERS, [:a])
        const_set(:OPTIONAL, [:stderr])
        def member_hash = {custom: true}
        def member_values(*) = [:custom]
      end
      value = subclass.new(stdout: "o", stderr: "e", exit_code: 0)
      expect(value.to_h).to eq(stdout: "o", stderr: "e", exit_code: 0, error: nil)
      expect(value.deconstruct).to eq(["o", "e", 0, nil])
      expect { subclass.new(stdout: "o", exit_code: 0) }.to raise_error(ArgumentError, "missing keyword: :stderr")
      expect(described_class.constants).to be_empty
    end

    it "dups and clones into an equal, frozen copy that keeps signal, as Data does" do
      original = described_class.new(stdout: "out", stderr: "", exit_code: nil, signal: 9)
      [original.dup, original.clone].each do |copy|
        expect(copy).to eq(original)
        expect(copy).not_to equal(original)
        expect(copy).to be_frozen
        expect([copy.stdout, copy.signal]).to eq(["out", 9])
      end
    end

    it "answers success? for a caller's exit_code through == 0" do
      expect(execution.with(exit_code: 0.0).success?).to be(true)
      expect(execution.with(exit_code: 2**70).success?).to be(false)
      expect(execution.with(exit_code: :zero).success?).to be(false)
    end

    it "serves ProcessSession::Chunk the same way" do
      chunk_class = LittleGhost::Sandbox::ProcessSession::Chunk
      chunk = chunk_class.new("a", "b", true)
      expect(chunk.inspect)
        .to eq('#<data LittleGhost::Sandbox::ProcessSession::Chunk stdout="a", stderr="b", eof=true>')
      expect(chunk.with(eof: false).deconstruct).to eq(["a", "b", false])
      expect { chunk_class.new(stdout: "a", stderr: "b", eof: false, signal: 1) }
        .to raise_error(ArgumentError, "unknown keyword: :signal")
      expect({ chunk => 1 }[chunk_class.new(stdout: +"a", stderr: "b", eof: true)]).to eq(1)
    end
  end
end
