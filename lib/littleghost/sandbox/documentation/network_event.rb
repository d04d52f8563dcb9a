# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::NetworkEvent is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # One connection or request through the built-in gateway, as Sandbox#network_log and Sandbox#on_network show
    # it (the sandbox's egress record): a frozen value compared by value. Only the extension creates them (+new+ is
    # private).
    #
    # The gateway makes one event per CONNECT tunnel (+http_method+ <tt>"CONNECT"</tt>, no path: the gateway does
    # not read inside a tunnel it does not inspect), one per plain-HTTP request, one per request of an inspected
    # HTTPS destination (+inspected+ true), and one per refusal (+decision+ +:denied+; the refusal is also a Denial).
    # Events are recorded as each exchange ends, in +network_log+ at once and for +on_network+ blocks on the
    # sandbox's event thread, in order.
    #
    # The request's method is read with #http_method, not +method+, which stays Object#method; #to_h uses the key
    # +:method+.
    #
    #   sandbox.on_network { |event| audit.record(event.to_h) }
    #   sandbox.execute_program(["curl", "-s", "http://example.com/"], timeout: 30)
    #   sandbox.network_log.last
    #   # => #<LittleGhost::Sandbox::NetworkEvent allowed GET "example.com:80" "/" 200 sent=0 received=1591 0.041s>
    class NetworkEvent
      ##
      # :method: destination
      # :call-seq:
      #   destination -> String
      #
      # <tt>host:port</tt> as the client named it (frozen).
      #
      #   event.destination   # => "api.github.com:443"

      ##
      # :method: http_method
      # :call-seq:
      #   http_method -> String or nil
      #
      # The request's method (<tt>"GET"</tt>, <tt>"POST"</tt>...), <tt>"CONNECT"</tt> for a tunnel, nil when the
      # gateway could not read it (frozen).
      #
      #   event.http_method   # => "GET"

      ##
      # :method: path
      # :call-seq:
      #   path -> String or nil
      #
      # The request's origin-form path with its query (<tt>"/repos/org/x?page=2"</tt>) when the gateway read the
      # request (plain HTTP, or an inspected destination); nil for a tunnel (frozen).
      #
      #   event.path   # => "/repos/org/x?page=2"

      ##
      # :method: status
      # :call-seq:
      #   status -> Integer or nil
      #
      # The HTTP status the child received: the gateway's own (200 for an opened tunnel, 403 for a refusal, 502 when
      # the destination could not be reached, 503 at the descriptor budget) or the destination's when readable; nil
      # when there was none.
      #
      #   event.status   # => 200

      ##
      # :method: bytes_sent
      # :call-seq:
      #   bytes_sent -> Integer
      #
      # Bytes the gateway passed toward the destination after the request head (a request body, or everything the
      # child sent through a tunnel).
      #
      #   event.bytes_sent   # => 0

      ##
      # :method: bytes_received
      # :call-seq:
      #   bytes_received -> Integer
      #
      # Bytes the gateway passed back to the child from the destination (0 for a refusal).
      #
      #   event.bytes_received   # => 1591

      ##
      # :method: duration
      # :call-seq:
      #   duration -> Float
      #
      # Seconds from the connection's arrival at the gateway to the end of the exchange.
      #
      #   event.duration   # => 0.041

      ##
      # :method: decision
      # :call-seq:
      #   decision -> :allowed or :denied
      #
      # +:allowed+: passed on (a tunnel opened, a request forwarded). +:denied+: answered by the gateway itself with
      # a 4xx/5xx (a Denial was recorded, except for a malformed request or a destination that could not be reached).
      #
      #   event.decision   # => :allowed

      ##
      # :method: reason
      # :call-seq:
      #   reason -> Symbol or nil
      #
      # Why the gateway refused it, the reason of its Denial (+:not_allowed+, +:upstream_certificate+...); nil when
      # it was allowed.
      #
      #   event.reason   # => :upstream_certificate

      ##
      # :method: detail
      # :call-seq:
      #   detail -> String or nil
      #
      # For a destination that failed, what the resolver, the system or the TLS library said; for a request the
      # gateway refused without a denial (a malformed head), its error; else nil (frozen).
      #
      #   event.detail   # => "invalid peer certificate: UnknownIssuer"

      ##
      # :method: inspected
      # :call-seq:
      #   inspected -> true or false
      #
      # Whether the gateway terminated TLS to read the request (an +inspect: true+ destination).
      #
      #   event.inspected   # => false

      ##
      # :method: inspected?
      # :call-seq:
      #   inspected? -> true or false
      #
      # Same as #inspected.
      #
      #   event.inspected?   # => false

      ##
      # :method: time
      # :call-seq:
      #   time -> Time
      #
      # When the exchange ended and was recorded (frozen).
      #
      #   event.time   # => 2026-12-01 17:16:27.012904648 +0000

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # The fields as a Hash with the keys +:destination+, +:method+, +:path+, +:status+, +:bytes_sent+,
      # +:bytes_received+, +:duration+, +:decision+, +:inspected+, +:time+ (nil where unknown).
      #
      #   event.to_h.except(:time)
      #   # => {destination: "example.com:80", method: "GET", path: "/", status: 200, bytes_sent: 0,
      #   #     bytes_received: 1591, duration: 0.041, decision: :allowed, inspected: false}

      ##
      # :method: ==
      # :call-seq:
      #   event == other -> true or false
      #
      # True iff +other+ is a NetworkEvent with equal fields (time included): two reads of Sandbox#network_log give
      # equal values.
      #
      #   sandbox.network_log.last == sandbox.network_log.last   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Same as ==, so events work as Hash keys.
      #
      #   {sandbox.network_log.last => 1}[sandbox.network_log.last]   # => 1

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash of the fields, consistent with eql?.
      #
      #   sandbox.network_log.last.hash == sandbox.network_log.last.hash   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Decision, method, destination, path, status, +inspected+ when it was, bytes and duration.
      #
      #   event.inspect
      #   # => "#<LittleGhost::Sandbox::NetworkEvent denied GET \"evil.example:80\" \"/x\" 403 sent=0 received=0 0.001s>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as inspect.
      #
      #   puts event   # prints #<LittleGhost::Sandbox::NetworkEvent allowed CONNECT "api.github.com:443" 200 ...>
    end
  end
end
