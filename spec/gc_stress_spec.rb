# frozen_string_literal: true

require "open3"
require "rbconfig"

# Every Ruby value the extension makes is reachable by the GC from the moment it exists: nothing new lives only in
# Rust's heap while another allocation may collect. Under GC.stress every allocation collects, so a value held only
# in a Rust Vec is freed and its slot reused (an Execution whose stdout reads as the Execution itself was one such
# case). The checks run in a child process bounded by a timeout: a regression crashes, hangs or returns wrong values.
RSpec.describe "Values made by the extension under GC.stress" do # rubocop:disable RSpec/DescribeClass
  lib = File.expand_path("../lib", __dir__)

  it "are intact: executions, session chunks, file results and value objects" do
    script = <<~'RUBY'
      require "littleghost/sandbox"
      require "tmpdir"
      root = Dir.mktmpdir
      File.write(File.join(root, "notes.md"), "hello\n")
      workspace = LittleGhost::Workspace.new(root: root)
      backends = [LittleGhost::Sandboxes::Unrestricted, LittleGhost::Sandboxes::Bubblewrap].select { _1.probe[:available] }
      failures = []
      backends.product(Array(0..2)).each do |backend, i|
        sandbox = backend.new(workspace: workspace)
        check = ->(what, got, want) { failures << "#{backend} #{what}: #{got.inspect}" unless got == want }
        GC.stress = true
        execution = sandbox.execute_program(["/bin/echo", "out#{i}"], timeout: 30)
        check.call("stdout", execution.stdout, "out#{i}\n")
        check.call("stderr", execution.stderr, "")
        check.call("exit_code", execution.exit_code, 0)
        check.call("to_h", execution.to_h.slice(:stdout, :exit_code), {stdout: "out#{i}\n", exit_code: 0})
        session = sandbox.start_program(["/bin/sh", "-c", "echo chunk#{i}; echo err#{i} >&2"])
        session.wait(timeout: 30)
        chunk = session.read(timeout: 1)
        check.call("chunk", [chunk.stdout, chunk.stderr], ["chunk#{i}\n", "err#{i}\n"])
        session.close
        check.call("read", sandbox.read("notes.md"), "hello\n")
        check.call("list", sandbox.list(".").lines.map(&:chomp).include?("notes.md"), true)
        check.call("policy", sandbox.effective_policy.to_h.key?(:files), true)
        GC.stress = false
        sandbox.close
      end
      puts failures.empty? ? "intact" : failures.first(5).join("\n")
    RUBY
    out, status = Open3.capture2e("timeout", "300", RbConfig.ruby, "-I", lib, "-e", script)
    expect(status.exitstatus).to eq(0), out
    expect(out).to eq("intact\n")
  end
end
