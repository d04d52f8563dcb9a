# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandboxes::Native, its construction and its forwarding to the backend are
# defined by the Rust extension (ruby_api/native.rs). This file defines nothing.
#++

module LittleGhost
  module Sandboxes
    # Provider <tt>:native</tt>: the platform's isolated backend, to which every operation is delegated: Seatbelt on
    # macOS; on Linux Bubblewrap when its probe passes, else Landlock (user namespaces blocked), else
    # LittleGhost::DependencyError naming both reasons. Given a Bubblewrap-only option (+bubblewrap+, +proc+,
    # +tmpfs+, +masks+, +uid+, +gid+, ...), it stays with Bubblewrap. It never falls back to Unrestricted: on another platform it raises, and
    # where the backend cannot start, #open raises its LittleGhost::DependencyError. Options are the backend's.
    #
    #   sandbox = LittleGhost::Sandbox.build({provider: "native", files: {root: :read_write}}, workspace: workspace)
    #   sandbox.backend.class   # => LittleGhost::Sandboxes::Bubblewrap (on Linux)
    class Native < LittleGhost::Sandbox
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(workspace:, platform: RUBY_PLATFORM, **options) -> sandbox
      #
      # Builds the platform's backend with <tt>(workspace:, platform:, **options)</tt>; +policy+ and +limits+ come
      # from it.
      #
      # Raises LittleGhost::UnsupportedPlatformError "native sandboxing is unavailable on PLATFORM",
      # LittleGhost::DependencyError on Linux when neither Bubblewrap nor Landlock can run (both reasons and the
      # fix), and whatever the backend's constructor raises.
      #
      #   LittleGhost::Sandboxes::Native.new(workspace: workspace, policy: {network: :none}, tmpfs_size: 64 << 20)

      ##
      # :singleton-method: probe
      # :call-seq:
      #   probe(platform: RUBY_PLATFORM, **options) -> {available:, reason:, capabilities:}
      #
      # The probe of the platform's backend, or unavailable with "native sandboxing is unavailable on PLATFORM". On
      # Linux it also says which backend Native would use (<tt>backend: :bubblewrap</tt> or <tt>:landlock</tt>) and,
      # when it falls back, why Bubblewrap was passed over (+bubblewrap_reason+).
      #
      #   LittleGhost::Sandboxes::Native.probe(platform: "x86_64-freebsd")[:reason]
      #   # => "native sandboxing is unavailable on x86_64-freebsd"

      ##
      # :method: backend
      # :call-seq:
      #   backend -> Bubblewrap, Landlock or Seatbelt
      #
      # The backend every operation is delegated to.
      #
      #   sandbox.backend   # => #<LittleGhost::Sandboxes::Bubblewrap ...>

      ##
      # :method: effective_policy
      # :call-seq:
      #   effective_policy -> Policy
      #
      # The backend's effective policy.
      #
      #   sandbox.effective_policy.network.mode   # => :none

      ##
      # :method: capabilities
      # :call-seq:
      #   capabilities -> Capabilities
      #
      # The backend's capabilities.
      #
      #   sandbox.capabilities.isolation   # => :namespace on Linux

      ##
      # :method: writable?
      # :call-seq:
      #   writable? -> true or false
      #
      # The backend's answer.
      #
      #   sandbox.writable?   # => true

      ##
      # :method: allows?
      # :call-seq:
      #   allows?(operation, path = nil) -> true or false
      #
      # The backend's answer; see Sandbox#allows?.
      #
      #   sandbox.allows?(:write, "notes.md")   # => true

      ##
      # :method: scope
      # :call-seq:
      #   scope(profile = nil, files: nil, runtime_paths: nil, capabilities: nil, network: nil) -> Scope
      #
      # A Scope of the backend; see Sandbox#scope.
      #
      #   sandbox.scope(files: [:source]).sandbox   # => the backend

      ##
      # :method: read
      # :call-seq:
      #   read(path, context: nil) -> String
      #
      # The backend's Sandbox#read.
      #
      #   sandbox.read("notes.md")   # => "hello\n"

      ##
      # :method: list
      # :call-seq:
      #   list(path = ".", context: nil) -> String
      #
      # The backend's Sandbox#list.
      #
      #   sandbox.list   # => "notes.md\nsource/"

      ##
      # :method: write
      # :call-seq:
      #   write(path, content, context: nil) -> String
      #
      # The backend's Sandbox#write.
      #
      #   sandbox.write("notes.md", "hi")   # => "Wrote 2 bytes to notes.md"

      ##
      # :method: replace
      # :call-seq:
      #   replace(path, old_text, new_text, context: nil) -> String
      #
      # The backend's Sandbox#replace.
      #
      #   sandbox.replace("notes.md", "hi", "yo")   # => "Wrote 2 bytes to notes.md"

      ##
      # :method: execute_program
      # :call-seq:
      #   execute_program(argv, timeout:, **options) -> Execution
      #
      # The backend's Sandbox#execute_program.
      #
      #   sandbox.execute_program(["uname"], timeout: 5).stdout   # => "Linux\n"

      ##
      # :method: start_program
      # :call-seq:
      #   start_program(argv, **options) -> ProcessSession
      #
      # The backend's Sandbox#start_program.
      #
      #   session = sandbox.start_program(["cat"])
      #   session.close

      ##
      # :method: open
      # :call-seq:
      #   open(run: nil) -> self
      #   open(run: nil) { |sandbox| ... } -> result of the block
      #
      # Opens the backend and returns this Native sandbox (or, with a block, the block's value after closing).
      #
      # Raises what the backend's open raises (LittleGhost::DependencyError when +bwrap+ is missing or user
      # namespaces are blocked).
      #
      #   sandbox.open.equal?(sandbox)   # => true

      ##
      # :method: close
      # :call-seq:
      #   close -> nil
      #
      # Closes the backend (terminating the processes and sessions it started).
      #
      #   sandbox.close   # => nil

      ##
      # :method: supports?
      # :call-seq:
      #   supports?(feature, value = nil) -> true or false
      #
      # The backend's Sandbox#supports?.
      #
      #   sandbox.supports?(:filesystem_read)   # => true

      ##
      # :method: execute
      # :call-seq:
      #   execute(command, **options) -> Execution
      #
      # The backend's Sandbox#execute.
      #
      #   sandbox.execute("echo hi", timeout: 5).stdout   # => "hi\n"

      ##
      # :method: denials
      # :call-seq:
      #   denials -> Array of Denial
      #
      # The backend's Sandbox#denials: every refusal made through this sandbox.
      #
      #   sandbox.denials.last   # => #<LittleGhost::Sandbox::Denial ...>

      ##
      # :method: on_denial
      # :call-seq:
      #   on_denial { |denial| ... } -> Proc
      #
      # The backend's Sandbox#on_denial: the block sees every refusal made through this sandbox.
      #
      #   sandbox.on_denial { |denial| audit << denial.to_h }

      ##
      # :method: off_denial
      # :call-seq:
      #   off_denial(handler) -> true or false
      #
      # The backend's Sandbox#off_denial.
      #
      #   sandbox.off_denial(handler)   # => true

      ##
      # :method: network_log
      # :call-seq:
      #   network_log -> Array of NetworkEvent
      #
      # The backend's Sandbox#network_log: the egress record of its built-in gateway.
      #
      #   sandbox.network_log.last   # => #<LittleGhost::Sandbox::NetworkEvent allowed GET ...>

      ##
      # :method: on_network
      # :call-seq:
      #   on_network { |event| ... } -> Proc
      #
      # The backend's Sandbox#on_network: the block sees every network event of this sandbox.
      #
      #   sandbox.on_network { |event| audit << event.to_h }

      ##
      # :method: off_network
      # :call-seq:
      #   off_network(handler) -> true or false
      #
      # The backend's Sandbox#off_network.
      #
      #   sandbox.off_network(handler)   # => true

      # A method only the chosen backend has (Bubblewrap's +gateway+ and +bubblewrap_args+, Landlock's +tmpdir+) is
      # forwarded too, by the instance: <tt>respond_to?</tt> and NoMethodError are the backend's.
    end
  end
end
