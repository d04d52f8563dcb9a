# frozen_string_literal: true

#--
# The Ruby-shaped part of the LittleGhost::Sandbox base class: questions answered from #capabilities and #scope,
# and the operations a backend must implement. State, construction, scopes and the provider registry are the Rust
# extension's; every call here goes through Ruby dispatch, so a subclass's overrides win. The documentation is in
# documentation/sandbox.rb.
#++
module LittleGhost
  class Sandbox
    def supports?(feature, value = nil) # :nodoc:
      capabilities.supports?(feature, value)
    end

    def writable? # :nodoc:
      supports?(:filesystem_write) ? true : false
    end

    def allows?(operation, path = nil) # :nodoc:
      # A wrong type is misuse, not a path problem: it raises (H.6).
      unless path.nil? || path.is_a?(String) || (path.respond_to?(:to_path) && path.to_path.is_a?(String))
        raise TypeError, "path must be a String or respond to to_path (got #{path.class})"
      end

      begin
        (path.nil? ? supports?(operation) : scope.allows?(operation, path)) ? true : false
      rescue StandardError
        false
      end
    end

    %i[read list write replace execute_program start_program].each do |operation|
      define_method(operation) do |*, **|
        raise AbstractMethodError, "#{self.class.name || self.class.inspect} does not implement #{operation}"
      end
    end

    class Denial
      private_class_method :new

      def to_h # :nodoc:
        fields = {kind: kind, operation: operation, target: target, reason: reason, message: message, time: time}
        fields = fields.merge(method: http_method, path: path) if http_method
        detail ? fields.merge(detail: detail) : fields
      end
    end
  end
end
