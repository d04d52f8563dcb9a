# frozen_string_literal: true

require "spec_helper"

# The Bubblewrap backend's contract (SPEC §16, §19): probe, construction,
# open, argv, file operations and launches. The escape attempts live in
# bubblewrap_escape_spec.rb and bubblewrap_confinement_spec.rb.
RSpec.describe LittleGhost::Sandboxes::Bubblewrap do
  bwrap_ready = described_class.probe[:available]
  before { skip "bubblewrap is unavailable here: #{described_class.probe[:reason]}" unless bwrap_ready }

  let(:workspace) { open_workspace(paths: {source: "src", cache: "cache"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {cache: :read_write}} }
  let(:sandbox) { described_class.new(workspace: workspace, policy: policy) }

  describe "constants" do
    it "names the default executable and the roots of an isolated root" do
      expect(described_class::DEFAULT_EXECUTABLE).to eq("/usr/bin/bwrap")
      expect(described_class::RUNTIME_ROOTS).to eq(["/usr"])
      expect(described_class::COMPATIBILITY_ROOTS).to eq(["/bin", "/sbin", "/lib", "/lib64"])
    end
  end

  describe ".probe" do
    it "reports the backend capabilities, subprocess denial and allowlist included" do
      result = described_class.probe
      expect(result[:available]).to be(true)
      expect(result[:reason]).to be_nil
      expect(result[:capabilities].features).to include(:process_tree_ownership, :process_spawn_denial, :filesystem_write)
      expect(result[:capabilities].network_modes).to eq(%i[inherit none allowlist])
      expect(result[:capabilities].isolation).to eq(:namespace)
    end

    it "says how to install a missing bwrap and reports empty capabilities" do
      result = LittleGhost::Sandbox.probe(:bubblewrap, executable: "/nonexistent/bwrap")
      expect(result[:available]).to be(false)
      expect(result[:reason]).to include("Bubblewrap is not installed at /nonexistent/bwrap", "apt-get install bubblewrap")
      expect(result[:capabilities].features).to be_empty
      expect(result[:capabilities].network_modes).to be_empty
    end

    it "is unavailable off Linux" do
      result = described_class.probe(platform: "arm64-darwin23")
      expect(result).to include(available: false, reason: "Bubblewrap is supported only on Linux")
    end

    it "explains a functional failure with the namespace remedy" do
      result = described_class.probe(executable: "/bin/false")
      expect(result[:available]).to be(false)
      expect(result[:reason]).to include("Bubblewrap is installed but unavailable", "user namespaces")
    end

    it "runs the functional probe once per executable and again after the binary changes" do
      directory = temporary_directory
      counter = File.join(directory, "probes")
      wrapper = File.join(directory, "bwrap")
      File.write(wrapper, "#!/bin/sh\necho \"$1\" >> #{counter}\nexec /usr/bin/bwrap \"$@\"\n")
      File.chmod(0o755, wrapper)
      # `--version` is asked once, when the executable is resolved; the rest are functional probes.
      probes = -> { File.readlines(counter, chomp: true).tally.values_at("--version", "--unshare-user") }
      2.times { expect(described_class.probe(executable: wrapper)[:available]).to be(true) }
      expect(probes.call).to eq([1, 1])
      File.write(wrapper, File.read(wrapper) + "# replaced\n")
      File.utime(Time.now + 5, Time.now + 5, wrapper)
      expect(described_class.probe(executable: wrapper)[:available]).to be(true)
      expect(probes.call).to eq([1, 2])
    end
  end

  describe ".new" do
    it "fills in network :none and keeps the rest of the request" do
      expect(sandbox.effective_policy.network.mode).to eq(:none)
      expect(sandbox.effective_policy.files).to eq(policy[:files])
      expect(described_class.new(workspace: workspace, policy: {network: :inherit}).effective_policy.network.mode).to eq(:inherit)
    end

    it "accepts allowlist networking without touching the host until open" do
      sandbox = described_class.new(workspace: workspace, policy: {network: {mode: :allowlist, allow: ["example.com:443"]}})
      expect(sandbox.effective_policy.network.mode).to eq(:allowlist)
      expect(sandbox.gateway).to be_nil
    end

    it "validates proc, uid, gid and keywords" do
      expect { described_class.new(workspace: workspace, proc: :host) }.to raise_error(LittleGhost::PolicyError)
      expect { described_class.new(workspace: workspace, uid: -1) }.to raise_error(LittleGhost::PolicyError)
      expect { described_class.new(workspace: workspace, gid: "0") }.to raise_error(LittleGhost::PolicyError)
      expect { described_class.new(workspace: workspace, mounts: []) }.to raise_error(ArgumentError, /mounts/)
      expect { described_class.new(workspace: workspace, tmpfs: ["relative"]) }.to raise_error(LittleGhost::PolicyError)
    end

    it "touches nothing on the host" do
      expect { described_class.new(workspace: workspace, bubblewrap: "/nonexistent/bwrap") }.not_to raise_error
    end
  end

  describe "#capabilities and #writable?" do
    it "does not depend on the policy" do
      read_only = described_class.new(workspace: workspace, policy: {files: {root: :read_only}})
      expect(read_only.capabilities.features).to eq(sandbox.capabilities.features)
    end

    it "is writable only through a writable tool-visible grant" do
      expect(sandbox.writable?).to be(true)
      expect(described_class.new(workspace: workspace, policy: {files: {root: :read_only}}).writable?).to be(false)
      runtime_only = described_class.new(workspace: workspace, policy: {files: {root: :read_only}, runtime_paths: {cache: :read_write}})
      expect(runtime_only.writable?).to be(false)
    end
  end

  describe "#open" do
    it "returns self, is idempotent, and close returns nil" do
      expect(sandbox.open).to be(sandbox)
      expect(sandbox.open(run: nil)).to be(sandbox)
      expect(sandbox.close).to be_nil
      expect(sandbox.close).to be_nil
    end

    it "refuses other platforms and a missing bwrap" do
      expect { described_class.new(workspace: workspace, platform: "x86_64-darwin").open }
        .to raise_error(LittleGhost::UnsupportedPlatformError, /supported only on Linux/)
      expect { described_class.new(workspace: workspace, bubblewrap: "/nonexistent/bwrap").open }
        .to raise_error(LittleGhost::DependencyError, /apt-get install bubblewrap/)
    end

    it "requires every grant source to be an existing directory" do
      FileUtils.rm_rf(File.join(root, "cache"))
      File.write(File.join(root, "cache"), "not a directory")
      expect { sandbox.open }.to raise_error(LittleGhost::PolicyError, /sandbox mount source is not a directory/)
      FileUtils.rm_f(File.join(root, "cache"))
      expect { sandbox.open }.to raise_error(LittleGhost::PolicyError, /sandbox mount source is unavailable/)
    end

    it "refuses to launch after a grant directory was swapped" do
      sandbox.open
      FileUtils.mv(File.join(root, "src"), File.join(root, "src.old"))
      FileUtils.mkdir(File.join(root, "src"))
      expect { sandbox.execute_program(["/bin/true"], timeout: 5) }
        .to raise_error(LittleGhost::PolicyError, /sandbox mount source changed after opening/)
    end
  end

  describe "#bubblewrap_args" do
    it "emits the namespaces first and identity binds shortest target first (upstream examples)" do
      skills_workspace = open_workspace(paths: {skills: "skills"})
      skills_root = skills_workspace.root
      skills = File.join(skills_root, "skills")
      args = described_class.new(workspace: skills_workspace, policy: {files: {root: :read_write, skills: :read_only}}).bubblewrap_args
      expect(args.first(10)).to eq(%w[--unshare-user --disable-userns --unshare-pid --unshare-ipc --unshare-uts
                                      --unshare-cgroup-try --new-session --die-with-parent --cap-drop ALL])
      expect(args.each_cons(3).to_a).to include(["--bind", skills_root, skills_root], ["--ro-bind", skills, skills])
      expect(args.index("--bind")).to be < args.index(skills)
      expect(args).to include("--unshare-net", "--clearenv")
      expect(args.last(2)).not_to include("--", "/bin/true")
    end

    it "creates only the ancestors a tmpfs hid under a read-only root (upstream example)" do
      run_dir = temporary_directory
      mount = LittleGhost::Sandbox::Mount.new(source: run_dir, target: "/tmp/tenant/runs/123", access: :read_write)
      read_only = described_class.new(workspace: workspace, policy: {root_filesystem: :read_only})
      args = read_only.bubblewrap_args(mounts: [mount], cwd: "/tmp/tenant/runs/123")
      dirs = args.each_cons(2).select { |flag, _| flag == "--dir" }.map(&:last)
      expect(dirs).to eq(["/tmp/tenant", "/tmp/tenant/runs"])
      expect(args.each_cons(3).to_a).to include(["--bind", run_dir, "/tmp/tenant/runs/123"], ["--ro-bind", "/", "/"])
    end

    it "keeps the host network only for :inherit and sets the environment in merge order" do
      args = sandbox.bubblewrap_args(network: :inherit, environment: {"A" => "1", "B" => "2"}, inherit_environment: true)
      expect(args).not_to include("--unshare-net", "--clearenv")
      expect(args.each_cons(6).to_a).to include(%w[--setenv A 1 --setenv B 2])
    end

    it "masks a policy grant that a scope did not select (W12)" do
      scope = sandbox.scope(files: [:root], runtime_paths: [])
      cache = File.join(root, "cache")
      args = sandbox.bubblewrap_args(mounts: scope.process_grants)
      expect(args.each_cons(4).to_a).to include(["--tmpfs", cache, "--remount-ro", cache])
      expect(args.each_cons(3).to_a).to include(["--ro-bind", File.join(root, "src"), File.join(root, "src")])
    end

    it "refuses a working directory outside the launch" do
      expect { sandbox.bubblewrap_args(cwd: "/etc") }
        .to raise_error(LittleGhost::ToolError, %r{sandbox working directory is outside the selected scope: /etc})
    end

    it "adds uid, gid, tmpfs and proc options" do
      custom = described_class.new(workspace: workspace, policy: policy, uid: 1000, gid: 1000, tmpfs: ["/scratch"], proc: :none)
      args = custom.bubblewrap_args
      expect(args.last(4)).to eq(%w[--uid 1000 --gid 1000])
      expect(args.each_cons(2).to_a).to include(["--tmpfs", "/scratch"])
      expect(args).not_to include("/proc", "/run")
    end
  end

  describe "file operations" do
    it "go through the scope and broker" do
      expect(sandbox.write("notes.md", "hello")).to eq("Wrote 5 bytes to notes.md")
      expect(sandbox.read("notes.md")).to eq("hello")
      expect(sandbox.list).to eq("notes.md\nsrc/")
      expect { sandbox.write("src/a.rb", "x") }.to raise_error(LittleGhost::ToolError, /Sandbox scope is read-only/)
      expect { sandbox.read("cache/anything") }.to raise_error(LittleGhost::ToolError, /outside the sandbox scope/)
    end
  end

  describe "#execute_program" do
    it "runs the argv without a shell, with the workspace environment and the default PATH only" do
      result = sandbox.execute_program(["/bin/echo", "a b", "$HOME;"], timeout: 5)
      expect(result.stdout).to eq("a b $HOME;\n")
      expect(result.exit_code).to eq(0)
      expect(result).to be_success
      env = sandbox.execute_program(["/usr/bin/env"], timeout: 5).stdout.lines.map { |l| l.split("=", 2).first }.sort
      expect(env).to eq(%w[LITTLE_GHOST_WORKSPACE_CACHE LITTLE_GHOST_WORKSPACE_ROOT LITTLE_GHOST_WORKSPACE_SOURCE PATH PWD])
    end

    it "starts in the workspace root or a logical cwd" do
      expect(sandbox.execute_program(["/bin/pwd"], timeout: 5).stdout).to eq("#{root}\n")
      expect(sandbox.execute_program(["/bin/pwd"], timeout: 5, cwd: "src").stdout).to eq("#{File.join(root, 'src')}\n")
      expect(sandbox.execute_program(["/bin/pwd"], timeout: 5, cwd: "/tmp").stdout).to eq("/tmp\n") if !root.start_with?("/tmp/")
    end

    it "reports a missing program as 127 and a non-executable one as 126" do
      missing = sandbox.execute_program(["no-such-program"], timeout: 5)
      expect([missing.stdout, missing.stderr, missing.exit_code]).to eq(["", "no-such-program: command not found\n", 127])
      File.write(File.join(root, "script.sh"), "#!/bin/sh\necho hi\n")
      File.chmod(0o644, File.join(root, "script.sh"))
      denied = sandbox.execute_program([File.join(root, "script.sh")], timeout: 5)
      expect(denied.exit_code).to eq(126)
      expect(denied.stderr).to eq("#{File.join(root, 'script.sh')}: permission denied\n")
    end

    it "refuses an empty argv and a bad timeout before spawning" do
      expect { sandbox.execute_program([], timeout: 5) }.to raise_error(LittleGhost::ToolError, /Command must contain an executable/)
      expect { sandbox.execute_program([""], timeout: 5) }.to raise_error(LittleGhost::ToolError, /Command must contain an executable/)
      expect { sandbox.execute_program(["/bin/true"], timeout: 0) }.to raise_error(ArgumentError, /timeout must be positive/)
    end

    it "times out and truncates output per stream" do
      expect { sandbox.execute_program(["/bin/sleep", "5"], timeout: 0.2) }.to raise_error(LittleGhost::ToolError, /timed out/)
      result = sandbox.execute_program(["/bin/sh", "-c", "printf aaaaaaaaaa; printf problem >&2"], timeout: 5, max_output_bytes: 5)
      expect([result.stdout, result.stderr]).to eq(["aaaaa\n[output truncated]", "probl\n[output truncated]"])
    end

    it "runs shell syntax only through execute" do
      expect(sandbox.execute("echo $((1 + 2))", timeout: 5).stdout).to eq("3\n")
    end

    it "applies the command wrapper" do
      wrapped = described_class.new(workspace: workspace, policy: policy, command_wrapper: ["/usr/bin/env", "WRAPPED=1"])
      expect(wrapped.execute_program(["/usr/bin/printenv", "WRAPPED"], timeout: 5).stdout).to eq("1\n")
      seen = nil
      callable = ->(argv:, workspace:, scope:) { seen = [argv, workspace, scope]; ["/bin/echo", "wrapped", *argv] }
      with_callable = described_class.new(workspace: workspace, policy: policy, command_wrapper: callable)
      expect(with_callable.execute_program(["x"], timeout: 5).stdout).to eq("wrapped x\n")
      expect(seen).to eq([["x"], workspace, nil])
    end
  end

  describe "#start_program" do
    it "returns an owned session that can be read, written and waited on" do
      session = sandbox.start_program(["/bin/cat"])
      session.write("ping\n")
      session.close_write
      expect(session.wait(timeout: 5).exitstatus).to eq(0)
      expect(session.read(timeout: 1).stdout).to eq("ping\n")
    ensure
      session&.close
    end

    it "denies subprocesses under allow_subprocesses: false while threads still work" do
      session = sandbox.start_program(
        ["/usr/bin/ruby", "--disable-gems", "-e",
         "print Thread.new { 6 * 7 }.value; begin; fork { exit! }; rescue SystemCallError => e; print ' ', e.class; end"],
        allow_subprocesses: false
      )
      expect(session.wait(timeout: 10).exitstatus).to eq(0)
      expect(session.read(timeout: 1).stdout).to eq("42 Errno::EPERM")
    ensure
      session&.close
    end

    it "refuses subprocesses a scope does not allow" do
      scope = sandbox.scope(capabilities: %i[process_execute filesystem_read])
      expect { sandbox.start_program(["/bin/true"], scope: scope, allow_subprocesses: true) }
        .to raise_error(LittleGhost::CapabilityError, /does not allow subprocess creation/)
    end

    it "checks the context once before spawning" do
      context = Object.new
      def context.check! = raise(LittleGhost::CancelledError, "The run was cancelled")
      marker = File.join(root, "started")
      earlier = ProcessHelpers.live_children
      expect { sandbox.start_program(["/usr/bin/touch", marker], context: context) }
        .to raise_error(LittleGhost::CancelledError)
      # A child, had one been spawned, would still be running or would have made the marker.
      expect(ProcessHelpers.live_children - earlier).to be_empty
      expect(File.exist?(marker)).to be(false)
    end
  end
end
