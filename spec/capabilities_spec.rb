# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::Capabilities do
  describe ".new" do
    it "defaults to reading, listing and executing with inherited network and no isolation" do
      capabilities = described_class.new
      expect(capabilities.features).to eq(%i[filesystem_read filesystem_list process_execute])
      expect(capabilities.network_modes).to eq([:inherit])
      expect(capabilities.isolation).to eq(:none)
      expect(described_class::DEFAULT_FEATURES).to eq(%i[filesystem_read filesystem_list process_execute])
      expect(described_class::DEFAULT_FEATURES).to be_frozen
    end

    it "keeps the given order, removes duplicates and accepts Strings and unknown names" do
      capabilities = described_class.new(features: ["process_spawn", :filesystem_read, :process_spawn, :gpu])
      expect(capabilities.features).to eq(%i[process_spawn filesystem_read gpu])
    end

    it "normalises aliases in the constructor (DEV 4.1)" do
      capabilities = described_class.new(features: %i[read list write replace execute spawn filesystem_read])
      expect(capabilities.features).to eq(
        %i[filesystem_read filesystem_list filesystem_write filesystem_replace process_execute process_spawn]
      )
      expect(capabilities.supports?(:read)).to be(true)
    end

    it "rejects unsupported network modes, naming them" do
      expect { described_class.new(network_modes: %i[none bridge tor]) }
        .to raise_error(ArgumentError, /unsupported network modes: :bridge, :tor/)
    end

    it "rejects a feature that is not a name" do
      expect { described_class.new(features: [1]) }.to raise_error(ArgumentError, /capability feature/)
    end

    it "is frozen, with frozen arrays" do
      capabilities = described_class.new(features: [:read], network_modes: %w[none allowlist], isolation: "namespace")
      expect(capabilities).to be_frozen
      expect(capabilities.features).to be_frozen
      expect(capabilities.network_modes).to eq(%i[none allowlist])
      expect(capabilities.network_modes).to be_frozen
      expect(capabilities.isolation).to eq(:namespace)
      expect { capabilities.features << :filesystem_write }.to raise_error(FrozenError)
    end

    it "rejects unknown keywords" do
      expect { described_class.new(feature: []) }.to raise_error(ArgumentError, /feature/)
    end
  end

  describe ".normalize" do
    it "maps every alias and passes other names through to_sym" do
      expect(described_class.normalize(:read)).to eq(:filesystem_read)
      expect(described_class.normalize("list")).to eq(:filesystem_list)
      expect(described_class.normalize(:write)).to eq(:filesystem_write)
      expect(described_class.normalize(:replace)).to eq(:filesystem_replace)
      expect(described_class.normalize(:execute)).to eq(:process_execute)
      expect(described_class.normalize(:spawn)).to eq(:process_spawn)
      expect(described_class.normalize("process_tree_ownership")).to eq(:process_tree_ownership)
    end
  end

  describe "#supports?" do
    subject(:capabilities) do
      described_class.new(features: %i[filesystem_read filesystem_write], network_modes: %i[none allowlist])
    end

    it "answers features through aliases, with include? as an alias" do
      expect(capabilities.supports?(:write)).to be(true)
      expect(capabilities.supports?("filesystem_read")).to be(true)
      expect(capabilities.supports?(:execute)).to be(false)
      expect(capabilities.include?(:read)).to be(true)
      expect(capabilities.include?(:replace)).to be(false)
    end

    it "answers network modes" do
      expect(capabilities.supports?(:network, :none)).to be(true)
      expect(capabilities.supports?(:network, "allowlist")).to be(true)
      expect(capabilities.supports?(:network, :inherit)).to be(false)
      expect(capabilities.supports?(:network)).to be(true)
      expect(described_class.new(network_modes: []).supports?(:network)).to be(false)
    end
  end

  describe "#intersect" do
    it "keeps common features in the receiver's order and the receiver's isolation" do
      mine = described_class.new(features: %i[process_execute filesystem_read filesystem_write],
                                 network_modes: %i[inherit none], isolation: :namespace)
      theirs = described_class.new(features: %i[filesystem_write process_execute],
                                   network_modes: %i[none allowlist], isolation: :none)
      both = mine.intersect(theirs)
      expect(both.features).to eq(%i[process_execute filesystem_write])
      expect(both.network_modes).to eq([:none])
      expect(both.isolation).to eq(:namespace)
      expect(both).to be_frozen
    end
  end

  describe "value semantics" do
    it "compares by value and hashes consistently" do
      a = described_class.new(features: [:read], network_modes: [:none])
      b = described_class.new(features: [:filesystem_read], network_modes: ["none"])
      c = described_class.new(features: [:filesystem_read], network_modes: [:none], isolation: :namespace)
      expect(a).to eq(b)
      expect(a).to eql(b)
      expect(a.hash).to eq(b.hash)
      expect(a).not_to eq(c)
      expect({ a => 1 }[b]).to eq(1)
    end

    it "inspects readably" do
      expect(described_class.new(features: [:read], network_modes: []).inspect).to eq(
        "#<LittleGhost::Sandbox::Capabilities features=[:filesystem_read] network_modes=[] isolation=:none>"
      )
    end
  end
end
