# frozen_string_literal: true

require "spec_helper"
require "timeout"

# A write or replace the sandbox refuses changes nothing on disk: no partial
# file, no temporary file, nothing outside the workspace; a write it accepts
# leaves exactly its target behind, with the target's mode kept.
RSpec.describe "file writes through a sandbox" do # rubocop:disable RSpec/DescribeClass
  let(:root) { Dir.mktmpdir("lg-writes") }
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

  it "leaves exactly the target behind after a successful write, keeping its mode" do
    File.write(File.join(root, "keep.txt"), "old")
    File.chmod(0o600, File.join(root, "keep.txt"))
    expect(sandbox.write("keep.txt", "new")).to eq("Wrote 3 bytes to keep.txt")
    expect(Dir.children(root).sort).to eq(%w[keep.txt source])
    expect(File.stat(File.join(root, "keep.txt")).mode & 0o777).to eq(0o600)
  end
end
