# frozen_string_literal: true

require "spec_helper"

RSpec.describe LittleGhost::Sandbox::Scope do
  # A backend that can enforce every network mode, so SC.10 can be observed in full.
  let(:network_capable) do
    Class.new(LittleGhost::Sandbox) do
      def capabilities
        LittleGhost::Sandbox::Capabilities.new(
          features: %i[filesystem_read filesystem_list filesystem_write filesystem_replace process_execute],
          network_modes: %i[inherit none allowlist], isolation: :namespace
        )
      end
    end
  end

  let(:workspace) { open_workspace(paths: {source: "source", cache: "cache", home: home}) }
  let(:home) { temporary_directory }
  let(:policy) do
    {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write, home: :read_write}}
  end
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy) }

  def summary(scope)
    scope.process_grants.map { |mount| [mount.target, mount.access, mount.tools] }
  end

  before do
    File.write(File.join(workspace.root, "notes.md"), "notes")
    File.write(File.join(workspace.path(:source), "main.rb"), "puts 1")
    File.write(File.join(workspace.path(:cache), "secret"), "token")
  end

  describe "inheritance and selection (SC.2–SC.5)" do
    it "keeps the parent grants when nothing is selected, longest target first" do
      scope = sandbox.scope
      expect(summary(scope)).to eq([
        [workspace.path(:source), :read_only, true],
        [workspace.path(:cache), :read_write, false],
        [home, :read_write, false],
        [workspace.root, :read_write, true]
      ].sort_by { |target, _, tools| [-target.size, tools ? 0 : 1, target] })
      expect(scope.process_grants).to be_frozen
      expect(scope.process_grants).to all(be_frozen)
    end

    it "accepts a Hash, an Array of names, an Array of pairs and []" do
      expect(summary(sandbox.scope(files: {source: :read_only}, runtime_paths: [])))
        .to eq([[workspace.path(:source), :read_only, true]])
      expect(summary(sandbox.scope(files: ["source"], runtime_paths: {})))
        .to eq([[workspace.path(:source), :read_only, true]])
      expect(summary(sandbox.scope(files: [[:root, "read_only"]], runtime_paths: [])))
        .to eq([[workspace.root, :read_only, true]])
      expect(summary(sandbox.scope(files: [], runtime_paths: [:home])))
        .to eq([[home, :read_write, false]])
    end

    it "keeps every grant of a category passed as nil" do
      scope = sandbox.scope(files: [])
      expect(scope.process_grants.map(&:tools)).to all(be(false))
      expect(scope.process_grants.size).to eq(2)
    end

    it "uses realpaths as sources" do
      real = temporary_directory
      link = File.join(temporary_directory, "link")
      File.symlink(real, link)
      linked = open_workspace(root: link)
      scope = LittleGhost::Sandboxes::Unrestricted.new(workspace: linked).scope(files: [:root])
      expect(scope.process_grants.map(&:source)).to eq([File.realpath(link)])
      expect(scope.process_grants.map(&:target)).to eq([link])
    end

    it "never promotes a runtime grant or demotes a file grant (SC.4)" do
      expect { sandbox.scope(files: [:cache]) }
        .to raise_error(LittleGhost::CapabilityError, /sandbox scope cannot expose a path outside its parent/)
      expect { sandbox.scope(runtime_paths: [:source]) }
        .to raise_error(LittleGhost::CapabilityError, /cannot expose a path outside its parent/)
    end

    it "raises KeyError for a name the workspace does not know" do
      expect { sandbox.scope(files: [:nope]) }.to raise_error(KeyError)
    end

    it "never widens access and rejects invalid access symbols (SC.5)" do
      expect { sandbox.scope(files: {source: :read_write}) }
        .to raise_error(LittleGhost::CapabilityError, /read-only mount writable/)
      expect { sandbox.scope(files: {root: :execute}) }.to raise_error(LittleGhost::PolicyError)
      expect { sandbox.scope(files: :root) }.to raise_error(LittleGhost::PolicyError, /must be a Hash or an Array/)
    end
  end

  describe "restrictive overlays and deny markers (SC.6, SC.8)" do
    it "keeps a read-only grant nested in a selected writable one" do
      scope = sandbox.scope(files: [:root], runtime_paths: [])
      expect(summary(scope)).to eq([[workspace.path(:source), :read_only, true], [workspace.root, :read_write, true]])
      expect { scope.write("source/main.rb", "changed") }
        .to raise_error(LittleGhost::ToolError, /Sandbox scope is read-only/)
      expect(File.read(File.join(workspace.path(:source), "main.rb"))).to eq("puts 1")
      expect(scope.write("notes.md", "new")).to eq("Wrote 3 bytes to notes.md")
    end

    it "hides a dropped runtime path from tools that come through a wider grant" do
      scope = sandbox.scope(files: [:root], runtime_paths: [])
      expect(scope.process_grants.map(&:target)).not_to include(workspace.path(:cache))
      expect { scope.read("cache/secret") }.to raise_error(LittleGhost::ToolError, /Path is outside the sandbox scope/)
      expect { scope.write("cache/secret", "x") }.to raise_error(LittleGhost::ToolError, /outside the sandbox scope/)
      expect(scope.list.split("\n")).not_to include("cache/")
      expect(scope.scope(files: [:root]).list.split("\n")).not_to include("cache/")
      expect(File.read(File.join(workspace.path(:cache), "secret"))).to eq("token")
    end
  end

  describe "re-derivation and validation (SC.7, SC.16)" do
    it "cannot be built before the workspace directories exist" do
      fresh = LittleGhost::Workspace.new(root: File.join(temporary_directory, "later"), paths: {source: "source"})
      backend = LittleGhost::Sandboxes::Unrestricted.new(workspace: fresh)
      expect { backend.scope }.to raise_error(LittleGhost::CapabilityError, /sandbox scope mount source is unavailable/)
    end

    it "detects a grant root replaced after the scope was built" do
      scope = sandbox.scope(files: [:source], runtime_paths: [])
      expect(scope.validate!).to equal(scope)
      FileUtils.mv(workspace.path(:source), File.join(workspace.root, "moved"))
      FileUtils.mkdir(workspace.path(:source))
      expect { scope.validate! }
        .to raise_error(LittleGhost::CapabilityError, /sandbox scope mount source changed after initialization/)
      FileUtils.rm_rf(workspace.path(:source))
      expect { scope.validate! }.to raise_error(LittleGhost::CapabilityError, /changed after initialization/)
    end
  end

  describe "capabilities (SC.9) and network (SC.10)" do
    let(:backend) { network_capable.new(workspace: workspace, policy: policy.merge(network: :inherit)) }

    it "keeps the parent's network modes and isolation for an Array of features" do
      scope = backend.scope(capabilities: %i[read list spawn])
      expect(scope.capabilities.features).to eq(%i[filesystem_read filesystem_list])
      expect(scope.capabilities.network_modes).to eq([:inherit])
      expect(scope.capabilities.isolation).to eq(:namespace)
    end

    it "intersects with a Capabilities object" do
      requested = LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read process_spawn], network_modes: %i[inherit none],
                                   isolation: :none)
      scope = backend.scope(capabilities: requested)
      expect(scope.capabilities.features).to eq([:filesystem_read])
      expect(scope.capabilities.isolation).to eq(:namespace)
      expect(scope.capabilities.network_modes).to eq([:inherit])
    end

    it "rejects other capability shapes" do
      expect { backend.scope(capabilities: :read) }.to raise_error(LittleGhost::PolicyError)
    end

    # parent ↓ / requested →: nil/true, false/:none, :inherit, equal allowlist, other allowlist
    allowlist = {mode: :allowlist, allow: ["example.com:443"]}
    other = {mode: :allowlist, allow: ["example.org:443"]}
    {
      nil => [:parent, :error, :error, :error, :error],
      inherit: [:parent, :none, :inherit, :error, :error],
      none: [:parent, :none, :error, :error, :error],
      allowlist => [:parent, :none, :error, :parent, :error]
    }.each do |parent_network, outcomes|
      it "narrows a #{parent_network.inspect} parent network by the table" do
        parent = network_capable.new(workspace: workspace, policy: policy.merge(network: parent_network))
        requests = [[nil, true], [false, :none], [:inherit], [allowlist], [other]]
        requests.zip(outcomes).each do |values, outcome|
          values.each do |requested|
            if outcome == :error
              expect { parent.scope(network: requested) }
                .to raise_error(LittleGhost::CapabilityError, /sandbox scope cannot widen network access/),
                    "#{parent_network.inspect} -> #{requested.inspect}"
            else
              scope = parent.scope(network: requested)
              expected = outcome == :parent ? parent.effective_policy.network : LittleGhost::Sandbox::NetworkPolicy.coerce(outcome)
              expect(scope.network).to eq(expected)
              expect(scope.capabilities.network_modes).to eq([expected.mode]) if expected
            end
          end
        end
        expect(parent.scope(network: nil).network).to eq(parent.effective_policy.network)
      end
    end

    it "refuses a network mode the parent backend cannot enforce (SC.10b)" do
      expect { sandbox.scope(network: false) }
        .to raise_error(LittleGhost::CapabilityError, /sandbox backend cannot enforce scoped network mode :none/)
      expect(sandbox.scope(network: :inherit).network.mode).to eq(:inherit)
    end
  end

  describe "predicates (SC.11, SC.13)" do
    it "is writable only with filesystem_write and a writable tool-visible grant" do
      expect(sandbox.scope.writable?).to be(true)
      expect(sandbox.scope(files: [:source]).writable?).to be(false)
      expect(sandbox.scope(files: {root: :read_only}).writable?).to be(false)
      expect(sandbox.scope(files: [], runtime_paths: [:cache]).writable?).to be(false)
      expect(sandbox.scope(capabilities: %i[read list]).writable?).to be(false)
    end

    it "reads the effective policy, workspace and sandbox" do
      scope = sandbox.scope
      expect(scope.policy).to equal(sandbox.effective_policy)
      expect(scope.effective_policy).to equal(sandbox.effective_policy)
      expect(scope.workspace).to equal(workspace)
      expect(scope.supports?(:network, :inherit)).to be(true)
    end

    it "checks the capability and the path, normalising aliases, and never raises" do
      scope = sandbox.scope(capabilities: %i[read list])
      expect(scope.allows?(:read)).to be(true)
      expect(scope.allows?(:read, nil)).to be(true)
      expect(scope.allows?(:write, nil)).to be(false)
      expect(scope.allows?(:read, "notes.md")).to be(true)
      expect(scope.allows?(:write, "notes.md")).to be(false)
      expect(sandbox.scope.allows?(:write, "notes.md")).to be(true)
      expect(sandbox.scope.allows?(:write, "brand-new.md")).to be(true)
      expect(sandbox.scope.allows?(:write, "source/main.rb")).to be(false)
      expect(scope.allows?(:read, "../etc/passwd")).to be(false)
      expect(scope.allows?(:read, "/etc/passwd")).to be(false)
      expect(scope.allows?(:read, "workspace://unknown/x")).to be(false)
      expect(scope.allows?(:read, "cache/secret")).to be(false)
    end
  end

  describe "file operations (SC.12, 2.2)" do
    let(:scope) { sandbox.scope }

    it "reads, lists, writes and replaces through the broker with logical paths in messages" do
      expect(scope.read("notes.md")).to eq("notes")
      expect(scope.list.split("\n")).to eq(%w[notes.md source/])
      expect(scope.replace("notes.md", "notes", "\\0 and \\1")).to eq("Wrote 9 bytes to notes.md")
      expect(File.read(File.join(workspace.root, "notes.md"))).to eq("\\0 and \\1")
    end

    it "refuses an operation whose capability the scope lacks, before touching the path" do
      scope = sandbox.scope(capabilities: %i[read])
      expect { scope.list }.to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow filesystem list")
      expect { scope.write("notes.md", "x") }
        .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow filesystem write")
      expect { scope.replace("notes.md", "n", "x") }
        .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow filesystem replace")
      expect(File.read(File.join(workspace.root, "notes.md"))).to eq("notes")
    end

    it "turns ArgumentError and KeyError from workspace.resolve into ToolError with the same message" do
      expect { scope.read("../x") }.to raise_error(LittleGhost::ToolError, /workspace path traversal is not allowed/)
      expect { scope.read("/etc/passwd") }
        .to raise_error(LittleGhost::ToolError, /workspace paths must be relative or use workspace:/)
      expect { scope.read("workspace://nope/x") }.to raise_error(LittleGhost::ToolError, /nope/)
    end

    it "resolves through a Workspace subclass's own resolve (only a plain Workspace resolves in Rust)" do
      aliasing = Class.new(LittleGhost::Workspace) do
        def resolve(reference) = super(reference == "alias.md" ? "notes.md" : reference)
      end
      custom = aliasing.new(root: workspace.root).open
      scoped = LittleGhost::Sandboxes::Unrestricted.new(workspace: custom, policy: {files: {root: :read_only}}).scope
      expect(scoped.read("alias.md")).to eq("notes")
      expect(scoped.allows?(:read, "alias.md")).to be(true)
      expect { scoped.read("../x") }.to raise_error(LittleGhost::ToolError, /traversal/)
    ensure
      custom&.close
    end

    it "calls context.check! before any I/O and propagates the same exception object" do
      stop = LittleGhost::CancelledError.new("The run was cancelled")
      context = Object.new
      context.define_singleton_method(:check!) { raise stop }
      before = snapshot(workspace.root)
      [-> { scope.read("notes.md", context: context) },
       -> { scope.list(".", context: context) },
       -> { scope.write("notes.md", "x", context: context) },
       -> { scope.write("created.md", "x", context: context) },
       -> { scope.replace("notes.md", "notes", "x", context: context) }].each do |operation|
        expect(&operation).to raise_error { |error| expect(error).to equal(stop) }
      end
      expect(snapshot(workspace.root)).to eq(before)
    end

    it "calls check! exactly once per operation when it returns" do
      calls = 0
      context = Object.new
      context.define_singleton_method(:check!) { calls += 1 }
      scope.read("notes.md", context: context)
      scope.write("notes.md", "x", context: context)
      expect(calls).to eq(2)
    end

    it "requires String content" do
      expect { scope.write("notes.md", 42) }.to raise_error(TypeError)
      expect { scope.replace("notes.md", "notes", nil) }.to raise_error(TypeError)
    end
  end

  describe "processes (SC.14)" do
    let(:recording) do
      Class.new(LittleGhost::Sandbox) do
        attr_reader :calls

        def capabilities
          LittleGhost::Sandbox::Capabilities.new(features: %i[filesystem_read process_execute], network_modes: [])
        end

        %i[execute execute_program start_program].each do |name|
          define_method(name) do |command, **options|
            (@calls ||= []) << [name, command, options]
            name
          end
        end
      end
    end

    it "delegates to the sandbox with scope: self" do
      backend = recording.new(workspace: workspace)
      scope = backend.scope
      expect(scope.execute("ls", timeout: 1)).to eq(:execute)
      expect(scope.execute_program(["ls"], timeout: 1, cwd: ".")).to eq(:execute_program)
      expect(scope.start_program(["cat"])).to eq(:start_program)
      expect(backend.calls).to eq([
        [:execute, "ls", {timeout: 1, scope: scope}],
        [:execute_program, ["ls"], {timeout: 1, cwd: ".", scope: scope}],
        [:start_program, ["cat"], {scope: scope}]
      ])
    end

    it "requires process_execute" do
      backend = recording.new(workspace: workspace)
      scope = backend.scope(capabilities: [:read])
      %i[execute execute_program start_program].each do |name|
        expect { scope.public_send(name, ["ls"], timeout: 1) }
          .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow process execute")
      end
      expect(backend.calls).to be_nil
    end

    # SC.14 holds however the launch is reached: a scope handed straight to the sandbox as `scope:` is held to its
    # own capabilities, on every backend that can run here, and no child runs.
    {
      "Unrestricted" => -> { true },
      "Bubblewrap" => -> { LittleGhost::Sandboxes::Bubblewrap.probe[:available] },
      "Landlock" => -> { LittleGhost::Sandboxes::Landlock.probe[:available] }
    }.each do |name, runnable|
      it "refuses a scope without process_execute passed to #{name}'s own execute_program/start_program" do
        skip "#{name} cannot run here" unless runnable.call
        # Landlock refuses a read-only grant inside a writable one (CapabilityError): the top read-only instead.
        grants = name == "Landlock" ? policy.merge(files: {root: :read_only, source: :read_only}) : policy
        backend = LittleGhost::Sandboxes.const_get(name).new(workspace: workspace, policy: grants).open
        scope = backend.scope(capabilities: %i[read write])
        marker = File.join(workspace.path(:cache), "ran") # writable to a child under every backend
        command = ["/bin/sh", "-c", "touch #{marker}"]
        expect { backend.execute_program(command, timeout: 5, scope: scope) }
          .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow process execute")
        expect { backend.start_program(command, scope: scope) }
          .to raise_error(LittleGhost::ToolError, "Sandbox scope does not allow process execute")
        expect(File.exist?(marker)).to be(false)
        expect(backend.execute_program(command, timeout: 5, scope: backend.scope).exit_code).to eq(0)
        expect(File.exist?(marker)).to be(true)
      ensure
        backend&.close
      end
    end
  end

  describe "nesting (SC.15)" do
    it "narrows from the current scope and can never widen back" do
      outer = sandbox.scope(files: [:source], runtime_paths: [], capabilities: %i[read list])
      inner = outer.scope(files: {source: :read_only})
      expect(summary(inner)).to eq([[workspace.path(:source), :read_only, true]])
      expect(inner.capabilities.features).to eq(%i[filesystem_read filesystem_list])
      expect { outer.scope(files: [:root]) }.to raise_error(LittleGhost::CapabilityError, /outside its parent/)
      expect { outer.scope(runtime_paths: [:cache]) }.to raise_error(LittleGhost::CapabilityError, /outside its parent/)
      expect(outer.scope(capabilities: %i[read write]).capabilities.features).to eq([:filesystem_read])
    end

    it "takes keywords only and opens and closes without touching the parent" do
      scope = sandbox.scope
      expect { scope.scope(:reader) }.to raise_error(ArgumentError)
      expect { scope.scope(sandbox: sandbox) }.to raise_error(ArgumentError)
      expect(scope.open(run: nil)).to equal(scope)
      expect(scope.close).to be_nil
      expect(scope.read("notes.md")).to eq("notes")
    end
  end
end
