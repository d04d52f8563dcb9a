# frozen_string_literal: true

require "spec_helper"

# What a launched child gets from the Ruby process: its standard streams and
# nothing else, whichever way it is launched. An executable without a #! line
# is refused, never handed to /bin/sh.
RSpec.describe "launching a child" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:root) { workspace.root }

  # A host directory outside /tmp and /run holding a secret file.
  let(:outside) do
    directory = File.realpath(Dir.mktmpdir("lg-child-launch", "/var/tmp"))
    (@temporary_directories ||= []) << directory
    File.write(File.join(directory, "secret.txt"), "host secret")
    directory
  end

  # A host directory handle that a child would inherit if the runner leaked it.
  def inheritable_handle(path)
    handle = File.open(path)
    handle.close_on_exec = false
    (@handles ||= []) << handle
    handle
  end

  after { Array(@handles).each(&:close) }

  # Descriptors the child's `ls` sees, minus the one `ls` opens to read the directory.
  def child_descriptors(stdout)
    stdout.split.map(&:to_i).sort
  end

  describe "descriptor inheritance" do
    it "does not hand a Bubblewrap child a host directory handle that escapes the mount namespace" do
      probe = LittleGhost::Sandboxes::Bubblewrap.probe
      skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]

      handle = inheritable_handle(outside)
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write}})
      result = sandbox.execute_program(
        ["/bin/sh", "-c", "cat /proc/self/fd/#{handle.fileno}/secret.txt; ls /proc/self/fd"], timeout: 10
      )
      expect(result.stdout).not_to include("host secret")
      expect(child_descriptors(result.stdout)).to eq([0, 1, 2, 3])
    end

    it "does not hand a Bubblewrap child without subprocesses more than its standard streams" do
      probe = LittleGhost::Sandboxes::Bubblewrap.probe
      skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]

      handle = inheritable_handle(outside)
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write}})
      session = sandbox.start_program(["/bin/ls", "/proc/self/fd"], allow_subprocesses: false)
      chunk = session.read(timeout: 10)
      expect(session.wait(timeout: 10).exitstatus).to eq(0)
      expect(child_descriptors(chunk.stdout)).to eq([0, 1, 2, 3])
      expect(child_descriptors(chunk.stdout)).not_to include(handle.fileno)
    ensure
      session&.close
    end

    it "does not hand an Unrestricted child the Ruby process's open files" do
      handle = inheritable_handle(outside)
      sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace)
      result = sandbox.execute_program(["/bin/ls", "/proc/self/fd"], timeout: 10)
      expect(child_descriptors(result.stdout)).to eq([0, 1, 2, 3])
      expect(child_descriptors(result.stdout)).not_to include(handle.fileno)
    end

    it "does not hand a ProcessRunner child the Ruby process's open files" do
      inheritable_handle(outside)
      result = LittleGhost::Sandbox::ProcessRunner.run(command: ["/bin/ls", "/proc/self/fd"], timeout: 10)
      expect(child_descriptors(result.stdout)).to eq([0, 1, 2, 3])
    end
  end

  describe "no shell fallback" do
    it "never hands an executable without a #! line to /bin/sh" do
      directory = temporary_directory
      script = File.join(directory, "not-a-program")
      marker = File.join(directory, "shell-ran")
      File.write(script, "touch #{marker}\n")
      File.chmod(0o755, script)
      result = LittleGhost::Sandbox::ProcessRunner.run(command: [script], timeout: 10)
      expect(result.exit_code).to eq(126)
      expect(result.stderr).to eq("#{script}: permission denied\n")
      expect(File.exist?(marker)).to be(false)
    end

    it "never hands it to /bin/sh when resource limits make the runner fork" do
      directory = temporary_directory
      script = File.join(directory, "not-a-program")
      marker = File.join(directory, "shell-ran")
      File.write(script, "touch #{marker}\n")
      File.chmod(0o755, script)
      earlier = live_children
      expect do
        LittleGhost::Sandbox::ProcessSession.new(command: [script], cpu_seconds: 5).close
      end.to raise_error(Errno::EACCES)
      # A shell, had one started, would still be running as our child or would have touched the marker.
      expect(live_children - earlier).to be_empty
      expect(File.exist?(marker)).to be(false)
    end
  end
end
