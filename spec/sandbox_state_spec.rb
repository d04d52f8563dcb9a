# frozen_string_literal: true

require "spec_helper"

# What a user sees of a
# sandbox's state: errors that name what is wrong, and an inspect that shows
# what the sandbox grants instead of its internals.
RSpec.describe "sandbox state as a user sees it" do
  let(:workspace) { open_workspace(paths: {source: "source", notes: "notes"}) }
  let(:policy) { {files: {root: :read_write, source: :read_only}} }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy, limits: limits) }
  let(:limits) { {read_bytes: 1000, write_bytes: 100, list_entries: 3} }

  describe "a grant naming a path the workspace lacks" do
    it "is a PolicyError at new that lists the workspace's names, for files and runtime_paths, on every backend" do
      message = "sandbox policy files grants :docs, which is not a workspace path (workspace paths: :root, :source, :notes)"
      [LittleGhost::Sandbox, LittleGhost::Sandboxes::Unrestricted].each do |klass|
        expect { klass.new(workspace: workspace, policy: {files: {docs: :read_only}}) }
          .to raise_error(LittleGhost::PolicyError, message)
      end
      expect { LittleGhost::Sandbox.new(workspace: workspace, policy: {files: {root: :read_only}, runtime_paths: {cache: :read_write}}) }
        .to raise_error(LittleGhost::PolicyError, /\Asandbox policy runtime_paths grants :cache, which is not a workspace path/)
    end
  end

  describe "broker refusals" do
    before do
      File.write(File.join(workspace.root, "big.log"), "x" * 2000)
      File.write(File.join(workspace.path(:source), "app.rb"), "puts 1")
      %w[a b c d].each { |name| File.write(File.join(workspace.path(:notes), name), name) }
    end

    it "name the logical path and the limit, keeping the old wording as the prefix" do
      expect { sandbox.read("notes/missing.md") }.to raise_error(LittleGhost::ToolError, "Path does not exist: notes/missing.md")
      expect { sandbox.read("big.log") }.to raise_error(LittleGhost::ToolError, "File exceeds the read limit of 1000 bytes: big.log")
      expect { sandbox.write("new.txt", "y" * 101) }
        .to raise_error(LittleGhost::ToolError, "Content exceeds the write limit of 100 bytes: new.txt")
      expect { sandbox.list("notes") }.to raise_error(LittleGhost::ToolError, "Directory exceeds the listing limit of 3 entries: notes")
      Dir.mkdir(File.join(workspace.root, "dir"))
      expect { sandbox.read("dir") }.to raise_error(LittleGhost::ToolError, "Path is not a file: dir")
      expect { sandbox.write("source/app.rb", "x") }.to raise_error(LittleGhost::ToolError, "Sandbox scope is read-only: source/app.rb")
      expect(File.read(File.join(workspace.path(:source), "app.rb"))).to eq("puts 1")
    end
  end

  describe "#inspect" do
    it "shows the class, provider, root, grants, network and whether the sandbox is open, and no internals" do
      sandbox.read("big.log") rescue nil # builds the default scope and its broker
      text = sandbox.inspect
      expect(text).to start_with("#<LittleGhost::Sandboxes::Unrestricted provider=:unrestricted root=#{workspace.root.inspect} ")
      expect(text).to include("files={root: :read_write, source: :read_only}", "runtime_paths={}", "network=")
      expect(text).to end_with(" closed>")
      expect(text).not_to include("@", "Scope", "Owner")
      sandbox.open
      expect(sandbox.inspect).to end_with(" open>")
      sandbox.close
      expect(sandbox.inspect).to end_with(" closed>")
    end

    it "keeps no instance variables: the state lives in the object itself" do
      base = LittleGhost::Sandbox.new(workspace: workspace, policy: policy)
      expect(base.instance_variables).to eq([])
      sandbox.read("notes/missing.md") rescue nil
      expect(sandbox.instance_variables).not_to include(:@workspace, :@policy, :@limits, :@profiles, :@__default_scope)
      expect(sandbox.scope.instance_variables).to eq([])
      expect(workspace.instance_variables).to eq([])
    end
  end

  describe "a Ruby subclass" do
    it "gets the state through super and may keep instance variables of its own" do
      klass = Class.new(LittleGhost::Sandbox) do
        attr_reader :label

        def initialize(label:, **options)
          @label = label
          super(**options)
        end
      end
      built = klass.new(label: "mine", workspace: workspace, policy: policy)
      expect([built.label, built.workspace, built.policy.files]).to eq(["mine", workspace, {root: :read_write, source: :read_only}])
      expect(built.instance_variables).to eq([:@label])
      expect(built.inspect).to start_with("#<#{klass.inspect} root=")
    end
  end
end
