# frozen_string_literal: true

require "find"
require "json"
require "open3"
require "rbconfig"
require "rubygems/package"
require_relative "../ext/littleghost_sandbox/helper_build"

# Proves the packaging paths a user takes: the source gem (`gem build`, then `gem install --local` into an empty
# GEM_HOME, which compiles the Rust extension through extconf.rb) and the platform gem (`rake native gem`, installed
# the same way with no Rust on PATH), each then used from an unrelated directory by spec/smoke/installed_gem_spec.rb.
RSpec.describe "gem packaging" do
  root = File.expand_path("..", __dir__)
  extconf = File.join(root, "ext", "littleghost_sandbox", "extconf.rb")
  smoke = File.join(root, "spec", "smoke", "installed_gem_spec.rb")
  # The running Ruby's gem and rake, whichever Ruby runs the suite (not the first on PATH): the gem they build and
  # install is for this Ruby.
  gem_command = [RbConfig.ruby, File.join(RbConfig::CONFIG["bindir"], "gem")].freeze
  rake_command = [RbConfig.ruby, Gem.bin_path("rake", "rake")].freeze

  def tree_bytes(dir)
    Find.find(dir).sum { |path| File.file?(path) && !File.symlink?(path) ? File.size(path) : 0 }
  end

  # GEM_HOME alone, with the system's gem directories after it so rspec is found (never littleghost-sandbox: the
  # smoke spec checks the one it loaded is in GEM_HOME).
  def gem_env(gem_home, **extra)
    { "GEM_HOME" => gem_home, "GEM_PATH" => [gem_home, *Gem.path].join(File::PATH_SEPARATOR), "RUBYOPT" => nil,
      "RUBYLIB" => nil, **extra }
  end

  # The helper's linkage every build path must give it here: static on x86_64/aarch64 Linux with glibc's static
  # library installed (a Landlock launch then runs no dynamic loader), dynamic elsewhere.
  def expected_helper_linkage
    triple = LittleGhostSandboxHelperBuild.host_triple("rustc")
    static_libc = File.absolute_path?(IO.popen(%w[cc -print-file-name=libc.a], err: File::NULL, &:read).to_s.strip)
    LittleGhostSandboxHelperBuild::STATIC_TARGETS.include?(triple) && static_libc ? "static" : "dynamic"
  end

  # Runs the smoke spec from a directory outside the checkout against the gem installed in `gem_home`.
  define_method(:smoke_test) do |gem_home, platform, tmp|
    away = File.join(tmp, "elsewhere")
    FileUtils.mkdir_p(away)
    env = gem_env(gem_home, "LITTLEGHOST_SMOKE_PLATFORM" => platform)
    out, status = Open3.capture2e(env, RbConfig.ruby, "-S", "rspec", smoke, chdir: away)
    expect(status).to be_success, out
    expect(out).to match(/\b5 examples, 0 failures\b/)
  end

  it "builds the source gem, installs it into a fresh GEM_HOME with the extension once and no build tree, " \
     "and a user's first steps work from any directory" do
    Dir.mktmpdir("lg-gem") do |tmp|
      gem_home = File.join(tmp, "home")
      out, status = Open3.capture2e(*gem_command, "build", "littleghost-sandbox.gemspec", "--output", File.join(tmp, "lg.gem"), chdir: root)
      expect(status).to be_success, out

      # A caller's shared target directory, with something of the caller's in it.
      shared_target = File.join(root, "target", "gem-install")
      FileUtils.mkdir_p(shared_target)
      keepsake = File.join(shared_target, "callers-file")
      File.write(keepsake, "mine")
      # Reuse compiled dependencies; the gem's own crates still compile from the gem's copy.
      env = gem_env(gem_home, "CARGO_TARGET_DIR" => shared_target)
      out, status = Open3.capture2e(env, *gem_command, "install", "--local", "--no-document", File.join(tmp, "lg.gem"), chdir: tmp)
      expect(status).to be_success, out
      expect(File.read(keepsake)).to eq("mine")

      script = 'require "littleghost/sandbox"; print LittleGhost::Sandbox.resolve_provider(:unrestricted)'
      out, status = Open3.capture2e(env, RbConfig.ruby, "-e", script, chdir: tmp)
      expect(status).to be_success, out
      expect(out).to eq("LittleGhost::Sandboxes::Unrestricted")
      # The installed command (a RubyGems wrapper in GEM_HOME/bin) runs and reports this host's backends.
      out, status = Open3.capture2(env, File.join(gem_home, "bin", "littleghost-sandbox"), "probe", "--json", chdir: tmp)
      expect([status.success?, JSON.parse(out).dig("bubblewrap", "available")]).to eq([true, true]), out

      gem_dir = Dir[File.join(gem_home, "gems", "littleghost-sandbox-*")].first
      # The build said what it was doing (on a terminal the same lines go there as they happen).
      build_log = Dir[File.join(gem_home, "extensions", "**", "gem_make.out")].first
      expect(File.read(build_log)).to include("littleghost-sandbox: compiling the Rust extension")
      expect(Dir[File.join(gem_dir, "**", "littleghost_sandbox.so")].size).to eq(1)
      helpers = Dir[File.join(gem_dir, "**", "littleghost-sandbox-helper")]
      expect(helpers.size).to eq(1)
      expect(File.dirname(helpers.first)).to eq(File.dirname(Dir[File.join(gem_dir, "**", "littleghost_sandbox.so")].first))
      expect(File.executable?(helpers.first)).to be(true)
      linkage = expected_helper_linkage
      expect(LittleGhostSandboxHelperBuild.linkage(helpers.first)).to eq(linkage)
      expect(File.read(build_log)).to include("littleghost-sandbox: built the helper #{linkage}ally linked")
      expect(Dir[File.join(gem_dir, "**", "target")]).to be_empty
      expect(tree_bytes(gem_dir)).to be < 40 * 1024 * 1024
      %w[LICENSE CHANGELOG.md README.md].each { |file| expect(File).to exist(File.join(gem_dir, file)) }

      smoke_test(gem_home, "ruby", tmp)
    end
  end

  it "builds the platform gem (rake native gem) holding this Ruby's extension and helper, which installs " \
     "with no Rust and nothing to compile and works from any directory" do
    platform = Gem::Platform.local.to_s
    minor = RUBY_VERSION[/\A\d+\.\d+/]
    next_minor = minor.split(".").then { |major, number| "#{major}.#{number.to_i + 1}" }
    version = Gem::Specification.load(File.join(root, "littleghost-sandbox.gemspec")).version
    out, status = Open3.capture2e(*rake_command, "native", "gem", chdir: root)
    expect(status).to be_success, out
    gem_file = File.join(root, "pkg", "littleghost-sandbox-#{version}-#{platform}.gem")
    expect(File).to exist(gem_file)

    spec = Gem::Package.new(gem_file).spec
    expect([spec.platform.to_s, spec.extensions, spec.requirements]).to eq([platform, [], []])
    # Exactly the minors inside: this Ruby's, and no Ruby whose C ABI was not compiled against.
    expect(spec.required_ruby_version).to eq(Gem::Requirement.new(">= #{minor}", "< #{next_minor}.dev"))
    expect(spec.required_ruby_version.satisfied_by?(Gem::Version.new(RUBY_VERSION))).to be(true)
    expect(spec.required_ruby_version.satisfied_by?(Gem::Version.new("#{next_minor}.0"))).to be(false)
    expect(spec.files).to include("lib/littleghost_sandbox/#{minor}/littleghost_sandbox.so",
                                  "lib/littleghost_sandbox/#{minor}/littleghost-sandbox-helper")
    expect(spec.files.grep(%r{\Aext/|\ACargo\.})).to be_empty
    linkage = expected_helper_linkage
    expect(out).to include("littleghost-sandbox: built the helper #{linkage}ally linked")
    staged = File.join(root, "tmp", "native", platform, minor, "littleghost-sandbox-helper")
    expect(LittleGhostSandboxHelperBuild.linkage(staged)).to eq(linkage)

    Dir.mktmpdir("lg-native") do |tmp|
      gem_home = File.join(tmp, "home")
      # No cargo or rustc on PATH: anything that tried to compile would fail.
      env = gem_env(gem_home, "PATH" => "/usr/bin:/bin", "CARGO" => "/nonexistent/cargo", "RUSTC" => "/nonexistent/rustc")
      out, status = Open3.capture2e(env, *gem_command, "install", "--local", gem_file, chdir: tmp)
      expect(status).to be_success, out
      expect(Dir[File.join(gem_home, "extensions", "**", "*")]).to be_empty
      gem_dir = File.join(gem_home, "gems", "littleghost-sandbox-#{version}-#{platform}")
      expect(File.executable?(File.join(gem_dir, "lib", "littleghost_sandbox", minor, "littleghost-sandbox-helper"))).to be(true)
      out, status = Open3.capture2(env, File.join(gem_home, "bin", "littleghost-sandbox"), "probe", "--json", chdir: tmp)
      expect([status.success?, JSON.parse(out).dig("bubblewrap", "available")]).to eq([true, true]), out

      smoke_test(gem_home, platform, tmp)
    end
  end

  it "stops before the long build with the command that installs a missing cargo" do
    Dir.mktmpdir("lg-nocargo") do |tmp|
      out, status = Open3.capture2e({ "CARGO" => "/nonexistent/cargo" }, RbConfig.ruby, extconf, chdir: tmp)
      expect(status).not_to be_success
      expect(out).to include("needs cargo").and include("rustup")
      expect(File).not_to exist(File.join(tmp, "Makefile"))
    end
  end

  it "never deletes a CARGO_TARGET_DIR it did not create when RubyGems runs make clean" do
    Dir.mktmpdir("lg-clean") do |tmp|
      callers = File.join(tmp, "shared-target")
      FileUtils.mkdir_p(callers)
      File.write(File.join(callers, "precious"), "x")
      out, status = Open3.capture2e({ "CARGO_TARGET_DIR" => callers }, RbConfig.ruby, extconf, chdir: tmp)
      expect(status).to be_success, out
      out, status = Open3.capture2e("make", "clean", chdir: tmp)
      expect(status).to be_success, out
      expect(File.read(File.join(callers, "precious"))).to eq("x")
    end
  end

  it "removes on make clean only the temporary target directory it made itself" do
    Dir.mktmpdir("lg-clean") do |tmp|
      out, status = Open3.capture2e({ "CARGO_TARGET_DIR" => nil }, RbConfig.ruby, extconf, chdir: tmp)
      expect(status).to be_success, out
      own = File.read(File.join(tmp, "Makefile"))[/rm -rf (\S*littleghost-sandbox-build-\S+)/, 1]
      expect(own).not_to be_nil
      expect(File.directory?(own)).to be(true)
      out, status = Open3.capture2e("make", "clean", chdir: tmp)
      expect(status).to be_success, out
      expect(File.exist?(own)).to be(false)
    end
  end
end
