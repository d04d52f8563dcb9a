# frozen_string_literal: true

require "json"
require "open3"
require "rbconfig"

# As an unprivileged user with no writable cgroup (uid 65534 here), a `tasks` limit cannot be enforced: the sandbox
# says so once, at `open`, with what to do about it, instead of at every launch; and `probe` says how each limit
# holds, naming each reason once.
RSpec.describe "launch limits this host cannot enforce" do
  include ProcessHelpers

  lib = File.expand_path("../lib", __dir__)
  executable = File.expand_path("../exe/littleghost-sandbox", __dir__)

  SCRIPT_AT_OPEN = <<~'RUBY'
    require "littleghost/sandbox"
    require "tmpdir"
    require "json"
    report = {}
    %w[Unrestricted Bubblewrap Landlock].each do |name|
      sandbox = LittleGhost::Sandboxes.const_get(name).new(
        workspace: LittleGhost::Workspace.new(root: Dir.mktmpdir).open, process_limits: {tasks: 64}
      )
      begin
        sandbox.open
        report[name] = {opened: true, ran: sandbox.execute_program(["true"], timeout: 30).exit_code}
      rescue LittleGhost::Error => e
        report[name] = {class: e.class.name, message: e.message}
      ensure
        sandbox.close
      end
    end
    puts JSON.generate(report)
  RUBY

  def as_nobody(*argv)
    out, err, status = Open3.capture3(*drop_to_nobody!, *argv, chdir: "/tmp")
    raise "#{argv.first} failed: #{err}" unless status.success?

    out
  end

  it "refuses process_limits: {tasks:} at open, naming cgroup:, systemd-run and dropping the key" do
    report = JSON.parse(as_nobody(RbConfig.ruby, "-I", lib, "-e", SCRIPT_AT_OPEN), symbolize_names: true)
    skip "uid 65534 has a writable cgroup here" if report[:Unrestricted][:opened]
    report.each_value do |outcome|
      expect(outcome[:class]).to eq("LittleGhost::CapabilityError")
      expect(outcome[:message]).to start_with("tasks cannot be limited here")
      expect(outcome[:message]).to include("cgroup:").and include("systemd-run --user --scope -p Delegate=yes")
        .and include("drop `tasks`")
    end
  end

  it "probe says how each limit holds and prints each reason once" do
    # `probe --provider NAME` exits 1 for an unavailable backend: inside a container Bubblewrap usually is.
    names = %w[unrestricted]
    names << "bubblewrap" if LittleGhost::Sandboxes::Bubblewrap.probe[:available]
    out = as_nobody(RbConfig.ruby, "-I", lib, executable, "probe", *names.flat_map { |name| ["--provider", name] })
    skip "uid 65534 has a writable cgroup here" if out.include?("enforced by a cgroup")
    names.each do |name|
      section = out[/^#{name}: available\n(?:  .*\n)*/]
      expect(section).to include("limits enforced by sampling the tree's memory every 100 ms: memory_bytes")
      expect(section).to include("limits enforced per process (RLIMIT_CPU): cpu_seconds")
      expect(section).to match(/limits not enforced \(see below\): tasks/)
      reasons = section.lines.grep(/\A  no cgroup for /)
      expect(reasons.size).to eq(1)
      expect(reasons.first).to include("tasks")
    end
    next unless names.include?("bubblewrap")

    bubblewrap = out[/^bubblewrap: available\n(?:  .*\n)*/]
    expect(bubblewrap).to include("enforced by the sandbox (its own process namespace): process_tree_ownership")
    expect(bubblewrap).not_to match(/not enforced.*process_tree_ownership/)
  end
end
