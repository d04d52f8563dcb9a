# frozen_string_literal: true

# Allowlist networking cost (not part of the tests). Run with
#   rake compile && ruby -Ilib bench/network.rb
# 1. Per-command overhead of network :allowlist (gateway already open; each launch starts the relay helper) over
#    :none for execute_program(["/bin/true"]), interleaved (target <= 10 ms).
# 2. Throughput of a 100 MB download by curl through the relay and the built-in gateway vs curl direct, both inside
#    a Bubblewrap sandbox (the direct one with network :inherit), from a python3 http.server on the host's loopback
#    (target >= 0.5x).

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "littleghost/sandbox"
require "socket"
require "tmpdir"
require_relative "support"

unless LittleGhost::Sandboxes::Bubblewrap.probe[:available]
  puts "skipped: #{LittleGhost::Sandboxes::Bubblewrap.probe[:reason]}"
  exit 0
end

SIZE = 100 * 1024 * 1024

def wait_for_port(port)
  200.times do
    TCPSocket.new("127.0.0.1", port).close
    return
  rescue SystemCallError
    sleep 0.05
  end
  raise "the HTTP server did not start on port #{port}"
end

Dir.mktmpdir("lg-bench-net") do |dir|
  served = File.join(dir, "served")
  Dir.mkdir(served)
  File.open(File.join(served, "big"), "wb") { |f| f.write("\0" * (1 << 20)) while f.size < SIZE }
  port = TCPServer.new("127.0.0.1", 0).then { |s| s.addr[1].tap { s.close } }
  server = Process.spawn("/usr/bin/python3", "-m", "http.server", port.to_s, "--bind", "127.0.0.1",
                         chdir: served, out: File::NULL, err: File::NULL)
  begin
    wait_for_port(port)
    workspace = LittleGhost::Workspace.new(root: File.join(dir, "ws").tap { |d| Dir.mkdir(d) }).open
    bwrap = LittleGhost::Sandboxes::Bubblewrap
    allowlist = {mode: :allowlist, allow: ["localhost:#{port}"], gateway: {allow_private_destinations: true}}
    gated = bwrap.new(workspace: workspace, policy: {network: allowlist}).open
    none = bwrap.new(workspace: workspace, policy: {network: :none}).open
    inherit = bwrap.new(workspace: workspace, policy: {network: :inherit}).open

    ours = -> { gated.execute_program(["/bin/true"], timeout: 10).success? or raise "allowlist launch failed" }
    baseline = -> { none.execute_program(["/bin/true"], timeout: 10).success? or raise "none launch failed" }
    BenchSupport.compare("execute_program(/bin/true): :allowlist vs :none", iterations: 10, ours: ours,
                                                                             baseline: baseline)
    samples = Array.new(15) do
      a = BenchSupport.clock
      ours.call
      b = BenchSupport.clock
      baseline.call
      (b - a) - (BenchSupport.clock - b)
    end
    overhead = BenchSupport.median_per_op(samples) * 1000
    printf("per-command overhead of :allowlist over :none: %.2f ms (target <= 10 ms: %s)\n", overhead,
           overhead <= 10 ? "met" : "MISSED")

    curl = ["/usr/bin/curl", "-sS", "-o", "/dev/null", "-w", "%{speed_download}", "http://localhost:#{port}/big"]
    speed = lambda do |sandbox, environment|
      result = sandbox.execute_program(curl, timeout: 120, environment: environment)
      raise "download failed: #{result.stderr}" unless result.success?

      result.stdout.to_f
    end
    through = []
    direct = []
    5.times do
      direct << speed.call(inherit, {})
      through << speed.call(gated, {"NO_PROXY" => "", "no_proxy" => ""})
    end
    gateway_speed = BenchSupport.median_per_op(through)
    direct_speed = BenchSupport.median_per_op(direct)
    ratio = gateway_speed / direct_speed
    printf("100 MB download: through the gateway %.0f MB/s, direct %.0f MB/s, ratio %.2fx (target >= 0.5x: %s)\n",
           gateway_speed / 1e6, direct_speed / 1e6, ratio, ratio >= 0.5 ? "met" : "MISSED")
    [gated, none, inherit].each(&:close)
    workspace.close
  ensure
    Process.kill(:TERM, server)
    Process.wait(server)
  end
end
