# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandboxes::Landlock is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  module Sandboxes
    # Provider <tt>:landlock</tt> (Linux 6.12 or later): for hosts where user namespaces are blocked (Docker and CI
    # containers, Ubuntu 24.04), so Bubblewrap cannot start. Nothing to install, no root. Each program runs under the
    # gem's helper, which restricts the child (never the Ruby process) with Landlock, +no_new_privs+ and the seccomp
    # filter of Bubblewrap, and kills every descendant when the program ends (<tt>:process_tree_ownership</tt>).
    #
    # Files: read-write grants writable beneath, read-only grants readable and executable; under
    # <tt>:isolated</tt> also RUNTIME_ROOTS, COMPATIBILITY_ROOTS, STARTUP_FILES and DEVICES; <tt>:read_only</tt> and
    # <tt>:read_write</tt> open the whole host that way, except <tt>/proc</tt> (only the program's own
    # <tt>/proc/PID</tt>). No mount namespace: grants appear at their own paths, there is no private <tt>/tmp</tt>,
    # and each sandbox gets a private writable #tmpdir as +TMPDIR+ instead. A read-only grant inside a writable
    # one is carved out: no new entry can be made directly in the directories on the path to it (see the README).
    # Network: <tt>:none</tt> (the default: no TCP, no +socket+ at all, +socketpair+ allowed), <tt>:inherit</tt>, or
    # <tt>:allowlist</tt> through the same built-in gateway and proxy variables as Bubblewrap: the child can open TCP
    # sockets only, and the helper's supervisor makes each +connect+ itself (the proxy address to the gateway, any
    # other address as a +CONNECT+ the gateway decides; a refusal is +ECONNREFUSED+ and a denial). Signals and
    # abstract Unix sockets never leave the sandbox.
    #
    #   sandbox = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}})
    #   sandbox.execute_program(["sh", "-c", "cat /etc/passwd"], timeout: 10).exit_code   # => 1
    class Landlock < LittleGhost::Sandbox
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(workspace:, policy: nil, profiles: {}, limits: {}, platform: RUBY_PLATFORM, runtime_roots: RUNTIME_ROOTS, process_limits: {}) -> sandbox
      #
      # +cgroup+ is the delegated cgroup v2 directory launches create their cgroups under when this process's own cgroup cannot have children (instead of the LITTLEGHOST_CGROUP variable); a String or Pathname, else TypeError.
      # +process_limits+ (<tt>{memory_bytes:, tasks:, cpu_seconds:}</tt>) sets defaults for every launch; see
      # Sandbox#execute_program.
      #
      # Records the options without touching the host (see Sandbox.new for the common ones).
      #
      # Raises LittleGhost::CapabilityError for network <tt>:allowlist</tt> where the kernel cannot intercept
      # +connect+ (no seccomp user notification), naming what is missing.
      #
      #   LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {network: :inherit})

      ##
      # :singleton-method: probe
      # :call-seq:
      #   probe(platform: RUBY_PLATFORM) -> {available:, reason:, capabilities:, abi:, helper:, allowlist_unavailable:}
      #
      # The kernel's Landlock ABI (+abi+, nil without Landlock) and whether this backend can run: unavailable off
      # Linux, without the gem's helper executable, without Landlock, or below MINIMUM_ABI, with the reason.
      # The helper file beside the extension is checked once, when the extension loads (a regular executable
      # owned by root or by this process's user, writable by nobody else, not a symlink) and copied into a sealed
      # in-memory file that every launch runs; +helper+ is the file that copy was made from (nil when it was
      # refused, with the reason, or when the kernel forbids executable in-memory files). +allowlist_unavailable+ is
      # nil where network <tt>:allowlist</tt> can be enforced, else the missing kernel piece (seccomp user
      # notification, which a container's seccomp profile can refuse).
      #
      #   LittleGhost::Sandboxes::Landlock.probe[:abi]   # => 7

      ##
      # :singleton-method: backend_capabilities
      # :call-seq:
      #   backend_capabilities -> Capabilities
      #
      # What every Landlock sandbox enforces: isolation <tt>:landlock</tt>, network <tt>:inherit</tt>,
      # <tt>:none</tt> and, where the kernel can intercept +connect+, <tt>:allowlist</tt>.
      #
      #   LittleGhost::Sandboxes::Landlock.backend_capabilities.isolation   # => :landlock

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The policy with a nil network read as <tt>:none</tt>.
      #
      #   sandbox.effective_policy.network.mode   # => :none

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # Same as ::backend_capabilities.
      #
      #   sandbox.capabilities.supports?(:process_spawn_denial)   # => true

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # True when a tool-visible grant is writable.
      #
      #   sandbox.writable?   # => true

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> result of the block
      #
      # Checks the platform, the helper and the kernel, checks that every grant can be enforced exactly, and creates
      # the private #tmpdir; idempotent.
      #
      # Raises LittleGhost::UnsupportedPlatformError off Linux, LittleGhost::DependencyError (the probe's reason),
      # LittleGhost::PolicyError "sandbox mount source is not a directory", LittleGhost::CapabilityError naming a
      # rule that cannot be enforced.
      #
      #   sandbox.open.tmpdir   # => "/tmp/littleghost-landlock-..."

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Removes the private #tmpdir and marks the sandbox unopened; idempotent.
      #
      #   sandbox.close   # => nil

      ##
      # :method: tmpdir
      # :call-seq:
      #   tmpdir -> String or nil
      #
      # The private temporary directory (mode 0700) every program of this sandbox gets as +TMPDIR+, writable;
      # nil until #open.
      #
      #   sandbox.open.tmpdir   # => "/tmp/littleghost-landlock-3f2a..."

      ##
      # :method: gateway
      # :call-seq:
      #   gateway -> gateway or nil
      #
      # The gateway enforcing a <tt>network: {mode: :allowlist}</tt> policy (SPEC G.3), resolved at the first #open
      # (or launch) and opened and closed with the sandbox, as under Bubblewrap; nil before that or under another
      # network mode. Only the built-in gateway: an external one (G.4) is reached by a path, which a Landlock child
      # can replace, so a launch through it raises LittleGhost::CapabilityError.
      #
      #   sandbox.open
      #   sandbox.gateway.denials.last.target   # => "127.0.0.1:5432"

      ##
      # :method: read
      # :call-seq:
      #   read(path, context: nil) -> String
      #
      # Reads through the broker; see Sandbox#read.
      #
      #   sandbox.read("notes.md")   # => "hello\n"

      ##
      # :method: list
      # :call-seq:
      #   list(path = ".", context: nil) -> String
      #
      # Lists through the broker; see Sandbox#list.
      #
      #   sandbox.list("source")   # => "app.rb"

      ##
      # :method: write
      # :call-seq:
      #   write(path, content, context: nil) -> String
      #
      # Writes through the broker; see Sandbox#write.
      #
      #   sandbox.write("notes.md", "hi")   # => "Wrote 2 bytes to notes.md"

      ##
      # :method: replace
      # :call-seq:
      #   replace(path, old_text, new_text, context: nil) -> String
      #
      # Replaces through the broker; see Sandbox#replace.
      #
      #   sandbox.replace("notes.md", "hi", "yo")   # => "Wrote 2 bytes to notes.md"

      ##
      # :method: execute_program
      # :call-seq:
      #   execute_program(argv, timeout:, context: nil, max_output_bytes: nil, environment: {}, inherit_environment: false, scope: nil, cwd: nil) -> Execution
      #
      # Runs +argv+ under Landlock (opening lazily). +cwd+ must lie in a selected grant or the #tmpdir. See
      # Sandbox#execute_program.
      #
      # Raises LittleGhost::PolicyError "sandbox working directory is outside the selected scope",
      # LittleGhost::CapabilityError for a grant shown at another path than its source.
      #
      #   sandbox.execute_program(["sh", "-c", "echo $TMPDIR"], timeout: 10).stdout

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, allow_subprocesses: true, **options) -> ProcessSession
      #
      # Starts +argv+ under Landlock as a ProcessSession; <tt>allow_subprocesses: false</tt> lets the child create
      # threads but no processes. See Sandbox#start_program.
      #
      #   session = sandbox.start_program(["sh", "-c", "sh -c true"], allow_subprocesses: false)
      #   session.wait(timeout: 5).exitstatus   # => 2
      #   session.close
    end
  end
end
