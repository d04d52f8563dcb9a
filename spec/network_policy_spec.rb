# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::NetworkPolicy do
  let(:policy_error) { LittleGhost::PolicyError }
  let(:authorizer) { ->(**) { true } }

  it "builds each mode with its predicates" do
    none = described_class.new(mode: :none)
    expect([none.none?, none.inherit?, none.allowlist?]).to eq([true, false, false])
    inherit = described_class.new(mode: "inherit")
    expect([inherit.none?, inherit.inherit?, inherit.allowlist?]).to eq([false, true, false])
    allowlist = described_class.new(mode: :allowlist, allow: ["example.com:443"])
    expect(allowlist.allowlist?).to be(true)
    expect(allowlist.mode).to eq(:allowlist)
  end

  it "has frozen defaults for every field" do
    policy = described_class.new(mode: :none)
    expect(policy.allow).to eq([])
    expect(policy.inspection).to eq(:connect)
    expect(policy.gateway).to be_nil
    expect(policy.authorizer).to be_nil
    expect(policy.forward_headers).to eq([])
    expect(policy.mutation_headers).to eq([])
    expect(policy).to be_frozen
    expect(policy.allow).to be_frozen
  end

  it "normalises allow entries: String(), strip, downcase, de-duplicate" do
    policy = described_class.new(mode: :allowlist, allow: [" API.Example.com:443 ", "api.example.com:443", :"b.test:80"])
    expect(policy.allow).to eq(["api.example.com:443", "b.test:80"])
    expect(policy.allow).to all(be_frozen)
  end

  it "rejects empty and whitespace-containing allow entries" do
    expect { described_class.new(mode: :allowlist, allow: ["  "]) }.to raise_error(policy_error, /cannot be empty/)
    expect { described_class.new(mode: :allowlist, allow: ["a b:1"]) }
      .to raise_error(policy_error, /cannot contain whitespace/)
  end

  it "normalises and validates header names" do
    policy = described_class.new(mode: :allowlist, allow: ["a:1"], forward_headers: ["X-Trace", "x-trace"],
                                 mutation_headers: ["Authorization"])
    expect(policy.forward_headers).to eq(["x-trace"])
    expect(policy.mutation_headers).to eq(["authorization"])
    ["-x", "x y", "x_y", ""].each do |bad|
      expect { described_class.new(mode: :allowlist, allow: ["a:1"], forward_headers: [bad]) }
        .to raise_error(policy_error, /header name/)
    end
  end

  describe "validation order (7.2)" do
    it "checks the mode first" do
      expect { described_class.new(mode: :host, inspection: :bogus) }
        .to raise_error(policy_error, /network mode must be :inherit, :none or :allowlist/)
      expect { described_class.new(mode: 3) }.to raise_error(policy_error, /network mode must be/)
    end

    it "then the inspection" do
      expect { described_class.new(mode: :none, inspection: :tls, allow: ["a:1"]) }
        .to raise_error(policy_error, /network inspection must be :connect or :http/)
    end

    it "then forbids allowlist options on other modes" do
      [{ allow: ["a:1"] }, { gateway: Object.new }, { authorizer: authorizer },
       { forward_headers: ["x"] }, { mutation_headers: ["x"] }].each do |extra|
        expect { described_class.new(mode: :none, **extra) }
          .to raise_error(policy_error, /network mode :none does not take/)
      end
      expect { described_class.new(mode: :inherit, inspection: :http) }
        .to raise_error(policy_error, /inspection :http requires mode: :allowlist/)
    end

    it "then requires an authorizer for :http, then a non-empty allow list" do
      expect { described_class.new(mode: :allowlist, inspection: :http) }
        .to raise_error(policy_error, /requires an authorizer/)
      expect { described_class.new(mode: :allowlist) }.to raise_error(policy_error, /non-empty allow/)
      policy = described_class.new(mode: :allowlist, inspection: "http", authorizer: authorizer, allow: ["a:1"])
      expect(policy.inspection).to eq(:http)
      expect(policy.authorizer).to equal(authorizer)
    end
  end

  describe ".coerce" do
    it "maps nil, instances, modes and Hashes" do
      expect(described_class.coerce(nil)).to be_nil
      policy = described_class.new(mode: :none)
      expect(described_class.coerce(policy)).to equal(policy)
      expect(described_class.coerce(:none)).to eq(policy)
      expect(described_class.coerce("none")).to eq(policy)
      expect(described_class.coerce("mode" => "allowlist", "allow" => ["a:1"]).allow).to eq(["a:1"])
    end

    it "raises ArgumentError for unknown Hash keys and PolicyError for other types" do
      expect { described_class.coerce(mode: :none, hosts: []) }.to raise_error(ArgumentError, /hosts/) { |error|
        expect(error).to be_an_instance_of(ArgumentError)
      }
    end

    it "rejects other values" do
      expect { described_class.coerce(5) }
        .to raise_error(policy_error, "network policy must be a mode, Hash, or Sandbox::NetworkPolicy")
      expect { described_class.coerce(:bogus) }.to raise_error(policy_error, /network mode must be/)
    end
  end

  it "compares all seven fields" do
    base = { mode: :allowlist, allow: ["a:1"] }
    expect(described_class.new(**base)).to eq(described_class.new(**base))
    expect(described_class.new(**base).hash).to eq(described_class.new(**base).hash)
    expect(described_class.new(**base)).not_to eq(described_class.new(**base, forward_headers: ["x"]))
    expect(described_class.new(**base)).not_to eq(described_class.new(**base, gateway: :g))
    expect(described_class.new(**base)).not_to eq(described_class.new(mode: :allowlist, allow: ["a:2"]))
  end

  it "inspects readably" do
    expect(described_class.new(mode: :none).inspect).to start_with("#<LittleGhost::Sandbox::NetworkPolicy mode=:none allow=[]")
  end
end
