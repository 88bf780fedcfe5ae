// The rows family: a group of lanes per row, for a data-dependent innermost reduction (a CSR row,
// whose length only the data know) or one whose bounds vary with the parallel indices (a
// triangle's row `j in 0..i + 1`), and `long_rows: N` beside it and beside one thread per row.
#include <algorithm>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// `long_rows: N` beside one thread per row (`i: grid.x, thread.x T; p: serial; long_rows: N`):
// where most rows hold a few values (a power-law matrix: 2.5 a row on average), lanes sharing a
// row mostly idle and pay a shuffle combine, while a thread of its own has no combine at all;
// what kept one thread per row out was the long rows serialized on it, which the block takes
// here. N 16 or 32: rows up to N loads in a row on one thread, longer ones on the block. The row
// also unrolled by 4 whatever its mean length: a short row's 2 or 3 gathers x[col[p]] then are
// in flight together (guarded loads of one step) instead of one latency each.
void rowPerThreadLongRowVariants(NestSpace& s) {
  auto par = s.model().parallel();
  const NestIndex* x = par.back();
  for (int64_t threads : sizesFor({128, 256}, std::max<int64_t>(1, x->hull.extent())))
    for (int64_t unroll : {4, 1})
      for (int64_t threshold : {32, 16}) {
        NestSchedule ns;
        ns.indices = parallelClauses(s, x, threads, 1, nullptr, 1, 1);
        for (IndexSchedule& r : reductionClauses(s.model(), unroll, 0)) ns.indices.push_back(std::move(r));
        ns.longRows = threshold;
        s.add(ns, Group::Split);
      }
}

}  // namespace

bool rowApplies(NestSpace& s) {
  auto reds = s.model().reductions();
  return !reds.empty() && !s.model().parallel().empty() &&
         (reds.back()->dataDependent || !reds.back()->constantBounds);
}

// L = 2..32 lanes of a warp stride through the row from its start (`p: serial, thread.x L`) and
// combine by shuffles; 128 or 256 threads per block, so 128/L or 256/L rows per block on
// thread.y, the rows' index on the grid. Short rows waste lanes and long rows serialize on few,
// so the tuner measures which L fits the matrix.
void rowVariants(NestSpace& s) {
  auto reds = s.model().reductions();
  auto par = s.model().parallel();
  const NestIndex* r = reds.back();
  for (int64_t lanes : {2, 4, 8, 16, 32})
    for (int64_t threads : {128, 256}) {
      NestSchedule ns;
      ns.indices = parallelClauses(s, par.back(), threads / lanes, 1, nullptr, 1, 1, Placement::ThreadY);
      for (const NestIndex* red : reds) {
        IndexSchedule is{red->name, {part(Placement::Serial)}};
        if (red == r) is.parts.push_back(part(Placement::ThreadX, lanes));
        ns.indices.push_back(std::move(is));
      }
      s.add(ns, Group::Split);
      if (r->dataDependent && lanes <= 8) longRowVariants(s, ns, lanes, threads);
    }
  if (r->dataDependent) rowPerThreadLongRowVariants(s);
}

// `long_rows: N` beside a few lanes per row (CSR-adaptive: the short rows on 2 to 8 lanes, a row
// longer than N on every thread of the block): N the block's threads (a row the block takes in
// one pass) or 16 passes of the lanes. The model gives it no credit (it cannot see the rows), so
// sampling keeps a few of the family and the tuner measures them on the user's matrix.
void longRowVariants(NestSpace& s, const NestSchedule& base, int64_t lanes, int64_t threads) {
  for (int64_t threshold : {threads, 16 * lanes}) {
    NestSchedule ns = base;
    ns.longRows = threshold;
    s.add(ns, Group::Split);  // once: 16 * 8 lanes is 128 threads
  }
}

}  // namespace rtcg::space
