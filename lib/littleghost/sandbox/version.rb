# frozen_string_literal: true

module LittleGhost
  class Sandbox
    # Gem version, kept in step with the Cargo workspace version.
    VERSION = "0.1.0"
  end
end
