# frozen_string_literal: true

#--
# The no-op base of the gateway protocol (SPEC G.2): a gateway that owns nothing and lets the child's own sockets
# reach nothing. ExternalGateway and BuiltinGateway (Rust) override what they provide. The documentation is in
# documentation/network_gateway.rb.
#++
module LittleGhost
  module Network
    class Gateway
      def open(run: nil) = self # :nodoc:
      def close = nil # :nodoc:
      def validate! = self # :nodoc:
      def environment = {}.freeze # :nodoc:
      def mounts = [].freeze # :nodoc:
      def proxy_mount_path = nil # :nodoc:
      def client_network = :none # :nodoc:
    end
  end
end
