# frozen_string_literal: true

require "json"
require "optparse"
require "shellwords"
require_relative "../sandbox"

module LittleGhost
  class Sandbox
    # The `littleghost-sandbox` command (exe/littleghost-sandbox), built only on the gem's public Ruby API.
    #
    #   littleghost-sandbox run [options] -- COMMAND [ARGS...]
    #   littleghost-sandbox probe [--json] [--provider NAME]...
    #
    # +run+ starts COMMAND in a sandbox (Workspace + Sandbox.build + Sandbox#start_program), streams its stdout
    # and stderr to ours as they arrive, forwards our stdin to it, and exits with its status, the way `env`,
    # `timeout` and `docker run` do:
    #
    # - the command's own exit status;
    # - 128 + N when signal N killed it;
    # - 124 when --timeout expired (like coreutils `timeout`), after a one-line message on stderr;
    # - 137 when the sandbox killed it for a limit (--memory, --cpu-seconds, --output-bytes), after a one-line
    #   message; the output written before the limit is printed first;
    # - 127 when COMMAND is not found and 126 when it cannot be executed, on every backend;
    # - 125 when the sandbox could not be set up (unknown or unavailable provider, bad grant, missing path);
    # - 125 for a usage error (the usage goes to stderr), as for a sandbox that cannot be set up: like `env` and
    #   `timeout`, a status the command's own 1 or 2 cannot be mistaken for;
    # - 130 (Ctrl-C) or 128 + N when this tool itself is interrupted; the child is terminated first.
    #
    # The workspace root (--root, default the current directory) is granted read-only; `--rw root` makes it
    # writable. `--rw PATH` / `--ro PATH` add an existing directory under the name of its last component
    # (`--rw NAME=PATH` names it). Sizes take K, M, G or T (powers of 1024: `500M`); durations take ms, s, m or h
    # (`1.5s`, `2m`; a bare number is seconds). `--allow HOST:PORT` (repeatable) switches the network to an
    # allowlist through the gem's gateway; `--allow-private` lets it reach loopback and private addresses;
    # `--secret NAME=ENVVAR@HOST:PORT` declares a gateway secret whose value is read from our ENVVAR (the command
    # gets only the stand-in $LITTLEGHOST_SECRET_NAME); `--inspect HOST:PORT` marks an entry `inspect: true`,
    # `--upstream-ca FILE` and `--resolve HOST=ADDR` set `upstream_ca:` and `resolve:`; gateway refusals are printed
    # on stderr with their reason after the command ends. The
    # child's environment is PATH (the host's) plus --env values, unless --inherit-env is given.
    #
    # `--pty` gives the command a terminal: its stdin, stdout and stderr are one pseudo-terminal made inside the
    # sandbox (Bubblewrap mounts a private /dev/pts, so `tty` prints /dev/pts/N of that instance and no terminal of
    # the host is reachable), relayed to ours; while ours is a terminal it is put in raw mode, so keys such as
    # Ctrl-C reach the command's terminal, and the command's terminal starts with our window size. It needs
    # script(1) from util-linux on the host. Backends whose sandbox has no private terminal device (Landlock,
    # Seatbelt) refuse it: exit 125 with a message, rather than handing the command a terminal of the host.
    #
    # +probe+ prints every backend (Landlock included): whether it is available here, why not, what it enforces
    # (features, network modes, isolation), which limits the kernel enforces, and which backend Native would pick.
    # `--json` prints the same as JSON. It exits 0, or 1 when a --provider named is unavailable.
    #
    #   LittleGhost::Sandbox::CLI.start(["run", "--", "echo", "hi"]) # prints "hi", returns 0
    class CLI
      # Exit status for a usage error: 125, like `env` and `timeout`, so a command's own status (often 2 for a usage
      # error of its own) is never mistaken for ours.
      USAGE_ERROR = 125
      # Exit status when the sandbox could not be set up (like `env`/`timeout` failing themselves).
      SETUP_ERROR = 125
      # Exit status when --timeout expired (like coreutils `timeout`).
      TIMED_OUT = 124
      # Exit status when the sandbox killed the command for a resource limit (128 + SIGKILL).
      LIMIT_KILLED = 128 + Signal.list.fetch("KILL")
      # Exit status when COMMAND was not found (like a shell, `env` and `docker run`).
      NOT_FOUND = 127
      # Exit status when COMMAND was found but could not be executed.
      NOT_EXECUTABLE = 126
      # Backends probed when no --provider is given: every built-in registration.
      BUILTIN_PROVIDERS = %i[native bubblewrap landlock seatbelt unrestricted].freeze
      # Size suffixes (powers of 1024, as `docker run --memory` and `ulimit` read them).
      SIZE_UNITS = { "" => 1, "k" => 1024, "m" => 1024**2, "g" => 1024**3, "t" => 1024**4 }.freeze
      # Duration suffixes, in seconds.
      DURATION_UNITS = { "" => 1, "ms" => 0.001, "s" => 1, "m" => 60, "h" => 3600 }.freeze
      # Seconds each read waits for output before the loop checks the deadline again.
      READ_SLICE = 0.05
      # Stands for "no output limit" (the session's combined counter needs a positive Integer).
      UNLIMITED_OUTPUT = (2**62) - 1

      USAGE = <<~TEXT
        Usage:
          littleghost-sandbox run [options] -- COMMAND [ARGS...]
          littleghost-sandbox probe [--json] [--provider NAME]...
          littleghost-sandbox --help | --version
      TEXT

      # Raised for a bad command line; the caller prints the message and the usage and exits 125.
      class UsageError < StandardError; end

      # Raised by a subcommand's -h/--help, so the help goes to the CLI's +out+ (not the process's $stdout) and
      # CLI.start returns 0 instead of OptionParser's built-in handler exiting the process.
      class HelpRequested < StandardError; end

      # The same for a subcommand's --version.
      class VersionRequested < StandardError; end

      # Runs the command line argv, writing to out and err and reading the child's stdin from input; returns the
      # exit status (an Integer) instead of exiting.
      #
      #   out = StringIO.new
      #   LittleGhost::Sandbox::CLI.start(%w[run --network none -- echo hi], out: out)   # => 0
      #   out.string                                                                      # => "hi\n"
      def self.start(argv, out: $stdout, err: $stderr, input: $stdin)
        new(out: out, err: err, input: input).start(Array(argv).map(&:to_s))
      end

      # A command line that writes to out and err and reads the child's stdin from input; CLI.start makes one.
      #
      #   out = StringIO.new
      #   LittleGhost::Sandbox::CLI.new(out: out, err: $stderr).start(%w[--version])   # => 0
      def initialize(out:, err:, input: nil)
        @out = out
        @err = err
        @input = input
      end

      # Runs the command line argv with this CLI's out, err and input; returns the exit status. See CLI.start.
      #
      #   LittleGhost::Sandbox::CLI.new(out: $stdout, err: $stderr).start(%w[probe])   # => 0
      def start(argv)
        command, *rest = argv
        case command
        when "run" then run(rest)
        when "probe" then probe(rest)
        when "-h", "--help", "help" then print_and_succeed(help_text)
        when "-v", "--version", "version" then print_and_succeed("littleghost-sandbox #{VERSION}\n")
        when nil then usage_error("missing subcommand")
        else usage_error("unknown subcommand: #{command}")
        end
      rescue HelpRequested
        print_and_succeed(help_text)
      rescue VersionRequested
        print_and_succeed("littleghost-sandbox #{VERSION}\n")
      rescue UsageError, OptionParser::ParseError => e
        usage_error(e.message)
      end

      private

      def print_and_succeed(text)
        @out.write(text)
        0
      end

      def usage_error(message)
        @err.puts("littleghost-sandbox: #{message}")
        @err.write(USAGE)
        @err.puts("Run `littleghost-sandbox --help` for the options.")
        USAGE_ERROR
      end

      def help_text
        "#{USAGE}\n#{run_parser({}).summarize.join}\n#{probe_parser({}).summarize.join}"
      end

      # ---- run -------------------------------------------------------------------------------------------------

      def run_parser(options)
        OptionParser.new do |parser|
          parser.banner = "run options:"
          help_option(parser)
          parser.on("--provider NAME", "Sandbox provider (default: native)") { |v| options[:provider] = v }
          parser.on("--root DIR", "Workspace root, granted read-only (default: the current directory)") do |v|
            options[:root] = v
          end
          parser.on("--rw [NAME=]PATH", "Grant an existing directory read-write (`--rw root`: the root)") do |v|
            add_grant(options, v, :read_write)
          end
          parser.on("--ro [NAME=]PATH", "Grant an existing directory read-only") { |v| add_grant(options, v, :read_only) }
          parser.on("--network MODE", %w[none inherit], "none or inherit (default: the backend's; none if isolated)") do |v|
            options[:network] = v.to_sym
          end
          parser.on("--allow HOST:PORT", "Allow a destination through the gateway (repeatable; implies the allowlist)") do |v|
            options[:allow] << v
          end
          parser.on("--allow-private", "Let --allow destinations be loopback or private addresses") do
            options[:allow_private] = true
          end
          parser.on("--secret NAME=ENVVAR@HOST:PORT",
                    "Give the command a stand-in for $ENVVAR's value, swapped in by the gateway toward HOST:PORT only " \
                    "(repeatable; allows HOST:PORT)") do |v|
            add_secret(options, v)
          end
          parser.on("--inspect HOST:PORT", "Read HTTPS requests to HOST:PORT (inspect: true; allows it)") do |v|
            options[:inspect] << v
          end
          parser.on("--upstream-ca FILE", "Also trust FILE's PEM certificates for inspected destinations") do |v|
            options[:upstream_ca] = File.expand_path(v)
          end
          parser.on("--resolve HOST=ADDR", "Make the gateway map HOST to the address ADDR (like curl --resolve)") do |v|
            host, address = v.split("=", 2)
            raise UsageError, "--resolve needs HOST=ADDR, got #{v.inspect}" if address.to_s.empty? || host.empty?

            if options[:resolve].key?(host) && options[:resolve][host] != address
              raise UsageError, "--resolve gives #{host} two addresses: #{options[:resolve][host]} and #{address}"
            end

            options[:resolve][host] = address
          end
          parser.on("--timeout DURATION", "Terminate the command after DURATION (1.5s, 2m); exit 124") do |v|
            options[:timeout] = duration(v, "--timeout")
          end
          parser.on("--memory SIZE", "--memory-bytes SIZE", "Kill the command when its memory passes SIZE (500M)") do |v|
            options[:memory_bytes] = size(v, "--memory")
          end
          parser.on("--tasks N", "Limit the command's processes and threads to N") do |v|
            options[:tasks] = size(v, "--tasks")
          end
          parser.on("--cpu-seconds DURATION", "Kill the command after DURATION of CPU time (whole seconds)") do |v|
            seconds = duration(v, "--cpu-seconds")
            raise UsageError, "--cpu-seconds must be whole seconds, got #{v}" unless seconds == seconds.round

            options[:cpu_seconds] = seconds.round
          end
          parser.on("--output-bytes SIZE", "Kill the command after SIZE of output (default: no limit)") do |v|
            options[:output_bytes] = size(v, "--output-bytes")
          end
          parser.on("--env NAME=VALUE", "Set a variable in the command's environment") do |v|
            name, value = v.split("=", 2)
            raise UsageError, "--env needs NAME=VALUE, got #{v.inspect}" if value.nil? || name.empty?

            options[:environment][name] = value
          end
          parser.on("--inherit-env", "Pass this process's whole environment to the command") do
            options[:inherit_environment] = true
          end
          parser.on("--pty", "Give the command a terminal (a pseudo-terminal inside the sandbox)") do
            options[:pty] = true
          end
        end
      end

      # -h/--help (and --version) answered by us, replacing OptionParser's built-in ones, which print to the
      # process's $stdout and exit it.
      def help_option(parser)
        parser.on_tail("-h", "--help", "Print this help") { raise HelpRequested }
        parser.on_tail("--version", "Print the version") { raise VersionRequested }
      end

      # "500M" -> 524288000; a positive whole number with an optional K/M/G/T suffix (powers of 1024).
      def size(text, option)
        match = /\A(\d+)\s*([kmgt]?)(?:i?b)?\z/i.match(text.strip)
        raise UsageError, "#{option} needs a size such as 4096, 64K or 500M, got #{text.inspect}" unless match

        value = Integer(match[1], 10) * SIZE_UNITS.fetch(match[2].downcase)
        raise UsageError, "#{option} must be positive" unless value.positive?

        value
      end

      # "1.5s" -> 1.5, "500ms" -> 0.5, "2m" -> 120; a bare number is seconds.
      def duration(text, option)
        match = /\A(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\z/i.match(text.strip)
        raise UsageError, "#{option} needs a duration such as 30, 1.5s, 500ms or 2m, got #{text.inspect}" unless match

        value = Float(match[1]) * DURATION_UNITS.fetch(match[2].to_s.downcase)
        raise UsageError, "#{option} must be positive" unless value.positive?

        value
      end

      # A secret's form: NAME=ENVVAR@HOST:PORT.
      SECRET_FORM = /\A(?<name>\w+)=(?<variable>[A-Za-z_]\w*)@(?<destination>[^@\s]+:[^@\s]+)\z/.freeze
      private_constant :SECRET_FORM

      # --secret NAME=ENVVAR@HOST:PORT: the value is read here, from our environment, and goes only into the
      # declaration's secrets: (the gateway holds it; the command gets a stand-in). The same NAME again adds a
      # destination.
      def add_secret(options, text)
        match = SECRET_FORM.match(text)
        raise UsageError, "--secret needs NAME=ENVVAR@HOST:PORT, got #{text.inspect}" unless match

        value = ENV.fetch(match[:variable], "")
        raise UsageError, "--secret #{match[:name]}: the environment variable #{match[:variable]} is not set" if value.empty?

        name = match[:name].downcase.to_sym
        secret = (options[:secrets][name] ||= { variable: match[:variable], value: value, destinations: [] })
        if secret[:variable] != match[:variable]
          raise UsageError, "--secret #{match[:name]} is given from both #{secret[:variable]} and #{match[:variable]}"
        end

        secret[:destinations] << match[:destination] unless secret[:destinations].include?(match[:destination])
      end

      def add_grant(options, value, access)
        name, path = value.include?("=") ? value.split("=", 2) : [nil, value]
        if (name || path) == "root" && path !~ %r{/}
          raise UsageError, "--rw/--ro root takes no PATH; use --root DIR" if name && !path.empty?

          options[:root_access] = access
          return
        end
        raise UsageError, "grant needs PATH or NAME=PATH, got #{value.inspect}" if path.nil? || path.empty?

        name ||= unique_grant_name(options, File.basename(File.expand_path(path)))
        raise UsageError, "grant name must be a word (letters, digits, _), got #{name.inspect}" unless name.match?(/\A\w+\z/)
        raise UsageError, "grant name #{name} is given twice" if options[:grants].key?(name.to_sym)

        options[:grants][name.to_sym] = [path, access]
      end

      # A grant name from a directory's last component: word characters only, never "root", unique.
      def unique_grant_name(options, base)
        base = base.gsub(/\W/, "_").sub(/\A_*\z/, "dir")
        base = "#{base}_dir" if base == "root"
        name = base
        counter = 1
        name = "#{base}_#{counter += 1}" while options[:grants].key?(name.to_sym)
        name
      end

      def run(argv)
        options = { environment: {}, grants: {}, root_access: :read_only, inherit_environment: false, allow: [],
                    inspect: [], secrets: {}, resolve: {} }
        command = run_parser(options).order(argv) # stops at "--" (removed) or at the first non-option
        raise UsageError, "run needs a COMMAND after --" if command.empty?

        workspace, sandbox = build(options)
        begin
          workspace.open
          sandbox.open
          status = supervise(sandbox, command, options)
          report_denials(sandbox)
          status
        ensure
          sandbox.close
          workspace.close
        end
      rescue LittleGhost::SandboxConfigurationError, LittleGhost::ConfigurationError, ArgumentError, KeyError,
             SystemCallError => e
        @err.puts("littleghost-sandbox: #{e.message}")
        SETUP_ERROR
      rescue SignalException => e
        # Ctrl-C (Interrupt, 130) or a TERM/HUP sent to us: the ensure clauses above ended the command first.
        128 + e.signo
      end

      # One stderr line for each refusal of the gateway, with its reason: the command usually sees only a 403, a
      # 502 or a cut connection.
      def report_denials(sandbox)
        sandbox.denials.each do |denial|
          next unless denial.kind == :network

          request = [denial.http_method, denial.target, denial.path].compact.join(" ")
          @err.puts("littleghost-sandbox: gateway refused #{denial.operation} #{request}: #{denial.reason}" \
                    "#{" (#{denial.message})" unless denial.message.to_s.empty?}")
        end
      end

      # The Workspace and the (unopened) Sandbox the options describe.
      def build(options)
        root = File.expand_path(options[:root] || Dir.pwd)
        paths = {}
        files = { root: options[:root_access] }
        options[:grants].each do |name, (path, access)|
          paths[name] = File.expand_path(path)
          files[name] = access
        end
        [root, *paths.values].each do |dir|
          raise ArgumentError, "not a directory: #{dir}" unless File.directory?(dir)
        end
        workspace = Workspace.new(root: root, paths: paths)
        environment = { inherit: options[:inherit_environment] }
        declaration = { provider: (options[:provider] || :native).to_sym, files: files, environment: environment }
        declaration[:network] = network(options)
        declaration.delete(:network) if declaration[:network].nil?
        [workspace, Sandbox.build(declaration, workspace: workspace)]
      end

      # Options that only make sense with the gateway's allowlist.
      ALLOWLIST_OPTIONS = { allow: "--allow", inspect: "--inspect", secrets: "--secret", resolve: "--resolve",
                            upstream_ca: "--upstream-ca" }.freeze
      private_constant :ALLOWLIST_OPTIONS

      # --network, or the allowlist that --allow, --inspect and --secret imply; nil leaves the backend's default.
      def network(options)
        given = ALLOWLIST_OPTIONS.select { |key, _| options[key] && !(options[key].respond_to?(:empty?) && options[key].empty?) }
        return options[:network] if given.empty?
        if options[:network]
          raise UsageError, "#{given.values.first} needs the allowlist; it cannot be combined with --network #{options[:network]}"
        end
        if options[:inherit_environment] && !options[:secrets].empty?
          # The secret's variable would reach the command with the rest of our environment.
          variables = options[:secrets].values.map { |secret| secret[:variable] }.join(", ")
          raise UsageError, "--secret cannot be combined with --inherit-env: the command would inherit #{variables}; " \
                            "pass what it needs with --env"
        end

        declaration = { allow: allowlist(options), allow_private_destinations: options[:allow_private] || false }
        unless options[:secrets].empty?
          declaration[:secrets] = options[:secrets].transform_values { |secret| secret.slice(:value, :destinations) }
        end
        declaration[:upstream_ca] = options[:upstream_ca] if options[:upstream_ca]
        declaration[:resolve] = options[:resolve] unless options[:resolve].empty?
        declaration
      end

      # The --allow destinations, then those --inspect and --secret name, each once; an --inspect one as
      # {destination:, inspect: true}.
      def allowlist(options)
        destinations = options[:allow] + options[:inspect] + options[:secrets].values.flat_map { |s| s[:destinations] }
        destinations.uniq.map do |destination|
          options[:inspect].include?(destination) ? { destination: destination, inspect: true } : destination
        end
      end

      # Starts the command, streams its output until it ends or times out, and returns the exit status.
      def supervise(sandbox, command, options)
        environment = options[:inherit_environment] ? {} : { "PATH" => ENV.fetch("PATH", "/usr/local/bin:/usr/bin:/bin") }
        environment = environment.merge(options[:environment])
        path = (options[:inherit_environment] ? ENV : environment)["PATH"]
        missing = unrunnable(command.first, sandbox.workspace.root, path)
        return exec_failed(command.first, missing) if missing

        if options[:pty]
          refusal = pty_refusal(sandbox, path)
          return setup_failed(refusal) if refusal

          command = in_terminal(command)
        end

        limits = options.slice(:memory_bytes, :tasks, :cpu_seconds).compact
        begin
          session = sandbox.start_program(
            command,
            environment: environment,
            inherit_environment: options[:inherit_environment],
            output_bytes: options[:output_bytes] || UNLIMITED_OUTPUT,
            **limits
          )
        rescue Errno::ENOENT, Errno::EACCES => e
          # Spawned directly (no wrapper in between): report like a shell does.
          return exec_failed(command.first, e.is_a?(Errno::ENOENT) ? NOT_FOUND : NOT_EXECUTABLE)
        end
        raw_terminal(options[:pty]) do
          feeder = feed_stdin(session)
          begin
            stream(session, options[:timeout])
          ensure
            feeder&.kill&.join
            session.close
          end
        end
      end

      # The program that makes a pseudo-terminal inside the sandbox and relays it to the session's pipes.
      PTY_WRAPPER = "script"
      # Isolations whose sandbox has a terminal device of its own to give: Bubblewrap's private /dev/pts
      # (namespace) and the host's (none: Unrestricted confines nothing anyway).
      PTY_ISOLATIONS = %i[namespace none].freeze
      # script(1)'s own failure to make the terminal (its stderr; the command's output goes to the terminal).
      PTY_FAILURE = /\Ascript: (failed to create pseudo-terminal|cannot open \S+): .*\n\z/.freeze
      private_constant :PTY_WRAPPER, :PTY_ISOLATIONS, :PTY_FAILURE

      # Why --pty cannot be honoured here, or nil.
      def pty_refusal(sandbox, path)
        isolation = sandbox.capabilities.isolation
        unless PTY_ISOLATIONS.include?(isolation)
          return "--pty: the #{isolation} sandbox has no terminal device of its own to give the command " \
                 "(it would have to reach the host's /dev/pts); use --provider bubblewrap"
        end
        return nil unless unrunnable(PTY_WRAPPER, sandbox.workspace.root, path)

        "--pty needs #{PTY_WRAPPER}(1) from util-linux on the command's PATH"
      end

      # +command+ run by script(1) on a new pseudo-terminal that starts with our window size: `script -q -e`
      # copies the session's stdin to the terminal and the terminal to its stdout, and exits with the command's
      # status.
      def in_terminal(command)
        size = terminal_size
        resize = size ? "stty rows #{size[0]} cols #{size[1]} 2>/dev/null; " : ""
        [PTY_WRAPPER, "-q", "-e", "-c", "#{resize}exec #{Shellwords.join(command)}", "/dev/null"]
      end

      # Our terminal's [rows, columns], when stdin is a terminal that knows them.
      def terminal_size
        return nil unless @input.respond_to?(:tty?) && @input.tty?

        require "io/console"
        rows, columns = @input.winsize
        rows.positive? && columns.positive? ? [rows, columns] : nil
      rescue SystemCallError, NotImplementedError
        nil
      end

      # Yields with our stdin in raw mode when +pty+ and it is a terminal (the command's own terminal does the
      # echoing and line editing, as with `ssh -t` or `docker run -t`); restores it afterwards.
      def raw_terminal(pty, &block)
        return yield unless pty && @input.respond_to?(:tty?) && @input.tty?

        require "io/console"
        @input.raw(&block)
      end

      def setup_failed(message)
        @err.puts("littleghost-sandbox: #{message}")
        SETUP_ERROR
      end

      # 127 or 126 when +program+ is certainly not runnable: it names no file on the child's PATH (or from the
      # workspace root), or the file is not executable. The sandbox sees the host's system directories, so this
      # answers before anything starts on every backend; what only the sandbox hides is caught by
      # #bwrap_exec_failure.
      def unrunnable(program, root, path)
        candidates = if program.include?("/")
                       [File.expand_path(program, root)]
                     else
                       path.to_s.split(":").reject(&:empty?).map { |dir| File.join(File.expand_path(dir, root), program) }
                     end
        found = candidates.select { |file| File.file?(file) }
        return NOT_FOUND if found.empty?

        found.any? { |file| File.executable?(file) } ? nil : NOT_EXECUTABLE
      end

      def exec_failed(program, status)
        @err.puts("littleghost-sandbox: #{program}: #{status == NOT_FOUND ? 'command not found' : 'permission denied'}")
        status
      end

      def stream(session, timeout)
        deadline = timeout && (now + timeout)
        @exec_failure = @held_back = nil
        seen_output = false
        loop do
          remaining = deadline && (deadline - now)
          return timed_out(session, timeout) if remaining && remaining <= 0

          chunk = session.read(timeout: remaining ? [READ_SLICE, remaining].min : READ_SLICE)
          empty = chunk.stdout.empty? && chunk.stderr.empty?
          if !seen_output && !empty && (@exec_failure = bwrap_exec_failure(chunk))
            @held_back = chunk # shown only if the exit status says it was the program's own output
          else
            copy_held_back unless empty
            copy(chunk)
          end
          seen_output ||= !empty
          break if chunk.eof
          # Both pipes closed while the command still runs: nothing to read, so do not spin.
          sleep(0.01) if empty
        end
        status = exit_status(session.wait)
        if @exec_failure && status == 1
          return setup_failed("--pty: #{@exec_failure[:message]}") if @exec_failure[:status] == SETUP_ERROR

          return exec_failed(@exec_failure[:program], @exec_failure[:status])
        end

        copy_held_back
        status
      rescue LittleGhost::ToolError => e
        # A resource limit (memory, CPU, output) ended the command; the session has already killed it. What it
        # wrote that no read returned (for the output limit: what fit under it) rides on the LimitError.
        copy_held_back
        copy_execution(e)
        @err.puts("littleghost-sandbox: #{e.message}")
        LIMIT_KILLED
      rescue Errno::EPIPE
        # Whoever reads our output went away (`... | head`): stop the command like a shell pipeline would.
        128 + Signal.list.fetch("PIPE")
      end

      # bwrap's own execvp failures: the reasons the core reads as "not found" for execute_program
      # (backend/bubblewrap/exec_failure.rs); the other reasons it reads there mean "cannot execute". Keep the two
      # lists equal.
      BWRAP_NOT_FOUND = ["No such file or directory", "Not a directory"].freeze
      BWRAP_NOT_EXECUTABLE = ["Permission denied", "Exec format error", "Operation not permitted"].freeze
      BWRAP_EXEC_FAILURE = /\Abwrap: execvp (.+): (#{Regexp.union(BWRAP_NOT_FOUND + BWRAP_NOT_EXECUTABLE).source})\n\z/.freeze
      private_constant :BWRAP_NOT_FOUND, :BWRAP_NOT_EXECUTABLE, :BWRAP_EXEC_FAILURE

      # Bubblewrap reports a program it cannot execute inside the sandbox as exit 1 with exactly
      # "bwrap: execvp PROGRAM: REASON" on stderr and nothing else (its C locale's wording). When the first output
      # is exactly that, it is held back until more output or the exit status says whose it was.
      def bwrap_exec_failure(chunk)
        if (pty = PTY_FAILURE.match(chunk.stderr)) && chunk.stdout.empty?
          # script(1) could not make the terminal the sandbox was expected to have.
          return { message: pty[0].chomp, status: SETUP_ERROR }
        end
        match = BWRAP_EXEC_FAILURE.match(chunk.stderr)
        return nil unless match && chunk.stdout.empty?

        status = BWRAP_NOT_FOUND.include?(match[2]) ? NOT_FOUND : NOT_EXECUTABLE
        { program: match[1], status: status }
      end

      def copy_held_back
        copy(@held_back) if @held_back
        @held_back = @exec_failure = nil
      end

      def timed_out(session, timeout)
        session.terminate
        copy(session.read(timeout: 0)) # what the command wrote before it was stopped
        @err.puts("littleghost-sandbox: command timed out after #{timeout} seconds")
        TIMED_OUT
      end

      # The output a LimitError kept (its Execution's stdout and stderr), if it carries any.
      def copy_execution(error)
        execution = error.respond_to?(:execution) ? error.execution : nil
        return unless execution

        write(@out, execution.stdout.to_s)
        write(@err, execution.stderr.to_s)
      end

      def copy(chunk)
        write(@out, chunk.stdout)
        write(@err, chunk.stderr)
      end

      def write(io, bytes)
        return if bytes.empty?

        io.write(bytes)
        io.flush
      end

      def exit_status(status)
        return status.exitstatus if status.exitstatus
        return 128 + status.termsig if status.termsig

        1
      end

      # Copies our stdin to the command's in a thread, closing its stdin at our EOF; nil without input.
      def feed_stdin(session)
        unless @input
          session.close_write
          return nil
        end
        Thread.new do
          loop { session.write(@input.readpartial(16 * 1024)) }
        rescue EOFError
          session.close_write
        rescue IOError, SystemCallError, LittleGhost::Error
          nil # the command exited or closed its stdin; its status tells the rest
        end
      end

      def now
        Process.clock_gettime(Process::CLOCK_MONOTONIC)
      end

      # ---- probe -----------------------------------------------------------------------------------------------

      def probe_parser(options)
        OptionParser.new do |parser|
          parser.banner = "probe options:"
          help_option(parser)
          parser.on("--json", "Print JSON: {NAME: {available, reason, features, network_modes, isolation, limits, backend}}") do
            options[:json] = true
          end
          parser.on("--provider NAME", "Probe only NAME (repeatable); exit 1 if one is unavailable") do |v|
            (options[:providers] ||= []) << v.to_sym
          end
        end
      end

      def probe(argv)
        options = {}
        extra = probe_parser(options).parse(argv)
        raise UsageError, "probe takes no arguments: #{extra.join(' ')}" unless extra.empty?

        names = options[:providers] || BUILTIN_PROVIDERS
        report = names.to_h { |name| [name, describe(name)] }
        options[:json] ? @out.puts(JSON.pretty_generate(report)) : print_report(report)
        options[:providers] && report.values.any? { |entry| !entry[:available] } ? 1 : 0
      end

      def describe(name)
        result = Sandbox.probe(name)
        capabilities = result[:capabilities]
        entry = {
          available: result[:available], reason: result[:reason],
          features: capabilities.features.map(&:to_s), network_modes: capabilities.network_modes.map(&:to_s),
          isolation: capabilities.isolation.to_s
        }
        entry[:backend] = result[:backend].to_s if result[:backend]
        entry[:bubblewrap_reason] = result[:bubblewrap_reason] if result[:bubblewrap_reason]
        entry[:limits] = result[:limits].transform_values { |v| v == true ? true : v.to_s } if result[:limits]
        entry
      end

      def print_report(report)
        report.each do |name, entry|
          unless entry[:available]
            @out.puts("#{name}: unavailable")
            @out.puts("  reason: #{entry[:reason]}")
            next
          end
          @out.puts("#{name}: available#{" (picks #{entry[:backend]})" if entry[:backend]}")
          @out.puts("  why not bubblewrap: #{entry[:bubblewrap_reason]}") if entry[:bubblewrap_reason]
          @out.puts("  isolation:     #{entry[:isolation]}")
          @out.puts("  network modes: #{listed(entry[:network_modes])}")
          @out.puts("  features:      #{listed(entry[:features])}")
          print_limits(entry)
        end
      end

      # How each limit holds where no launch cgroup can be made (README "Limits"): memory by sampling the tree,
      # cpu_seconds per process; tasks not at all.
      LIMIT_FALLBACKS = { "memory_bytes" => "by sampling the tree's memory every 100 ms",
                          "cpu_seconds" => "per process (RLIMIT_CPU)" }.freeze
      private_constant :LIMIT_FALLBACKS

      # One line per way a limit holds, and each reason a cgroup cannot be made printed once, for all the limits
      # it stops: the kernel's answer repeats for every limit of every backend.
      def print_limits(entry)
        return unless entry[:limits]

        lines = Hash.new { |hash, key| hash[key] = [] }
        reasons = Hash.new { |hash, key| hash[key] = [] }
        entry[:limits].each do |limit, answer|
          name = limit.to_s
          if answer == true
            lines["enforced by a cgroup"] << name
          elsif name == "process_tree_ownership" && entry[:features].include?(name)
            lines["enforced by the sandbox (its own process namespace)"] << name
          elsif LIMIT_FALLBACKS.key?(name)
            lines["enforced #{LIMIT_FALLBACKS[name]}"] << name
            reasons[answer] << name
          else
            lines["not enforced (see below)"] << name
            reasons[answer] << name
          end
        end
        lines.each { |how, names| @out.puts("  limits #{how}: #{names.join(', ')}") }
        reasons.each { |reason, names| @out.puts("  no cgroup for #{names.join(', ')}: #{reason}") }
      end

      def listed(names)
        names.empty? ? "(none)" : names.join(", ")
      end
    end
  end
end
