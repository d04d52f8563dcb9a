# frozen_string_literal: true

require "spec_helper"
require "pathname"
require "rbconfig"

# Handles, not paths: a workspace path is resolved once, by
# Workspace#open, with no symlink anywhere on its route, and every later use
# (a bwrap bind, a Landlock rule, the broker's walks) goes through the handle
# taken then. Whatever a child does to the tree before or during a launch,
# nothing outside the grants is ever mounted, granted, read or written: a
# grant that no longer is the directory opened refuses the launch or the call.
#
# The swapping race runs HANDLES_RACE_SECONDS per backend: 15 by default, so 30 s over Bubblewrap and Landlock
# (Native repeats whichever it picks); LG_HANDLES_RACE_SECONDS=2 for a quick local run.
RSpec.describe "grants are handles, not paths", if: RUBY_PLATFORM.include?("linux") do
  HANDLES_RACE_SECONDS = Float(ENV.fetch("LG_HANDLES_RACE_SECONDS", "15"))

  # Loops RENAME_EXCHANGE over the two paths given until terminated.
  HANDLES_SWAPPER = <<~'RUBY'
    require "fiddle"
    renameat2 = Fiddle::Function.new(Fiddle::Handle::DEFAULT["renameat2"],
      [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
    exchanged = 0
    $stdout.sync = true
    Signal.trap("TERM") { exit!(exchanged.positive? ? 0 : 1) }
    puts "ready"
    loop { exchanged += 1 if renameat2.call(-100, ARGV[0], -100, ARGV[1], 2).zero? }
  RUBY

  SECRET = "outside-secret-#{Process.pid}"

  let(:outside) { temporary_directory }
  let(:marker) { File.join(outside, "marker") }
  let(:root) { temporary_directory }

  before do
    File.write(marker, SECRET)
    @marker_before = [File.binread(marker), File.stat(marker).mtime]
  end

  # The outside directory holds exactly the marker, unread-into and unchanged.
  def expect_outside_untouched
    expect(Dir.children(outside)).to eq(["marker"])
    expect([File.binread(marker), File.stat(marker).mtime]).to eq(@marker_before)
  end

  # A relative symlink from `directory` to the outside directory.
  def link_out_from(directory)
    Pathname(outside).relative_path_from(Pathname(directory)).to_s
  end

  describe "Workspace#open" do
    it "refuses a named path that passes through a symlink in the repository, naming the path and the link" do
      FileUtils.mkdir_p(File.join(root, "build"))
      File.symlink(link_out_from(File.join(root, "build")), File.join(root, "build", "out"))
      workspace = LittleGhost::Workspace.new(root: root, paths: {out: "build/out/gen"})
      expect { workspace.open }
        .to raise_error(LittleGhost::PolicyError, %r{:out.*symlink build/out})
      expect(workspace).not_to be_open
      expect_outside_untouched
    end

    it "refuses an absolute named path through a symlink and names its real path" do
      links = temporary_directory
      File.symlink(outside, File.join(links, "run"))
      workspace = LittleGhost::Workspace.new(root: root, paths: {run: File.join(links, "run")})
      expect { workspace.open }
        .to raise_error(LittleGhost::PolicyError, /:run.*symlink.*#{Regexp.escape(File.realpath(outside))}/)
    end

    it "follows a symlink in the configured root once, then pins the real directory" do
      real = temporary_directory
      links = temporary_directory
      File.symlink(real, File.join(links, "ws"))
      workspace = open_workspace(root: File.join(links, "ws"), paths: {out: "build/out"})
      expect(File.directory?(File.join(real, "build", "out"))).to be(true)
      expect(workspace).to be_open
    end
  end

  [LittleGhost::Sandboxes::Bubblewrap, LittleGhost::Sandboxes::Landlock, LittleGhost::Sandboxes::Native].each do |backend|
    describe backend do
      before do
        skip "#{backend} is unavailable here: #{backend.probe[:reason]}" unless backend.probe[:available]
      end

      def session(backend, policy, paths)
        workspace = open_workspace(root: root, paths: paths)
        sandbox = backend.new(workspace: workspace, policy: policy)
        (@sandboxes ||= []) << sandbox
        [workspace, sandbox]
      end

      after { Array(@sandboxes).each(&:close) }

      def sh(sandbox, script)
        sandbox.execute_program(["/bin/sh", "-c", script], timeout: 20)
      end

      let(:planted_policy) { {files: {root: :read_write}, runtime_paths: {out: :read_write}} }
      # A read-only grant in the root: inside a writable root where the backend can enforce it; Landlock cannot
      # (a rule holds for everything beneath it) and refuses that policy, so there the root is read-only too.
      let(:nested_policy) do
        landlock = backend == LittleGhost::Sandboxes::Landlock ||
                   (backend == LittleGhost::Sandboxes::Native && LittleGhost::Sandboxes::Native.probe[:backend] == :landlock)
        {files: {root: landlock ? :read_only : :read_write, src: :read_only}}
      end

      it "a child that plants a symlink in place of a named path reaches nothing outside, now or in the next session" do
        workspace, sandbox = session(backend, planted_policy, {out: "build/out"})
        link = link_out_from(File.join(root, "build"))
        planted = sh(sandbox, "cd #{root} && mv build build.old && mkdir build && ln -s #{link} build/out")
        expect(planted.exit_code).to eq(0), planted.stderr
        # This session: the grant no longer is the directory opened.
        expect { sh(sandbox, "cat #{root}/build/out/marker; echo leak > #{root}/build/out/leak") }
          .to raise_error(LittleGhost::PolicyError, /changed after opening/)
        expect { sandbox.read("build/out/marker") }.to raise_error(LittleGhost::Error)
        expect { sandbox.write("build/out/leak", "x") }.to raise_error(LittleGhost::Error)
        sandbox.close
        workspace.close
        # The next session refuses at open, naming the path and the link.
        expect { LittleGhost::Workspace.new(root: root, paths: {out: "build/out"}).open }
          .to raise_error(LittleGhost::PolicyError, %r{:out.*symlink build/out})
        expect_outside_untouched
      end

      it "a child inherits none of the grants' handles (an O_PATH descriptor would reach past its binds and rules)" do
        _workspace, sandbox = session(backend, nested_policy, {src: "src"})
        run = sh(sandbox, "for i in $(seq 3 20); do if (: <&$i) 2>/dev/null; then echo open $i; fi; done; echo end")
        expect(run.stdout).to eq("end\n")
      end

      it "a read-only grant renamed inside the root refuses every later launch and file call" do
        _workspace, sandbox = session(backend, nested_policy, {src: "lib/src"})
        File.write(File.join(root, "lib", "src", "code.rb"), "code")
        expect(sh(sandbox, "cat #{root}/lib/src/code.rb").stdout).to eq("code")
        # Neither backend lets its child move the grant away (a bind mount is
        # busy, Landlock's carving keeps the route's entries), so another
        # session outside the sandbox does it: moved, then replaced by a forgery.
        File.rename(File.join(root, "lib"), File.join(root, "lib.moved"))
        FileUtils.mkdir_p(File.join(root, "lib", "src"))
        File.write(File.join(root, "lib", "src", "code.rb"), "forged")
        2.times do
          expect { sh(sandbox, "cat #{root}/lib/src/code.rb") }
            .to raise_error(LittleGhost::PolicyError, /changed after opening/)
          expect { sandbox.read("lib/src/code.rb") }.to raise_error(LittleGhost::ToolError, /changed after/)
        end
      end

      it "a directory swapped with a decoy that links out, while launches and file calls run, never exposes the outside" do
        _workspace, sandbox = session(backend, planted_policy, {out: "build/out"})
        out = File.join(root, "build", "out")
        File.write(File.join(out, "inside"), "inside")
        decoy = File.join(root, "decoy")
        FileUtils.mkdir_p(decoy)
        File.symlink(link_out_from(decoy), File.join(decoy, "out"))
        swapper = IO.popen([RbConfig.ruby, "-e", HANDLES_SWAPPER, File.join(root, "build"), decoy], "r")
        expect(swapper.gets).to eq("ready\n")
        seen = []
        launches = 0
        deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + HANDLES_RACE_SECONDS
        begin
          while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
            begin
              run = sh(sandbox, "cat #{out}/marker #{outside}/marker 2>/dev/null; " \
                                "echo leak > #{out}/leak 2>/dev/null; ls #{out} 2>/dev/null")
              launches += 1
              seen << run.stdout
            rescue LittleGhost::Error
              # Refused because the grant was swapped away: the allowed outcome.
            end
            [-> { seen << sandbox.read("build/out/marker") },
             -> { sandbox.write("build/out/leak", "leak") },
             -> { sandbox.replace("build/out/inside", "inside", "inside") },
             -> { seen << sandbox.list("build/out").to_s }].each do |call|
              call.call
            rescue LittleGhost::Error, SystemCallError
              nil
            end
          end
        ensure
          Process.kill("TERM", swapper.pid)
          Process.wait(swapper.pid)
          swapper.close
        end
        expect(seen.join).not_to include(SECRET)
        expect_outside_untouched
        expect(launches + seen.size).to be_positive
      end
    end
  end
end
