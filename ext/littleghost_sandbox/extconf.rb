# frozen_string_literal: true

# Builds the Rust extension for `gem install`. The rb_sys gem is not available
# everywhere we install (no RubyGems.org), so this drives cargo directly: it
# writes a Makefile whose `all` target runs cargo (through build.rb, which shows
# cargo's progress on the terminal) and whose `install` target copies the
# library to where RubyGems collects it.
#
# Where cargo builds:
# - CARGO_TARGET_DIR, when the caller sets it (a shared target directory). It
#   belongs to the caller: nothing here ever deletes it.
# - Otherwise a fresh temporary directory made here. It is the only directory
#   `make clean` and `make install` remove, so the installed gem holds the
#   extension once and no 200 MB target tree.
require "rbconfig"
require "shellwords"
require "tmpdir"
require_relative "toolchain"

ext_name = "littleghost_sandbox"
gem_root = File.expand_path("../..", __dir__)
manifest = File.join(gem_root, "Cargo.toml")
dlext = RbConfig::CONFIG["DLEXT"]
install_dir = RbConfig::CONFIG["sitearchdir"]
cargo = ENV.fetch("CARGO", "cargo")

# Fail before the long build, with the command that fixes it. The floor is the newest rust-version among the
# locked crates (recorded in Cargo.toml by `rake rust_floor`); an older cargo fails on the lock file or a crate.
rust_floor = LittleGhostSandboxToolchain.rust_floor(gem_root)
unless system("#{cargo.shellescape} --version", out: File::NULL, err: File::NULL)
  abort "littleghost-sandbox needs cargo (the Rust toolchain, #{rust_floor} or newer) to build its extension.\n" \
        "#{LittleGhostSandboxToolchain::INSTALL_HINT}"
end
problem = LittleGhostSandboxToolchain.rustc_problem(LittleGhostSandboxToolchain.rustc_for(cargo), rust_floor)
abort problem if problem
clang_dirs = [ENV["LIBCLANG_PATH"], *Dir["/usr/lib/llvm-*/lib"], "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
              "/usr/lib64", "/usr/lib", "/usr/local/lib", "/opt/homebrew/opt/llvm/lib", "/usr/local/opt/llvm/lib",
              "/Library/Developer/CommandLineTools/usr/lib"].compact
unless clang_dirs.any? { |dir| !Dir[File.join(dir, "libclang{,-[0-9]*}.{so,dylib}{,.[0-9]*}")].empty? }
  abort <<~TEXT
    littleghost-sandbox needs libclang to generate its Ruby bindings (bindgen) and found none.
    Debian/Ubuntu: apt-get install libclang-dev. macOS: xcode-select --install. Or set LIBCLANG_PATH to its directory.
  TEXT
end
unless File.exist?(File.join(RbConfig::CONFIG["rubyhdrdir"], "ruby.h"))
  abort "littleghost-sandbox needs Ruby's C headers (Debian/Ubuntu: apt-get install ruby-dev)."
end

owned_target = ENV["CARGO_TARGET_DIR"].to_s.empty?
target_dir =
  if owned_target
    Dir.mktmpdir("littleghost-sandbox-build-")
  else
    File.expand_path(ENV.fetch("CARGO_TARGET_DIR"), Dir.pwd)
  end
built = File.join(target_dir, "release", "lib#{ext_name}.#{RUBY_PLATFORM.include?("darwin") ? "dylib" : "so"}")
# The helper executable is installed beside the extension, where the extension looks for it. build.rb builds it
# (statically linked where it can: helper_build.rb) and copies it here.
helper = "littleghost-sandbox-helper"
# Only a directory this script created is ever removed.
remove_target = owned_target ? "rm -rf #{target_dir.shellescape}" : "@true"
build_script = File.join(__dir__, "build.rb")

# RUBY tells rb-sys which Ruby's headers to compile against: the one running extconf.
File.write("Makefile", <<~MAKE)
  RUBY = #{RbConfig.ruby.shellescape}
  CARGO = #{cargo.shellescape}

  all: #{ext_name}.#{dlext}

  #{ext_name}.#{dlext}:
  \tRUBY=$(RUBY) CARGO=$(CARGO) $(RUBY) #{build_script.shellescape} #{manifest.shellescape} #{target_dir.shellescape} #{helper}
  \tcp #{built.shellescape} #{ext_name}.#{dlext}

  install: all
  \tmkdir -p $(DESTDIR)#{install_dir.shellescape}
  \tcp #{ext_name}.#{dlext} $(DESTDIR)#{install_dir.shellescape}/#{ext_name}.#{dlext}
  \tcp #{helper} $(DESTDIR)#{install_dir.shellescape}/#{helper}
  \trm -f #{ext_name}.#{dlext} #{helper}
  \t#{remove_target}

  clean:
  \trm -f #{ext_name}.#{dlext} #{helper}
  \t#{remove_target}

  .PHONY: all install clean
MAKE
