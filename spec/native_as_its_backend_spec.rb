# frozen_string_literal: true

require "spec_helper"
require "open3"

# A Native sandbox is the backend it chose, seen through
# another name. Every public method of the backend's class is answered by
# Native with the backend's answer (denials and their subscribers, the
# gateway, open/closed state included), and nothing stands between the
# caller and the backend: an error's first backtrace frame is the caller's.
RSpec.describe "A Native sandbox as its backend" do
  let(:workspace) { open_workspace(paths: {docs: "docs"}) }
  let(:native) do
    LittleGhost::Sandboxes::Native.new(workspace: workspace, policy: {files: {root: :read_only, docs: :read_write}})
  rescue LittleGhost::DependencyError, LittleGhost::UnsupportedPlatformError => e
    skip "no native backend here: #{e.message}"
  end
  let(:backend) { native.backend }

  after { native.close }

  # Methods that change state or take arguments are checked by behaviour below.
  QUERIES = %i[capabilities effective_policy denials writable? limits policy workspace gateway bubblewrap_args
               tmpdir].freeze

  it "answers every public method of the chosen backend's class" do
    names = backend.class.public_instance_methods - Object.public_instance_methods
    expect(names).not_to be_empty
    names.each do |name|
      expect(native).to respond_to(name), "Native does not answer #{backend.class}##{name}"
    end
    (names & QUERIES).each do |name|
      expect(native.public_send(name)).to eq(backend.public_send(name)), "#{name} differs from the backend's"
    end
  end

  it "answers a method its backend lacks as the backend does" do
    (%i[gateway bubblewrap_args tmpdir] - backend.class.public_instance_methods).each do |name|
      expect(native).not_to respond_to(name)
      expect { native.public_send(name) }.to raise_error(NoMethodError)
    end
  end

  it "a refusal through Native reaches its on_denial subscribers and its denials" do
    seen = []
    native.on_denial { |denial| seen << denial }
    expect { native.write("notes.md", "x") }.to raise_error(LittleGhost::ToolError, /read-only/)
    expect(seen.map(&:reason)).to eq([:read_only])
    expect(native.denials).to eq(seen)
    expect(native.denials).to eq(backend.denials)
  end

  it "off_denial unsubscribes what on_denial subscribed through Native" do
    seen = []
    handler = native.on_denial { |denial| seen << denial }
    expect(native.off_denial(handler)).to be(true)
    expect { native.read("../x") }.to raise_error(LittleGhost::ToolError)
    expect(seen).to be_empty
  end

  it "has the backend's gateway, when the backend has one" do
    skip "#{backend.class} has no gateway" unless backend.respond_to?(:gateway)
    native.open
    expect(native.gateway).to equal(backend.gateway)
  end

  it "inspects as the backend does, under its own name, open or closed" do
    as_native = ->(text) { text.sub(/\A#<\S+ provider=:\w+/, "#<LittleGhost::Sandboxes::Native provider=:native") }
    expect(native.inspect).to eq(as_native.(backend.inspect))
    session = native.start_program(["sleep", "5"])
    expect(native.inspect).to eq(as_native.(backend.inspect))
    session.close
    native.open
    expect(native.inspect).to end_with(" open>")
    expect(native.inspect).to eq(as_native.(backend.inspect))
    native.close
    expect(native.inspect).to end_with(" closed>")
  end

  it "open with a block yields the Native sandbox and closes the backend" do
    expect(native.open { |sandbox| [sandbox.equal?(native), backend.inspect.end_with?(" open>")] }).to eq([true, true])
    expect(backend.inspect).to end_with(" closed>")
  end

  it "an error raised through Native points at the caller first" do
    here = File.basename(__FILE__)
    errors = [
      -> { native.read("../x") },
      -> { native.write("notes.md", "x") },
      -> { native.execute_program([], timeout: 1) },
      -> { native.scope(files: {root: :read_write}) },
      -> { native.open(bogus: 1) },
      -> { LittleGhost::Sandboxes::Native.new(workspace: workspace, policy: 3) },
      -> { LittleGhost::Sandboxes::Native.new(workspace: nil) }
    ].map do |call|
      call.call
      raise "no error"
    rescue StandardError => e
      e
    end
    errors.each do |error|
      expect(error.backtrace.first).to start_with(__FILE__).or(include(here)), "#{error.inspect}: #{error.backtrace.first(3)}"
      expect(error.backtrace.grep(/forwardable/)).to be_empty
    end
  end

  it "forwards a block and keywords unchanged" do
    chunks = []
    execution = native.execute_program(["sh", "-c", "echo hi"], timeout: 5) { |stream, chunk| chunks << [stream, chunk] }
    expect(execution.stdout).to eq("hi\n")
    expect(chunks).to eq([[:stdout, "hi\n"]])
  end

  bwrap = "/usr/bin/bwrap"
  it "holds where Native picks Landlock (user namespaces blocked)" do
    skip "already inside" if ENV["LG_NATIVE_AS_BACKEND_INNER"]
    skip "bwrap is not installed" unless File.executable?(bwrap)
    locked = [bwrap, "--unshare-user", "--disable-userns", "--dev-bind", "/", "/", "--"]
    _, _, status = Open3.capture3(*locked, "/bin/true")
    skip "bwrap cannot lock user namespaces here" unless status.success?
    skip "Landlock is unavailable here" unless LittleGhost::Sandboxes::Landlock.probe[:available]
    rspec = Gem.bin_path("rspec-core", "rspec")
    stdout, stderr, status = Open3.capture3({"LG_NATIVE_AS_BACKEND_INNER" => "1"}, *locked, RbConfig.ruby, rspec,
                                            "--no-color", __FILE__, chdir: File.expand_path("..", __dir__))
    expect(status).to be_success, stdout + stderr
    expect(stdout).to match(/\d+ examples, 0 failures/)
  end
end
