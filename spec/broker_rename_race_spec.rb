# frozen_string_literal: true

require "spec_helper"
require "rbconfig"

# SPEC 25 H.1: the broker decides read-only / hidden from the directory it
# actually opened, not from a path it checked earlier. A helper process keeps
# exchanging a grant's parent with a decoy directory (renameat2 with
# RENAME_EXCHANGE) while the tools aim at the decoy path: every operation may
# fail, none may land in the read-only grant or reveal the runtime-only one.
RSpec.describe "brokered file operations while directories are being exchanged", if: RUBY_PLATFORM.include?("linux") do
  RACE_SECONDS = 3

  # Loops RENAME_EXCHANGE over each pair given as arguments until terminated.
  SWAPPER = <<~'RUBY'
    require "fiddle"
    renameat2 = Fiddle::Function.new(Fiddle::Handle::DEFAULT["renameat2"],
      [Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT, Fiddle::TYPE_VOIDP, Fiddle::TYPE_INT], Fiddle::TYPE_INT)
    at_fdcwd = -100
    rename_exchange = 2
    pairs = ARGV.each_slice(2).to_a
    exchanged = 0
    $stdout.sync = true
    Signal.trap("TERM") { exit!(exchanged.positive? ? 0 : 1) }
    puts "ready"
    loop do
      pairs.each { |a, b| exchanged += 1 if renameat2.call(at_fdcwd, a, at_fdcwd, b, rename_exchange).zero? }
    end
  RUBY

  let(:workspace) { open_workspace(paths: {source: "src/lib", home: "cfg/home"}) }
  let(:policy) { {files: {root: :read_write, source: :read_only}, runtime_paths: {home: :read_write}} }
  let(:sandbox) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy).open }
  let(:root) { workspace.root }
  let(:source) { workspace.path(:source) }
  let(:home) { workspace.path(:home) }

  before do
    File.write(File.join(source, "main.rb"), "puts 1")
    File.write(File.join(home, "secret"), "runtime-secret")
    File.write(File.join(home, "runtime-token"), "runtime-token")
    FileUtils.mkdir_p(File.join(root, "d", "lib"))
    File.write(File.join(root, "d", "lib", "main.rb"), "puts 1")
    FileUtils.mkdir_p(File.join(root, "e", "home"))
    File.write(File.join(root, "e", "home", "secret"), "decoy")
    sandbox.list(".") # builds the default scope, whose broker pins the grants, before anything moves
    @source_identity = File.stat(source).ino
    @main_identity = File.stat(File.join(source, "main.rb")).ino
    @cfg_identity = File.stat(File.join(root, "cfg")).ino
  end

  # Runs the block repeatedly for RACE_SECONDS while src<->d and cfg<->e are exchanged,
  # then puts every directory back where it belongs. Returns how many operations ran.
  def while_exchanging
    pairs = [%w[src d], %w[cfg e]].flatten.map { |name| File.join(root, name) }
    swapper = IO.popen([RbConfig.ruby, "-e", SWAPPER, *pairs], "r")
    expect(swapper.gets).to eq("ready\n")
    attempts = 0
    deadline = Process.clock_gettime(Process::CLOCK_MONOTONIC) + RACE_SECONDS
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) < deadline
      yield
      attempts += 1
    end
    attempts
  ensure
    if swapper
      Process.kill("TERM", swapper.pid)
      Process.wait(swapper.pid)
      expect($?.exitstatus).to eq(0), "the helper never exchanged a directory"
      swapper.close
      restore(%w[src d], @source_identity, "lib")
      restore(%w[cfg e], @cfg_identity)
    end
  end

  # Exchanges the pair back if the grant's ancestor ended up at the decoy's name.
  def restore((real, decoy), identity, child = nil)
    path = File.join(root, real, *child)
    return if File.stat(path).ino == identity

    File.rename(File.join(root, real), File.join(root, "#{real}.tmp"))
    File.rename(File.join(root, decoy), File.join(root, real))
    File.rename(File.join(root, "#{real}.tmp"), File.join(root, decoy))
  end

  # The operation either succeeds on the decoy or raises ToolError; nothing else.
  def attempt
    yield
  rescue LittleGhost::ToolError
    nil
  end

  it "never lets a write or replace through the decoy path land in the read-only grant" do
    texts = ["puts 1", "puts 2"].cycle
    attempts = while_exchanging do
      attempt { sandbox.write("d/lib/pwn", "x") }
      old_text = texts.next
      attempt { sandbox.replace("d/lib/main.rb", old_text, old_text == "puts 1" ? "puts 2" : "puts 1") }
    end
    expect(attempts).to be > 10
    expect(Dir.children(source)).to eq(["main.rb"])
    expect(File.read(File.join(source, "main.rb"))).to eq("puts 1")
    expect(File.stat(File.join(source, "main.rb")).ino).to eq(@main_identity), "main.rb was replaced"
  end

  it "never reveals the runtime-only directory's files to reads and listings through the decoy path" do
    revealed = []
    attempts = while_exchanging do
      content = attempt { sandbox.read("e/home/secret") }
      revealed << content if content && content != "decoy"
      listing = attempt { sandbox.list("e/home") }
      revealed << listing if listing&.include?("runtime-token")
    end
    expect(attempts).to be > 10
    expect(revealed.uniq).to eq([])
    expect(File.read(File.join(home, "secret"))).to eq("runtime-secret")
  end

  # A sandbox's default scope (and its broker) is built lazily, at its
  # first file operation. Built while the exchange is under way it would pin
  # the decoy as the read-only grant, and the real grant (now at the decoy's
  # name) would be writable through the root grant. The pins must be the
  # directories the workspace verified at open.
  it "never lets a freshly built sandbox pin a decoy exchanged in before its first file operation" do
    built = 0
    attempts = while_exchanging do
      fresh = LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: policy)
      built += 1
      attempt { fresh.write("d/lib/pwn", "x") }
      attempt { fresh.replace("d/lib/main.rb", "puts 1", "puts 2") }
    end
    expect(attempts).to be > 10
    expect(Dir.children(source)).to eq(["main.rb"])
    expect(File.read(File.join(source, "main.rb"))).to eq("puts 1")
    expect(File.stat(File.join(source, "main.rb")).ino).to eq(@main_identity), "main.rb was replaced"
  end
end
