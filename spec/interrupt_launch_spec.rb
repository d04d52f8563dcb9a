# frozen_string_literal: true

require "spec_helper"
require "securerandom"
require "timeout"

# An interrupt is honoured at every point of a launch: before the spawn, while the launch is
# handed to the spawner thread, while the spawner runs it and while the child runs. Whenever Thread#raise or
# Timeout lands, execute_program hands back that very exception and the child and its tree are gone.
#
# Each backend gets LG_INTERRUPT_ROUNDS (default 1,000) Thread#raise at random offsets of 0-20 ms and as many
# Timeout.timeout of 1-10 ms around execute_program(["sleep", "20"], timeout: 20). An interrupt that lands while bwrap
# sets up its namespace finds only processes TERM cannot reach (the namespace's init drops it): they are killed at
# once rather than after the 0.5 s grace. Each interrupt is due back within 100 ms, so each batch runs under a
# deadline of 60 s plus 0.3 s a round: far above what a batch needs when every interrupt is honoured promptly, far
# below rounds * 0.5 s (a grace waited out each round) or rounds * 20 s (a lost interrupt). A regression fails instead
# of hanging the suite.
RSpec.describe "interrupting a launch" do # rubocop:disable RSpec/DescribeClass
  include ProcessHelpers

  # Every process carrying `marker` in its environment (the children, bwrap, the Landlock supervisor).
  def marked_processes(marker)
    needle = "LG_INTERRUPT_MARK=#{marker}"
    Dir["/proc/[0-9]*/environ"].filter_map do |path|
      pid = path[%r{/proc/(\d+)/}, 1].to_i
      next unless File.binread(path).split("\0").include?(needle)
      next unless process_alive?(pid)

      pid
    rescue SystemCallError
      nil
    end
  end

  # Runs the block in a thread and returns its value, failing the example if it does not return by `seconds`.
  def within(seconds)
    worker = Thread.new { yield }
    worker.report_on_exception = false
    return worker.value if worker.join(seconds)

    worker.kill
    worker.join(5)
    raise RSpec::Expectations::ExpectationNotMetError, "the batch did not return within #{seconds} s: an interrupt was lost"
  end

  backends = {
    "Unrestricted" => [-> { LittleGhost::Sandboxes::Unrestricted }, 1000],
    "Bubblewrap" => [-> { LittleGhost::Sandboxes::Bubblewrap }, 1000],
    "Landlock" => [-> { LittleGhost::Sandboxes::Landlock }, 1000]
  }

  backends.each do |name, (backend, default_rounds)|
    rounds = Integer(ENV.fetch("LG_INTERRUPT_ROUNDS", default_rounds.to_s))
    # Seconds; see above.
    deadline = 60 + (rounds * 0.3)

    describe "on #{name} (#{rounds} rounds)" do
      let(:marker) { SecureRandom.hex(8) }

      before do
        probe = backend.call.probe
        skip "#{name} is unavailable here: #{probe[:reason]}" unless probe[:available]
        @sandbox = backend.call.new(workspace: open_workspace, policy: {files: {root: :read_write}}).open
      end

      after { @sandbox&.close }

      def launch
        @sandbox.execute_program(["sleep", "20"], timeout: 20, environment: {"LG_INTERRUPT_MARK" => marker})
      end

      it "re-raises every Thread#raise, whenever it lands, as the same object, and leaves no child behind" do
        outcomes = within(deadline) do
          Array.new(rounds) do |round|
            error = RuntimeError.new("interrupt #{round}")
            go = Queue.new
            caller_thread = Thread.new do
              go.pop
              launch
            rescue Exception => e # rubocop:disable Lint/RescueException
              e
            end
            Thread.pass until caller_thread.stop?
            go << true
            sleep(rand * 0.02)
            caller_thread.raise(error)
            caller_thread.value.equal?(error) ? :same : caller_thread.value
          end
        end
        expect(outcomes.reject { |outcome| outcome == :same }).to eq([])
        expect(eventually(5) { marked_processes(marker).empty? }).to be(true), "left behind: #{marked_processes(marker)}"
      end

      it "lets every Timeout.timeout of 1-10 ms end the call, and leaves no child behind" do
        outcomes = within(deadline) do
          Array.new(rounds) do
            Timeout.timeout(0.001 + (rand * 0.009)) { launch }
          rescue Timeout::Error => e
            e.instance_of?(Timeout::Error) ? :timed_out : e
          rescue StandardError => e
            e
          end
        end
        expect(outcomes.reject { |outcome| outcome == :timed_out }).to eq([])
        expect(eventually(5) { marked_processes(marker).empty? }).to be(true), "left behind: #{marked_processes(marker)}"
      end
    end
  end
end
