# frozen_string_literal: true

# How every build path (`rake compile`, extconf.rb's build.rb for the source
# gem, `rake native` for the platform gem) builds the helper executable.
#
# The Landlock backend executes the helper at every launch (as the supervisor,
# from its sealed in-memory copy). Linked dynamically, each launch first runs
# the dynamic loader: it opens and maps libc and libgcc_s and relocates them,
# a measurable part of a launch of a short command. So where Rust
# links a static executable against glibc (x86_64 and aarch64 Linux), the
# helper is built with `-C target-feature=+crt-static`, in its own target
# directory and with `--target`, so the flag reaches neither the extension (a
# cdylib loaded into Ruby, which must stay dynamic) nor build scripts.
#
# Where the musl target of that architecture is installed (`rustup target
# add x86_64-unknown-linux-musl`), the helper is linked against musl instead
# (it compiles no C, so no musl C compiler is needed): glibc's static start-up probes the CPU (each CPUID traps to
# the hypervisor on a VM) and sets up locale and IRELATIVE relocations, about
# 0.3-0.4 ms of every launch measured here, which musl does not do. When
# that build fails, the glibc static build is tried; when that fails too (no
# static C library: Debian/Ubuntu's libc6-dev, Fedora's glibc-static), the
# helper is built dynamically as before. Either way the build prints one line saying which it built, read
# from the executable itself (a static executable has no PT_INTERP program
# header, so the kernel starts it without a dynamic loader).
module LittleGhostSandboxHelperBuild
  PACKAGE = "littleghost_sandbox_helper"
  EXECUTABLE = "littleghost-sandbox-helper"
  # Targets where the helper is linked statically against glibc.
  STATIC_TARGETS = %w[x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu].freeze
  STATIC_FLAG = "-C target-feature=+crt-static"
  # The static build's own directory inside the target directory.
  STATIC_DIR = "helper-static"
  # The musl target of each static target: a static executable whose start-up does no CPU probing.
  MUSL_TARGETS = { "x86_64-unknown-linux-gnu" => "x86_64-unknown-linux-musl",
                   "aarch64-unknown-linux-gnu" => "aarch64-unknown-linux-musl" }.freeze

  module_function

  # The host triple of `rustc` ("x86_64-unknown-linux-gnu"), or nil when it cannot run.
  def host_triple(rustc)
    out = IO.popen([rustc, "-vV"], err: File::NULL, &:read)
    $?.success? ? out[/^host: (\S+)$/, 1] : nil
  rescue SystemCallError
    nil
  end

  # The environment of the static build: the caller's rustflags with crt-static added (RUSTFLAGS, or
  # CARGO_ENCODED_RUSTFLAGS when the caller set that, since cargo then ignores RUSTFLAGS).
  def static_env(env = ENV)
    encoded = env["CARGO_ENCODED_RUSTFLAGS"].to_s
    return { "CARGO_ENCODED_RUSTFLAGS" => [encoded, *STATIC_FLAG.split].join("\x1f") } unless encoded.empty?

    { "RUSTFLAGS" => [env["RUSTFLAGS"].to_s, STATIC_FLAG].reject(&:empty?).join(" ") }
  end

  # [argv, executable] of a build for `target` in the static builds' own directory. `package` and
  # `executable` name another binary of the workspace built the same way (littleghost-sandboxd).
  def targeted_build(cargo:, manifest:, target_dir:, target:, package: PACKAGE, executable: EXECUTABLE)
    dir = File.join(target_dir, STATIC_DIR)
    argv = [cargo, "build", "--release", "--locked", "--manifest-path", manifest, "--target", target,
            "--target-dir", dir, "-p", package]
    [argv, File.join(dir, target, "release", executable)]
  end

  # [env, argv] of the static build for `triple`, and where it puts the executable.
  def static_build(cargo:, manifest:, target_dir:, triple:, env: ENV)
    argv, built = targeted_build(cargo: cargo, manifest: manifest, target_dir: target_dir, target: triple)
    [static_env(env), argv, built]
  end

  # Whether the musl build of the helper for `triple` can be tried: the target's standard library is installed
  # for `rustc`. No C compiler: the helper's dependencies (littleghost_sandbox_restrict) have no C code.
  def musl_ready?(triple, rustc)
    target = MUSL_TARGETS[triple]
    return false unless target

    sysroot = IO.popen([rustc, "--print", "sysroot"], err: File::NULL, &:read).to_s.strip
    $?.success? && File.directory?(File.join(sysroot, "lib", "rustlib", target, "lib"))
  rescue SystemCallError
    false
  end

  # [env, argv] of the musl build for `triple`, and where it puts the executable. musl targets link statically
  # by default.
  def musl_build(cargo:, manifest:, target_dir:, triple:, **binary)
    argv, built = targeted_build(cargo: cargo, manifest: manifest, target_dir: target_dir,
                                 target: MUSL_TARGETS.fetch(triple), **binary)
    [{}, argv, built]
  end

  # [env, argv] of the dynamic build, and where it puts the executable.
  def dynamic_build(cargo:, manifest:, target_dir:, package: PACKAGE, executable: EXECUTABLE)
    argv = [cargo, "build", "--release", "--locked", "--manifest-path", manifest, "--target-dir", target_dir,
            "-p", package]
    [{}, argv, File.join(target_dir, "release", executable)]
  end

  # #build for the host of `rustc` (the toolchain cargo uses): its triple, and musl where #musl_ready?.
  def build_for_host(rustc:, **options)
    triple = host_triple(rustc)
    build(triple: triple, musl: musl_ready?(triple, rustc), **options)
  end

  # Builds the helper: against musl when `musl` (see #musl_ready?) and that build succeeds, else statically
  # against glibc where `triple` allows and that build succeeds, dynamically otherwise. `run` runs one build
  # (env, argv) and returns whether it succeeded; `say` prints a line of the build's log. Returns [path of the
  # executable, "static" or "dynamic"]; raises when no helper could be built.
  def build(cargo:, manifest:, target_dir:, triple:, run:, say:, musl: false)
    if musl && MUSL_TARGETS.key?(triple)
      env, argv, built = musl_build(cargo: cargo, manifest: manifest, target_dir: target_dir, triple: triple)
      if run.call(env, argv) && File.file?(built)
        linkage = linkage(built)
        say.call(outcome(linkage, "static", built, libc: "musl"))
        return [built, linkage]
      end
      say.call("littleghost-sandbox: the helper did not build against musl; building it against glibc instead")
    end
    if STATIC_TARGETS.include?(triple)
      env, argv, built = static_build(cargo: cargo, manifest: manifest, target_dir: target_dir, triple: triple)
      if run.call(env, argv) && File.file?(built)
        linkage = linkage(built)
        say.call(outcome(linkage, "static", built))
        return [built, linkage]
      end
      say.call("littleghost-sandbox: the statically linked helper did not build (is glibc's static library " \
               "installed? Debian/Ubuntu: libc6-dev, Fedora: glibc-static); building it dynamically linked instead")
    else
      say.call("littleghost-sandbox: building the helper dynamically linked (it is linked statically only for " \
               "#{STATIC_TARGETS.join(" and ")}; this is #{triple || "an unknown target"})")
    end
    env, argv, built = dynamic_build(cargo: cargo, manifest: manifest, target_dir: target_dir)
    raise "cargo could not build the helper (#{argv.join(" ")})" unless run.call(env, argv) && File.file?(built)

    linkage = linkage(built)
    say.call(outcome(linkage, "dynamic", built))
    [built, linkage]
  end

  # Builds another binary of the workspace (`rake compile`'s littleghost-sandboxd) the way the helper is built
  # where it matters most: statically against musl where #musl_ready? (an image needs nothing else), else
  # dynamically. Returns [path of the executable, linkage]; raises when it could not be built.
  def build_binary(package:, executable:, cargo:, manifest:, target_dir:, rustc:, run:, say:)
    triple = host_triple(rustc)
    paths = { cargo: cargo, manifest: manifest, target_dir: target_dir }
    binary = { package: package, executable: executable }
    if musl_ready?(triple, rustc) && MUSL_TARGETS.key?(triple)
      env, argv, built = musl_build(triple: triple, **paths, **binary)
      if run.call(env, argv) && File.file?(built)
        say.call("littleghost-sandbox: built #{executable} #{LINKAGE.fetch(linkage(built))} against musl: #{built}")
        return [built, linkage(built)]
      end
      say.call("littleghost-sandbox: #{executable} did not build against musl; building it dynamically linked")
    end
    env, argv, built = dynamic_build(**paths, **binary)
    raise "cargo could not build #{executable} (#{argv.join(" ")})" unless run.call(env, argv) && File.file?(built)

    say.call("littleghost-sandbox: built #{executable} #{LINKAGE.fetch(linkage(built))}: #{built}")
    [built, linkage(built)]
  end

  LINKAGE = { "static" => "statically linked", "dynamic" => "dynamically linked",
              "unknown" => "of unknown linkage" }.freeze

  # The log line for a built helper; says so when the executable is not what was asked for.
  def outcome(linkage, expected, built, libc: "glibc")
    if linkage == expected
      how = libc == "musl" ? "against musl" : STATIC_FLAG
      note = linkage == "static" ? " (#{how}: a Landlock launch runs no dynamic loader)" : ""
      return "littleghost-sandbox: built the helper #{LINKAGE.fetch(linkage)}#{note}: #{built}"
    end

    "littleghost-sandbox: asked for a #{LINKAGE.fetch(expected)} helper but cargo built one " \
      "#{LINKAGE.fetch(linkage)} (check RUSTFLAGS and .cargo/config.toml): #{built}"
  end

  # "static" when the ELF executable at `path` has no PT_INTERP program header (the kernel starts it without a
  # dynamic loader), "dynamic" when it has one, "unknown" when it is not a 64-bit little-endian ELF file.
  def linkage(path)
    File.open(path, "rb") do |file|
      header = file.read(64).to_s
      return "unknown" unless header.bytesize == 64 && header.start_with?("\x7FELF\x02\x01".b)

      phoff = header.byteslice(0x20, 8).unpack1("Q<")
      entry_size, count = header.byteslice(0x36, 4).unpack("S<S<")
      count.times do |index|
        file.seek(phoff + (index * entry_size))
        return "dynamic" if file.read(4).to_s.unpack1("L<") == 3 # PT_INTERP
      end
      "static"
    end
  rescue SystemCallError
    "unknown"
  end
end
