// The cyclic rows family (issue 23), where the rows of a triangle hold unequal work: `i: grid.x,
// ...` gives each block consecutive rows, so the last blocks hold the longest ones and leave a
// tail; `i: serial, grid.x G, ...` walks G blocks' rows at a time (row (s * G + blockIdx.x) * T +
// ...), every block's rows spread over the whole triangle.
#include <algorithm>
#include <map>
#include <set>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// The parallel indices whose values set how much work a point holds: those a varying reduction
// bound reads (`i` in trmv's `j in 0..i + 1`, in trmm's `k in 0..i + 1`). Not those of a
// triangular output domain (syrk's `j in 0..i + 1`): there every tile that meets the triangle
// holds the same work, and cyclic block rows, which the traffic model favours, measured slower
// (docs/bench.md); they stay expressible (`i: serial, grid.y G, ...`).
std::set<std::string> workIndices(const NestModel& m) {
  std::map<int, std::string> parallelLoops;
  for (const NestIndex& ni : m.domain())
    if (ni.parallel) parallelLoops[ni.loops.front()->id] = ni.name;
  std::set<std::string> out;
  for (const NestIndex& ni : m.domain()) {
    if (ni.parallel || ni.constantBounds || ni.dataDependent) continue;
    for (const Loop* l : ni.loops)
      for (const Expr& bound : {l->lo, l->hi})
        if (std::optional<AffineForm> f = toAffine(bound))
          for (const auto& [id, c] : f->coeffs)
            if (parallelLoops.count(id)) out.insert(parallelLoops[id]);
  }
  return out;
}

}  // namespace

bool cyclicApplies(NestSpace& s) { return !workIndices(s.model()).empty(); }

// G is 1, 2 or 4 times the block slots (multiprocessors x the candidate's resident blocks) over
// the blocks of the other grid parts, below the blocks it replaces. Siblings of the model's best 4
// candidates of each block of rows (the parts after the grid part: lanes per row with rows on
// thread.y, a block a row, a triangular product's block rows) whose clause of such an index
// starts with a grid part; the balance term (SpaceModel.h) ranks them against consecutive rows.
void cyclicVariants(NestSpace& s) {
  const std::set<std::string> rows = workIndices(s.model());
  std::map<std::string, int> perBlockOfRows;  // siblings made per index and its parts after the grid part
  std::vector<NestSchedule> siblings;
  for (size_t i : s.bestKept(s.kept.size(), /*stable=*/true)) {
    const NestCandidate& c = s.kept[i];
    const int64_t slots = s.options().device.multiprocessors * c.est.blocksPerMultiprocessor;
    for (size_t x = 0; x < c.plan->schedule.indices.size(); ++x) {
      const IndexSchedule& is = c.plan->schedule.indices[x];
      const IndexPlan* ip = c.plan->index(is.index);
      if (!rows.count(is.index) || !ip || !isGridPlacement(is.parts[0].place) || is.parts[0].factor) continue;
      IndexSchedule tail = is;
      tail.parts.erase(tail.parts.begin());
      if (++perBlockOfRows[printIndexSchedule(tail)] > 4) continue;
      const int axis = placementAxis(is.parts[0].place);
      // The blocks of the other grid parts (a triangular output's block columns) share the slots.
      const int64_t others = std::max<int64_t>(1, c.plan->launch.blocks / ip->extents[0]);
      int64_t last = 0;
      for (int64_t k : {1, 2, 4}) {
        const int64_t g = ceilDiv(k * slots, others);
        if (g >= ip->extents[0] || g > s.options().limits.maxGridDim[axis]) break;
        if (g < 2 || g == last) continue;
        last = g;
        NestSchedule ns = c.plan->schedule;
        std::vector<SchedulePart>& parts = ns.indices[x].parts;
        parts[0] = part(Placement::Serial);
        parts.insert(parts.begin() + 1, part(is.parts[0].place, g));
        siblings.push_back(std::move(ns));
      }
    }
  }
  for (const NestSchedule& ns : siblings) s.add(ns, Group::Plain);
}

}  // namespace rtcg::space
