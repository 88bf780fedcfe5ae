// The SIMT tiles family: the parallel indices on threads, register tiles and the grid, the
// reductions serial and unrolled, each placement also staged (space/StagedFamily.cpp); a nest
// without parallel indices on one thread, its reductions unrolled.
#include <algorithm>
#include <string>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

bool isSequential(NestSpace& s) { return s.model().parallel().empty(); }
bool hasParallelIndices(NestSpace& s) { return !s.model().parallel().empty(); }

// A nest without parallel indices runs on one thread: unrolling variants of its reductions.
void sequentialVariants(NestSpace& s) {
  for (int64_t u : unrolls(s.model())) {
    NestSchedule ns;
    ns.indices = reductionClauses(s.model(), u, 0);
    s.add(ns, Group::Plain);
  }
}

namespace {

// The (threads, register tile) splits of the thread.x index `x`.
std::vector<std::pair<int64_t, int64_t>> xSplitsOf(const NestIndex* x) {
  int64_t extX = std::max<int64_t>(1, x->hull.extent());
  // 16 threads along x still store 64-byte runs, and square 16 x 16 blocks balance the
  // shared-memory reads of the two operands of a product.
  std::vector<std::pair<int64_t, int64_t>> xSplits;  // (threads, register tile) along x
  for (int64_t tx : sizesFor({16, 32, 64, 128, 256}, extX))
    for (int64_t rx : sizesFor({1, 2, 4, 8}, ceilDiv(extX, tx))) xSplits.push_back({tx, rx});
  // An extent that is not a power of two (the 20 or 56 nodes of a DG element) leaves a share
  // of the threads of every power-of-two split idle: also the splits into exactly extX points.
  for (int64_t rx = 1; rx <= 8; ++rx) {
    int64_t tx = extX / rx;
    if (extX % rx != 0 || tx < 4 || tx > 256 || (tx & (tx - 1)) == 0) continue;
    xSplits.push_back({tx, rx});
  }
  return xSplits;
}

// One placement of the parallel indices: its unrolled reductions, then its staged variants.
void placementVariants(NestSpace& s, const NestIndex* x, int64_t tx, int64_t rx, const NestIndex* y, int64_t ty,
                       int64_t ry) {
  std::vector<IndexSchedule> pc = parallelClauses(s, x, tx, rx, y, ty, ry);
  for (int64_t u : unrolls(s.model())) {
    // Full unrolls of longer reductions only while the body stays small (see sharedVariants).
    if (u > 8 && u * pointsPerThread(s, pc) > 512) continue;
    NestSchedule ns;
    ns.indices = pc;
    for (IndexSchedule& r : reductionClauses(s.model(), u, 0)) ns.indices.push_back(std::move(r));
    s.add(ns, Group::Plain);
  }
  if (!s.options().allowShared) return;
  // Staged variants also with tiles whose shared-memory reads merge into 4-wide vector loads (x)
  // and spread over the banks (y). The model does not see shared-memory bandwidth, so they tie
  // with the plain layout: generated first, they rank first.
  for (TileLayout layout : {TileLayout{4, true}, TileLayout{4, false}, TileLayout{1, true}}) {
    if (layout.xVector > 1 && (rx % layout.xVector != 0 || tx < 8)) continue;
    if (layout.yCyclic && (!y || ry < 2 || ty < 2)) continue;
    sharedVariants(s, parallelClauses(s, x, tx, rx, y, ty, ry, Placement::ThreadX, layout));
  }
  sharedVariants(s, pc);
}

}  // namespace

void parallelVariants(NestSpace& s) {
  const SpaceOptions& o = s.options();
  auto par = s.model().parallel();
  // Any index with more than one value may run on thread.x; the model ranks coalescing.
  std::vector<const NestIndex*> xs;
  for (const NestIndex* ni : par)
    if (ni->hull.extent() > 1) xs.push_back(ni);
  if (xs.empty()) xs.push_back(par.back());
  // Up to 8 x 8 outputs per thread: the tile that lets a staged matrix product issue one
  // shared-memory load per four FMAs.
  int64_t maxTile = std::min<int64_t>(64, o.limits.maxRegTile);

  // The placements, in order, each a job of its own (NestSpace::runJobs: on several threads,
  // merged in this order). A job names its indices: a shard's model is a copy, whose NestIndex
  // pointers parallelClauses compares.
  struct Placed {
    std::string x, y;  // y: "" for none
    int64_t tx, rx, ty, ry;
    bool wide;  // the 16 x 8 staged tile below (sharedVariants alone), else placementVariants
  };
  std::vector<Placed> placements;
  for (const NestIndex* x : xs) {
    std::vector<const NestIndex*> ys;
    for (const NestIndex* ni : par)
      if (ni != x) ys.push_back(ni);
    if (ys.empty()) ys.push_back(nullptr);
    for (auto [tx, rx] : xSplitsOf(x)) {
      for (const NestIndex* y : ys) {
        int64_t extY = y ? std::max<int64_t>(1, y->hull.extent()) : 1;
        std::vector<int64_t> tys = y ? sizesFor({1, 2, 4, 8, 16}, extY) : std::vector<int64_t>{1};
        for (int64_t ty : tys) {
          if (tx * ty > o.limits.maxThreadsPerBlock) continue;
          std::vector<int64_t> rys = y ? sizesFor({1, 2, 4, 8}, ceilDiv(extY, ty)) : std::vector<int64_t>{1};
          for (int64_t ry : rys) {
            if (rx * ry > maxTile) continue;
            placements.push_back({x->name, y ? y->name : "", tx, rx, ty, ry, false});
          }
          // 16 x 8 points per thread for staged products (two runs of 8 rows, 4-wide vector
          // reads along x), the tile of cuBLAS's large FP32 kernels: 256 x 128 per block of 256
          // threads, one block per multiprocessor; it beat the best 8 x 8 tiles on SGEMM
          // (docs/bench.md, "Decisions and their measurements"). One statement only: three (DG
          // differentiation) would need 384 accumulators.
          if (o.allowShared && y && rx == 8 && tx >= 8 && ty >= 8 && ceilDiv(extY, ty) >= 16 &&
              s.kernel().nests[s.nest()].body.size() == 1 && 128 <= o.limits.maxRegTile)
            placements.push_back({x->name, y->name, tx, rx, ty, 16, true});
        }
      }
    }
  }
  s.runJobs(placements.size(), [&](NestSpace& shard, size_t i) {
    const Placed& p = placements[i];
    const NestIndex* x = shard.model().index(p.x);
    const NestIndex* y = p.y.empty() ? nullptr : shard.model().index(p.y);
    if (p.wide)
      sharedVariants(shard, parallelClauses(shard, x, p.tx, p.rx, y, p.ty, p.ry, Placement::ThreadX, TileLayout{4, false, 2}));
    else
      placementVariants(shard, x, p.tx, p.rx, y, p.ty, p.ry);
  });
}

}  // namespace rtcg::space
