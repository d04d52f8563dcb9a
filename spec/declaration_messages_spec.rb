# frozen_string_literal: true

# What a user sees for a mistyped key or a name that is not text: an ArgumentError that says what is wrong and,
# for a key, which ones would have been right (README "Errors": unknown keys, listed).
RSpec.describe "declaration messages" do
  let(:workspace) { LittleGhost::Workspace.new(root: temporary_directory) }

  def message_of
    yield
    raise "nothing was raised"
  rescue ArgumentError => e
    e.message
  end

  it "lists the valid keys of a sandbox declaration when one is misspelt" do
    message = message_of { LittleGhost::Sandbox.build({ provider: :native, netwrok: :none }, workspace: workspace) }
    expect(message).to start_with("unknown keyword: :netwrok;")
    expect(message).to include(":network").and include(":files").and include(":process_limits").and include(":provider")
  end

  it "lists the valid keys of Policy.new, Workspace.new and a workspace declaration" do
    expect(message_of { LittleGhost::Sandbox::Policy.new(netwrok: :none) })
      .to include("unknown keyword: :netwrok").and include(":network").and include(":files")
    expect(message_of { LittleGhost::Workspace.new(root: "/tmp", pathz: {}) })
      .to include("unknown keyword: :pathz").and include(":paths").and include(":root")
    expect(message_of { LittleGhost::Workspace.build({ provider: :directory, root: "/tmp", rot: 1 }) })
      .to include("unknown keyword: :rot").and include(":root")
  end

  it "raises ArgumentError, not EncodingError, for a provider name that is not UTF-8" do
    [-> { LittleGhost::Sandbox.probe("\xFF\xFE".b) },
     -> { LittleGhost::Sandbox.resolve_provider("\xff".b) },
     -> { LittleGhost::Workspace.build("\xFF\xFE".b) }].each do |call|
      expect(&call).to raise_error(ArgumentError, /not valid UTF-8/)
    end
  end
end
