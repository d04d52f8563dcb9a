# frozen_string_literal: true

require "json"
require "optparse"
require_relative "../sandbox"

module LittleGhost
  class Sandbox
    # The `littleghost-sandbox` command (exe/littleghost-sandbox), built only on the gem's public Ruby API.
    #
    #   littleghost-sandbox run [options] -- COMMAND [ARGS...]
    #   littleghost-sandbox probe [--json] [--provider NAME]...
    #
    # +run+ starts COMMAND in a sandbox (Workspace + Sandbox.build + Sandbox#start_program), streams its stdout
    # and stderr to ours as they arrive, forwards our stdin to it, and exits with its status. Exit statuses:
    #
    # - the command's own exit status;
    # - 128 + N when signal N killed it (Bubblewrap already reports a killed child this way);
    # - 124 when --timeout expired (like coreutils `timeout`), after a one-line message on stderr;
    # - 137 when the sandbox killed it for going over --memory or --output-bytes, after a one-line message;
    # - 127 / 126 when an unsandboxed (--provider unrestricted) COMMAND is missing / not executable; under
    #   Bubblewrap the wrapper reports it instead (exit 1, with bwrap's execvp message);
    # - 125 when the sandbox could not be set up (unknown or unavailable provider, bad grant, missing path);
    # - 2 for a usage error (the usage goes to stderr);
    # - 130 (Ctrl-C) or 128 + N when this tool itself is interrupted; the child is terminated first.
    #
    # The workspace root (--root, default the current directory) is granted read-only; `--rw root` makes it
    # writable. Each `--rw NAME=PATH` / `--ro NAME=PATH` adds an existing directory as a named workspace path with
    # that access. The child's environment is PATH (the host's) plus --env values, unless --inherit-env is given.
    # The network is the backend's secure default (`none` for Bubblewrap and Seatbelt) unless --network is given.
    #
    # +probe+ prints, for each built-in backend (or each --provider), whether it is available on this host, why
    # not, and what it enforces (features, network modes, isolation). It exits 0, or 1 when a --provider named is
    # unavailable.
    #
    #   LittleGhost::Sandbox::CLI.start(["run", "--", "echo", "hi"]) # prints "hi", returns 0
    class CLI
      # Exit status for a usage error.
      USAGE_ERROR = 2
      # Exit status when the sandbox could not be set up (like `env`/`timeout` failing themselves).
      SETUP_ERROR = 125
      # Exit status when --timeout expired (like coreutils `timeout`).
      TIMED_OUT = 124
      # Exit status when the sandbox killed the command for a resource limit (128 + SIGKILL).
      LIMIT_KILLED = 128 + Signal.list.fetch("KILL")
      # Backends probed when no --provider is given: the gem's built-in registrations.
      BUILTIN_PROVIDERS = %i[native bubblewrap seatbelt unrestricted].freeze
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

      # Raised for a bad command line; the caller prints the message and the usage and exits 2.
      class UsageError < StandardError; end

      # Runs the command line argv, writing to out and err and reading the child's stdin from input; returns the
      # exit status (an Integer) instead of exiting.
      def self.start(argv, out: $stdout, err: $stderr, input: $stdin)
        new(out: out, err: err, input: input).start(Array(argv).map(&:to_s))
      end

      def initialize(out:, err:, input: nil)
        @out = out
        @err = err
        @input = input
      end

      # See CLI.start.
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
          parser.on("--provider NAME", "Sandbox provider (default: native)") { |v| options[:provider] = v }
          parser.on("--root DIR", "Workspace root, granted read-only (default: the current directory)") do |v|
            options[:root] = v
          end
          parser.on("--rw NAME=PATH", "Grant an existing directory read-write (`--rw root`: the root)") do |v|
            add_grant(options, v, :read_write)
          end
          parser.on("--ro NAME=PATH", "Grant an existing directory read-only") { |v| add_grant(options, v, :read_only) }
          parser.on("--network MODE", %w[none inherit], "none or inherit (default: the backend's; none if isolated)") do |v|
            options[:network] = v.to_sym
          end
          parser.on("--timeout SECONDS", Float, "Terminate the command after SECONDS; exit 124") do |v|
            raise UsageError, "--timeout must be positive" unless v.positive? && v.finite?

            options[:timeout] = v
          end
          parser.on("--memory BYTES", Integer, "Kill the command when its processes' RSS passes BYTES") do |v|
            raise UsageError, "--memory must be positive" unless v.positive?

            options[:memory_bytes] = v
          end
          parser.on("--output-bytes BYTES", Integer, "Kill the command after BYTES of output (default: no limit)") do |v|
            raise UsageError, "--output-bytes must be positive" unless v.positive?

            options[:output_bytes] = v
          end
          parser.on("--env NAME=VALUE", "Set a variable in the command's environment") do |v|
            name, value = v.split("=", 2)
            raise UsageError, "--env needs NAME=VALUE, got #{v.inspect}" if value.nil? || name.empty?

            options[:environment][name] = value
          end
          parser.on("--inherit-env", "Pass this process's whole environment to the command") do
            options[:inherit_environment] = true
          end
        end
      end

      def add_grant(options, value, access)
        name, path = value.split("=", 2)
        if name == "root"
          raise UsageError, "--rw/--ro root takes no PATH; use --root DIR" unless path.nil?

          options[:root_access] = access
          return
        end
        raise UsageError, "grant needs NAME=PATH, got #{value.inspect}" if path.nil? || path.empty?
        raise UsageError, "grant name must be a word (letters, digits, _), got #{name.inspect}" unless name.match?(/\A\w+\z/)
        raise UsageError, "grant name #{name} is given twice" if options[:grants].key?(name.to_sym)

        options[:grants][name.to_sym] = [path, access]
      end

      def run(argv)
        options = { environment: {}, grants: {}, root_access: :read_only, inherit_environment: false }
        command = run_parser(options).order(argv) # stops at "--" (removed) or at the first non-option
        raise UsageError, "run needs a COMMAND after --" if command.empty?

        workspace, sandbox = build(options)
        begin
          workspace.open
          sandbox.open
          supervise(sandbox, command, options)
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
        declaration[:network] = options[:network] if options[:network]
        [workspace, Sandbox.build(declaration, workspace: workspace)]
      end

      # Starts the command, streams its output until it ends or times out, and returns the exit status.
      def supervise(sandbox, command, options)
        environment = options[:inherit_environment] ? {} : { "PATH" => ENV.fetch("PATH", "/usr/local/bin:/usr/bin:/bin") }
        begin
          session = sandbox.start_program(
            command,
            environment: environment.merge(options[:environment]),
            inherit_environment: options[:inherit_environment],
            output_bytes: options[:output_bytes] || UNLIMITED_OUTPUT,
            memory_bytes: options[:memory_bytes]
          )
        rescue Errno::ENOENT, Errno::EACCES => e
          # Spawned directly (no wrapper in between): report like a shell does.
          @err.puts("littleghost-sandbox: #{command.first}: #{e.is_a?(Errno::ENOENT) ? 'command not found' : 'permission denied'}")
          return e.is_a?(Errno::ENOENT) ? 127 : 126
        end
        feeder = feed_stdin(session)
        begin
          stream(session, options[:timeout])
        ensure
          feeder&.kill&.join
          session.close
        end
      end

      def stream(session, timeout)
        deadline = timeout && (now + timeout)
        loop do
          remaining = deadline && (deadline - now)
          return timed_out(session, timeout) if remaining && remaining <= 0

          chunk = session.read(timeout: remaining ? [READ_SLICE, remaining].min : READ_SLICE)
          copy(chunk)
          break if chunk.eof
          # Both pipes closed while the command still runs: nothing to read, so do not spin.
          sleep(0.01) if chunk.stdout.empty? && chunk.stderr.empty?
        end
        exit_status(session.wait)
      rescue LittleGhost::ToolError => e
        # A resource limit (memory, output) ended the command; the session has already killed it.
        @err.puts("littleghost-sandbox: #{e.message}")
        LIMIT_KILLED
      rescue Errno::EPIPE
        # Whoever reads our output went away (`... | head`): stop the command like a shell pipeline would.
        128 + Signal.list.fetch("PIPE")
      end

      def timed_out(session, timeout)
        session.terminate
        copy(session.read(timeout: 0)) # what the command wrote before it was stopped
        @err.puts("littleghost-sandbox: command timed out after #{timeout} seconds")
        TIMED_OUT
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
          parser.on("--json", "Print JSON: {NAME: {available, reason, features, network_modes, isolation}}") do
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
        {
          available: result[:available], reason: result[:reason],
          features: capabilities.features.map(&:to_s), network_modes: capabilities.network_modes.map(&:to_s),
          isolation: capabilities.isolation.to_s
        }
      end

      def print_report(report)
        report.each do |name, entry|
          if entry[:available]
            @out.puts("#{name}: available")
            @out.puts("  isolation:     #{entry[:isolation]}")
            @out.puts("  network modes: #{entry[:network_modes].join(', ').then { |s| s.empty? ? '(none)' : s }}")
            @out.puts("  features:      #{entry[:features].join(', ').then { |s| s.empty? ? '(none)' : s }}")
          else
            @out.puts("#{name}: unavailable")
            @out.puts("  reason: #{entry[:reason]}")
          end
        end
      end
    end
  end
end
