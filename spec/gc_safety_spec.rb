# frozen_string_literal: true

require "open3"
require "rbconfig"

# Values the extension builds for Ruby are always reachable by the GC while it builds more: inspect, to_h and
# denial delivery survive GC.stress (each collection then runs at every allocation). A regression crashes the
# child process, so the check runs in one.
RSpec.describe "the extension under GC.stress" do
  lib = File.expand_path("../lib", __dir__)

  def run_stressed(lib, script)
    Open3.capture2e(RbConfig.ruby, "-I", lib, "-e", "require 'littleghost/sandbox'; #{script}")
  end

  it "inspects and converts value objects with many fields while every allocation collects" do
    out, status = run_stressed(lib, <<~RUBY)
      policy = LittleGhost::Sandbox::NetworkPolicy.new(mode: :allowlist, allow: (1..300).map { |i| "h\#{i}.example:443" },
                                                       forward_headers: ["a"])
      limits = LittleGhost::Sandbox::Limits.new(read_bytes: 10)
      GC.stress = true
      shown = Array.new(3) { [policy.inspect, limits.inspect, limits.to_h] }
      GC.stress = false
      puts shown.last.first.scan("example:443").size
    RUBY
    expect([status.success?, out]).to eq([true, "300\n"])
  end

  it "delivers a denial to subscribers that unsubscribe each other while every allocation collects" do
    out, status = run_stressed(lib, <<~RUBY)
      require "tmpdir"
      workspace = LittleGhost::Workspace.new(root: Dir.mktmpdir, paths: {docs: "docs"}).open
      sandbox = LittleGhost::Sandbox.build({provider: :unrestricted, files: {docs: :read_only}}, workspace: workspace)
      seen = []
      second = nil
      first = sandbox.on_denial { |d| seen << 1; sandbox.off_denial(second); GC.start }
      second = sandbox.on_denial { |d| seen << 2 }
      GC.stress = true
      sandbox.write("docs/x", "y") rescue nil
      GC.stress = false
      puts seen.inspect
    RUBY
    expect(status).to be_success, out
    expect(out).to start_with("[1")
  end
end
