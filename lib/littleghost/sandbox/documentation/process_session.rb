# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::ProcessSession, its Chunk and its Status are defined by the Rust
# extension (Chunk's Data protocol beyond its readers by lib/littleghost/sandbox/data_like.rb). This file defines
# nothing.
#++

module LittleGhost
  class Sandbox
    # A long-lived child with stdin, bounded output and supervision, started by Sandbox#start_program (or directly,
    # on the host, with ::new). The session owns the child's whole process group: #close (or closing the sandbox)
    # terminates it, and so does garbage collection of a forgotten session. Output is drained in the background, so
    # a child never blocks on a full pipe; stdout and stderr together are bounded by +output_bytes+.
    #
    #   session = sandbox.start_program(["sh", "-c", "read line; echo got $line"])
    #   begin
    #     session.write("ping\n")
    #     session.close_write
    #     session.read(timeout: 1).stdout   # => "got ping\n"
    #     session.wait(timeout: 5).exitstatus # => 0
    #   ensure
    #     session.close
    #   end
    class ProcessSession
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(command:, environment: {}, inherit_environment: false, chdir: nil, output_bytes: 1_000_000, memory_bytes: nil, memory_reader: nil, cpu_seconds: nil, file_bytes: nil) -> session
      #
      # Spawns +command+ (an argv Array, no shell) <b>on the host, unsandboxed</b>, in a new process group, with an
      # empty environment plus +environment+ (or the host's under it when +inherit_environment+). Backends use it;
      # application code should call Sandbox#start_program. +memory_reader+ is any callable <tt>(pid) -> bytes</tt>
      # replacing the default <tt>/proc</tt> sampler.
      #
      # Raises LittleGhost::ToolError "Command must contain an executable", Errno::ENOENT for a missing program,
      # ArgumentError for a non-positive limit, LittleGhost::DependencyError "process memory supervision requires
      # /proc".
      #
      #   session = LittleGhost::Sandbox::ProcessSession.new(command: ["cat"], output_bytes: 65_536)

      ##
      # :method: pid
      # :call-seq:
      #   pid -> Integer
      #
      # The child's process id, which is also its process group id.
      #
      #   session.pid   # => 12345

      ##
      # :method: alive?
      # :call-seq:
      #   alive? -> true or false
      #
      # True while the child or any member of its process group is still running (a child that exited while its
      # own child runs is still alive). False once Sandbox#start_program's +timeout+ passed or the sandbox was
      # closed (the next #read or #wait says which).
      #
      # Raises a recorded supervision error first: LittleGhost::Sandbox::LimitError "Program memory exceeded N
      # bytes", "Program CPU time exceeded N seconds" or "Program output exceeded N bytes", each carrying in its
      # +execution+ the output no #read returned and how the program ended; LittleGhost::ToolError "Program memory
      # supervisor failed (Class)".
      #
      #   session.alive?   # => true

      ##
      # :method: write
      # :call-seq:
      #   write(data) -> Integer
      #
      # Writes <tt>String(data)</tt> to the child's stdin and returns the number of bytes written.
      #
      # Raises IOError "process session is closed" after #close, and IOError "sandboxed process has exited" once
      # the program has exited or closed its stdin (a write can race the program's end: rescue IOError when
      # feeding a program that may finish first).
      #
      #   session.write("ping\n")   # => 5

      ##
      # :method: close_write
      # :call-seq:
      #   close_write -> nil
      #
      # Closes the child's stdin so it reads end of file; idempotent.
      #
      #   session.close_write   # => nil

      ##
      # :method: read
      # :call-seq:
      #   read(timeout: 0) -> Chunk
      #
      # Collects the output that arrives within +timeout+ seconds (0: what is there now) and returns a Chunk of raw
      # bytes; <tt>chunk.eof</tt> is true once the child is gone and both streams are closed.
      #
      # Raises LittleGhost::Sandbox::LimitError "Program output exceeded N bytes" once the combined output passes
      # +output_bytes+: the group is terminated and the error's +execution+ holds what no read returned, up to
      # the bound (a ToolError, recorded: later calls raise it again). LittleGhost::Sandbox::TimeoutError once
      # Sandbox#start_program's +timeout+ passed (its +execution+ holds the output not read yet). Also the
      # supervision errors of #alive?; ArgumentError for a negative or infinite timeout.
      #
      #   chunk = session.read(timeout: 0.5)
      #   chunk.stdout   # => "got ping\n"
      #   chunk.eof      # => true

      ##
      # :method: wait
      # :call-seq:
      #   wait(timeout: nil, context: nil, terminate: true) -> Status or nil
      #
      # Waits until the child and its process group are gone, calling <tt>context.check!</tt> about every 10 ms, and
      # returns the leader's Status. It does not collect output: use #read for that. On a timeout or an exception it
      # terminates the group (unless <tt>terminate: false</tt>) and raises.
      #
      # Raises LittleGhost::ToolError "Program timed out after SECONDS seconds" when this wait's +timeout+ passes,
      # LittleGhost::Sandbox::TimeoutError once Sandbox#start_program's +timeout+ (the session's whole life)
      # passed, the supervision errors of #alive?, and whatever <tt>context.check!</tt> raises.
      #
      #   session.wait(timeout: 5).success?   # => true

      ##
      # :method: terminate
      # :call-seq:
      #   terminate -> Status or nil
      #
      # Sends TERM to the process group, KILL after 0.5 s of grace, reaps the leader and returns its Status.
      #
      #   session.terminate.termsig   # => 15

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Terminates the group if alive, stops supervision and closes every pipe. Idempotent; whoever starts a
      # session must close it. A limit that ended the session and that no call reported yet (say output passed
      # its bound while nobody read) is recorded here: the sandbox gets its one +:limit+ Denial, never a second.
      #
      #   session.close
      #   session.closed?   # => true

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
      # The pid, whether the child is alive (leader unreaped or any group member running), "closed" once #close
      # ran, and the command; never raises.
      #
      #   session.inspect   # => "#<LittleGhost::Sandbox::ProcessSession pid=4242 alive=true command=[\"cat\"]>"

      # The output of one ProcessSession#read: a frozen, Data-like value with the members +stdout+ and +stderr+ (raw
      # bytes, possibly empty) and +eof+.
      #
      #   chunk = session.read(timeout: 1)
      #   print chunk.stdout
      #   done = chunk.eof
      class Chunk
        ##
        # :singleton-method: new
        # :call-seq:
        #   new(stdout:, stderr:, eof:) -> chunk
        #   new(stdout, stderr, eof) -> chunk
        #
        # A frozen Chunk.
        #
        #   LittleGhost::Sandbox::ProcessSession::Chunk.new(stdout: "x", stderr: "", eof: false)


        ##
        # :method: stdout
        # :call-seq:
        #   stdout -> String
        #
        # Bytes read from the child's stdout in this call.
        #
        #   chunk.stdout   # => "got ping\n"

        ##
        # :method: stderr
        # :call-seq:
        #   stderr -> String
        #
        # Bytes read from the child's stderr in this call.
        #
        #   chunk.stderr   # => ""

        ##
        # :method: eof
        # :call-seq:
        #   eof -> true or false
        #
        # True once the child is gone and both streams reached end of file: no more output will come.
        #
        #   chunk.eof   # => true

        ##
        # :method: members
        # :call-seq:
        #   members -> Array of Symbol
        #   LittleGhost::Sandbox::ProcessSession::Chunk.members -> Array of Symbol
        #
        # The member names.
        #
        #   chunk.members   # => [:stdout, :stderr, :eof]

        ##
        # :method: to_h
        # :call-seq:
        #   to_h -> Hash
        #   to_h { |name, value| [key, value] } -> Hash
        #
        # The members as a Hash.
        #
        #   chunk.to_h   # => {stdout: "x", stderr: "", eof: false}

        ##
        # :method: with
        # :call-seq:
        #   with(**members) -> Chunk
        #
        # A copy with the given members replaced.
        #
        #   chunk.with(eof: true).eof   # => true

        ##
        # :method: ==
        # :call-seq:
        #   chunk == other -> true or false
        #
        # Same class and every member ==.
        #
        #   chunk == chunk.with   # => true

        ##
        # :method: eql?
        # :call-seq:
        #   eql?(other) -> true or false
        #
        # Same class and every member eql?.
        #
        #   chunk.eql?(chunk.with)   # => true

        ##
        # :method: hash
        # :call-seq:
        #   hash -> Integer
        #
        # A hash consistent with #eql?.
        #
        #   chunk.hash == chunk.with.hash   # => true

        ##
        # :method: inspect
        # :call-seq:
        #   inspect -> String
        #
        # Like Data#inspect.
        #
        #   chunk.inspect   # => "#<data LittleGhost::Sandbox::ProcessSession::Chunk stdout=\"x\", stderr=\"\", eof=false>"

        ##
        # :method: to_s
        # :call-seq:
        #   to_s -> String
        #
        # Same as #inspect.
        #
        #   chunk.to_s == chunk.inspect   # => true

        ##
        # :method: deconstruct
        # :call-seq:
        #   deconstruct -> Array
        #
        # The member values, for array patterns.
        #
        #   case chunk
        #   in [out, "", true] then out
        #   end

        ##
        # :method: deconstruct_keys
        # :call-seq:
        #   deconstruct_keys(keys) -> Hash
        #
        # The requested members, for hash patterns.
        #
        #   case chunk
        #   in {eof: true} then :done
        #   end
      end

      # The wait status of a session's leader, returned by ProcessSession#wait and ProcessSession#terminate; it
      # answers like Process::Status.
      #
      #   status = session.wait(timeout: 5)
      #   status.exited? ? status.exitstatus : status.termsig
      class Status
        ##
        # :method: pid
        # :call-seq:
        #   pid -> Integer
        #
        # The process id of the session's leader.
        #
        #   status.pid == session.pid   # => true

        ##
        # :method: to_i
        # :call-seq:
        #   to_i -> Integer or nil
        #
        # The raw wait status, or nil if another waiter reaped the child.
        #
        #   status.to_i   # => 0

        ##
        # :method: exitstatus
        # :call-seq:
        #   exitstatus -> Integer or nil
        #
        # The exit status, or nil if the child did not exit normally.
        #
        #   status.exitstatus   # => 0

        ##
        # :method: success?
        # :call-seq:
        #   success? -> true, false or nil
        #
        # True for exit status 0, false for another, nil when the child did not exit (a signal killed it).
        #
        #   status.success?   # => true

        ##
        # :method: exited?
        # :call-seq:
        #   exited? -> true or false
        #
        # Whether the child exited normally.
        #
        #   status.exited?   # => true

        ##
        # :method: signaled?
        # :call-seq:
        #   signaled? -> true or false
        #
        # Whether a signal killed the child.
        #
        #   session.terminate.signaled?   # => true

        ##
        # :method: termsig
        # :call-seq:
        #   termsig -> Integer or nil
        #
        # The signal that killed the child, or nil.
        #
        #   session.terminate.termsig   # => 15

        ##
        # :method: stopped?
        # :call-seq:
        #   stopped? -> false
        #
        # Always false: sessions never report stopped children.
        #
        #   status.stopped?   # => false

        ##
        # :method: inspect
        # :call-seq:
        #   inspect -> String
        #
        # The pid and how the child ended.
        #
        #   status.inspect   # => "#<LittleGhost::Sandbox::ProcessSession::Status: pid 12345 exit 0>"

        ##
        # :method: to_s
        # :call-seq:
        #   to_s -> String
        #
        # Same as #inspect.
        #
        #   puts status

        ##
        # :method: ==
        # :call-seq:
        #   status == other -> true or false
        #
        # Equal to a Status with the same pid and raw status, or to an Integer equal to #to_i.
        #
        #   status == 0   # => true after exit 0
      end
    end

    # Runs a host argument vector to completion, without a shell and <b>without isolation</b>: the process runner
    # behind Sandbox#execute_program. Backends use it to launch their wrapper; application code should go through a
    # Sandbox.
    module ProcessRunner
      ##
      # :singleton-method: run
      # :call-seq:
      #   run(command:, timeout:, context: nil, max_output_bytes: 1_000_000, environment: {}, inherit_environment: false, chdir: nil) -> Execution
      #
      # Runs +command+ (an argv Array) on the host with closed stdin, a new process group, only +environment+ (plus
      # the host's when +inherit_environment+) and +chdir+, and returns its Execution; output is bounded and scrubbed
      # as in Sandbox#execute_program, and no member of the group is left running.
      #
      # Raises LittleGhost::ToolError "Command timed out after SECONDS seconds", "Command must contain an
      # executable"; ArgumentError "timeout must be positive"; what <tt>context.check!</tt> raises.
      #
      #   LittleGhost::Sandbox::ProcessRunner.run(command: ["echo", "hi"], timeout: 5).stdout   # => "hi\n"
    end
  end
end
