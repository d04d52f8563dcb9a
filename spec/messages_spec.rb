# frozen_string_literal: true

require "spec_helper"

# Messages a model and a user read name the logical path they are about, agree in number, and say what to do.
RSpec.describe "messages users and models read" do
  let(:root) { temporary_directory }
  let(:workspace) { LittleGhost::Workspace.new(root: File.join(root, "ws"), paths: {src: "src"}) }
  let(:sandbox) { LittleGhost::Sandbox.build({provider: :unrestricted, files: {root: :read_write}}, workspace: workspace) }

  after do
    sandbox.close
    workspace.close
  end

  it "tells a caller whose workspace was never opened to open it, naming the root" do
    expect { sandbox.read("a.txt") }
      .to raise_error(LittleGhost::ToolError, "Workspace is not open: call workspace.open first (it creates the root #{File.join(root, 'ws')})")
    workspace.open
    expect(sandbox.write("a.txt", "x")).to eq("Wrote 1 byte to a.txt")
  end

  it "agrees in number: 1 byte, 2 bytes, 0 bytes" do
    workspace.open
    expect(sandbox.write("one.txt", "x")).to eq("Wrote 1 byte to one.txt")
    expect(sandbox.write("two.txt", "xy")).to eq("Wrote 2 bytes to two.txt")
    expect(sandbox.write("none.txt", "")).to eq("Wrote 0 bytes to none.txt")
  end

  it "names the logical path in every broker refusal" do
    workspace.open
    Dir.mkdir(File.join(root, "ws", "dir"))
    File.symlink("/etc/passwd", File.join(root, "ws", "link"))
    File.write(File.join(root, "ws", "file"), "x")
    {
      -> { sandbox.write("missing/b.txt", "x") } => "Write target parent does not exist: missing/b.txt",
      -> { sandbox.read("link") } => "Path cannot be a symbolic link: link",
      -> { sandbox.write("link", "x") } => "Write target cannot be a symbolic link: link",
      -> { sandbox.list("file") } => "Path is not a directory: file",
      -> { sandbox.read("dir") } => ": dir"
    }.each do |call, fragment|
      expect(&call).to raise_error(LittleGhost::ToolError) { |error| expect(error.message).to include(fragment) }
    end
  end

  it "reads workspace://root/PATH as the root-relative PATH" do
    workspace.open
    sandbox.write("a.txt", "through the root's name")
    expect(sandbox.read("workspace://root/a.txt")).to eq("through the root's name")
    expect(workspace.resolve("workspace://root")).to eq(workspace.root)
  end

  it "shows the caller's command in a session's inspect, not the wrapper's argv" do
    workspace.open
    backends = [sandbox]
    if LittleGhost::Sandbox.probe(:bubblewrap)[:available]
      backends << LittleGhost::Sandbox.build({provider: :bubblewrap, files: {root: :read_write}}, workspace: workspace)
    end
    if LittleGhost::Sandbox.probe(:landlock)[:available]
      backends << LittleGhost::Sandbox.build({provider: :landlock, files: {root: :read_write}}, workspace: workspace)
    end
    backends.each do |backend|
      session = backend.start_program(["sleep", "5"])
      expect(session.inspect).to end_with(%(command=["sleep", "5"]>))
      session.close
      backend.close
    end
  end
end
