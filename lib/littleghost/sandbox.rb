# frozen_string_literal: true

# Entry point of the littleghost-sandbox gem: loads the Rust extension, which
# defines LittleGhost::Sandbox and its collaborators, then the thin Ruby layer
# (configuration blocks and the built-in provider registrations).
#
# Which extension: a platform gem (`rake native gem`) holds one precompiled copy
# per Ruby minor, lib/littleghost_sandbox/MINOR/littleghost_sandbox.so with the
# helper executable beside it (the extension finds the helper in its own
# directory); the source gem and a checkout have the one they compiled.
require "rbconfig"

precompiled = File.expand_path("../littleghost_sandbox", __dir__)
minor = RUBY_VERSION[/\A\d+\.\d+/]
if File.exist?(File.join(precompiled, minor, "littleghost_sandbox.#{RbConfig::CONFIG["DLEXT"]}"))
  require File.join(precompiled, minor, "littleghost_sandbox")
elsif File.directory?(precompiled)
  raise LoadError, "this littleghost-sandbox gem is precompiled for Ruby #{Dir.children(precompiled).sort.join(", ")} " \
                   "only, not #{RUBY_VERSION}; install the source gem: gem install littleghost-sandbox --platform ruby"
else
  require "littleghost_sandbox"
end
require_relative "sandbox/data_like"
require_relative "sandbox/shell"
require_relative "sandbox/version"
require_relative "sandbox/base"
require_relative "sandbox/scope"
require_relative "sandbox/gateway"
require_relative "sandbox/configuration"
require_relative "sandbox/remote"

module LittleGhost
  class Sandbox
    register_provider(:unrestricted, Sandboxes::Unrestricted)
    register_provider(:bubblewrap, Sandboxes::Bubblewrap)
    register_provider(:landlock, Sandboxes::Landlock)
    register_provider(:seatbelt, Sandboxes::Seatbelt)
    register_provider(:native, Sandboxes::Native)
    register_provider(:remote, Sandboxes::Remote)
  end
end
