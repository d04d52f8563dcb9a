# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Network::Gateway and ExternalGateway are defined by the Rust extension. This file
# defines nothing.
#++

module LittleGhost
  # Network gateways (SPEC §20): what enforces a <tt>network: {mode: :allowlist}</tt> policy.
  module Network
    # The gateway protocol's no-op base (SPEC G.2). Subclass it, or give any object answering +open+ and +close+.
    #
    #   gateway = LittleGhost::Network::Gateway.new
    #   gateway.open(run: nil).environment   # => {}
    class Gateway
      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #
      # Starts what the gateway needs; the base owns nothing and returns self.
      #
      #   gateway.open(run: run)   # => gateway

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Stops the gateway; idempotent. The base does nothing.
      #
      #   gateway.close   # => nil

      ##
      # :method: validate!
      # :call-seq:
      #   validate! -> self
      #
      # Called before every launch; raises when the gateway is not ready. The base is always ready.
      #
      #   gateway.validate!   # => gateway

      ##
      # :method: environment
      # :call-seq:
      #   environment -> Hash
      #
      # The child's proxy variables (frozen String => String); empty in the base.
      #
      #   gateway.environment   # => {}

      ##
      # :method: mounts
      # :call-seq:
      #   mounts -> Array
      #
      # Read-only mount declarations the child needs for the proxy socket; empty in the base.
      #
      #   gateway.mounts   # => []

      ##
      # :method: proxy_mount_path
      # :call-seq:
      #   proxy_mount_path -> String or nil
      #
      # The proxy socket's path inside the sandbox; nil in the base.
      #
      #   gateway.proxy_mount_path   # => nil

      ##
      # :method: client_network
      # :call-seq:
      #   client_network -> Symbol
      #
      # What the child's own sockets reach: <tt>:none</tt>, the gateway being the only way out (G.1).
      #
      #   gateway.client_network   # => :none
    end

    # A gateway whose proxy the application runs itself (SPEC G.4), reached through a socket under one of the
    # sandbox's runtime paths. LittleGhost pins those directories at #open and refuses a launch after one was
    # swapped; it does not vouch for the proxy (the application's +validate+ callable does).
    #
    #   gateway = LittleGhost::Network::ExternalGateway.new(
    #     policy: policy, workspace: workspace, runtime_paths: [:proxy],
    #     proxy_mount_path: File.join(workspace.path(:proxy), "envoy.sock"),
    #     environment: {HTTPS_PROXY: "http://127.0.0.1:3128"}, validate: -> { File.socket?(path) or raise "down" }
    #   )
    class ExternalGateway < Gateway
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(policy:, workspace:, runtime_paths:, proxy_mount_path:, environment: {}, validate: nil) -> gateway
      #
      # Each runtime path name (through +to_sym+) is looked up with <tt>workspace.path</tt> (KeyError when unknown);
      # +proxy_mount_path+ is expanded; +environment+ goes through EnvironmentPolicy.coerce.
      #
      # Raises LittleGhost::PolicyError "external gateway runtime_paths cannot be empty", "... must be inside a
      # runtime path", "external gateway validate must be nil or respond to call".
      #
      #   LittleGhost::Network::ExternalGateway.new(policy: policy, workspace: workspace, runtime_paths: [:proxy],
      #                                             proxy_mount_path: "/srv/proxy/envoy.sock")

      ##
      # :method: policy
      # :call-seq:
      #   policy -> Object
      #
      # The policy given; at #open its +runtime_paths+ (when it answers that) must grant every runtime path name.
      #
      #   gateway.policy   # => #<LittleGhost::Sandbox::Policy ...>

      ##
      # :method: workspace
      # :call-seq:
      #   workspace -> Workspace
      #
      # The workspace the runtime path names belong to.
      #
      #   gateway.workspace.path(:proxy)

      ##
      # :method: runtime_paths
      # :call-seq:
      #   runtime_paths -> Array
      #
      # The runtime path names, as frozen Symbols.
      #
      #   gateway.runtime_paths   # => [:proxy]

      ##
      # :method: proxy_mount_path
      # :call-seq:
      #   proxy_mount_path -> String
      #
      # The expanded proxy socket path; no path is remapped, so it is the same inside the sandbox.
      #
      #   gateway.proxy_mount_path   # => "/srv/proxy/envoy.sock"

      ##
      # :method: environment
      # :call-seq:
      #   environment -> Hash
      #
      # The child's variables, as the application gave them (frozen String => String).
      #
      #   gateway.environment   # => {"HTTPS_PROXY" => "http://127.0.0.1:3128"}

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #
      # Checks the names are runtime path grants of #policy, then pins each root's (realpath, device, inode).
      #
      # Raises LittleGhost::PolicyError "external gateway runtime paths are not process grants: :name" or "... is not
      # a directory"; LittleGhost::DependencyError "... is missing".
      #
      #   gateway.open   # => gateway

      ##
      # :method: open?
      # :call-seq:
      #   open? -> true or false
      #
      # Whether #open pinned the roots and #close has not run since.
      #
      #   gateway.open?   # => false

      ##
      # :method: validate!
      # :call-seq:
      #   validate! -> self
      #
      # Re-checks the pinned roots, then calls the application's validator (<tt>call()</tt>, or
      # <tt>call(gateway)</tt> when it takes an argument).
      #
      # Raises LittleGhost::DependencyError "external gateway runtime path changed after opening" or "external
      # gateway is not open", and whatever the validator raises.
      #
      #   gateway.validate!   # => gateway

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Forgets the pins; idempotent.
      #
      #   gateway.close   # => nil
    end
  end
end
