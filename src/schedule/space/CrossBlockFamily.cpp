// The cross-block reductions family, for nests whose output is tiny next to the device. With fewer
// parallel points than 2 x the multiprocessors, even one block per output point (the reduction
// split across the threads of the block, space/SplitFamily.cpp) leaves the device with less than
// two blocks per multiprocessor -- a dot product runs on one multiprocessor out of 132 -- so the
// innermost reduction is split across blocks too: R blocks per output tile, with R such that
// the grid has about 1, 2 and 4 blocks per multiprocessor (R = k * multiprocessors / tiles),
// T = 128..1024 threads on thread.x and a grid-stride loop around them, which keeps the loads
// coalesced: `r: serial, grid.y R, thread.x T`, and the same with an inner `unroll 4` ahead of
// the grid part (four independent loads in flight per thread). The parallel indices are placed
// as in the split family (a few outputs per block on thread.y); the reduction takes the first grid
// axis they leave free. R is capped so that every thread has at least one value per unrolled step.
#include <algorithm>
#include <set>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

bool crossBlockApplies(NestSpace& s) {
  return !s.model().reductions().empty() && s.model().parallelPoints() < 2.0 * s.options().device.multiprocessors;
}

void crossBlockVariants(NestSpace& s) {
  const SpaceOptions& o = s.options();
  auto reds = s.model().reductions();
  const DeviceModel& d = o.device;
  const NestIndex* r = reds.back();
  const int64_t extR = std::max<int64_t>(1, r->hull.extent());
  auto par = s.model().parallel();
  for (int64_t tx : {128, 256, 512, 1024}) {
    if (tx > o.limits.maxThreadsPerBlock) break;
    for (int64_t ty : outputThreadYSizes(par.empty() ? nullptr : par.back())) {
      if (tx * ty > o.limits.maxThreadsPerBlock) continue;
      std::vector<IndexSchedule> pc;
      if (!par.empty()) pc = parallelClauses(s, par.back(), ty, 1, nullptr, 1, 1, Placement::ThreadY);
      const auto [tiles, axis] = outputTiles(s.model(), pc);
      if (axis < 0) continue;
      for (int64_t unroll : {1, 4}) {
        std::set<int64_t> seen;
        for (int64_t perSm : {1, 2, 4}) {
          int64_t blocks = ceilDiv(perSm * d.multiprocessors, tiles);
          blocks = std::min({blocks, extR / (tx * unroll), o.limits.maxGridDim[axis]});
          if (blocks < 2 || !seen.insert(blocks).second) continue;
          NestSchedule ns;
          ns.indices = pc;
          for (const NestIndex* red : reds) {
            IndexSchedule is{red->name, {part(Placement::Serial)}};
            if (red == r) {
              if (unroll > 1) is.parts.push_back(part(Placement::Unroll, unroll));
              is.parts.push_back(part(kGrids[axis], blocks));
              is.parts.push_back(part(Placement::ThreadX, tx));
            }
            ns.indices.push_back(std::move(is));
          }
          s.add(ns, Group::CrossBlock);
        }
      }
    }
  }
}

}  // namespace rtcg::space
