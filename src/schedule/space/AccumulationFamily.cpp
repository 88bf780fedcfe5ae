// The accumulation family, for a nest that accumulates (`h[bin[i]] += w[i]`): its updates as
// global atomics, in the block's copy in shared memory (`accumulate: shared`, where the plan finds
// the copy fits), warp-aggregated (`aggregate: warp`), or both, on siblings of the model's best
// few candidates; and for a nest of one parallel index, grid-stride loops of a few blocks per
// multiprocessor (`i: serial, grid.x G, thread.x T`), where each block makes enough updates to pay
// for its copy's set-up and merge. On those, `copies R` (2, 4, 8 and one per warp: fewer warps
// contending on each element of a small range), and where one copy of the range does not fit a
// block's shared memory, `slices S` (2 and 4: each block keeps 1/S of the range, S times the
// blocks) on grid-stride loops of 1, 2 and 4 blocks per multiprocessor in all.
#include "schedule/space/NestSpace.h"

namespace rtcg::space {

bool accumulationApplies(NestSpace& s) { return !accumulationStatements(s.kernel(), s.nest()).empty(); }

namespace {

NestSchedule gridStride(NestSpace& s, const std::string& index, int64_t blocks, int64_t threads, int64_t reg = 1) {
  NestSchedule ns;
  ns.indices.push_back(IndexSchedule{index, {part(Placement::Serial), part(Placement::GridX, blocks),
                                              part(Placement::ThreadX, threads)}});
  if (reg > 1) ns.indices.back().parts.push_back(part(Placement::Reg, reg));
  for (IndexSchedule& r : reductionClauses(s.model(), 1, 0)) ns.indices.push_back(std::move(r));
  return ns;
}

// Whether one copy of the nest's one accumulation range fits a block's shared memory (the plan's
// limit: static up to 40 KiB, dynamic up to the target's).
bool wholeCopyFits(NestSpace& s) {
  const std::vector<int> acc = accumulationStatements(s.kernel(), s.nest());
  if (acc.size() != 1) return true;
  const Kernel& k = s.kernel();
  const int64_t extent = accumulationRange(k, s.nest(), acc[0]).second;
  const int array = k.nests[size_t(s.nest())].body[size_t(acc[0])].array;
  return extent * typeBytes(k.params[size_t(array)].type) <= std::max<int64_t>(40 * 1024, s.options().limits.maxSharedBytes);
}

}  // namespace

void accumulationVariants(NestSpace& s) {
  const SpaceOptions& o = s.options();
  auto withClauses = [&](NestSchedule ns) {
    for (int c = 1; c < 4; ++c) {
      ns.accumulate = AccumulateSchedule{bool(c & 1)};
      ns.warpAggregation = c & 2;
      s.add(ns, Group::Plain);
    }
  };
  std::vector<NestSchedule> best;
  for (size_t i : s.bestKept(4)) best.push_back(s.kept[i].plan->schedule);
  for (const NestSchedule& ns : best) withClauses(ns);
  const auto par = s.model().parallel();
  if (par.size() != 1) return;
  // The block count of a grid-stride loop: perSM blocks a multiprocessor, or the power of two
  // below that where it divides the points into whole steps (no guard in the loop).
  const int64_t extent = std::max<int64_t>(1, par[0]->hull.extent());
  auto gridBlocks = [&](int64_t perSM, int64_t threads, int64_t reg) {
    const int64_t blocks = perSM * o.device.multiprocessors;
    int64_t p2 = 1;
    while (p2 * 2 <= blocks) p2 *= 2;
    return extent % (p2 * threads * reg) == 0 ? p2 : blocks;
  };
  std::vector<NestSchedule> strided;
  for (int64_t threads : {256, 512})
    for (int64_t perSM : {2, 4, 8})
      for (int64_t reg : {1, 4}) {
        // `reg 4`: each thread's four updates of a step, their loads issued together (faster with
        // copies on 256 bins; docs/bench.md, session 36).
        if (threads > o.limits.maxThreadsPerBlock || (reg > 1 && perSM > 2)) continue;
        NestSchedule ns = gridStride(s, par[0]->name, gridBlocks(perSM, threads, reg), threads, reg);
        s.add(ns, Group::Plain);
        withClauses(ns);
        strided.push_back(ns);
      }
  const bool fits = wholeCopyFits(s);
  if (fits) {
    for (NestSchedule ns : strided) {
      const int64_t warps = ns.indices[0].parts[2].factor.value_or(32) / 32;
      for (int64_t copies : {int64_t(2), int64_t(4), int64_t(8), warps})
        if (copies > 1 && copies <= warps) {  // (one per warp may repeat 8: add takes it once)
          ns.accumulate = AccumulateSchedule{true, 1, copies};
          s.add(ns, Group::Plain);
        }
    }
    return;
  }
  for (int64_t slices : {2, 4})
    for (int64_t threads : {512, 1024})
      for (int64_t perSM : {1, 2, 4}) {
        if (threads > o.limits.maxThreadsPerBlock) continue;
        const int64_t blocks = std::max<int64_t>(1, (perSM * o.device.multiprocessors + slices - 1) / slices);
        NestSchedule ns = gridStride(s, par[0]->name, blocks, threads);
        for (bool warp : {false, true}) {
          ns.accumulate = AccumulateSchedule{true, slices, 1};
          ns.warpAggregation = warp;
          s.add(ns, Group::Plain);
        }
      }
}

}  // namespace rtcg::space
