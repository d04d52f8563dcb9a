# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::Denial is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # One refusal, as Sandbox#denials and Sandbox#on_denial show it: a frozen value compared by value, so nobody
    # parses error messages. Only the extension creates Denials (+new+ is private).
    #
    # Kinds, operations and reasons:
    #
    # [+:filesystem+]  the broker or a scope's capabilities refused +:read+, +:list+, +:write+ or +:replace+ of a
    #                  logical path (the target, as the caller wrote it). Reasons: +:outside_scope+ (no tool-visible
    #                  grant, or a deny marker), +:escapes_scope+ (a +..+ component the broker saw), +:read_only+,
    #                  +:symlink+, +:multiply_linked+, +:capability+ (the scope does not allow the operation),
    #                  +:read_limit+, +:write_limit+, +:list_limit+.
    # [+:limit+]       a program was ended at a resource limit; operation +:execute+, target its +argv[0]+ as
    #                  given. Reasons: +:output_limit+ (+kill_on_output_limit: true+, or a session's
    #                  +output_bytes+), +:memory_limit+
    #                  (+memory_bytes+, by the launch's cgroup or the sampled fallback), +:cpu_limit+
    #                  (+cpu_seconds+, by the cgroup or the per-process RLIMIT_CPU fallback). The program's
    #                  call raises Sandbox::LimitError. +:task_limit+: the kernel refused a new process at
    #                  +tasks+ (EAGAIN in the program; nothing is killed and the Execution is returned).
    # [+:network+]     the built-in gateway answered 403, or 503 at its descriptor or memory budget.
    #                  Operation +:connect+ for a refused connection (target <tt>host:port</tt>, or <tt>*</tt>
    #                  when the connection was refused before its request was read): reasons +:not_allowed+ (no
    #                  allowlist entry matches), +:private_destination+ (it resolves to a private or reserved
    #                  address), +:descriptor_budget+ (503), +:memory_budget+ (503: the gateway's buffers across
    #                  its connections are at their budget, 32 MiB), +:inspection_required+ (a CONNECT to a
    #                  destination whose +methods:+/+paths:+ only inspection could enforce, without +inspect: true+),
    #                  +:host_mismatch+ (the TLS server name or the +Host+ header names another host than the
    #                  CONNECT target). Operation +:request+ for one refused HTTP request the gateway read (plain
    #                  HTTP, or an inspected destination), with #http_method and #path: reasons
    #                  +:request_not_allowed+ (outside the destination's +methods:+/+paths:+),
    #                  +:secret_exfiltration+ (a secret's stand-in bound for a destination the secret does not name,
    #                  or into a tunnel the gateway cannot read; the real value is never in the Denial),
    #                  +:host_mismatch+, +:malformed_request+ (400: its +Connection+ header names +Content-Length+,
    #                  +Transfer-Encoding+ or +Host+, so its framing could be read two ways), +:secret_placement+ (a
    #                  secret's value that cannot stand in the request target where its stand-in is). An allowed
    #                  destination that failed (502, 504), with the upstream's words in #detail: +:dns+,
    #                  +:upstream_unreachable+, +:upstream_certificate+, +:upstream_tls+, +:upstream_failed+,
    #                  +:upstream_timeout+. They are recorded in +denials+ as they happen and delivered to +on_denial+
    #                  blocks in order on the sandbox's event thread (a Ruby Thread it starts when needed and ends
    #                  at +close+, after delivering what is queued). Each is also a NetworkEvent with +decision+
    #                  +:denied+ in Sandbox#network_log.
    #
    # Threads: file refusals and limit kills reach the blocks in the refused caller's thread, before its error is
    # raised; gateway refusals on the sandbox's event thread. A path the Workspace rejects (absolute, an unknown
    # name, +..+ or <tt>~</tt> in a reference) is a +:filesystem+ denial too (+:outside_scope+ or +:escapes_scope+).
    #
    # Not denials: a missing file, text not found, invalid UTF-8, an empty or NUL-containing path, an OS failure,
    # and a timeout (it bounds how long the caller waits and refuses nothing the program asked; it raises
    # TimeoutError).
    #
    #   sandbox.on_denial { |denial| audit.record(denial.to_h) }
    #   sandbox.read("workspace://secrets/key") rescue nil
    #   sandbox.denials.last   # => #<LittleGhost::Sandbox::Denial filesystem read "workspace://secrets/key" outside_scope>
    class Denial
      ##
      # :method: kind
      # :call-seq:
      #   kind -> :filesystem, :limit or :network
      #
      # What was refused, broadly.
      #
      #   denial.kind   # => :filesystem

      ##
      # :method: operation
      # :call-seq:
      #   operation -> Symbol
      #
      # The refused operation: +:read+, +:list+, +:write+, +:replace+, +:execute+, +:connect+ or +:request+.
      #
      #   denial.operation   # => :write

      ##
      # :method: target
      # :call-seq:
      #   target -> String
      #
      # The caller's logical path (never a host path), the program's +argv[0]+, or <tt>host:port</tt>; frozen.
      #
      #   denial.target   # => "docs/readme.md"

      ##
      # :method: reason
      # :call-seq:
      #   reason -> Symbol
      #
      # The rule that refused (see the class documentation for the list).
      #
      #   denial.reason   # => :read_only

      ##
      # :method: message
      # :call-seq:
      #   message -> String
      #
      # The refused call's own error message (or, for the gateway, its reason text); frozen.
      #
      #   denial.message   # => "Sandbox scope is read-only: docs/readme.md"

      ##
      # :method: time
      # :call-seq:
      #   time -> Time
      #
      # When the refusal happened (frozen).
      #
      #   denial.time   # => 2026-11-30 17:16:27.012904648 +0000

      ##
      # :method: http_method
      # :call-seq:
      #   http_method -> String or nil
      #
      # For a refused HTTP request (operation +:request+), its method; else nil (frozen). Not named +method+, which
      # stays Object#method.
      #
      #   denial.http_method   # => "DELETE"

      ##
      # :method: path
      # :call-seq:
      #   path -> String or nil
      #
      # For a refused HTTP request (operation +:request+), its origin-form path with the query; else nil (frozen).
      #
      #   denial.path   # => "/repos/org/x"

      ##
      # :method: detail
      # :call-seq:
      #   detail -> String or nil
      #
      # For an allowed destination that failed the gateway (+:dns+, +:upstream_unreachable+,
      # +:upstream_certificate+...), what the resolver, the system or the TLS library said (also the end of
      # #message); else nil (frozen).
      #
      #   denial.detail   # => "invalid peer certificate: UnknownIssuer"

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # The fields as a Hash with the keys +:kind+, +:operation+, +:target+, +:reason+, +:message+, +:time+, and
      # for a refused HTTP request also +:method+ and +:path+, for a failed destination +:detail+.
      #
      #   denial.to_h.except(:time)
      #   # => {kind: :filesystem, operation: :write, target: "docs/readme.md", reason: :read_only,
      #   #     message: "Sandbox scope is read-only: docs/readme.md"}
      #   request_denial.to_h.slice(:operation, :reason, :method, :path)
      #   # => {operation: :request, reason: :request_not_allowed, method: "DELETE", path: "/repos/org/x"}

      ##
      # :method: ==
      # :call-seq:
      #   denial == other -> true or false
      #
      # True iff +other+ is a Denial with equal fields (time included): two reads of Sandbox#denials give equal
      # values; two refusals of the same call are two events.
      #
      #   sandbox.denials.last == sandbox.denials.last   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Same as ==, so Denials work as Hash keys.
      #
      #   {sandbox.denials.last => 1}[sandbox.denials.last]   # => 1

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash of the fields, consistent with eql?.
      #
      #   sandbox.denials.last.hash == sandbox.denials.last.hash   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Kind, operation, target and reason; for a refused HTTP request also its method and path.
      #
      #   denial.inspect   # => "#<LittleGhost::Sandbox::Denial filesystem write \"docs/readme.md\" read_only>"
      #   request_denial.inspect
      #   # => "#<LittleGhost::Sandbox::Denial network request \"api.github.com:443\" request_not_allowed DELETE \"/repos/org/x\">"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as inspect.
      #
      #   puts denial   # prints #<LittleGhost::Sandbox::Denial filesystem write "docs/readme.md" read_only>
    end
  end
end
