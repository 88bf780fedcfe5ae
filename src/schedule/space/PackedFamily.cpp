// The packed-lanes family: where the innermost parallel index is shorter than a warp (the p nodes
// along one axis of a hexahedral element's p x p x p, p = 5..9: sum factorisation), the SIMT
// tiles family leaves most of thread.x idle or pads it to 16. Here the innermost two or three
// parallel indices each run whole on a thread axis (thread.x the innermost), so that a warp's
// lanes walk p^2 or p^3 neighbouring outputs; the outermost index goes on the grid, with serial
// positions, or on thread.z beside two packed indices; an index between them runs serial or
// as a whole register tile.
// Reductions unrolled, each placement also staged.
#include <algorithm>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// The most points of the middle indices a thread holds in registers: sum factorisation's p = 9
// rows of one element's axis, each thread's 9 accumulators (measured on an H200: `a: reg` beside
// i, b packed ran 0.091 ms against 0.132 with `a: serial`; docs/bench.md, session 41).
constexpr int64_t kRegisterRows = 16;

// The innermost `count` parallel indices whole on thread.x, .y, .z (innermost first); the
// outermost on grid.x with `serial` positions and `threadZ` threads; the others serial, or
// (`registers`) each a whole register tile.
std::vector<IndexSchedule> packedClauses(const NestSpace& s, size_t count, int64_t serial, int64_t threadZ,
                                         bool registers) {
  const auto par = s.model().parallel();
  const Placement axes[] = {Placement::ThreadX, Placement::ThreadY, Placement::ThreadZ};
  std::vector<IndexSchedule> out;
  for (size_t p = 0; p < par.size(); ++p) {
    IndexSchedule is{par[p]->name, {}};
    const size_t fromInside = par.size() - 1 - p;
    if (fromInside < count) {
      is.parts.push_back(part(axes[fromInside]));
    } else if (p == 0) {
      is.parts.push_back(part(Placement::GridX));
      if (serial > 1) is.parts.push_back(part(Placement::Serial, serial));
      if (threadZ > 1) is.parts.push_back(part(Placement::ThreadZ, threadZ));
    } else {
      is.parts.push_back(part(registers ? Placement::Reg : Placement::Serial));
    }
    out.push_back(std::move(is));
  }
  return out;
}

// The reduction's unrolls, and its whole extent where that is short (the p values of a node row:
// unrolled without a remainder).
std::vector<int64_t> unrollsOf(const NestSpace& s) {
  std::vector<int64_t> out = unrolls(s.model());
  const int64_t whole = innermostReductionExtent(s.model());
  if (whole > 1 && whole <= 64 && std::find(out.begin(), out.end(), whole) == out.end()) out.push_back(whole);
  return out;
}

// The points a thread holds where the indices between the packed ones and the outermost are
// register tiles.
int64_t middlePoints(const std::vector<const NestIndex*>& par, size_t count) {
  int64_t points = 1;
  for (size_t p = 1; p + count < par.size(); ++p) points *= std::max<int64_t>(1, par[p]->hull.extent());
  return points;
}

}  // namespace

// Three or more parallel indices, the innermost of 2 to 31 values.
bool packedApplies(NestSpace& s) {
  const auto par = s.model().parallel();
  if (par.size() < 3) return false;
  const int64_t inner = par.back()->hull.extent();
  return inner >= 2 && inner < 32;
}

void packedVariants(NestSpace& s) {
  const auto par = s.model().parallel();
  const SpaceOptions& o = s.options();
  const int64_t outer = std::max<int64_t>(1, par[0]->hull.extent());
  for (size_t count : {size_t(3), size_t(2)}) {
    if (count + 1 > par.size()) continue;
    int64_t threads = 1;
    for (size_t p = par.size() - count; p < par.size(); ++p) threads *= std::max<int64_t>(1, par[p]->hull.extent());
    // Fewer threads than a warp would idle its lanes again; more than a block cannot run.
    if (threads < 32 || threads > o.limits.maxThreadsPerBlock) continue;
    for (int64_t serial : {1, 4})
      for (int64_t threadZ : {1, 2, 4}) {
        if (threadZ > 1 && (count == 3 || threads * threadZ > o.limits.maxThreadsPerBlock)) continue;
        if (serial * threadZ > outer) continue;
        for (bool registers : {false, true}) {
          // Register tiles need an index between the packed ones and the outermost.
          if (registers && (par.size() == count + 1 || middlePoints(par, count) > kRegisterRows)) continue;
          std::vector<IndexSchedule> pc = packedClauses(s, count, serial, threadZ, registers);
          for (int64_t u : unrollsOf(s)) {
            NestSchedule ns;
            ns.indices = pc;
            for (IndexSchedule& r : reductionClauses(s.model(), u, 0)) ns.indices.push_back(std::move(r));
            s.add(ns, Group::Plain);
          }
          if (o.allowShared) sharedVariants(s, pc);
        }
      }
  }
}

}  // namespace rtcg::space
