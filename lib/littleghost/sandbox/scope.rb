# frozen_string_literal: true

#--
# The Ruby-shaped part of LittleGhost::Sandbox::Scope: its process methods hand the program to the sandbox, told
# which scope narrows it (SC.14); a streaming block goes along. Construction, the file operations and every rule
# are the Rust extension's. The documentation is in documentation/scope.rb.
#++
module LittleGhost
  class Sandbox
    class Scope
      %i[execute execute_program start_program].each do |operation|
        define_method(operation) do |command, **options, &block|
          raise ToolError, "Sandbox scope does not allow process execute" unless supports?(:process_execute)

          sandbox.send(operation, command, **options, scope: self, &block)
        end
      end
    end
  end
end
