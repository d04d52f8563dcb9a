# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandboxes::Unrestricted is defined by the Rust extension. This file defines
# nothing.
#++

module LittleGhost
  # The built-in sandbox backends; pick one by provider name with Sandbox.build (or Sandbox.resolve_provider).
  module Sandboxes
    # Provider <tt>:unrestricted</tt>: the full filesystem broker for the file operations, but programs run <b>on
    # the host without isolation</b>. Processes get a scrubbed environment and their own process group, which is
    # terminated on timeout, cancellation and #close; grants, runtime paths and read-only access are <b>not</b>
    # enforced for them, and a descendant that calls +setsid+ escapes cleanup. Only the <tt>:inherit</tt> network.
    # Use it where the host is already the sandbox (a container, a VM) or in tests.
    #
    #   sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}})
    #   sandbox.capabilities.isolation   # => :none
    #   sandbox.execute_program(["id", "-u"], timeout: 5).stdout   # your own uid
    class Unrestricted < LittleGhost::Sandbox
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(workspace:, policy: nil, profiles: {}, limits: {}, process_limits: {}, cgroup: nil) -> sandbox
      #
      # A nil +policy+ means <tt>{files: {root: :read_only}}</tt>. See Sandbox.new.
      # +process_limits+ (<tt>{memory_bytes:, tasks:, cpu_seconds:}</tt>, positive Integers, else ArgumentError)
      # sets defaults for every launch, <tt>execute_program(argv, timeout:)</tt> included; per-call keywords override
      # them. Where the host gives a writable cgroup, every launch runs in its own cgroup, so nothing it started (a
      # <tt>setsid</tt> daemon included) outlives it, and the capabilities list <tt>:process_tree_ownership</tt>.
      # +cgroup+ is the delegated cgroup v2 directory launches create their cgroups under when this process's own cgroup cannot have children (instead of the LITTLEGHOST_CGROUP variable); a String or Pathname, else TypeError.
      #
      # Raises LittleGhost::CapabilityError "the unrestricted sandbox cannot enforce network mode :MODE" for a
      # network other than nil or <tt>:inherit</tt>.
      #
      #   LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {network: :none})
      #   # LittleGhost::CapabilityError

      ##
      # :singleton-method: probe
      # :call-seq:
      #   probe -> {available: true, reason: nil, capabilities: Capabilities}
      #
      # Always available; reports the capabilities of a default Unrestricted sandbox.
      #
      #   LittleGhost::Sandboxes::Unrestricted.probe[:available]   # => true

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The requested grants and environment, with <tt>root_filesystem: :read_write</tt> and
      # <tt>network: :inherit</tt>: what a host process really gets.
      #
      #   sandbox.effective_policy.root_filesystem   # => :read_write

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # Read, list, execute and spawn, plus write and replace when #writable?; network <tt>[:inherit]</tt>;
      # isolation <tt>:none</tt>. <tt>:process_tree_ownership</tt>, <tt>:memory_limit</tt>, <tt>:task_limit</tt> and <tt>:cpu_limit</tt> only where
      # launches get a cgroup (see ::new), <tt>:process_cpu_limit</tt> where they do not (+cpu_seconds+ per process);
      # never <tt>:process_spawn_denial</tt>.
      #
      #   sandbox.capabilities.features   # => [:filesystem_read, :filesystem_list, :process_execute, :process_spawn, ...]

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # True when some tool-visible grant is read-write.
      #
      #   sandbox.writable?   # => true

      ##
      # :method: allows?
      # :call-seq:
      #   allows?(operation, path = nil) -> true or false
      #
      # See Sandbox#allows?.
      #
      #   sandbox.allows?(:read, "notes.md")   # => true

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> result of the block
      #
      # Checks that the workspace root is still the directory seen at construction; see Sandbox#open.
      #
      # Raises LittleGhost::ToolError "Workspace root changed after initialization".
      #
      #   sandbox.open { |box| box.list }

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Terminates every live process and session this sandbox or its scopes started; see Sandbox#close.
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
      #   sandbox.list   # => "notes.md\nsource/"

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
      #   execute_program(argv, timeout:, context: nil, max_output_bytes: nil, environment: {}, inherit_environment: false, scope: nil, cwd: nil, memory_bytes: nil, tasks: nil, cpu_seconds: nil) -> Execution
      #
      # Runs +argv+ on the host (no isolation) in the workspace root or the logical +cwd+; see
      # Sandbox#execute_program for options and errors.
      #
      #   sandbox.execute_program(["pwd"], timeout: 5).stdout   # => "/srv/agent\n"

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, allow_subprocesses: true, **options) -> ProcessSession
      #
      # Starts +argv+ on the host as a ProcessSession; see Sandbox#start_program.
      #
      # Raises LittleGhost::CapabilityError "the unrestricted sandbox cannot prohibit subprocess creation" for
      # <tt>allow_subprocesses: false</tt>.
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
