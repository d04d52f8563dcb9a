# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"
require "tmpdir"

# Grants are handles, not paths (docs/security.md): bwrap resolves each mount
# destination by path inside the new root, so beneath a writable bind a
# concurrent session of the same sandbox can exchange a directory on that
# path with a symlink (renameat2 RENAME_EXCHANGE) after the gem checked it.
# Whatever the timing, a launch either runs with its read-only view and its
# scope's masks where they belong, or is refused before anything of it runs.
RSpec.describe "Bubblewrap launches while a concurrent session exchanges a mount's parent with a symlink" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  probe = LittleGhost::Sandboxes::Bubblewrap.probe
  before { skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available] }

  LAUNCHES = 80

  # Exchanges DIR/a (a real directory) and DIR/b (a symlink to DIR/decoy)
  # for SWAPPED microseconds, then back for KEPT, until killed.
  RACER_SOURCE = <<~'C'
    #define _GNU_SOURCE
    #include <fcntl.h>
    #include <stdlib.h>
    #include <unistd.h>
    #include <sys/syscall.h>
    #include <linux/fs.h>
    int main(int argc, char **argv) {
      if (argc < 4 || chdir(argv[1]) != 0) return 2;
      useconds_t swapped = atoi(argv[2]), kept = atoi(argv[3]);
      for (;;) {
        syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE);
        usleep(swapped);
        syscall(SYS_renameat2, AT_FDCWD, "a", AT_FDCWD, "b", RENAME_EXCHANGE);
        usleep(kept);
      }
    }
  C

  # Runs in its own Ruby (as root or as uid 65534): a sandbox whose writable
  # root holds a/src (read-only grant) or a/cache (a runtime path a scope
  # leaves out, so that scope masks it); a session of the sandbox runs the
  # racer while LAUNCHES launches try to write into a/src (or b/src, where
  # the real directory is when exchanged) or read a/cache/secret.
  RACE_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    require "fileutils"
    mode, racer, launches = ARGV[0], ARGV[1], Integer(ARGV[2])
    root = Dir.mktmpdir("lg-bwrap-race")
    %w[a/src decoy/src a/cache decoy/cache].each { |d| FileUtils.mkdir_p(File.join(root, d)) }
    File.symlink("decoy", File.join(root, "b"))
    File.write(File.join(root, "a/cache/secret"), "runtime-secret")
    File.write(File.join(root, "decoy/cache/secret"), "decoy")
    FileUtils.cp(racer, File.join(root, "racer"))
    bubblewrap = LittleGhost::Sandboxes::Bubblewrap
    if mode == "grant"
      workspace = LittleGhost::Workspace.new(root: root, paths: {source: "a/src"}).open
      sandbox = bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write, source: :read_only}}).open
      launcher = sandbox
      script = "for d in a b; do echo x > #{root}/$d/src/written-$0; done 2>/dev/null; true"
    else
      workspace = LittleGhost::Workspace.new(root: root, paths: {cache: "a/cache"}).open
      policy = {files: {root: :read_write}, runtime_paths: {cache: :read_write}}
      sandbox = bubblewrap.new(workspace: workspace, policy: policy).open
      launcher = sandbox.scope(files: [:root], runtime_paths: [])
      script = "for f in a b; do echo $f: $(cat #{root}/$f/cache/secret 2>/dev/null); done"
    end
    racer = sandbox.start_program([File.join(root, "racer"), root, "100", "300"])
    report = {launches: launches, ran: 0, refused: 0, read: 0, refusals: Hash.new(0)}
    launches.times do |n|
      result = launcher.execute_program(["/bin/sh", "-c", script, n.to_s], timeout: 30)
      report[:ran] += 1
      if result.stdout.include?("runtime-secret")
        report[:read] += 1
        (report[:leaks] ||= []) << [result.stdout, result.stderr, result.exit_code]
      end
    rescue LittleGhost::PolicyError => e
      report[:refused] += 1
      report[:refusals][e.message[/\A[^:]*/]] += 1
    end
    report[:racer_alive] = begin
      racer.wait(timeout: 0.01)
      false
    rescue LittleGhost::ToolError
      true # still exchanging: the wait timed out
    end
    racer.close
    real = File.lstat(File.join(root, "a")).directory? ? "a" : "b"
    report[:written] = Dir.children(File.join(root, real, "src"))
    report[:secret] = File.read(File.join(root, real, "cache/secret"))
    puts JSON.generate(report)
    sandbox.close
    FileUtils.rm_rf(root)
  RUBY

  def racer
    @racer ||= begin
      skip "gcc is needed to build the racer" unless system("command -v gcc >/dev/null 2>&1")
      dir = File.realpath(Dir.mktmpdir("lg-racer"))
      (@temporary_directories ||= []) << dir
      File.chmod(0o755, dir)
      File.write(File.join(dir, "racer.c"), RACER_SOURCE)
      output, status = Open3.capture2e("gcc", "-O2", "-o", File.join(dir, "racer"), File.join(dir, "racer.c"))
      raise "the racer does not build: #{output}" unless status.success?

      File.join(dir, "racer")
    end
  end

  after { (@temporary_directories || []).each { |dir| FileUtils.rm_rf(dir) } }

  def race(mode, *prefix)
    lib = File.expand_path("../lib", __dir__)
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", RACE_SCRIPT,
                                            mode, racer, LAUNCHES.to_s, chdir: "/tmp")
    raise "#{prefix.inspect} #{mode} failed: #{errors}" unless status.success?

    report = JSON.parse(output.lines.last, symbolize_names: true)
    expect(report[:racer_alive]).to be(true), "the racer stopped: #{report}"
    expect(report[:ran] + report[:refused]).to eq(LAUNCHES)
    # Every refusal is the documented one for a mount that no longer matches its handle.
    expect(report[:refusals].keys.map(&:to_s) - [
      "sandbox mount source changed after opening",
      "sandbox mount destination is not a real directory inside its writable parent mount",
      "sandbox mount destination changed while the sandbox was set up"
    ]).to eq([])
    report
  end

  it "never lets a launch write into the read-only grant, as root" do
    report = race("grant")
    expect(report[:written]).to eq([]), "written through a moved read-only view: #{report}"
  end

  it "never lets a launch write into the read-only grant, as uid 65534" do
    report = race("grant", *drop_to_nobody!)
    expect(report[:written]).to eq([]), "written through a moved read-only view: #{report}"
  end

  it "never lets a scope's launch read the runtime path its mask hides, as root" do
    report = race("mask")
    expect(report[:read]).to eq(0), "read through a moved mask: #{report}"
    expect(report[:secret]).to eq("runtime-secret")
  end

  it "never lets a scope's launch read the runtime path its mask hides, as uid 65534" do
    report = race("mask", *drop_to_nobody!)
    expect(report[:read]).to eq(0), "read through a moved mask: #{report}"
  end
end
