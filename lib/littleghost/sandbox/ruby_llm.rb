# frozen_string_literal: true

require "littleghost/sandbox"
require "tmpdir"
require "fileutils"

module LittleGhost
  # A sandbox in the shape RubyLLM asks of <tt>config.sandbox</tt>: any object that answers #supported?, #reason
  # and #run, whose result answers +stdout+, +stderr+, +exit_code+, +timed_out?+ and +blocked+. Each #run builds
  # its own workspace and sandbox from the call's paths and network, runs the command, and closes both, so nothing
  # the command started outlives the call.
  #
  #   require "littleghost/sandbox/ruby_llm"
  #   sandbox = LittleGhost::RubyLLMSandbox.new(process_limits: {memory_bytes: 512 << 20})
  #   result = sandbox.run("echo hi", timeout: 10)
  #   result.stdout      # => "hi\n"
  #   result.exit_code   # => 0
  #
  # What each keyword of #run means here (docs/design.md, "The RubyLLM adapter"):
  # - a single String is a shell line (<tt>/bin/sh -c</tt>); several arguments (or one Array) are an argument
  #   vector, never given to a shell;
  # - +readable+ and +writable+ are host paths the command sees at the same paths, read-only and read-write;
  #   nothing else of the host is visible but the system directories;
  # - +denied+ are host paths hidden (an empty read-only directory) even inside a readable or writable path: only
  #   Bubblewrap can do that, so a call with +denied+ runs on Bubblewrap, and raises CapabilityError where it cannot;
  # - +directory+ is the working directory (inside one of the paths; default: an empty scratch directory, removed
  #   after the call);
  # - +env+ is the whole environment, plus <tt>PATH</tt> when it has none;
  # - +network+: +false+ (none), +true+ (the host's network) or <tt>{allow: ["pypi.org", "host:port", ...]}</tt>,
  #   where a bare host means its HTTPS and HTTP ports (443 and 80), through the gem's gateway;
  # - a timeout is a result whose +timed_out?+ is true and whose +exit_code+ is 124 (as timeout(1) reports), with
  #   the output read until then; +blocked+ lists each <tt>host:port</tt> the network policy refused.
  class RubyLLMSandbox
    # The PATH a command gets when +env+ names none: the system directories of the sandbox's root.
    DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    # The exit code of a command the timeout ended.
    TIMED_OUT_EXIT_CODE = 124
    # The exit code of a command a memory or CPU limit ended (128 + SIGKILL, as a shell reports it).
    LIMIT_EXIT_CODE = 137

    # What #run returns.
    #
    #   result = LittleGhost::RubyLLMSandbox.new.run("echo hi; exit 3", timeout: 10)
    #   [result.stdout, result.exit_code, result.timed_out?, result.blocked]   # => ["hi\n", 3, false, []]
    class Result
      # The command's standard output (a String, bounded by +output_bytes+).
      #
      #   sandbox.run("echo hi", timeout: 10).stdout   # => "hi\n"
      attr_reader :stdout

      # The command's standard error (a String, bounded by +output_bytes+); a limit's message comes last.
      #
      #   sandbox.run("echo oops >&2", timeout: 10).stderr   # => "oops\n"
      attr_reader :stderr

      # The command's exit code: 124 after the timeout, 137 after a memory or CPU limit.
      #
      #   sandbox.run("exit 3", timeout: 10).exit_code   # => 3
      attr_reader :exit_code

      # The <tt>host:port</tt> destinations the network policy refused, in the order first refused.
      #
      #   sandbox.run("curl -s https://example.com", timeout: 10, network: {allow: ["pypi.org"]}).blocked
      #   # => ["example.com:443"]
      attr_reader :blocked

      # :call-seq:
      #   new(stdout:, stderr:, exit_code:, timed_out:, blocked:) -> result
      #
      # A frozen result; #run makes them.
      #
      #   Result.new(stdout: "", stderr: "", exit_code: 124, timed_out: true, blocked: []).timed_out?   # => true
      def initialize(stdout:, stderr:, exit_code:, timed_out:, blocked:)
        @stdout = stdout
        @stderr = stderr
        @exit_code = exit_code
        @timed_out = timed_out
        @blocked = blocked.freeze
        freeze
      end

      # True when the timeout ended the command.
      #
      #   sandbox.run("sleep", "5", timeout: 0.2).timed_out?   # => true
      def timed_out?
        @timed_out
      end

      # True when the command exited with status 0 within its timeout.
      #
      #   sandbox.run("true", timeout: 10).success?   # => true
      def success?
        !@timed_out && @exit_code.zero?
      end
    end

    # :call-seq:
    #   new(provider: :native, process_limits: {}, allow_private_destinations: false, output_bytes: nil) -> sandbox
    #
    # Defaults for every #run: the backend (+:native+ picks Bubblewrap, else Landlock), the kernel limits of each
    # command (<tt>memory_bytes:</tt>, <tt>tasks:</tt>, <tt>cpu_seconds:</tt>), whether allowlisted names may
    # resolve to private addresses, and the bound on each output stream. Raises ArgumentError for an unknown
    # keyword or a value of the wrong type.
    #
    #   sandbox = LittleGhost::RubyLLMSandbox.new(process_limits: {memory_bytes: 512 << 20, tasks: 64})
    def initialize(provider: :native, process_limits: {}, allow_private_destinations: false, output_bytes: nil)
      raise ArgumentError, "process_limits must be a Hash" unless process_limits.is_a?(Hash)
      unless [true, false].include?(allow_private_destinations)
        raise ArgumentError, "allow_private_destinations must be true or false"
      end
      unless output_bytes.nil? || (output_bytes.is_a?(Integer) && output_bytes.positive?)
        raise ArgumentError, "output_bytes must be a positive Integer"
      end

      @provider = provider
      @process_limits = process_limits.dup.freeze
      @allow_private_destinations = allow_private_destinations
      @output_bytes = output_bytes
    end

    # True when the backend can run here (LittleGhost::Sandbox.probe).
    #
    #   LittleGhost::RubyLLMSandbox.new(provider: :bubblewrap).supported?   # => true where bwrap runs
    def supported?
      probe[:available] == true
    end

    # Why the backend cannot run here and what to change, or nil when it can.
    #
    #   sandbox.reason   # => nil, or e.g. "bwrap: setting up uid map: Permission denied ..."
    def reason
      supported? ? nil : probe[:reason]
    end

    # :call-seq:
    #   run(*command, timeout:, readable: [], writable: [], denied: [], network: false, directory: nil, env: {}) -> Result
    #
    # Runs +command+ confined to the given paths and network, for at most +timeout+ seconds, and returns a Result.
    # Raises ArgumentError for a bad argument (an empty command, a path that does not exist, a +directory+ outside
    # every path), LittleGhost::CapabilityError or LittleGhost::DependencyError when the backend cannot enforce
    # what the call asks for; a command that fails, times out or is ended by a limit is a Result, never an
    # exception (a limit gives exit code 137 and the limit's message at the end of +stderr+).
    #
    #   sandbox.run("bundle exec rake test", timeout: 300, writable: [Dir.pwd], directory: Dir.pwd)
    #   sandbox.run("ls", "-la", timeout: 10, readable: ["/srv/data"], directory: "/srv/data")
    def run(*command, timeout:, readable: [], writable: [], denied: [], network: false, directory: nil, env: {})
      argv = argv_of(command)
      grants = grants_of(readable, :read_only).merge(grants_of(writable, :read_write))
      masks = masks_of(paths_of(denied, "denied"), grants)
      scratch = Dir.mktmpdir("littleghost-rubyllm-")
      begin
        workspace = workspace_for(scratch, grants)
        begin
          execute(workspace, argv, timeout, declaration(grants, masks, network), grants, directory, env)
        ensure
          workspace.close
        end
      ensure
        FileUtils.remove_entry(scratch, true)
      end
    end

    private

    def probe
      @probe ||= LittleGhost::Sandbox.probe(@provider)
    end

    def argv_of(command)
      command = command.first if command.length == 1 && command.first.is_a?(Array)
      raise ArgumentError, "command must not be empty" if command.empty?
      return ["/bin/sh", "-c", command.first] if command.length == 1 && command.first.is_a?(String)

      command.map do |argument|
        raise ArgumentError, "command arguments must be Strings, got #{argument.class}" unless argument.is_a?(String)

        argument
      end
    end

    def paths_of(paths, keyword)
      raise ArgumentError, "#{keyword} must be an Array of paths" unless paths.is_a?(Array)

      paths.map do |path|
        raise ArgumentError, "#{keyword} paths must be Strings, got #{path.class}" unless path.is_a?(String)

        expanded = File.expand_path(path)
        raise ArgumentError, "#{keyword} path does not exist: #{path}" unless File.exist?(expanded)

        expanded
      end.uniq
    end

    # Host path => access; a path both readable and writable is writable.
    def grants_of(paths, access)
      keyword = access == :read_only ? "readable" : "writable"
      paths_of(paths, keyword).to_h { |path| [path, access] }
    end

    # The denied paths inside a readable or writable one: those outside every path are hidden already. Only
    # Bubblewrap can hide a path inside a granted one (an empty read-only directory over it); Landlock's rules add
    # access beneath a path and cannot take it away again.
    def masks_of(denied, grants)
      inside = denied.select { |path| grants.keys.any? { |granted| path == granted || path.start_with?("#{granted}/") } }
      if inside.any? && @provider == :landlock
        raise LittleGhost::CapabilityError,
              "the landlock sandbox cannot hide #{inside.first} inside a readable or writable path " \
              "(Landlock cannot take access away beneath a granted path): use provider :bubblewrap or :native " \
              "where user namespaces work, or leave the denied path out of readable and writable"
      end
      inside
    end

    def workspace_for(scratch, grants)
      names = grants.keys.each_with_index.to_h { |path, index| [:"path#{index}", path] }
      LittleGhost::Workspace.new(root: scratch, paths: names).open
    end

    def declaration(grants, masks, network)
      files = { root: :read_write }
      grants.each_with_index { |(_, access), index| files[:"path#{index}"] = access }
      declaration = { provider: @provider, files: files, network: network_of(network),
                      process_limits: @process_limits }
      declaration[:masks] = masks unless masks.empty?
      declaration[:limits] = { output_bytes: @output_bytes } if @output_bytes

      declaration
    end

    def network_of(network)
      case network
      when false, nil then :none
      when true then :inherit
      when Hash
        unknown = network.keys - %i[allow]
        raise ArgumentError, "network accepts only allow: (got #{unknown.map(&:inspect).join(", ")})" if unknown.any?

        allow = network.fetch(:allow) { raise ArgumentError, "network must have allow: [...]" }
        raise ArgumentError, "network allow: must be an Array" unless allow.is_a?(Array)

        { allow: allow.flat_map { |entry| destinations_of(entry) }.uniq,
          allow_private_destinations: @allow_private_destinations }
      else
        raise ArgumentError, "network must be false, true or {allow: [...]}, got #{network.inspect}"
      end
    end

    # "pypi.org" => ["pypi.org:443", "pypi.org:80"]; "host:port" and "[v6]:port" as given.
    def destinations_of(entry)
      raise ArgumentError, "network allow: entries must be Strings, got #{entry.class}" unless entry.is_a?(String)
      return [entry] if entry.match?(/:(\d+|\*)\z/) && !entry.match?(/\A[^\[]*:.*:/)

      ["#{entry}:443", "#{entry}:80"]
    end

    def execute(workspace, argv, timeout, declaration, grants, directory, env)
      sandbox = LittleGhost::Sandbox.build(declaration, workspace: workspace)
      sandbox.open do
        options = { timeout: timeout, environment: environment_of(env) }
        options[:cwd] = cwd_of(grants, directory) if directory
        begin
          execution = sandbox.execute_program(argv, **options)
          result(execution.stdout, execution.stderr, execution.exit_code, false, sandbox)
        rescue LittleGhost::Sandbox::TimeoutError => e
          result(e.execution&.stdout.to_s, e.execution&.stderr.to_s, TIMED_OUT_EXIT_CODE, true, sandbox)
        rescue LittleGhost::Sandbox::LimitError => e
          # A memory or CPU limit ended the command: a failed command, reported the way a shell reports a kill.
          stderr = "#{e.execution&.stderr}#{e.message}\n"
          result(e.execution&.stdout.to_s, stderr, LIMIT_EXIT_CODE, false, sandbox)
        end
      end
    end

    def environment_of(env)
      raise ArgumentError, "env must be a Hash" unless env.is_a?(Hash)

      environment = env.to_h { |name, value| [String(name), String(value)] }
      environment["PATH"] ||= DEFAULT_PATH
      environment
    end

    # The logical form of +directory+: workspace://pathN/REL for the innermost path containing it.
    def cwd_of(grants, directory)
      raise ArgumentError, "directory must be a String" unless directory.is_a?(String)

      wanted = File.expand_path(directory)
      index, path = grants.keys.each_with_index.map { |candidate, i| [i, candidate] }
                          .select { |_, candidate| wanted == candidate || wanted.start_with?("#{candidate}/") }
                          .max_by { |_, candidate| candidate.length }
      raise ArgumentError, "directory is outside every readable and writable path: #{directory}" unless path

      relative = wanted[path.length..].delete_prefix("/")
      relative.empty? ? "workspace://path#{index}" : "workspace://path#{index}/#{relative}"
    end

    def result(stdout, stderr, exit_code, timed_out, sandbox)
      blocked = sandbox.denials.select { |denial| denial.kind == :network }.map(&:target)
      Result.new(stdout: stdout, stderr: stderr, exit_code: exit_code, timed_out: timed_out,
                 blocked: blocked.reject { |target| target == "*" }.uniq)
    end
  end
end
