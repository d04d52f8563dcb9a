# frozen_string_literal: true

require "spec_helper"
require "pty"
require "io/console"
require "io/wait"
require "rbconfig"

# `littleghost-sandbox run --pty` gives the command a terminal, as
# `docker run -t` and `ssh -t` do. The CLI runs on a real terminal here
# (PTY.spawn): the command's stdin, stdout and stderr must be a terminal,
# `tty` must name one, what we type must reach it, and its exit status must
# pass through. A backend that has no private terminal device to give must
# refuse (125) rather than hand the command a terminal of the host.
RSpec.describe "littleghost-sandbox run --pty" do
  PTY_CLI_EXE = File.expand_path("../exe/littleghost-sandbox", __dir__)
  PTY_CLI_LIB = File.expand_path("../lib", __dir__)

  PTY_PROBE_SCRIPT = 'tty; for fd in 0 1 2; do test -t $fd && echo "fd$fd-is-a-terminal"; done; ' \
          'stty size; echo ready; read line; echo "got:$line"; exit 3'

  # Runs the CLI on a fresh terminal 30 rows by 100 columns, types +input+
  # once +wait_for+ appears, and returns [everything it printed, exit status].
  def on_terminal(*args, wait_for: "ready", input: "hello\n")
    output = +""
    status = nil
    PTY.spawn(RbConfig.ruby, "-I", PTY_CLI_LIB, PTY_CLI_EXE, "run", *args) do |reader, writer, pid|
      reader.winsize = [30, 100]
      deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + 60
      typed = false
      loop do
        break if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline
        next unless reader.wait_readable(0.1)

        output << reader.readpartial(4096)
        if !typed && output.include?(wait_for)
          writer.write(input)
          typed = true
        end
      rescue EOFError, Errno::EIO
        break
      end
      _, status = Process.wait2(pid)
    end
    [output.delete("\r"), status]
  end

  def available?(provider)
    LittleGhost::Sandbox.probe(provider)[:available]
  end

  before { skip "script(1) is not installed" unless File.executable?("/usr/bin/script") }

  %i[bubblewrap unrestricted].each do |provider|
    it "gives the command a terminal of its own on #{provider}, relays what we type and passes its status" do
      skip "#{provider} is unavailable here" unless available?(provider)
      output, status = Dir.mktmpdir do |dir|
        on_terminal("--pty", "--provider", provider.to_s, "--root", dir, "--", "sh", "-c", PTY_PROBE_SCRIPT)
      end
      expect(output).to match(%r{^/dev/pts/\d+$})
      expect(output).to include("fd0-is-a-terminal", "fd1-is-a-terminal", "fd2-is-a-terminal")
      expect(output).to include("30 100")
      expect(output).to include("got:hello")
      expect(status.exitstatus).to eq(3)
    end
  end

  it "gives no terminal without --pty (the command's streams are pipes)" do
    skip "bubblewrap is unavailable here" unless available?(:bubblewrap)
    output, status = Dir.mktmpdir do |dir|
      on_terminal("--provider", "bubblewrap", "--root", dir, "--", "sh", "-c", PTY_PROBE_SCRIPT)
    end
    expect(output).to include("not a tty")
    expect(output).not_to include("is-a-terminal")
    expect(status.exitstatus).to eq(3)
  end

  it "inside Bubblewrap, the terminal lives on the sandbox's own /dev/pts, not the host's" do
    skip "bubblewrap is unavailable here" unless available?(:bubblewrap)
    host_pts = File.stat("/dev/pts").dev
    script = "stat -c 'pts-device:%d' /dev/pts; ls /dev/pts; echo ready; read line"
    output, status = Dir.mktmpdir do |dir|
      on_terminal("--pty", "--provider", "bubblewrap", "--root", dir, "--", "sh", "-c", script)
    end
    expect(status.exitstatus).to eq(0)
    inner_pts = output[/pts-device:(\d+)/, 1]
    expect(inner_pts).not_to be_nil
    expect(Integer(inner_pts)).not_to eq(host_pts)
  end

  it "refuses with 125 and says why where the backend has no terminal device to give (Landlock)" do
    skip "landlock is unavailable here" unless available?(:landlock)
    output, status = Dir.mktmpdir do |dir|
      on_terminal("--pty", "--provider", "landlock", "--root", dir, "--", "sh", "-c", PTY_PROBE_SCRIPT, wait_for: "never")
    end
    expect(status.exitstatus).to eq(125)
    expect(output).to include("--pty: the landlock sandbox has no terminal device of its own")
    expect(output).not_to include("ready")
  end
end
