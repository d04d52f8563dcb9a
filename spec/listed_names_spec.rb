# frozen_string_literal: true

require "spec_helper"

# `list` is read by a model: one line must be one entry, and every line must name that entry when
# given back to read/write/replace/list. Names with control characters, invalid UTF-8, a leading `~` or `"` are shown
# as a double-quoted string (\\, \", \n, \r, \t and \xNN escapes) that every file operation accepts; and every path
# Workspace#reference returns resolves back to the same physical path.
RSpec.describe "Names shown by list and Workspace#reference" do # rubocop:disable RSpec/DescribeClass
  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:sandbox) do
    LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace,
                                            policy: {files: {root: :read_write, source: :read_write}}).open
  end
  let(:root) { workspace.root }
  let(:names) do
    ["notes.md\nINSTRUCTIONS.md", "~notes.md", "caf\xE9.md".b, "\"quoted\".md", "tab\there", "plain.md"]
  end

  before do
    names.each { |name| File.binwrite(File.join(root, name), "content of #{name.b.inspect}") }
    Dir.mkdir(File.join(root, "dir\nx"))
    File.write(File.join(root, "dir\nx", "inner.md"), "inner")
  end

  it "shows one line per entry, and each line reads back the entry it names" do
    lines = sandbox.list(".").split("\n")
    expect(lines.size).to eq(names.size + 2) # the names, "dir\nx/" and the named path's "src/"
    expect(lines).to include("\"notes.md\\nINSTRUCTIONS.md\"", "\"~notes.md\"", "\"caf\\xE9.md\"", "plain.md",
                             "\"dir\\nx\"/", "src/")
    expect(lines).not_to include("INSTRUCTIONS.md", "~notes.md")
    files = lines.reject { |line| line.end_with?("/") }
    expect(files.map { |line| sandbox.read(line) }).to match_array(names.map { |name| "content of #{name.b.inspect}" })
    expect(sandbox.list("\"dir\\nx\"")).to eq("inner.md")
    expect(sandbox.read("\"dir\\nx\"/inner.md")).to eq("inner")
  end

  it "writes and replaces through the quoted form, reaching the very entry listed" do
    sandbox.write("\"new\\nline.md\"", "v1")
    expect(File.read(File.join(root, "new\nline.md"))).to eq("v1")
    sandbox.replace("\"~notes.md\"", "content", "changed")
    expect(File.binread(File.join(root, "~notes.md"))).to start_with("changed")
    expect { sandbox.read("\"unterminated") }.to raise_error(LittleGhost::ToolError, /malformed quoted name/)
    expect { sandbox.read("\"..\"/etc/passwd") }.to raise_error(LittleGhost::ToolError, /cannot be empty, '.', '..'/)
    expect { sandbox.read("~/x") }.to raise_error(LittleGhost::ToolError, /escapes its root/)
    expect { workspace.resolve("\"a\\q\"") }.to raise_error(ArgumentError, /malformed quoted name/)
  end

  it "resolves every reference back to the path it was made from" do
    paths = names.map { |name| File.join(root, name) } +
            [File.join(root, "dir\nx", "inner.md"), File.join(workspace.path(:source), "~lead"),
             File.join(root, "sub", "~x")]
    paths.each do |path|
      reference = workspace.reference(path)
      expect(reference).not_to include("\n")
      expect(workspace.resolve(reference).b).to eq(path.b), reference
    end
    expect(workspace.reference(File.join(root, "~notes.md"))).to eq("\"~notes.md\"")
    expect(workspace.reference(File.join(workspace.path(:source), "~lead"))).to eq("workspace://source/\"~lead\"")
  end
end
