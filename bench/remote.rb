# frozen_string_literal: true

# The :remote provider's overhead (not part of the tests). Run after `rake compile` with
#   ruby -Ilib bench/remote.rb
# Starts littleghost-sandboxd on ephemeral loopback ports over a temporary root and compares, interleaved:
# execute_program(["true"]) through :remote with the same policy run locally by :native (target: at most 2 ms
# added), and a 10 MB write/read through the REST API with a local copy of the same bytes. Prints medians, ratios and
# deltas; asserts nothing.

$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
require "littleghost/sandbox"
require "tmpdir"
require "json"
require "fileutils"
require_relative "support"

daemon = [File.expand_path("../lib/littleghost-sandboxd", __dir__),
          File.expand_path("../target/release/littleghost-sandboxd", __dir__)].find { |path| File.executable?(path) }
unless daemon
  puts "skipped: littleghost-sandboxd is not built (rake compile)"
  exit 0
end

Dir.mktmpdir("lg-bench-remote") do |dir|
  remote_root = File.join(dir, "remote")
  local_root = File.join(dir, "local")
  [remote_root, local_root].each { |root| Dir.mkdir(root) }
  policy = {files: {root: :read_write}, network: :none}
  limits = {read_bytes: 16 << 20, write_bytes: 16 << 20}
  File.write(File.join(dir, "policy.json"), JSON.generate(policy.merge(limits: limits)))
  reader, writer = IO.pipe
  pid = Process.spawn(daemon, "--root", remote_root, "--policy", File.join(dir, "policy.json"),
                      "--grpc", "127.0.0.1:0", "--rest", "127.0.0.1:0", out: writer, err: File.join(dir, "daemon.log"))
  writer.close
  line = reader.gets.to_s
  grpc, rest = line.match(/grpc=(\S+) rest=(\S+)/)&.captures
  abort "littleghost-sandboxd did not start: #{line.inspect} #{File.read(File.join(dir, "daemon.log"))}" unless grpc

  begin
    remote = LittleGhost::Sandbox.build({provider: :remote, endpoint: {grpc: grpc, rest: "http://#{rest}"}}).open
    workspace = LittleGhost::Workspace.new(root: local_root).open
    local = LittleGhost::Sandbox.build({provider: :native, **policy}, workspace: workspace).open
    puts "remote isolation: #{remote.capabilities.isolation}, local: #{local.class.name} #{local.capabilities.isolation}"

    run = ->(sandbox) { -> { raise "true failed" unless sandbox.execute_program(["true"], timeout: 10).success? } }
    BenchSupport.compare("execute_program([true]) :remote vs :native", iterations: 10, rounds: 15,
                         ours: run.call(remote), baseline: run.call(local))
    ours, base = BenchSupport.last_medians
    printf("  added by the network round trip: %.2f ms (target <= 2 ms)\n", (ours - base) * 1e3)

    # 10 MB of text (Sandbox#read returns UTF-8 text): base64 of random bytes, so nothing compresses it.
    text = [Random.new(1).bytes(7_864_320)].pack("m0")
    path = File.join(local_root, "copy.txt")
    BenchSupport.compare("10 MB write + read: :remote PUT/GET vs a local copy", iterations: 2, rounds: 7,
                         ours: -> { remote.write("big.txt", text); remote.read("big.txt") },
                         baseline: -> { File.write(path, text); File.read(path) })
    ours, base = BenchSupport.last_medians
    printf("  added per 10 MB PUT + GET: %.1f ms\n", (ours - base) * 1e3)
  ensure
    remote&.close
    local&.close
    Process.kill(:TERM, pid)
    Process.wait(pid)
  end
end
