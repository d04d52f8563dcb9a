# frozen_string_literal: true

require "spec_helper"

# What `ri` tells a user agrees with what the code does, for the claims a spec can check.
RSpec.describe "claims the RDoc makes" do
  documentation = Dir[File.expand_path("../lib/littleghost/sandbox/documentation/*.rb", __dir__)].to_h do |file|
    [File.basename(file), File.read(file)]
  end
  sandbox_page = documentation.fetch("sandbox.rb")

  it "lists every built-in provider on the Sandbox page" do
    %i[native bubblewrap landlock seatbelt unrestricted].each do |name|
      expect(LittleGhost::Sandbox.resolve_provider(name)).to be < LittleGhost::Sandbox
      expect(sandbox_page).to include("<tt>:#{name}</tt>")
    end
  end

  it "says Native falls back to Landlock, as Native.probe reports when Bubblewrap is unavailable" do
    expect(sandbox_page).to include("else Landlock")
    expect(documentation.values.join).not_to include("Seatbelt on macOS; never falls back")
  end

  it "calls nothing 'not implemented yet' that the gem implements" do
    documentation.each do |file, text|
      expect(text).not_to match(/allowlist[^.]*not implemented/i), "#{file} still calls allowlists unimplemented"
    end
    policy = LittleGhost::Sandbox::Policy.new(network: {allow: ["a.example:443"]})
    expect(LittleGhost::Sandboxes::Bubblewrap.new(workspace: open_workspace, policy: policy).effective_policy.network)
      .to be_allowlist
  end

  it "documents the output bound under the name both launch methods accept" do
    expect(sandbox_page).to include("output_bytes: nil, kill_on_output_limit: false")
  end
end
