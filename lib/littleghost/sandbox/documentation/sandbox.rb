# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox is defined by the Rust extension (magnus), so its methods have no Ruby
# source for RDoc to read. This file describes them with RDoc directives and defines nothing; requiring it is
# harmless and never needed.
#++

module LittleGhost
  # The one gate through which an agent reads and edits files and runs programs.
  #
  # A Sandbox governs the filesystem operations and child processes that explicitly pass through it: #read, #list,
  # #write and #replace go through a capability-handle broker confined to the Workspace paths the Policy grants;
  # #execute, #execute_program and #start_program run children with timeouts, output bounds and ownership of their
  # whole process tree. Arbitrary Ruby code in the application process is not governed.
  #
  # This base class enforces nothing itself: build one of the backends, usually through a provider name:
  #
  # - <tt>:native</tt> (LittleGhost::Sandboxes::Native): on Linux Bubblewrap when its probe passes, else Landlock,
  #   else DependencyError naming both reasons; Seatbelt on macOS; never Unrestricted.
  # - <tt>:bubblewrap</tt> (LittleGhost::Sandboxes::Bubblewrap): Linux namespaces through +bwrap+.
  # - <tt>:landlock</tt> (LittleGhost::Sandboxes::Landlock): Landlock + seccomp, for hosts (containers) where user
  #   namespaces are blocked.
  # - <tt>:seatbelt</tt> (LittleGhost::Sandboxes::Seatbelt): macOS +sandbox-exec+.
  # - <tt>:unrestricted</tt> (LittleGhost::Sandboxes::Unrestricted): the broker for files, host processes.
  #
  # A backend reports what it really enforces (#effective_policy, #capabilities) and raises rather than claim what
  # it cannot do. Paths are <em>logical</em>: relative to the workspace root (<tt>"notes/a.md"</tt>) or
  # <tt>"workspace://NAME/REL"</tt>; host paths are refused.
  #
  #   require "littleghost/sandbox"
  #   require "tmpdir"
  #
  #   Dir.mktmpdir do |root|
  #     workspace = LittleGhost::Workspace.new(root: root, paths: {source: "source"}).open
  #     sandbox = LittleGhost::Sandbox.build(
  #       {provider: :native, files: {root: :read_write, source: :read_only}, network: :none},
  #       workspace: workspace
  #     ).open
  #     sandbox.write("notes.md", "hello\n")                      # => "Wrote 6 bytes to notes.md"
  #     sandbox.execute_program(["cat", "notes.md"], timeout: 10).stdout # => "hello\n"
  #     sandbox.close
  #     workspace.close
  #   end
  #
  # Subclass it to write a backend in Ruby: call <tt>super(workspace:, policy:, profiles:, limits:)</tt> and
  # implement #read, #list, #write, #replace, #execute_program and #start_program; the base class dispatches every
  # internal call through Ruby, so overrides win. Register it with ::register_provider.
  class Sandbox
    ##
    # :singleton-method: new
    # :call-seq:
    #   new(workspace:, policy: nil, profiles: {}, limits: {}) -> sandbox
    #
    # Binds a sandbox to +workspace+ without touching the filesystem. +policy+ goes through Policy.coerce (a Policy
    # or a Hash such as <tt>{files: {root: :read_only}}</tt>), +limits+ through Limits.coerce, and +profiles+ (named
    # scope options, see #scope) becomes a frozen Hash with Symbol keys.
    #
    # Raises LittleGhost::PolicyError for an invalid policy or limits ("sandbox profiles must be a Hash", "unknown
    # sandbox limits: ...") and ArgumentError for an unknown keyword. Backends accept further options; see each one.
    #
    #   sandbox = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, limits: {read_bytes: 65_536})

    ##
    # :singleton-method: register_provider
    # :call-seq:
    #   register_provider(name, implementation) -> implementation
    #
    # Registers a trusted backend class under a provider name (a Symbol or String), replacing any earlier one.
    # The registry is shared by Sandbox and all its subclasses; the built-in names are <tt>:unrestricted</tt>,
    # <tt>:bubblewrap</tt>, <tt>:seatbelt</tt> and <tt>:native</tt>.
    #
    # Raises ArgumentError ("sandbox provider must be a Sandbox class") unless +implementation+ is a subclass of
    # Sandbox.
    #
    #   class MyBackend < LittleGhost::Sandbox; end
    #   LittleGhost::Sandbox.register_provider(:mine, MyBackend)
    #   LittleGhost::Sandbox.resolve_provider("mine")   # => MyBackend

    ##
    # :singleton-method: resolve_provider
    # :call-seq:
    #   resolve_provider(name) -> Class
    #
    # Returns the backend class registered under +name+ (a Symbol or String). Never falls back to another
    # provider.
    #
    # Raises LittleGhost::DependencyError for an unknown name; the message says it is not a registered provider and
    # lists the registered names ("sandbox provider :bwrap is not available; it is not a registered sandbox
    # provider (registered: :bubblewrap, :native, :seatbelt, :unrestricted)").
    #
    #   LittleGhost::Sandbox.resolve_provider(:native)   # => LittleGhost::Sandboxes::Native

    ##
    # :singleton-method: probe
    # :call-seq:
    #   probe(name, **options) -> {available: true or false, reason: String or nil, capabilities: Capabilities}
    #
    # Reports whether the backend registered under +name+ could start on this host, without building or opening a
    # sandbox. When it cannot, +reason+ says why (what to install or enable) and +capabilities+ is empty. +options+
    # go to the backend's own probe (for example <tt>bubblewrap: "/opt/bin/bwrap"</tt>).
    #
    # An unknown provider is reported as unavailable, not raised. Raises ArgumentError ("does not accept probe
    # options") when options are given to a backend without its own probe.
    #
    #   LittleGhost::Sandbox.probe(:native)
    #   # => {available: true, reason: nil, capabilities: #<LittleGhost::Sandbox::Capabilities ...>}
    #   LittleGhost::Sandbox.probe(:bubblewrap, bubblewrap: "/nonexistent")[:reason]
    #   # => "Bubblewrap is not installed at /nonexistent"

    ##
    # :method: workspace
    # :call-seq:
    #   workspace -> Workspace
    #
    # The LittleGhost::Workspace whose files and processes this sandbox governs.
    #
    #   sandbox.workspace.root   # => "/srv/agent"

    ##
    # :method: policy
    # :call-seq:
    #   policy -> Policy
    #
    # The normalised LittleGhost::Sandbox::Policy requested by trusted configuration (see #effective_policy for
    # what is enforced).
    #
    #   sandbox.policy.files   # => {root: :read_write, source: :read_only}

    ##
    # :method: limits
    # :call-seq:
    #   limits -> Limits
    #
    # The byte and entry bounds (LittleGhost::Sandbox::Limits) of the file operations and process output.
    #
    #   sandbox.limits.read_bytes   # => 1000000

    ##
    # :method: effective_policy
    # :call-seq:
    #   effective_policy -> Policy
    #
    # The policy the backend actually enforces: the request, with documented defaults filled in (isolated backends
    # turn a nil network into <tt>:none</tt>) or values it cannot avoid (Unrestricted reports
    # <tt>root_filesystem: :read_write</tt> and <tt>network: :inherit</tt>). A backend raises at construction rather
    # than drop a rule it cannot enforce.
    #
    #   sandbox.effective_policy.network.mode   # => :none

    ##
    # :method: capabilities
    # :call-seq:
    #   capabilities -> Capabilities
    #
    # The operations, network modes and isolation this backend implements, as a frozen
    # LittleGhost::Sandbox::Capabilities. The base class implements none.
    #
    #   sandbox.capabilities.features.include?(:process_tree_ownership)   # => true on Bubblewrap
    #   sandbox.capabilities.isolation                                    # => :namespace

    ##
    # :method: supports?
    # :call-seq:
    #   supports?(feature, value = nil) -> true or false
    #
    # Whether the backend implements +feature+ (aliases such as <tt>:read</tt> and <tt>:write</tt> are accepted);
    # for <tt>:network</tt>, whether it enforces the network mode +value+. Same as
    # <tt>capabilities.supports?(feature, value)</tt>.
    #
    #   sandbox.supports?(:write)            # => true
    #   sandbox.supports?(:network, :none)   # => true

    ##
    # :method: allows?
    # :call-seq:
    #   allows?(operation, path = nil) -> true or false
    #
    # Whether +operation+ (<tt>:read</tt>, <tt>:list</tt>, <tt>:write</tt>, <tt>:replace</tt>, <tt>:execute</tt> or
    # a full feature name) is allowed, and with a logical +path+, whether it is allowed there. Never raises for a
    # bad, hidden or escaping path: the answer is then false. A file that does not exist yet is allowed for write.
    #
    #   sandbox.allows?(:write)                        # => true
    #   sandbox.allows?(:write, "notes.md")            # => true
    #   sandbox.allows?(:write, "source/app.rb")       # => false (source is read-only)
    #   sandbox.allows?(:read, "../etc/passwd")        # => false

    ##
    # :method: writable?
    # :call-seq:
    #   writable? -> true or false
    #
    # Whether file mutation is possible: the backend supports writes and some tool-visible (+files+) grant is
    # read-write. Runtime-only grants do not count. Tools offer write operations only when this is true.
    #
    #   sandbox.writable?   # => true for files: {root: :read_write}

    ##
    # :method: scope
    # :call-seq:
    #   scope(profile = nil, files: nil, runtime_paths: nil, capabilities: nil, network: nil) -> Scope
    #
    # Returns a non-owning LittleGhost::Sandbox::Scope that can only narrow this sandbox: fewer grants, read-only
    # instead of read-write, fewer capabilities, less network. Hand the scope (not the sandbox) to a tool or child
    # agent: whoever holds the sandbox keeps its full authority.
    #
    # +profile+ names an entry of the +profiles:+ given to ::new (a Hash of these keywords, or a callable called
    # with <tt>workspace:</tt> and <tt>policy:</tt>). +files+ and +runtime_paths+ are a Hash
    # <tt>{name => access}</tt>, an Array of names (keeping their access) or <tt>[]</tt>; +capabilities+ a
    # Capabilities or an Array of feature names; +network+ +false+ (<tt>:none</tt>), +true+/+nil+ (unchanged) or a
    # NetworkPolicy value. Under an allowlist, <tt>network: {allow: [...], secrets: [...]}</tt> narrows it: each
    # entry must be covered by one of the sandbox's (same or narrower destination, methods and paths), +secrets+
    # names the sandbox's secrets to keep (an Array of names, or <tt>{name => {destinations: [...]}}</tt> with
    # destinations among the secret's; without +secrets+ the scope keeps each secret its entries still reach, limited
    # to those destinations; <tt>{secrets: [...]}</tt> alone keeps every entry). The scope's launches go through a
    # view of the sandbox's built-in gateway serving only the narrowed rules, on its own socket (opened at the first
    # launch, closed with the sandbox), and get only the kept secrets' stand-ins.
    #
    # Raises LittleGhost::CapabilityError when the request would widen ("sandbox scope cannot expose a path outside
    # its parent", "read-only mount writable", "sandbox scope cannot widen network access"),
    # LittleGhost::PolicyError for an unknown profile ("unknown sandbox scope profile: ...") and ArgumentError when a
    # profile is combined with keywords.
    #
    #   tools = sandbox.scope(files: {source: :read_only}, network: false)
    #   tools.read("source/app.rb")   # allowed
    #   tools.write("notes.md", "x")  # LittleGhost::ToolError: Path is outside the sandbox scope
    #   reader = sandbox.scope(network: {allow: [{destination: "api.github.com:443", methods: %w[GET]}],
    #                                    secrets: [:github]})

    ##
    # :method: open
    # :call-seq:
    #   open(run: nil) -> self
    #   open(run: nil) { |sandbox| ... } -> result of the block
    #
    # Opens the run-scoped resources (isolated backends check their executable and grants and run a functional
    # probe) and returns self; idempotent. Operations also open lazily. With a block, yields self, always closes
    # the sandbox when the block ends (even by an exception), and returns the block's value.
    #
    # Raises what the backend raises: LittleGhost::DependencyError (for example +bwrap+ missing or user namespaces
    # blocked, with what to install or enable), LittleGhost::UnsupportedPlatformError, LittleGhost::PolicyError.
    #
    #   sandbox.open { |box| box.read("notes.md") }   # => "hello\n", sandbox closed again

    ##
    # :method: close
    # :call-seq:
    #   close -> nil
    #
    # Releases the sandbox's resources and terminates every live process and ProcessSession the sandbox or its
    # scopes started (TERM, a short grace, then KILL) before returning. Idempotent; a later operation reopens
    # lazily. Close the sandbox before its workspace.
    #
    #   session = sandbox.start_program(["sleep", "60"])
    #   sandbox.close
    #   session.alive?   # => false

    ##
    # :method: read
    # :call-seq:
    #   read(path, context: nil) -> String
    #
    # Reads the UTF-8 text file at the logical +path+ through the broker: no symbolic links are followed, only
    # regular files with a single link are read, and at most <tt>limits.read_bytes</tt> bytes. +context+ is nil or
    # an object whose <tt>check!</tt> is called first (and may raise to cancel).
    #
    # Raises LittleGhost::ToolError with a message safe to show a model: "Path does not exist", "Path is not a
    # file", "File exceeds the read limit", "File is not valid UTF-8 text", "Path cannot be a symbolic link",
    # "Path is outside the sandbox scope", "workspace path traversal is not allowed", "workspace paths must be
    # relative or use workspace://". A +path+ (here, and in every file operation, +cwd:+ and +chdir:+) is a String
    # or answers +to_path+ (TypeError otherwise); its bytes are the path whatever ASCII-compatible encoding tags
    # it, and a String in an encoding that is not ASCII-compatible (UTF-16, UTF-32) raises ArgumentError "path
    # must be in an ASCII-compatible encoding such as UTF-8 (got String in UTF-16LE)".
    #
    #   sandbox.read("notes.md")                  # => "hello\n"
    #   sandbox.read("workspace://source/app.rb") # => "puts 1\n"
    #   sandbox.read("../etc/passwd")             # LittleGhost::ToolError: workspace path traversal is not allowed

    ##
    # :method: list
    # :call-seq:
    #   list(path = ".", context: nil) -> String
    #
    # Lists the directory at the logical +path+: entry names sorted bytewise, one per line, directories with a
    # trailing <tt>/</tt>, no trailing newline (<tt>""</tt> for an empty directory). Runtime-only paths are left out.
    #
    # One line is always one entry. A name that is not valid UTF-8, holds a control character (or U+2028/U+2029),
    # starts with <tt>"</tt> or +~+, or starts or ends with a space is shown quoted: between double quotes, with
    # <tt>\\</tt>, <tt>\"</tt>, <tt>\n</tt>, <tt>\r</tt>, <tt>\t</tt> and <tt>\xNN</tt> (one byte) escapes. Every
    # file operation (and Workspace#resolve) reads a path component in that form back as the name, so each line
    # can be given back as it is (joined to its directory with <tt>/</tt>).
    #
    # Raises LittleGhost::ToolError: "Path does not exist", "Path is not a directory", "Path cannot traverse a
    # symbolic link", "Directory exceeds the listing limit" (<tt>limits.list_entries</tt>), "Path is outside the
    # sandbox scope".
    #
    #   sandbox.list          # => "notes.md\nsource/"
    #   sandbox.list("source") # => "app.rb"
    #   sandbox.list("inbox")  # => "\"notes.md\\nINSTRUCTIONS.md\"\nplain.md"
    #   sandbox.read("inbox/\"notes.md\\nINSTRUCTIONS.md\"")   # the file whose name holds a line feed

    ##
    # :method: write
    # :call-seq:
    #   write(path, content, context: nil) -> String
    #
    # Atomically replaces (or creates) the file at the logical +path+ with the String +content+ and returns
    # <tt>"Wrote N bytes to PATH"</tt> (the logical path, never the host path). Parent directories are not created;
    # an existing file keeps its permission bits.
    #
    # Raises LittleGhost::ToolError: "Sandbox scope is read-only", "Content exceeds the write limit"
    # (<tt>limits.write_bytes</tt>), "Write target parent does not exist", "Write target cannot be a symbolic link",
    # "Path is not a file", "Multiply-linked files are not accessible through sandbox tools"; TypeError when
    # +content+ is not a String.
    #
    #   sandbox.write("notes.md", "hello\n")    # => "Wrote 6 bytes to notes.md"
    #   sandbox.write("source/app.rb", "x")     # LittleGhost::ToolError: Sandbox scope is read-only

    ##
    # :method: replace
    # :call-seq:
    #   replace(path, old_text, new_text, context: nil) -> String
    #
    # Replaces the single occurrence of +old_text+ in the file at the logical +path+ with +new_text+ (inserted
    # literally: no <tt>\\1</tt> expansion) and writes the result as #write does, returning its message.
    #
    # Raises LittleGhost::ToolError: "Text to replace cannot be empty", "Text was not found in PATH", "Text occurs
    # more than once in PATH", plus the errors of #read and #write.
    #
    #   sandbox.replace("notes.md", "hello", "bye")   # => "Wrote 4 bytes to notes.md"

    ##
    # :method: execute_program
    # :call-seq:
    #   execute_program(argv, timeout:, context: nil, output_bytes: nil, kill_on_output_limit: false, environment: {}, inherit_environment: false, scope: nil, cwd: nil, memory_bytes: nil, tasks: nil, cpu_seconds: nil, allow_subprocesses: nil) -> Execution
    #   execute_program(argv, timeout:, **options) { |stream, chunk| ... } -> Execution
    #
    # Runs the argument vector +argv+ (never through a shell) to completion and returns its
    # LittleGhost::Sandbox::Execution. The child gets closed stdin, its own process group, the workspace root (or
    # the logical +cwd+) as working directory, and only an explicit environment: the workspace variables
    # (<tt>LITTLE_GHOST_WORKSPACE_ROOT</tt>, ...), the policy's values, then +environment+. The host environment is
    # inherited only if the policy's environment <em>and</em> this call (<tt>inherit_environment: true</tt>) opt
    # in. Each stream keeps at most +output_bytes+ (default <tt>limits.output_bytes</tt>; +max_output_bytes+ is
    # the older spelling, accepted by #execute_program and #start_program alike), then
    # <tt>"\n[output truncated]"</tt>. A program that is missing gives exit code 127, one that cannot be run 126.
    # +scope+ runs the child with a Scope's narrower grants (Scope#execute_program passes it). When the call
    # returns, no member of the child's process group is left running.
    #
    # <tt>allow_subprocesses: false</tt> refuses <tt>fork</tt> to the child (threads still work) where the
    # backend can enforce it (capability <tt>:process_spawn_denial</tt>), as #start_program does; nil keeps the
    # backend's default; the Unrestricted backend raises LittleGhost::CapabilityError for +false+.
    #
    # With <tt>kill_on_output_limit: true</tt> the first byte past +output_bytes+ ends the child (TERM, grace,
    # KILL) instead of being dropped until it exits: the Execution then has the kept prefix with the truncation
    # marker and a nil +exit_code+. With a block, every chunk of output is yielded as it arrives, in the calling
    # thread, as <tt>(:stdout or :stderr, frozen binary String)</tt> (the kept bytes, in order); the Execution is
    # still returned, and an exception from the block kills the tree and propagates.
    #
    # Whole-tree limits (positive Integers; nil means the backend's <tt>process_limits:</tt> default, else
    # unlimited): +memory_bytes+ (anonymous memory, tmpfs pages and page cache the tree causes), +tasks+ (processes
    # and threads alive at once) and +cpu_seconds+ (CPU time of the whole tree). Where the host gives a writable
    # cgroup (capabilities <tt>:memory_limit</tt>, <tt>:task_limit</tt>, <tt>:cpu_limit</tt>; Sandbox.probe's <tt>:limits</tt> says
    # why not) each launch runs in a cgroup made for it and removed after it: past +memory_bytes+ the kernel
    # OOM-kills inside it and the call raises LittleGhost::ToolError "Program memory exceeded N bytes"; past
    # +tasks+, <tt>fork</tt> fails with EAGAIN inside the child and nothing is killed; past +cpu_seconds+ the tree
    # is terminated and the call raises LittleGhost::ToolError "Program CPU time exceeded N seconds". Without one,
    # +memory_bytes+ is <em>sampled</em> every 100 ms over /proc (bursts can pass it), +cpu_seconds+ is the
    # <em>per-process</em> RLIMIT_CPU (capability <tt>:process_cpu_limit</tt> instead of <tt>:cpu_limit</tt>:
    # SIGXCPU at +cpu_seconds+, SIGKILL one second later; the program's end by it raises the same error on every
    # backend), and +tasks+ raises LittleGhost::CapabilityError before anything runs.
    #
    # Raises LittleGhost::Sandbox::TimeoutError, a LittleGhost::ToolError, "Command timed out after SECONDS
    # seconds" (the process tree is killed first); its +execution+ holds what the child wrote until then.
    # Also
    # LittleGhost::ToolError "Command must contain an executable" for an empty argv, ArgumentError "timeout must be
    # positive" (or "NAME must be a positive Integer" for a limit); an exception from <tt>context.check!</tt> kills the tree and propagates unchanged. Backends add
    # their own (LittleGhost::PolicyError "sandbox working directory is outside the selected scope",
    # LittleGhost::DependencyError).
    #
    #   result = sandbox.execute_program(["ls", "-a"], timeout: 10)
    #   result.stdout      # => ".\n..\nnotes.md\nsource\n"
    #   result.success?    # => true
    #   sandbox.execute_program(["sh", "-c", "exit 3"], timeout: 10).exit_code   # => 3
    #   sandbox.execute_program(["make"], timeout: 600) { |stream, chunk| $stdout.write(chunk) }
    #   begin
    #     sandbox.execute_program(["sh", "-c", "echo partial; sleep 3"], timeout: 1)
    #   rescue LittleGhost::ToolError => e
    #     e.execution.stdout   # => "partial\n" (e is a LittleGhost::Sandbox::TimeoutError)
    #   end

    ##
    # :method: start_program
    # :call-seq:
    #   start_program(argv, context: nil, environment: {}, inherit_environment: false, scope: nil, cwd: nil, timeout: nil, output_bytes: nil, memory_bytes: nil, tasks: nil, cpu_seconds: nil, file_bytes: nil, allow_subprocesses: nil) -> ProcessSession
    #
    # Starts +argv+ as a long-lived child with stdin, stdout and stderr pipes and returns the
    # LittleGhost::Sandbox::ProcessSession that owns its process group; the caller must #close it (closing the
    # sandbox closes it too). The environment, +cwd+ and +scope+ follow #execute_program. +output_bytes+ (default
    # <tt>limits.output_bytes</tt>) bounds stdout and stderr together; +memory_bytes+, +tasks+ and +cpu_seconds+
    # limit the whole tree as for #execute_program (a passed memory or CPU limit is raised by the session's next
    # call as the LittleGhost::Sandbox::LimitError +execute_program+ raises, its +execution+ holding the output
    # no +read+ returned; closing the session kills whatever is left in its cgroup); +file_bytes+ becomes
    # RLIMIT_FSIZE.
    #
    # +timeout+ (seconds, through <tt>Float()</tt>, positive and finite as for #execute_program; nil, the default,
    # means no bound) bounds the session's whole life: once it passes with the program still running, the program
    # and everything it started are terminated (TERM, a short grace, KILL, then whatever is left in its cgroup),
    # #alive? answers false, and the next +read+ or +wait+ raises the LittleGhost::Sandbox::TimeoutError
    # #execute_program raises ("Command timed out after 2.0 seconds"), whose +execution+ holds the output nobody
    # had read yet and how the program ended; every later +read+/+wait+ raises the same error. Like
    # #execute_program's, a timeout is not a Denial. (<tt>wait(timeout:)</tt> bounds only that one wait.)
    #
    # <tt>allow_subprocesses: false</tt> forbids
    # the child to create processes where the backend can enforce it (capability
    # <tt>:process_spawn_denial</tt>); nil means the backend's default.
    #
    # Raises LittleGhost::CapabilityError when +allow_subprocesses+ cannot be honoured, LittleGhost::ToolError
    # "Command must contain an executable", ArgumentError for a non-positive limit; an exception from
    # <tt>context.check!</tt> (called once, before spawning) propagates.
    #
    #   session = sandbox.start_program(["cat"])
    #   session.write("ping\n")
    #   session.close_write
    #   session.read(timeout: 1).stdout   # => "ping\n"
    #   session.wait(timeout: 5).success? # => true
    #   session.close
    #
    #   session = sandbox.start_program(["sh", "-c", "echo working; sleep 600"], timeout: 2)
    #   begin
    #     session.wait
    #   rescue LittleGhost::Sandbox::TimeoutError => e
    #     e.execution.stdout   # => "working\n"
    #   end
    #   session.alive?         # => false
    #   session.close

    ##
    # :method: on_denial
    # :call-seq:
    #   on_denial { |denial| ... } -> Proc
    #
    # Subscribes the block to this sandbox's denials (see Denial): every refusal of the broker or of a scope's
    # capabilities (through this sandbox or any of its scopes), and every program ended at a resource limit. Returns
    # the block as a Proc, the handle #off_denial takes. Blocks run in the order they subscribed.
    #
    # The block runs in the thread that was refused, before the refused call raises its ToolError (for a session,
    # the thread whose +read+/+wait+ noticed the limit); where +memory_bytes+ falls back to sampling, in the
    # session's monitor thread. A block that raises a StandardError is
    # reported with +Kernel#warn+ and otherwise ignored: the other blocks still run and the refused call raises
    # (or returns) exactly what it would have. Other exceptions (Interrupt, +throw+, Thread#kill) propagate.
    #
    # The built-in gateway's 403s are refused on its own threads, where Ruby cannot run: they reach the blocks in
    # order on the sandbox's event thread, a Ruby Thread the sandbox starts when a gateway and a block are both
    # present (again after +fork+) and ends at +close+ once the queued ones are delivered. There any exception a
    # block raises is reported with +Kernel#warn+. The gateway never waits for a block: past 1024 undelivered
    # denials, new ones skip the blocks (they are still in #denials) and a warning says how many.
    #
    # Raises ArgumentError without a block.
    #
    #   handle = sandbox.on_denial { |denial| logger.warn("refused #{denial.operation} #{denial.target}: #{denial.reason}") }
    #   sandbox.write("docs/readme.md", "x")   # raises ToolError; the block ran first
    #   sandbox.off_denial(handle)

    ##
    # :method: off_denial
    # :call-seq:
    #   off_denial(handle) -> true or false
    #
    # Unsubscribes the Proc #on_denial returned; true if it was subscribed, false otherwise.
    #
    #   handle = sandbox.on_denial { |denial| p denial }
    #   sandbox.off_denial(handle)   # => true
    #   sandbox.off_denial(handle)   # => false

    ##
    # :method: denials
    # :call-seq:
    #   denials -> Array of Denial
    #
    # The most recent denials of this sandbox and its scopes, oldest first, as a frozen Array: at most 100 are
    # kept, older ones are dropped. Each call returns new (equal) Denial values.
    #
    #   sandbox.write("docs/readme.md", "x") rescue nil   # docs is read-only
    #   sandbox.denials.last.to_h
    #   # => {kind: :filesystem, operation: :write, target: "docs/readme.md", reason: :read_only,
    #   #     message: "Sandbox scope is read-only: docs/readme.md", time: 2026-11-30 17:16:27 +0000}

    ##
    # :method: on_network
    # :call-seq:
    #   on_network { |event| ... } -> Proc
    #
    # Subscribes the block to this sandbox's egress record (see NetworkEvent): every tunnel and every request
    # through its built-in gateway, allowed or refused, from the sandbox's programs and its scopes'. Returns the
    # block as a Proc, the handle #off_network takes. Blocks run in the order they subscribed.
    #
    # The gateway records events on its own threads, where Ruby cannot run: they reach the blocks in the order
    # they were recorded, on the sandbox's event thread for network events (a Ruby Thread the sandbox starts when a
    # gateway and a block are both present, again after +fork+, never the caller's). +close+ delivers every queued
    # event before it returns, then ends that thread. Any exception a block raises is reported with +Kernel#warn+
    # and the next events still arrive. The gateway never waits for a block: past 1024 undelivered events, new
    # ones skip the blocks (they are still in #network_log) and a warning says how many.
    #
    # A sandbox without the built-in gateway (no +:allowlist+ network, or a backend without one) has no events.
    # Raises ArgumentError without a block.
    #
    #   handle = sandbox.on_network do |event|
    #     logger.info("#{event.decision} #{event.http_method} #{event.destination}#{event.path} -> #{event.status}")
    #   end
    #   sandbox.execute_program(["curl", "-s", "http://example.com/"], timeout: 30)
    #   sandbox.off_network(handle)

    ##
    # :method: off_network
    # :call-seq:
    #   off_network(handle) -> true or false
    #
    # Unsubscribes the Proc #on_network returned; true if it was subscribed, false otherwise.
    #
    #   handle = sandbox.on_network { |event| p event }
    #   sandbox.off_network(handle)   # => true
    #   sandbox.off_network(handle)   # => false

    ##
    # :method: network_log
    # :call-seq:
    #   network_log -> Array of NetworkEvent
    #
    # The most recent network events of this sandbox and its scopes, oldest first, as a frozen Array: at most 100
    # are kept, older ones are dropped (subscribe with #on_network to see them all; the gateway itself keeps the
    # last 1000, Network::BuiltinGateway#network_log). Each call returns new (equal) NetworkEvent values. Empty
    # without the built-in gateway.
    #
    #   sandbox.execute_program(["curl", "-s", "http://example.com/"], timeout: 30)
    #   sandbox.network_log.last.to_h.slice(:destination, :method, :path, :status, :decision)
    #   # => {destination: "example.com:80", method: "GET", path: "/", status: 200, decision: :allowed}

    ##
    # :method: inspect
    # :call-seq:
    #   inspect -> String
    #
    # What a user needs to know about the sandbox, never its internal state: the class and the provider name it
    # is registered under, the workspace root, the effective file and runtime grants with their access, the
    # network mode (+default+ when the policy leaves it to the backend) and whether it is open or closed.
    #
    #   sandbox.inspect
    #   # => "#<LittleGhost::Sandboxes::Bubblewrap provider=:bubblewrap root=\"/srv/agent\" files={root: :read_write, source: :read_only} runtime_paths={} network=:none open>"
  end
end
