# frozen_string_literal: true

require "spec_helper"

# Wrong types, NUL bytes and invalid text raise the documented TypeError or
# ArgumentError (never NoMethodError or EncodingError), before anything touches
# the disk or spawns a process.
RSpec.describe "bad arguments" do # rubocop:disable RSpec/DescribeClass
  describe "to workspaces, sandboxes and value objects" do
    let(:root) { Dir.mktmpdir("lg-bad-args") }
    let(:workspace) { LittleGhost::Workspace.new(root: root, paths: {source: "source"}).open }
    let(:sandbox) do
      LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write, source: :read_only}},
                                               limits: {write_bytes: 16})
    end

    after { FileUtils.rm_rf(root) }

    it "rejects names without to_sym with TypeError" do
      [nil, 1, Object.new, {a: 1}].each do |bad|
        expect { workspace.path(bad) }.to raise_error(TypeError, /workspace path name must be a Symbol or String/)
        expect { LittleGhost::Workspace.resolve_provider(bad) }.to raise_error(TypeError, /provider name/)
        expect { LittleGhost::Sandbox.resolve_provider(bad) }.to raise_error(TypeError, /provider name/)
        expect { LittleGhost::Sandbox.probe(bad) }.to raise_error(TypeError, /provider name/)
        expect { sandbox.scope(bad) }.to raise_error(TypeError, /profile name/)
        expect { sandbox.scope(files: [bad]) }.to raise_error(TypeError, /grant name/)
      end
    end

    it "rejects names that are not valid text with ArgumentError" do
      bad = "\xFF\xFE".dup.force_encoding(Encoding::UTF_8)
      expect { workspace.path(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::Capabilities.new.supports?(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::Policy.new(files: {bad => :read_only}) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Sandbox::NetworkPolicy.coerce(bad) }.to raise_error(ArgumentError, /not valid text/)
      expect { LittleGhost::Workspace.build({provider: :directory, bad => 1}) }.to raise_error(ArgumentError, /not valid text/)
    end

    it "rejects collaborators of the wrong kind with TypeError" do
      expect { LittleGhost::Sandboxes::Unrestricted.new(workspace: nil) }.to raise_error(TypeError, /sandbox workspace must respond to root/)
      expect { LittleGhost::Sandbox.new(workspace: "/tmp") }.to raise_error(TypeError, /sandbox workspace must respond to root/)
      expect { LittleGhost::Sandbox::Capabilities.new.intersect(nil) }.to raise_error(TypeError, /must respond to features/)
      expect { LittleGhost::Sandbox::Policy.new.process_grants(Object.new) }.to raise_error(TypeError, /workspace must respond to root/)
    end

    it "rejects NUL bytes in workspace configuration before touching the disk" do
      expect { LittleGhost::Workspace.new(root: File.join(root, "a\0b")) }.to raise_error(ArgumentError, /null byte/)
      expect { LittleGhost::Workspace.new(root: root, paths: {x: "a\0b"}).open }.to raise_error(ArgumentError, /null byte/)
      expect { workspace.resolve("a\0b") }.to raise_error(ArgumentError, /null byte/)
      expect(Dir.children(root)).to eq(%w[source])
    end
  end

  describe "to ProcessRunner and ProcessSession, which then spawn nothing" do
    let(:runner) { LittleGhost::Sandbox::ProcessRunner }
    let(:dir) { Dir.mktmpdir("lg-bad-args") }
    let(:marker) { File.join(dir, "spawned") }
    let(:sessions) { [] }

    after do
      sessions.each(&:close)
      FileUtils.rm_rf(dir)
    end

    def start(command, **options)
      LittleGhost::Sandbox::ProcessSession.new(command: command, **options).tap { |session| sessions << session }
    end

    it "refuses NUL bytes in argv and environment with ArgumentError" do
      expect { runner.run(command: ["/usr/bin/touch", marker, "a\0b"], timeout: 2) }
        .to raise_error(ArgumentError, /NUL/)
      expect { start(["/usr/bin/touch", marker, "a\0b"]) }.to raise_error(ArgumentError, /NUL/)
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, environment: {"A" => "\0"}) }
        .to raise_error(ArgumentError)
      expect(File.exist?(marker)).to be(false)
    end

    it "accepts binary Strings holding UTF-8 and refuses other bytes with ArgumentError, not EncodingError" do
      expect(runner.run(command: ["/bin/echo", "caf\xC3\xA9".b], timeout: 2).stdout).to eq("café\n")
      expect(runner.run(command: ["/usr/bin/env"], environment: {"A" => "\xC3\xA9".b}, timeout: 2).stdout)
        .to eq("A=é\n")
      expect { runner.run(command: ["/usr/bin/touch", marker, "\xFF".b], timeout: 2) }
        .to raise_error(ArgumentError, "command arguments must be valid UTF-8")
      expect { runner.run(command: ["/usr/bin/touch", marker], environment: {"A" => "\xFF"}, timeout: 2) }
        .to raise_error(ArgumentError, "environment values must be valid UTF-8")
      expect { start(["/usr/bin/touch", marker, "\xFF"]) }
        .to raise_error(ArgumentError, "command arguments must be valid UTF-8")
      expect(File.exist?(marker)).to be(false)
    end

    it "raises TypeError for a non-Hash environment or a Hash chdir" do
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, environment: "A=1") }
        .to raise_error(TypeError)
      expect { runner.run(command: ["/usr/bin/touch", marker], timeout: 2, chdir: {}) }.to raise_error(TypeError)
      expect { start(["/usr/bin/touch", marker], chdir: {}) }.to raise_error(TypeError)
      expect(File.exist?(marker)).to be(false)
    end

    it "rejects NaN, infinite and negative timeouts for run and ProcessSession#wait" do
      session = start(["/bin/sleep", "5"])
      [Float::NAN, Float::INFINITY, -Float::INFINITY, -1, nil].each do |timeout|
        expect { runner.run(command: ["/usr/bin/touch", marker], timeout: timeout) }
          .to raise_error(ArgumentError, "timeout must be positive")
        next if timeout.nil? # nil means "no timeout" for wait (18.6)

        expect { session.wait(timeout: timeout) }.to raise_error(ArgumentError, "timeout must be positive")
      end
      expect(session.alive?).to be(true)
      expect(File.exist?(marker)).to be(false)
    end

    it "rejects bad rlimits and memory limits with ArgumentError" do
      [Float::NAN, -1, 0, "x"].each do |value|
        expect { start(["/usr/bin/touch", marker], cpu_seconds: value) }.to raise_error(ArgumentError, /cpu_seconds/)
        expect { start(["/usr/bin/touch", marker], file_bytes: value) }.to raise_error(ArgumentError, /file_bytes/)
        expect { start(["/usr/bin/touch", marker], memory_bytes: value) }.to raise_error(ArgumentError, /memory_bytes/)
      end
      expect(File.exist?(marker)).to be(false)
    end

    it "copes with a max_output_bytes beyond 64 bits" do
      expect(runner.run(command: ["/bin/echo", "x"], timeout: 2, max_output_bytes: 2**70).stdout).to eq("x\n")
    end
  end
end
