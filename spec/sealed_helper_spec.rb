# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"
require "socket"

# The helper the gem runs on a sandbox's behalf (the Landlock
# supervisor outside the domain, the relay inside bwrap) is read once, when the
# extension loads, and run from a sealed in-memory copy. A child that can write
# where the gem is installed (a project's vendor/bundle inside a writable grant)
# and replaces `littleghost-sandbox-helper` -- `cp` over it, or `rm` then `cp` --
# changes nothing the gem runs afterwards: the next launch is still confined and
# the child's file never runs.
#
# Each example loads a copy of lib/ in a fresh Ruby process (`ruby -I<copy>`), as
# an installed gem would be, with the copy inside the sandbox's writable root.
RSpec.describe "The gem's helper executable" do # rubocop:disable RSpec/DescribeClass
  LIB = File.expand_path("../lib", __dir__)
  HELPER = "littleghost-sandbox-helper"

  # The child's replacement: leaves a marker, then runs whatever follows `--` unconfined.
  def fake_helper(marker)
    "#!/bin/sh\necho FAKE-HELPER-RAN > #{marker}\nwhile [ $# -gt 0 ] && [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n"
  end

  # A copy of lib/ at `directory`/vendor/lib, modes kept (the helper stays executable, not group-writable).
  def copy_lib(directory)
    vendor = File.join(directory, "vendor")
    FileUtils.mkdir_p(vendor)
    system("cp", "-R", "--preserve=mode", LIB, vendor, exception: true)
    File.join(vendor, "lib")
  end

  # The gem copied into `root` (a writable grant) and the child's replacement for its helper, which leaves
  # `marker` when it runs: [lib, helper, fake, the shell command that swaps it in].
  def planted_helper(root, marker, command)
    lib = copy_lib(root)
    helper = File.join(lib, HELPER)
    fake = File.join(root, "fake-helper")
    File.write(fake, fake_helper(marker))
    File.chmod(0o755, fake)
    [lib, helper, fake, format(command, fake: fake, helper: helper)]
  end

  def run_inner(lib, script, *args)
    stdout, stderr, status = Open3.capture3(RbConfig.ruby, "-I#{lib}", "-e", script, *args)
    raise "inner Ruby failed (#{status.exitstatus}): #{stderr}" unless status.success?

    JSON.parse(stdout.lines.last)
  end

  REPLACE = {
    "cp over it" => "cp %<fake>s %<helper>s",
    "rm + cp" => "rm -f %<helper>s && cp %<fake>s %<helper>s"
  }.freeze

  describe "under Landlock" do
    before do
      probe = LittleGhost::Sandboxes::Landlock.probe
      skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
    end

    LANDLOCK = <<~'RUBY'
      require "littleghost/sandbox"
      require "json"
      root, helper, fake, outside, replace = ARGV
      workspace = LittleGhost::Workspace.new(root: root).open
      sandbox = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}})
      check = "id; cat /etc/shadow > /dev/null 2>&1 && echo READ-SHADOW; " \
              "echo x > #{outside}/escaped 2>/dev/null && echo WROTE-OUTSIDE; echo checked"
      report = {}
      report["before"] = sandbox.execute_program(["/bin/sh", "-c", check], timeout: 20).stdout
      report["replaced"] = sandbox.execute_program(["/bin/sh", "-c", "#{replace} && cmp -s #{fake} #{helper} && echo replaced"],
                                                   timeout: 20).stdout
      report["after"] = sandbox.execute_program(["/bin/sh", "-c", check], timeout: 20).stdout
      # A sandbox made after the replacement runs the copy sealed at load too.
      again = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}})
      report["new_sandbox"] = again.execute_program(["/bin/sh", "-c", check], timeout: 20).stdout
      sandbox.close
      again.close
      puts JSON.generate(report)
    RUBY

    REPLACE.each do |how, command|
      it "stays confined after a child replaces the helper (#{how}): the child's file never runs" do
        root = temporary_directory
        outside = temporary_directory
        marker = File.join(outside, "marker")
        lib, helper, fake, replace = planted_helper(root, marker, command)

        report = run_inner(lib, LANDLOCK, root, helper, fake, outside, replace)

        expect(report["replaced"]).to eq("replaced\n") # the attack itself worked: the file on disk is the child's
        expect(report["before"]).to end_with("checked\n")
        expect(report["after"]).to eq(report["before"]) # same identity, same refusals
        expect(report["new_sandbox"]).to eq(report["before"])
        expect(report.values.join).not_to include("READ-SHADOW", "WROTE-OUTSIDE")
        expect(File.exist?(marker)).to be(false)
        expect(File.exist?(File.join(outside, "escaped"))).to be(false)
      end
    end

    it "is read from beside the extension, which the probe names" do
      helper = LittleGhost::Sandboxes::Landlock.probe[:helper]
      expect(helper).to eq(File.join(File.realpath(LIB), HELPER))
    end

    it "refuses to run a helper file its group or others can write, and the probe says why" do
      lib = copy_lib(temporary_directory)
      File.chmod(0o775, File.join(lib, HELPER))
      script = <<~'RUBY'
        require "littleghost/sandbox"
        require "json"
        report = {"probe" => LittleGhost::Sandboxes::Landlock.probe.slice(:available, :reason, :helper)}
        workspace = LittleGhost::Workspace.new(root: ARGV[0]).open
        begin
          LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_only}})
                                          .execute_program(["/bin/true"], timeout: 10)
          report["launch"] = "ran"
        rescue LittleGhost::DependencyError => e
          report["launch"] = e.message
        end
        puts JSON.generate(report)
      RUBY
      report = run_inner(lib, script, temporary_directory)
      expect(report["probe"]["available"]).to be(false)
      expect(report["probe"]["helper"]).to be_nil
      expect(report["probe"]["reason"]).to include("#{HELPER} is writable by its group or others (mode 0775)")
      expect(report["launch"]).to include("writable by its group or others")
    end
  end

  describe "as the relay inside Bubblewrap" do
    before do
      probe = LittleGhost::Sandboxes::Bubblewrap.probe
      skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
      skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")
    end

    BUBBLEWRAP = <<~'RUBY'
      require "littleghost/sandbox"
      require "json"
      root, helper, fake, port, replace = ARGV
      workspace = LittleGhost::Workspace.new(root: root).open
      policy = {files: {root: :read_write},
                network: {mode: :allowlist, allow: ["localhost:#{port}"],
                          gateway: {provider: :builtin, allow_private_destinations: true}}}
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy)
      fetch = ["/usr/bin/curl", "-sS", "--max-time", "20", "http://localhost:#{port}/"]
      quiet = {"NO_PROXY" => "", "no_proxy" => ""}
      report = {}
      report["before"] = sandbox.execute_program(fetch, timeout: 30, environment: quiet).stdout
      # The project's other sandbox (no network) writes where the gem is installed.
      writer = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {files: {root: :read_write}})
      report["replaced"] = writer.execute_program(["/bin/sh", "-c", "#{replace} && cmp -s #{fake} #{helper} && echo replaced"],
                                                  timeout: 20).stdout
      report["after"] = sandbox.execute_program(fetch, timeout: 30, environment: quiet).stdout
      writer.close
      sandbox.close
      puts JSON.generate(report)
    RUBY

    REPLACE.each do |how, command|
      it "relays through the copy sealed at load after a child replaces the helper (#{how})" do
        server = TCPServer.new("127.0.0.1", 0)
        thread = Thread.new do
          loop do
            client = server.accept
            while (line = client.gets) && line != "\r\n"; end
            client.write("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
            client.close
          end
        rescue IOError
          nil
        end
        root = temporary_directory
        marker = File.join(root, "marker")
        lib, helper, fake, replace = planted_helper(root, marker, command)

        report = run_inner(lib, BUBBLEWRAP, root, helper, fake, server.addr[1].to_s, replace)

        expect(report["replaced"]).to eq("replaced\n")
        expect(report["before"]).to eq("hello")
        expect(report["after"]).to eq("hello")
        expect(File.exist?(marker)).to be(false)
      ensure
        thread&.kill
        server&.close
      end
    end
  end

  after { clean_up_sandbox_workspaces }
end
