# frozen_string_literal: true

require_relative "lib/littleghost/sandbox/version"
require_relative "ext/littleghost_sandbox/toolchain"

Gem::Specification.new do |spec|
  spec.name = "littleghost-sandbox"
  spec.version = LittleGhost::Sandbox::VERSION
  spec.summary = "Brokered filesystem and isolated child processes for LittleGhost agents"
  spec.description = <<~TEXT
    LittleGhost::Sandbox is the one gate through which LittleGhost agents read and edit files and run programs:
    a Rust core (magnus) with a capability-handle filesystem broker, a process runner that owns the whole process
    tree, and isolation backends (Bubblewrap on Linux, Seatbelt on macOS, and an honest unrestricted host backend).
  TEXT
  spec.authors = ["LittleGhost contributors"]
  spec.license = "MIT"
  spec.homepage = "https://littleghostai.org/docs/LittleGhost/Sandbox.html"
  spec.required_ruby_version = ">= 3.1"
  spec.files = Dir[
    "lib/**/*.rb", "sig/**/*.rbs", "ext/**/*.{rs,rb,toml}", "Cargo.toml", "Cargo.lock", "README.md",
    "LICENSE", "CHANGELOG.md", "exe/*"
  ]
  spec.bindir = "exe"
  spec.executables = ["littleghost-sandbox"]
  spec.require_paths = ["lib"]
  # The native classes are documented in lib/littleghost/sandbox/documentation/*.rb (RDoc directives only), which
  # `gem install` feeds to rdoc/ri with the require paths; README.md is the main page of the generated site.
  spec.extra_rdoc_files = ["README.md", "CHANGELOG.md", "LICENSE"]
  spec.rdoc_options = ["--main", "README.md", "--title", "littleghost-sandbox"]
  # This is the source gem: `gem install` compiles the extension and the helper with cargo. The platform gem
  # (`rake native gem`) holds them precompiled instead and has no extensions and no requirements.
  spec.extensions = ["ext/littleghost_sandbox/extconf.rb"]
  spec.requirements = [
    "Rust #{LittleGhostSandboxToolchain.rust_floor(__dir__)} or newer (cargo, rustc; https://rustup.rs), " \
    "libclang and Ruby's headers (ruby-dev) to compile the extension"
  ]
  # The project's public addresses; the documentation is the class documentation the homepage names.
  spec.metadata["homepage_uri"] = spec.homepage
  spec.metadata["documentation_uri"] = spec.homepage
  spec.metadata["source_code_uri"] = "https://github.com/littleghostai/littleghost-sandbox"
  spec.metadata["changelog_uri"] = "https://github.com/littleghostai/littleghost-sandbox/blob/main/CHANGELOG.md"
  spec.metadata["bug_tracker_uri"] = "https://github.com/littleghostai/littleghost-sandbox/issues"
  spec.metadata["rubygems_mfa_required"] = "true"
end
