# frozen_string_literal: true

require "open3"
require "rbconfig"
require_relative "../rakelib/rust_floor"
require_relative "../ext/littleghost_sandbox/toolchain"

# The source gem states the true oldest Rust that builds it: the newest rust-version (or edition) among the crates
# Cargo.lock locks for the gem's platforms, recorded once in Cargo.toml, and extconf.rb checks `rustc --version`
# against it before the long cargo build starts, with the install command that works on Debian 12 (rustup).
RSpec.describe "the Rust toolchain floor" do # rubocop:disable RSpec/DescribeClass
  root = File.expand_path("..", __dir__)
  extconf = File.join(root, "ext", "littleghost_sandbox", "extconf.rb")
  floor = LittleGhostSandboxToolchain.rust_floor(root)

  it "recorded in Cargo.toml is the one computed from the locked crates, and every crate of ours declares it" do
    expect(floor).to eq(RustFloor.floor(root))
    Dir[File.join(root, "ext", "*", "Cargo.toml")].each do |manifest|
      expect(File.read(manifest)).to match(/^rust-version\.workspace = true$/), manifest
    end
    requirement = Gem::Specification.load(File.join(root, "littleghost-sandbox.gemspec")).requirements.join
    expect(requirement).to include("Rust #{floor} or newer")
  end

  # A stand-in rustc answering `--version` with `version`.
  def fake_rustc(dir, version)
    path = File.join(dir, "rustc")
    File.write(path, "#!/bin/sh\necho 'rustc #{version} (4b91a6ea7 2022-08-08)'\n")
    File.chmod(0o755, path)
    path
  end

  it "makes extconf.rb refuse an older rustc before cargo starts, naming the floor and the rustup command" do
    Dir.mktmpdir("lg-rustc") do |tmp|
      env = { "RUSTC" => fake_rustc(tmp, "1.63.0"), "CARGO_TARGET_DIR" => File.join(tmp, "target") }
      out, status = Open3.capture2e(env, RbConfig.ruby, extconf, chdir: tmp)
      expect(status).not_to be_success
      expect(out).to include("needs Rust #{floor} or newer", "found rustc 1.63.0", "curl https://sh.rustup.rs -sSf | sh")
      expect(File).not_to exist(File.join(tmp, "Makefile"))
    end
  end

  it "lets extconf.rb go on with a rustc at the floor" do
    Dir.mktmpdir("lg-rustc") do |tmp|
      env = { "RUSTC" => fake_rustc(tmp, "#{floor}.0"), "CARGO_TARGET_DIR" => File.join(tmp, "target") }
      out, status = Open3.capture2e(env, RbConfig.ruby, extconf, chdir: tmp)
      expect(status).to be_success, out
      expect(File).to exist(File.join(tmp, "Makefile"))
    end
  end
end
