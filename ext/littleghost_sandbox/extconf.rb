# frozen_string_literal: true

# Builds the Rust extension for `gem install`. The rb_sys gem is not available
# everywhere we install (no RubyGems.org), so this drives cargo directly: it
# writes a Makefile whose `all` target runs `cargo build --release` and whose
# `install` target copies the library to where RubyGems collects it.
require "rbconfig"
require "shellwords"

ext_name = "littleghost_sandbox"
gem_root = File.expand_path("../..", __dir__)
manifest = File.join(gem_root, "Cargo.toml")
# CARGO_TARGET_DIR lets a caller share compiled dependencies (the gem-install test does).
target_dir = File.expand_path(ENV.fetch("CARGO_TARGET_DIR", "target"), Dir.pwd)
dlext = RbConfig::CONFIG["DLEXT"]
built = File.join(target_dir, "release", "lib#{ext_name}.#{RUBY_PLATFORM.include?("darwin") ? "dylib" : "so"}")
install_dir = RbConfig::CONFIG["sitearchdir"]
cargo = ENV.fetch("CARGO", "cargo")

abort "littleghost-sandbox needs cargo (the Rust toolchain) to build its extension" unless system("#{cargo.shellescape} --version", out: File::NULL)

# RUBY tells rb-sys which Ruby's headers to compile against: the one running extconf.
File.write("Makefile", <<~MAKE)
  RUBY = #{RbConfig.ruby.shellescape}
  CARGO = #{cargo.shellescape}

  all: #{ext_name}.#{dlext}

  #{ext_name}.#{dlext}:
  \tRUBY=$(RUBY) $(CARGO) build --release --locked --manifest-path #{manifest.shellescape} -p #{ext_name} --target-dir #{target_dir.shellescape}
  \tcp #{built.shellescape} #{ext_name}.#{dlext}

  install: all
  \tmkdir -p $(DESTDIR)#{install_dir.shellescape}
  \tcp #{ext_name}.#{dlext} $(DESTDIR)#{install_dir.shellescape}/#{ext_name}.#{dlext}

  clean:
  \trm -rf #{target_dir.shellescape} #{ext_name}.#{dlext}

  .PHONY: all install clean
MAKE
