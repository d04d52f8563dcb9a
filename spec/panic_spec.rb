# frozen_string_literal: true

require "open3"
require "rbconfig"

# A panic in Rust becomes a Ruby exception, never an abort.
# LittleGhost::Sandbox::TestHooks exists only in the development build
# (`rake compile` enables the `test-hooks` cargo feature; the gem build does not).
#
# - Without the GVL (helpers/nogvl.rs) a panic is caught and raised as
#   RuntimeError "littleghost-sandbox internal error: ...": a normal exception.
# - With the GVL, magnus catches the panic but raises Ruby's `fatal` through
#   rb_exc_fatal, which no `rescue` clause catches: Ruby runs `ensure` and
#   `at_exit`, prints the error and exits with status 1. That is no abort (no
#   signal, no core dump), but it is not yet an exception the caller can rescue.
RSpec.describe "Rust panics" do
  let(:hooks) { LittleGhost::Sandbox::TestHooks if defined?(LittleGhost::Sandbox::TestHooks) }
  let(:lib) { File.expand_path("../lib", __dir__) }

  before do
    skip "built without the test-hooks cargo feature (use `rake compile`)" unless hooks
  end

  # The default panic hook prints to the real stderr (fd 2); keep the run quiet.
  def quietly
    saved = $stderr.dup
    $stderr.reopen(File::NULL, "w")
    yield
  ensure
    $stderr.reopen(saved)
    saved.close
  end

  def sandbox_still_works
    execution = LittleGhost::Sandbox::ProcessRunner.run(command: ["/bin/echo", "still here"], timeout: 5)
    expect([execution.stdout, execution.exit_code]).to eq(["still here\n", 0])
    session = LittleGhost::Sandbox::ProcessSession.new(command: ["cat"])
    session.write("ping\n")
    received = +""
    received << session.read(timeout: 0.05).stdout until received.end_with?("ping\n")
    expect(received).to eq("ping\n")
  ensure
    session&.close
  end

  # Runs +code+ in a fresh Ruby with the compiled extension; returns [stdout, stderr, status].
  def run_ruby(code)
    Open3.capture3({ "RUST_BACKTRACE" => "0" }, RbConfig.ruby, "-I", lib, "-e",
                   "require 'littleghost/sandbox'\n#{code}")
  end

  it "raises a panic without the GVL as a RuntimeError the caller rescues, and the sandbox keeps working" do
    rescued = nil
    quietly do
      hooks.panic_without_gvl
    rescue Exception => e # rubocop:disable Lint/RescueException
      rescued = e
    end
    expect(rescued).to be_a(RuntimeError)
    expect(rescued.message).to eq("littleghost-sandbox internal error: test hook panic without the GVL")
    expect { quietly { hooks.panic_without_gvl } }.to raise_error(RuntimeError, /internal error/)
    sandbox_still_works
  end

  it "never aborts on a panic with the GVL: Ruby raises fatal, runs ensure and at_exit, and exits 1" do
    stdout, stderr, status = run_ruby(<<~RUBY)
      at_exit { puts "at_exit ran" }
      begin
        LittleGhost::Sandbox::TestHooks.panic_with_gvl
      ensure
        puts "ensure ran"
      end
    RUBY
    expect(status.signaled?).to be(false)
    expect(status.exitstatus).to eq(1)
    expect(stdout).to eq("ensure ran\nat_exit ran\n")
    expect(stderr).to include("test hook panic with the GVL (fatal)")
  end

  it "lets the caller rescue a panic with the GVL and carry on" do
    pending "magnus raises panics with rb_exc_fatal, which `rescue Exception` cannot catch"
    stdout, _stderr, status = run_ruby(<<~RUBY)
      begin
        LittleGhost::Sandbox::TestHooks.panic_with_gvl
      rescue Exception => e
        puts "rescued \#{e.class}"
      end
      puts LittleGhost::Sandbox::ProcessRunner.run(command: ["/bin/echo", "still here"], timeout: 5).stdout
    RUBY
    expect([stdout, status.exitstatus]).to eq(["rescued fatal\nstill here\n", 0])
  end
end
