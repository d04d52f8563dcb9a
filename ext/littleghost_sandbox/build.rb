# frozen_string_literal: true

# Runs `cargo build --release` for the extension during `gem install`.
#
# RubyGems captures everything a build prints and shows it only on failure (or
# with --verbose), so a two-minute compile looks like a hang. When the install
# runs on a terminal, cargo's progress goes to that terminal as well; the
# captured log keeps it either way.
#
# Usage: ruby build.rb MANIFEST TARGET_DIR PACKAGE...
manifest, target_dir, *packages = ARGV
cargo = ENV.fetch("CARGO", "cargo")
command = [cargo, "build", "--release", "--locked", "--manifest-path", manifest, "--target-dir", target_dir,
           *packages.flat_map { |package| ["-p", package] }]

terminal = begin
  File.open("/dev/tty", "w")
rescue SystemCallError
  nil
end
note = "littleghost-sandbox: compiling the Rust extension (about 2 minutes on 2 cores; cargo's progress follows)\n"
$stdout.print(note)
terminal&.print(note)

IO.popen(command, err: %i[child out]) do |output|
  output.each_line do |line|
    $stdout.print(line)
    terminal&.print(line)
  end
end
exit($?.success? ? 0 : 1)
