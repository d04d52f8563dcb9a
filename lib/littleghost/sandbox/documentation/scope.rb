# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::Scope is defined by the Rust extension and lib/littleghost/sandbox/scope.rb.
# This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # A non-owning view of a Sandbox that can only narrow it: a subset of its grants, read-only instead of
    # read-write, fewer capabilities, less network. Build one with Sandbox#scope (or Scope#scope for a nested one)
    # and hand it to the tool or child agent that should have less authority; that code can do nothing through it
    # that the sandbox would not allow. Whoever still holds the sandbox keeps the sandbox's authority.
    #
    # A scope owns nothing: #open and #close do nothing, and processes it starts belong to its sandbox.
    #
    #   scope = sandbox.scope(files: {source: :read_only}, network: false)
    #   scope.read("source/app.rb")                         # => "puts 1\n"
    #   scope.write("source/app.rb", "x")                   # LittleGhost::ToolError: Sandbox scope is read-only
    #   scope.execute_program(["ls", "source"], timeout: 5) # runs with only source/ visible (isolated backends)
    #   scope.scope(files: {root: :read_write})             # LittleGhost::CapabilityError
    class Scope
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(sandbox:, files: nil, runtime_paths: nil, capabilities: nil, network: nil, parent_scope: nil) -> scope
      #
      # Builds a scope of +sandbox+ (or, with +parent_scope+, of that scope). Prefer Sandbox#scope and #scope, which
      # take the same keywords; see Sandbox#scope for their meaning and errors.
      #
      #   LittleGhost::Sandbox::Scope.new(sandbox: sandbox, files: [:source])

      ##
      # :method: sandbox
      # :call-seq:
      #   sandbox -> Sandbox
      #
      # The sandbox this scope narrows.
      #
      #   scope.sandbox.equal?(sandbox)   # => true

      ##
      # :method: workspace
      # :call-seq:
      #   workspace -> Workspace
      #
      # The sandbox's LittleGhost::Workspace.
      #
      #   scope.workspace.root   # => "/srv/agent"

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # The features and network modes this scope allows: never more than its parent's.
      #
      #   sandbox.scope(capabilities: [:read]).capabilities.features   # => [:filesystem_read]

      ##
      # :method: network
      # :call-seq:
      #   network -> NetworkPolicy or nil
      #
      # The scope's LittleGhost::Sandbox::NetworkPolicy, or nil when it keeps the backend's default.
      #
      #   sandbox.scope(network: false).network.mode   # => :none

      ##
      # :method: process_grants
      # :call-seq:
      #   process_grants -> Array of Mount
      #
      # The scope's grants as frozen LittleGhost::Sandbox::Mount values, longest target first; sources are real
      # paths. Read-only grants nested under a selected writable one stay in the list, read-only.
      #
      #   sandbox.scope(files: [:source]).process_grants.map(&:access)   # => [:read_only]

      ##
      # :method: policy
      # :call-seq:
      #   policy -> Policy
      #
      # The policy the sandbox enforces (<tt>sandbox.effective_policy</tt>); same as #effective_policy.
      #
      #   scope.policy.root_filesystem   # => :isolated

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The policy the sandbox enforces (<tt>sandbox.effective_policy</tt>). The scope's own narrowing is in
      # #process_grants, #capabilities and #network.
      #
      #   scope.effective_policy.equal?(sandbox.effective_policy)   # => true

      ##
      # :method: supports?
      # :call-seq:
      #   supports?(feature, value = nil) -> true or false
      #
      # Whether this scope allows +feature+ (aliases accepted) or, for <tt>:network</tt>, the mode +value+.
      #
      #   sandbox.scope(capabilities: [:read]).supports?(:write)   # => false

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # True when the scope allows writes and some tool-visible grant of it is read-write.
      #
      #   sandbox.scope(files: {root: :read_only}).writable?   # => false

      ##
      # :method: allows?
      # :call-seq:
      #   allows?(operation, path = nil) -> true or false
      #
      # Whether +operation+ (<tt>:read</tt>, <tt>:list</tt>, <tt>:write</tt>, <tt>:replace</tt>, <tt>:execute</tt>,
      # or a feature name) is allowed, and with a logical +path+ whether it is allowed there. Returns false instead
      # of raising for a bad, hidden or escaping path.
      #
      #   scope.allows?(:read, "source/app.rb")   # => true
      #   scope.allows?(:write, "source/app.rb")  # => false

      ##
      # :method: read
      # :call-seq:
      #   read(path, context: nil) -> String
      #
      # Reads UTF-8 text at the logical +path+ within this scope's grants; see Sandbox#read.
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow filesystem read" without the capability,
      # "Path is outside the sandbox scope" outside its grants, and the errors of Sandbox#read.
      #
      #   scope.read("source/app.rb")   # => "puts 1\n"

      ##
      # :method: list
      # :call-seq:
      #   list(path = ".", context: nil) -> String
      #
      # Lists the directory at the logical +path+; see Sandbox#list. Listing a directory no grant covers shows only
      # the granted children beneath it (<tt>"source/"</tt>).
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow filesystem list" and the errors of Sandbox#list.
      #
      #   sandbox.scope(files: [:source]).list   # => "source/"

      ##
      # :method: write
      # :call-seq:
      #   write(path, content, context: nil) -> String
      #
      # Atomically writes +content+ to the logical +path+; see Sandbox#write.
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow filesystem write", "Sandbox scope is read-only"
      # and the errors of Sandbox#write.
      #
      #   scope.write("notes.md", "hi")   # => "Wrote 2 bytes to notes.md"

      ##
      # :method: replace
      # :call-seq:
      #   replace(path, old_text, new_text, context: nil) -> String
      #
      # Replaces the single occurrence of +old_text+ at the logical +path+; see Sandbox#replace. Needs only the
      # <tt>:filesystem_replace</tt> capability.
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow filesystem replace" and the errors of
      # Sandbox#replace.
      #
      #   scope.replace("notes.md", "hi", "bye")   # => "Wrote 3 bytes to notes.md"

      ##
      # :method: execute
      # :call-seq:
      #   execute(command, timeout:, **options) -> Execution
      #
      # Runs the String +command+ through <tt>/bin/sh -c</tt> within this scope (<tt>sandbox.execute(command,
      # scope: self, ...)</tt>); see Sandbox#execute.
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow process execute" and the errors of
      # Sandbox#execute_program.
      #
      #   scope.execute("ls | wc -l", timeout: 5).stdout   # => "1\n"

      ##
      # :method: execute_program
      # :call-seq:
      #   execute_program(argv, timeout:, **options) -> Execution
      #
      # Runs +argv+ (no shell) within this scope: an isolated backend shows the child only this scope's grants and
      # network. Takes the options of Sandbox#execute_program except +scope+.
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow process execute" and the errors of
      # Sandbox#execute_program.
      #
      #   scope.execute_program(["cat", "source/app.rb"], timeout: 5).stdout   # => "puts 1\n"

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, **options) -> ProcessSession
      #
      # Starts +argv+ as a ProcessSession within this scope; takes the options of Sandbox#start_program except
      # +scope+. The session belongs to the sandbox (closing the sandbox closes it).
      #
      # Raises LittleGhost::ToolError "Sandbox scope does not allow process execute" and the errors of
      # Sandbox#start_program.
      #
      #   session = scope.start_program(["cat"])
      #   session.close

      ##
      # :method: scope
      # :call-seq:
      #   scope(files: nil, runtime_paths: nil, capabilities: nil, network: nil) -> Scope
      #
      # A nested scope that narrows this one's current grants, capabilities and network (keywords as in
      # Sandbox#scope; profiles resolve only on the sandbox).
      #
      # Raises LittleGhost::CapabilityError when the request would widen this scope.
      #
      #   readonly = scope.scope(files: {root: :read_only})
      #   readonly.writable?   # => false

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #
      # Returns self: a scope owns nothing, and opening it never touches its sandbox.
      #
      #   scope.open.equal?(scope)   # => true

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Returns nil: a scope owns nothing; close the sandbox to end the processes started through it.
      #
      #   scope.close   # => nil

      ##
      # :method: validate!
      # :call-seq:
      #   validate! -> self
      #
      # Checks that no grant directory was replaced, moved or removed since the scope was built.
      #
      # Raises LittleGhost::CapabilityError "sandbox scope mount source changed after initialization".
      #
      #   scope.validate!   # => scope

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # A short description listing the scope's grant targets and access.
      #
      #   scope.inspect   # => "#<LittleGhost::Sandbox::Scope grants=[/srv/agent/source:read_only]>"
    end
  end
end
