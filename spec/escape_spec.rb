# frozen_string_literal: true

require "spec_helper"
require "timeout"

# Really attempts each filesystem escape through the public Ruby API against a
# temporary workspace. Tests run as root, so file modes stop nothing: every
# denial below comes from the workspace resolver or the broker. Each example
# also proves that nothing outside the grant changed.
RSpec.describe "filesystem escapes" do
  let(:outside) { temporary_directory }
  let(:workspace) { open_workspace(paths: {source: "source", cache: "cache", docs: "docs"}) }
  let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write}} }
  let(:limits) { {} }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy, limits: limits).open }
  let(:root) { workspace.root }

  before do
    File.write(File.join(outside, "secret.txt"), "outside-secret")
    Dir.mkdir(File.join(outside, "dir"))
    File.write(File.join(root, "notes.md"), "notes")
    File.write(File.join(workspace.path(:source), "main.rb"), "puts 1")
    File.write(File.join(workspace.path(:cache), "token"), "runtime-secret")
    File.write(File.join(workspace.path(:docs), "guide.md"), "guide")
    @outside_before = snapshot(outside)
    @source_before = snapshot(workspace.path(:source))
    @cache_before = snapshot(workspace.path(:cache))
  end

  after do
    expect(snapshot(outside)).to eq(@outside_before), "something outside the workspace changed"
    expect(snapshot(workspace.path(:source))).to eq(@source_before), "the read-only grant changed"
    expect(snapshot(workspace.path(:cache))).to eq(@cache_before), "the runtime-only grant changed"
  end

  # Runs the block under a guard so a broker that blocks (FIFO, device) fails instead of hanging.
  def refused(message)
    expect { Timeout.timeout(5) { yield } }.to raise_error(LittleGhost::ToolError, message)
  end

  it "refuses `..` in every position and form" do
    refused(/traversal is not allowed/) { sandbox.read("../#{File.basename(outside)}/secret.txt") }
    refused(/traversal is not allowed/) { sandbox.read("source/../../secret.txt") }
    refused(/traversal is not allowed/) { sandbox.write("docs/../../escaped.txt", "x") }
    refused(/traversal is not allowed/) { sandbox.list("..") }
    refused(/traversal is not allowed/) { sandbox.replace("workspace://source/../notes.md", "notes", "x") }
    expect(File.exist?(File.join(File.dirname(root), "escaped.txt"))).to be(false)
  end

  it "refuses physical absolute paths, even ones inside the workspace" do
    refused(/must be relative or use workspace:/) { sandbox.read(File.join(outside, "secret.txt")) }
    refused(/must be relative or use workspace:/) { sandbox.read(File.join(root, "notes.md")) }
    refused(/must be relative or use workspace:/) { sandbox.write(File.join(outside, "new.txt"), "x") }
    refused(/must be relative or use workspace:/) { sandbox.list(outside) }
    refused(/escapes its root|must be relative/) { sandbox.read("~/secret.txt") }
  end

  it "refuses a symlink as the last component, pointing outside or inside" do
    File.symlink(File.join(outside, "secret.txt"), File.join(root, "out.txt"))
    File.symlink(File.join(root, "notes.md"), File.join(root, "in.txt"))
    %w[out.txt in.txt].each do |link|
      refused(/symbolic link/) { sandbox.read(link) }
      refused(/symbolic link/) { sandbox.write(link, "overwritten") }
      refused(/symbolic link/) { sandbox.replace(link, "notes", "x") }
    end
    expect(File.read(File.join(root, "notes.md"))).to eq("notes")
    expect(File.symlink?(File.join(root, "out.txt"))).to be(true)
  end

  it "refuses a symlink as an intermediate component, pointing outside or inside" do
    File.symlink(outside, File.join(root, "out"))
    File.symlink(workspace.path(:docs), File.join(root, "in"))
    refused(/symbolic link|does not exist/) { sandbox.read("out/secret.txt") }
    refused(/symbolic link|does not exist/) { sandbox.write("out/created.txt", "x") }
    refused(/symbolic link/) { sandbox.list("out") }
    refused(/symbolic link|does not exist/) { sandbox.read("in/guide.md") }
    refused(/symbolic link|does not exist/) { sandbox.write("in/created.txt", "x") }
    expect(File.exist?(File.join(workspace.path(:docs), "created.txt"))).to be(false)
    listing = sandbox.list.split("\n")
    expect(listing).to include("out", "in")
    expect(listing).not_to include("out/", "in/")
  end

  it "refuses a symlink swapped in after the sandbox opened" do
    expect(sandbox.read("notes.md")).to eq("notes")
    expect(sandbox.read("workspace://docs/guide.md")).to eq("guide")
    File.unlink(File.join(root, "notes.md"))
    File.symlink(File.join(outside, "secret.txt"), File.join(root, "notes.md"))
    FileUtils.mkdir_p(File.join(root, "sub"))
    File.write(File.join(root, "sub", "ok.md"), "ok")
    expect(sandbox.read("sub/ok.md")).to eq("ok")
    FileUtils.rm_rf(File.join(root, "sub"))
    File.symlink(outside, File.join(root, "sub"))
    refused(/symbolic link/) { sandbox.read("notes.md") }
    refused(/symbolic link/) { sandbox.write("notes.md", "clobbered") }
    refused(/symbolic link|does not exist/) { sandbox.read("sub/secret.txt") }
    refused(/symbolic link|does not exist/) { sandbox.write("sub/secret.txt", "clobbered") }
  end

  it "refuses hardlinks to read-only and runtime-only files placed in a writable directory" do
    File.link(File.join(workspace.path(:source), "main.rb"), File.join(root, "main-link.rb"))
    File.link(File.join(workspace.path(:cache), "token"), File.join(root, "token-link"))
    %w[main-link.rb token-link].each do |link|
      refused(/Multiply-linked files are not accessible/) { sandbox.read(link) }
      refused(/Multiply-linked files are not accessible/) { sandbox.write(link, "overwritten") }
      refused(/Multiply-linked files are not accessible/) { sandbox.replace(link, "puts", "exit") }
    end
  end

  it "refuses writes through a read-only grant and through a read-only grant nested in a writable root" do
    read_only = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_only}})
    refused(/does not allow filesystem write/) { read_only.write("notes.md", "x") }
    refused(/does not allow filesystem replace/) { read_only.replace("notes.md", "notes", "x") }
    scope = read_only.scope(capabilities: %i[read list write replace])
    expect(scope.capabilities.features).not_to include(:filesystem_write)

    refused(/Sandbox scope is read-only/) { sandbox.write("source/main.rb", "exit") }
    refused(/Sandbox scope is read-only/) { sandbox.write("source/new.rb", "exit") }
    refused(/Sandbox scope is read-only/) { sandbox.write("workspace://source/main.rb", "exit") }
    refused(/Sandbox scope is read-only/) { sandbox.replace("source/main.rb", "puts", "exit") }
    expect(File.read(File.join(root, "notes.md"))).to eq("notes")
  end

  context "with a named path that physically aliases the read-only directory" do
    # The workspace is not opened, because opening rejects aliased named paths (3.6);
    # the broker must hold the line on its own.
    let(:mirror) { File.join(outside, "dir", "mirror") }
    let(:workspace) do
      directory = temporary_directory
      %w[source cache docs].each { |name| Dir.mkdir(File.join(directory, name)) }
      LittleGhost::Workspace.new(root: directory, paths: {source: "source", cache: "cache", docs: "docs", mirror: mirror})
    end
    let(:policy) { {files: {root: :read_write, source: :read_only, mirror: :read_write}, runtime_paths: {cache: :read_write}} }

    before { File.symlink(workspace.path(:source), mirror) }
    after { File.unlink(mirror) }

    it "keeps the read-only access of the directory it aliases" do
      refused(/Sandbox scope is read-only/) { sandbox.write("workspace://mirror/main.rb", "exit") }
      refused(/Sandbox scope is read-only/) { sandbox.write("workspace://mirror/new.rb", "exit") }
      scope = sandbox.scope(files: [:mirror], runtime_paths: [])
      expect(scope.process_grants.map { |m| [m.target, m.access] }).to include([workspace.path(:source), :read_only])
      refused(/Sandbox scope is read-only/) { scope.write("workspace://mirror/main.rb", "exit") }
      expect(sandbox.read("workspace://mirror/main.rb")).to eq("puts 1")
    end
  end

  it "refuses a grant root renamed and replaced after open (workspace validation)" do
    expect(sandbox.read("source/main.rb")).to eq("puts 1")
    FileUtils.mv(workspace.path(:source), File.join(outside, "stolen"))
    Dir.mkdir(workspace.path(:source))
    File.write(File.join(workspace.path(:source), "main.rb"), "planted")
    refused(/changed after opening: source/) { sandbox.read("source/main.rb") }
    refused(/changed after opening: source/) { sandbox.write("notes.md", "x") }
    FileUtils.rm_rf(workspace.path(:source))
    FileUtils.mv(File.join(outside, "stolen"), workspace.path(:source))
  end

  context "with a workspace that was never opened" do
    let(:workspace) do
      directory = temporary_directory
      %w[source cache docs].each { |name| Dir.mkdir(File.join(directory, name)) }
      LittleGhost::Workspace.new(root: directory, paths: {source: "source", cache: "cache", docs: "docs"})
    end
    let(:policy) do
      {files: {root: :read_write, source: :read_only, docs: :read_write}, runtime_paths: {cache: :read_write}}
    end

    it "refuses a grant root renamed and replaced after the scope pinned it (broker)" do
      expect(sandbox.read("workspace://docs/guide.md")).to eq("guide")
      FileUtils.mv(workspace.path(:docs), File.join(root, "docs-old"))
      Dir.mkdir(workspace.path(:docs))
      File.write(File.join(workspace.path(:docs), "guide.md"), "planted")
      refused(/Sandbox mount source changed after initialization/) { sandbox.read("workspace://docs/guide.md") }
      refused(/Sandbox mount source changed after initialization/) { sandbox.write("docs/guide.md", "x") }
    end

    it "refuses everything once the root itself is replaced" do
      expect(sandbox.read("notes.md")).to eq("notes")
      FileUtils.mv(root, "#{root}-old")
      (@temporary_directories ||= []) << "#{root}-old"
      Dir.mkdir(root)
      File.write(File.join(root, "notes.md"), "planted")
      refused(/changed after initialization|does not exist/) { sandbox.read("notes.md") }
      expect { sandbox.open }.to raise_error(LittleGhost::ToolError, /Workspace root changed after initialization/)
      FileUtils.rm_rf(root)
      FileUtils.mv("#{root}-old", root)
    end
  end

  it "refuses a FIFO and a character device inside a grant without hanging" do
    File.mkfifo(File.join(root, "fifo"))
    expect(system("mknod", File.join(root, "null-device"), "c", "1", "3")).to be(true)
    %w[fifo null-device].each do |special|
      refused(/Path is not a file/) { sandbox.read(special) }
      refused(/Path is not a file/) { sandbox.write(special, "x") }
      refused(/Path is not a file/) { sandbox.replace(special, "a", "b") }
    end
    expect(File.ftype(File.join(root, "fifo"))).to eq("fifo")
    expect(File.ftype(File.join(root, "null-device"))).to eq("characterSpecial")
  end

  context "with small limits" do
    let(:limits) { {read_bytes: 10, write_bytes: 10, list_entries: 3} }

    it "refuses oversize files, writes and directories" do
      File.write(File.join(root, "big.txt"), "x" * 11)
      File.write(File.join(root, "exact.txt"), "y" * 10)
      refused(/File exceeds the read limit/) { sandbox.read("big.txt") }
      expect(sandbox.read("exact.txt")).to eq("y" * 10)
      refused(/Content exceeds the write limit/) { sandbox.write("new.txt", "z" * 11) }
      expect(File.exist?(File.join(root, "new.txt"))).to be(false)
      File.write(File.join(root, "letters.txt"), "abcdefghij")
      refused(/Content exceeds the write limit/) { sandbox.replace("letters.txt", "a", "aa") }
      refused(/Text occurs more than once/) { sandbox.replace("exact.txt", "y", "z") }
      expect(File.read(File.join(root, "exact.txt"))).to eq("y" * 10)
      expect(File.read(File.join(root, "letters.txt"))).to eq("abcdefghij")
      4.times { |i| File.write(File.join(workspace.path(:docs), "f#{i}"), "") }
      refused(/Directory exceeds the listing limit/) { sandbox.list("docs") }
    end
  end

  it "refuses invalid UTF-8 without returning partial content" do
    File.binwrite(File.join(root, "binary.dat"), "ok\xFF\xFEok".b)
    refused(/File is not valid UTF-8 text/) { sandbox.read("binary.dat") }
    refused(/File is not valid UTF-8 text/) { sandbox.replace("binary.dat", "ok", "no") }
    expect(File.binread(File.join(root, "binary.dat"))).to eq("ok\xFF\xFEok".b)
  end

  it "refuses NUL bytes in paths" do
    refused(/Path contains a null byte/) { sandbox.read("notes.md\0.txt") }
    refused(/Path contains a null byte/) { sandbox.write("new\0.txt", "x") }
    refused(/Path contains a null byte/) { sandbox.list("docs\0") }
    expect(Dir.children(root).sort).to eq(%w[cache docs notes.md source])
  end

  it "refuses unknown workspace:// names" do
    refused(/nope/) { sandbox.read("workspace://nope/secret.txt") }
    refused(/nope/) { sandbox.write("workspace://nope/x", "x") }
    refused(/must name a configured path/) { sandbox.read("workspace:///x") }
  end

  it "keeps runtime-only directories out of listings and reach (W11)" do
    expect(sandbox.list.split("\n")).to eq(%w[docs/ notes.md source/])
    refused(/outside the sandbox scope/) { sandbox.list("cache") }
    refused(/outside the sandbox scope/) { sandbox.read("cache/token") }
    refused(/outside the sandbox scope/) { sandbox.read("workspace://cache/token") }
    refused(/outside the sandbox scope/) { sandbox.write("workspace://cache/new", "x") }
    dropped = sandbox.scope(files: [:root], runtime_paths: [])
    expect(dropped.list.split("\n")).to eq(%w[docs/ notes.md source/])
    refused(/outside the sandbox scope/) { dropped.read("cache/token") }
    expect(sandbox.allows?(:read, "cache/token")).to be(false)
    expect(sandbox.allows?(:list, "cache")).to be(false)
  end
end
