# frozen_string_literal: true

# Observations of the real process table for the process specs. Zombies are
# not "alive": an orphaned grandchild that died waits for init to reap it,
# which here can take a second or two.
module ProcessHelpers
  module_function

  def proc_stats
    Dir["/proc/[0-9]*/stat"].filter_map do |path|
      text = File.read(path)
      fields = text[(text.rindex(")") + 2)..].split
      { pid: path[%r{/proc/(\d+)/}, 1].to_i, state: fields[0], ppid: fields[1].to_i, pgrp: fields[2].to_i }
    rescue Errno::ENOENT, Errno::ESRCH
      nil
    end
  end

  # Live (non-zombie) processes in process group +pgid+.
  def live_group_members(pgid)
    proc_stats.select { |stat| stat[:pgrp] == pgid && !%w[Z X].include?(stat[:state]) }
  end

  def process_alive?(pid)
    stat = proc_stats.find { |entry| entry[:pid] == pid }
    !stat.nil? && !%w[Z X].include?(stat[:state])
  end

  # Children of this Ruby process that exited but were never reaped.
  def zombie_children
    proc_stats.select { |stat| stat[:ppid] == Process.pid && stat[:state] == "Z" }
  end

  # Pids of this Ruby process's children that are still running (not zombies).
  def live_children
    proc_stats.filter_map { |stat| stat[:pid] if stat[:ppid] == Process.pid && !%w[Z X].include?(stat[:state]) }
  end

  def open_fds
    Dir.children("/proc/self/fd").size
  end

  def rss_bytes
    File.read("/proc/self/status")[/^VmRSS:\s+(\d+) kB/, 1].to_i * 1024
  end

  # Retries +block+ until it is truthy or +seconds+ pass (for things the
  # kernel finishes asynchronously, like closing an aborted task's pipes).
  def eventually(seconds = 3)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      result = yield
      return result if result || Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep 0.02
    end
  end

  # The counterpart of #eventually for "nothing more happens": checks +block+
  # every +every+ seconds for +seconds+ and returns false at the first falsy
  # result, true if it held the whole time. Use it instead of a bare sleep
  # before asserting that something stayed the same (a count, a live child).
  def consistently(seconds, every: 0.02)
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + seconds
    loop do
      return false unless yield
      return true if Process.clock_gettime(Process::CLOCK_MONOTONIC) > deadline

      sleep every
    end
  end

  # Waits for a file a child writes (its pid) and returns the Integer in it.
  # The prefix that runs a command as uid 65534 (skips where that is impossible).
  def drop_to_nobody!
    skip "needs root to drop to uid 65534" unless Process.uid.zero?
    skip "setpriv unavailable" unless system("command -v setpriv >/dev/null 2>&1")
    lib = File.expand_path("../../lib", __dir__)
    readable = system("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "test", "-r",
                      File.join(lib, "littleghost_sandbox.so"))
    skip "the worktree is not readable by uid 65534 (copy it under /tmp)" unless readable
    %w[setpriv --reuid=65534 --regid=65534 --clear-groups]
  end

  def read_pid(path, seconds = 5)
    eventually(seconds) { File.exist?(path) && !File.read(path).strip.empty? }
    File.read(path).to_i
  end
end
