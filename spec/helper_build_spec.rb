# frozen_string_literal: true

require "rbconfig"
require "fileutils"
require "tmpdir"
require_relative "../ext/littleghost_sandbox/helper_build"
require_relative "../ext/littleghost_sandbox/toolchain"

# Every build path (`rake compile`, the source gem's build.rb, `rake native`) builds the helper the Landlock backend
# executes at each launch statically linked where Rust links glibc statically (x86_64/aarch64 Linux), so a launch
# runs no dynamic loader (against musl where its target is installed: no CPU probing at start-up);
# where that build fails it falls back to glibc, then to the dynamic build, and the build log says which linkage the
# helper got, read from the executable itself, never from what was asked for.
RSpec.describe "building the helper" do # rubocop:disable RSpec/DescribeClass
  build = LittleGhostSandboxHelperBuild
  root = File.expand_path("..", __dir__)

  # A stand-in for cargo: records each build and "produces" the executable it was asked for (a copy of
  # `produce`) unless the build is one `failing` names.
  def builds_with(produce:, failing: nil)
    ran = []
    run = lambda do |env, argv|
      ran << [env, argv]
      static = argv.include?("--target")
      kind = static ? (argv[argv.index("--target") + 1].end_with?("-musl") ? :musl : :static) : :dynamic
      return false if Array(failing).include?(kind)

      out = argv[argv.index("--target-dir") + 1]
      out = static ? File.join(out, argv[argv.index("--target") + 1], "release") : File.join(out, "release")
      FileUtils.mkdir_p(out)
      FileUtils.cp(produce, File.join(out, LittleGhostSandboxHelperBuild::EXECUTABLE))
      true
    end
    [ran, run]
  end

  it "reads the linkage from the executable: a static one has no dynamic loader, a dynamic one names it" do
    expect(build.linkage(RbConfig.ruby)).to eq("dynamic")
    expect(build.linkage(__FILE__)).to eq("unknown")
    helper = File.join(root, "lib", build::EXECUTABLE)
    skip "the helper is not compiled (rake compile)" unless File.exist?(helper)
    expected = build::STATIC_TARGETS.include?(build.host_triple("rustc")) ? "static" : "dynamic"
    expect(build.linkage(helper)).to eq(expected)
  end

  it "on x86_64 and aarch64 Linux builds it statically in its own target directory, never the extension, " \
     "adding crt-static to the caller's rustflags" do
    Dir.mktmpdir("lg-helper-build") do |dir|
      ran, run = builds_with(produce: File.join(root, "lib", build::EXECUTABLE))
      said = []
      built, linkage = build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir,
                                   triple: "x86_64-unknown-linux-gnu", run: run, say: ->(line) { said << line })
      expect(ran.size).to eq(1)
      env, argv = ran.first
      expect(argv.each_cons(2).to_a).to include(["-p", "littleghost_sandbox_helper"],
                                                ["--target", "x86_64-unknown-linux-gnu"],
                                                ["--target-dir", File.join(dir, "helper-static")])
      expect(argv).not_to include("littleghost_sandbox")
      expect(env["RUSTFLAGS"]).to end_with("-C target-feature=+crt-static")
      expect(built).to eq(File.join(dir, "helper-static", "x86_64-unknown-linux-gnu", "release", build::EXECUTABLE))
      skip "the compiled helper is not static here" unless build.linkage(built) == "static"
      expect(linkage).to eq("static")
      expect(said.join).to include("built the helper statically linked")
    end
    expect(build.static_env({ "RUSTFLAGS" => "-C opt-level=2" })).to eq("RUSTFLAGS" => "-C opt-level=2 -C target-feature=+crt-static")
    expect(build.static_env({ "CARGO_ENCODED_RUSTFLAGS" => "-Copt-level=2" }))
      .to eq("CARGO_ENCODED_RUSTFLAGS" => "-Copt-level=2\x1f-C\x1ftarget-feature=+crt-static")
  end

  it "falls back to the dynamic build when the static one fails, and says so" do
    Dir.mktmpdir("lg-helper-build") do |dir|
      ran, run = builds_with(produce: RbConfig.ruby, failing: :static)
      said = []
      built, linkage = build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir,
                                   triple: "aarch64-unknown-linux-gnu", run: run, say: ->(line) { said << line })
      expect(ran.map { |_, argv| argv.include?("--target") }).to eq([true, false])
      expect(ran.last.first).to eq({})
      expect([built, linkage]).to eq([File.join(dir, "release", build::EXECUTABLE), "dynamic"])
      expect(said.first).to include("the statically linked helper did not build", "libc6-dev")
      expect(said.last).to include("built the helper dynamically linked")
    end
  end

  it "builds it dynamically elsewhere, says why, and reports a helper that is not what was asked for" do
    Dir.mktmpdir("lg-helper-build") do |dir|
      ran, run = builds_with(produce: RbConfig.ruby)
      said = []
      _, linkage = build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir,
                               triple: "aarch64-apple-darwin", run: run, say: ->(line) { said << line })
      expect(ran.size).to eq(1)
      expect(ran.first.last).not_to include("--target")
      expect(linkage).to eq("dynamic")
      expect(said.first).to include("only for x86_64-unknown-linux-gnu and aarch64-unknown-linux-gnu; " \
                                    "this is aarch64-apple-darwin")
    end
    Dir.mktmpdir("lg-helper-build") do |dir|
      # The static build "succeeds" with a dynamic executable (rustflags overridden elsewhere): said, not hidden.
      _, run = builds_with(produce: RbConfig.ruby)
      said = []
      _, linkage = build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir,
                               triple: "x86_64-unknown-linux-gnu", run: run, say: ->(line) { said << line })
      expect(linkage).to eq("dynamic")
      expect(said.join).to include("asked for a statically linked helper but cargo built one dynamically linked")
    end
    expect { build.build(cargo: "cargo", manifest: "/m", target_dir: "/nonexistent", triple: nil,
                         run: ->(_env, _argv) { false }, say: ->(_) {}) }
      .to raise_error(RuntimeError, /cargo could not build the helper/)
  end

  it "with musl installed builds it against musl first, with no C compiler" do
    Dir.mktmpdir("lg-helper-build") do |dir|
      ran, run = builds_with(produce: File.join(root, "lib", build::EXECUTABLE))
      said = []
      built, = build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir, musl: true,
                           triple: "x86_64-unknown-linux-gnu", run: run, say: ->(line) { said << line })
      expect(ran.size).to eq(1)
      env, argv = ran.first
      expect(argv.each_cons(2).to_a).to include(["--target", "x86_64-unknown-linux-musl"],
                                                ["--target-dir", File.join(dir, "helper-static")])
      expect(env).to eq({})
      expect(built).to eq(File.join(dir, "helper-static", "x86_64-unknown-linux-musl", "release", build::EXECUTABLE))
      expect(said.join).to include("against musl") if build.linkage(built) == "static"
    end
  end

  it "falls back to glibc when the musl build fails, and says so" do
    Dir.mktmpdir("lg-helper-build") do |dir|
      ran, run = builds_with(produce: RbConfig.ruby, failing: :musl)
      said = []
      build.build(cargo: "cargo", manifest: "/gem/Cargo.toml", target_dir: dir, musl: true,
                  triple: "x86_64-unknown-linux-gnu", run: run, say: ->(line) { said << line })
      expect(ran.map { |_, argv| argv[argv.index("--target") + 1] })
        .to eq(%w[x86_64-unknown-linux-musl x86_64-unknown-linux-gnu])
      expect(said.first).to include("did not build against musl")
    end
  end

  # The helper is built on its own by every build path (above): through the core it compiled the core's async
  # runtime and TLS stack (tokio, rustls, ring's C code) a second time, minutes of a cold `rake native gem`.
  it "compiles only what the helper uses: neither the core, nor an async runtime, nor TLS" do
    cargo = ENV.fetch("CARGO", "cargo")
    out = IO.popen([cargo, "tree", "--locked", "--manifest-path", File.join(root, "Cargo.toml"), "-p", build::PACKAGE,
                    "-e", "normal,build", "--prefix", "none", "--format", "{p}"], &:read)
    expect($?).to be_success
    crates = out.lines.map { |line| line.split.first }.uniq
    expect(crates & %w[littleghost_sandbox_core tokio mio rustls tokio-rustls ring rcgen time pem
                       rustls-native-certs cc]).to be_empty
    expect(crates).to include(build::PACKAGE, "littleghost_sandbox_restrict", "landlock", "libc")
  end

  it "tries musl where its standard library is installed, needing no musl C compiler" do
    rustc = LittleGhostSandboxToolchain.rustc_for(ENV.fetch("CARGO", "cargo"))
    expect(build.musl_ready?("aarch64-apple-darwin", rustc)).to be(false)
    sysroot = IO.popen([rustc, "--print", "sysroot"], &:read).strip
    installed = File.directory?(File.join(sysroot, "lib", "rustlib", "x86_64-unknown-linux-musl", "lib"))
    expect(build.musl_ready?("x86_64-unknown-linux-gnu", rustc)).to be(installed)
  end
end
