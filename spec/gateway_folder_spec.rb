# frozen_string_literal: true

require "spec_helper"
require "shellwords"
require "fileutils"
require "json"
require "open3"
require "rbconfig"
require "tmpdir"

# The folder of a user's gateway sockets is hidden from every launch wherever the host shows it, found by identity
# (device and inode), not by its name under /tmp; and a folder of that name another local user made first is never
# used (docs/security.md, "The gem's own directories"). Each run is its own Ruby in a private mount namespace with a
# fresh tmpfs on /tmp (so no other process's folder is touched), where the workspace root holds `view`, a bind mount
# of /tmp: a second path to the folder. Two sandboxes with network: :none (one granting the workspace root, one
# with a :read_only root) try another sandbox's gateway socket through that second path and through /tmp; that
# sandbox, through its own socket, is the control.
RSpec.describe "The gateways' folder" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers
  include LoopbackHttpHelpers

  # Constants here are top-level ones (a describe block opens no scope for them): named for this file alone.
  GATEWAY_FOLDER_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    port, root, premade = ARGV
    bubblewrap = LittleGhost::Sandboxes::Bubblewrap
    workspace = LittleGhost::Workspace.new(root: root).open
    network = {allow: ["127.0.0.1:#{port}"], allow_private_destinations: true}
    other = bubblewrap.new(workspace: workspace, policy: {network: network}).open
    granted = bubblewrap.new(workspace: workspace, policy: {files: {root: :read_only}}).open
    read_only = bubblewrap.new(workspace: workspace, policy: {root_filesystem: :read_only}).open
    own = other.gateway.proxy_mount_path
    second = own.sub(%r{\A/tmp/}, "#{root}/view/")
    # Connects from the socket's directory (a socket address holds 107 bytes; an attacker would do the same).
    probe = <<~PY
      import os, socket, sys
      for path in sys.argv[2:]:
          s = socket.socket(socket.AF_UNIX)
          try:
              os.chdir(os.path.dirname(path))
              s.connect(os.path.basename(path))
              s.sendall(b"CONNECT 127.0.0.1:" + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
              print(path, s.recv(12).decode())
          except OSError as e:
              print(path, "refused", e.errno)
    PY
    run = ->(sandbox, paths) do
      sandbox.execute_program(["/usr/bin/python3", "-c", probe, port, *paths], timeout: 60).stdout
    end
    report = {
      own_path: own, second_path: second,
      own: run.(other, [own]),
      granted: run.(granted, [second, own]),
      read_only: run.(read_only, [second, own])
    }
    [other, granted, read_only].each(&:close)
    report[:premade] = Dir.children(premade) if premade && File.directory?(premade)
    puts JSON.generate(report)
  RUBY

  # Landlock shows the host's folder itself: a writable grant holding the second path would let the child rename the
  # folder there and leave an empty stand-in for later masks, so the launch is refused.
  GATEWAY_FOLDER_RENAME_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "json"
    root = ARGV[1]
    workspace = LittleGhost::Workspace.new(root: root).open
    network = {allow: ["127.0.0.1:1"], allow_private_destinations: true}
    gateway = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: {network: network}).open
    folder = File.dirname(gateway.gateway.proxy_mount_path, 2)
    second = folder.sub(%r{\A/tmp/}, "#{root}/view/")
    landlock = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}})
    report = begin
      rename = ["/bin/sh", "-c", 'mv "$1" "$1.moved" && echo moved', "sh", second]
      {ran: landlock.open.execute_program(rename, timeout: 30).stdout}
    rescue LittleGhost::PolicyError => e
      {refused: e.message}
    end
    report[:folder_in_place] = File.directory?(folder)
    [gateway, landlock].each(&:close)
    puts JSON.generate(report)
  RUBY

  before do
    probe = LittleGhost::Sandboxes::Bubblewrap.probe
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "needs root to make a mount namespace" unless Process.uid.zero?
    skip "unshare cannot make a mount namespace here" unless system("unshare", "--mount", "true", err: File::NULL)
    skip "python3 is not installed at /usr/bin/python3" unless File.executable?("/usr/bin/python3")
  end

  # Runs GATEWAY_FOLDER_SCRIPT (as `prefix`) in a private mount namespace: a tmpfs on /tmp, the workspace root's
  # `view` a bind mount of it, then `premake` (shell) as root.
  def report_of(premake: "true", premade: nil, prefix: [], script: GATEWAY_FOLDER_SCRIPT)
    root = Dir.mktmpdir("lgf", "/var/tmp")
    File.chmod(0o755, root)
    Dir.mkdir(File.join(root, "view"))
    # The checkout may itself live under /tmp (a CI clone): its lib/ is bound beside the root before the tmpfs
    # hides it.
    Dir.mkdir(File.join(root, "lib"))
    lib = File.join(root, "lib")
    setup = "mount --bind #{Shellwords.escape(File.expand_path("../lib", __dir__))} \"$0/lib\" && " \
            "mount -t tmpfs -o mode=1777 tmpfs /tmp && mount --bind /tmp \"$0/view\" && #{premake} && exec \"$@\""
    output, errors, status = Open3.capture3("unshare", "--mount", "--propagation", "private", "--", "sh", "-c",
                                            setup, root, *prefix, RbConfig.ruby, "-I", lib, "-e", script,
                                            start_server.to_s, root, *premade, chdir: "/")
    raise "the run failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  ensure
    FileUtils.rm_rf(root) if root
  end

  def expect_only_its_own_socket_reached(report)
    expect(report[:own]).to include("HTTP/1.1 200"), report.inspect
    expect(report[:granted]).not_to include("HTTP/1.1 200"), report.inspect
    expect(report[:read_only]).not_to include("HTTP/1.1 200"), report.inspect
    # The second path was tried: nothing was there to connect to.
    expect(report[:granted]).to include("#{report[:second_path]} refused 2"), report.inspect
  end

  describe "shown under a second path (a bind mount of /tmp inside a grant)" do
    it "is masked there too: no launch reaches another sandbox's socket through it, as root" do
      expect_only_its_own_socket_reached(report_of)
    end

    it "is masked there too: no launch reaches another sandbox's socket through it, as uid 65534" do
      expect_only_its_own_socket_reached(report_of(prefix: drop_to_nobody!))
    end
  end

  describe "shown under a second path inside a writable Landlock grant" do
    it "refuses the sandbox (PolicyError) and the folder stays where it is, as root" do
      probe = LittleGhost::Sandboxes::Landlock.probe
      skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
      report = report_of(script: GATEWAY_FOLDER_RENAME_SCRIPT)
      expect(report[:refused]).to include("holds the folder of the network gateways' sockets"), report.inspect
      expect(report[:folder_in_place]).to be(true), report.inspect
    end
  end

  describe "made first by another local user" do
    def expect_a_working_gateway_elsewhere(report, premade)
      expect_only_its_own_socket_reached(report)
      expect(report[:own_path]).not_to start_with("#{premade}/")
      expect(report[:premade]).to eq([]), report.inspect
    end

    it "is not used when uid 65534 made it: root's sandbox opens with a working gateway elsewhere" do
      premade = "/tmp/littleghost-gateways-0"
      premake = "mkdir -m 0700 #{premade} && chown 65534:65534 #{premade}"
      expect_a_working_gateway_elsewhere(report_of(premake: premake, premade: premade), premade)
    end

    it "is not used when it is root's own but others may enter it (mode 0777)" do
      premade = "/tmp/littleghost-gateways-0"
      expect_a_working_gateway_elsewhere(report_of(premake: "mkdir -m 0777 #{premade}", premade: premade), premade)
    end

    it "is not used when it is a symlink to a private directory of root's" do
      premade = "/tmp/littleghost-gateways-0"
      premake = "mkdir -m 0700 /tmp/elsewhere && ln -s /tmp/elsewhere #{premade}"
      expect_a_working_gateway_elsewhere(report_of(premake: premake, premade: premade), premade)
    end

    it "is not used when root made it: uid 65534's sandbox opens with a working gateway elsewhere" do
      prefix = drop_to_nobody!
      premade = "/tmp/littleghost-gateways-65534"
      expect_a_working_gateway_elsewhere(report_of(premake: "mkdir -m 0755 #{premade}", premade: premade,
                                                   prefix: prefix), premade)
    end
  end
end
