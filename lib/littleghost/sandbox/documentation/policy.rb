# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Sandbox::Policy is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  class Sandbox
    # What trusted configuration asks a sandbox to enforce: the workspace paths tools may see (+files+), the paths
    # only processes may use (+runtime_paths+), the root filesystem processes see, their environment and their
    # network. A frozen value; names are checked against the workspace only when grants are built.
    #
    #   policy = LittleGhost::Sandbox::Policy.new(
    #     files: {root: :read_write, source: :read_only},
    #     runtime_paths: {home: :read_write},
    #     network: :none
    #   )
    #   policy.workspace_writable?   # => true
    #
    # Sandbox.build and Sandbox.new accept the same keys as a Hash.
    class Policy
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(files: {root: :read_only}, runtime_paths: {}, root_filesystem: :isolated, environment: {}, network: nil, protect: [".git"]) -> policy
      #
      # +files+ and +runtime_paths+ map workspace names (<tt>:root</tt> or a Workspace path name) to
      # <tt>:read_only</tt> or <tt>:read_write</tt>; +root_filesystem+ is <tt>:isolated</tt> (only the runtime
      # roots such as <tt>/usr</tt>), <tt>:read_only</tt> or <tt>:read_write</tt> (the whole host); +environment+
      # goes through EnvironmentPolicy.coerce and +network+ through NetworkPolicy.coerce (nil: the backend's secure
      # default). +protect+ lists relative paths kept read-only inside every writable grant (see #protect).
      #
      # Raises LittleGhost::PolicyError ("sandbox files must be a Hash", an unknown access or root mode, a
      # +protect+ entry that is not a relative path) and
      # ArgumentError for an unknown keyword.
      #
      #   LittleGhost::Sandbox::Policy.new(files: {root: :read_write}, environment: {"LANG" => "C.UTF-8"})

      ##
      # :singleton-method: coerce
      # :call-seq:
      #   coerce(value = nil, **options) -> Policy
      #
      # A Policy unchanged, or one built from a Hash (or nil) with +options+ merged over it.
      #
      # Raises LittleGhost::PolicyError "sandbox policy must be a Hash or Sandbox::Policy".
      #
      #   LittleGhost::Sandbox::Policy.coerce({files: {root: :read_write}}, network: :none).network.mode   # => :none

      ##
      # :method: files
      # :call-seq:
      #   files -> Hash
      #
      # The tool-visible grants: a frozen Hash of name to access.
      #
      #   policy.files   # => {root: :read_write, source: :read_only}

      ##
      # :method: runtime_paths
      # :call-seq:
      #   runtime_paths -> Hash
      #
      # The process-only grants: hidden from the file operations, visible to programs.
      #
      #   policy.runtime_paths   # => {home: :read_write}

      ##
      # :method: protect
      # :call-seq:
      #   protect -> Array
      #
      # The paths kept read-only inside every writable grant (default <tt>[".git"]</tt>): each, relative to a
      # writable grant's root, that is a directory there is an implicit read-only grant nested in it, so a program
      # cannot plant a git hook or <tt>core.fsmonitor</tt> command that would run on the host. Bubblewrap mounts it
      # read-only and the file operations refuse it; Landlock, which cannot, raises CapabilityError at +open+; one
      # that is a file or a symlink raises CapabilityError at +open+ (it cannot be kept read-only).
      # <tt>protect: []</tt> protects nothing.
      #
      #   LittleGhost::Sandbox::Policy.new.protect                          # => [".git"]
      #   LittleGhost::Sandbox::Policy.new(protect: [".git", "ci"]).protect # => [".git", "ci"]

      ##
      # :method: root_filesystem
      # :call-seq:
      #   root_filesystem -> Symbol
      #
      # <tt>:isolated</tt>, <tt>:read_only</tt> or <tt>:read_write</tt>.
      #
      #   policy.root_filesystem   # => :isolated

      ##
      # :method: environment
      # :call-seq:
      #   environment -> EnvironmentPolicy
      #
      # The variables children get, and whether they may inherit the host's.
      #
      #   policy.environment.values   # => {"LANG" => "C.UTF-8"}

      ##
      # :method: network
      # :call-seq:
      #   network -> NetworkPolicy or nil
      #
      # The requested network, or nil for the backend's default (see Sandbox#effective_policy).
      #
      #   policy.network.mode   # => :none

      ##
      # :method: workspace_writable?
      # :call-seq:
      #   workspace_writable? -> true or false
      #
      # True when <tt>files[:root]</tt> is <tt>:read_write</tt>.
      #
      #   policy.workspace_writable?   # => true

      ##
      # :method: process_grants
      # :call-seq:
      #   process_grants(workspace) -> Array of Mount
      #
      # The grants as frozen Mounts for +workspace+, longest target first: <tt>tools: true</tt> for +files+,
      # <tt>tools: false</tt> for +runtime_paths+. Used by backends and scopes.
      #
      # Raises KeyError for a name that is not a path of +workspace+.
      #
      #   policy.process_grants(workspace).map(&:target)   # => ["/srv/agent/source", "/srv/agent/home", "/srv/agent"]

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # The five settings as a Hash.
      #
      #   policy.to_h.keys   # => [:files, :runtime_paths, :root_filesystem, :environment, :network, :protect]

      ##
      # :method: ==
      # :call-seq:
      #   policy == other -> true or false
      #
      # Equal by value.
      #
      #   LittleGhost::Sandbox::Policy.new == LittleGhost::Sandbox::Policy.new   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value (usable as a Hash key).
      #
      #   policy.eql?(LittleGhost::Sandbox::Policy.coerce(policy.to_h))   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   {policy => :x}.key?(LittleGhost::Sandbox::Policy.coerce(policy.to_h))   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # Every setting.
      #
      #   LittleGhost::Sandbox::Policy.new.inspect   # => "#<LittleGhost::Sandbox::Policy files={root: :read_only} ...>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts policy
    end

    # Byte and entry caps of a sandbox: +read_bytes+ (largest file #read returns), +write_bytes+ (largest content
    # #write accepts), +list_entries+ (largest directory #list shows) and +output_bytes+ (output kept per stream of
    # a program, and in total for a session). A frozen value.
    #
    #   limits = LittleGhost::Sandbox::Limits.new(read_bytes: 65_536)
    #   limits.to_h   # => {read_bytes: 65536, write_bytes: 1000000, list_entries: 10000, output_bytes: 1000000}
    class Limits
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(read_bytes: 1_000_000, write_bytes: 1_000_000, list_entries: 10_000, output_bytes: 1_000_000) -> limits
      #
      # Values go through Integer(), so <tt>"4096"</tt> is accepted, and must be positive.
      #
      # Raises LittleGhost::PolicyError "unknown sandbox limits: NAMES", "sandbox NAME must be an integer", "sandbox
      # NAME must be positive".
      #
      #   LittleGhost::Sandbox::Limits.new(output_bytes: "65536").output_bytes   # => 65536

      ##
      # :singleton-method: coerce
      # :call-seq:
      #   coerce(value) -> Limits
      #
      # A Limits unchanged, or one built from anything that responds to +to_h+.
      #
      # Raises LittleGhost::PolicyError "sandbox limits must be a Hash" and the errors of ::new.
      #
      #   LittleGhost::Sandbox::Limits.coerce({list_entries: 100}).list_entries   # => 100

      ##
      # :method: read_bytes
      # :call-seq:
      #   read_bytes -> Integer
      #
      # The largest file Sandbox#read returns.
      #
      #   limits.read_bytes   # => 65536

      ##
      # :method: write_bytes
      # :call-seq:
      #   write_bytes -> Integer
      #
      # The largest content Sandbox#write accepts.
      #
      #   limits.write_bytes   # => 1000000

      ##
      # :method: list_entries
      # :call-seq:
      #   list_entries -> Integer
      #
      # The most entries Sandbox#list shows before refusing.
      #
      #   limits.list_entries   # => 10000

      ##
      # :method: output_bytes
      # :call-seq:
      #   output_bytes -> Integer
      #
      # The default output bound of programs (per stream for Sandbox#execute_program, combined for sessions).
      #
      #   limits.output_bytes   # => 1000000

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # The four limits.
      #
      #   limits.to_h[:read_bytes]   # => 65536

      ##
      # :method: ==
      # :call-seq:
      #   limits == other -> true or false
      #
      # Equal by value.
      #
      #   LittleGhost::Sandbox::Limits.new == LittleGhost::Sandbox::Limits.new   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value.
      #
      #   limits.eql?(LittleGhost::Sandbox::Limits.new(**limits.to_h))   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   limits.hash == LittleGhost::Sandbox::Limits.new(**limits.to_h).hash   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # The four limits.
      #
      #   limits.inspect   # => "#<LittleGhost::Sandbox::Limits read_bytes=65536 write_bytes=1000000 ...>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts limits
    end

    # The variables a child gets besides the workspace's, and whether it may inherit the host's environment
    # (only when this policy <em>and</em> the call's <tt>inherit_environment: true</tt> both opt in). A frozen value.
    #
    #   env = LittleGhost::Sandbox::EnvironmentPolicy.coerce({set: {"LANG" => "C.UTF-8"}, inherit: false})
    #   env.values     # => {"LANG" => "C.UTF-8"}
    #   env.inherit?   # => false
    class EnvironmentPolicy
      ##
      # :singleton-method: new
      # :call-seq:
      #   new(inherit: false, values: {}) -> environment_policy
      #
      # Names and values go through String() and are frozen.
      #
      # Raises LittleGhost::PolicyError "sandbox environment values must be a Hash".
      #
      #   LittleGhost::Sandbox::EnvironmentPolicy.new(values: {PATH: "/usr/bin:/bin"}).values   # => {"PATH" => "/usr/bin:/bin"}

      ##
      # :singleton-method: coerce
      # :call-seq:
      #   coerce(value) -> EnvironmentPolicy
      #
      # An EnvironmentPolicy unchanged; a Hash with <tt>:set</tt>/<tt>:inherit</tt> keys; or any other Hash as the
      # values themselves (not inheriting).
      #
      # Raises LittleGhost::PolicyError "sandbox environment must be a Hash".
      #
      #   LittleGhost::Sandbox::EnvironmentPolicy.coerce({"LANG" => "C"}).inherit?   # => false

      ##
      # :method: values
      # :call-seq:
      #   values -> Hash
      #
      # The variables, a frozen Hash of String to String.
      #
      #   env.values   # => {"LANG" => "C.UTF-8"}

      ##
      # :method: to_h
      # :call-seq:
      #   to_h -> Hash
      #
      # Same as #values.
      #
      #   env.to_h   # => {"LANG" => "C.UTF-8"}

      ##
      # :method: inherit?
      # :call-seq:
      #   inherit? -> true or false
      #
      # Whether the policy allows inheriting the host environment.
      #
      #   env.inherit?   # => false

      ##
      # :method: ==
      # :call-seq:
      #   environment_policy == other -> true or false
      #
      # Equal by value.
      #
      #   env == LittleGhost::Sandbox::EnvironmentPolicy.new(values: {"LANG" => "C.UTF-8"})   # => true

      ##
      # :method: eql?
      # :call-seq:
      #   eql?(other) -> true or false
      #
      # Equal by value.
      #
      #   env.eql?(LittleGhost::Sandbox::EnvironmentPolicy.coerce(env.values))   # => true

      ##
      # :method: hash
      # :call-seq:
      #   hash -> Integer
      #
      # A hash consistent with #eql?.
      #
      #   env.hash.is_a?(Integer)   # => true

      ##
      # :method: inspect
      # :call-seq:
      #   inspect -> String
      #
      # The inherit flag and the values.
      #
      #   env.inspect   # => "#<LittleGhost::Sandbox::EnvironmentPolicy inherit=false values={\"LANG\" => \"C.UTF-8\"}>"

      ##
      # :method: to_s
      # :call-seq:
      #   to_s -> String
      #
      # Same as #inspect.
      #
      #   puts env
    end
  end
end
