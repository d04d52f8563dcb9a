# frozen_string_literal: true

require "spec_helper"

# A `cwd:` may come from a model, so every refusal of one is a
# ToolError that names it as the caller wrote it (a logical path) and never
# shows a host path: the model can act on the answer, and the host's layout
# stays out of its context.
RSpec.describe "Refusals of a working directory" do
  CWD_REFUSAL_BACKENDS = {
    bubblewrap: -> { LittleGhost::Sandboxes::Bubblewrap.probe[:available] },
    landlock: -> { LittleGhost::Sandboxes::Landlock.probe[:available] },
    unrestricted: -> { true }
  }.freeze

  CWD_REFUSAL_BACKENDS.each do |provider, available|
    context "on #{provider}" do
      let(:workspace) { open_workspace(paths: {src: "src", out: "out"}) }
      let(:sandbox) do
        LittleGhost::Sandbox.build({provider: provider, files: {src: :read_only, out: :read_write}}, workspace: workspace)
      end

      before do
        skip "#{provider} is unavailable here" unless available.call
        Dir.mkdir(File.join(workspace.root, "elsewhere"))
      end

      after { sandbox.close }

      def refusal(**options)
        sandbox.execute_program(["pwd"], timeout: 10, **options)
        nil
      rescue LittleGhost::ToolError => e
        e.message
      end

      it "names a missing directory, a traversal and (where grants bind programs) one outside the grants" do
        expect(refusal(cwd: "missing/deeper")).to eq("Working directory is not available: missing/deeper")
        expect(refusal(cwd: "../x")).to eq("workspace path traversal is not allowed: ../x")
        expect { sandbox.start_program(["pwd"], cwd: "missing") }
          .to raise_error(LittleGhost::ToolError, "Working directory is not available: missing")
        next if provider == :unrestricted # programs run on the host: grants do not bind them

        expect(refusal(cwd: "elsewhere")).to eq("sandbox working directory is outside the selected scope: elsewhere")
      end

      it "never shows the workspace's host path" do
        %w[missing ../x elsewhere].each do |cwd|
          message = refusal(cwd: cwd)
          expect(message.to_s).not_to include(workspace.root) if message
        end
      end
    end
  end
end
