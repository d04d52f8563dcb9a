# frozen_string_literal: true

require "spec_helper"
require "rbconfig"

RSpec.describe LittleGhost::Sandboxes::Unrestricted do
  let(:workspace) { open_workspace(paths: {source: "source", cache: "cache"}) }
  let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write}} }
  subject(:sandbox) { described_class.new(workspace: workspace, policy: policy) }

  before do
    File.write(File.join(workspace.root, "notes.md"), "notes")
    File.write(File.join(workspace.path(:cache), "token"), "runtime-secret")
  end

  describe ".new and effective_policy (15.1)" do
    it "defaults to a read-only root with the host filesystem and network" do
      sandbox = described_class.new(workspace: workspace)
      expect(sandbox.policy.files).to eq(root: :read_only)
      expect(sandbox.policy.root_filesystem).to eq(:read_write)
      expect(sandbox.policy.network.mode).to eq(:inherit)
    end

    it "keeps files, runtime paths and environment and reports what it cannot avoid" do
      sandbox = described_class.new(workspace: workspace, policy: policy.merge(environment: {"A" => "1"}))
      effective = sandbox.effective_policy
      expect(effective.files).to eq(policy[:files])
      expect(effective.runtime_paths).to eq(policy[:runtime_paths])
      expect(effective.environment.values).to eq("A" => "1")
      expect(effective.root_filesystem).to eq(:read_write)
      expect(effective.network.mode).to eq(:inherit)
      expect(sandbox.policy.root_filesystem).to eq(:isolated)
      expect(sandbox.policy.network).to be_nil
    end

    it "refuses a network it cannot enforce" do
      expect { described_class.new(workspace: workspace, policy: {network: :none}) }
        .to raise_error(LittleGhost::CapabilityError, /the unrestricted sandbox cannot enforce network mode :none/)
      expect { described_class.new(workspace: workspace, policy: {network: {mode: :allowlist, allow: ["a.test:443"]}}) }
        .to raise_error(LittleGhost::CapabilityError, /cannot enforce network mode :allowlist/)
      expect(described_class.new(workspace: workspace, policy: {network: :inherit}).effective_policy.network.mode)
        .to eq(:inherit)
    end

    it "rejects unknown keywords" do
      expect { described_class.new(workspace: workspace, bubblewrap: "/usr/bin/bwrap") }
        .to raise_error(ArgumentError, /bubblewrap/)
    end
  end

  describe "writable? and capabilities (15.2, 15.3)" do
    # L.2/L.3: what launch cgroups add on this host (none without a writable cgroup).
    let(:cgroup_features) do
      limits = LittleGhost::Sandbox.probe(:unrestricted)[:limits]
      features = []
      features << :process_tree_ownership if limits[:process_tree_ownership] == true
      features << :memory_limit if limits[:memory_bytes] == true
      features << :task_limit if limits[:tasks] == true
      # How cpu_seconds holds: the whole tree (cgroup) or per process (RLIMIT_CPU).
      features << (limits[:cpu_seconds] == true ? :cpu_limit : :process_cpu_limit)
      features
    end

    it "is writable when a file grant is writable" do
      expect(sandbox.writable?).to be(true)
      expect(sandbox.capabilities.features)
        .to eq(%i[filesystem_read filesystem_list process_execute process_spawn filesystem_write filesystem_replace] +
               cgroup_features)
      expect(sandbox.capabilities.network_modes).to eq([:inherit])
      expect(sandbox.capabilities.isolation).to eq(:none)
    end

    it "does not count writable runtime-only grants (W13)" do
      sandbox = described_class.new(workspace: workspace, policy: {files: {root: :read_only}, runtime_paths: {cache: :read_write}})
      expect(sandbox.writable?).to be(false)
      expect(sandbox.supports?(:filesystem_write)).to be(false)
      expect(sandbox.capabilities.features)
        .to eq(%i[filesystem_read filesystem_list process_execute process_spawn] + cgroup_features)
    end

    it "claims tree ownership exactly when launches get a cgroup, and never subprocess denial" do
      expect(sandbox.supports?(:process_tree_ownership)).to be(cgroup_features.include?(:process_tree_ownership))
      expect(sandbox.supports?(:process_spawn_denial)).to be(false)
    end

    it "honours a subclass that withdraws process execute: no child runs" do
      klass = Class.new(described_class) do
        def capabilities
          LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read filesystem_list], network_modes: [:inherit])
        end
      end
      restricted = klass.new(workspace: workspace, policy: policy)
      marker = File.join(workspace.root, "ran")
      expect { restricted.execute_program(["/bin/sh", "-c", "touch #{marker}"], timeout: 5) }
        .to raise_error(LittleGhost::ToolError, /does not allow process execute/)
      expect { restricted.start_program(["/bin/sh", "-c", "touch #{marker}"]) }
        .to raise_error(LittleGhost::ToolError, /does not allow process execute/)
      expect(File.exist?(marker)).to be(false)
    end

    it "honours a subclass that withdraws write" do
      klass = Class.new(described_class) do
        def capabilities
          LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read filesystem_list], network_modes: [:inherit])
        end
      end
      restricted = klass.new(workspace: workspace, policy: policy)
      expect(restricted.writable?).to be(false)
      expect { restricted.write("notes.md", "x") }
        .to raise_error(LittleGhost::ToolError, /does not allow filesystem write/)
      expect(File.read(File.join(workspace.root, "notes.md"))).to eq("notes")
    end
  end

  describe "#open and #close (15.4)" do
    it "returns self and nil" do
      expect(sandbox.open).to equal(sandbox)
      expect(sandbox.open(run: :a_run)).to equal(sandbox)
      expect(sandbox.close).to be_nil
    end

    it "raises when the workspace root was replaced since construction" do
      root = workspace.root
      sandbox
      FileUtils.mv(root, "#{root}-old")
      (@temporary_directories ||= []) << "#{root}-old"
      Dir.mkdir(root)
      expect { sandbox.open }.to raise_error(LittleGhost::ToolError, /Workspace root changed after initialization/)
      Dir.rmdir(root)
      expect { sandbox.open }.to raise_error(LittleGhost::ToolError, /Workspace root changed after initialization/)
    end

    it "records the root identity at open when the root did not exist at construction" do
      later = File.join(temporary_directory, "later")
      fresh = LittleGhost::Workspace.new(root: later)
      sandbox = described_class.new(workspace: fresh)
      expect { sandbox.open }.to raise_error(LittleGhost::ToolError, /Workspace root changed/)
      Dir.mkdir(later)
      expect(sandbox.open).to equal(sandbox)
      File.rename(later, "#{later}-old") # keeps the old inode alive, so the new root cannot reuse its number
      Dir.mkdir(later)
      expect { sandbox.open }.to raise_error(LittleGhost::ToolError, /Workspace root changed/)
    end
  end

  describe "file operations (15.5)" do
    it "reads, lists, writes and replaces through one cached default scope" do
      expect(sandbox.read("notes.md")).to eq("notes")
      expect(sandbox.list).to eq("notes.md\nsource/")
      expect(sandbox.list("source")).to eq("")
      expect(sandbox.write("new.md", "yes")).to eq("Wrote 3 bytes to new.md")
      expect(sandbox.replace("new.md", "yes", "no", context: nil)).to eq("Wrote 2 bytes to new.md")
      expect(File.read(File.join(workspace.root, "new.md"))).to eq("no")
    end

    it "builds the default scope through #scope, once" do
      klass = Class.new(described_class) do
        attr_reader :scopes

        def scope(*args, **options)
          @scopes = (@scopes || 0) + 1
          super
        end
      end
      sandbox = klass.new(workspace: workspace, policy: policy)
      sandbox.read("notes.md")
      sandbox.list
      sandbox.write("x.md", "x")
      expect(sandbox.scopes).to eq(1)
    end

    it "hides runtime-only paths from tools" do
      expect { sandbox.read("cache/token") }.to raise_error(LittleGhost::ToolError, /outside the sandbox scope/)
      expect(sandbox.list.split("\n")).not_to include("cache/")
    end

    it "passes context: to the scope, which checks it before any I/O" do
      stop = LittleGhost::DeadlineExceededError.new("The run deadline was reached")
      context = Object.new
      context.define_singleton_method(:check!) { raise stop }
      expect { sandbox.write("new.md", "x", context: context) }.to raise_error { |error| expect(error).to equal(stop) }
      expect(File.exist?(File.join(workspace.root, "new.md"))).to be(false)
    end

    it "calls check! once per operation, before the default scope is built" do
      klass = Class.new(described_class) do
        attr_reader :events

        def scope(*args, **options)
          (@events ||= []) << :scope
          super
        end
      end
      sandbox = klass.new(workspace: workspace, policy: policy)
      context = Object.new
      context.define_singleton_method(:check!) { (sandbox.instance_variable_get(:@events) || sandbox.instance_variable_set(:@events, [])) << :check }
      sandbox.read("notes.md", context: context)
      sandbox.list(context: context)
      expect(sandbox.events).to eq(%i[check scope check])
    end

    it "answers allows? from the cached scope and never raises" do
      expect(sandbox.allows?(:read, "notes.md")).to be(true)
      expect(sandbox.allows?(:write, "source/x.rb")).to be(false)
      expect(sandbox.allows?(:read, "cache/token")).to be(false)
      expect(sandbox.allows?(:read, "../x")).to be(false)
      expect(sandbox.allows?(:spawn)).to be(true)
      expect(sandbox.allows?(:spawn, nil)).to be(true)
      broken = described_class.new(workspace: LittleGhost::Workspace.new(root: File.join(temporary_directory, "gone")))
      expect(broken.allows?(:read, "a")).to be(false)
    end
  end

  describe ".probe (15.8)" do
    it "reports the capabilities of a default Unrestricted sandbox" do
      result = LittleGhost::Sandbox.probe(:unrestricted)
      default = described_class.new(workspace: workspace)
      expect(result[:available]).to be(true)
      expect(result[:reason]).to be_nil
      expect(result[:capabilities]).to eq(default.capabilities)
    end
  end

  describe "#execute_program (15.6, 17.5, 17.6)" do
    let(:ruby) { RbConfig.ruby }

    def run(code, **options)
      sandbox.execute_program([ruby, "-e", code], timeout: 10, **options)
    end

    it "runs on the host with only the workspace variables and the default PATH, from the root" do
      execution = run("print ENV.fetch('LITTLE_GHOST_WORKSPACE_CACHE'), '|', Dir.pwd, '|', ENV['PATH'], '|', ENV.key?('HOME')")
      expect(execution.stdout)
        .to eq("#{workspace.path(:cache)}|#{workspace.root}|/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|false")
      expect(execution.exit_code).to eq(0)
      expect(execution).to be_success
    end

    it "merges workspace, policy and call variables in that order" do
      sandbox = described_class.new(
        workspace: workspace,
        policy: policy.merge(environment: {"LITTLE_GHOST_WORKSPACE_ROOT" => "from-policy", "A" => "policy", "B" => "policy"})
      )
      execution = sandbox.execute_program([ruby, "-e", "print ENV.values_at('LITTLE_GHOST_WORKSPACE_ROOT', 'A', 'B').join(',')"],
                                          timeout: 10, environment: {A: :call})
      expect(execution.stdout).to eq("from-policy,call,policy")
    end

    it "inherits the host environment only when both the policy and the call opt in" do
      ENV["LG_UNRESTRICTED_SPEC"] = "host"
      code = "print ENV.fetch('LG_UNRESTRICTED_SPEC', 'absent'), ENV.fetch('C', '')"
      inheriting = described_class.new(workspace: workspace, policy: policy.merge(environment: {inherit: true, set: {"C" => "policy"}}))
      expect(inheriting.execute_program([ruby, "-e", code], timeout: 10, inherit_environment: true).stdout).to eq("hostpolicy")
      expect(inheriting.execute_program([ruby, "-e", code], timeout: 10).stdout).to eq("absentpolicy")
      expect(run(code, inherit_environment: true).stdout).to eq("absent")
    ensure
      ENV.delete("LG_UNRESTRICTED_SPEC")
    end

    it "resolves cwd as a logical workspace path" do
      expect(run("print Dir.pwd", cwd: "source").stdout).to eq(workspace.path(:source))
      expect(run("print Dir.pwd", cwd: "workspace://cache").stdout).to eq(workspace.path(:cache))
      expect { run("print 1", cwd: "../") }.to raise_error(LittleGhost::ToolError, /traversal is not allowed/)
      expect { run("print 1", cwd: "/tmp") }.to raise_error(LittleGhost::ToolError, /must be relative/)
    end

    it "asks a Workspace subclass for resolve and environment (only a plain Workspace is read in Rust)" do
      custom_class = Class.new(LittleGhost::Workspace) do
        def resolve(reference) = super(reference == "src-alias" ? "source" : reference)
        def environment = super.merge("LG_CUSTOM" => "yes")
      end
      custom = custom_class.new(root: workspace.root, paths: {source: "source", cache: "cache"}).open
      sandbox = described_class.new(workspace: custom, policy: policy)
      code = "print Dir.pwd, ' ', ENV['LG_CUSTOM']"
      execution = sandbox.execute_program([ruby, "-e", code], timeout: 10, cwd: "src-alias")
      expect(execution.stdout).to eq("#{workspace.path(:source)} yes")
    ensure
      custom&.close
    end

    it "refuses a missing working directory the same way for execute_program and start_program" do
      expect { run("print 1", cwd: "missing") }
        .to raise_error(LittleGhost::ToolError, "Working directory is not available: missing")
      expect { sandbox.start_program(["/bin/true"], cwd: "missing") }
        .to raise_error(LittleGhost::ToolError, "Working directory is not available: missing")
    end

    it "never uses a shell for an argv, but execute does" do
      execution = sandbox.execute_program(["echo hi; touch pwned"], timeout: 5)
      expect(execution.exit_code).to eq(127)
      expect(execution.stderr).to include("command not found")
      expect(File.exist?(File.join(workspace.root, "pwned"))).to be(false)
      expect(sandbox.execute("echo $((1 + 2))", timeout: 5).stdout).to eq("3\n")
    end

    it "validates the timeout and defaults max_output_bytes to limits.output_bytes" do
      expect { sandbox.execute_program(["true"], timeout: 0) }.to raise_error(ArgumentError, /timeout must be positive/)
      expect { sandbox.execute_program(["true"]) }.to raise_error(ArgumentError, /timeout/)
      small = described_class.new(workspace: workspace, policy: policy, limits: {output_bytes: 5})
      execution = small.execute_program([ruby, "-e", "print 'a' * 20; $stderr.print 'problem'"], timeout: 10)
      expect(execution.stdout).to eq("aaaaa\n[output truncated]")
      expect(execution.stderr).to eq("probl\n[output truncated]")
      expect(small.execute_program([ruby, "-e", "print 'a' * 20"], timeout: 10, max_output_bytes: 30).stdout).to eq("a" * 20)
    end

    it "propagates the exact exception raised by context.check!" do
      stop = LittleGhost::CancelledError.new("The run was cancelled")
      context = Object.new
      context.define_singleton_method(:check!) { raise stop }
      expect { run("File.write('ran', '1')", context: context) }.to raise_error { |error| expect(error).to equal(stop) }
      expect(File.exist?(File.join(workspace.root, "ran"))).to be(false)
    end

    it "runs through a scope, which must allow process execute" do
      expect(sandbox.scope.execute_program([ruby, "-e", "print 7"], timeout: 10).stdout).to eq("7")
      expect { sandbox.scope(capabilities: [:read]).execute_program([ruby, "-e", "print 7"], timeout: 10) }
        .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow process execute")
    end
  end

  describe "#start_program (15.7)" do
    let(:ruby) { RbConfig.ruby }

    it "starts a session with the merged environment in the resolved cwd" do
      session = sandbox.start_program([ruby, "-e", "print ENV['LITTLE_GHOST_WORKSPACE_SOURCE'], '|', Dir.pwd, '|', $stdin.gets"],
                                      cwd: "source", environment: {"X" => "1"})
      expect(session).to be_a(LittleGhost::Sandbox::ProcessSession)
      session.write("line\n")
      session.close_write
      output = +""
      until (chunk = session.read(timeout: 1)).eof
        output << chunk.stdout
      end
      output << chunk.stdout
      expect(output).to eq("#{workspace.path(:source)}|#{workspace.path(:source)}|line\n")
    ensure
      session&.close
    end

    it "refuses to prohibit subprocess creation before spawning anything" do
      expect { sandbox.start_program([ruby, "-e", "File.write('spawned', '1')"], allow_subprocesses: false) }
        .to raise_error(LittleGhost::CapabilityError, /the unrestricted sandbox cannot prohibit subprocess creation/)
      expect(sandbox.start_program([ruby, "-e", "exit 0"], allow_subprocesses: true).tap(&:wait).close).to be_nil
      expect(File.exist?(File.join(workspace.root, "spawned"))).to be(false)
    end

    it "calls context.check! once before spawning" do
      stop = LittleGhost::CancelledError.new("The run was cancelled")
      context = Object.new
      context.define_singleton_method(:check!) { raise stop }
      expect { sandbox.start_program([ruby, "-e", "File.write('spawned', '1')"], context: context) }
        .to raise_error { |error| expect(error).to equal(stop) }
      sandbox.start_program([ruby, "-e", "exit 0"]).tap(&:wait).close
      expect(File.exist?(File.join(workspace.root, "spawned"))).to be(false)
    end

    it "rejects unknown keywords and invalid limits" do
      expect { sandbox.start_program(["true"], bogus: 1) }.to raise_error(ArgumentError, /bogus/)
      # `timeout:` bounds a session's life (spec/process_session_timeout_spec.rb), validated like execute_program's.
      expect { sandbox.start_program(["true"], timeout: 0) }.to raise_error(ArgumentError, "timeout must be positive")
      expect { sandbox.start_program(["true"], output_bytes: 0) }.to raise_error(ArgumentError)
    end
  end
end
