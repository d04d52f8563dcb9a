# frozen_string_literal: true

module LittleGhost
  class Sandbox
    # :call-seq:
    #   execute(command, timeout:, context: nil, max_output_bytes: nil, **options) -> Execution
    #   execute(command, timeout:, **options) { |stream, chunk| ... } -> Execution
    #
    # Runs the String +command+ through <tt>/bin/sh -c</tt>, by calling #execute_program with +timeout+,
    # +context+ and +max_output_bytes+ always passed (a Ruby provider's #execute_program sees them) and the other
    # options as given; the only method that interprets shell syntax. Prefer #execute_program for model-controlled
    # arguments. Takes the same options (+output_bytes+ is the same bound as +max_output_bytes+), streams to a
    # block as #execute_program does, and raises the same errors.
    #
    #   sandbox.execute("echo $((1 + 2)) | tr 3 x", timeout: 5).stdout   # => "x\n"
    def execute(command, timeout:, context: nil, max_output_bytes: nil, **options, &block)
      execute_program(["/bin/sh", "-c", String(command)],
                      timeout: timeout, context: context, max_output_bytes: max_output_bytes, **options, &block)
    end
  end
end
