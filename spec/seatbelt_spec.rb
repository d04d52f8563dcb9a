# frozen_string_literal: true

require "spec_helper"

# Seatbelt (SPEC §21). Its profile text is unit-tested in the Rust core on
# every platform; these examples cover the Ruby contract, and the runtime
# examples run only on macOS.
RSpec.describe LittleGhost::Sandboxes::Seatbelt do
  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:policy) { {files: {root: :read_write, source: :read_only}} }
  let(:sandbox) { described_class.new(workspace: workspace, policy: policy) }
  macos = RUBY_PLATFORM.include?("darwin") && File.exist?("/usr/bin/sandbox-exec")

  it "names the default executable" do
    expect(described_class::DEFAULT_EXECUTABLE).to eq("/usr/bin/sandbox-exec")
  end

  describe ".probe" do
    it "is available only on macOS with the executable" do
      linux = described_class.probe(platform: "x86_64-linux")
      expect(linux).to include(available: false, reason: "Seatbelt sandboxing requires macOS and /usr/bin/sandbox-exec")
      expect(linux[:capabilities].features).to be_empty
      missing = described_class.probe(platform: "arm64-darwin23", executable: "/nonexistent/sandbox-exec")
      expect(missing[:available]).to be(false)
    end
  end

  describe "capabilities" do
    it "claims subprocess denial, never tree ownership, and drops spawning under an isolated root" do
      expect(sandbox.capabilities.features).to include(:process_spawn_denial)
      expect(sandbox.capabilities.features).not_to include(:process_spawn, :process_tree_ownership)
      read_only_root = described_class.new(workspace: workspace, policy: policy.merge(root_filesystem: :read_only))
      expect(read_only_root.capabilities.features).to include(:process_spawn)
      expect(sandbox.capabilities.network_modes).to eq(%i[inherit none])
      expect(sandbox.capabilities.isolation).to eq(:seatbelt)
    end

    it "fills in network :none and reports writable? from tool-visible grants" do
      expect(sandbox.effective_policy.network.mode).to eq(:none)
      expect(sandbox.writable?).to be(true)
      expect(described_class.new(workspace: workspace, policy: {files: {root: :read_only}}).writable?).to be(false)
    end
  end

  describe "off macOS" do
    before { skip "runs on platforms other than macOS" if macos }

    it "raises UnsupportedPlatformError on open and on every launch, without running anything" do
      marker = File.join(workspace.root, "ran")
      expect { sandbox.open }.to raise_error(LittleGhost::UnsupportedPlatformError, /requires macOS/)
      expect { sandbox.execute_program(["/usr/bin/touch", marker], timeout: 5) }
        .to raise_error(LittleGhost::UnsupportedPlatformError)
      expect { sandbox.start_program(["/usr/bin/touch", marker]) }.to raise_error(LittleGhost::UnsupportedPlatformError)
      expect(File.exist?(marker)).to be(false)
    end

    it "still serves file operations through the broker" do
      expect(sandbox.write("a.txt", "hi")).to eq("Wrote 2 bytes to a.txt")
      expect { sandbox.write("src/b.txt", "x") }.to raise_error(LittleGhost::ToolError, /read-only/)
    end
  end

  describe "on macOS" do
    before { skip "Seatbelt runtime tests need macOS and /usr/bin/sandbox-exec" unless macos }

    it "runs a program and keeps a read-only grant read-only under a writable root" do
      File.write(File.join(workspace.root, "src", "f"), "original")
      result = sandbox.execute_program(["/bin/sh", "-c", "echo ok; echo x > src/f"], timeout: 10)
      expect(result.stdout).to eq("ok\n")
      expect(File.read(File.join(workspace.root, "src", "f"))).to eq("original")
    end

    it "denies subprocesses by default in start_program" do
      session = sandbox.start_program(["/bin/sh", "-c", "/usr/bin/true && echo forked"])
      session.wait(timeout: 10)
      expect(session.read(timeout: 1).stdout).not_to include("forked")
    ensure
      session&.close
    end

    it "refuses allowlist networking at open" do
      allowlist = described_class.new(workspace: workspace, policy: {network: {mode: :allowlist, allow: ["a.example:443"]}})
      expect { allowlist.open }.to raise_error(LittleGhost::CapabilityError, /does not implement allowlisted network egress/)
    end

    it "removes its temporary directory on close" do
      sandbox.open
      tmpdir = sandbox.execute_program(["/usr/bin/printenv", "TMPDIR"], timeout: 10).stdout.strip
      expect(File.directory?(tmpdir)).to be(true)
      sandbox.close
      expect(File.exist?(tmpdir)).to be(false)
    end
  end
end
