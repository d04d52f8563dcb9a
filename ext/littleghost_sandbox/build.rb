# frozen_string_literal: true

# Runs `cargo build --release` for the extension and the helper during `gem install`.
#
# RubyGems captures everything a build prints and shows it only on failure (or
# with --verbose), so a two-minute compile looks like a hang. When the install
# runs on a terminal, cargo's progress goes to that terminal as well; the
# captured log keeps it either way.
#
# The helper is built statically linked where it can be (helper_build.rb) and
# copied to HELPER_OUT; the log says which linkage it got.
#
# Usage: ruby build.rb MANIFEST TARGET_DIR HELPER_OUT
require "fileutils"
require_relative "helper_build"
require_relative "toolchain"

manifest, target_dir, helper_out = ARGV
cargo = ENV.fetch("CARGO", "cargo")

terminal = begin
  File.open("/dev/tty", "w")
rescue SystemCallError
  nil
end
say = lambda do |line|
  $stdout.puts(line)
  terminal&.puts(line)
end
# Runs one cargo build, its output going to the log and the terminal; whether it succeeded.
run = lambda do |env, argv|
  IO.popen(env, argv, err: %i[child out]) do |output|
    output.each_line do |line|
      $stdout.print(line)
      terminal&.print(line)
    end
  end
  $?.success?
end

say.call("littleghost-sandbox: compiling the Rust extension (about 2 minutes on 2 cores; cargo's progress follows)")
extension = [cargo, "build", "--release", "--locked", "--manifest-path", manifest, "--target-dir", target_dir,
             "-p", "littleghost_sandbox"]
exit(1) unless run.call({}, extension)

begin
  built, = LittleGhostSandboxHelperBuild.build_for_host(
    rustc: LittleGhostSandboxToolchain.rustc_for(cargo), cargo: cargo, manifest: manifest, target_dir: target_dir,
    run: run, say: say
  )
rescue RuntimeError => e
  say.call("littleghost-sandbox: #{e.message}")
  exit(1)
end
FileUtils.cp(built, helper_out)
File.chmod(0o755, helper_out)
