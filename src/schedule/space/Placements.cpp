// The helpers the families of the space share to build placements (space/NestSpace.h).
#include <algorithm>
#include <map>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

std::vector<IndexSchedule> reductionClauses(const NestModel& m, int64_t unroll, int64_t step, bool unrollStep) {
  std::vector<IndexSchedule> out;
  auto reds = m.reductions();
  for (size_t r = 0; r < reds.size(); ++r) {
    IndexSchedule is{reds[r]->name, {part(Placement::Serial)}};
    if (r + 1 == reds.size()) {
      // A staged step may be unrolled (see sharedVariants).
      if (step > 0) is.parts.push_back(part(unrollStep ? Placement::Unroll : Placement::Serial, step));
      else if (unroll > 1) is.parts.push_back(part(Placement::Unroll, unroll));
    }
    out.push_back(std::move(is));
  }
  return out;
}

int64_t innermostReductionExtent(const NestModel& m) {
  auto reds = m.reductions();
  return reds.empty() ? 0 : std::max<int64_t>(1, reds.back()->hull.extent());
}

std::vector<int64_t> unrolls(const NestModel& m) {
  std::vector<int64_t> out{1};
  int64_t ext = innermostReductionExtent(m);
  for (int64_t u : {4, 8})
    if (ext >= u) out.push_back(u);
  // A short reduction (a DG element's nodes) unrolled in full, without a remainder.
  if (ext > 8 && ext <= 64) out.push_back(ext);
  return out;
}

int64_t partProduct(const std::vector<IndexSchedule>& pc, bool (*placed)(Placement)) {
  int64_t product = 1;
  for (const IndexSchedule& is : pc)
    for (const SchedulePart& sp : is.parts)
      if (placed(sp.place)) product *= sp.factor.value_or(1);
  return product;
}

int64_t pointsPerThread(const NestSpace& s, const std::vector<IndexSchedule>& pc) {
  return std::max<int64_t>(1, (int64_t)s.kernel().nests[s.nest()].body.size()) * partProduct(pc, isReg);
}

std::vector<int64_t> sizesFor(std::initializer_list<int64_t> options, int64_t extent) {
  std::vector<int64_t> out;
  for (int64_t s : options) {
    if (!out.empty() && out.back() >= extent) break;
    out.push_back(s);
  }
  return out;
}

std::vector<IndexSchedule> parallelClauses(const NestSpace& s, const NestIndex* x, int64_t tx, int64_t rx,
                                           const NestIndex* y, int64_t ty, int64_t ry, Placement xThread,
                                           TileLayout layout) {
  auto par = s.model().parallel();
  std::map<std::string, std::vector<SchedulePart>> inner;  // parts after the first, by index
  inner[x->name] = {};
  int64_t xOuter = rx / layout.xVector;
  if (xOuter > 1) inner[x->name].push_back(part(Placement::Reg, xOuter));
  if (tx > 1) inner[x->name].push_back(part(xThread, tx));
  if (layout.xVector > 1) inner[x->name].push_back(part(Placement::Reg, layout.xVector));
  if (y) {
    inner[y->name] = {};
    if (ry > 1 && layout.yCyclic) inner[y->name].push_back(part(Placement::Reg, ry));
    if (ry > 1 && !layout.yCyclic && layout.yGroups > 1) inner[y->name].push_back(part(Placement::Reg, layout.yGroups));
    if (ty > 1) inner[y->name].push_back(part(Placement::ThreadY, ty));
    if (ry > 1 && !layout.yCyclic) inner[y->name].push_back(part(Placement::Reg, ry / layout.yGroups));
  }
  // Grid axes go to x, y, then the others from the innermost out.
  std::vector<const NestIndex*> order{x};
  if (y) order.push_back(y);
  for (size_t p = par.size(); p-- > 0;)
    if (par[p] != x && par[p] != y) order.push_back(par[p]);
  int nextAxis = 0;
  std::map<std::string, IndexSchedule> clauses;
  for (const NestIndex* ni : order) {
    std::vector<SchedulePart> rest = inner[ni->name];
    int64_t covered = 1;
    for (const SchedulePart& sp : rest) covered *= *sp.factor;
    int64_t blocks = ceilDiv(std::max<int64_t>(1, ni->hull.extent()), covered);
    IndexSchedule is{ni->name, {}};
    if (blocks <= 1 || nextAxis >= 3) {
      is.parts.push_back(part(Placement::Serial));
    } else {
      int axis = nextAxis++;
      is.parts.push_back(part(kGrids[axis]));
      int64_t maxGrid = s.options().limits.maxGridDim[axis];
      if (blocks > maxGrid) is.parts.push_back(part(Placement::Serial, ceilDiv(blocks, maxGrid)));
    }
    for (const SchedulePart& sp : rest) is.parts.push_back(sp);
    clauses[ni->name] = std::move(is);
  }
  std::vector<IndexSchedule> out;
  for (const NestIndex* ni : par) out.push_back(clauses[ni->name]);
  return out;
}

std::pair<int64_t, int> outputTiles(const NestModel& m, const std::vector<IndexSchedule>& pc) {
  int64_t tiles = 1;
  bool used[3] = {false, false, false};
  for (const IndexSchedule& is : pc) {
    const NestIndex* ni = m.index(is.index);
    std::vector<int64_t> ext = partExtents(is, std::max<int64_t>(1, ni->hull.extent()));
    for (size_t p = 0; p < is.parts.size(); ++p)
      if (isGridPlacement(is.parts[p].place)) {
        used[placementAxis(is.parts[p].place)] = true;
        tiles *= ext[p];
      }
  }
  return {tiles, !used[0] ? 0 : !used[1] ? 1 : !used[2] ? 2 : -1};
}

std::vector<int64_t> outputThreadYSizes(const NestIndex* innermost) {
  std::vector<int64_t> sizes{1};
  if (innermost)
    for (int64_t ty : sizesFor({2, 4, 8}, std::max<int64_t>(1, innermost->hull.extent())))
      if (ty > 1) sizes.push_back(ty);
  return sizes;
}

}  // namespace rtcg::space
