# frozen_string_literal: true

#--
# Documentation only: LittleGhost::Workspace is defined by the Rust extension. This file defines nothing.
#++

module LittleGhost
  # The root directory and named paths a sandbox works in, and the mapping between logical paths
  # (<tt>"notes/a.md"</tt>, <tt>"workspace://source/app.rb"</tt>) and host paths.
  #
  # Relative named paths live beneath the root and are created by #open; absolute ones must already exist. #open
  # pins the identity of every directory, so a directory swapped afterwards is refused rather than followed.
  #
  #   require "tmpdir"
  #
  #   Dir.mktmpdir do |root|
  #     workspace = LittleGhost::Workspace.new(root: root, paths: {source: "source", home: "home"})
  #     workspace.open do |ws|
  #       ws.path(:source)                        # => "#{root}/source" (created)
  #       ws.resolve("workspace://source/app.rb") # => "#{root}/source/app.rb"
  #     end
  #   end
  #
  # Workspaces are built from configuration with ::build (provider <tt>:directory</tt> is this class).
  class Workspace
    ##
    # :singleton-method: new
    # :call-seq:
    #   new(root:, paths: {}, setup: nil, teardown: nil) -> workspace
    #
    # A workspace rooted at <tt>File.expand_path(root)</tt> with named +paths+ (Symbol or String names; a relative
    # value lies beneath root, an absolute one is kept). +setup+ and +teardown+ are callables called as
    # <tt>call(workspace:, run:)</tt> by #open and #close. Touches nothing on disk.
    #
    # Raises ArgumentError: "workspace paths must be a Hash", "must not be empty", "relative workspace path :NAME
    # must remain beneath the workspace root", "workspace setup must be callable", and for a path named +root+ or
    # two names that map to the same environment variable.
    #
    #   LittleGhost::Workspace.new(root: "/srv/agent", paths: {source: "source", cache: "/var/cache/agent"})

    ##
    # :singleton-method: register_provider
    # :call-seq:
    #   register_provider(name, klass) -> klass
    #
    # Registers a Workspace subclass under a provider name for ::build. <tt>:directory</tt> is Workspace itself.
    #
    # Raises ArgumentError unless +klass+ is Workspace or a subclass.
    #
    #   LittleGhost::Workspace.register_provider(:scratch, ScratchWorkspace)

    ##
    # :singleton-method: resolve_provider
    # :call-seq:
    #   resolve_provider(name) -> Class
    #
    # The Workspace class registered under +name+ (Symbol or String).
    #
    # Raises LittleGhost::DependencyError "workspace provider :NAME is not available", listing the registered
    # names.
    #
    #   LittleGhost::Workspace.resolve_provider(:directory)   # => LittleGhost::Workspace

    ##
    # :method: root
    # :call-seq:
    #   root -> String
    #
    # The expanded root directory (not resolved to a real path), frozen.
    #
    #   LittleGhost::Workspace.new(root: "/srv/agent").root   # => "/srv/agent"

    ##
    # :method: paths
    # :call-seq:
    #   paths -> Hash
    #
    # The named paths: a frozen Hash of Symbol to absolute String.
    #
    #   workspace.paths   # => {source: "/srv/agent/source", home: "/srv/agent/home"}

    ##
    # :method: path
    # :call-seq:
    #   path(name) -> String
    #
    # The directory of the named path +name+ (Symbol or String).
    #
    # Raises KeyError for an unknown name.
    #
    #   workspace.path(:source)   # => "/srv/agent/source"
    #   workspace.path(:nope)     # KeyError: key not found: :nope

    ##
    # :method: resolve
    # :call-seq:
    #   resolve(reference) -> String
    #
    # The host path of a logical +reference+: relative to the root, <tt>"workspace://NAME"</tt> or
    # <tt>"workspace://NAME/REL"</tt>. The check is lexical; an open workspace is validated (#validate!) first.
    # A component written in the quoted form of Sandbox#list (<tt>"a\nb.md"</tt>, see there) stands for the name
    # it shows; a quoted name is literal, so <tt>"~x"</tt> names the entry <tt>~x</tt> (a plain leading +~+ is
    # refused, as File.expand_path would send it to a home directory).
    #
    # Raises ArgumentError "workspace paths must be relative or use workspace://", "workspace path traversal is
    # not allowed", "workspace path escapes its root", "must not be empty", "malformed quoted name in workspace
    # path", "a quoted name in a workspace path cannot be empty, '.', '..' or hold '/' or NUL"; KeyError for an
    # unknown NAME;
    # LittleGhost::ToolError when a directory changed since #open.
    #
    #   workspace.resolve("notes/a.md")                 # => "/srv/agent/notes/a.md"
    #   workspace.resolve("workspace://source/app.rb")  # => "/srv/agent/source/app.rb"
    #   workspace.resolve("../etc")                     # ArgumentError: workspace path traversal is not allowed

    ##
    # :method: reference
    # :call-seq:
    #   reference(physical) -> String
    #
    # The logical path of a host path: <tt>"workspace://NAME/REL"</tt> for the longest named path that contains it,
    # else root-relative (<tt>"."</tt> for the root). A name that needs it is in the quoted form of Sandbox#list,
    # so <tt>resolve(reference(path)) == path</tt> for every path in the workspace.
    #
    # Raises ArgumentError "path is outside the workspace".
    #
    #   workspace.reference("/srv/agent/source/app.rb")   # => "workspace://source/app.rb"
    #   workspace.reference("/srv/agent/notes")           # => "notes"
    #   workspace.reference("/srv/agent/~notes.md")       # => "\"~notes.md\""

    ##
    # :method: environment
    # :call-seq:
    #   environment -> Hash
    #
    # The variables every child gets: <tt>LITTLE_GHOST_WORKSPACE_ROOT</tt> and one
    # <tt>LITTLE_GHOST_WORKSPACE_<NAME></tt> per named path (upper-cased, other characters as <tt>_</tt>), frozen.
    #
    #   workspace.environment
    #   # => {"LITTLE_GHOST_WORKSPACE_ROOT" => "/srv/agent", "LITTLE_GHOST_WORKSPACE_SOURCE" => "/srv/agent/source"}

    ##
    # :method: open
    # :call-seq:
    #   open(run: nil) -> self
    #   open(run: nil) { |workspace| ... } -> result of the block
    #
    # Calls +setup+, creates the root and the relative named paths (<tt>mkdir -p</tt>), checks that absolute ones
    # exist, and pins every directory's identity; returns self. A no-op while already open. With a block, yields
    # self, always closes the workspace when the block ends, and returns the block's value. If a step fails, #close
    # runs and the error is re-raised.
    #
    # Raises ArgumentError "absolute workspace path :NAME must already exist", "workspace paths must not alias the
    # same directory: ..."; SystemCallError when a directory cannot be created; whatever +setup+ raises.
    #
    #   workspace = LittleGhost::Workspace.new(root: root, paths: {source: "source"}).open
    #   LittleGhost::Workspace.new(root: root).open { |ws| File.directory?(ws.root) }   # => true

    ##
    # :method: open?
    # :call-seq:
    #   open? -> true or false
    #
    # Whether the workspace is open.
    #
    #   workspace.open?   # => true

    ##
    # :method: run
    # :call-seq:
    #   run -> Object or nil
    #
    # The +run+ passed to #open, or nil.
    #
    #   workspace.open(run: my_run).run   # => my_run

    ##
    # :method: validate!
    # :call-seq:
    #   validate! -> self
    #
    # Checks that the root and every named path are still the directories pinned by #open; returns self (at once
    # when the workspace is not open).
    #
    # Raises LittleGhost::ToolError "workspace path changed after opening: NAME".
    #
    #   workspace.validate!   # => workspace

    ##
    # :method: close
    # :call-seq:
    #   close -> nil
    #
    # Calls +teardown+ once if open, then always resets (not open, no run, no pins) and re-raises a teardown error
    # afterwards. Never deletes files; idempotent. Close sandboxes first.
    #
    #   workspace.close   # => nil

    ##
    # :method: inspect
    # :call-seq:
    #   inspect -> String
    #
    # The root, the named paths and whether the workspace is open.
    #
    #   workspace.inspect   # => "#<LittleGhost::Workspace root=\"/srv/agent\" paths={source: \"/srv/agent/source\"} open>"
  end
end
