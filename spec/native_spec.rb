# frozen_string_literal: true

require "spec_helper"

# Native picks the platform backend and delegates to it (SPEC §22); it never falls back to Unrestricted.
RSpec.describe LittleGhost::Sandboxes::Native do
  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:policy) { {files: {root: :read_only, source: :read_only}} }

  describe ".probe" do
    it "delegates to Bubblewrap on Linux and Seatbelt on macOS" do
      linux = described_class.probe(platform: "x86_64-linux", executable: "/nonexistent/bwrap")
      expect(linux[:available]).to be(false)
      expect(linux[:reason]).to include("Bubblewrap is not installed at /nonexistent/bwrap")
      mac = described_class.probe(platform: "arm64-darwin23", executable: "/nonexistent/sandbox-exec")
      expect(mac[:reason]).to include("Seatbelt sandboxing requires macOS")
    end

    it "is unavailable elsewhere, with empty capabilities" do
      result = described_class.probe(platform: "x64-mingw32")
      expect(result[:available]).to be(false)
      expect(result[:reason]).to eq("native sandboxing is unavailable on x64-mingw32")
      expect(result[:capabilities].features).to be_empty
      expect(LittleGhost::Sandbox.probe(:native, platform: "x64-mingw32")[:available]).to be(false)
    end
  end

  describe ".new" do
    it "builds the platform backend with the given options" do
      native = described_class.new(workspace: workspace, policy: policy, platform: "x86_64-linux", bubblewrap: "/nonexistent/bwrap")
      expect(native.backend).to be_a(LittleGhost::Sandboxes::Bubblewrap)
      expect(native.policy).to be(native.backend.policy)
      expect(native.limits).to be(native.backend.limits)
      expect(native.workspace).to be(workspace)
      mac = described_class.new(workspace: workspace, platform: "arm64-darwin23")
      expect(mac.backend).to be_a(LittleGhost::Sandboxes::Seatbelt)
    end

    it "raises on other platforms and never falls back to Unrestricted" do
      expect { described_class.new(workspace: workspace, platform: "x64-mingw32") }
        .to raise_error(LittleGhost::UnsupportedPlatformError, "native sandboxing is unavailable on x64-mingw32")
    end

    it "treats workspace: nil as missing, as it always did" do
      expect { described_class.new(workspace: nil) }.to raise_error(ArgumentError, "missing keyword: :workspace")
    end

    it "fronts only the backend it chose, once, whatever a subclass names its own methods" do
      subclass = Class.new(described_class) do
        def adopt(*) = :mine
        def self.backend_class(*) = LittleGhost::Sandboxes::Unrestricted
      end
      native = described_class.new(workspace: workspace, platform: "x86_64-linux")
      # Bubblewrap where user namespaces work, Landlock where they are blocked (a container): never Unrestricted.
      chosen = native.backend.class
      expect([LittleGhost::Sandboxes::Bubblewrap, LittleGhost::Sandboxes::Landlock]).to include(chosen)
      expect(subclass.new(workspace: workspace, platform: "x86_64-linux").backend).to be_an_instance_of(chosen)
      unconfined = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace)
      # The backend is chosen and adopted inside initialize: no method takes one from a caller.
      expect(native.respond_to?(:adopt, true)).to be(false)
      expect { native.send(:initialize, workspace: unconfined.workspace, platform: "x86_64-linux") }
        .to raise_error(LittleGhost::ToolError, "native sandbox is already initialized")
      expect(native.backend).to be_an_instance_of(chosen)
    end

    it "passes unknown options to the backend, which rejects them" do
      expect { described_class.new(workspace: workspace, platform: "x86_64-linux", bogus: 1) }.to raise_error(ArgumentError, /bogus/)
    end
  end

  describe "delegation" do
    let(:native) { described_class.new(workspace: workspace, policy: policy, platform: "x86_64-linux") }

    it "delegates policy, capabilities, writable? and allows? (fixing upstream's writable?)" do
      expect(native.effective_policy).to be(native.backend.effective_policy)
      expect(native.capabilities.features).to eq(native.backend.capabilities.features)
      expect(native.writable?).to be(false)
      expect(native.allows?(:filesystem_write, "notes.md")).to be(false)
      expect(native.allows?(:filesystem_read)).to be(true)
    end

    it "returns itself from open and delegates close" do
      skip "native sandboxing is unavailable here" unless described_class.probe[:available]
      expect(native.open).to be(native)
      expect(native.close).to be_nil
    end

    it "delegates file operations, scopes and launches" do
      # Runs on whichever backend Native picked: Bubblewrap, or Landlock where user namespaces are blocked.
      skip "native sandboxing is unavailable here" unless described_class.probe[:available]
      File.write(File.join(workspace.root, "a.txt"), "text")
      expect(native.read("a.txt")).to eq("text")
      expect(native.list).to eq("a.txt\nsrc/")
      expect { native.write("a.txt", "x") }.to raise_error(LittleGhost::ToolError, /read-only/)
      expect(native.scope(files: [:source]).process_grants.map(&:target)).to eq([File.join(workspace.root, "src")])
      expect(native.execute("echo hi", timeout: 5).stdout).to eq("hi\n")
      session = native.start_program(["/bin/echo", "session"])
      expect(session.wait(timeout: 5).exitstatus).to eq(0)
      expect(session.read(timeout: 1).stdout).to eq("session\n")
    ensure
      session&.close
    end

    it "fails closed with a missing bwrap" do
      broken = described_class.new(workspace: workspace, policy: policy, platform: "x86_64-linux", bubblewrap: "/nonexistent/bwrap")
      expect { broken.execute_program(["/bin/true"], timeout: 5) }.to raise_error(LittleGhost::DependencyError)
    end
  end
end
