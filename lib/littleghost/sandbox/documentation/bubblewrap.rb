# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandboxes::Bubblewrap is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  module Sandboxes
    # Provider <tt>:bubblewrap</tt> (Linux): every program runs in fresh user, pid, ipc, uts, cgroup and (unless
    # the network is <tt>:inherit</tt>) network namespaces through +bwrap+, seeing only the granted workspace paths
    # (identity binds, read-only where the policy says so), read-only <tt>/usr</tt> and a fresh <tt>/dev</tt>,
    # <tt>/proc</tt> and size-bounded tmpfs <tt>/tmp</tt> and <tt>/run</tt>; with all capabilities dropped, no
    # nested user namespaces, and a seccomp filter. The PID namespace ends every descendant with the sandbox
    # (<tt>:process_tree_ownership</tt>). File operations go through the broker. Network: <tt>:none</tt> (the
    # default) or <tt>:inherit</tt>.
    #
    # Needs the +bubblewrap+ package and unprivileged user namespaces; if either is missing, #open (and ::probe)
    # says what to install or enable, and nothing runs unsandboxed.
    #
    #   sandbox = LittleGhost::Sandboxes::Bubblewrap.new(
    #     workspace: workspace,
    #     policy: {files: {root: :read_write}, network: :none},
    #     tmpfs_size: 64 * 1024 * 1024
    #   ).open
    #   sandbox.execute_program(["ls", "/"], timeout: 10).stdout   # only what the sandbox shows
    class Bubblewrap < LittleGhost::Sandbox
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(workspace:, policy: nil, profiles: {}, limits: {}, bubblewrap: DEFAULT_EXECUTABLE, platform: RUBY_PLATFORM, command_wrapper: nil, proc: :new, tmpfs: ["/tmp", "/run"], tmpfs_size: 268_435_456, masks: [], runtime_roots: RUNTIME_ROOTS, uid: nil, gid: nil, relay: nil, gateway_options: {}, process_limits: {}) -> sandbox
      #
      # Records the options without touching the host (see Sandbox.new for the common ones):
      #
      # +bubblewrap+:: path of the +bwrap+ executable (<tt>"/usr/bin/bwrap"</tt>).
      # +platform+:: the platform to assume (tests); text (ArgumentError "platform must be valid UTF-8" otherwise).
      # +command_wrapper+:: an argv prefix Array, or a callable <tt>call(argv:, workspace:, scope:) -> argv</tt>,
      #                     applied to every command inside the sandbox.
      # +proc+:: <tt>:new</tt> (a fresh <tt>/proc</tt>), <tt>:none</tt>, or a Mount Hash mounted at <tt>/proc</tt>.
      # +tmpfs+:: paths that get an empty, writable tmpfs.
      # +tmpfs_size+:: the size in bytes of each tmpfs (default 256 MiB), a positive Integer.
      # +cgroup+:: the delegated cgroup v2 directory launches create their cgroups under when this process's own cgroup cannot have children (instead of the LITTLEGHOST_CGROUP variable); a String or Pathname, else TypeError.
      # +process_limits+:: defaults for every launch, <tt>{memory_bytes:, tasks:, cpu_seconds:}</tt> (positive
      #                    Integers, else ArgumentError); per-call keywords override them. See
      #                    Sandbox#execute_program.
      # +masks+:: paths hidden behind an empty read-only tmpfs.
      # +runtime_roots+:: host directories bound read-only under <tt>root_filesystem: :isolated</tt>
      #                   (<tt>["/usr"]</tt>).
      # +uid+, +gid+:: the ids the child sees (Integers >= 0).
      # +relay+:: the relay executable that runs the program inside the network namespace under
      #           <tt>network: {allow: [...]}</tt> (default: the gem's helper).
      # +gateway_options+:: options merged under a gateway provider Hash (for example
      #                     <tt>{allow_private_destinations: true}</tt>).
      #
      # Raises LittleGhost::PolicyError for a bad +proc+, +tmpfs_size+, mount path, +uid+ or +gid+; ArgumentError
      # for an unknown keyword. An allowlist (<tt>network: {allow: ["host:port"]}</tt>) is enforced through the
      # built-in gateway and the relay; #open raises LittleGhost::DependencyError when the relay is missing.
      # Programs get the proxy variables (<tt>HTTP_PROXY</tt>, <tt>HTTPS_PROXY</tt>, ...). For a program that ignores
      # them (Node.js before 22.21, a raw socket), each exact <tt>"host:port"</tt> entry with a port of 1024 or more is
      # also served inside the sandbox: the relay listens on a loopback address of the sandbox's own
      # (<tt>127.80.0.N</tt> for a name, <tt>127.0.0.1</tt> for +localhost+), the sandbox's <tt>/etc/hosts</tt> (the
      # host's, with those names first; the host's file is not changed) points the name at it, and each connection
      # goes through the gateway as <tt>CONNECT host:port</tt>, under the same rules and with the same denials. Ports
      # below 1024 (<tt>example.com:443</tt>) are reachable through the proxy variables only.
      #
      #   LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, masks: ["/srv/agent/secrets"], tmpfs_size: 32 << 20)

      ##
      # :singleton-method: probe
      # :call-seq:
      #   probe(executable: nil, bubblewrap: nil, platform: nil) -> {available:, reason:, capabilities:, executable:, version:}
      #
      # Resolves +bwrap+ once per process (a bare name is searched in PATH once) to an absolute path it checks
      # (the file and its directory owned by root or by this process's user, writable by nobody else) and whose
      # version must be at least 0.8.0, then runs it once with the namespaces a sandbox needs and reports the
      # result, with the resolved +executable+ and its +version+ (nil when it was not found or refused). The reason
      # of an unavailable probe is actionable ("Bubblewrap is not installed at PATH", "Bubblewrap 0.7.0 at PATH is
      # too old: ...", "Bubblewrap is supported only on Linux", "Bubblewrap is installed but unavailable: ...").
      # Never raises for an unusable host.
      #
      #   LittleGhost::Sandboxes::Bubblewrap.probe.slice(:available, :executable, :version)
      #   # => {available: true, executable: "/usr/bin/bwrap", version: "0.8.0"}

      ##
      # :singleton-method: backend_capabilities
      # :call-seq:
      #   backend_capabilities -> Capabilities
      #
      # What every Bubblewrap sandbox enforces, whatever its policy: all file operations, execute, spawn,
      # <tt>:process_tree_ownership</tt>, <tt>:process_spawn_denial</tt> (x86_64 and aarch64), network
      # <tt>[:inherit, :none]</tt>, isolation <tt>:namespace</tt>.
      #
      #   LittleGhost::Sandboxes::Bubblewrap.backend_capabilities.isolation   # => :namespace

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The requested policy with a nil network as <tt>:none</tt>.
      #
      #   sandbox.effective_policy.network.mode   # => :none

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # Same as ::backend_capabilities.
      #
      #   sandbox.capabilities.supports?(:process_tree_ownership)   # => true

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # True when some tool-visible grant is read-write.
      #
      #   sandbox.writable?   # => true

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> result of the block
      #
      # Checks the platform, the +bwrap+ executable and the grant directories, pins their identities, and runs the
      # functional probe (cached per executable); idempotent. See Sandbox#open for the block form.
      #
      # Under <tt>network: {mode: :allowlist}</tt> it also checks the relay helper and opens the gateway (G.3:
      # nil, +:builtin+ or +:envoy+ give LittleGhost::Network::BuiltinGateway; <tt>{provider: :external, ...}</tt>
      # gives LittleGhost::Network::ExternalGateway; a callable is called with +policy:+ and +transport:+; any other
      # object is used as is); +gateway_options:+ is merged under a provider Hash. Each launch then runs its command
      # under the relay helper inside the network namespace, with the proxy variables of G.5.
      #
      # Raises LittleGhost::UnsupportedPlatformError "Bubblewrap sandboxing is supported only on Linux",
      # LittleGhost::DependencyError (bwrap missing, or user namespaces blocked, with what to do; the relay helper
      # missing, naming its path), LittleGhost::PolicyError "sandbox mount source is not a directory" / "is
      # unavailable", a malformed allowlist entry, "unknown network gateway provider", "network gateway must respond
      # to open and close".
      #
      #   sandbox.open { |box| box.execute_program(["true"], timeout: 5).success? }   # => true

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Terminates every live process and session this sandbox or its scopes started, closes the network gateway
      # (the built-in one stops serving and removes its socket and directory) and marks it unopened; idempotent.
      # See Sandbox#close.
      #
      #   sandbox.close   # => nil

      ##
      # :method: gateway
      # :call-seq:
      #   gateway -> gateway or nil
      #
      # The gateway enforcing a <tt>network: {mode: :allowlist}</tt> policy (SPEC G.3), resolved at the first #open
      # and opened and closed with the sandbox; nil before that or under another network mode. A
      # LittleGhost::Network::BuiltinGateway keeps its denials after #close.
      #
      #   sandbox.open
      #   sandbox.gateway.denials.last   # => {at: 2026-..., destination: "evil.example:443", reason: :not_allowed, ...}

      ##
      # :method: read
      # :call-seq:
      #   read(path, context: nil) -> String
      #
      # Reads through the broker (no process is started); see Sandbox#read.
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
      # Runs +argv+ inside +bwrap+ (opening lazily); a bare program name is found inside the sandbox. +cwd+ is
      # logical, or an absolute in-sandbox path, and must lie in a selected grant or a tmpfs. A scope without
      # <tt>:process_spawn</tt> runs the child under the subprocess filter. See Sandbox#execute_program.
      #
      # Raises LittleGhost::PolicyError "sandbox working directory is outside the selected scope", "sandbox mount
      # source changed after opening", and the errors of Sandbox#execute_program and #open.
      #
      #   sandbox.execute_program(["sh", "-c", "echo $HOME; ls /"], timeout: 10).stdout

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, allow_subprocesses: true, **options) -> ProcessSession
      #
      # Starts +argv+ inside +bwrap+ as a ProcessSession; <tt>allow_subprocesses: false</tt> installs a seccomp
      # filter under which the child may create threads but no processes. See Sandbox#start_program.
      #
      # Raises LittleGhost::CapabilityError when the filter cannot be installed on this architecture.
      #
      #   session = sandbox.start_program(["sh", "-c", "sh -c true"], allow_subprocesses: false)
      #   session.wait(timeout: 5).exitstatus   # => 2
      #   session.read(timeout: 1).stderr      # => "sh: 1: Cannot fork\n"
      #   session.close

      ##
      # :method: bubblewrap_args
      # :call-seq:
      #   bubblewrap_args(mounts: nil, cwd: nil, environment: nil, inherit_environment: nil, network: nil) -> Array of String
      #
      # The +bwrap+ options (everything before <tt>--</tt>) a launch would use, for inspection and tests; works
      # before #open. Defaults: the policy's grants, the workspace root, the policy's environment and network.
      #
      # Raises LittleGhost::PolicyError for a grant or mount the policy refuses, like #execute_program. What only
      # an actual launch adds is not shown: the gateway's relay and its own directory, the tmpfs masks over the
      # gateways' socket folder where the root shows the host's +/tmp+ (and their PolicyErrors: a grant inside that
      # folder, a writable grant above +/tmp+).
      #
      #   sandbox.bubblewrap_args.first(3)   # => ["--unshare-user", "--disable-userns", "--unshare-pid"]

      # Internal: the backend's options and open/pinned state, held by the Rust extension and reached from the
      # sandbox through one hidden slot. It has no methods and cannot be instantiated from Ruby.
      #
      #   sandbox.instance_variables.grep(/effective_policy|pins|tmpfs/)   # => [] (the state is no instance variable)
      class State
      end
    end
  end
end
