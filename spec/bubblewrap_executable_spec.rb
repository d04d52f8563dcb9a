# frozen_string_literal: true

require "spec_helper"

# `bwrap` is resolved once to an absolute path that only root or this process's user can change, and a
# release without --disable-userns and --bind-fd/--ro-bind-fd (older than 0.8.0) is refused with what to do,
# never run. The probe shows which bwrap a sandbox will run and its version.
RSpec.describe "The bwrap a Bubblewrap sandbox runs" do # rubocop:disable RSpec/DescribeClass
  let(:bubblewrap) { LittleGhost::Sandboxes::Bubblewrap }

  def fake_bwrap(directory, version)
    path = File.join(directory, "bwrap")
    File.write(path, "#!/bin/sh\necho 'bubblewrap #{version}'\nexit 0\n")
    File.chmod(0o755, path)
    path
  end

  after { clean_up_sandbox_workspaces }

  it "is resolved to an absolute path with its version, a bare name searched in PATH once" do
    host = bubblewrap.probe
    skip "bubblewrap is unavailable here: #{host[:reason]}" unless host[:available]

    expect(host[:executable]).to eq(File.realpath(bubblewrap::DEFAULT_EXECUTABLE))
    expect(Gem::Version.new(host[:version])).to be >= Gem::Version.new("0.8.0")
    bare = bubblewrap.probe(executable: "bwrap")
    expect(bare[:executable]).to start_with("/")
    expect(bare[:version]).to eq(host[:version])
  end

  it "refuses a bwrap older than 0.8.0 with the version found and the one needed" do
    old = fake_bwrap(temporary_directory, "0.7.0")
    probe = bubblewrap.probe(executable: old)
    expect(probe[:available]).to be(false)
    expect(probe[:reason]).to include("Bubblewrap 0.7.0 at #{File.realpath(old)} is too old", "0.8.0 or newer")
    expect(probe[:capabilities].features).to be_empty
    sandbox = bubblewrap.new(workspace: open_workspace, bubblewrap: old)
    expect { sandbox.execute_program(["/bin/true"], timeout: 10) }
      .to raise_error(LittleGhost::DependencyError, /0\.7\.0 .* too old/)
  end

  it "refuses a bwrap that others could replace: a group-writable file or directory" do
    directory = temporary_directory
    writable = fake_bwrap(directory, "0.9.0")
    File.chmod(0o775, writable)
    expect(bubblewrap.probe(executable: writable)[:reason]).to include("writable by its group or others (mode 0775)")
    shared = File.join(temporary_directory, "shared")
    Dir.mkdir(shared)
    File.chmod(0o777, shared)
    in_shared = fake_bwrap(shared, "0.9.0")
    expect(bubblewrap.probe(executable: in_shared)[:reason])
      .to include("the directory #{File.realpath(shared)} holding Bubblewrap is writable by its group or others")
  end
end
