# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::Limits do
  let(:policy_error) { LittleGhost::PolicyError }

  it "publishes frozen defaults with one reader per key" do
    expect(described_class::DEFAULTS).to eq(read_bytes: 1_000_000, write_bytes: 1_000_000,
                                            list_entries: 10_000, output_bytes: 1_000_000)
    expect(described_class::DEFAULTS).to be_frozen
    limits = described_class.new
    expect([limits.read_bytes, limits.write_bytes, limits.list_entries, limits.output_bytes])
      .to eq([1_000_000, 1_000_000, 10_000, 1_000_000])
    expect(limits).to be_frozen
  end

  it "merges values over the defaults through Integer()" do
    limits = described_class.new(read_bytes: "10", list_entries: "0x10", output_bytes: 7.9)
    expect(limits.read_bytes).to eq(10)
    expect(limits.list_entries).to eq(16)
    expect(limits.output_bytes).to eq(7)
    expect(limits.write_bytes).to eq(1_000_000)
    expect(limits.to_h).to eq(read_bytes: 10, write_bytes: 1_000_000, list_entries: 16, output_bytes: 7)
  end

  it "rejects unknown limits with PolicyError, listing them" do
    expect { described_class.new(read_bytes: 1, memory: 2, cpu: 3) }
      .to raise_error(policy_error, /unknown sandbox limits: memory, cpu/)
  end

  it "rejects values that are not integers" do
    expect { described_class.new(read_bytes: "ten") }
      .to raise_error(policy_error, "sandbox read_bytes must be an integer")
    expect { described_class.new(write_bytes: nil) }
      .to raise_error(policy_error, "sandbox write_bytes must be an integer")
    expect { described_class.new(list_entries: Object.new) }
      .to raise_error(policy_error, "sandbox list_entries must be an integer")
  end

  it "rejects zero and negative values" do
    expect { described_class.new(output_bytes: 0) }.to raise_error(policy_error, "sandbox output_bytes must be positive")
    expect { described_class.new(read_bytes: "-5") }.to raise_error(policy_error, "sandbox read_bytes must be positive")
  end

  describe ".coerce" do
    it "returns a Limits unchanged" do
      limits = described_class.new(read_bytes: 5)
      expect(described_class.coerce(limits)).to equal(limits)
    end

    it "builds from anything with to_h, symbolising keys" do
      expect(described_class.coerce("read_bytes" => 5).read_bytes).to eq(5)
      expect(described_class.coerce(nil)).to eq(described_class.new)
      expect(described_class.coerce([[:write_bytes, 3]]).write_bytes).to eq(3)
    end

    it "rejects values without to_h" do
      expect { described_class.coerce(5) }.to raise_error(policy_error, "sandbox limits must be a Hash")
    end

    it "reports unknown keys from a Hash as PolicyError" do
      expect { described_class.coerce(bogus: 1) }.to raise_error(policy_error, /unknown sandbox limits: bogus/)
    end
  end

  it "has value equality and a readable inspect" do
    expect(described_class.new(read_bytes: "5")).to eq(described_class.new(read_bytes: 5))
    expect(described_class.new(read_bytes: 5).hash).to eq(described_class.new(read_bytes: 5).hash)
    expect(described_class.new(read_bytes: 5)).not_to eq(described_class.new(read_bytes: 6))
    expect(described_class.new.inspect).to eq(
      "#<LittleGhost::Sandbox::Limits read_bytes=1000000 write_bytes=1000000 list_entries=10000 output_bytes=1000000>"
    )
  end
end
