#include "runtime/Benchmark.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "runtime/Memory.h"
#include "support/Error.h"

namespace rtcg::cuda {

BenchmarkResult summarize(std::vector<double> samplesMs) {
  if (samplesMs.empty()) throw Error("no timing samples to summarize");
  BenchmarkResult r;
  r.samplesMs = samplesMs;
  std::sort(samplesMs.begin(), samplesMs.end());
  size_t n = samplesMs.size();
  r.minMs = samplesMs.front();
  r.maxMs = samplesMs.back();
  r.medianMs = n % 2 ? samplesMs[n / 2] : (samplesMs[n / 2 - 1] + samplesMs[n / 2]) / 2;
  r.meanMs = std::accumulate(samplesMs.begin(), samplesMs.end(), 0.0) / static_cast<double>(n);
  return r;
}

BenchmarkResult benchmark(const Stream& stream, const BenchmarkBody& run, const BenchmarkOptions& options) {
  if (options.repeats < 1) throw Error(fmt::format("benchmark repeats must be at least 1, not {}", options.repeats));
  if (options.warmup < 0) throw Error(fmt::format("benchmark warm-up runs cannot be negative ({})", options.warmup));
  const std::shared_ptr<Context>& ctx = stream.context();

  std::optional<DeviceBuffer> scratch;
  if (options.flushL2) {
    size_t l2 = ctx->device().properties().l2Bytes;
    scratch.emplace(ctx, std::max<size_t>(2 * l2, size_t(1) << 20));
  }

  int iteration = 0;
  for (int i = 0; i < options.warmup; ++i) run(stream, iteration++);

  std::vector<Event> starts, stops;
  starts.reserve(options.repeats);
  stops.reserve(options.repeats);
  for (int i = 0; i < options.repeats; ++i) {
    starts.emplace_back(ctx);
    stops.emplace_back(ctx);
  }
  auto timedRun = [&](int i) {
    // Alternate the fill value so no layer can skip the writes as redundant.
    if (scratch) scratch->fill8Async(static_cast<uint8_t>(i & 1 ? 0xA5 : 0x5A), &stream);
    starts[i].record(&stream);
    run(stream, iteration++);
    stops[i].record(&stream);
  };
  int first = 0;
  if (options.raceMs > 0) {
    timedRun(first++);
    stream.synchronize();
    double ms = Event::elapsedMs(starts[0], stops[0]);
    if (ms > options.raceMs) return summarize({ms});
  }
  auto samplesUpTo = [&](int n) {
    std::vector<double> samples;
    samples.reserve(n);
    for (int i = 0; i < n; ++i) samples.push_back(Event::elapsedMs(starts[i], stops[i]));
    return samples;
  };
  if (options.closeRaceMs > 0 && options.repeats > kCloseRaceRuns) {
    for (; first < kCloseRaceRuns; ++first) timedRun(first);
    stream.synchronize();
    std::vector<double> samples = samplesUpTo(kCloseRaceRuns);
    if (*std::min_element(samples.begin(), samples.end()) > options.closeRaceMs) return summarize(std::move(samples));
  }
  for (int i = first; i < options.repeats; ++i) timedRun(i);
  stream.synchronize();
  return summarize(samplesUpTo(options.repeats));
}

}  // namespace rtcg::cuda
