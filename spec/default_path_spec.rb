# frozen_string_literal: true

require "spec_helper"

# SPEC 17.5 [DEV]: a program whose environment sets no PATH gets the isolated root's system directories, so a tool
# that runs others by bare name (`gem env`, a shell script, `make`) finds them; a caller's PATH wins, and an inherited
# host environment keeps the host's. The same on every backend, decided once in the core's launch plan.
RSpec.describe "The default PATH of a launched program" do # rubocop:disable RSpec/DescribeClass
  default_path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

  backends = {
    unrestricted: LittleGhost::Sandboxes::Unrestricted,
    bubblewrap: LittleGhost::Sandboxes::Bubblewrap,
    landlock: LittleGhost::Sandboxes::Landlock,
  }

  backends.each do |provider, backend|
    context "under #{provider}" do
      before do
        probe = backend.probe
        skip "#{provider} is unavailable here: #{probe[:reason]}" unless probe[:available]
      end

      let(:workspace) { open_workspace }
      let(:sandbox) { LittleGhost::Sandbox.build({provider: provider, files: {root: :read_write}}, workspace: workspace) }

      after { sandbox.close }

      # Not `sh -c 'echo $PATH'`: dash makes up this very default for itself when PATH is unset.
      def printed_path(**options)
        sandbox.execute_program(["/usr/bin/printenv", "PATH"], timeout: 10, **options)
      end

      it "is the system directories when nobody sets one, and yields to the caller's PATH and the declaration's" do
        result = printed_path
        expect([result.stdout, result.exit_code]).to eq(["#{default_path}\n", 0])
        expect(printed_path(environment: {"PATH" => "/bin"}).stdout).to eq("/bin\n")
        declared = LittleGhost::Sandbox.build({provider: provider, files: {root: :read_write},
                                               environment: {"PATH" => "/usr/bin"}}, workspace: workspace)
        expect(declared.execute_program(["/usr/bin/printenv", "PATH"], timeout: 10).stdout).to eq("/usr/bin\n")
      ensure
        declared&.close
      end
    end
  end

  it "is what a Ruby tool that reads PATH needs (`gem env` split PATH and failed on nil)" do
    skip "ruby is not at /usr/bin/ruby" unless File.executable?("/usr/bin/ruby")
    sandbox = LittleGhost::Sandbox.build({provider: :unrestricted, files: {root: :read_write}}, workspace: open_workspace)
    result = sandbox.execute_program(["/usr/bin/ruby", "-e", "print ENV.fetch('PATH').split(':').last"], timeout: 30)
    expect([result.stdout, result.stderr]).to eq(["/bin", ""])
  ensure
    sandbox&.close
  end
end
