// Kernel timing: warm-up runs, then N repeats, each timed on the GPU with its own pair of events,
// summarized as min / median / mean / max.
//
// Cold-cache timing (L2 defeat), two ways:
//  - flushL2: between repeats (outside the timed region) a scratch buffer twice the L2 size is
//    overwritten with cuMemsetD8Async, so the inputs are no longer in L2;
//  - rotation: `run` receives the repeat index, so the caller can cycle among several copies of
//    the inputs whose total size exceeds the L2.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "runtime/Device.h"
#include "runtime/Stream.h"

namespace rtcg::cuda {

struct BenchmarkOptions {
  int warmup = 2;       // untimed runs first (module load, clocks, caches)
  int repeats = 10;     // timed runs
  bool flushL2 = true;  // overwrite the L2 between runs (see above)
  // Racing: when > 0, the first timed run is waited for alone, and when it took longer than this
  // the measurement stops with that one sample (a tuner's candidate that cannot win). 0: all runs.
  double raceMs = 0;
  // A closer race, when > 0 and there are more than kCloseRaceRuns repeats: once the first
  // kCloseRaceRuns timed runs are done, the measurement stops with them when even the fastest took
  // longer than this (a candidate some percent slower than the best so far: timing noise under an
  // L2 flush is about 1%, so three runs all that slow do not come from a kernel as fast).
  double closeRaceMs = 0;
};
constexpr int kCloseRaceRuns = 3;

struct BenchmarkResult {
  std::vector<double> samplesMs;  // one per repeat, in order
  double minMs = 0, medianMs = 0, meanMs = 0, maxMs = 0;
};

// Statistics of `samplesMs` (median of an even count: the mean of the middle two). Throws
// rtcg::Error for no samples.
BenchmarkResult summarize(std::vector<double> samplesMs);

// Times `run`, which must enqueue its work on the stream it is given; `iteration` counts from 0
// over warm-up and timed runs together. The whole measurement is enqueued and waited for once,
// so the host does not add gaps between runs.
using BenchmarkBody = std::function<void(const Stream& stream, int iteration)>;
BenchmarkResult benchmark(const Stream& stream, const BenchmarkBody& run, const BenchmarkOptions& options = {});

}  // namespace rtcg::cuda
