// The outer register tiles family (OuterTile, schedule/Domain.h): for a reduction over a reduction
// (`min(j, sum(e, ...))`), the register tile of a matrix product with the outer combine in each
// step's epilogue.
#include <algorithm>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// The outer reduction of a reduction over a reduction (the index of a hoisted group whose
// reductions hold reductions; "" if none): its index.
std::string outerReductionIndex(const NestSpace& s) {
  NestSchedule plain;
  for (const std::vector<Expr>& g : hoistedReductionGroups(s.kernel(), s.nest(), plain)) {
    if (g[0]->loops.size() != 1) continue;
    for (const Expr& r : g) {
      std::vector<Expr> inner;
      collectReductions(r->operands[0], inner);
      if (!inner.empty()) return g[0]->loops[0].name;
    }
  }
  return "";
}

}  // namespace

bool outerTileApplies(NestSpace& s) {
  if (s.model().parallel().empty()) return false;
  const std::string outer = outerReductionIndex(s);
  return !outer.empty() && s.model().index(outer);
}

// The innermost parallel index x on `reg rx, thread.x tx` (rx in 1..8 outside 16 or 32 threads),
// the outer index j on `serial, thread.y ty, reg R` (R = 2..8 values per thread, ty = 1..16
// threads combined at the end), the inner reductions unrolled (in full up to 64 values),
// rx * R <= 32 accumulators; staged (q once per block, r per step of ty * R values, with two
// buffers) and not. Where the output tiles leave multiprocessors idle, j is also split across G
// blocks per tile (about two blocks per multiprocessor) on the grid axis x leaves free:
// `j: grid.y G, serial S, ...`.
void outerTileVariants(NestSpace& s) {
  const SpaceOptions& o = s.options();
  const NestIndex* oj = s.model().index(outerReductionIndex(s));
  auto par = s.model().parallel();
  const NestIndex* x = par.back();
  for (const NestIndex* ni : par)
    if (ni->hull.extent() > x->hull.extent()) x = ni;
  const int64_t extJ = std::max<int64_t>(1, oj->hull.extent());
  const int64_t innerExt = innermostReductionExtent(s.model());
  const int64_t unroll = innerExt <= 64 ? innerExt : 8;
  for (int64_t tx : {16, 32})
    for (int64_t rx : {1, 2, 4, 8})
      for (int64_t ty : {1, 4, 8, 16})
        for (int64_t R : {2, 4, 8})
          for (bool inside : {false, true}) {
            if (rx * R > 32 || tx * ty < 64 || tx * ty > o.limits.maxThreadsPerBlock || ty * R > extJ) continue;
            if (inside && rx < 4) continue;
            // `inside`: x's points neighbours in the thread (`thread.x tx, reg rx`), read from a
            // transposed tile as vectors.
            const std::vector<IndexSchedule> pc =
                parallelClauses(s, x, tx, rx, nullptr, 1, 1, Placement::ThreadX, TileLayout{inside ? rx : 1});
            const auto [tiles, axis] = outputTiles(s.model(), pc);
            std::vector<int64_t> splits{1};
            if (axis >= 0 && tiles < 2 * o.device.multiprocessors) {
              int64_t blocks = std::min(ceilDiv(2 * o.device.multiprocessors, tiles), extJ / (4 * ty * R));
              if (blocks >= 2) splits.push_back(std::min(blocks, o.limits.maxGridDim[axis]));
            }
            for (int64_t G : splits) {
              NestSchedule ns;
              ns.indices = pc;
              for (const NestIndex* red : s.model().reductions()) {
                IndexSchedule is{red->name, {part(Placement::Serial)}};
                if (red == oj) {
                  if (G > 1) is.parts = {part(kGrids[axis]), part(Placement::Serial, ceilDiv(extJ, G * ty * R))};
                  if (ty > 1) is.parts.push_back(part(Placement::ThreadY, ty));
                  is.parts.push_back(part(Placement::Reg, R));
                } else if (red == s.model().reductions().back() && unroll > 1) {
                  is.parts.push_back(part(Placement::Unroll, unroll));
                }
                ns.indices.push_back(std::move(is));
              }
              const Group group = G > 1 ? Group::CrossBlock : Group::OuterTile;
              if (!inside) s.add(ns, group);
              if (!o.allowShared) continue;
              // Staged: every read-only operand; with `inside`, the two-dimensional ones
              // transposed (q^T: x's points along the rows; r^T: j's values along the rows).
              ns.shared = s.model().readOnlyArrays();
              if (inside)
                for (const std::string& a : ns.shared)
                  if (s.kernel().params[s.kernel().findParam(std::string(stagedArrayName(a)))].shape.size() >= 2)
                    ns.transposed.push_back(a);
              s.add(ns, Group::Shared);
              ns.buffers = 2;
              s.add(ns, Group::Shared);
            }
          }
}

}  // namespace rtcg::space
