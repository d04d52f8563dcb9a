# frozen_string_literal: true

# The Rust toolchain the source gem needs, read by extconf.rb (before cargo
# starts), the gemspec (its `requirements`) and the Rakefile. The floor is the
# `rust-version` recorded in the workspace's Cargo.toml, which `rake rust_floor`
# computes from the locked crates (spec/rust_floor_spec.rb keeps them equal).
module LittleGhostSandboxToolchain
  # What to run when the toolchain is missing or too old; Debian 12's own rustc (1.63) is too old.
  INSTALL_HINT = <<~TEXT
    Install the current Rust toolchain with rustup (Debian 12's rustc package is 1.63, too old):
      curl https://sh.rustup.rs -sSf | sh
    then open a new shell (or run `. "$HOME/.cargo/env"`) and retry.
  TEXT

  module_function

  # The oldest rustc that builds the locked crates, e.g. "1.85".
  def rust_floor(gem_root)
    manifest = File.read(File.join(gem_root, "Cargo.toml"))
    manifest[/^\[workspace\.package\][^\[]*?^rust-version = "([^"]+)"/m, 1] or
      raise "Cargo.toml has no rust-version in [workspace.package]"
  end

  # "1.63.0" from `rustc --version` ("rustc 1.63.0 (4b91a6ea7 2022-08-08)"), or nil when rustc cannot run.
  def rustc_version(rustc)
    out = IO.popen([rustc, "--version"], err: File::NULL, &:read)
    $?.success? ? out[/\Arustc (\d+\.\d+(?:\.\d+)?)/, 1] : nil
  rescue SystemCallError
    nil
  end

  # The rustc cargo will use: RUSTC when set, else the one beside CARGO's executable, else rustc on PATH.
  def rustc_for(cargo)
    return ENV["RUSTC"] unless ENV["RUSTC"].to_s.empty?

    beside = File.join(File.dirname(cargo), "rustc")
    cargo.include?("/") && File.executable?(beside) ? beside : "rustc"
  end

  # Nil when `rustc` is at least the floor; otherwise the message that says so and how to fix it.
  def rustc_problem(rustc, floor)
    found = rustc_version(rustc)
    return nil if found && Gem::Version.new(found) >= Gem::Version.new(floor)

    what = found ? "found rustc #{found} (#{rustc})" : "could not run `#{rustc} --version`"
    "littleghost-sandbox needs Rust #{floor} or newer to build its extension " \
      "(the newest rust-version among its locked crates); #{what}.\n#{INSTALL_HINT}"
  end
end
