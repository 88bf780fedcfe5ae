// The accumulation family, for a nest that accumulates (`h[bin[i]] += w[i]`): its updates as
// global atomics, in the block's copy in shared memory (`accumulate: shared`, where the plan finds
// the copy fits), warp-aggregated (`aggregate: warp`), or both, on siblings of the model's best
// few candidates; and for a nest of one parallel index, grid-stride loops of a few blocks per
// multiprocessor (`i: serial, grid.x G, thread.x T`), where each block makes enough updates to pay
// for its copy's set-up and merge.
#include "schedule/space/NestSpace.h"

namespace rtcg::space {

bool accumulationApplies(NestSpace& s) { return !accumulationStatements(s.kernel(), s.nest()).empty(); }

void accumulationVariants(NestSpace& s) {
  const SpaceOptions& o = s.options();
  auto withClauses = [&](NestSchedule ns) {
    for (int c = 1; c < 4; ++c) {
      ns.privatizeAccumulation = c & 1;
      ns.warpAggregation = c & 2;
      s.add(ns, Group::Plain);
    }
  };
  std::vector<NestSchedule> best;
  for (size_t i : s.bestKept(4)) best.push_back(s.kept[i].plan->schedule);
  for (const NestSchedule& ns : best) withClauses(ns);
  const auto par = s.model().parallel();
  if (par.size() != 1) return;
  for (int64_t threads : {256, 512})
    for (int64_t perSM : {2, 4, 8}) {
      if (threads > o.limits.maxThreadsPerBlock) continue;
      NestSchedule ns;
      ns.indices.push_back(IndexSchedule{par[0]->name, {part(Placement::Serial),
                                                        part(Placement::GridX, perSM * o.device.multiprocessors),
                                                        part(Placement::ThreadX, threads)}});
      for (IndexSchedule& r : reductionClauses(s.model(), 1, 0)) ns.indices.push_back(std::move(r));
      s.add(ns, Group::Plain);
      withClauses(ns);
    }
}

}  // namespace rtcg::space
