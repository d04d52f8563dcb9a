# frozen_string_literal: true

#--
# The Ruby-shaped part of LittleGhost::Sandbox::Scope: its process methods hand the program to the sandbox, told
# which scope narrows it (SC.14; a streaming block goes along); #scope
# builds a nested scope through the class's own new (a subclass may override initialize); #open and #close touch
# nothing, since a scope owns nothing. Construction, the file operations and every rule are the Rust extension's.
# The documentation is in documentation/scope.rb.
#++
module LittleGhost
  class Sandbox
    class Scope
      %i[execute execute_program start_program].each do |operation|
        define_method(operation) do |command, **options, &block|
          raise ToolError, "Sandbox scope does not allow process execute" unless supports?(:process_execute)

          sandbox.__send__(operation, command, **options, scope: self, &block)
        end
      end

      # Without a block, self; with one, yields self, closes and returns the block's value. When both the block and
      # close raise, the block's exception wins (as for Sandbox#open).
      def open(run: nil) # :nodoc:
        return self unless block_given?

        finished = false
        begin
          result = yield self
          finished = true
          result
        ensure
          begin
            close
          rescue Exception # rubocop:disable Lint/RescueException
            raise if finished # otherwise the block's exception (or its break) wins
          end
        end
      end

      def close # :nodoc:
        nil
      end

      def scope(files: nil, runtime_paths: nil, capabilities: nil, network: nil) # :nodoc:
        self.class.new(sandbox: sandbox, parent_scope: self, files: files, runtime_paths: runtime_paths,
          capabilities: capabilities, network: network)
      end
    end
  end
end
