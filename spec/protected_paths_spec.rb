# frozen_string_literal: true

require "spec_helper"
require "open3"

# `protect:` (default [".git"]): version-control metadata stays read-only inside a writable grant, for programs and
# for the broker. An agent that could write .git/hooks/post-checkout or `git config core.fsmonitor CMD` would run CMD
# on the host the next time the user runs git. Bubblewrap mounts each protected directory read-only over the writable
# grant; the broker refuses writes beneath it (a denial, like every refused write); Landlock, which cannot keep a
# directory read-only inside a writable one, refuses at open naming the path and the fixes.
RSpec.describe "Protected paths" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  git = ["/usr/local/bin/git", "/usr/bin/git"].find { |path| File.executable?(path) }

  before { skip "git is not installed" unless git }

  # A fresh repository in a fresh root (`git init` on the host, before the sandbox opens).
  def repository
    root = temporary_directory
    system(GIT, "init", "-q", root, exception: true)
    File.write(File.join(root, ".env"), "TOKEN=host\n")
    FileUtils.chmod_R("a+rwX", root)
    root
  end

  GIT = git

  def sandbox_in(root, provider, **declaration)
    workspace = LittleGhost::Workspace.new(root: root).open
    (@opened ||= []) << workspace
    LittleGhost::Sandbox.build({provider: provider, files: {root: :read_write}, **declaration}, workspace: workspace)
  end

  after { Array(@opened).each(&:close) }

  # What an agent tries: a hook, an fsmonitor command, and an ordinary file next to them.
  ATTACK = 'echo "touch /tmp/pwned" > .git/hooks/post-checkout; git config core.fsmonitor "touch /tmp/pwned"; ' \
           "echo work > notes.txt"

  describe "under Bubblewrap" do
    before do
      probe = LittleGhost::Sandboxes::Bubblewrap.probe
      skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    end

    def expect_protected(root)
      expect(File.exist?(File.join(root, ".git/hooks/post-checkout"))).to be(false)
      expect(`#{GIT} -C #{root} config --get core.fsmonitor`).to eq("")
      expect(File.read(File.join(root, "notes.txt"))).to eq("work\n")
    end

    it "keeps .git read-only for programs and the broker by default, and the rest writable" do
      root = repository
      sandbox = sandbox_in(root, :bubblewrap)
      result = sandbox.execute_program(["/bin/sh", "-c", ATTACK], timeout: 30)
      expect(result.stderr).to include("Read-only file system")
      expect_protected(root)
      expect(sandbox.policy.protect).to eq([".git"])
      expect { sandbox.write(".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n") }
        .to raise_error(LittleGhost::ToolError, /read-only: \.git\/config/)
      expect { sandbox.replace(".git/config", "bare", "bare") }.to raise_error(LittleGhost::ToolError, /read-only/)
      expect(sandbox.denials.map(&:target)).to include(".git/config")
      expect(`#{GIT} -C #{root} config --get core.fsmonitor`).to eq("")
    end

    it "holds as uid 65534" do
      prefix = drop_to_nobody!
      root = repository
      script = File.join(temporary_directory, "attack.rb")
      File.write(script, <<~RUBY)
        $LOAD_PATH.unshift(#{File.expand_path("../lib", __dir__).inspect})
        require "littleghost/sandbox"
        workspace = LittleGhost::Workspace.new(root: #{root.inspect}).open
        sandbox = LittleGhost::Sandbox.build({provider: :bubblewrap, files: {root: :read_write}}, workspace: workspace)
        print sandbox.execute_program(["/bin/sh", "-c", #{ATTACK.inspect}], timeout: 30).stderr
        begin
          sandbox.write(".git/hooks/post-merge", "touch /tmp/pwned")
        rescue LittleGhost::ToolError => e
          print e.message
        end
      RUBY
      FileUtils.chmod("a+rx", [File.dirname(script), script])
      out, err, status = Open3.capture3(*prefix, RbConfig.ruby, script)
      expect(status).to be_success, err
      expect(out).to include("Read-only file system").and include("Sandbox scope is read-only: .git/hooks/post-merge")
      expect_protected(root)
      expect(File.exist?(File.join(root, ".git/hooks/post-merge"))).to be(false)
    end

    it "protect: [] makes .git writable again" do
      root = repository
      sandbox = sandbox_in(root, :bubblewrap, protect: [])
      result = sandbox.execute_program(["/bin/sh", "-c", ATTACK], timeout: 30)
      expect(result.stderr).to eq("")
      expect(`#{GIT} -C #{root} config --get core.fsmonitor`).to eq("touch /tmp/pwned\n")
    end

    it "protect: lists more directories, and refuses a file it cannot keep read-only rather than leave it writable" do
      root = repository
      FileUtils.mkdir_p(File.join(root, "secrets"))
      sandbox = sandbox_in(root, :bubblewrap, protect: [".git", "secrets"])
      result = sandbox.execute_program(["/bin/sh", "-c", "echo x > secrets/new"], timeout: 30)
      expect(result.stderr).to include("Read-only file system")
      expect(Dir.children(File.join(root, "secrets"))).to eq([])
      env = sandbox_in(root, :bubblewrap, protect: [".env"])
      expect { env.execute_program(["/bin/true"], timeout: 30) }
        .to raise_error(LittleGhost::CapabilityError, /protected path .*\.env .*not a directory.*protect: \[\]/m)
      expect(File.read(File.join(root, ".env"))).to eq("TOKEN=host\n")
    end
  end

  describe "under Landlock" do
    before do
      probe = LittleGhost::Sandboxes::Landlock.probe
      skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
    end

    it "refuses at open, naming the path, why, and the fixes" do
      root = repository
      sandbox = sandbox_in(root, :landlock)
      expect { sandbox.open }.to raise_error(LittleGhost::CapabilityError) { |error|
        expect(error.message).to include("#{root}/.git").and include("read-only inside the writable grant")
          .and include("protect: []").and include(":read_only with writable named subpaths").and include("Bubblewrap")
      }
      expect { sandbox.execute_program(["/bin/sh", "-c", ATTACK], timeout: 30) }.to raise_error(LittleGhost::CapabilityError)
      expect(File.exist?(File.join(root, ".git/hooks/post-checkout"))).to be(false)
    end

    it "opens with protect: [], or with a read-only root and writable named paths" do
      root = repository
      expect(sandbox_in(root, :landlock, protect: []).execute_program(["/bin/true"], timeout: 30).exit_code).to eq(0)
      workspace = LittleGhost::Workspace.new(root: root, paths: {out: "out"}).open
      (@opened ||= []) << workspace
      narrow = LittleGhost::Sandbox.build({provider: :landlock, files: {root: :read_only, out: :read_write}},
                                          workspace: workspace)
      result = narrow.execute_program(["/bin/sh", "-c", "echo x > out/a; echo x > .git/hooks/x"], timeout: 30)
      expect(File.read(File.join(root, "out/a"))).to eq("x\n")
      expect(File.exist?(File.join(root, ".git/hooks/x"))).to be(false)
      expect(result.exit_code).not_to eq(0)
    end
  end

  it "bad protect: values raise PolicyError naming the value" do
    expect { LittleGhost::Sandbox::Policy.new(protect: ["/etc"]) }
      .to raise_error(LittleGhost::PolicyError, /protect entries must be relative paths.*"\/etc"/)
    expect { LittleGhost::Sandbox::Policy.new(protect: ".git") }.to raise_error(LittleGhost::PolicyError, /Array/)
    expect { LittleGhost::Sandbox::Policy.new(protect: ["../up"]) }.to raise_error(LittleGhost::PolicyError)
  end
end
