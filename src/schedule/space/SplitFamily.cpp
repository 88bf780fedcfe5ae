// The split reductions family: for nests whose parallel domain cannot fill the device, the
// innermost reduction index on thread.x (combined across the block), the innermost parallel index
// on the grid, optionally with a few outputs per block on thread.y.
#include "schedule/space/NestSpace.h"

namespace rtcg::space {

// A reduction of at least 64 values in a nest of fewer parallel points than half the device's
// resident threads.
bool splitApplies(NestSpace& s) {
  auto reds = s.model().reductions();
  if (reds.empty()) return false;
  const DeviceModel& d = s.options().device;
  if (s.model().parallelPoints() >= (double)d.multiprocessors * d.maxThreadsPerMultiprocessor / 2) return false;
  return std::max<int64_t>(1, reds.back()->hull.extent()) >= 64;
}

void splitVariants(NestSpace& s) {
  const ScheduleLimits& limits = s.options().limits;
  auto reds = s.model().reductions();
  const NestIndex* r = reds.back();
  int64_t extR = std::max<int64_t>(1, r->hull.extent());
  auto par = s.model().parallel();
  for (int64_t tx : sizesFor({32, 64, 128, 256, 512, 1024}, extR)) {
    if (tx > limits.maxThreadsPerBlock) break;
    for (int64_t ty : outputThreadYSizes(par.empty() ? nullptr : par.back())) {
      if (tx * ty > limits.maxThreadsPerBlock) continue;
      // Each thread reads runs of `run` neighbouring values (one 16-byte load per operand where
      // the operands run along the index: the emitted arrays are 16-byte aligned), `ahead` runs
      // of them per step in flight.
      for (auto [ahead, run] : {std::pair<int64_t, int64_t>{1, 1}, {1, 4}, {2, 4}, {4, 4}}) {
        if (run > 1 && extR < tx * run * ahead * 2) continue;
        NestSchedule ns;
        if (!par.empty()) {
          // Parallel indices as usual, with thread.y on the innermost and no thread.x.
          ns.indices = parallelClauses(s, par.back(), ty, 1, nullptr, 1, 1, Placement::ThreadY);
        }
        for (const NestIndex* red : reds) {
          IndexSchedule is{red->name, {part(Placement::Serial)}};
          if (red == r) {
            if (ahead > 1) is.parts.push_back(part(Placement::Unroll, ahead));
            is.parts.push_back(part(Placement::ThreadX, tx));
            if (run > 1) is.parts.push_back(part(Placement::Unroll, run));
          }
          ns.indices.push_back(std::move(is));
        }
        s.add(ns, Group::Split);
      }
    }
  }
}

}  // namespace rtcg::space
