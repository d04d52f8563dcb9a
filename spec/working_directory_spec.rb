# frozen_string_literal: true

require "spec_helper"

# Programs start in the workspace root as the child sees it (only the granted paths inside), whatever is granted;
# an explicit `cwd:` outside the grants is a ToolError naming it, because a model's input can cause it and a
# ToolError is what a tool reports back to the model. Invariant: the starting directory never shows more than
# the grants, and no refusal of a model-caused input is a configuration error.
RSpec.describe "where programs start" do
  backends = {
    bubblewrap: LittleGhost::Sandbox.probe(:bubblewrap)[:available],
    landlock: LittleGhost::Sandbox.probe(:landlock)[:available]
  }

  backends.each do |provider, available|
    context "under #{provider}", if: available do
      let(:root) { temporary_directory }
      let(:workspace) do
        %w[src out docs].each { |dir| FileUtils.mkdir_p(File.join(root, dir)) }
        File.write(File.join(root, "docs", "secret.md"), "not granted")
        open_workspace(root: root, paths: {src: "src", out: "out", docs: "docs"})
      end
      let(:sandbox) do
        LittleGhost::Sandbox.build({provider: provider, files: {src: :read_only, out: :read_write}}, workspace: workspace)
      end

      after { sandbox.close }

      it "starts a program in the workspace root when the root itself is not granted" do
        result = sandbox.execute_program(["/bin/sh", "-c", "pwd; cat docs/secret.md; echo made > out/file"], timeout: 30)
        expect(result.stdout.lines.first).to eq("#{root}\n")
        expect(result.stdout).not_to include("not granted")
        expect(File.read(File.join(root, "out", "file"))).to eq("made\n")
      end

      it "starts a scope's program in the workspace root too" do
        scope = sandbox.scope(files: {src: :read_only})
        result = scope.execute_program(["/bin/pwd"], timeout: 30)
        expect([result.exit_code, result.stdout]).to eq([0, "#{root}\n"])
      end

      it "refuses an explicit cwd outside the grants with a ToolError that names it" do
        ["docs", "/etc"].each do |cwd|
          expect { sandbox.execute_program(["/bin/true"], timeout: 30, cwd: cwd) }
            .to raise_error(LittleGhost::ToolError, /outside the selected scope: .*#{Regexp.escape(cwd)}/)
        end
        expect { sandbox.start_program(["/bin/true"], cwd: "docs") }
          .to raise_error(LittleGhost::ToolError, /outside the selected scope/)
      end
    end
  end
end
