# frozen_string_literal: true

require "spec_helper"

# Backend state (options, pins, the effective policy) lives in Rust, not in
# instance variables that Ruby code in the same process could rewrite.
RSpec.describe "Backend state" do # rubocop:disable RSpec/DescribeClass
  probe = LittleGhost::Sandboxes::Bubblewrap.probe

  let(:workspace) { open_workspace(paths: {source: "src"}) }
  let(:root) { workspace.root }
  let(:policy) { {files: {root: :read_write, source: :read_only}} }

  it "keeps Bubblewrap's pins when instance variables are rewritten, so a swapped grant is still refused" do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy).open
    FileUtils.mv(File.join(root, "src"), File.join(root, "src.old"))
    FileUtils.mkdir(File.join(root, "src"))
    # Forget the pins and fake an unopened sandbox, as the old ivars allowed.
    sandbox.instance_variable_set(:@__pins, nil)
    sandbox.instance_variable_set(:@__opened, true)
    expect { sandbox.execute_program(["/bin/true"], timeout: 5) }
      .to raise_error(LittleGhost::PolicyError, /sandbox mount source changed after opening/)
  ensure
    sandbox&.close
  end

  it "keeps the launch identity and the effective policy when instance variables are rewritten" do
    skip "bubblewrap is unavailable here: #{probe[:reason]}" unless probe[:available]
    sandbox = LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy, uid: 1234).open
    sandbox.instance_variable_set(:@uid, 0)
    sandbox.instance_variable_set(:@effective_policy, LittleGhost::Sandbox::Policy.new(network: :inherit))
    result = sandbox.execute_program(["/bin/sh", "-c", "id -u; cat /proc/net/dev | wc -l"], timeout: 10)
    uid, interfaces = result.stdout.split.map(&:to_i)
    expect(uid).to eq(1234)
    expect(interfaces).to eq(3) # two header lines and lo only: still no host network
    expect(sandbox.effective_policy.network.mode).to eq(:none)
  ensure
    sandbox&.close
  end

  it "shows no backend state among the instance variables of any backend" do
    backends = [
      LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy),
      LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, policy: policy),
      LittleGhost::Sandboxes::Seatbelt.new(workspace: workspace, policy: policy)
    ]
    backends.each do |sandbox|
      expect(sandbox.instance_variables.grep(/effective_policy|pins|opened|tmpfs|bubblewrap|temp_dir|uid/)).to eq([])
    end
  end
end
