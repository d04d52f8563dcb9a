# frozen_string_literal: true

require "spec_helper"
require "json"
require "open3"
require "rbconfig"

# The gem's own directories (Landlock's private TMPDIR, the gateway's folders) are made, granted and removed through
# their handles, and kept out of every child's reach (docs/security.md, "The gem's own directories"). Each attack runs
# in its own Ruby, as root and as uid 65534, with the TMPDIR it needs, and prints what the child achieved.
RSpec.describe "The sandbox's own directories" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers
  include LoopbackHttpHelpers

  # TMPDIR inside the workspace, granted writable: a child replaces the sandbox's own directory it finds there (the
  # Landlock sandbox's TMPDIR, or the gateway's folder, from a scope with network: :none) with a symlink to a host
  # directory holding `marker` and `proxy.sock`; the next launch writes and reads through that path.
  SWAP_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    backend = ARGV[0]
    root = Dir.mktmpdir("lg-own-root", "/var/tmp")
    target = Dir.mktmpdir("lg-own-target", "/var/tmp")
    File.chmod(0o777, target)
    File.write(File.join(target, "marker"), "host-marker")
    File.write(File.join(target, "proxy.sock"), "not a socket")
    Dir.mkdir(File.join(root, "tmp"))
    ENV["TMPDIR"] = File.join(root, "tmp")
    workspace = LittleGhost::Workspace.new(root: root).open
    swap = 'd="$1"; [ -e "$d" ] || exit 0; mv "$d" "$d.moved" && ln -s "$2" "$d" && echo swapped'
    report = {}
    if backend == "landlock"
      sandbox = LittleGhost::Sandboxes::Landlock.new(workspace: workspace, policy: {files: {root: :read_write}}).open
      own = sandbox.tmpdir
      report[:swap] = sandbox.execute_program(["/bin/sh", "-c", swap, "sh", own, target], timeout: 30).stdout
      later = 'echo written > "$TMPDIR/written"; cat "$1/marker"; true'
      report[:later] = sandbox.execute_program(["/bin/sh", "-c", later, "sh", target], timeout: 30).stdout
    else
      policy = {files: {root: :read_write}, network: {allow: ["127.0.0.1:1"], allow_private_destinations: true}}
      sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy).open
      own = File.dirname(sandbox.gateway.proxy_mount_path)
      report[:swap] = sandbox.execute_program(["/bin/sh", "-c", swap, "sh", own, target], timeout: 30,
                                              scope: sandbox.scope(network: :none)).stdout
      later = 'cat "$1/marker" "$2/marker" 2>/dev/null; echo written > "$1/written" 2>/dev/null; true'
      report[:later] = sandbox.execute_program(["/bin/sh", "-c", later, "sh", own, target], timeout: 30).stdout
    end
    report[:own_inside_grant] = own.start_with?(root)
    begin
      sandbox.close
    rescue LittleGhost::CleanupError => e
      report[:close] = e.message
    end
    report[:target] = Dir.children(target).sort
    report[:left] = File.exist?(own) && !File.symlink?(own)
    puts JSON.generate(report)
    system("rm", "-rf", root, target)
  RUBY

  # TMPDIR under /var/tmp (beneath the read-only root, not the tmpfs on /tmp): a sandbox with network: :none, and a
  # scope narrowed to localhost:1, try every gateway socket open in the process (another sandbox's, their parent's)
  # with a CONNECT to an allowed destination; the other sandbox, through its own socket, is the control.
  SOCKETS_SCRIPT = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    port = ARGV[0]
    ENV["TMPDIR"] = Dir.mktmpdir("lg-own-tmpdir", "/var/tmp")
    workspace = LittleGhost::Workspace.new(root: Dir.mktmpdir).open
    bubblewrap = LittleGhost::Sandboxes::Bubblewrap
    network = {allow: ["127.0.0.1:#{port}", "localhost:1"], allow_private_destinations: true}
    other = bubblewrap.new(workspace: workspace, policy: {root_filesystem: :read_only, network: network}).open
    parent = bubblewrap.new(workspace: workspace, policy: {root_filesystem: :read_only, network: network}).open
    none = bubblewrap.new(workspace: workspace, policy: {root_filesystem: :read_only}).open
    probe = <<~PY
      import socket, sys
      for path in sys.argv[2:]:
          s = socket.socket(socket.AF_UNIX)
          try:
              s.connect(path)
              s.sendall(b"CONNECT 127.0.0.1:" + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n")
              print(path, s.recv(12).decode())
          except OSError as e:
              print(path, "refused", e.errno)
    PY
    sockets = [other.gateway.proxy_mount_path, parent.gateway.proxy_mount_path]
    run = ->(sandbox, paths, **options) do
      sandbox.execute_program(["/usr/bin/python3", "-c", probe, port, *paths], timeout: 60, **options).stdout
    end
    report = {
      none: run.(none, sockets),
      scope: run.(parent, sockets, scope: parent.scope(network: {allow: ["localhost:1"]})),
      own: run.(other, [other.gateway.proxy_mount_path])
    }
    [other, parent, none].each(&:close)
    puts JSON.generate(report)
    system("rm", "-rf", ENV["TMPDIR"])
  RUBY

  def report_of(script, *arguments, prefix: [])
    lib = File.expand_path("../lib", __dir__)
    output, errors, status = Open3.capture3(*prefix, RbConfig.ruby, "-I", lib, "-e", script, *arguments,
                                            chdir: "/")
    raise "#{prefix.inspect} failed: #{errors}" unless status.success?

    JSON.parse(output.lines.last, symbolize_names: true)
  end

  def landlock!
    probe = LittleGhost::Sandboxes::Landlock.probe
    skip "Landlock is unavailable here: #{probe[:reason]}" unless probe[:available]
  end

  def bubblewrap!
    probe = LittleGhost::Sandboxes::Bubblewrap.probe
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
  end

  # Nothing the child did reached the host directory the symlink named: no write landed there, the next launch did
  # not see it, `close` removed nothing through the link.
  def expect_the_target_untouched(report)
    expect(report[:target]).to eq(%w[marker proxy.sock]), report.inspect
    expect(report[:later]).not_to include("host-marker"), report.inspect
    expect(report[:close]).to be_nil, report.inspect
    expect(report[:left]).to be(false), report.inspect
    # The directory was never where the child could reach it.
    expect(report[:own_inside_grant]).to be(false), report.inspect
  end

  %w[landlock bubblewrap].each do |backend|
    describe "with TMPDIR inside a writable grant on #{backend}" do
      before { backend == "landlock" ? landlock! : bubblewrap! }

      it "leaves a child no own directory to swap for a symlink between launches, as root" do
        expect_the_target_untouched(report_of(SWAP_SCRIPT, backend))
      end

      it "leaves a child no own directory to swap for a symlink between launches, as uid 65534" do
        expect_the_target_untouched(report_of(SWAP_SCRIPT, backend, prefix: drop_to_nobody!))
      end
    end
  end

  describe "gateway sockets under a read-only root with TMPDIR outside /tmp" do
    before { bubblewrap! }

    def expect_only_its_own_socket_reached(report)
      expect(report[:own]).to include("HTTP/1.1 200"), report.inspect
      expect(report[:none]).not_to include("HTTP/1.1 200"), report.inspect
      expect(report[:scope]).not_to include("HTTP/1.1 200"), report.inspect
    end

    it "lets no launch reach another sandbox's or its parent's gateway socket, as root" do
      expect_only_its_own_socket_reached(report_of(SOCKETS_SCRIPT, start_server.to_s))
    end

    it "lets no launch reach another sandbox's or its parent's gateway socket, as uid 65534" do
      expect_only_its_own_socket_reached(report_of(SOCKETS_SCRIPT, start_server.to_s, prefix: drop_to_nobody!))
    end
  end
end
