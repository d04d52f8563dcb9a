# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::Capabilities, NetworkPolicy and Mount are defined by the Rust
# extension. This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # What a backend (or a Scope) can enforce: +features+, +network_modes+ and the kind of +isolation+. A frozen
    # value, reported by Sandbox#capabilities and Sandbox.probe.
    #
    # Features: <tt>:filesystem_read</tt>, <tt>:filesystem_list</tt>, <tt>:filesystem_write</tt>,
    # <tt>:filesystem_replace</tt>, <tt>:process_execute</tt>, <tt>:process_spawn</tt> (children may create
    # processes), <tt>:process_spawn_denial</tt> (the backend can forbid that per session),
    # <tt>:process_tree_ownership</tt> (every descendant stays owned until cleanup). Aliases <tt>:read</tt>,
    # <tt>:list</tt>, <tt>:write</tt>, <tt>:replace</tt>, <tt>:execute</tt> and <tt>:spawn</tt> are accepted
    # everywhere. Network modes: <tt>:inherit</tt>, <tt>:none</tt>, <tt>:allowlist</tt>.
    #
    #   caps = sandbox.capabilities
    #   caps.supports?(:write)                      # => true
    #   caps.supports?(:network, :none)             # => true on Bubblewrap
    #   caps.isolation                              # => :namespace
    class Capabilities
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(features: DEFAULT_FEATURES, network_modes: [:inherit], isolation: :none) -> capabilities
      #
      # Features become unique Symbols with aliases resolved; DEFAULT_FEATURES is
      # <tt>[:filesystem_read, :filesystem_list, :process_execute]</tt>.
      #
      # Raises ArgumentError "unsupported network modes: ..." for a mode other than <tt>:inherit</tt>,
      # <tt>:none</tt> and <tt>:allowlist</tt>.
      #
      #   LittleGhost::Sandbox::Capabilities.new(features: [:read, :write]).features   # => [:filesystem_read, :filesystem_write]

      ##
      # :singleton-method: normalize
      # :call-seq:
      #   normalize(feature) -> Symbol
      #
      # The feature name for an alias (or the name itself).
      #
      #   LittleGhost::Sandbox::Capabilities.normalize("spawn")   # => :process_spawn

      ##
      # :method: features
      # :call-seq:
      #   features -> Array of Symbol
      #
      # The supported features, frozen. Beside the file and process features a backend may list how launch limits
      # hold: <tt>:memory_limit</tt> and <tt>:task_limit</tt> when the kernel bounds the whole tree (a launch
      # cgroup), and exactly one of <tt>:cpu_limit</tt> (+cpu_seconds+ bounds the CPU time of the whole tree) or
      # <tt>:process_cpu_limit</tt> (no writable cgroup, e.g. as an unprivileged user, or macOS: +cpu_seconds+ is
      # the per-process RLIMIT_CPU, so each process of the tree may use that much).
      #
      #   caps.features.include?(:process_tree_ownership)   # => true
      #   caps.features.include?(:cpu_limit)                # => false when cpu_seconds is per process

      ##
      # :method: network_modes
      # :call-seq:
      #   network_modes -> Array of Symbol
      #
      # The network modes the backend enforces.
      #
      #   caps.network_modes   # => [:inherit, :none]

      ##
      # :method: isolation
      # :call-seq:
      #   isolation -> Symbol
      #
      # The kind of isolation: <tt>:none</tt>, <tt>:namespace</tt>, <tt>:seatbelt</tt>, ...
      #
      #   caps.isolation   # => :namespace

      ##
      # :method: supports?
      # :call-seq:
      #   supports?(feature, value = nil) -> true or false
      #
      # Whether +feature+ (aliases accepted) is supported; <tt>supports?(:network, mode)</tt> asks for a network
      # mode, <tt>supports?(:network)</tt> for any.
      #
      #   caps.supports?(:spawn)              # => true
      #   caps.supports?(:network, :allowlist) # => false

      ##
      # :method: include?
      # :call-seq:
      #   include?(feature, value = nil) -> true or false
      #
      # Same as #supports?.
      #
      #   caps.include?(:read)   # => true

      ##
      # :method: intersect
      # :call-seq:
      #   intersect(other) -> Capabilities
      #
      # The features and network modes both support, in the receiver's order, with the receiver's isolation.
      #
      #   caps.intersect(LittleGhost::Sandbox::Capabilities.new(features: [:read])).features   # => [:filesystem_read]

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # <tt>{features:, network_modes:, isolation:}</tt>.
      #
      #   caps.to_h[:isolation]   # => :namespace

      ##
      # :method: ==
      # :call-seq:
      #   capabilities == other -> true or false
      #
      # Equal by value.
      #
      #   LittleGhost::Sandbox::Capabilities.new == LittleGhost::Sandbox::Capabilities.new   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value.
      #
      #   caps.eql?(caps.intersect(caps))   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   caps.hash == caps.intersect(caps).hash   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Features, network modes and isolation.
      #
      #   LittleGhost::Sandbox::Capabilities.new.inspect
      #   # => "#<LittleGhost::Sandbox::Capabilities features=[:filesystem_read, :filesystem_list, :process_execute] network_modes=[:inherit] isolation=:none>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts caps
    end

    # A network setting: <tt>:inherit</tt> (the host's network), <tt>:none</tt> (no network at all) or
    # <tt>:allowlist</tt> (only the listed <tt>host:port</tt> destinations, through a gateway: Bubblewrap enforces
    # it; Landlock, Seatbelt and Unrestricted raise LittleGhost::CapabilityError). A frozen value; anywhere a
    # network is accepted, a Symbol, a String or a Hash is coerced with ::coerce. A Hash with +allow+ and no
    # +mode+ is an allowlist; <tt>allow_private_destinations:</tt> may stand beside +allow+ (it is handed to the
    # built-in gateway); an unknown key raises ArgumentError listing the valid ones.
    #
    #   LittleGhost::Sandbox::NetworkPolicy.coerce(:none).none?   # => true
    class NetworkPolicy
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(mode:, allow: [], secrets: {}, upstream_ca: nil, resolve: {}, inspection: :connect, gateway: nil, authorizer: nil, forward_headers: [], mutation_headers: []) -> network_policy
      #
      # +allow+ entries are Strings (<tt>"host:port"</tt>, <tt>"*.suffix:port"</tt> for any subdomain but never the
      # apex, <tt>"host:*"</tt> for any port, <tt>"net/len:port"</tt> for IP literals in a network) or Hashes
      # <tt>{destination:, inspect: false, methods: [], paths: []}</tt>: +methods+ upper-cased HTTP tokens, +paths+
      # clean prefixes starting with "/", <tt>inspect: true</tt> asks the built-in gateway to read that destination's
      # HTTPS. Entries are stripped, down-cased and de-duplicated; a Hash saying no more than its destination is that
      # String entry. +secrets+ (<tt>{name => {value: String, destinations: [...]}}</tt>) are credentials the child
      # uses through a stand-in (BuiltinGateway#environment); each destination must be covered by an entry, and an
      # HTTPS one (port 443 or <tt>*</tt>) by an <tt>inspect: true</tt> entry.
      # +upstream_ca+ is the path of a PEM file of extra roots the gateway trusts upstream (expanded now, read when
      # the gateway opens; it needs an inspected entry). +resolve+ (<tt>{"api.example.com" => "127.0.0.1"}</tt>)
      # makes the gateway answer those names with those addresses instead of asking DNS, like curl's --resolve. These and the other keywords apply to <tt>:allowlist</tt> only (<tt>inspection: :http</tt>
      # needs an +authorizer+); HTTP rules, secrets and +upstream_ca+ need the built-in gateway.
      #
      # Raises LittleGhost::PolicyError for an unknown mode or inspection, allowlist options on another mode, an
      # empty allowlist, an entry that is empty or contains whitespace, a bad method, path or +inspect+ value, a bad
      # header name, a secret without a String value or whose destination no entry covers (or no inspected entry,
      # over HTTPS; no message shows a value), +upstream_ca+ without an inspected entry, a +resolve+ name that is not
      # a host name or address that is not an IP, or rules given to a gateway object; ArgumentError for an unknown
      # key of an entry or a secret, and for allowlist keys given without +allow+ or +mode+.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.new(mode: :allowlist, allow: [" API.example.com:443"]).allow
      #   # => ["api.example.com:443"]
      #   LittleGhost::Sandbox::NetworkPolicy.new(
      #     allow: [{destination: "api.github.com:443", methods: %w[get], paths: ["/repos/org/"]}],
      #     secrets: {github: {value: ENV.fetch("GITHUB_TOKEN"), destinations: ["api.github.com:443"]}}
      #   ).secrets
      #   # => {github: {value: "[REDACTED]", destinations: ["api.github.com:443"]}}

      ##
      # :singleton-method: coerce
      # :call-seq:
      #   coerce(value) -> NetworkPolicy or nil
      #
      # nil stays nil (the backend's default); a NetworkPolicy is returned as is; a Symbol or String is a mode; a
      # Hash gives the keywords of ::new.
      #
      # Raises LittleGhost::PolicyError "network policy must be a mode, Hash, or Sandbox::NetworkPolicy"; ArgumentError
      # for an unknown Hash key.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce("inherit").mode   # => :inherit

      ##
      # :method: mode
      # :call-seq:
      #   mode -> Symbol
      #
      # <tt>:inherit</tt>, <tt>:none</tt> or <tt>:allowlist</tt>.
      #
      #   network.mode   # => :none

      ##
      # :method: allow
      # :call-seq:
      #   allow -> Array
      #
      # The allowed destinations, frozen (empty unless <tt>:allowlist</tt>): a String per plain entry, a frozen
      # <tt>{destination:, inspect:, methods:, paths:}</tt> Hash per entry with HTTP rules or inspection.
      #
      #   network.allow   # => []

      ##
      # :method: secrets
      # :call-seq:
      #   secrets -> Hash
      #
      # The declared secrets, frozen: Symbol name => <tt>{value: "[REDACTED]", destinations: [...]}</tt>. No reader,
      # +inspect+ or +to_h+ ever shows a value (#== still compares them).
      #
      #   network.secrets   # => {}

      ##
      # :method: upstream_ca
      # :call-seq:
      #   upstream_ca -> String or nil
      #
      # The expanded path of the PEM file of extra roots the gateway trusts upstream, or nil.
      #
      #   network.upstream_ca   # => nil

      ##
      # :method: resolve
      # :call-seq:
      #   resolve -> Hash
      #
      # The names the gateway answers itself, frozen: String name (down-cased) => String address.
      #
      #   network.resolve   # => {}

      ##
      # :method: inspection
      # :call-seq:
      #   inspection -> Symbol
      #
      # <tt>:connect</tt> (destinations only) or <tt>:http</tt> (requests checked by the authorizer).
      #
      #   network.inspection   # => :connect

      ##
      # :method: gateway
      # :call-seq:
      #   gateway -> Object or nil
      #
      # The gateway declaration of an allowlist (nil: the built-in one).
      #
      #   network.gateway   # => nil

      ##
      # :method: authorizer
      # :call-seq:
      #   authorizer -> Object or nil
      #
      # The callable that authorizes requests under <tt>inspection: :http</tt>.
      #
      #   network.authorizer   # => nil

      ##
      # :method: forward_headers
      # :call-seq:
      #   forward_headers -> Array of String
      #
      # Down-cased request header names passed to the authorizer.
      #
      #   network.forward_headers   # => []

      ##
      # :method: mutation_headers
      # :call-seq:
      #   mutation_headers -> Array of String
      #
      # Down-cased header names the authorizer may set.
      #
      #   network.mutation_headers   # => []

      ##
      # :method: inherit?
      # :call-seq:
      #   inherit? -> true or false
      #
      # Whether the mode is <tt>:inherit</tt>.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce(:inherit).inherit?   # => true

      ##
      # :method: none?
      # :call-seq:
      #   none? -> true or false
      #
      # Whether the mode is <tt>:none</tt>.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce(:none).none?   # => true

      ##
      # :method: allowlist?
      # :call-seq:
      #   allowlist? -> true or false
      #
      # Whether the mode is <tt>:allowlist</tt>.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce(:none).allowlist?   # => false

      ##
      # :method: ==
      # :call-seq:
      #   network_policy == other -> true or false
      #
      # Equal when all seven fields are equal.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce(:none) == LittleGhost::Sandbox::NetworkPolicy.coerce("none")   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value.
      #
      #   network.eql?(LittleGhost::Sandbox::NetworkPolicy.coerce(network.mode))   # => true for :none

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   network.hash.is_a?(Integer)   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Every field.
      #
      #   LittleGhost::Sandbox::NetworkPolicy.coerce(:none).inspect
      #   # => "#<LittleGhost::Sandbox::NetworkPolicy mode=:none allow=[] inspection=:connect ...>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts network
    end

    # A grant as backends apply it: a host directory (+source+), where it appears (+target+), its +access+, and
    # whether tools see it. Policy#process_grants and Scope#process_grants return frozen Mounts.
    #
    #   mount = LittleGhost::Sandbox::Mount.new(source: "/srv/agent", target: "/srv/agent", access: :read_write)
    #   mount.covers?("/srv/agent/notes.md")   # => true
    #   mount.writable?                        # => true
    class Mount
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(source:, target:, access: :read_only, protect_aliases: false, tools: true, root: nil) -> mount
      #
      # +source+ is expanded against +root+; +target+ must be absolute and is cleaned.
      #
      # Raises LittleGhost::PolicyError for a relative target, one containing <tt>..</tt> or a NUL byte, or "mount
      # access must be :read_only or :read_write".
      #
      #   LittleGhost::Sandbox::Mount.new(source: "data", target: "/data", root: "/srv").source   # => "/srv/data"

      ##
      # :singleton-method: coerce
      # :call-seq:
      #   coerce(value, root: nil) -> Mount
      #
      # A Mount unchanged, or one built from a Hash of the keywords of ::new.
      #
      # Raises LittleGhost::PolicyError for anything else and the errors of ::new.
      #
      #   LittleGhost::Sandbox::Mount.coerce({source: "/srv", target: "/srv"}).read_only?   # => true

      ##
      # :method: source
      # :call-seq:
      #   source -> String
      #
      # The host directory.
      #
      #   mount.source   # => "/srv/agent"

      ##
      # :method: target
      # :call-seq:
      #   target -> String
      #
      # Where the directory appears (an absolute, cleaned path).
      #
      #   mount.target   # => "/srv/agent"

      ##
      # :method: access
      # :call-seq:
      #   access -> Symbol
      #
      # <tt>:read_only</tt> or <tt>:read_write</tt>.
      #
      #   mount.access   # => :read_write

      ##
      # :method: protect_aliases
      # :call-seq:
      #   protect_aliases -> true or false
      #
      # Whether the grant's access also applies where another grant physically aliases into it.
      #
      #   mount.protect_aliases   # => false

      ##
      # :method: protect_aliases?
      # :call-seq:
      #   protect_aliases? -> true or false
      #
      # Same as #protect_aliases.
      #
      #   mount.protect_aliases?   # => false

      ##
      # :method: tools
      # :call-seq:
      #   tools -> true or false
      #
      # Whether the file operations may use the grant (false for runtime-only grants).
      #
      #   mount.tools   # => true

      ##
      # :method: tool_visible?
      # :call-seq:
      #   tool_visible? -> true or false
      #
      # Same as #tools.
      #
      #   mount.tool_visible?   # => true

      ##
      # :method: read_only?
      # :call-seq:
      #   read_only? -> true or false
      #
      # Whether the access is <tt>:read_only</tt>.
      #
      #   mount.read_only?   # => false

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # Whether the access is <tt>:read_write</tt>.
      #
      #   mount.writable?   # => true

      ##
      # :method: covers?
      # :call-seq:
      #   covers?(path) -> true or false
      #
      # Whether the cleaned +path+ is the target or lies beneath it.
      #
      #   mount.covers?("/srv/agent/a/b")   # => true
      #   mount.covers?("/srv/agent2")      # => false

      ##
      # :method: narrow
      # :call-seq:
      #   narrow(target: self.target, access: self.access) -> Mount
      #
      # A Mount for a subdirectory and/or with less access; its source is the real path.
      #
      # Raises LittleGhost::CapabilityError "outside its parent mount", "sandbox scope cannot make a read-only mount
      # writable", "escapes its parent" (through a symbolic link), "sandbox scope mount source is unavailable".
      #
      #   mount.narrow(target: "/srv/agent/source", access: :read_only).read_only?   # => true

      ##
      # :method: ==
      # :call-seq:
      #   mount == other -> true or false
      #
      # Equal by real source path, target, access, protect_aliases and tools.
      #
      #   mount == LittleGhost::Sandbox::Mount.coerce(source: mount.source, target: mount.target, access: :read_write)   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value.
      #
      #   mount.eql?(mount.narrow)   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   mount.hash.is_a?(Integer)   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Every field.
      #
      #   mount.inspect
      #   # => "#<LittleGhost::Sandbox::Mount source=\"/srv/agent\" target=\"/srv/agent\" access=:read_write tools=true protect_aliases=false>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts mount
    end
  end
end
