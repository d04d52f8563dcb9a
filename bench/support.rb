# frozen_string_literal: true

# Shared timing helpers for the benchmarks: each case is run in interleaved
# rounds with its baseline so both see the same machine state, and the median
# per-operation time of each side is compared.
#
# Each timed block starts after one untimed call of the same side, so neither
# side pays for the other's after-effects. It matters for spawn baselines as
# root: Ruby forks the whole process there, which leaves its memory
# copy-on-write, and the parent's next writes fault each page back (about 200
# minor faults, 2 ms on this host, in the first Landlock launch after ten
# Process.spawn calls, against 4 in the others): untimed, that cost of the
# baseline's last fork landed in the first timed call of the other side.
module BenchSupport
  module_function

  def clock
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  # Seconds per iteration of the block, median over `rounds` rounds of `iterations` calls.
  def median_per_op(samples)
    sorted = samples.sort
    sorted[sorted.size / 2]
  end

  # The [ours, baseline] medians (seconds per operation) of the last compare.
  def last_medians
    @last_medians
  end

  # Runs `ours` and `baseline` alternately and prints their medians and ratio; returns the ratio.
  def compare(label, iterations:, rounds: 15, target: nil, ours:, baseline:)
    ours_samples = []
    base_samples = []
    2.times { ours.call; baseline.call } # warm up
    rounds.times do
      baseline.call # settle: see the module comment
      start = clock
      iterations.times { baseline.call }
      base_samples << (clock - start) / iterations
      ours.call
      start = clock
      iterations.times { ours.call }
      ours_samples << (clock - start) / iterations
    end
    ours_median = median_per_op(ours_samples)
    base_median = median_per_op(base_samples)
    ratio = ours_median / base_median
    @last_medians = [ours_median, base_median]
    verdict = target ? (ratio <= target ? "  (target <= #{target}: met)" : "  (target <= #{target}: MISSED)") : ""
    printf("%-58s ours %9.2f us  baseline %9.2f us  ratio %.2fx%s\n", label, ours_median * 1e6, base_median * 1e6, ratio, verdict)
    ratio
  end
end
