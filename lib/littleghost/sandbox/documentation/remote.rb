# frozen_string_literal: true

#--
# Documentation only: the methods of LittleGhost::Sandboxes::Remote that the Rust extension defines
# (ruby_api/remote.rs, remote_session.rs). The class itself, its keywords and Remote::Scope are in
# lib/littleghost/sandbox/remote.rb. This file defines nothing.
#++

module LittleGhost
  module Sandboxes
    class Remote < LittleGhost::Sandbox
      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> block's value
      #
      # Reaches the daemon (its <tt>/v1/metadata</tt>: the address and the token work) and starts streaming its
      # denials into #denials and #on_denial. Every operation does this first, so calling it is optional; it is how
      # to find a wrong address or token before the first tool call. Raises LittleGhost::DependencyError when the
      # daemon cannot be reached or refuses the token. With a block, always closes.
      #
      #   sandbox.open.capabilities.isolation   # => :landlock (or :bubblewrap: the daemon's backend)

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Ends every session this sandbox started (the daemon ends their programs: TERM, then KILL), and stops the
      # denial stream after delivering what arrived.
      #
      #   session = sandbox.start_program(["sleep", "60"])
      #   sandbox.close
      #   session.alive?   # => false

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # What the daemon says it enforces (<tt>/v1/metadata</tt>, fetched once): the file operations and
      # <tt>:process_execute</tt> (and, for littleghost-sandboxd, <tt>:process_spawn</tt> and
      # <tt>:process_tree_ownership</tt>), its one network mode, and its backend as +isolation+ (<tt>:none</tt> for
      # a daemon that does not say, such as agent-sandbox's reference sandboxd, which confines nothing).
      #
      #   sandbox.capabilities.network_modes   # => [:none]

      ##
      # :method: read
      # :call-seq:
      #   read(path, context: nil) -> String
      #
      # The UTF-8 text of the file at +path+ (relative to the daemon's root), read by the daemon's broker (SPEC
      # 14.8). An absolute path raises LittleGhost::ToolError before anything is sent; the daemon's refusals
      # (traversal, a symlink, the read limit) raise LittleGhost::ToolError with its message.
      #
      #   sandbox.read("notes.md")   # => "alpha"

      ##
      # :method: list
      # :call-seq:
      #   list(path = ".", context: nil) -> String
      #
      # The names in the directory at +path+, a directory's with a trailing <tt>/</tt>, sorted, one a line (SPEC
      # 14.9).
      #
      #   sandbox.list   # => "notes.md\nsrc/"

      ##
      # :method: write
      # :call-seq:
      #   write(path, content, context: nil) -> String
      #
      # Writes +content+ atomically through the daemon (an HTTP PUT; missing parent directories are made, as the
      # protocol says). Refused writes (a read-only grant, a symlink, the write limit) raise LittleGhost::ToolError.
      #
      #   sandbox.write("notes.md", "alpha")   # => "Wrote 5 bytes to notes.md"

      ##
      # :method: replace
      # :call-seq:
      #   replace(path, old_text, new_text, context: nil) -> String
      #
      # Replaces the single occurrence of +old_text+ (SPEC 14.11): a read and an atomic write, two calls, so a write
      # by someone else between them is lost.
      #
      #   sandbox.replace("notes.md", "alpha", "beta")   # => "Wrote 4 bytes to notes.md"

      ##
      # :method: execute_program
      # :call-seq:
      #   execute_program(command, timeout:, context: nil, max_output_bytes: nil, environment: {}, cwd: nil) -> Execution
      #
      # Runs +command+ (an argv, no shell) on the daemon, confined by its policy: one gRPC +Execute+ whose deadline is
      # +timeout+; at it the daemon ends the program and LittleGhost::ToolError "Command timed out after T seconds"
      # is raised. Each stream is cut at +max_output_bytes+ (default <tt>limits.output_bytes</tt>) with the
      # <tt>[output truncated]</tt> marker. +exit_code+ is the daemon's: 128 + N for a program signal N ended. With a
      # block, each stream is yielded once the run ended. Per-call launch limits (+memory_bytes+, +cpu_seconds+,
      # +tasks+, +allow_subprocesses+...) and <tt>inherit_environment: true</tt> raise LittleGhost::CapabilityError:
      # the daemon's <tt>--policy</tt> sets them.
      #
      #   sandbox.execute_program(["echo", "hi"], timeout: 10).stdout   # => "hi\n"

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(command, context: nil, environment: {}, cwd: nil) -> Remote::Session
      #
      # Starts +command+ on the daemon (gRPC +Start+) and returns its Session, owned by this sandbox: #close ends it.
      #
      #   session = sandbox.start_program(["cat"])
      #   session.write("hi\n")
      #   session.close_write
      #   session.wait(timeout: 5).exitstatus   # => 0

      # Internal: the sandbox's client of the daemon (its endpoint, the denial stream, the sessions it started),
      # held by the Rust extension in the sandbox's hidden backend slot. It has no methods and cannot be made from
      # Ruby.
      #
      #   sandbox.instance_variables   # => [] (the connection is no instance variable)
      class Connection
      end

      # A program started on the daemon by Remote#start_program, with the ProcessSession methods sandboxd's
      # protocol can carry. Its output arrives on the gRPC stream as the program prints; closing it drops the
      # stream, and the daemon ends the program.
      #
      #   session = sandbox.start_program(["cat"])
      #   session.write("hi\n")
      #   session.close_write
      #   session.read(timeout: 5).stdout   # => "hi\n"
      class Session
        ##
        # :method: pid
        # :call-seq:
        #   pid -> Integer
        #
        # The process id the daemon gave (its InitEvent), on the daemon's host.
        #
        #   session.pid   # => 4242

        ##
        # :method: alive?
        # :call-seq:
        #   alive? -> true or false
        #
        # False once the daemon reported the program's exit (or the session was closed).
        #
        #   session.alive?   # => true

        ##
        # :method: write
        # :call-seq:
        #   write(value) -> Integer
        #
        # Writes <tt>value.to_s</tt> to the program's stdin (gRPC +WriteStdin+); returns its byte size. IOError once
        # the session is closed.
        #
        #   session.write("hi\n")   # => 3

        ##
        # :method: close_write
        # :call-seq:
        #   close_write -> nil
        #
        # Closes the program's stdin: it reads end of file.
        #
        #   session.close_write

        ##
        # :method: read
        # :call-seq:
        #   read(timeout: 0) -> ProcessSession::Chunk
        #
        # What the program printed since the last read, waiting up to +timeout+ seconds for something; +eof+ is true
        # once it ended and everything was read.
        #
        #   session.read(timeout: 1).stdout   # => "hi\n"

        ##
        # :method: wait
        # :call-seq:
        #   wait(timeout: nil, context: nil, terminate: false) -> ProcessSession::Status or nil
        #
        # Waits for the program's end; nil when +timeout+ passed first (after ending it, with
        # <tt>terminate: true</tt>). The status's +exitstatus+ is the daemon's exit code.
        #
        #   session.wait(timeout: 5).exitstatus   # => 0

        ##
        # :method: terminate
        # :call-seq:
        #   terminate -> ProcessSession::Status
        #
        # SIGTERM to the program's group, SIGKILL after 0.5 s (SPEC 17.12, over the protocol's +SendSignal+).
        #
        #   session.terminate.exitstatus   # => 143

        ##
        # :method: close
        # :call-seq:
        #   close -> nil
        #
        # Drops the stream; the daemon ends the program. Later writes raise IOError.
        #
        #   session.close

        ##
        # :method: closed?
        # :call-seq:
        #   closed? -> true or false
        #
        # Whether #close was called.
        #
        #   session.closed?   # => false

        ##
        # :method: inspect
        # :call-seq:
        #   inspect -> String
        #
        # The pid and whether it runs, ended or was closed.
        #
        #   session.inspect   # => "#<LittleGhost::Sandboxes::Remote::Session pid=4242 running>"
      end

      class Scope
        ##
        # :method: read
        # :call-seq:
        #   read(path, context: nil) -> String
        #
        # Remote#read with this scope's narrowings; LittleGhost::ToolError when the scope lacks
        # <tt>:filesystem_read</tt>.
        #
        #   sandbox.scope(capabilities: [:read]).read("notes.md")   # => "alpha"

        ##
        # :method: list
        # :call-seq:
        #   list(path = ".", context: nil) -> String
        #
        # Remote#list with this scope's narrowings.
        #
        #   sandbox.scope(capabilities: [:list]).list   # => "notes.md"

        ##
        # :method: write
        # :call-seq:
        #   write(path, content, context: nil) -> String
        #
        # Remote#write with this scope's narrowings; LittleGhost::ToolError when the scope lacks
        # <tt>:filesystem_write</tt>, or when the daemon refuses it (a <tt>files: {root: :read_only}</tt> narrowing).
        #
        #   sandbox.scope(capabilities: [:read]).write("notes.md", "x")
        #   # LittleGhost::ToolError: Sandbox scope does not allow filesystem write

        ##
        # :method: replace
        # :call-seq:
        #   replace(path, old_text, new_text, context: nil) -> String
        #
        # Remote#replace with this scope's narrowings.
        #
        #   sandbox.scope(capabilities: [:replace]).replace("notes.md", "alpha", "beta")

        ##
        # :method: execute_program
        # :call-seq:
        #   execute_program(command, timeout:, **options) -> Execution
        #
        # Remote#execute_program with this scope's narrowings; LittleGhost::ToolError when the scope lacks
        # <tt>:process_execute</tt>.
        #
        #   sandbox.scope(network: :none).execute_program(["true"], timeout: 5).success?   # => true

        ##
        # :method: start_program
        # :call-seq:
        #   start_program(command, **options) -> Remote::Session
        #
        # Remote#start_program with this scope's narrowings.
        #
        #   sandbox.scope(capabilities: [:execute]).start_program(["cat"])
      end
    end
  end
end
