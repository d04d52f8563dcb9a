# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Workspace do
  around do |example|
    Dir.mktmpdir("workspace-spec") do |dir|
      @tmp = File.realpath(dir)
      example.run
    end
  end

  attr_reader :tmp

  let(:root) { File.join(tmp, "root") }

  describe ".new" do
    it "expands root without resolving symlinks and freezes paths" do
      FileUtils.mkdir_p(File.join(tmp, "real"))
      File.symlink(File.join(tmp, "real"), File.join(tmp, "link"))
      Dir.chdir(tmp) do
        workspace = described_class.new(root: "link/./", paths: { "source" => :src, cache: "a/../cache" })
        expect(workspace.root).to eq(File.join(tmp, "link"))
        expect(workspace.paths).to eq(source: File.join(tmp, "link/src"), cache: File.join(tmp, "link/cache"))
        expect(workspace.paths).to be_frozen
        expect(workspace.paths.values).to all(be_frozen)
        expect(workspace.root).to be_frozen
      end
    end

    it "keeps absolute paths wherever they point and expands relative ones against root" do
      workspace = described_class.new(root: "/", paths: { tmp: "tmp", elsewhere: "/opt//x/" })
      expect(workspace.path(:tmp)).to eq("/tmp")
      expect(workspace.path("elsewhere")).to eq("/opt/x")
    end

    it "rejects relative paths that leave the root" do
      expect { described_class.new(root: root, paths: { cache: "../cache" }) }
        .to raise_error(ArgumentError, "relative workspace path :cache must remain beneath the workspace root")
      expect { described_class.new(root: root, paths: { home: "~" }) }
        .to raise_error(ArgumentError, /relative workspace path :home must remain beneath/)
    end

    it "rejects non-Hash paths, empty values and non-callable hooks" do
      expect { described_class.new(root: root, paths: [[:a, "a"]]) }
        .to raise_error(ArgumentError, "workspace paths must be a Hash")
      expect { described_class.new(root: root, paths: { a: "" }) }.to raise_error(ArgumentError, /must not be empty/)
      expect { described_class.new(root: root, setup: "echo") }
        .to raise_error(ArgumentError, "workspace setup must be callable")
      expect { described_class.new(root: root, teardown: 1) }
        .to raise_error(ArgumentError, "workspace teardown must be callable")
      expect { described_class.new(paths: {}) }.to raise_error(ArgumentError, /root/)
    end

    it "rejects a path named root and names that share a variable (W17)" do
      expect { described_class.new(root: root, paths: { root: "r" }) }
        .to raise_error(ArgumentError, /:root is reserved/)
      expect { described_class.new(root: root, paths: { ROOT: "r" }) }
        .to raise_error(ArgumentError, /LITTLE_GHOST_WORKSPACE_ROOT/)
      expect { described_class.new(root: root, paths: { "foo-bar": "a", foo_bar: "b" }) }
        .to raise_error(ArgumentError, /:foo-bar and :foo_bar both map to LITTLE_GHOST_WORKSPACE_FOO_BAR/)
    end
  end

  describe "#path" do
    it "raises KeyError for an unknown name" do
      workspace = described_class.new(root: root, paths: { source: "src" })
      expect { workspace.path(:nope) }.to raise_error(KeyError)
    end
  end

  describe "#resolve" do
    subject(:workspace) { described_class.new(root: root, paths: { source: "src", home: File.join(tmp, "home") }) }

    it "maps relative and workspace:// references" do
      expect(workspace.resolve("notes/a.md")).to eq(File.join(root, "notes/a.md"))
      expect(workspace.resolve(".")).to eq(root)
      expect(workspace.resolve("a//b/./c")).to eq(File.join(root, "a/b/c"))
      expect(workspace.resolve("workspace://source/x.rb")).to eq(File.join(root, "src/x.rb"))
      expect(workspace.resolve("workspace://home")).to eq(File.join(tmp, "home"))
      expect(workspace.resolve(:"notes")).to eq(File.join(root, "notes"))
    end

    it "rejects every escape with the documented error" do
      {
        "/etc/passwd" => "workspace paths must be relative or use workspace://",
        "" => "must not be empty",
        "workspace://source/" => "must not be empty",
        "workspace://" => "workspace path must name a configured path",
        "workspace:///etc" => "workspace path must name a configured path",
        "../outside" => "workspace path traversal is not allowed",
        "a/../../outside" => "workspace path traversal is not allowed",
        "workspace://source/../../x" => "workspace path traversal is not allowed",
        "~/x" => "workspace path escapes its root",
        "~root" => "workspace path escapes its root"
      }.each do |reference, message|
        expect { workspace.resolve(reference) }.to raise_error(ArgumentError, /#{Regexp.escape(message)}/), reference
      end
      expect { workspace.resolve("workspace://nope/x") }.to raise_error(KeyError, /nope/)
    end

    it "does not touch the filesystem" do
      workspace.resolve("deep/new/file")
      expect(File.exist?(root)).to be(false)
    end
  end

  describe "#reference" do
    it "inverts resolve, preferring the longest named path" do
      workspace = described_class.new(root: root, paths: { source: "src", lib: "src/lib", home: File.join(tmp, "h") })
      expect(workspace.reference(File.join(root, "src/lib/a.rb"))).to eq("workspace://lib/a.rb")
      expect(workspace.reference(File.join(root, "src/lib"))).to eq("workspace://lib")
      expect(workspace.reference(File.join(root, "src/b.rb"))).to eq("workspace://source/b.rb")
      expect(workspace.reference(File.join(root, "notes/../x"))).to eq("x")
      expect(workspace.reference(root)).to eq(".")
      expect(workspace.reference(File.join(tmp, "h/.rc"))).to eq("workspace://home/.rc")
      expect { workspace.reference(tmp) }.to raise_error(ArgumentError, "path is outside the workspace")
      expect { workspace.reference("#{root}x") }.to raise_error(ArgumentError, "path is outside the workspace")
    end
  end

  describe "#environment" do
    it "exports the root and each named path, frozen" do
      workspace = described_class.new(root: root, paths: { source: "src", "node-cache": "nc", é: "e" })
      expect(workspace.environment).to eq(
        "LITTLE_GHOST_WORKSPACE_ROOT" => root,
        "LITTLE_GHOST_WORKSPACE_SOURCE" => File.join(root, "src"),
        "LITTLE_GHOST_WORKSPACE_NODE_CACHE" => File.join(root, "nc"),
        "LITTLE_GHOST_WORKSPACE__" => File.join(root, "e")
      )
      expect(workspace.environment).to be_frozen
      expect(workspace.environment.keys + workspace.environment.values).to all(be_frozen)
    end
  end

  describe "#open / #close" do
    it "runs setup before creating directories, creates relative paths and never absolute ones" do
      absolute = File.join(tmp, "provisioned")
      seen = nil
      setup = lambda do |workspace:, run:|
        seen = [workspace.open?, run, File.exist?(root)]
        FileUtils.mkdir_p(absolute)
      end
      workspace = described_class.new(root: root, paths: { cache: "c/d", data: absolute }, setup: setup)
      expect(workspace.open(run: :the_run)).to equal(workspace)
      expect(seen).to eq([true, :the_run, false])
      expect(File.directory?(File.join(root, "c/d"))).to be(true)
      expect(workspace.open?).to be(true)
      expect(workspace.run).to eq(:the_run)
      expect(workspace.close).to be_nil
      expect(workspace.open?).to be(false)
      expect(workspace.run).to be_nil
      expect(File.directory?(root)).to be(true) # files are never deleted
    end

    it "is a no-op while open and runs setup again after close" do
      calls = []
      workspace = described_class.new(root: root, setup: ->(**) { calls << :setup }, teardown: ->(**) { calls << :teardown })
      workspace.open
      workspace.open
      workspace.close
      workspace.close
      workspace.open
      workspace.close
      expect(calls).to eq(%i[setup teardown setup teardown])
    end

    it "refuses a missing absolute path and runs teardown after the partial setup" do
      calls = []
      workspace = described_class.new(root: root, paths: { data: File.join(tmp, "missing") },
                                      setup: ->(**) { calls << :setup },
                                      teardown: ->(workspace:, run:) { calls << [:teardown, run] })
      expect { workspace.open(run: 7) }
        .to raise_error(ArgumentError, /absolute workspace path :data must already exist/)
      expect(calls).to eq([:setup, [:teardown, 7]])
      expect(workspace.open?).to be(false)
      expect(File.exist?(File.join(tmp, "missing"))).to be(false)
    end

    it "closes when setup raises and re-raises the setup error" do
      teardowns = 0
      workspace = described_class.new(root: root, setup: ->(**) { raise "setup broke" },
                                      teardown: ->(**) { teardowns += 1 })
      expect { workspace.open }.to raise_error(RuntimeError, "setup broke")
      expect(teardowns).to eq(1)
      expect(workspace.open?).to be(false)
    end

    it "rejects two paths that are the same directory" do
      FileUtils.mkdir_p(File.join(root, "a"))
      workspace = described_class.new(root: root, paths: { a: "a", other: File.join(File.realpath(root), "a") })
      expect { workspace.open }
        .to raise_error(ArgumentError, "workspace paths must not alias the same directory: a, other")
      expect(workspace.open?).to be(false)
      # An alias reached through a symlink is refused before that, as a symlink.
      File.symlink(File.join(root, "a"), File.join(tmp, "alias"))
      linked = described_class.new(root: root, paths: { a: "a", other: File.join(tmp, "alias") })
      expect { linked.open }.to raise_error(LittleGhost::PolicyError, /:other .*symlink/)
      same_as_root = described_class.new(root: root, paths: { here: "." })
      expect { same_as_root.open }.to raise_error(ArgumentError, /alias the same directory: root, here/)
    end

    it "re-raises a teardown error after resetting" do
      workspace = described_class.new(root: root, teardown: ->(**) { raise IOError, "teardown broke" })
      workspace.open
      expect { workspace.close }.to raise_error(IOError, "teardown broke")
      expect(workspace.open?).to be(false)
      expect(workspace.close).to be_nil
    end
  end

  describe "#validate!" do
    it "returns self when closed and detects a swapped directory when open" do
      workspace = described_class.new(root: root, paths: { source: "src" })
      expect(workspace.validate!).to equal(workspace)
      workspace.open
      expect(workspace.validate!).to equal(workspace)
      File.rename(File.join(root, "src"), File.join(root, "src.old"))
      Dir.mkdir(File.join(root, "src"))
      expect { workspace.validate! }
        .to raise_error(LittleGhost::ToolError, "workspace path changed after opening: source")
      expect { workspace.resolve("workspace://source/x") }
        .to raise_error(LittleGhost::ToolError, /changed after opening: source/)
      workspace.close
      expect(workspace.resolve("workspace://source/x")).to eq(File.join(root, "src/x"))
    end

    it "detects a root replaced by a symlink" do
      elsewhere = File.join(tmp, "elsewhere")
      Dir.mkdir(elsewhere)
      workspace = described_class.new(root: root).open
      FileUtils.rm_rf(root)
      File.symlink(elsewhere, root)
      expect { workspace.resolve("x") }.to raise_error(LittleGhost::ToolError, "workspace path changed after opening: root")
    end
  end

  describe "provider registry" do
    it "maps :directory to Workspace and accepts subclasses" do
      expect(described_class.resolve_provider(:directory)).to equal(described_class)
      subclass = Class.new(described_class)
      described_class.register_provider("custom_dir", subclass)
      expect(described_class.resolve_provider(:custom_dir)).to equal(subclass)
    end

    it "rejects non-Workspace classes and unknown names" do
      expect { described_class.register_provider(:bad, String) }.to raise_error(ArgumentError, /Workspace class/)
      expect { described_class.register_provider(:bad, described_class.new(root: root)) }
        .to raise_error(ArgumentError, /Workspace class/)
      expect { described_class.resolve_provider(:s3) }
        .to raise_error(LittleGhost::DependencyError, /\Aworkspace provider :s3 is not available; it is not a registered workspace provider \(registered: .*:directory.*\)\z/)
    end
  end

  it "supports Ruby subclasses calling super" do
    subclass = Class.new(described_class) do
      def initialize(base:)
        super(root: File.join(base, "sub"), paths: { out: "out" })
      end
    end
    workspace = subclass.new(base: tmp)
    expect(workspace.path(:out)).to eq(File.join(tmp, "sub/out"))
    expect(workspace.inspect).to include("root=\"#{tmp}/sub\" paths={out: \"#{tmp}/sub/out\"}")
  end
end
