# frozen_string_literal: true

module LittleGhost
  class Sandbox
    # :call-seq:
    #   execute(command, timeout:, context: nil, max_output_bytes: nil, **options) -> Execution
    #
    # Runs the String +command+ through <tt>/bin/sh -c</tt>, by calling #execute_program; the only method that
    # interprets shell syntax. Prefer #execute_program for model-controlled arguments. Takes the same options and
    # raises the same errors as #execute_program.
    #
    #   sandbox.execute("echo $((1 + 2)) | tr 3 x", timeout: 5).stdout   # => "x\n"
    def execute(command, timeout:, context: nil, max_output_bytes: nil, **options)
      execute_program(["/bin/sh", "-c", String(command)],
        timeout: timeout, context: context, max_output_bytes: max_output_bytes, **options)
    end
  end
end
