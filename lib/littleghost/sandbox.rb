# frozen_string_literal: true

# Entry point of the littleghost-sandbox gem: loads the Rust extension, which
# defines LittleGhost::Sandbox and its collaborators, then the thin Ruby layer
# (configuration blocks and the built-in provider registrations).
require "littleghost_sandbox"
require_relative "sandbox/data_like"
require_relative "sandbox/shell"
require_relative "sandbox/version"
require_relative "sandbox/base"
require_relative "sandbox/scope"
require_relative "sandbox/gateway"
require_relative "sandbox/configuration"

module LittleGhost
  class Sandbox
    register_provider(:unrestricted, Sandboxes::Unrestricted)
    register_provider(:bubblewrap, Sandboxes::Bubblewrap)
    register_provider(:landlock, Sandboxes::Landlock)
    register_provider(:seatbelt, Sandboxes::Seatbelt)
    register_provider(:native, Sandboxes::Native)
  end
end
