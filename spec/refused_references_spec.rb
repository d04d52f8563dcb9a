# frozen_string_literal: true

require "spec_helper"

# A reference the workspace refuses before the broker sees
# it (`../x`, an absolute path, an unknown workspace name) is a refusal like
# any other: the file tool raises the same ToolError as before, and exactly
# one Denial is recorded and reaches every on_denial subscriber, in the
# refused thread. A malformed reference (empty, NUL byte) names nothing and
# is not a denial; a query (`allows?`) is never one.
RSpec.describe "A file tool's refused workspace reference" do
  let(:root) { Dir.mktmpdir("lg-refused-ref") }
  let(:workspace) do
    FileUtils.mkdir_p(File.join(root, "docs"))
    LittleGhost::Workspace.new(root: root, paths: {docs: "docs"}).open
  end
  let(:sandbox) do
    LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}})
  end
  let(:seen) { [] }

  before { sandbox.on_denial { |denial| seen << [denial, Thread.current] } }

  after { FileUtils.rm_rf(root) }

  def denied(operation, reference, reason, &call)
    expect(&call).to raise_error(LittleGhost::ToolError) { |error| @message = error.message }
    expect(sandbox.denials.map { |d| d.to_h.except(:time) })
      .to eq([{kind: :filesystem, operation: operation, target: reference, reason: reason, message: @message}])
    expect(seen.map(&:first)).to eq(sandbox.denials)
    expect(seen.map(&:last)).to eq([Thread.current])
  end

  it "a read of ../x is one escapes_scope denial" do
    denied(:read, "../x", :escapes_scope) { sandbox.read("../x") }
  end

  it "a read of workspace://root//ABSOLUTE is one escapes_scope denial: the part after the name is relative" do
    File.write(File.join(root, "docs", "a.md"), "inside")
    reference = "workspace://root/#{root}/docs/a.md" # root is absolute, so this is workspace://root//tmp/...
    denied(:read, reference, :escapes_scope) { sandbox.read(reference) }
  end

  it "a write through workspace://docs/../../x is one escapes_scope denial, and nothing is written" do
    denied(:write, "workspace://docs/../../x", :escapes_scope) { sandbox.write("workspace://docs/../../x", "x") }
    expect(File.exist?(File.join(File.dirname(root), "x"))).to be(false)
  end

  it "a listing of ~ is one escapes_scope denial" do
    denied(:list, "~/", :escapes_scope) { sandbox.list("~/") }
  end

  it "an absolute path outside the workspace is one outside_scope denial" do
    denied(:read, "/etc/passwd", :outside_scope) { sandbox.read("/etc/passwd") }
  end

  it "an unknown workspace name is one outside_scope denial" do
    denied(:replace, "workspace://nope/a.md", :outside_scope) { sandbox.replace("workspace://nope/a.md", "a", "b") }
  end

  it "the refusal keeps the message the workspace gave" do
    expect { sandbox.read("../x") }.to raise_error(LittleGhost::ToolError, "workspace path traversal is not allowed")
  end

  it "a scope's refused reference is reported to its sandbox" do
    scope = sandbox.scope(files: {root: :read_only})
    denied(:read, "../x", :escapes_scope) { scope.read("../x") }
  end

  it "a malformed reference is a ToolError but not a denial" do
    expect { sandbox.read("") }.to raise_error(LittleGhost::ToolError)
    expect { sandbox.read("a\0b") }.to raise_error(LittleGhost::ToolError)
    expect(sandbox.denials).to be_empty
    expect(seen).to be_empty
  end

  it "allows? answers false for an escaping reference without recording a denial" do
    expect(sandbox.allows?(:filesystem_read, "../x")).to be(false)
    expect(sandbox.denials).to be_empty
  end
end
