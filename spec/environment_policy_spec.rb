# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::EnvironmentPolicy do
  let(:policy_error) { LittleGhost::PolicyError }

  it "defaults to no inheritance and no values" do
    policy = described_class.new
    expect(policy.inherit?).to be(false)
    expect(policy.values).to eq({})
    expect(policy).to be_frozen
    expect(policy.values).to be_frozen
  end

  it "converts keys and values with String() and freezes them without touching the caller's" do
    name = +"NAME"
    policy = described_class.new(inherit: 1, values: { name => :value, LANG: 42 })
    expect(policy.values).to eq("NAME" => "value", "LANG" => "42")
    expect(policy.values.keys + policy.values.values).to all(be_frozen)
    expect(policy.to_h).to equal(policy.values)
    expect(policy.inherit?).to be(true)
    expect(name).not_to be_frozen
  end

  it "requires values to be a Hash" do
    expect { described_class.new(values: [%w[A b]]) }
      .to raise_error(policy_error, "sandbox environment values must be a Hash")
  end

  describe ".coerce" do
    it "returns an instance as is" do
      policy = described_class.new(values: { "A" => "1" })
      expect(described_class.coerce(policy)).to equal(policy)
    end

    it "treats a plain Hash as the values" do
      policy = described_class.coerce("PATH" => "/bin")
      expect(policy.values).to eq("PATH" => "/bin")
      expect(policy.inherit?).to be(false)
    end

    it "reads set: and inherit: in either spelling" do
      expect(described_class.coerce(set: { "A" => "1" }, inherit: true))
        .to eq(described_class.new(inherit: true, values: { "A" => "1" }))
      expect(described_class.coerce("set" => { "B" => "2" }, "inherit" => true))
        .to eq(described_class.new(inherit: true, values: { "B" => "2" }))
      expect(described_class.coerce(inherit: true)).to eq(described_class.new(inherit: true))
      expect(described_class.coerce(set: nil, "set" => { "C" => "3" }).values).to eq("C" => "3")
    end

    it "prefers :inherit over \"inherit\" when the Symbol key is present" do
      expect(described_class.coerce(inherit: false, "inherit" => true).inherit?).to be(false)
      expect(described_class.coerce(inherit: nil, "inherit" => true).inherit?).to be(false)
    end

    it "rejects anything that is not a Hash" do
      expect { described_class.coerce([]) }.to raise_error(policy_error, "sandbox environment must be a Hash")
      expect { described_class.coerce(nil) }.to raise_error(policy_error, "sandbox environment must be a Hash")
      expect { described_class.coerce(set: [1]) }
        .to raise_error(policy_error, "sandbox environment values must be a Hash")
    end
  end

  it "has value equality and a readable inspect" do
    a = described_class.new(values: { "A" => "1" })
    expect(a).to eql(described_class.coerce("A" => "1"))
    expect(a.hash).to eq(described_class.coerce("A" => "1").hash)
    expect(a).not_to eq(described_class.new(values: { "A" => "1" }, inherit: true))
    expect(a.inspect).to include("EnvironmentPolicy inherit=false values={\"A\" => \"1\"}")
  end
end
