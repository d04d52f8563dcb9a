# frozen_string_literal: true

require "fileutils"
require "rbconfig"
require "rubygems/package"
require_relative "../ext/littleghost_sandbox/helper_build"
require_relative "../ext/littleghost_sandbox/toolchain"

# The platform gem (`rake native gem`): the extension and the helper compiled
# here, laid out per Ruby minor the way precompiled gems are,
#
#   lib/littleghost_sandbox/3.1/littleghost_sandbox.so
#   lib/littleghost_sandbox/3.1/littleghost-sandbox-helper
#
# (lib/littleghost/sandbox.rb loads the copy for the running Ruby; the extension
# finds the helper in its own directory). `rake native` compiles for the Ruby
# running rake into tmp/native/PLATFORM/MINOR/ and keeps the minors compiled
# before, so running it under each Ruby and then `rake native gem` once puts
# them all in one gem, whose required_ruby_version is exactly their range.
module NativeGem
  extend FileUtils

  # This machine's RubyGems platform, e.g. "x86_64-linux".
  PLATFORM = Gem::Platform.local.to_s
  # The running Ruby's minor, e.g. "3.1": its C ABI is what the extension is compiled against.
  MINOR = RUBY_VERSION[/\A\d+\.\d+/]
  EXTENSION = "littleghost_sandbox.#{RbConfig::CONFIG["DLEXT"]}".freeze
  HELPER = "littleghost-sandbox-helper"

  module_function

  # Where the compiled minors wait to be packaged: tmp/native/PLATFORM/MINOR/.
  def staged(root)
    File.join(root, "tmp", "native", PLATFORM)
  end

  # Compiles both crates for the running Ruby (no test hooks: what users get) and stages them under its minor.
  def compile(root)
    # The source gem's install check (spec/gem_install_spec.rb) builds in the same directory with the same
    # features, so the two share compiled dependencies; `rake compile` keeps target/release to itself. (A cdylib's
    # file name carries no hash, so the two builds write the same liblittleghost_sandbox.so; both compile this
    # checkout's sources, so whichever cargo keeps is the same code.)
    target = File.join(root, "target", "gem-install")
    sh({ "RUBY" => RbConfig.ruby }, "cargo", "build", "--release", "--locked", "--target-dir", target,
       "-p", "littleghost_sandbox", chdir: root)
    # Statically linked where it can be, as for the source gem (helper_build.rb); the log line says which.
    cargo = ENV.fetch("CARGO", "cargo")
    helper, = LittleGhostSandboxHelperBuild.build_for_host(
      rustc: LittleGhostSandboxToolchain.rustc_for(cargo), cargo: cargo, manifest: File.join(root, "Cargo.toml"),
      target_dir: target, say: method(:puts), run: ->(env, argv) { sh(env, *argv, chdir: root) { |ok, _| ok } }
    )
    built = Dir[File.join(target, "release", "liblittleghost_sandbox.{so,dylib}")].first or
      abort "cargo did not produce liblittleghost_sandbox"
    destination = File.join(staged(root), MINOR)
    rm_rf(destination)
    mkdir_p(destination)
    install(built, File.join(destination, EXTENSION), mode: 0o755)
    install(helper, File.join(destination, HELPER), mode: 0o755)
  end

  # The staged minors, oldest first; aborts unless they form an unbroken range (a gem claiming 3.1 to 3.3
  # must hold 3.2 too).
  def minors(root)
    found = Dir.exist?(staged(root)) ? Dir.children(staged(root)) : []
    found = found.select { |minor| minor.match?(/\A\d+\.\d+\z/) }.sort_by { |minor| Gem::Version.new(minor) }
    abort "no Ruby compiled for #{PLATFORM} yet: run `rake native` under each Ruby first" if found.empty?
    found.each_cons(2) do |older, newer|
      next if consecutive?(older, newer)

      abort "tmp/native/#{PLATFORM} holds Ruby #{older} and #{newer} but nothing between: " \
            "run `rake native` under the Rubies between, or `rake native:clean`"
    end
    found
  end

  # Whether minor `newer` is the one right after `older` ("3.3" after "3.2", "4.0" after "3.4").
  def consecutive?(older, newer)
    major, minor = older.split(".").map(&:to_i)
    newer == "#{major}.#{minor + 1}" || newer == "#{major + 1}.0"
  end

  # The Rubies a gem holding `minors` supports, e.g. [">= 3.1", "< 3.2.dev"].
  def ruby_requirement(minors)
    major, minor = minors.last.split(".").map(&:to_i)
    [">= #{minors.first}", "< #{major}.#{minor + 1}.dev"]
  end

  # Builds pkg/NAME-VERSION-PLATFORM.gem from the gemspec's files (less the Rust sources) and the staged minors.
  def package(root, gemspec)
    minors = minors(root)
    spec = Gem::Specification.load(gemspec).dup
    spec.platform = Gem::Platform.new(PLATFORM)
    spec.extensions = []
    spec.requirements = []
    spec.required_ruby_version = ruby_requirement(minors)
    # `gem install` writes ri documentation by default, and RDoc's Markdown parser needs 30 s for the 65 KB
    # README.md on this loaded 2-core machine (the whole install takes 1 s without it). The README stays in the gem
    # as a file and on the homepage; ri keeps every class's and method's documentation.
    spec.extra_rdoc_files -= ["README.md"]
    options = spec.rdoc_options.dup
    (main = options.index("--main")) && options.slice!(main, 2)
    spec.rdoc_options = options
    files = spec.files.reject { |file| file.start_with?("ext/", "Cargo.") }
    binaries = minors.flat_map { |minor| [EXTENSION, HELPER].map { |name| "lib/littleghost_sandbox/#{minor}/#{name}" } }

    tree = File.join(root, "tmp", "native", "#{PLATFORM}-gem")
    rm_rf(tree)
    files.each do |file|
      mkdir_p(File.dirname(File.join(tree, file)))
      cp(File.join(root, file), File.join(tree, file), preserve: true)
    end
    minors.each do |minor|
      mkdir_p(File.join(tree, "lib", "littleghost_sandbox", minor))
      [EXTENSION, HELPER].each do |name|
        install(File.join(staged(root), minor, name), File.join(tree, "lib", "littleghost_sandbox", minor, name), mode: 0o755)
      end
    end
    spec.files = files + binaries
    built = Dir.chdir(tree) { Gem::Package.build(spec) }
    mkdir_p(File.join(root, "pkg"))
    mv(File.join(tree, built), File.join(root, "pkg", built))
    puts "built pkg/#{built} (Ruby #{spec.required_ruby_version})"
  end
end
