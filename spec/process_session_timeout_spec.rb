# frozen_string_literal: true

require "spec_helper"

# `start_program(timeout:)` bounds a session's whole life. Once the
# timeout passes, every process the session started is gone (the leader, a
# grandchild, one that left its process group), `alive?` is false, and `read`
# and `wait` raise the TimeoutError `execute_program` raises, carrying what
# the program wrote that nobody read. Without `timeout:` a session lives
# until it ends or is closed, as before. Every backend that can run here.
RSpec.describe "A session's timeout" do
  include ProcessHelpers

  SESSION_TIMEOUT_BACKENDS = {
    unrestricted: -> { true },
    bubblewrap: -> { LittleGhost::Sandboxes::Bubblewrap.probe[:available] },
    landlock: -> { LittleGhost::Sandboxes::Landlock.probe[:available] }
  }.freeze

  SESSION_TIMEOUT_BACKENDS.each do |provider, available|
    context "on #{provider}" do
      let(:workspace) { open_workspace }
      let(:sandbox) do
        LittleGhost::Sandbox.build({provider: provider, files: {root: :read_write}}, workspace: workspace)
      end

      before { skip "#{provider} is unavailable here" unless available.call }
      after { sandbox.close }

      # A program that would outlive any test: two descendants (one stays in
      # its group, one leaves it with setsid), a line on each stream, then it
      # waits forever. The descendants sleep a number of seconds no other
      # process uses, so the host's process table finds them whatever pid
      # namespace they run in.
      def start_forever(**options)
        @marker = (100_000 + rand(900_000)).to_s
        script = "sleep #{@marker} & setsid sleep #{@marker} & echo started; echo oops >&2; wait"
        sandbox.start_program(["/bin/sh", "-c", script], **options)
      end

      def marked_sleeps
        Dir["/proc/[0-9]*/cmdline"].count do |path|
          File.binread(path) == "sleep\0#{@marker}\0"
        rescue SystemCallError
          false
        end
      end

      def descendants
        expect(eventually(10) { marked_sleeps == 2 }).to be(true)
      end

      it "ends the whole tree when the timeout passes, and read raises TimeoutError with the unread output" do
        session = start_forever(timeout: 1)
        descendants
        expect(eventually(20) { !session.alive? }).to be(true)
        expect(eventually(10) { marked_sleeps.zero? }).to be(true)
        error = nil
        begin
          session.read(timeout: 1)
        rescue LittleGhost::Sandbox::TimeoutError => e
          error = e
        end
        expect(error).to be_a(LittleGhost::Sandbox::TimeoutError)
        expect(error).to be_a(LittleGhost::ToolError)
        expect(error.message).to eq("Command timed out after 1.0 seconds")
        expect(error.execution.stdout).to eq("started\n")
        expect(error.execution.stderr).to eq("oops\n")
        expect(error.execution.success?).to be(false)
        # The same answer on every later call.
        expect { session.wait }.to raise_error(LittleGhost::Sandbox::TimeoutError, error.message)
        expect(session.alive?).to be(false)
        # A timeout is not a denial, as for execute_program.
        expect(sandbox.denials).to be_empty if sandbox.respond_to?(:denials)
        session.close
      end

      it "makes a caller blocked in wait raise TimeoutError once the tree is gone" do
        session = start_forever(timeout: 0.5)
        descendants
        expect { session.wait }.to raise_error(LittleGhost::Sandbox::TimeoutError, "Command timed out after 0.5 seconds")
        expect(session.alive?).to be(false)
        expect(eventually(10) { marked_sleeps.zero? }).to be(true)
      end

      it "leaves a session that ends in time alone: its own exit status" do
        session = sandbox.start_program(["/bin/sh", "-c", "echo quick"], timeout: 30)
        expect(session.wait(timeout: 20).exitstatus).to eq(0)
        expect(session.read.stdout).to eq("quick\n")
        session.close
      end

      it "keeps a session without timeout: alive for as long as it runs" do
        session = start_forever
        descendants
        expect(consistently(1.5) { session.alive? }).to be(true)
        session.close
      end

      it "refuses a timeout that is not a positive finite number" do
        [0, -1, Float::INFINITY, "soon"].each do |bad|
          expect { sandbox.start_program(["true"], timeout: bad) }.to raise_error(ArgumentError, "timeout must be positive")
        end
      end
    end
  end
end
