# frozen_string_literal: true

require "open3"
require "rbconfig"

# No Ruby code runs while a lock the GC mark function takes is held, for the network events too (they share the
# denials' machinery): the event thread copies the
# subscriber list into a Ruby Array and wraps each event while the GC may run at any allocation; the list's lock,
# which the sandbox's mark function takes, is never held meanwhile. Under GC.stress each allocation collects. A
# regression deadlocks or crashes the child, so the check runs in one, bounded by a timeout.
RSpec.describe "Event delivery under GC.stress" do # rubocop:disable RSpec/DescribeClass
  lib = File.expand_path("../lib", __dir__)

  def run_stressed(lib, script, seconds: 120)
    Open3.capture2e("timeout", seconds.to_s, RbConfig.ruby, "-I", lib, "-e",
                    "require 'littleghost/sandbox'; #{script}")
  end

  it "delivers network events to many subscribers on the event thread while every allocation collects" do
    probe = LittleGhost::Sandboxes::Bubblewrap.probe
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    skip "curl is not installed at /usr/bin/curl" unless File.executable?("/usr/bin/curl")

    out, status = run_stressed(lib, <<~RUBY)
      require "tmpdir"
      workspace = LittleGhost::Workspace.new(root: Dir.mktmpdir).open
      sandbox = LittleGhost::Sandbox.build({provider: :bubblewrap, network: {allow: ["allowed.invalid:1"]}},
                                           workspace: workspace)
      seen = Queue.new
      8.times { |i| sandbox.on_network { |event| seen << [i, event.destination, event.to_h[:status]] } }
      sandbox.open
      GC.stress = true
      sandbox.execute_program(["/usr/bin/curl", "-s", "http://refused.invalid/"], timeout: 60)
      delivered = Array.new(8) { seen.pop }
      GC.stress = false
      sandbox.close
      puts delivered.inspect
    RUBY
    expect(status.exitstatus).to eq(0), out
    expect(out).to eq("#{Array.new(8) { |i| [i, "refused.invalid:80", 403] }.inspect}\n")
  end
end
