# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::Execution is defined by the Rust extension (its storage, readers and
# #success?) and lib/littleghost/sandbox/data_like.rb (the rest of its Data protocol). This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # The result of a finished program (Sandbox#execute_program, Sandbox#execute, ProcessRunner.run): a frozen,
    # Data-like value with the members +stdout+, +stderr+, +exit_code+ and +error+, plus a +signal+ reader outside
    # the members. It behaves like a +Data+ class on every Ruby: keyword or positional constructor, ==, #to_h,
    # #with, pattern matching.
    #
    #   result = sandbox.execute_program(["sh", "-c", "echo out; echo err >&2; exit 2"], timeout: 10)
    #   result.stdout     # => "out\n"
    #   result.stderr     # => "err\n"
    #   result.exit_code  # => 2
    #   result.success?   # => false
    #
    #   case result
    #   in {exit_code: 0, stdout:} then puts stdout
    #   in {exit_code: nil} then warn "killed by signal #{result.signal}"
    #   else warn result.stderr
    #   end
    class Execution
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(stdout:, stderr:, exit_code:, error: nil, signal: nil) -> execution
      #   new(stdout, stderr, exit_code, error = nil) -> execution
      #
      # A frozen Execution; Strings are frozen copies.
      #
      # Raises ArgumentError for a missing or unknown member.
      #
      #   LittleGhost::Sandbox::Execution.new(stdout: "ok\n", stderr: "", exit_code: 0).success?   # => true


      ##
      # :method: stdout
      # :call-seq:
      #   stdout -> String
      #
      # The child's standard output as UTF-8 (invalid bytes replaced by U+FFFD), at most +max_output_bytes+ followed
      # by <tt>"\n[output truncated]"</tt> when more was written.
      #
      #   sandbox.execute_program(["echo", "hi"], timeout: 5).stdout   # => "hi\n"

      ##
      # :method: stderr
      # :call-seq:
      #   stderr -> String
      #
      # The child's standard error, bounded and scrubbed like #stdout. A missing program gives
      # <tt>"NAME: command not found\n"</tt>.
      #
      #   sandbox.execute_program(["nope"], timeout: 5).stderr   # => "nope: command not found\n"

      ##
      # :method: exit_code
      # :call-seq:
      #   exit_code -> Integer or nil
      #
      # The exit status, or nil when a signal killed the child (see #signal). 127: program not found; 126: not
      # executable.
      #
      #   sandbox.execute_program(["sh", "-c", "exit 3"], timeout: 5).exit_code   # => 3

      ##
      # :method: error
      # :call-seq:
      #   error -> Exception or nil
      #
      # An error a custom backend chose to return instead of raising; built-in backends always leave it nil (they
      # raise timeouts and cancellation).
      #
      #   result.error   # => nil

      ##
      # :method: signal
      # :call-seq:
      #   signal -> Integer or nil
      #
      # The number of the signal that killed the child, or nil. Not a member: outside #to_h, == and #inspect.
      #
      #   sandbox.execute_program(["sh", "-c", "kill -9 $$"], timeout: 5).signal   # => 9

      ##
      # :method: success?
      # :call-seq:
      #   success? -> true or false
      #
      # True when #error is nil and #exit_code is 0.
      #
      #   sandbox.execute_program(["true"], timeout: 5).success?   # => true

      ##
      # :method: members
      # :call-seq:
      #   members -> Array of Symbol
      #   LittleGhost::Sandbox::Execution.members -> Array of Symbol
      #
      # The member names (the class method answers the same; RDoc 6.4 cannot document both under one name).
      #
      #   result.members   # => [:stdout, :stderr, :exit_code, :error]

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #   to_h { |name, value| [key, value] } -> Hash
      #
      # The members as a Hash; a block maps each pair like Hash#to_h.
      #
      #   result.to_h   # => {stdout: "hi\n", stderr: "", exit_code: 0, error: nil}

      ##
      # :method: with
      # :call-seq:
      #   with(**members) -> Execution
      #
      # A copy with the given members replaced (self when none are given).
      #
      # Raises ArgumentError for an unknown member.
      #
      #   result.with(exit_code: 1).success?   # => false

      ##
      # :method: ==
      # :call-seq:
      #   execution == other -> true or false
      #
      # True when +other+ is of the same class and every member is ==.
      #
      #   result == result.with   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # True when +other+ is of the same class and every member is eql?.
      #
      #   result.eql?(result.with)   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash of the class and the member values, consistent with #eql?.
      #
      #   {result => 1}.key?(result.with)   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Like Data#inspect.
      #
      #   result.inspect
      #   # => "#<data LittleGhost::Sandbox::Execution stdout=\"hi\\n\", stderr=\"\", exit_code=0, error=nil>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts result   # prints #<data LittleGhost::Sandbox::Execution ...>

      ##
      # :method: deconstruct
      # :call-seq:
      #   deconstruct -> Array
      #
      # The member values in order, for array patterns.
      #
      #   case result
      #   in [out, "", 0, nil] then out
      #   end

      ##
      # :method: deconstruct_keys
      # :call-seq:
      #   deconstruct_keys(keys) -> Hash
      #
      # The requested members as a Hash (all of them for nil), for hash patterns.
      #
      #   case result
      #   in {exit_code: 0, stdout:} then stdout
      #   end
    end
  end
end
