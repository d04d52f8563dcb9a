# frozen_string_literal: true

require "spec_helper"

# One rule for every path a caller gives as a String (H.6). Its bytes are the path, as File.open takes them
# on Unix, whatever ASCII-compatible encoding tags it. A String in an encoding that is not ASCII-compatible (UTF-16,
# UTF-32) holds NUL bytes for each ASCII character, so its bytes are not the path it shows: it raises ArgumentError
# naming the encoding, before anything is read, written or started (never "Path contains a null byte", never
# Encoding::CompatibilityError). A platform name (probe(platform:), new(platform:)) is text: one that is not valid
# UTF-8 raises ArgumentError.
RSpec.describe "paths and platform names in unusual encodings" do # rubocop:disable RSpec/DescribeClass
  let(:workspace) { open_workspace }
  let(:root) { workspace.root }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}}) }
  let(:refused) { /must be in an ASCII-compatible encoding such as UTF-8 \(got String in UTF-(16LE|32BE)\)/ }

  after { @session&.close }

  before { File.write(File.join(root, "a.txt"), "hello") }

  %w[UTF-16LE UTF-32BE].each do |encoding|
    context "a path in #{encoding}" do
      def wide(text) = text.encode(@encoding)

      before { @encoding = encoding }

      {
        "read" => ->(s) { s.read(wide("a.txt")) },
        "list" => ->(s) { s.list(wide(".")) },
        "write" => ->(s) { s.write(wide("b.txt"), "x") },
        "replace" => ->(s) { s.replace(wide("a.txt"), "hello", "bye") },
        "a scope's read" => ->(s) { s.scope.read(wide("a.txt")) },
        "execute_program's cwd:" => ->(s) { s.execute_program(["pwd"], timeout: 5, cwd: wide(".")) },
        "start_program's cwd:" => ->(s) { @session = s.start_program(["pwd"], cwd: wide(".")) }
      }.each do |operation, call|
        it "is refused by #{operation} with ArgumentError naming the encoding, and nothing changes" do
          expect { instance_exec(sandbox, &call) }.to raise_error(ArgumentError, refused)
          expect(Dir.children(root).sort).to eq(["a.txt"])
          expect(File.read(File.join(root, "a.txt"))).to eq("hello")
        end
      end

      it "is refused as a workspace root, a Mount source or target, and a ProcessSession or ProcessRunner chdir" do
        expect { LittleGhost::Workspace.new(root: wide(root)) }.to raise_error(ArgumentError, refused)
        expect { LittleGhost::Sandbox::Mount.new(source: wide(root), target: "/x") }.to raise_error(ArgumentError, refused)
        expect { LittleGhost::Sandbox::Mount.new(source: root, target: wide("/x")) }.to raise_error(ArgumentError, refused)
        expect { @session = LittleGhost::Sandbox::ProcessSession.new(command: ["pwd"], chdir: wide(root)) }
          .to raise_error(ArgumentError, refused)
        expect { LittleGhost::Sandbox::ProcessRunner.run(command: ["pwd"], timeout: 5, chdir: wide(root)) }
          .to raise_error(ArgumentError, refused)
      end
    end
  end

  it "takes a path in an ASCII-compatible encoding other than UTF-8 as its bytes" do
    expect(sandbox.read("a.txt".encode("ISO-8859-1"))).to eq("hello")
    expect(sandbox.read("a.txt".b)).to eq("hello")
    expect(sandbox.execute_program(["pwd"], timeout: 5, cwd: ".".encode("Windows-1252")).stdout).to eq("#{root}\n")
  end

  describe "a platform name" do
    let(:broken) { "linux\xff".dup.force_encoding(Encoding::UTF_8) }
    let(:probes) do
      {
        "Sandbox.probe(:bubblewrap)" => ->(platform) { LittleGhost::Sandbox.probe(:bubblewrap, platform: platform) },
        "Sandbox.probe(:native)" => ->(platform) { LittleGhost::Sandbox.probe(:native, platform: platform) },
        "Bubblewrap.probe" => ->(platform) { LittleGhost::Sandboxes::Bubblewrap.probe(platform: platform) },
        "Landlock.probe" => ->(platform) { LittleGhost::Sandboxes::Landlock.probe(platform: platform) },
        "Seatbelt.probe" => ->(platform) { LittleGhost::Sandboxes::Seatbelt.probe(platform: platform) },
        "Native.probe" => ->(platform) { LittleGhost::Sandboxes::Native.probe(platform: platform) },
        "Bubblewrap.new" => ->(platform) { LittleGhost::Sandboxes::Bubblewrap.new(workspace: workspace, platform: platform) }
      }
    end

    it "that is not valid UTF-8 raises ArgumentError from every probe and constructor that takes one" do
      probes.each do |name, call|
        [broken, "linux\xff".b].each do |platform|
          expect { call.call(platform) }.to raise_error(ArgumentError, "platform must be valid UTF-8"), name
        end
      end
    end

    it "that is not a String raises TypeError naming its class" do
      expect { LittleGhost::Sandboxes::Bubblewrap.probe(platform: BasicObject.new) }
        .to raise_error(TypeError, /\bBasicObject\b/)
    end

    it "in UTF-16 means the platform its characters name" do
      wide = LittleGhost::Sandboxes::Landlock.probe(platform: "x86_64-darwin".encode("UTF-16LE"))
      expect(wide).to eq(LittleGhost::Sandboxes::Landlock.probe(platform: "x86_64-darwin"))
    end
  end
end
