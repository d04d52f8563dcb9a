# frozen_string_literal: true

require "json"
require "open3"

# The oldest Rust toolchain that can build Cargo.lock as locked: the highest
# `rust-version` (or edition floor) among the locked crates that are built for
# the platforms the gem supports. Cargo reads each crate's Cargo.toml from its
# registry cache (`cargo metadata --offline`, no network), per target so that
# crates locked only for other systems (Windows, UEFI, WASI) do not count.
#
# `rake rust_floor` prints it; the workspace's Cargo.toml records it as
# `rust-version`, which extconf.rb checks `rustc --version` against and
# spec/rust_floor_spec.rb holds equal to this computation.
module RustFloor
  # The platforms the gem builds for (see README "Installing").
  TARGETS = %w[x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-apple-darwin aarch64-apple-darwin].freeze
  # The first Rust release that accepts each edition.
  EDITION_FLOORS = { "2015" => "1.0", "2018" => "1.31", "2021" => "1.56", "2024" => "1.85" }.freeze
  # Cargo.lock `version = 4` is read by cargo 1.78 and newer.
  LOCKFILE_FLOORS = { 3 => "1.53", 4 => "1.78" }.freeze

  # One demand on the toolchain: who makes it, why, and the version.
  Demand = Struct.new(:crate, :reason, :version)

  module_function

  # Every demand the lock file and its crates make; the floor is the highest.
  def demands(root, cargo: ENV.fetch("CARGO", "cargo"))
    lock_version = File.read(File.join(root, "Cargo.lock"))[/^version = (\d+)/, 1].to_i
    found = [Demand.new("Cargo.lock", "lock file version #{lock_version}", LOCKFILE_FLOORS.fetch(lock_version, "1.0"))]
    TARGETS.each do |target|
      out, err, status = Open3.capture3(cargo, "metadata", "--locked", "--offline", "--format-version", "1",
                                        "--filter-platform", target, chdir: root)
      raise "cargo metadata failed for #{target} (run `cargo fetch --locked` first?):\n#{err}" unless status.success?

      metadata = JSON.parse(out)
      built = metadata.dig("resolve", "nodes").to_h { |node| [node["id"], true] }
      members = metadata["workspace_members"]
      metadata["packages"].each do |package|
        next unless built[package["id"]]

        crate = "#{package["name"]} #{package["version"]}"
        found << Demand.new(crate, "edition #{package["edition"]}", EDITION_FLOORS.fetch(package["edition"]))
        # A workspace member's own rust-version is the result, not an input.
        next if members.include?(package["id"]) || package["rust_version"].nil?

        found << Demand.new(crate, "rust-version", package["rust_version"].sub(/\.0\z/, ""))
      end
    end
    found.uniq
  end

  # The highest demand's version, e.g. "1.85".
  def floor(root, **options)
    highest(demands(root, **options))
  end

  # The demands that set the floor.
  def deciding(root, **options)
    all = demands(root, **options)
    top = highest(all)
    all.select { |demand| Gem::Version.new(demand.version) == Gem::Version.new(top) }
  end

  # The floor the workspace records: `rust-version` in Cargo.toml's [workspace.package].
  def recorded(root)
    File.read(File.join(root, "Cargo.toml"))[/^\[workspace\.package\][^\[]*?^rust-version = "([^"]+)"/m, 1]
  end

  def highest(demands)
    demands.map(&:version).max_by { |version| Gem::Version.new(version) }
  end
end
