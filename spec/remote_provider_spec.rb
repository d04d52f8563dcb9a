# frozen_string_literal: true

require "spec_helper"
require "net/http"
require "socket"

# The :remote provider: the gem's Sandbox API over littleghost-sandboxd's wire protocol (docs/design.md "The remote
# provider"). The daemon runs on ephemeral loopback ports over a temporary root.
RSpec.describe "LittleGhost::Sandbox :remote" do
  include RemoteDaemonHelpers

  after { stop_remote_daemons }

  describe "building" do
    it "needs no local workspace and sends nothing until used" do
      sandbox = LittleGhost::Sandbox.build({provider: :remote, endpoint: {grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1"}})
      expect(sandbox).to be_a(LittleGhost::Sandboxes::Remote)
      expect(sandbox.workspace.root).to eq("remote:http://127.0.0.1:1")
    end

    it "refuses a malformed endpoint or token with ArgumentError or TypeError" do
      build = ->(endpoint, token = nil) { LittleGhost::Sandbox.build({provider: :remote, endpoint: endpoint, token: token}) }
      expect { build.call({grpc: "nowhere", rest: "http://127.0.0.1:1"}) }.to raise_error(ArgumentError, /grpc: must be HOST:PORT/)
      expect { build.call({grpc: "127.0.0.1:1", rest: "https://127.0.0.1:1"}) }.to raise_error(ArgumentError, /rest: must be http/)
      expect { build.call({grpc: "127.0.0.1:1"}) }.to raise_error(ArgumentError, /needs rest:/)
      expect { build.call({grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1", port: 1}) }.to raise_error(ArgumentError, /unknown remote endpoint keys: :port/)
      expect { build.call({grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1"}, "two words") }.to raise_error(ArgumentError, /token/)
      expect { build.call({grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1"}, 42) }.to raise_error(TypeError, /token/)
    end

    it "refuses a local policy it could not enforce" do
      expect do
        LittleGhost::Sandbox.build({provider: :remote, endpoint: {grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1"},
                                    files: {root: :read_write}, network: :none})
      end.to raise_error(LittleGhost::CapabilityError, /--policy/)
    end

    it "raises DependencyError when the daemon cannot be reached" do
      port = TCPServer.open("127.0.0.1", 0) { |server| server.addr[1] } # bound, then closed: nothing listens
      sandbox = LittleGhost::Sandbox.build({provider: :remote, endpoint: {grpc: "127.0.0.1:#{port}", rest: "http://127.0.0.1:#{port}"}})
      expect { sandbox.read("a.txt") }.to raise_error(LittleGhost::DependencyError, /unreachable/)
      expect { sandbox.open }.to raise_error(LittleGhost::DependencyError, /unreachable/)
    end

    it "refuses per-call launch limits the protocol cannot carry (CapabilityError, not dropped)" do
      sandbox = LittleGhost::Sandbox.build({provider: :remote, endpoint: {grpc: "127.0.0.1:1", rest: "http://127.0.0.1:1"}})
      expect { sandbox.execute_program(["true"], timeout: 1, memory_bytes: 1 << 20) }
        .to raise_error(LittleGhost::CapabilityError, /memory_bytes/)
      expect { sandbox.start_program(["true"], inherit_environment: true) }
        .to raise_error(LittleGhost::CapabilityError, /environment/)
    end
  end

  context "with littleghost-sandboxd", skip: RemoteDaemonHelpers.missing do
    let(:daemon) { start_daemon(policy: {files: {root: "read_write"}, network: "none", process_limits: {cpu_seconds: 1}}) }
    let(:sandbox) { remote_sandbox(daemon) }

    after { sandbox.close }

    it "reads, lists, writes and replaces with the broker's results" do
      expect(sandbox.write("notes.md", "alpha beta")).to eq("Wrote 10 bytes to notes.md")
      expect(sandbox.replace("notes.md", "beta", "gamma")).to eq("Wrote 11 bytes to notes.md")
      expect(sandbox.read("notes.md")).to eq("alpha gamma")
      Dir.mkdir(File.join(daemon.root, "src"))
      expect(sandbox.list).to eq("notes.md\nsrc/")
      expect(File.read(File.join(daemon.root, "notes.md"))).to eq("alpha gamma")
      expect { sandbox.read("missing.txt") }.to raise_error(LittleGhost::ToolError, /does not exist/)
      expect { sandbox.replace("notes.md", "zeta", "x") }.to raise_error(LittleGhost::ToolError, /not found in notes.md/)
    end

    it "refuses traversal and streams the denial back" do
      seen = Queue.new
      sandbox.on_denial { |denial| seen << denial }
      expect { sandbox.read("../../etc/passwd") }.to raise_error(LittleGhost::ToolError, /traversal is not allowed/)
      expect { sandbox.read("/etc/passwd") }.to raise_error(LittleGhost::ToolError, /relative/)
      denial = eventually { sandbox.denials.find { |d| d.target == "../../etc/passwd" } }
      expect(denial).to have_attributes(kind: :filesystem, operation: :read, reason: :escapes_scope)
      expect(Timeout.timeout(20) { seen.pop }.target).to eq("../../etc/passwd")
    end

    it "never follows a planted symlink out of the root" do
      File.symlink("/etc/hostname", File.join(daemon.root, "planted"))
      expect { sandbox.read("planted") }.to raise_error(LittleGhost::ToolError, /symbolic link/)
      expect { sandbox.write("planted", "x") }.to raise_error(LittleGhost::ToolError, /symbolic link/)
      expect(File.read("/etc/hostname")).not_to eq("x")
    end

    it "narrows per call with a scope, and a scope cannot widen" do
      readonly = sandbox.scope(capabilities: %i[read list])
      sandbox.write("kept.txt", "kept")
      expect(readonly.read("kept.txt")).to eq("kept")
      expect { readonly.write("kept.txt", "changed") }.to raise_error(LittleGhost::ToolError, /does not allow filesystem write/)
      expect { readonly.scope(capabilities: %i[write]) }.to raise_error(LittleGhost::CapabilityError, /widen/)
      expect(File.read(File.join(daemon.root, "kept.txt"))).to eq("kept")
    end

    it "sends a scope's narrowing, which the daemon enforces (a read-only scope cannot write)" do
      readonly = sandbox.scope(files: {root: :read_only})
      sandbox.write("kept.txt", "kept")
      expect { readonly.write("kept.txt", "changed") }.to raise_error(LittleGhost::ToolError, /read-only/)
      expect { readonly.execute_program(["/bin/sh", "-c", "echo changed > kept.txt"], timeout: 10) }
        .not_to change { File.read(File.join(daemon.root, "kept.txt")) }
      expect(File.read(File.join(daemon.root, "kept.txt"))).to eq("kept")
    end

    it "cannot widen a read-only scope by nesting a read-write one inside it" do
      sandbox.write("kept.txt", "kept")
      nested = sandbox.scope(files: {root: :read_only}).scope(files: {root: :read_write})
      expect { nested.write("kept.txt", "changed") }.to raise_error(LittleGhost::ToolError, /read-only/)
      expect(File.read(File.join(daemon.root, "kept.txt"))).to eq("kept")
    end

    it "runs programs confined: /etc/shadow unreadable, no network" do
      shadow = sandbox.execute_program(["cat", "/etc/shadow"], timeout: 20)
      expect(shadow.exit_code).not_to eq(0)
      expect(shadow.stdout).to eq("")
      host, port = daemon.rest.split(":")
      connect = sandbox.execute_program(["ruby", "-rsocket", "-e", "TCPSocket.new(#{host.inspect}, #{port}); print :connected"],
                                        timeout: 20)
      expect(connect.stdout).not_to include("connected")
      expect(sandbox.execute("echo $((6 * 7))", timeout: 20).stdout).to eq("42\n")
    end

    it "ends a run at its timeout and bounds its output" do
      expect { sandbox.execute_program(["sleep", "30"], timeout: 0.5) }
        .to raise_error(LittleGhost::ToolError, "Command timed out after 0.5 seconds")
      bounded = sandbox.execute_program(["/bin/sh", "-c", "printf aaaaaaaaaaaaaaaaaaaa; printf problem >&2"], timeout: 20,
                                                                                                         max_output_bytes: 5)
      expect([bounded.stdout, bounded.stderr]).to eq(["aaaaa\n[output truncated]", "probl\n[output truncated]"])
    end

    it "kills a program at the policy's limit and streams the limit denial back" do
      run = sandbox.execute_program(["/bin/sh", "-c", "while :; do :; done"], timeout: 30)
      expect(run.exit_code).not_to eq(0)
      denial = eventually { sandbox.denials.find { |d| d.kind == :limit } }
      expect(denial).to have_attributes(operation: :execute, reason: :cpu_limit)
    end

    it "drives a session: stdin in, output streamed out, its status" do
      session = sandbox.start_program(["cat"])
      expect(session.write("hello\n")).to eq(6)
      session.close_write
      output = +""
      eventually do
        chunk = session.read(timeout: 0.5)
        output << chunk.stdout
        chunk.eof
      end
      expect(output).to eq("hello\n")
      expect(session.wait(timeout: 20).exitstatus).to eq(0)
    end

    it "terminates a session that outlives its wait" do
      session = sandbox.start_program(["sleep", "60"])
      expect(session.wait(timeout: 0.2)).to be_nil
      expect(session.wait(timeout: 0.2, terminate: true)).not_to be_nil
      expect(session.alive?).to be(false)
    end

    it "ends what it started when closed" do
      session = sandbox.start_program(["sleep", "60"])
      pid = session.pid
      expect(Process.kill(0, pid)).to eq(1)
      sandbox.close
      gone = eventually do
        Process.kill(0, pid)
        false
      rescue Errno::ESRCH
        true
      end
      expect(gone).to be(true)
      expect { session.write("x") }.to raise_error(IOError)
      expect(session.closed?).to be(true)
    end

    it "reports what the daemon enforces" do
      capabilities = sandbox.capabilities
      expect(capabilities.features).to include(:filesystem_read, :filesystem_write, :process_execute)
      expect(capabilities.network_modes).to eq([:none])
      expect(%i[bubblewrap landlock]).to include(capabilities.isolation)
    end

    it "does not block other Ruby threads while it waits" do
      sandbox.open
      ticks = 0
      ticker = Thread.new do
        loop do
          ticks += 1
          sleep 0.01
        end
      end
      eventually { ticks.positive? }
      before = ticks
      sandbox.execute_program(["sleep", "1"], timeout: 20)
      ticker.kill
      # Holding the GVL for the call would have let the ticker run at most once more.
      expect(ticks - before).to be > 3
    end

    it "gives up a call when the thread is interrupted" do
      waiter = Thread.new { sandbox.execute_program(["sleep", "60"], timeout: 120) }
      waiter.report_on_exception = false
      sleep 1 # the call is under way (the assertion is on what the interrupt does, not on when)
      waiter.raise(Interrupt)
      expect { waiter.join }.to raise_error(Interrupt)
    end
  end

  # The same calls through a local sandbox and through the daemon give the same results and the same errors
  # (docs/spec.md §14, RM.3), and a run with a block sees its output as it is printed (RM.4).
  context "with littleghost-sandboxd, files and programs as a local sandbox's", skip: RemoteDaemonHelpers.missing do
    let(:daemon) { start_daemon(policy: {files: {root: "read_write"}, network: "none"}) }
    let(:sandbox) { remote_sandbox(daemon) }
    let(:local_root) { Dir.mktmpdir("littleghost-local") }
    let(:local) do
      workspace = LittleGhost::Workspace.new(root: local_root).open
      LittleGhost::Sandbox.build({provider: :unrestricted, files: {root: :read_write}}, workspace: workspace)
    end

    after do
      sandbox.close
      FileUtils.rm_rf(local_root)
    end

    # What a call gives: its result, or its error's class and message.
    def outcome
      [:ok, yield]
    rescue LittleGhost::Error, ArgumentError, TypeError => e
      [e.class, e.message]
    end

    def plant(root)
      File.write(File.join(root, "notes.md"), "alpha beta beta")
      Dir.mkdir(File.join(root, "dir"))
    end

    it "replaces, and refuses a replace or write, exactly as a local sandbox does" do
      [daemon.root, local_root].each { |root| plant(root) }
      calls = [
        ->(s) { s.replace("notes.md", "alpha", "omega") },
        ->(s) { s.replace("notes.md", "beta", "x") },
        ->(s) { s.replace("notes.md", "zeta", "x") },
        ->(s) { s.replace("notes.md", "", "x") },
        ->(s) { s.replace("missing.md", "a", "b") },
        ->(s) { s.replace("dir", "a", "b") },
        ->(s) { s.replace("../notes.md", "a", "b") },
        ->(s) { s.scope(files: {root: :read_only}).replace("notes.md", "omega", "x") },
        ->(s) { s.write("new/deeper/file.md", "x") },
        ->(s) { s.write("dir", "x") },
        ->(s) { s.write("fresh.md", "fresh") },
        ->(s) { s.read("notes.md") }
      ]
      remote = calls.map { |call| outcome { call.call(sandbox) } }
      here = calls.map { |call| outcome { call.call(local) } }
      expect(remote).to eq(here)
      expect(here[7]).to match([LittleGhost::ToolError, /read-only/])
      expect(File.exist?(File.join(daemon.root, "new"))).to be(false)
      expect(File.read(File.join(daemon.root, "notes.md"))).to eq("omega beta beta")
    end

    it "hands a block the output as it is printed, and returns what a run without one returns" do
      # The program prints, then waits for a file only the block creates once it saw that first line: had the
      # output come at the end, the run would reach its timeout instead.
      script = 'echo first; while [ ! -e go ]; do sleep 0.05; done; echo second; echo done >&2'
      seen = []
      execution = sandbox.execute_program(["/bin/sh", "-c", script], timeout: 20) do |stream, chunk|
        seen << [stream, chunk]
        File.write(File.join(daemon.root, "go"), "") if chunk.include?("first")
      end
      expect(seen.first).to eq([:stdout, "first\n"])
      expect(seen.map(&:last)).to all(be_frozen)
      expect([execution.stdout, execution.stderr, execution.exit_code]).to eq(["first\nsecond\n", "done\n", 0])
      plain = sandbox.execute_program(["/bin/sh", "-c", script], timeout: 20)
      expect([plain.stdout, plain.stderr, plain.exit_code]).to eq(["first\nsecond\n", "done\n", 0])
    end

    it "keeps a streamed run's bound and timeout as a run without a block" do
      loud = ["/bin/sh", "-c", "printf aaaaaaaaaaaaaaaaaaaa; printf problem >&2; exit 3"]
      printed = Hash.new { |hash, key| hash[key] = +"" }
      streamed = sandbox.execute_program(loud, timeout: 20, max_output_bytes: 5) { |stream, chunk| printed[stream] << chunk }
      plain = sandbox.execute_program(loud, timeout: 20, max_output_bytes: 5)
      expect([streamed.stdout, streamed.stderr, streamed.exit_code]).to eq([plain.stdout, plain.stderr, plain.exit_code])
      expect(printed).to eq({stdout: "aaaaa", stderr: "probl"})
      missing = sandbox.execute_program(["no-such-program-here"], timeout: 20) { |_stream, _chunk| nil }
      plain_missing = sandbox.execute_program(["no-such-program-here"], timeout: 20)
      expect([missing.exit_code, missing.stderr]).to eq([plain_missing.exit_code, plain_missing.stderr])
      expect { sandbox.execute_program(["sleep", "30"], timeout: 0.5) { |_stream, _chunk| nil } }
        .to raise_error(LittleGhost::ToolError, "Command timed out after 0.5 seconds")
    end
  end

  context "with littleghost-sandboxd's published policy", skip: RemoteDaemonHelpers.missing do
    it "reports the capabilities the daemon publishes for a read-only policy" do
      daemon = start_daemon(policy: {files: {root: "read_only"}, process_limits: {cpu_seconds: 5}})
      sandbox = remote_sandbox(daemon)
      capabilities = sandbox.capabilities
      expect(capabilities.features).to include(:filesystem_read, :process_execute, :process_spawn)
      # The CPU limit the policy sets is enforced, whole-tree or per process; the published features say which.
      expect(capabilities.features & %i[cpu_limit process_cpu_limit]).not_to be_empty
      expect(capabilities.features).not_to include(:process_spawn_denial)
      expect(sandbox.writable?).to be(false)
      expect(sandbox.scope(network: :none).writable?).to be(false)
      expect(sandbox.allows?(:write, "notes.md")).to be(false)
      sandbox.close
    end

    it "answers allows? with the daemon's broker, through a scope too" do
      daemon = start_daemon(policy: {files: {root: "read_write"}})
      sandbox = remote_sandbox(daemon)
      File.write(File.join(daemon.root, "notes.md"), "x")
      File.symlink("/etc", File.join(daemon.root, "planted"))
      expect(sandbox.writable?).to be(true)
      expect(sandbox.allows?(:write, "notes.md")).to be(true)
      expect(sandbox.allows?(:write, "new/file.md")).to be(false) # a missing parent (14.12)
      expect(sandbox.allows?(:write, "fresh.md")).to be(true)
      expect(sandbox.allows?(:read, "fresh.md")).to be(false)
      expect(sandbox.allows?(:read, "../etc/passwd")).to be(false)
      expect(sandbox.allows?(:read, "/etc/passwd")).to be(false)
      expect(sandbox.allows?(:read, "planted/passwd")).to be(false)
      expect { sandbox.allows?(:read, 42) }.to raise_error(TypeError)
      read_only = sandbox.scope(files: {root: :read_only})
      expect(read_only.allows?(:read, "notes.md")).to be(true)
      expect(read_only.allows?(:write, "notes.md")).to be(false)
      expect(read_only.writable?).to be(false)
      expect(read_only.scope(files: {root: :read_write}).allows?(:write, "notes.md")).to be(false)
      expect(sandbox.scope(capabilities: [:read]).allows?(:list, "notes.md")).to be(false)
      sandbox.close
    end

    it "answers health without the token only when told to, and nothing else" do
      strict = start_daemon(token: "s3cret-token")
      expect(Net::HTTP.get_response(URI("http://#{strict.rest}/v1/health")).code).to eq("401")
      daemon = start_daemon(token: "s3cret-token", health_without_token: true)
      health = Net::HTTP.get_response(URI("http://#{daemon.rest}/v1/health"))
      expect([health.code, JSON.parse(health.body)]).to eq(["200", {"status" => "ok"}])
      expect(Net::HTTP.get_response(URI("http://#{daemon.rest}/v1/metadata")).code).to eq("401")
      expect { remote_sandbox(daemon).capabilities }.to raise_error(LittleGhost::DependencyError, /token/)
    end
  end

  context "with littleghost-sandboxd and a token", skip: RemoteDaemonHelpers.missing do
    let(:daemon) { start_daemon(token: "s3cret-token") }

    it "requires the token: none or a wrong one raises DependencyError, the right one works" do
      expect { remote_sandbox(daemon).read("a.txt") }.to raise_error(LittleGhost::DependencyError, /token/)
      expect { remote_sandbox(daemon, token: "wrong").execute_program(["true"], timeout: 5) }
        .to raise_error(LittleGhost::DependencyError, /token/)
      sandbox = remote_sandbox(daemon, token: "s3cret-token")
      expect(sandbox.write("a.txt", "ok")).to eq("Wrote 2 bytes to a.txt")
      expect(sandbox.execute_program(["cat", "a.txt"], timeout: 20).stdout).to eq("ok")
      sandbox.close
    end
  end
end
