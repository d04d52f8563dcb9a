# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandboxes::Seatbelt is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  module Sandboxes
    # Provider <tt>:seatbelt</tt> (macOS): every program runs under <tt>sandbox-exec</tt> with a generated
    # deny-default profile that allows reading the runtime, reading the grants, writing the read-write ones (never
    # the read-only ones nested inside), a private temporary directory, and the network only for
    # <tt>:inherit</tt>. Subprocesses are denied unless asked for. There is no PID namespace, so a descendant that
    # leaves the process group can survive cleanup (never <tt>:process_tree_ownership</tt>). File operations go
    # through the broker. Elsewhere it raises LittleGhost::UnsupportedPlatformError at #open.
    #
    #   sandbox = LittleGhost::Sandboxes::Seatbelt.new(workspace: workspace, policy: {files: {root: :read_write}}).open
    #   sandbox.execute_program(["ls"], timeout: 10)
    class Seatbelt < LittleGhost::Sandbox
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(workspace:, policy: nil, profiles: {}, limits: {}, executable: DEFAULT_EXECUTABLE, platform: RUBY_PLATFORM, process_limits: {}) -> sandbox
      #
      # +process_limits+ (<tt>{memory_bytes:, tasks:, cpu_seconds:}</tt>) sets defaults for every launch. macOS has
      # no cgroups: +memory_bytes+ is sampled, +cpu_seconds+ is per process, and +tasks+ raises
      # LittleGhost::CapabilityError (see Sandbox#execute_program).
      #
      # +executable+ is the path of <tt>sandbox-exec</tt> (<tt>"/usr/bin/sandbox-exec"</tt>); see Sandbox.new for
      # the others. Touches nothing on the host.
      #
      #   LittleGhost::Sandboxes::Seatbelt.new(workspace: workspace, policy: {network: :none})

      ##
      # :singleton-method: probe
      # :call-seq:
      #   probe(executable: nil, platform: nil) -> {available:, reason:, capabilities:}
      #
      # Whether <tt>sandbox-exec</tt> is usable here, with the reason when not.
      #
      #   LittleGhost::Sandboxes::Seatbelt.probe[:reason]
      #   # => "Seatbelt sandboxing requires macOS and /usr/bin/sandbox-exec" (on Linux)

      ##
      # :singleton-method: backend_capabilities
      # :call-seq:
      #   backend_capabilities -> Capabilities
      #
      # All file operations, execute, spawn, <tt>:process_spawn_denial</tt>, network <tt>[:inherit, :none]</tt>,
      # isolation <tt>:seatbelt</tt>.
      #
      #   LittleGhost::Sandboxes::Seatbelt.backend_capabilities.isolation   # => :seatbelt

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The requested policy with a nil network as <tt>:none</tt>.
      #
      #   sandbox.effective_policy.network.none?   # => true

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # Same as ::backend_capabilities.
      #
      #   sandbox.capabilities.supports?(:process_tree_ownership)   # => false

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
      # Checks the platform and <tt>sandbox-exec</tt>, validates the workspace and creates a private temporary
      # directory; idempotent. See Sandbox#open for the block form.
      #
      # Raises LittleGhost::UnsupportedPlatformError off macOS, LittleGhost::DependencyError without
      # <tt>sandbox-exec</tt>, LittleGhost::CapabilityError "Seatbelt does not implement allowlisted network
      # egress".
      #
      #   sandbox.open { |box| box.list }

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Terminates the live processes and sessions it started and removes its temporary directory; idempotent.
      #
      #   sandbox.close   # => nil

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
      #   sandbox.list   # => "notes.md"

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
      # Runs +argv+ under <tt>sandbox-exec</tt> (opening lazily), with +TMPDIR+ set to the private temporary
      # directory; see Sandbox#execute_program.
      #
      #   sandbox.execute_program(["ls"], timeout: 10).success?   # => true

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, allow_subprocesses: false, **options) -> ProcessSession
      #
      # Starts +argv+ under <tt>sandbox-exec</tt>; subprocesses are denied unless <tt>allow_subprocesses: true</tt>.
      # See Sandbox#start_program.
      #
      # Raises LittleGhost::CapabilityError "sandbox scope does not allow subprocess creation" for
      # <tt>allow_subprocesses: true</tt> on a scope without <tt>:process_spawn</tt>.
      #
      #   session = sandbox.start_program(["cat"])
      #   session.close

      # Internal: the backend's options and open/pinned state, held by the Rust extension and reached from the
      # sandbox through one hidden slot. It has no methods and cannot be instantiated from Ruby.
      #
      #   sandbox.instance_variables.grep(/effective_policy|pins|tmpfs/)   # => [] (the state is no instance variable)
      class State
      end
    end
  end
end
