# frozen_string_literal: true

require "spec_helper"
require "pathname"

# H.6, §5, §17, §18: every backend converts argv, environment and paths the
# same way, and every bad input gets its documented exception.
RSpec.describe "input validation on every backend" do
  let(:root) { temporary_directory }
  let(:workspace) { open_workspace(root: root) }

  def bubblewrap_available?
    LittleGhost::Sandboxes::Bubblewrap.probe[:available]
  end

  def backends
    list = {unrestricted: LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}})}
    if bubblewrap_available?
      list[:bubblewrap] = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write}})
    end
    list
  end

  def each_backend
    backends.each do |name, sandbox|
      yield name, sandbox
    ensure
      sandbox.close
    end
  end

  describe "argv and environment" do
    it "runs a binary String argument holding valid UTF-8 on every backend" do
      each_backend do |name, sandbox|
        result = sandbox.execute_program(["/bin/echo", "h\u00e9".b], timeout: 10)
        expect([name, result.stdout]).to eq([name, "h\u00e9\n"])
      end
    end

    it "passes binary environment names and values holding valid UTF-8 on every backend" do
      each_backend do |name, sandbox|
        result = sandbox.execute_program(["/usr/bin/env"], timeout: 10, environment: {"V\u00e9".b => "h\u00e9".b})
        expect([name, result.stdout.include?("V\u00e9=h\u00e9")]).to eq([name, true])
      end
    end

    it "refuses argv bytes that are not UTF-8 with ArgumentError, never EncodingError, on every backend" do
      each_backend do |_name, sandbox|
        expect { sandbox.execute_program(["/bin/echo", "h\xE9".b], timeout: 10) }
          .to raise_error(ArgumentError, /command arguments must be valid UTF-8/)
        expect { sandbox.execute_program(["/bin/true"], timeout: 10, environment: {"X" => "\xFF".b}) }
          .to raise_error(ArgumentError, /environment values must be valid UTF-8/)
        expect { sandbox.start_program(["/bin/echo", "\xFF".b]) }
          .to raise_error(ArgumentError, /must be valid UTF-8/)
      end
    end

    it "runs a String in another encoding as the characters it holds" do
      each_backend do |name, sandbox|
        latin1 = "h\u00e9".encode("ISO-8859-1")
        expect([name, sandbox.execute_program(["/bin/echo", latin1], timeout: 10).stdout]).to eq([name, "h\u00e9\n"])
      end
    end

    it "refuses NUL bytes in argv and environment with ArgumentError on every backend" do
      each_backend do |_name, sandbox|
        expect { sandbox.execute_program(["/bin/echo", "a\0b"], timeout: 10) }
          .to raise_error(ArgumentError, /must not contain NUL/)
        expect { sandbox.execute_program(["/bin/true"], timeout: 10, environment: {"X" => "a\0b"}) }
          .to raise_error(ArgumentError, /environment variable X must not contain NUL bytes/)
      end
    end

    it "refuses a String command line with whitespace instead of running a program named after it" do
      each_backend do |_name, sandbox|
        expect { sandbox.execute_program("echo hi", timeout: 10) }
          .to raise_error(ArgumentError, /pass an argv Array, or use execute for shell syntax/)
        expect { sandbox.start_program("echo hi") }
          .to raise_error(ArgumentError, /pass an argv Array, or use execute for shell syntax/)
        expect(sandbox.execute("echo hi", timeout: 10).stdout).to eq("hi\n")
        expect(sandbox.execute_program("/bin/true", timeout: 10).exit_code).to eq(0)
      end
      expect { LittleGhost::Sandbox::ProcessRunner.run(command: "echo hi", timeout: 5) }
        .to raise_error(ArgumentError, /pass an argv Array/)
      expect { LittleGhost::Sandbox::ProcessSession.new(command: "echo hi") }
        .to raise_error(ArgumentError, /pass an argv Array/)
    end

    it "keeps NaN and infinite execute_program timeouts an ArgumentError" do
      each_backend do |_name, sandbox|
        [Float::NAN, Float::INFINITY, -1, 0, "soon"].each do |timeout|
          expect { sandbox.execute_program(["/bin/true"], timeout: timeout) }
            .to raise_error(ArgumentError, /timeout must be positive/)
        end
      end
    end
  end

  describe "paths" do
    it "raises TypeError for a path that is not a String instead of creating a file named after it" do
      each_backend do |_name, sandbox|
        [["a"], :a, 1, nil, {a: 1}].each do |path|
          expect { sandbox.write(path, "x") }.to raise_error(TypeError, /path must be a String/)
          expect { sandbox.read(path) }.to raise_error(TypeError, /path must be a String/)
          expect { sandbox.list(path) }.to raise_error(TypeError, /path must be a String/)
          expect { sandbox.replace(path, "x", "y") }.to raise_error(TypeError, /path must be a String/)
          expect { sandbox.scope.write(path, "x") }.to raise_error(TypeError, /path must be a String/)
        end
        expect { sandbox.allows?(:filesystem_read, ["a"]) }.to raise_error(TypeError, /path must be a String/)
        expect { sandbox.scope.allows?(:filesystem_read, :a) }.to raise_error(TypeError, /path must be a String/)
      end
      expect(Dir.children(root)).to be_empty
    end

    it "accepts a Pathname (anything answering to_path) as a path" do
      each_backend do |name, sandbox|
        sandbox.write(Pathname("#{name}.txt"), "x")
        expect(sandbox.read(Pathname("#{name}.txt"))).to include("x")
        expect(sandbox.allows?(:filesystem_read, Pathname("#{name}.txt"))).to be(true)
      end
    end

    it "raises TypeError for a cwd that is not a String" do
      each_backend do |_name, sandbox|
        expect { sandbox.execute_program(["/bin/pwd"], timeout: 10, cwd: ["a"]) }
          .to raise_error(TypeError, /cwd must be a String/)
        expect { sandbox.start_program(["/bin/pwd"], cwd: :a) }.to raise_error(TypeError, /cwd must be a String/)
      end
    end

    it "gives the same ToolError for a missing cwd on every backend" do
      each_backend do |_name, sandbox|
        # Named as the caller wrote it, never as a host path.
        expect { sandbox.execute_program(["/bin/pwd"], timeout: 10, cwd: "missing") }
          .to raise_error(LittleGhost::ToolError, "Working directory is not available: missing")
        expect { sandbox.start_program(["/bin/pwd"], cwd: "missing") }
          .to raise_error(LittleGhost::ToolError, "Working directory is not available: missing")
        expect { sandbox.execute_program(["/bin/pwd"], timeout: 10, cwd: "../x") }
          .to raise_error(LittleGhost::ToolError, "workspace path traversal is not allowed: ../x")
      end
    end

    it "runs in a binary cwd holding valid UTF-8 on every backend" do
      Dir.mkdir(File.join(root, "d\u00e9"))
      each_backend do |name, sandbox|
        result = sandbox.execute_program(["/bin/pwd"], timeout: 10, cwd: "d\u00e9".b)
        expect([name, result.stdout]).to eq([name, "#{File.join(root, "d\u00e9")}\n"])
      end
    end
  end

  describe "ProcessSession#read timeout" do
    it "raises ArgumentError for an infinite, NaN or negative timeout instead of blocking forever" do
      each_backend do |_name, sandbox|
        session = sandbox.start_program(["/bin/sleep", "5"])
        [Float::INFINITY, Float::NAN, -1, -0.5].each do |timeout|
          expect { session.read(timeout: timeout) }
            .to raise_error(ArgumentError, /timeout must be a finite number of seconds, 0 or more/)
        end
        expect(session.read(timeout: 0)).to be_a(LittleGhost::Sandbox::ProcessSession::Chunk)
        expect(session.read(timeout: nil)).to be_a(LittleGhost::Sandbox::ProcessSession::Chunk)
      ensure
        session&.close
      end
    end
  end

  describe "allow_subprocesses: nil" do
    it "means the backend default on every backend" do
      each_backend do |name, sandbox|
        session = sandbox.start_program(["/bin/sh", "-c", "/bin/true && echo forked"], allow_subprocesses: nil)
        status = session.wait(timeout: 10)
        expect([name, session.read(timeout: 2).stdout, status.exitstatus]).to eq([name, "forked\n", 0])
      ensure
        session&.close
      end
    end
  end

  describe "Limits.new" do
    it "rejects values beyond the platform's integer range at construction" do
      [2**63, 2**64, 2**70].each do |value|
        expect { LittleGhost::Sandbox::Limits.new(read_bytes: value) }
          .to raise_error(LittleGhost::PolicyError, /sandbox read_bytes must be at most 9223372036854775807/)
        expect { LittleGhost::Sandbox::Limits.coerce(output_bytes: value) }
          .to raise_error(LittleGhost::PolicyError, /sandbox output_bytes must be at most/)
      end
      expect(LittleGhost::Sandbox::Limits.new(read_bytes: 2**63 - 1).read_bytes).to eq(2**63 - 1)
    end

    it "keeps negative, zero and non-numeric values a PolicyError" do
      [-1, 0, -2**70].each do |value|
        expect { LittleGhost::Sandbox::Limits.new(list_entries: value) }
          .to raise_error(LittleGhost::PolicyError, /must be positive/)
      end
      [nil, :a, "x", [1]].each do |value|
        expect { LittleGhost::Sandbox::Limits.new(write_bytes: value) }
          .to raise_error(LittleGhost::PolicyError, /must be an integer/)
      end
    end
  end

  describe "command_wrapper:" do
    it "is refused at new when it is neither callable nor an Array" do
      [5, "nice", {a: 1}, :nice].each do |wrapper|
        expect { LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, command_wrapper: wrapper) }
          .to raise_error(LittleGhost::PolicyError, /command_wrapper must be callable or an argv Array/)
      end
      expect { LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, command_wrapper: ["/usr/bin/nice"]) }
        .not_to raise_error
      expect { LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, command_wrapper: ->(argv:, **) { argv }) }
        .not_to raise_error
    end
  end
end
