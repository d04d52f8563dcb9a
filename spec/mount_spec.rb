# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::Mount do
  let(:policy_error) { LittleGhost::PolicyError }
  let(:capability_error) { LittleGhost::CapabilityError }

  around do |example|
    Dir.mktmpdir("mount-spec") do |dir|
      @dir = File.realpath(dir)
      example.run
    end
  end

  attr_reader :dir

  describe ".new" do
    it "expands the source against root and cleans the target" do
      mount = described_class.new(source: "data", target: "/srv//data/./x/", root: dir)
      expect(mount.source).to eq(File.join(dir, "data"))
      expect(mount.target).to eq("/srv/data/x")
      expect(mount.access).to eq(:read_only)
      expect(mount.tools).to be(true)
      expect(mount.protect_aliases).to be(false)
      expect(mount).to be_frozen
      expect(mount.source).to be_frozen
      expect(mount.target).to be_frozen
    end

    it "has predicates for access and visibility" do
      mount = described_class.new(source: dir, target: dir, access: "read_write", protect_aliases: true, tools: false)
      expect(mount.writable?).to be(true)
      expect(mount.read_only?).to be(false)
      expect(mount.protect_aliases?).to be(true)
      expect(mount.tool_visible?).to be(false)
    end

    it "rejects a relative target, a .. component and a NUL byte" do
      expect { described_class.new(source: dir, target: "relative") }.to raise_error(policy_error, /absolute/)
      expect { described_class.new(source: dir, target: "/a/../etc") }.to raise_error(policy_error, /'\.\.'/)
      expect { described_class.new(source: dir, target: "/a\0b") }.to raise_error(policy_error, /NUL/)
    end

    it "rejects an access outside ACCESS_MODES" do
      expect { described_class.new(source: dir, target: dir, access: :execute) }
        .to raise_error(policy_error, /mount access must be :read_only or :read_write/)
      expect { described_class.new(source: dir, target: dir, access: 1) }
        .to raise_error(policy_error, /mount access must be :read_only or :read_write/)
    end

    it "requires source and target and rejects unknown keywords" do
      expect { described_class.new(source: dir) }.to raise_error(ArgumentError, /target/)
      expect { described_class.new(source: dir, target: dir, mode: :rw) }.to raise_error(ArgumentError, /mode/)
    end
  end

  describe "#covers?" do
    it "matches the target and paths beneath it by component" do
      mount = described_class.new(source: dir, target: "/w/src")
      expect(mount.covers?("/w/src")).to be(true)
      expect(mount.covers?("/w/src/a/b")).to be(true)
      expect(mount.covers?("/w/src/./a//")).to be(true)
      expect(mount.covers?("/w/src2")).to be(false)
      expect(mount.covers?("/w")).to be(false)
      expect { mount.covers?("/w/src/../../etc") }.to raise_error(policy_error)
    end
  end

  describe "#narrow" do
    before do
      FileUtils.mkdir_p(File.join(dir, "sub/deeper"))
    end

    it "returns a narrower mount with a real source, keeping tools and protect_aliases" do
      parent = described_class.new(source: dir, target: "/work", access: :read_write, protect_aliases: true, tools: false)
      child = parent.narrow(target: "/work/sub", access: :read_only)
      expect(child.source).to eq(File.join(dir, "sub"))
      expect(child.target).to eq("/work/sub")
      expect(child.access).to eq(:read_only)
      expect(child.protect_aliases).to be(true)
      expect(child.tools).to be(false)
      expect(child).to be_frozen
      expect(parent.narrow).to eq(parent)
    end

    it "refuses targets outside the parent" do
      parent = described_class.new(source: dir, target: "/work")
      expect { parent.narrow(target: "/workshop") }.to raise_error(capability_error, /outside its parent mount/)
    end

    it "refuses to widen read-only to read-write" do
      parent = described_class.new(source: dir, target: "/work")
      expect { parent.narrow(target: "/work/sub", access: :read_write) }
        .to raise_error(capability_error, "sandbox scope cannot make a read-only mount writable")
    end

    it "refuses a symlink that leaves the parent's real directory" do
      Dir.mktmpdir do |outside|
        File.symlink(outside, File.join(dir, "escape"))
        parent = described_class.new(source: dir, target: "/work")
        expect { parent.narrow(target: "/work/escape") }.to raise_error(capability_error, /escapes its parent/)
      end
    end

    it "reports a missing directory as unavailable" do
      parent = described_class.new(source: dir, target: "/work")
      expect { parent.narrow(target: "/work/missing") }
        .to raise_error(capability_error, /sandbox scope mount source is unavailable/)
    end
  end

  describe "value semantics and coerce" do
    it "compares by real source, target, access and flags" do
      real = File.join(dir, "real")
      FileUtils.mkdir_p(real)
      File.symlink(real, File.join(dir, "link"))
      a = described_class.new(source: real, target: "/w")
      b = described_class.new(source: File.join(dir, "link"), target: "/w")
      expect(a).to eq(b)
      expect(a).to eql(b)
      expect(a.hash).to eq(b.hash)
      expect(a).not_to eq(described_class.new(source: dir, target: "/w"))
      expect(a).not_to eq(described_class.new(source: real, target: "/w", access: :read_write))
      expect(a).not_to eq(described_class.new(source: real, target: "/w", tools: false))
      expect(a).not_to eq(described_class.new(source: real, target: "/w", protect_aliases: true))
      expect(a).not_to eq(described_class.new(source: real, target: "/x"))
      expect(a).not_to eq(:other)
    end

    it "coerces Hashes (with a root) and passes Mounts through" do
      mount = described_class.coerce({ "source" => "x", "target" => "/t", "access" => "read_write" }, root: dir)
      expect(mount.source).to eq(File.join(dir, "x"))
      expect(mount.writable?).to be(true)
      expect(described_class.coerce(mount)).to equal(mount)
      expect { described_class.coerce("/t") }.to raise_error(policy_error, /must be a Hash or Sandbox::Mount/)
    end

    it "inspects readably" do
      expect(described_class.new(source: "/s", target: "/t").inspect).to eq(
        '#<LittleGhost::Sandbox::Mount source="/s" target="/t" access=:read_only tools=true protect_aliases=false>'
      )
    end
  end
end
