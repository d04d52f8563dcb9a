# frozen_string_literal: true

require "spec_helper"
require "timeout"

# Acceptance gaps for issue 2 that the other specs did not pin down: refused writes
# leave no partial or temporary file behind, and wrong types, NUL bytes and invalid
# text raise the documented classes (never NoMethodError or EncodingError).
RSpec.describe "issue 2 acceptance" do
  let(:root) { Dir.mktmpdir("lg-accept") }
  let(:outside) { Dir.mktmpdir("lg-outside") }
  let(:workspace) { LittleGhost::Workspace.new(root: root, paths: {source: "source"}).open }
  let(:sandbox) do
    LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write, source: :read_only}},
                                             limits: {write_bytes: 16})
  end

  after { FileUtils.rm_rf([root, outside]) }

  # Every entry (dotfiles included) with its bytes, so a leftover temporary file shows up.
  def tree(dir)
    Dir.glob("**/*", File::FNM_DOTMATCH, base: dir).reject { |p| p.end_with?(".") }.sort.to_h do |p|
      full = File.join(dir, p)
      [p, File.symlink?(full) || !File.file?(full) ? File.ftype(full) : File.binread(full)]
    end
  end

  it "leaves no partial or temporary file after any refused write or replace" do
    File.write(File.join(root, "keep.txt"), "old content")
    File.write(File.join(workspace.path(:source), "main.rb"), "puts 1")
    File.write(File.join(outside, "secret"), "s")
    File.symlink(File.join(outside, "secret"), File.join(root, "link"))
    File.link(File.join(workspace.path(:source), "main.rb"), File.join(root, "hard"))
    File.mkfifo(File.join(root, "fifo"))
    before_root = tree(root)
    before_outside = tree(outside)

    attempts = {
      -> { sandbox.write("keep.txt", "x" * 17) } => /Content exceeds the write limit/,
      -> { sandbox.replace("keep.txt", "old", "o" * 20) } => /Content exceeds the write limit/,
      -> { sandbox.write("link", "x") } => /Write target cannot be a symbolic link/,
      -> { sandbox.write("hard", "x") } => /Multiply-linked files are not accessible/,
      -> { sandbox.write("fifo", "x") } => /Path is not a file/,
      -> { sandbox.write("source/main.rb", "x") } => /Sandbox scope is read-only/,
      -> { sandbox.write("missing/new.txt", "x") } => /Write target parent does not exist/,
      -> { sandbox.write("new\0.txt", "x") } => /Path contains a null byte/,
      -> { sandbox.replace("keep\0.txt", "old", "new") } => /Path contains a null byte/,
      -> { sandbox.write("#{'a' * 300}.txt", "x") } => /Path name is too long/
    }
    attempts.each do |attempt, message|
      expect { Timeout.timeout(5) { attempt.call } }.to raise_error(LittleGhost::ToolError, message)
    end
    expect(tree(root)).to eq(before_root)
    expect(tree(outside)).to eq(before_outside)
    expect(sandbox.allows?(:read, "keep\0.txt")).to be(false)
  end

  it "leaves exactly the target behind after a successful write" do
    File.write(File.join(root, "keep.txt"), "old")
    File.chmod(0o600, File.join(root, "keep.txt"))
    expect(sandbox.write("keep.txt", "new")).to eq("Wrote 3 bytes to keep.txt")
    expect(Dir.children(root).sort).to eq(%w[keep.txt source])
    expect(File.stat(File.join(root, "keep.txt")).mode & 0o777).to eq(0o600)
  end

  describe "wrong types raise TypeError or ArgumentError, never NoMethodError" do
    it "rejects names without to_sym" do
      [nil, 1, Object.new, {a: 1}].each do |bad|
        expect { workspace.path(bad) }.to raise_error(TypeError, /workspace path name must be a Symbol or String/)
        expect { LittleGhost::Workspace.resolve_provider(bad) }.to raise_error(TypeError, /provider name/)
        expect { LittleGhost::Sandbox.resolve_provider(bad) }.to raise_error(TypeError, /provider name/)
        expect { LittleGhost::Sandbox.probe(bad) }.to raise_error(TypeError, /provider name/)
        expect { sandbox.scope(bad) }.to raise_error(TypeError, /profile name/)
        expect { sandbox.scope(files: [bad]) }.to raise_error(TypeError, /grant name/)
      end
    end

    it "rejects names that are not valid text" do
      bad = "\xFF\xFE".dup.force_encoding(Encoding::UTF_8)
      expect { workspace.path(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::Capabilities.new.supports?(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::Policy.new(files: {bad => :read_only}) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::NetworkPolicy.coerce(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Workspace.build({provider: :directory, bad => 1}) }.to raise_error(ArgumentError, /not valid text/)
    end

    it "rejects collaborators of the wrong kind" do
      expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: nil) }.to raise_error(TypeError, /sandbox workspace must respond to root/)
      expect { LittleGhost::Sandbox.new(workspace: "/tmp") }.to raise_error(TypeError, /sandbox workspace must respond to root/)
      expect { LittleGhost::Sandbox::Capabilities.new.intersect(nil) }.to raise_error(TypeError, /must respond to features/)
      expect { LittleGhost::Sandbox::Policy.new.process_grants(Object.new) }.to raise_error(TypeError, /workspace must respond to root/)
    end

    it "rejects NUL bytes in workspace configuration before touching the disk" do
      expect { LittleGhost::Workspace.new(root: File.join(root, "a\0b")) }.to raise_error(ArgumentError, /null byte/)
      expect { LittleGhost::Workspace.new(root: root, paths: {x: "a\0b"}).open }.to raise_error(ArgumentError, /null byte/)
      expect { workspace.resolve("a\0b") }.to raise_error(ArgumentError, /null byte/)
      expect(Dir.children(root)).to eq(%w[source])
    end
  end
end
