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

    # The gem's own enforcing gateway (SPEC G.3, G.5, G.7), what Bubblewrap uses for <tt>gateway: nil</tt>,
    # +:builtin+ or +:envoy+. It serves HTTP +CONNECT+ and plain-HTTP forward requests on a Unix socket in a fresh
    # private directory, lets through exactly the allowlisted <tt>host:port</tt> pairs, resolves names itself,
    # refuses destinations in loopback, private and other reserved ranges unless +allow_private_destinations+, and
    # answers +403+ to everything else, recording a denial.
    #
    #   gateway = LittleGhost::Network::BuiltinGateway.new(allow: ["api.example.com:443"])
    #   gateway.open.proxy_mount_path   # => "/tmp/littleghost-gateways-0/littleghost-gateway-.../proxy.sock"
    #   gateway.close
    class BuiltinGateway < Gateway
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(allow:, secrets: nil, upstream_ca: nil, allow_private_destinations: false) -> gateway
      #
      # Checks every entry as NetworkPolicy.new does (a <tt>"host:port"</tt>, <tt>"*.suffix:port"</tt>,
      # <tt>"host:*"</tt> or <tt>"net/len:port"</tt> String, or a <tt>{destination:, inspect:, methods:, paths:}</tt>
      # Hash, G.7) and every secret (<tt>{name => {value:, destinations: [...]}}</tt>; each destination must be
      # covered by an entry). Each secret gets a random stand-in now: one per gateway, so one per sandbox (a sandbox
      # resolves its own gateway), kept across #close and a later #open. +upstream_ca+ (a PEM file of extra roots the
      # gateway trusts upstream) is read at each #open.
      #
      # An entry with <tt>inspect: true</tt> is TLS-inspected: the gateway makes its own CA at #open (the private key
      # only in memory, gone at #close), serves the child a certificate of that CA for the +CONNECT+ target (refusing a
      # TLS server name that names another host), and opens its own TLS connection to the destination, verifying its
      # certificate against the system's roots plus +upstream_ca+. Requests inside it are checked against the entry's
      # +methods+ and +paths+ and their secrets' stand-ins swapped, like plain HTTP. The child trusts the CA through
      # the bundle #environment points at.
      #
      # Raises LittleGhost::PolicyError naming a malformed entry or secret (never showing a value), or an IP-literal
      # entry in a refused range without +allow_private_destinations+; ArgumentError for an unknown key of an entry or
      # a secret. #open raises LittleGhost::PolicyError naming an +upstream_ca+ file that cannot be read or holds no
      # usable PEM certificate.
      #
      #   LittleGhost::Network::BuiltinGateway.new(allow: ["localhost:8080"], allow_private_destinations: true)
      #   LittleGhost::Network::BuiltinGateway.new(
      #     allow: [{destination: "api.github.com:443", inspect: true, methods: %w[GET], paths: ["/repos/org/"]}],
      #     secrets: {github: {value: ENV.fetch("GITHUB_TOKEN"), destinations: ["api.github.com:443"]}},
      #     upstream_ca: "/etc/company/ca.pem"
      #   )

      ##
      # :method: allow
      # :call-seq:
      #   allow -> Array
      #
      # The rules, frozen: a String per plain entry, a frozen <tt>{destination:, inspect:, methods:, paths:}</tt>
      # Hash per entry with HTTP rules or inspection (as NetworkPolicy#allow shows them).
      #
      #   gateway.allow   # => ["api.example.com:443"]

      ##
      # :method: environment
      # :call-seq:
      #   environment -> Hash
      #
      # The variables a child gets from this gateway (a frozen String => String Hash): for each secret,
      # <tt>LITTLEGHOST_SECRET_<NAME></tt> holding its stand-in (<tt>lgsecret_</tt> and 32 hex digits), never its
      # value. The gateway swaps the stand-in for the value in requests it reads that go to the secret's
      # destinations. While open with an <tt>inspect: true</tt> entry, also +SSL_CERT_FILE+, +REQUESTS_CA_BUNDLE+,
      # +CURL_CA_BUNDLE+, +NODE_EXTRA_CA_CERTS+ and +GIT_SSL_CAINFO+, each the path of <tt>ca-bundle.pem</tt> (the
      # system's roots and the gateway's CA) in the gateway's private directory, which a sandbox mounts read-only.
      #
      #   gateway.environment   # => {"LITTLEGHOST_SECRET_GITHUB" => "lgsecret_5f0c..."}

      ##
      # :method: upstream_ca
      # :call-seq:
      #   upstream_ca -> String or nil
      #
      # The expanded path of the PEM file of extra upstream roots, read at each #open (a missing, unreadable or
      # malformed file makes #open raise LittleGhost::PolicyError naming the path).
      #
      #   gateway.upstream_ca   # => nil

      ##
      # :method: allow_private_destinations?
      # :call-seq:
      #   allow_private_destinations? -> true or false
      #
      # Whether destinations in loopback, private and other reserved ranges are allowed.
      #
      #   gateway.allow_private_destinations?   # => false

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #
      # Starts serving on the gem's runtime, on a socket in a fresh 0700 directory; idempotent.
      #
      #   gateway.open   # => gateway

      ##
      # :method: open?
      # :call-seq:
      #   open? -> true or false
      #
      # Whether the gateway is serving.
      #
      #   gateway.open?   # => true

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Stops accepting, ends every open connection, removes the socket and its directory; idempotent. Runs
      # without the GVL.
      #
      #   gateway.close   # => nil

      ##
      # :method: validate!
      # :call-seq:
      #   validate! -> self
      #
      # Raises LittleGhost::DependencyError "the built-in network gateway is not open" unless serving.
      #
      #   gateway.validate!   # => gateway

      ##
      # :method: mounts
      # :call-seq:
      #   mounts -> Array
      #
      # The socket's directory as a read-only Sandbox::Mount at the same path (G.6); empty when closed.
      #
      #   gateway.mounts.map(&:target)   # => ["/tmp/littleghost-gateways-0/littleghost-gateway-..."]

      ##
      # :method: proxy_mount_path
      # :call-seq:
      #   proxy_mount_path -> String or nil
      #
      # The socket the relay connects to (the same path inside the sandbox); nil when closed.
      #
      #   gateway.proxy_mount_path   # => "/tmp/littleghost-gateways-0/littleghost-gateway-.../proxy.sock"

      ##
      # :method: denials
      # :call-seq:
      #   denials -> Array
      #
      # The refused requests, oldest first (the last 1000), as LittleGhost::Sandbox::Denial values like those of
      # Sandbox#denials: +kind+ +:network+, +operation+ +:connect+ (or +:request+ for one refused HTTP request, with
      # +http_method+ and +path+), +target+ (<tt>"host:port"</tt>, or <tt>"*"</tt> for a connection refused before
      # its request was read), +reason+ (+:not_allowed+, +:private_destination+, +:request_not_allowed+,
      # +:secret_exfiltration+, +:secret_placement+, +:inspection_required+ or +:host_mismatch+ for a 403,
      # +:malformed_request+ for a 400, +:descriptor_budget+ for a 503: the gateway was at its share of
      # RLIMIT_NOFILE, +:memory_budget+ for a 503: its buffers were at their 32 MiB; see Sandbox::Denial), +message+
      # and +time+. Kept after #close.
      #
      #   gateway.denials.last   # => #<LittleGhost::Sandbox::Denial network connect "evil.example:443" not_allowed>

      ##
      # :method: network_log
      # :call-seq:
      #   network_log -> Array of LittleGhost::Sandbox::NetworkEvent
      #
      # The egress record of the last #open, oldest first (the last 1000): one frozen Sandbox::NetworkEvent per
      # tunnel and per request, allowed or refused, the same values Sandbox#network_log holds (which keeps the last
      # 100 of them). Kept after #close.
      #
      #   gateway.network_log.last
      #   # => #<LittleGhost::Sandbox::NetworkEvent allowed CONNECT "api.github.com:443" 200 sent=812 received=5120 0.210s>
    end
  end
end
