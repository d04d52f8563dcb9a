# frozen_string_literal: true

require "spec_helper"
require "open3"
require "rbconfig"

# When the host process has no descriptor left, a file operation says so (Errno::EMFILE) instead
# of blaming the workspace ("mount source changed after initialization", "mount source does not exist"), which
# would send a caller looking for a swapped directory that never was. Runs in a subprocess with a low NOFILE limit.
RSpec.describe "File operations in a host process out of descriptors" do # rubocop:disable RSpec/DescribeClass
  host = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    Process.setrlimit(:NOFILE, 64, Process.getrlimit(:NOFILE)[1])
    Dir.mktmpdir("exhausted") do |dir|
      File.write(File.join(dir, "a.txt"), "hello")
      workspace = LittleGhost::Workspace.new(root: dir).open
      policy = {files: {root: :read_write}}
      built = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy).open
      fresh = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy).open
      puts "before: #{built.read('a.txt')}"
      hogs = []
      begin
        loop { hogs << File.open(File::NULL) }
      rescue Errno::EMFILE
        nil
      end
      [["built", built], ["fresh", fresh]].each do |name, sandbox|
        puts "#{name}: #{sandbox.read('a.txt')}"
      rescue StandardError => e
        puts "#{name}: #{e.class}: #{e.message}"
      end
      hogs.each(&:close)
      puts "after: #{built.read('a.txt')}"
    end
  RUBY

  it "reports Errno::EMFILE, not a changed or missing workspace, and recovers once descriptors are free" do
    output, status = Open3.capture2e(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), "-e", host)
    expect(status).to be_success, output
    lines = output.lines.map(&:chomp)
    expect(lines).to include("before: hello", "after: hello")
    %w[built fresh].each do |name|
      line = lines.find { |l| l.start_with?("#{name}:") }
      expect(line).to match(/\A#{name}: LittleGhost::ToolError: .*\(Errno::EMFILE\)\z/), output
    end
  end
end
