# frozen_string_literal: true

require "spec_helper"
require "open3"
require "rbconfig"

# A bad value is refused with a documented class (ArgumentError, TypeError or PolicyError, 1.4) whose message names
# the value's class, before any work is done on it: never EncodingError, RangeError or
# NoMethodError from deep inside a conversion, and never an expansion of a Range into millions of entries.
RSpec.describe "refusing bad values" do # rubocop:disable RSpec/DescribeClass
  let(:workspace) { open_workspace(paths: {src: "src"}) }
  let(:unrestricted) { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: :read_write}}) }
  let(:broken) { "\xff\xfe".b.force_encoding(Encoding::UTF_8) }
  let(:binary) { "\xff".b }

  def allowlist(allow)
    LittleGhost::Sandbox::NetworkPolicy.new(mode: :allowlist, allow: allow)
  end

  after { @session&.close }

  cases = {
    "an allowlist entry that is not valid UTF-8" => [ArgumentError, "String", -> { allowlist([broken]) }],
    "a binary allowlist entry that is not UTF-8" => [ArgumentError, "String", -> { allowlist([binary]) }],
    "an allowlist entry that cannot become a String" => [TypeError, "BasicObject", -> { allowlist([BasicObject.new]) }],
    "an endless Range as the allowlist" => [TypeError, "Range", -> { allowlist(1..) }],
    "a Range as the allowlist" => [TypeError, "Range", -> { allowlist(1..5) }],
    "a network mode that is not valid text" => [ArgumentError, "String", -> { allowlist(["a.example:443"]).then { LittleGhost::Sandbox::NetworkPolicy.new(mode: broken) } }],
    "a grant access value that is not valid text" => [ArgumentError, "String", -> { LittleGhost::Sandboxes::Unrestricted.new(workspace: workspace, policy: {files: {root: broken}}) }],
    "supports? with a name that is not valid text" => [ArgumentError, "String", -> { unrestricted.supports?(broken) }],
    "supports? with a Symbol that is not valid UTF-8" => [ArgumentError, "Symbol", -> { unrestricted.supports?(binary.to_sym) }],
    "a scope name that is not valid text" => [ArgumentError, "String", -> { unrestricted.scope(broken) }],
    "a BasicObject as the argv" => [TypeError, "BasicObject", -> { unrestricted.execute_program(BasicObject.new, timeout: 5) }],
    "a BasicObject inside the argv" => [TypeError, "BasicObject", -> { unrestricted.execute_program(["true", BasicObject.new], timeout: 5) }],
    "a context: without check! for execute_program" => [TypeError, "Object", -> { unrestricted.execute_program(["true"], timeout: 5, context: Object.new) }],
    "a UTF-16 workspace root" => [ArgumentError, "String", -> { LittleGhost::Workspace.new(root: Dir.tmpdir.encode("UTF-16LE"), paths: {}) }],
    "a UTF-16 workspace path" => [ArgumentError, "String", -> { LittleGhost::Workspace.new(root: Dir.tmpdir, paths: {a: "a".encode("UTF-16LE")}) }],
    "a context: without check! for read" => [TypeError, "Object", -> { unrestricted.read("x", context: Object.new) }]
  }

  cases.each do |description, (error_class, class_name, call)|
    it "raises #{error_class} naming the class for #{description}" do
      # "(got String)": the message names the class of the value, not merely the word "String".
      named = %w[String Symbol].include?(class_name) ? /\(got #{class_name}\b/ : /\b#{Regexp.escape(class_name)}\b/
      expect { instance_exec(&call) }.to raise_error(error_class, named)
    end
  end

  it "raises ArgumentError naming the class for a Complex read timeout" do
    @session = unrestricted.start_program(["cat"])
    expect { @session.read(timeout: 1i) }.to raise_error(ArgumentError, /\bComplex\b/)
  end

  # A child process so that a regression (an expansion of ten million entries) fails instead of holding the suite.
  it "refuses a ten-million-entry Range as the allowlist without expanding it, and de-duplicates 40,000 entries" do
    script = <<~RUBY
      begin
        LittleGhost::Sandbox::NetworkPolicy.new(mode: :allowlist, allow: (1..10**7))
      rescue TypeError => e
        puts e.message
      end
      entries = Array.new(40_000) { |i| "h\#{i}.example.com:443" } * 2
      puts LittleGhost::Sandbox::NetworkPolicy.new(mode: :allowlist, allow: entries).allow.size
    RUBY
    lib = File.expand_path("../lib", __dir__)
    Open3.popen2e(RbConfig.ruby, "-I", lib, "-rlittleghost/sandbox", "-e", script) do |_stdin, output, waiter|
      reader = Thread.new { output.read rescue IOError }
      unless waiter.join(60)
        Process.kill(:KILL, waiter.pid)
        waiter.join
        raise RSpec::Expectations::ExpectationNotMetError, "the allowlist was expanded or de-duplicated too slowly (no answer in 60 s)"
      end
      expect(reader.value.lines.map(&:chomp)).to eq(["expected an Array (got Range)", "40000"])
    end
  end
end
