#include "schedule/Space.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "schedule/SpaceModel.h"
#include "schedule/SpaceScan.h"
#include "support/Error.h"

namespace rtcg {

namespace {

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

SchedulePart part(Placement p, std::optional<int64_t> factor = std::nullopt) { return {p, factor}; }

std::string micros(double seconds) {
  double us = seconds * 1e6;
  return us >= 100 ? fmt::format("{:.0f} us", us) : fmt::format("{:.3g} us", us);
}

// One schedule of one nest, with the model's estimate.
struct NestCandidate {
  std::string text;
  NestEstimate est;
  bool isDefault = false;
  std::shared_ptr<const NestPlan> plan;  // its schedule too
};

// How the register tile of a parallel index sits around its thread part.
struct TileLayout {
  int64_t xVector = 1;   // x: this many neighbouring points per thread (reg inside thread.x)
  bool yCyclic = false;  // y: the register tile outside thread.y instead of inside it
  int64_t yGroups = 1;   // y (not cyclic): the tile in this many runs, outside thread.y
};

// Enumerates the schedules of one nest. Everything generated is validated against the kernel
// (the other nests take their default schedule) and estimated by the model; what fails
// validation or the constraints is recorded with its reason.
class NestSpace {
 public:
  NestSpace(const Kernel& k, int nest, const SpaceOptions& o, const Schedule& defaults)
      : k_(k), nest_(nest), o_(o), defaults_(defaults), model_(k, nest) {
    // The other nests keep their default schedules: their reasons (none, unless the limits exclude
    // a default) are planned once and reported around this nest's, as validateSchedule orders them.
    for (size_t n = 0; n < defaults.nests.size(); ++n)
      if ((int)n != nest)
        for (std::string& r : planNest(k, (int)n, defaults.nests[n], o.limits).reasons)
          ((int)n < nest ? reasonsBefore_ : reasonsAfter_).push_back(std::move(r));
  }

  std::vector<NestCandidate> kept;
  std::vector<PrunedCandidate> pruned;
  int64_t enumerated = 0;
  bool sharedOffered = false, splitOffered = false, crossBlockOffered = false;

  void run() {
    add(defaults_.nests[nest_], Family::Plain, /*isDefault=*/true);
    for (const NestSchedule& ns : scanVariants(k_, nest_, o_)) add(ns, Family::Plain);  // SpaceScan.h
    if (model_.ok() && pointwiseOffered(k_, nest_)) {
      if (model_.parallel().empty())
        sequentialVariants();
      else
        parallelVariants();
      splitVariants();
      crossBlockVariants();
      outerTileVariants();
      rowVariants();
      cyclicVariants();
      streamingVariants();
      accumulationVariants();
      mmaVariants();
    }
    finishFamilies();
    prune();
  }

 private:
  enum class Family { Plain, Shared, Split, CrossBlock, OuterTile };

  const Kernel& k_;
  int nest_;
  const SpaceOptions& o_;
  const Schedule& defaults_;
  NestModel model_;
  std::set<std::string> seen_;
  std::map<Family, bool> accepted_;                          // some variant of the family is legal
  std::map<Family, std::vector<PrunedCandidate>> rejected_;  // its illegal variants
  std::vector<std::string> reasonsBefore_, reasonsAfter_;    // of the other nests' defaults
  // Plans made before their variant is added (probes of its staging), by text: add takes them.
  std::map<std::string, NestPlanResult> planned_;

  void finishFamilies() {
    sharedOffered = accepted_[Family::Shared];
    splitOffered = accepted_[Family::Split];
    crossBlockOffered = accepted_[Family::CrossBlock];
    for (auto& [family, list] : rejected_) {
      if (list.empty()) continue;
      if (accepted_[family]) {
        for (PrunedCandidate& p : list) pruned.push_back(std::move(p));
      } else {
        const char* what = family == Family::Shared      ? "shared-memory staging"
                           : family == Family::Split     ? "split reductions"
                           : family == Family::OuterTile ? "outer register tiles"
                                                         : "reductions split across blocks";
        pruned.push_back({list.front().text, fmt::format("{} not offered ({} variant{}): {}", what, list.size(),
                                                         list.size() == 1 ? "" : "s", list.front().reason)});
      }
    }
  }

  std::string where() const { return k_.nests.size() > 1 ? fmt::format("nest {}: ", nest_) : ""; }

  // The plan of a variant of this nest (probed earlier or made now), taken out of the cache.
  NestPlanResult takePlan(const NestSchedule& ns, const std::string& text) {
    auto hit = planned_.find(text);
    if (hit == planned_.end()) return planNest(k_, nest_, ns, o_.limits);
    NestPlanResult r = std::move(hit->second);
    planned_.erase(hit);
    return r;
  }

  // The staging of a variant about to be generated, planned once: its plan's, or where the
  // variant is rejected before its tiles are planned (a split-K share past the scratch limit),
  // planStaging's, as the generation has always seen it.
  StagingPlan stagingOf(const NestSchedule& ns) {
    std::string text = printNestSchedule(ns);
    auto hit = planned_.find(text);
    if (hit == planned_.end()) hit = planned_.emplace(text, planNest(k_, nest_, ns, o_.limits)).first;
    const NestPlanResult& r = hit->second;
    if (r.plan) return r.plan->staging;
    if (r.staging) return *r.staging;
    return planStaging(k_, nest_, ns, &model_.domain());
  }

  // Adds a generated nest schedule (once), with its plan. Variants of a family the validator
  // rejects wholesale (the emitter does not support it yet) are summarized in one pruned entry by
  // finishFamilies.
  bool add(const NestSchedule& ns, Family family, bool isDefault = false) {
    std::string text = printNestSchedule(ns);
    if (!seen_.insert(text).second) return false;
    ++enumerated;
    NestPlanResult planned = takePlan(ns, text);
    std::vector<std::string> reasons = reasonsBefore_;
    reasons.insert(reasons.end(), planned.reasons.begin(), planned.reasons.end());
    reasons.insert(reasons.end(), reasonsAfter_.begin(), reasonsAfter_.end());
    if (!reasons.empty()) {
      // The default is legal under the default limits; tighter user limits may still exclude it.
      PrunedCandidate p{where() + text, (isDefault ? "default schedule: " : "") + reasons.front()};
      if (family == Family::Plain) pruned.push_back(std::move(p));
      else rejected_[family].push_back(std::move(p));
      return false;
    }
    if (family != Family::Plain) accepted_[family] = true;
    auto plan = std::make_shared<const NestPlan>(std::move(*planned.plan));
    if (family == Family::Shared && !ns.shared.empty()) {
      auto bytes = model_.stagedBytes(*plan, ns.shared);
      if (bytes && *bytes > o_.limits.maxSharedBytes) {
        pruned.push_back({where() + text, fmt::format("staging needs {} bytes of shared memory (at most {})",
                                                      *bytes, o_.limits.maxSharedBytes)});
        return false;
      }
    }
    NestEstimate est = model_.estimate(*plan, o_.device);
    kept.push_back({text, std::move(est), isDefault, std::move(plan)});
    return true;
  }

  // Reduction clauses: every reduction serial, the innermost one unrolled by `unroll` (or, with
  // `step` > 0, tiled into steps of `step` for staging).
  std::vector<IndexSchedule> reductionClauses(int64_t unroll, int64_t step, bool unrollStep = false) const {
    std::vector<IndexSchedule> out;
    auto reds = model_.reductions();
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

  int64_t innermostReductionExtent() const {
    auto reds = model_.reductions();
    return reds.empty() ? 0 : std::max<int64_t>(1, reds.back()->hull.extent());
  }

  // Unroll factors worth trying for the innermost reduction.
  std::vector<int64_t> unrolls() const {
    std::vector<int64_t> out{1};
    int64_t ext = innermostReductionExtent();
    for (int64_t u : {4, 8})
      if (ext >= u) out.push_back(u);
    // A short reduction (a DG element's nodes) unrolled in full, without a remainder.
    if (ext > 8 && ext <= 64) out.push_back(ext);
    return out;
  }

  // Product of the factors of the parts of `pc` placed where `placed` says.
  static int64_t partProduct(const std::vector<IndexSchedule>& pc, bool (*placed)(Placement)) {
    int64_t product = 1;
    for (const IndexSchedule& is : pc)
      for (const SchedulePart& sp : is.parts)
        if (placed(sp.place)) product *= sp.factor.value_or(1);
    return product;
  }
  static bool isReg(Placement p) { return p == Placement::Reg; }

  // Statements times register-tile points: the size of one step of an unrolled reduction body.
  int64_t pointsPerThread(const std::vector<IndexSchedule>& pc) const {
    return std::max<int64_t>(1, (int64_t)k_.nests[nest_].body.size()) * partProduct(pc, isReg);
  }

  // Sizes from `options` worth trying for an extent: larger ones only while the previous size
  // does not already cover it.
  static std::vector<int64_t> sizesFor(std::initializer_list<int64_t> options, int64_t extent) {
    std::vector<int64_t> out;
    for (int64_t s : options) {
      if (!out.empty() && out.back() >= extent) break;
      out.push_back(s);
    }
    return out;
  }

  // A nest without parallel indices runs on one thread: unrolling variants of its reductions.
  void sequentialVariants() {
    for (int64_t u : unrolls()) {
      NestSchedule ns;
      ns.indices = reductionClauses(u, 0);
      add(ns, Family::Plain);
    }
  }

  // The placement of the parallel indices: `x` on thread.x (T threads, a register tile of rx
  // outside it so that neighbouring threads still touch neighbouring points; with
  // layout.xVector = v, v of those points neighbours inside the thread part, which the emitted
  // code reads from shared memory as vectors), `y` (may be null) on thread.y with a register
  // tile of ry inside it (or outside, layout.yCyclic: neighbouring threads on neighbouring rows,
  // in different shared-memory banks), the rest on grid axes (x first, then y, z) and serial
  // loops past three axes or past the 65535 blocks of grid.y/z.
  std::vector<IndexSchedule> parallelClauses(const NestIndex* x, int64_t tx, int64_t rx, const NestIndex* y,
                                             int64_t ty, int64_t ry, Placement xThread = Placement::ThreadX,
                                             TileLayout layout = {}) const {
    auto par = model_.parallel();
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
    static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
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
        is.parts.push_back(part(grids[axis]));
        int64_t maxGrid = o_.limits.maxGridDim[axis];
        if (blocks > maxGrid) is.parts.push_back(part(Placement::Serial, ceilDiv(blocks, maxGrid)));
      }
      for (const SchedulePart& sp : rest) is.parts.push_back(sp);
      clauses[ni->name] = std::move(is);
    }
    std::vector<IndexSchedule> out;
    for (const NestIndex* ni : par) out.push_back(clauses[ni->name]);
    return out;
  }

  void parallelVariants() {
    auto par = model_.parallel();
    // Any index with more than one value may run on thread.x; the model ranks coalescing.
    std::vector<const NestIndex*> xs;
    for (const NestIndex* ni : par)
      if (ni->hull.extent() > 1) xs.push_back(ni);
    if (xs.empty()) xs.push_back(par.back());
    // Up to 8 x 8 outputs per thread: the tile that lets a staged matrix product issue one
    // shared-memory load per four FMAs.
    int64_t maxTile = std::min<int64_t>(64, o_.limits.maxRegTile);

    for (const NestIndex* x : xs) {
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
      std::vector<const NestIndex*> ys;
      for (const NestIndex* ni : par)
        if (ni != x) ys.push_back(ni);
      if (ys.empty()) ys.push_back(nullptr);
      for (auto [tx, rx] : xSplits) {
        for (const NestIndex* y : ys) {
          int64_t extY = y ? std::max<int64_t>(1, y->hull.extent()) : 1;
          std::vector<int64_t> tys = y ? sizesFor({1, 2, 4, 8, 16}, extY) : std::vector<int64_t>{1};
          for (int64_t ty : tys) {
            if (tx * ty > o_.limits.maxThreadsPerBlock) continue;
            std::vector<int64_t> rys = y ? sizesFor({1, 2, 4, 8}, ceilDiv(extY, ty)) : std::vector<int64_t>{1};
            for (int64_t ry : rys) {
              if (rx * ry > maxTile) continue;
              std::vector<IndexSchedule> pc = parallelClauses(x, tx, rx, y, ty, ry);
              for (int64_t u : unrolls()) {
                // Full unrolls of longer reductions only while the body stays small (see
                // sharedVariants).
                if (u > 8 && u * pointsPerThread(pc) > 512) continue;
                NestSchedule ns;
                ns.indices = pc;
                for (IndexSchedule& r : reductionClauses(u, 0)) ns.indices.push_back(std::move(r));
                add(ns, Family::Plain);
              }
              if (!o_.allowShared) continue;
              // Staged variants also with tiles whose shared-memory reads merge into 4-wide vector
              // loads (x) and spread over the banks (y). The model does not see shared-memory
              // bandwidth, so they tie with the plain layout: generated first, they rank first.
              for (TileLayout layout : {TileLayout{4, true}, TileLayout{4, false}, TileLayout{1, true}}) {
                if (layout.xVector > 1 && (rx % layout.xVector != 0 || tx < 8)) continue;
                if (layout.yCyclic && (!y || ry < 2 || ty < 2)) continue;
                sharedVariants(parallelClauses(x, tx, rx, y, ty, ry, Placement::ThreadX, layout));
              }
              sharedVariants(pc);
            }
            // 16 x 8 points per thread for staged products (two runs of 8 rows, 4-wide vector
            // reads along x), the tile of cuBLAS's large FP32 kernels: 256 x 128 per block of 256
            // threads, one block per multiprocessor. On an H100 it ran SGEMM n=4096 in 2.90 ms and
            // n=2048 in 0.370 ms, against 3.02 and 0.386 ms for the best 8 x 8 tiles.
            // One statement only: three (DG differentiation) would need 384 accumulators.
            if (o_.allowShared && y && rx == 8 && tx >= 8 && ty >= 8 && ceilDiv(extY, ty) >= 16 &&
                k_.nests[nest_].body.size() == 1 && 128 <= o_.limits.maxRegTile)
              sharedVariants(parallelClauses(x, tx, rx, y, ty, 16, Placement::ThreadX, TileLayout{4, false, 2}));
          }
        }
      }
    }
  }

  // `stores: streaming` siblings of the model's best few candidates: the model gives streaming
  // stores no credit (SpaceModel.h), so they tie with their siblings, and sampling measures a few
  // of the family; siblings of every candidate would only double the space. None when the nest
  // has no store that can stream (the first sibling's plan says so).
  void streamingVariants() {
    std::vector<size_t> order;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i].est.blocksPerMultiprocessor > 0) order.push_back(i);  // (the others are pruned)
    const size_t n = std::min<size_t>(4, order.size());
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](size_t a, size_t b) { return kept[a].est.seconds < kept[b].est.seconds; });
    std::vector<NestSchedule> siblings;
    for (size_t i = 0; i < n; ++i)
      if (!kept[order[i]].plan->schedule.streamingStores) siblings.push_back(kept[order[i]].plan->schedule);
    for (NestSchedule& ns : siblings) {
      ns.streamingStores = true;
      const size_t before = pruned.size();
      if (!add(ns, Family::Plain) && pruned.size() > before) return;  // no store streams here
    }
  }

  // A nest that accumulates (`h[bin[i]] += w[i]`): its updates as global atomics, in the block's
  // copy in shared memory (`accumulate: shared`, where the plan finds the copy fits), warp-aggregated
  // (`aggregate: warp`), or both, on siblings of the model's best few candidates; and for a nest of
  // one parallel index, grid-stride loops of a few blocks per multiprocessor (`i: serial, grid.x G,
  // thread.x T`), where each block makes enough updates to pay for its copy's set-up and merge.
  void accumulationVariants() {
    if (accumulationStatements(k_, nest_).empty()) return;
    auto withClauses = [&](NestSchedule ns) {
      for (int c = 1; c < 4; ++c) {
        ns.privatizeAccumulation = c & 1;
        ns.warpAggregation = c & 2;
        add(ns, Family::Plain);
      }
    };
    std::vector<size_t> order;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i].est.blocksPerMultiprocessor > 0) order.push_back(i);
    const size_t n = std::min<size_t>(4, order.size());
    std::partial_sort(order.begin(), order.begin() + n, order.end(),
                      [&](size_t a, size_t b) { return kept[a].est.seconds < kept[b].est.seconds; });
    std::vector<NestSchedule> best;
    for (size_t i = 0; i < n; ++i) best.push_back(kept[order[i]].plan->schedule);
    for (const NestSchedule& ns : best) withClauses(ns);
    const auto par = model_.parallel();
    if (par.size() != 1) return;
    for (int64_t threads : {256, 512})
      for (int64_t perSM : {2, 4, 8}) {
        if (threads > o_.limits.maxThreadsPerBlock) continue;
        NestSchedule ns;
        ns.indices.push_back(IndexSchedule{par[0]->name, {part(Placement::Serial), part(Placement::GridX, perSM * o_.device.multiprocessors),
                                                          part(Placement::ThreadX, threads)}});
        for (IndexSchedule& r : reductionClauses(1, 0)) ns.indices.push_back(std::move(r));
        add(ns, Family::Plain);
        withClauses(ns);
      }
  }

  // A staged variant, and the same with the statements' own loads issued ahead of the reductions
  // (`loads: early`) where the statements read something outside them (DG lifting's old rhs):
  // with `withEarlyLoads` (the first tile layout, no blocks_per_sm), while they hold at most 8
  // registers per thread across the reductions (one per load and register point).
  void addStaged(const NestSchedule& ns, bool withEarlyLoads = true) {
    if (!add(ns, Family::Shared) || !withEarlyLoads) return;
    const size_t loads = earlyStatementLoads(k_, nest_, ns).size();
    if (loads == 0 || (int64_t)loads * partProduct(ns.indices, isReg) > 8) return;
    // Legal exactly when `ns` is (just added) and its reductions are computed ahead of the
    // statements in this block (the plan's `loads:` checks).
    if (kept.back().est.crossBlocks > 1 || kept.back().plan->groups.empty()) return;
    NestSchedule early = ns;
    early.earlyLoads = true;
    add(early, Family::Shared);
  }

  // Staging variants of one placement of the parallel indices: the read-only operands the block
  // reuses (requests per distinct element >= 4) or reads uncoalesced (>= 4x sector waste) are
  // staged, all together and, when several qualify, each alone; with reduction steps 8, 16, 32.
  void sharedVariants(const std::vector<IndexSchedule>& pc) {
    NestSchedule plain;
    plain.indices = pc;
    for (IndexSchedule& r : reductionClauses(1, 0)) plain.indices.push_back(std::move(r));
    NestEstimate e = model_.estimate(plain, o_.device);
    std::vector<std::string> worth;
    for (const std::string& a : model_.readOnlyArrays()) {
      auto r = e.reuse.find(a);
      auto c = e.coalescing.find(a);
      if ((r != e.reuse.end() && r->second >= 4) || (c != e.coalescing.end() && c->second >= 4)) worth.push_back(a);
    }
    if (worth.empty()) return;
    std::vector<std::vector<std::string>> sets{worth};
    // Every read-only operand staged too: the model counts a warp's broadcast reads once, so it
    // undervalues staging an operand (a's rows in a matrix product) that the L1 serves only
    // partly once register tiles make each thread read several rows.
    const std::vector<std::string>& everything = model_.readOnlyArrays();
    if (everything.size() > worth.size() && everything.size() <= 4) sets.push_back(everything);
    if (worth.size() > 1)
      for (const std::string& a : worth) sets.push_back({a});
    int64_t ext = innermostReductionExtent();
    std::vector<int64_t> steps;
    if (ext > 0) steps = sizesFor({8, 16, 32}, ext);
    else steps = {0};  // no reduction: the block's whole footprint is staged once
    // A short reduction also in one step, without a remainder.
    if (ext > 8 && ext <= 64 && std::find(steps.begin(), steps.end(), ext) == steps.end()) steps.push_back(ext);
    // A longer one (up to 192: DG lifting's 84 and 144 face values, differentiation's 84 to 165
    // nodes) in one step only for blocks whose positions are pipelined (below): one step per
    // position is what lets them copy the next position's tiles during this one's arithmetic.
    const bool longOneStep = ext > 64 && ext <= 192;
    if (longOneStep) steps.push_back(ext);
    // A staged step is unrolled while the unrolled body stays small (statements times register
    // tile times step at most 512): the unrolled loop keeps the shared-memory addresses in
    // immediates, but larger bodies make NVRTC take seconds per candidate (measured: 2 candidates/s
    // on 16 processes for 8 x 8 tiles unrolled 32 times).
    int64_t tile = pointsPerThread(pc);
    int64_t regTile = partProduct(pc, isReg), threads = partProduct(pc, isThreadPlacement);
    // The whole reduction in one step is unrolled up to three times further (1536 points): it is
    // the block's only loop over the reduction, and NVRTC compiles it in under a second (DG
    // differentiation N=5, 3 x 8 x 56 points: 0.9 s). On an H100, DG N=4 pipelined over positions
    // ran 0.158 ms unrolled against 0.228 ms as a loop.
    // A step of 8 is unrolled also for 16 x 8 register tiles (1024 points, 0.5 s). Not for the 8 x 4
    // tiles of three statements (DG differentiation, 768 points): unrolled, they ran 3% faster on
    // an H100 (N=7 0.366 against 0.378 ms) but still slower than the unrolled 8 x 2 tiles (0.358 ms),
    // and the model, which then ranked them first, left the measured winners out of small samples.
    auto unrollStep = [&](int64_t step) {
      return (step <= 8 && regTile > 64) || step * tile <= (step >= ext ? 1536 : 512);
    };
    for (const auto& set : sets)
      for (int64_t step : steps)
        for (const std::optional<SplitK>& share : splitKShares(pc, step, set)) {
          NestSchedule ns;
          ns.indices = pc;
          for (IndexSchedule& r : reductionClauses(1, step, unrollStep(step))) ns.indices.push_back(std::move(r));
          if (share) {
            // Split-K: `r: grid.<axis>, serial S, <step>`, each block S steps of the reduction.
            IndexSchedule& r = ns.indices.back();
            r.parts.front() = part(Placement::Serial, share->stepsPerBlock);
            r.parts.insert(r.parts.begin(), part(share->grid));
          }
          ns.shared = set;
          // Tiles staged per step also double-buffered (one barrier per step instead of two) while
          // both buffers fit. Neither wins everywhere: on an H100, a 128 x 128 SGEMM tile (n=2048)
          // ran 0.439 ms with one buffer and 0.460 ms with two, so both are measured.
          StagingPlan single = stagingOf(ns);
          bool steps = std::any_of(single.arrays.begin(), single.arrays.end(),
                                   [](const StagedArray& sa) { return sa.level == StageLevel::Step; });
          // Also three buffers filled by cp.async two steps ahead ('copy: async'): more bytes in
          // flight without registers to hold them (H100: DG lifting N=5 0.204 -> 0.188 ms; but a
          // 128 x 128 SGEMM tile 3.02 -> 3.55 ms), when they fit. Generated after the others, so
          // they rank behind the ties (see the model).
          // Split-K shares only in the first layout and without cp.async (and for steps of up to
          // 16, splitKShares): at small sizes nearly every large tile qualifies, and the space
          // would double.
          std::vector<std::pair<int64_t, bool>> bufferCounts{{1, false}};
          if (steps && single.errors.empty()) {
            // cp.async copies 4 bytes or more: 16-bit tiles are not copied by it (the plan's reason).
            const bool twoByteTile = std::any_of(single.arrays.begin(), single.arrays.end(), [&](const StagedArray& sa) {
              return typeBytes(k_.params[sa.array].type) < 4;
            });
            for (auto [buffers, async] : {std::pair<int64_t, bool>{2, false}, {3, true}}) {
              if ((share || twoByteTile) && async) continue;
              NestSchedule multi = ns;
              multi.buffers = buffers;
              multi.asyncCopy = async;
              if (stagingOf(multi).bytes <= o_.limits.maxSharedBytes)
                bufferCounts.push_back({buffers, async});
            }
          }
          // Step tiles whose first dimension a thread's register points run along (contiguously,
          // in vector-sized runs) and whose second is the reduction: stored transposed, a step
          // reads one vector per value of the reduction and holds one value's operands at a time
          // (fewer registers: 128 instead of 177 for an 8 x 8 matrix-product tile). Generated
          // first, so that it ranks ahead of the untransposed tie.
          std::vector<std::string> transposable;
          for (const StagedArray& sa : single.arrays)
            if (runsAlongFirstDimension(pc, sa)) transposable.push_back(stagingEntry(k_, sa));
          std::vector<std::vector<std::string>> layouts;
          if (!transposable.empty()) layouts.push_back(transposable);
          layouts.push_back({});
          if (share) layouts.resize(1);
          // One step for the whole reduction, multi-buffered: also blocks that walk several
          // positions of their largest grid index, copying the next positions' tiles while they
          // compute one (positions pipelined, see the emitter), in the first layout.
          if (!share && step >= ext && ext > 0 && bufferCounts.size() > 1)
            for (int64_t positions : {4, 16})
              if (auto serialPc = withSerialPositions(pc, positions)) {
                NestSchedule pipelined = ns;
                pipelined.indices = *serialPc;
                for (IndexSchedule& r : reductionClauses(1, step, unrollStep(step))) pipelined.indices.push_back(std::move(r));
                pipelined.transposed = layouts.front();
                if (!stepTileMovesWithSerial(pipelined)) break;  // nothing to pipeline (LIFT alone)
                for (auto [buffers, async] : bufferCounts) {
                  if (buffers < 2) continue;
                  pipelined.buffers = buffers;
                  pipelined.asyncCopy = async;
                  addStaged(pipelined);
                }
              }
          if (longOneStep && step == ext) continue;  // only pipelined (above)
          for (const std::vector<std::string>& transposed : layouts)
            for (auto [buffers, async] : bufferCounts) {
              ns.transposed = transposed;
              ns.buffers = buffers;
              ns.asyncCopy = async;
              ns.blocksPerSM = 0;
              addStaged(ns, transposed == layouts.front());
              // Large register tiles leave room for one block per multiprocessor, whose warps all
              // wait at the staging barriers: also compiled for two blocks (fewer registers per
              // thread), where the cap that gives still holds the tile and about 48 registers of
              // operands and addresses (below that, NVCC spills: 512 threads of 64 points got 64).
              int64_t cap = o_.device.registersPerMultiprocessor / (threads * 2);
              if (regTile >= 32 && threads >= 128 && cap >= regTile + 48) {
                ns.blocksPerSM = 2;
                addStaged(ns, false);
              }
            }
        }
    planned_.clear();  // probes whose variants were not generated
  }

  // Whether a tile staged per reduction step moves with the serial part of a parallel index (the
  // emitter then pipelines those positions; a tile that stays is copied once per position).
  bool stepTileMovesWithSerial(const NestSchedule& ns) {
    StagingPlan plan = stagingOf(ns);
    for (const IndexSchedule& is : ns.indices)
      for (size_t p = 1; p < is.parts.size(); ++p)
        if (is.parts[p].place == Placement::Serial)
          for (const StagedArray& sa : plan.arrays)
            if (sa.level == StageLevel::Step && movesWith(sa, is.index)) return true;
    return false;
  }

  // Placement `pc` with `positions` positions of a serial part after the grid part of the
  // parallel index with the most blocks: each block walks that many of its tiles. Only while the
  // grid keeps at least two blocks per multiprocessor, and not where a serial part already
  // follows the grid part (grids past their axis limit).
  std::optional<std::vector<IndexSchedule>> withSerialPositions(const std::vector<IndexSchedule>& pc,
                                                               int64_t positions) const {
    int best = -1;
    int64_t bestBlocks = 0;
    for (size_t c = 0; c < pc.size(); ++c) {
      const IndexSchedule& is = pc[c];
      if (is.parts.empty() || !isGridPlacement(is.parts[0].place)) continue;
      if (is.parts.size() > 1 && is.parts[1].place == Placement::Serial) return std::nullopt;
      const NestIndex* ni = model_.index(is.index);
      int64_t blocks = partExtents(is, std::max<int64_t>(1, ni->hull.extent()))[0];
      if (blocks > bestBlocks) best = (int)c, bestBlocks = blocks;
    }
    if (best < 0) return std::nullopt;
    const int64_t tiles = outputTiles(pc).first;
    if (tiles / positions < 2 * o_.device.multiprocessors || bestBlocks < 2 * positions) return std::nullopt;
    std::vector<IndexSchedule> out = pc;
    std::vector<SchedulePart>& parts = out[best].parts;
    parts.insert(parts.begin() + 1, part(Placement::Serial, positions));
    return out;
  }

  // Output tiles of a placement of the parallel indices (its blocks) and the first grid axis it
  // leaves free (-1: none), where a reduction split across blocks can go.
  std::pair<int64_t, int> outputTiles(const std::vector<IndexSchedule>& pc) const {
    int64_t tiles = 1;
    bool used[3] = {false, false, false};
    for (const IndexSchedule& is : pc) {
      const NestIndex* ni = model_.index(is.index);
      std::vector<int64_t> ext = partExtents(is, std::max<int64_t>(1, ni->hull.extent()));
      for (size_t p = 0; p < is.parts.size(); ++p)
        if (isGridPlacement(is.parts[p].place)) {
          used[placementAxis(is.parts[p].place)] = true;
          tiles *= ext[p];
        }
    }
    return {tiles, !used[0] ? 0 : !used[1] ? 1 : !used[2] ? 2 : -1};
  }

  // Split-K for staged steps, when large output tiles of placement `pc` leave multiprocessors
  // without a block (SGEMM n=1000 in 128 x 128 tiles is 64 blocks on 132 multiprocessors): the
  // innermost reduction also split across G blocks per tile, each walking S steps of its share,
  // with G about 1 and 2 blocks per multiprocessor over the tiles and every block keeping at
  // least 4 steps, on the grid axis the parallel indices leave free. nullopt is the unsplit
  // reduction (always first).
  struct SplitK {
    Placement grid;
    int64_t stepsPerBlock;
  };
  std::vector<std::optional<SplitK>> splitKShares(const std::vector<IndexSchedule>& pc, int64_t step,
                                                  const std::vector<std::string>& staged) const {
    std::vector<std::optional<SplitK>> out{std::nullopt};
    const int64_t ext = innermostReductionExtent();  // 0 without a reduction
    if (ext == 0 || step <= 0 || step > 16) return out;
    // Plain variables, not a structured binding: the lambda below captures axis, which clang
    // before 16 refuses for a binding (and the fuzz build, tests/fuzz/run.sh, is clang).
    const std::pair<int64_t, int> tilesAndAxis = outputTiles(pc);
    const int64_t tiles = tilesAndAxis.first;
    const int axis = tilesAndAxis.second;
    const int64_t sms = o_.device.multiprocessors;
    // Only blocks of at least 64 x 64 outputs: smaller ones fill the device with more tiles instead.
    const int64_t outputsPerBlock = partProduct(pc, isReg) * partProduct(pc, isThreadPlacement);
    if (axis < 0 || outputsPerBlock < 4096) return out;
    static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
    std::set<int64_t> seen;
    auto share = [&](int64_t g) {
      int64_t stepsPerBlock = ceilDiv(ext, step * g);
      int64_t blocks = ceilDiv(ext, step * stepsPerBlock);  // what the shares come to
      if (blocks < 2 || blocks > o_.limits.maxGridDim[axis] || !seen.insert(stepsPerBlock).second) return;
      out.push_back(SplitK{grids[axis], stepsPerBlock});
    };
    if (tiles < sms) {
      for (int64_t perSm : {1, 2}) {
        int64_t g = std::min<int64_t>(std::llround((double)(perSm * sms) / (double)tiles), ext / (4 * step));
        if (g >= 2) share(g);
      }
      return out;
    }
    // Enough tiles, but a last wave that leaves most slots idle (SGEMM n=3000 in 64 x 64 tiles at
    // 5 blocks per multiprocessor: 2209 tiles are 3.35 waves, 84% of the slots busy): shares of 2 to
    // 4 that fill the waves to 93% or more (the model charges the combine), each block keeping at
    // least 4 steps. On an H100 that split in two gained 1.7% (1.371 -> 1.347 ms): what idles in
    // a last wave is mostly multiprocessors, not slots (see the model), so the tuner measures it
    // rather than the model favouring it.
    NestSchedule probe;
    probe.indices = pc;
    for (IndexSchedule& r : reductionClauses(1, step)) probe.indices.push_back(std::move(r));
    probe.shared = staged;
    const int64_t perSm = model_.estimate(probe, o_.device).blocksPerMultiprocessor;
    if (perSm == 0) return out;
    const double slots = (double)(perSm * sms);
    auto busy = [&](double blocks) { return blocks / (std::ceil(blocks / slots) * slots); };
    if (busy((double)tiles) >= 0.9) return out;
    for (int64_t g = 2; g <= 4 && ext / (step * g) >= 4; ++g)
      if (busy((double)(tiles * g)) >= 0.93) {
        share(g);
        break;  // the smallest share that fills the waves
      }
    return out;
  }

  // Whether a two-dimensional tile staged per reduction step has the step along its second
  // dimension only and, along its first, a parallel index whose innermost part is a register
  // tile of a multiple of 4 points (each thread's points are vector-sized runs of the tile's
  // first dimension).
  bool runsAlongFirstDimension(const std::vector<IndexSchedule>& pc, const StagedArray& sa) const {
    if (sa.level != StageLevel::Step || sa.dims.size() != 2) return false;
    // The second dimension moves with the step only, or, where one step takes the whole
    // reduction, spans it without moving (H100, DG N=4 pipelined: u^T 0.158 ms, u 0.205 ms).
    const StagedDim& second = sa.dims[1];
    const bool alongStep = second.coeffs.size() == 1 && second.coeffs.count("step");
    const bool wholeReduction = second.coeffs.empty() && second.size > 0;
    if (sa.dims[0].coeffs.size() != 1 || !(alongStep || wholeReduction)) return false;
    const auto& [key, coeff] = *sa.dims[0].coeffs.begin();
    if (coeff != 1 || key.rfind("p:", 0) != 0) return false;
    for (const IndexSchedule& is : pc)
      if ("p:" + is.index == key) {
        const SchedulePart& last = is.parts.back();
        return last.place == Placement::Reg && last.factor && *last.factor % 4 == 0;
      }
    return false;
  }

  // Split reductions, for nests whose parallel domain cannot fill the device: the innermost
  // reduction index runs on thread.x (combined across the block), the innermost parallel index
  // on the grid, optionally with a few outputs per block on thread.y.
  void splitVariants() {
    auto reds = model_.reductions();
    if (reds.empty()) return;
    const DeviceModel& d = o_.device;
    if (model_.parallelPoints() >= (double)d.multiprocessors * d.maxThreadsPerMultiprocessor / 2) return;
    const NestIndex* r = reds.back();
    int64_t extR = std::max<int64_t>(1, r->hull.extent());
    if (extR < 64) return;
    auto par = model_.parallel();
    for (int64_t tx : sizesFor({32, 64, 128, 256, 512, 1024}, extR)) {
      if (tx > o_.limits.maxThreadsPerBlock) break;
      for (int64_t ty : outputThreadYSizes(par.empty() ? nullptr : par.back())) {
        if (tx * ty > o_.limits.maxThreadsPerBlock) continue;
        // Each thread reads runs of `run` neighbouring values (one 16-byte load per operand where
        // the operands run along the index: the emitted arrays are 16-byte aligned), `ahead` runs
        // of them per step in flight.
        for (auto [ahead, run] : {std::pair<int64_t, int64_t>{1, 1}, {1, 4}, {2, 4}, {4, 4}}) {
          if (run > 1 && extR < tx * run * ahead * 2) continue;
          NestSchedule ns;
          if (!par.empty()) {
            // Parallel indices as usual, with thread.y on the innermost and no thread.x.
            ns.indices = parallelClauses(par.back(), ty, 1, nullptr, 1, 1, Placement::ThreadY);
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
          add(ns, Family::Split);
        }
      }
    }
  }

  // A group of lanes per row, for a data-dependent innermost reduction (a CSR row, whose length
  // only the data know) or one whose bounds vary with the parallel indices (a triangle's row
  // `j in 0..i + 1`): L = 2..32 lanes of a warp stride through the row from its start
  // (`p: serial, thread.x L`) and combine by shuffles; 128 or 256 threads per block, so
  // 128/L or 256/L rows per block on thread.y, the rows' index on the grid. Short rows waste
  // lanes and long rows serialize on few, so the tuner measures which L fits the matrix.
  void rowVariants() {
    auto reds = model_.reductions();
    auto par = model_.parallel();
    if (reds.empty() || par.empty() || (!reds.back()->dataDependent && reds.back()->constantBounds)) return;
    const NestIndex* r = reds.back();
    for (int64_t lanes : {2, 4, 8, 16, 32})
      for (int64_t threads : {128, 256}) {
        NestSchedule ns;
        ns.indices = parallelClauses(par.back(), threads / lanes, 1, nullptr, 1, 1, Placement::ThreadY);
        for (const NestIndex* red : reds) {
          IndexSchedule is{red->name, {part(Placement::Serial)}};
          if (red == r) is.parts.push_back(part(Placement::ThreadX, lanes));
          ns.indices.push_back(std::move(is));
        }
        add(ns, Family::Split);
        if (r->dataDependent && lanes <= 8) longRowVariants(ns, lanes, threads);
      }
    if (r->dataDependent) rowPerThreadLongRowVariants();
  }

  // The parallel indices whose values set how much work a point holds: those a varying reduction
  // bound reads (`i` in trmv's `j in 0..i + 1`, in trmm's `k in 0..i + 1`). Not those of a
  // triangular output domain (syrk's `j in 0..i + 1`): there every tile that meets the triangle
  // holds the same work, and cyclic block rows, which the traffic model favours, measured slower
  // (H200, session 25: with them in the space, syrk 4096 x 1024's search fell from 1.17x to 0.80x
  // cublasSsyrk and 2048's to 0.77x); they stay expressible (`i: serial, grid.y G, ...`).
  std::set<std::string> workIndices() const {
    std::map<int, std::string> parallelLoops;
    for (const NestIndex& ni : model_.domain())
      if (ni.parallel) parallelLoops[ni.loops.front()->id] = ni.name;
    std::set<std::string> out;
    for (const NestIndex& ni : model_.domain()) {
      if (ni.parallel || ni.constantBounds || ni.dataDependent) continue;
      for (const Loop* l : ni.loops)
        for (const Expr& bound : {l->lo, l->hi})
          if (std::optional<AffineForm> f = toAffine(bound))
            for (const auto& [id, c] : f->coeffs)
              if (parallelLoops.count(id)) out.insert(parallelLoops[id]);
    }
    return out;
  }

  // Cyclic rows (issue 23), where the rows of a triangle hold unequal work: `i: grid.x, ...`
  // gives each block consecutive rows, so the last blocks hold the longest ones and leave a tail;
  // `i: serial, grid.x G, ...` walks G blocks' rows at a time (row (s * G + blockIdx.x) * T + ...),
  // every block's rows spread over the whole triangle. G is 1, 2 or 4 times the block slots
  // (multiprocessors x the candidate's resident blocks) over the blocks of the other grid parts,
  // below the blocks it replaces. Siblings of
  // the model's best 4 candidates of each block of rows (the parts after the grid part: lanes per
  // row with rows on thread.y, a block a row, a triangular product's block rows) whose clause
  // of such an index starts with a grid part; the balance term (SpaceModel.h) ranks them against
  // consecutive rows.
  void cyclicVariants() {
    const std::set<std::string> rows = workIndices();
    if (rows.empty()) return;
    std::vector<size_t> order;
    for (size_t i = 0; i < kept.size(); ++i)
      if (kept[i].est.blocksPerMultiprocessor > 0) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return kept[a].est.seconds < kept[b].est.seconds; });
    std::map<std::string, int> perBlockOfRows;  // siblings made per index and its parts after the grid part
    std::vector<NestSchedule> siblings;
    for (size_t i : order) {
      const NestCandidate& c = kept[i];
      const int64_t slots = o_.device.multiprocessors * c.est.blocksPerMultiprocessor;
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
          if (g >= ip->extents[0] || g > o_.limits.maxGridDim[axis]) break;
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
    for (const NestSchedule& ns : siblings) add(ns, Family::Plain);
  }

  // `long_rows: N` beside one thread per row (`i: grid.x, thread.x T; p: serial; long_rows: N`):
  // where most rows hold a few values (a power-law matrix: 2.5 a row on average), lanes sharing a
  // row mostly idle and pay a shuffle combine, while a thread of its own has no combine at all;
  // what kept one thread per row out was the long rows serialized on it, which the block takes
  // here. N 16 or 32: rows up to N loads in a row on one thread, longer ones on the block. The row
  // also unrolled by 4 whatever its mean length: a short row's 2 or 3 gathers x[col[p]] then are
  // in flight together (guarded loads of one step) instead of one latency each.
  void rowPerThreadLongRowVariants() {
    auto par = model_.parallel();
    const NestIndex* x = par.back();
    for (int64_t threads : sizesFor({128, 256}, std::max<int64_t>(1, x->hull.extent())))
      for (int64_t unroll : {4, 1})
        for (int64_t threshold : {32, 16}) {
          NestSchedule ns;
          ns.indices = parallelClauses(x, threads, 1, nullptr, 1, 1);
          for (IndexSchedule& r : reductionClauses(unroll, 0)) ns.indices.push_back(std::move(r));
          ns.longRows = threshold;
          add(ns, Family::Split);
        }
  }

  // `long_rows: N` beside a few lanes per row (CSR-adaptive: the short rows on 2 to 8 lanes, a row
  // longer than N on every thread of the block): N the block's threads (a row the block takes in
  // one pass) or 16 passes of the lanes. The model gives it no credit (it cannot see the rows), so
  // sampling keeps a few of the family and the tuner measures them on the user's matrix.
  void longRowVariants(const NestSchedule& base, int64_t lanes, int64_t threads) {
    for (int64_t threshold : {threads, 16 * lanes}) {
      NestSchedule ns = base;
      ns.longRows = threshold;
      add(ns, Family::Split);  // once: 16 * 8 lanes is 128 threads
    }
  }

  // thread.y sizes for a few outputs per block beside a reduction split on thread.x: 1, and those
  // of 2, 4, 8 that the innermost parallel index (none: null) has room for.
  std::vector<int64_t> outputThreadYSizes(const NestIndex* innermost) const {
    std::vector<int64_t> sizes{1};
    if (innermost)
      for (int64_t ty : sizesFor({2, 4, 8}, std::max<int64_t>(1, innermost->hull.extent())))
        if (ty > 1) sizes.push_back(ty);
    return sizes;
  }

  // Reductions split across blocks, for nests whose output is tiny next to the device. With fewer
  // parallel points than 2 x the multiprocessors, even one block per output point (the reduction
  // split across the threads of the block, splitVariants) leaves the device with less than two
  // blocks per multiprocessor -- a dot product runs on one multiprocessor out of 132 -- so the
  // innermost reduction is split across blocks too: R blocks per output tile, with R such that
  // the grid has about 1, 2 and 4 blocks per multiprocessor (R = k * multiprocessors / tiles),
  // T = 128..1024 threads on thread.x and a grid-stride loop around them, which keeps the loads
  // coalesced: `r: serial, grid.y R, thread.x T`, and the same with an inner `unroll 4` ahead of
  // the grid part (four independent loads in flight per thread). The parallel indices are placed
  // as in splitVariants (a few outputs per block on thread.y); the reduction takes the first grid
  // axis they leave free. R is capped so that every thread has at least one value per unrolled step.
  void crossBlockVariants() {
    auto reds = model_.reductions();
    if (reds.empty()) return;
    const DeviceModel& d = o_.device;
    if (model_.parallelPoints() >= 2.0 * d.multiprocessors) return;
    const NestIndex* r = reds.back();
    const int64_t extR = std::max<int64_t>(1, r->hull.extent());
    auto par = model_.parallel();
    static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
    for (int64_t tx : {128, 256, 512, 1024}) {
      if (tx > o_.limits.maxThreadsPerBlock) break;
      for (int64_t ty : outputThreadYSizes(par.empty() ? nullptr : par.back())) {
        if (tx * ty > o_.limits.maxThreadsPerBlock) continue;
        std::vector<IndexSchedule> pc;
        if (!par.empty()) pc = parallelClauses(par.back(), ty, 1, nullptr, 1, 1, Placement::ThreadY);
        const auto [tiles, axis] = outputTiles(pc);
        if (axis < 0) continue;
        for (int64_t unroll : {1, 4}) {
          std::set<int64_t> seen;
          for (int64_t perSm : {1, 2, 4}) {
            int64_t blocks = ceilDiv(perSm * d.multiprocessors, tiles);
            blocks = std::min({blocks, extR / (tx * unroll), o_.limits.maxGridDim[axis]});
            if (blocks < 2 || !seen.insert(blocks).second) continue;
            NestSchedule ns;
            ns.indices = pc;
            for (const NestIndex* red : reds) {
              IndexSchedule is{red->name, {part(Placement::Serial)}};
              if (red == r) {
                if (unroll > 1) is.parts.push_back(part(Placement::Unroll, unroll));
                is.parts.push_back(part(grids[axis], blocks));
                is.parts.push_back(part(Placement::ThreadX, tx));
              }
              ns.indices.push_back(std::move(is));
            }
            add(ns, Family::CrossBlock);
          }
        }
      }
    }
  }

  // The outer reduction of a reduction over a reduction (`min(j, sum(e, ...))`, the index of a
  // hoisted group whose reductions hold reductions; "" if none): its index.
  std::string outerReductionIndex() const {
    NestSchedule plain;
    for (const std::vector<Expr>& g : hoistedReductionGroups(k_, nest_, plain)) {
      if (g[0]->loops.size() != 1) continue;
      for (const Expr& r : g) {
        std::vector<Expr> inner;
        collectReductions(r->operands[0], inner);
        if (!inner.empty()) return g[0]->loops[0].name;
      }
    }
    return "";
  }

  // Register tiles of an outer reduction (OuterTile, schedule/Domain.h), the register tile of a
  // matrix product with the outer combine in each step's epilogue: the innermost parallel index
  // x on `reg rx, thread.x tx` (rx in 1..8 outside 16 or 32 threads), the outer index j on
  // `serial, thread.y ty, reg R` (R = 2..8 values per thread, ty = 1..16 threads combined at the
  // end), the inner reductions unrolled (in full up to 64 values), rx * R <= 32 accumulators;
  // staged (q once per block, r per step of ty * R values, with two buffers) and not. Where the
  // output tiles leave multiprocessors idle, j is also split across G blocks per tile (about two
  // blocks per multiprocessor) on the grid axis x leaves free: `j: grid.y G, serial S, ...`.
  void outerTileVariants() {
    const std::string outer = outerReductionIndex();
    const NestIndex* oj = outer.empty() ? nullptr : model_.index(outer);
    auto par = model_.parallel();
    if (!oj || par.empty()) return;
    const NestIndex* x = par.back();
    for (const NestIndex* ni : par)
      if (ni->hull.extent() > x->hull.extent()) x = ni;
    const int64_t extJ = std::max<int64_t>(1, oj->hull.extent());
    const int64_t innerExt = innermostReductionExtent();
    const int64_t unroll = innerExt <= 64 ? innerExt : 8;
    static const Placement grids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};
    for (int64_t tx : {16, 32})
      for (int64_t rx : {1, 2, 4, 8})
        for (int64_t ty : {1, 4, 8, 16})
          for (int64_t R : {2, 4, 8})
            for (bool inside : {false, true}) {
            if (rx * R > 32 || tx * ty < 64 || tx * ty > o_.limits.maxThreadsPerBlock || ty * R > extJ) continue;
            if (inside && rx < 4) continue;
            // `inside`: x's points neighbours in the thread (`thread.x tx, reg rx`), read from a
            // transposed tile as vectors.
            const std::vector<IndexSchedule> pc =
                parallelClauses(x, tx, rx, nullptr, 1, 1, Placement::ThreadX, TileLayout{inside ? rx : 1});
            const auto [tiles, axis] = outputTiles(pc);
            std::vector<int64_t> splits{1};
            if (axis >= 0 && tiles < 2 * o_.device.multiprocessors) {
              int64_t blocks = std::min(ceilDiv(2 * o_.device.multiprocessors, tiles), extJ / (4 * ty * R));
              if (blocks >= 2) splits.push_back(std::min(blocks, o_.limits.maxGridDim[axis]));
            }
            for (int64_t G : splits) {
              NestSchedule ns;
              ns.indices = pc;
              for (const NestIndex* red : model_.reductions()) {
                IndexSchedule is{red->name, {part(Placement::Serial)}};
                if (red == oj) {
                  if (G > 1) is.parts = {part(grids[axis]), part(Placement::Serial, ceilDiv(extJ, G * ty * R))};
                  if (ty > 1) is.parts.push_back(part(Placement::ThreadY, ty));
                  is.parts.push_back(part(Placement::Reg, R));
                } else if (red == model_.reductions().back() && unroll > 1) {
                  is.parts.push_back(part(Placement::Unroll, unroll));
                }
                ns.indices.push_back(std::move(is));
              }
              const Family family = G > 1 ? Family::CrossBlock : Family::OuterTile;
              if (!inside) add(ns, family);
              if (!o_.allowShared) continue;
              // Staged: every read-only operand; with `inside`, the two-dimensional ones
              // transposed (q^T: x's points along the rows; r^T: j's values along the rows).
              ns.shared = model_.readOnlyArrays();
              if (inside)
                for (const std::string& a : ns.shared)
                  if (k_.params[k_.findParam(std::string(stagedArrayName(a)))].shape.size() >= 2) ns.transposed.push_back(a);
              add(ns, Family::Shared);
              ns.buffers = 2;
              add(ns, Family::Shared);
            }
            }
  }

  // The arithmetics and instruction shapes of the contraction's mma schedules: every arithmetic the
  // policy allows, f64 in m8n8k4 and, on sm_90 (device model and target), m16n8k4/k8/k16.
  std::vector<MmaSchedule> mmaInstructions(const Contraction& c) const {
    std::vector<MmaSchedule> out;
    const bool sm90 = o_.device.computeCapability >= 90 &&
                      (o_.limits.computeCapability == 0 || o_.limits.computeCapability >= 90);
    for (MmaArith arith : mmaAriths(o_.precision, c)) {
      out.push_back(MmaSchedule{arith});
      if (arith == MmaArith::F64 && sm90)
        for (MmaShape shape : {MmaShape::M16N8K4, MmaShape::M16N8K8, MmaShape::M16N8K16}) {
          out.push_back(MmaSchedule{arith});
          out.back().shape = shape;
        }
    }
    return out;
  }

  // Tensor-core schedules of a qualifying contraction (schedule/Mma.h), in every arithmetic the
  // precision policy allows for its type (and bf16 / f16 where the operands are conversions of such
  // loads, under every policy): warps of 1 to 8 per block, 1x1 to 4x8 / 8x4 fragments per warp, steps of
  // 8, 16 and 32 values (16-bit: 16, 32 and 64), staged per step or by cp.async in 3 stages (where the
  // reduction has more than one step; those also with `epilogue shared`). Tiles much larger than the output (a block tile whose
  // half already covers a dimension) are left out, as are steps past the reduction's length. f64 on
  // sm_90 also in m16n8k4/k8/k16 (steps of at least the shape's k; 4 stages too), without warp
  // tiles whose accumulators and fragments the register estimate puts at the cap.
  void mmaVariants() {
    ContractionMatch m = matchContraction(k_, nest_);
    if (!m.contraction) return;
    const Contraction& c = *m.contraction;
    static const std::pair<int64_t, int64_t> warps[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 4}, {4, 2}};
    // 4x8 and 8x4: 64 x 64 and 128 x 32 warp tiles (TF32; 128 x 256 / 256 x 128 block tiles with 8
    // warps), fewer fragment loads per mma where the issue slots bound the loop (mmaIssueSeconds).
    static const std::pair<int64_t, int64_t> tiles[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 4},
                                                        {4, 2}, {4, 4}, {4, 8}, {8, 4}};
    for (const MmaSchedule& instruction : mmaInstructions(c)) {
      const MmaArith arith = instruction.arith;
      if (instruction.shape == MmaShape::Native) wgmmaVariants(c, arith);
      const MmaDims dims = mmaDims(instruction);
      const int64_t fragM = dims.m, fragN = dims.n, fragK = dims.k;
      // 16-bit steps: 16 to 64 values (32 to 128 bytes per row, as 8 to 32 of 32-bit values).
      const std::vector<int64_t> kSteps = mmaIs16Bit(arith) ? std::vector<int64_t>{16, 32, 64}
                                                            : std::vector<int64_t>{8, 16, 32};
      for (auto [wm, wn] : warps)
        for (auto [tm, tn] : tiles) {
          const int64_t bm = wm * tm * fragM, bn = wn * tn * fragN;
          if ((bm > fragM && bm / 2 >= c.mExtent) || (bn > fragN && bn / 2 >= c.nExtent)) continue;
          for (int64_t kStep : kSteps) {
            if (kStep < fragK || (kStep > fragK && kStep / 2 >= c.kExtent)) continue;
            // FP64's sm_90 shapes also with 4 stages: more bytes in flight per block, where the 16 x 8
            // fragments' registers leave few blocks per multiprocessor (H200 probe: 0.75-0.8x cuBLAS
            // with 3).
            const bool sm90F64 = instruction.shape != MmaShape::Native;
            // FP64's sm_90 shapes in blocks of 4 warps or more: with one warp NVCC hoists a step's
            // copies (32 values a thread at k 32) and spilled where the estimate saw room (m16n8k4
            // warps 1x1 tile 2x4 k 32 stages 3).
            if (sm90F64 && wm * wn < 4) break;
            for (int64_t stages : {int64_t(1), int64_t(3), int64_t(4)}) {
              if (stages > 1 && c.kExtent <= kStep) continue;  // one step: nothing to pipeline
              if (stages == 4 && !sm90F64) continue;
              // Their four doubles of accumulators per fragment and the step's fragments loaded
              // ahead: warp tiles and steps whose registers the model puts near the 255 cap may
              // spill (mmaRegisters; at an estimate of 248, m16n8k16 tile 4x4 k 16 spilled with
              // warps 4x2 and not with 2x2), so the space keeps below 248.
              MmaSchedule probe = instruction;
              probe.tileM = tm, probe.tileN = tn, probe.k = kStep, probe.stages = stages;
              if (sm90F64 && mmaRegisters(probe, c.type) >= 248) continue;
              NestSchedule ns;
              ns.mma = MmaSchedule{arith, wm, wn, tm, tn, kStep, stages};
              ns.mma.shape = instruction.shape;
              add(ns, Family::Plain);
              // Pipelined ones also with the coalesced shared epilogue (the model weighs the
              // fragments' half-used store sectors against one more pass through shared memory).
              // Large fragment tiles, pipelined: also compiled with __launch_bounds__ for the blocks
              // per multiprocessor that the model's register count allows (2 or more), so that
              // NVCC keeps to that count (measured on an H200: its own choice left 25% / 12.5%
              // occupancy, limited by registers); the cap it gives holds the estimate (no spills).
              const int64_t threads = wm * wn * 32, regs = mmaRegisters(ns.mma, c.type);
              const int64_t resident = std::min<int64_t>(
                  o_.device.registersPerMultiprocessor / (threads * ((regs + 7) / 8 * 8)), 2048 / threads);
              auto withBounds = [&](NestSchedule v) {
                if (stages == 1 || regs <= 64 || resident < 2) return;
                v.blocksPerSM = resident;
                add(v, Family::Plain);
              };
              withBounds(ns);
              if (stages > 1) {
                ns.mma.sharedEpilogue = true;
                add(ns, Family::Plain);
                withBounds(ns);
              }
              if (sm90F64 && stages > 1) fragmentVariants(ns.mma, c.type);
            }
          }
        }
    }
  }

  // FP64's sm_90 shapes with stages also with `fragments 2` (the next fragment-k loaded while this
  // one's mma issue, across the step's barrier too), with either epilogue, where the register
  // estimate with the carried fragment-k stays below the cap (255): it overcounts the large tiles
  // here (m16n8k8 warps 2x2 tile 4x4 k 8 stages 4, 2.932 ms at n = 4096 in the H200 probe: estimate
  // 248, 231 registers; m16n8k4 warps 2x4 tile 4x4 k 8: 224, 206), and the tuner refuses what
  // spills after all (launchObstacle); also with the
  // __launch_bounds__ that keep that many registers for two or more blocks per multiprocessor,
  // counted with 16 registers to spare: the estimate is within about that of NVRTC's count here,
  // and at a cap of exactly the estimate m16n8k8 warps 2x2 tile 2x2 k 16 spilled (155 registers
  // unbounded against an estimate of 128). None for the smallest tiles (estimate 64 or less):
  // their caps (9 blocks: 56 registers) are below what ptxas can compile an FP64 mma with.
  void fragmentVariants(MmaSchedule ms, ScalarType type) {
    ms.fragments = 2;
    const int64_t regs = mmaRegisters(ms, type), threads = ms.warpsM * ms.warpsN * 32;
    if (regs >= 255) return;
    const int64_t resident = std::min<int64_t>(
        o_.device.registersPerMultiprocessor / (threads * ((regs + 16 + 7) / 8 * 8)), 2048 / threads);
    for (bool shared : {false, true}) {
      NestSchedule ns;
      ns.mma = ms;
      ns.mma.sharedEpilogue = shared;
      add(ns, Family::Plain);
      if (resident < 2 || regs <= 64) continue;
      ns.blocksPerSM = resident;
      add(ns, Family::Plain);
    }
  }

  // wgmma schedules (sm_90 devices, DeviceModel::warpgroupMma()) of the arithmetics it takes: 1x1
  // to 2x2 warpgroups of m64n64 to m64n256, steps of 32 and 64 values (TF32: 16 and 32: 64 and 128
  // bytes per row), 3 or 4 stages, with either epilogue; those of 128-byte steps also with
  // `swizzle 128`, and with `swizzle 128 tma` (and `tma producer`). Register, shared memory and
  // TMA limits are the plan's (refused ones do not enter).
  void wgmmaVariants(const Contraction& c, MmaArith arith) {
    // The device and, where known, the target (the plan refuses wgmma on any other).
    const bool sm90 = o_.device.warpgroupMma() && (o_.limits.computeCapability == 0 || o_.limits.computeCapability == 90);
    if (!sm90 || !mmaWgmmaArith(arith) || c.kExtent <= 16) return;
    static const std::pair<int64_t, int64_t> groups[] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}};
    const std::vector<int64_t> kSteps = mmaIs16Bit(arith) ? std::vector<int64_t>{32, 64} : std::vector<int64_t>{16, 32};
    for (auto [gm, gn] : groups)
      for (int64_t n : {64, 128, 256}) {
        const int64_t bm = gm * 64, bn = gn * n;
        if ((bm > 64 && bm / 2 >= c.mExtent) || (bn > 64 && bn / 2 >= c.nExtent)) continue;
        for (int64_t kStep : kSteps) {
          if (c.kExtent <= kStep) continue;
          for (int64_t stages : {3, 4}) {
            NestSchedule ns;
            ns.mma = MmaSchedule{arith, gm, gn, 1, 1, kStep, stages};
            ns.mma.wgmmaN = n;
            add(ns, Family::Plain);
            ns.mma.sharedEpilogue = true;
            add(ns, Family::Plain);
            // `swizzle 128` where the step fills 128-byte rows (bf16 k 64, TF32 k 32).
            if (kStep * (mmaIs16Bit(arith) ? 2 : 4) % 128 != 0) continue;
            ns.mma.swizzle = 128;
            add(ns, Family::Plain);
            ns.mma.sharedEpilogue = false;
            add(ns, Family::Plain);
            // And by TMA, where the operands are whole 2-D arrays with 16-byte rows (planTma).
            ns.mma.tma = true;
            add(ns, Family::Plain);
            // And with a producer warpgroup (no block-wide barrier per step), fragment epilogue only.
            ns.mma.producer = true;
            add(ns, Family::Plain);
            ns.mma.producer = false;
            ns.mma.sharedEpilogue = true;
            add(ns, Family::Plain);
          }
        }
      }
  }

  // The model's pruning; the default schedule is never pruned.
  void prune() {
    const DeviceModel& d = o_.device;
    std::vector<NestCandidate> out;
    auto drop = [&](const NestCandidate& c, std::string reason) { pruned.push_back({where() + c.text, std::move(reason)}); };
    for (NestCandidate& c : kept) {
      if (c.isDefault) {
        out.push_back(std::move(c));
      } else if (c.est.blocksPerMultiprocessor == 0) {
        drop(c, fmt::format("cannot be resident: {} threads with ~{} registers and {} bytes of shared memory "
                            "per block exceed a multiprocessor", c.est.threads, c.est.registers, c.est.sharedBytes));
      } else if (c.est.threads < o_.minThreads) {
        drop(c, fmt::format("threads per block {} < min_threads {}", c.est.threads, o_.minThreads));
      } else if (c.est.blocks < o_.minBlocks) {
        drop(c, fmt::format("blocks {} < min_blocks {}", c.est.blocks, o_.minBlocks));
      } else {
        out.push_back(std::move(c));
      }
    }
    kept = std::move(out);

    // Too few blocks to spread over the device, when other candidates have enough.
    int64_t quarter = std::max<int64_t>(1, d.multiprocessors / 4);
    bool enoughExists = std::any_of(kept.begin(), kept.end(), [&](const NestCandidate& c) { return c.est.blocks >= quarter; });
    if (enoughExists) {
      out.clear();
      for (NestCandidate& c : kept) {
        if (!c.isDefault && c.est.blocks < quarter)
          drop(c, fmt::format("only {} blocks for {} multiprocessors", c.est.blocks, d.multiprocessors));
        else
          out.push_back(std::move(c));
      }
      kept = std::move(out);
    }

    double best = std::numeric_limits<double>::infinity();
    for (const NestCandidate& c : kept) best = std::min(best, c.est.seconds);
    bool coalescedExists = std::any_of(kept.begin(), kept.end(), [](const NestCandidate& c) {
      return std::llabs(c.est.storeStride) <= 1;
    });
    out.clear();
    for (NestCandidate& c : kept) {
      if (c.isDefault) {
        out.push_back(std::move(c));
      } else if (coalescedExists && std::llabs(c.est.storeStride) > 1 && c.est.seconds > 4 * best) {
        drop(c, fmt::format("uncoalesced: thread.x on {} (stride {} along it for {}), predicted {} vs the best {}",
                            c.est.threadXIndex, c.est.storeStride, c.est.storeArray, micros(c.est.seconds),
                            micros(best)));
      } else if (c.est.seconds > 20 * best) {
        drop(c, fmt::format("predicted {} > 20x the best {}", micros(c.est.seconds), micros(best)));
      } else {
        out.push_back(std::move(c));
      }
    }
    kept = std::move(out);
    std::stable_sort(kept.begin(), kept.end(),
                     [](const NestCandidate& a, const NestCandidate& b) { return a.est.seconds < b.est.seconds; });
  }
};

Candidate makeCandidate(const std::vector<const NestCandidate*>& parts) {
  Candidate c;
  const NestEstimate* dominant = nullptr;
  double seconds = 0;
  for (const NestCandidate* p : parts) {
    c.schedule.nests.push_back(p->plan->schedule);
    c.plans.push_back(p->plan);
    c.estimatedBytes += p->est.bytes;
    c.estimatedFlops += p->est.flops;
    seconds += p->est.seconds;
    if (!dominant || p->est.seconds > dominant->seconds) dominant = &p->est;
  }
  c.text = printSchedule(c.schedule);
  c.score = seconds * 1e6;
  if (dominant) {
    c.threadsPerBlock = dominant->threads;
    c.blocks = dominant->blocks;
    c.registerTile = dominant->registerTile;
    c.sharedBytes = dominant->sharedBytes;
    c.occupancy = dominant->occupancy;
    c.balance = dominant->balance;
  }
  return c;
}

// The runs of consecutive nests that may be fused (fusionConflicts empty), longest from each start:
// [first, first + count) with count >= 2.
std::vector<std::pair<int, int>> fusableRuns(const Kernel& k) {
  std::vector<std::pair<int, int>> runs;
  const int nests = int(k.nests.size());
  for (int f = 0; f + 1 < nests;) {
    int c = 1;
    while (f + c < nests && fusionConflicts(k, f, c + 1).empty()) ++c;
    if (c >= 2) runs.push_back({f, c});
    f += c;
  }
  return runs;
}

// The fused candidates of run `run` (fusableRuns): a block of R rows of the shared index
// (`i: grid.x[, thread.y R]`), the nests' other index (each nest's innermost one; the others
// serial) across T threads, U values at once (`j: serial[, unroll U], thread.x T`): the row
// reductions split across the block's threads (shuffles, then shared memory) and the row walked
// coalesced. The other nests take their best-predicted schedule (`best`). Valued as the sum of
// the nests' estimates less what fusion saves (fusionSavings).
// The arrays that two or more nests of the run read (those a `keep:` may hold in registers).
std::vector<std::string> sharedReads(const Kernel& k, int first, int count) {
  std::map<int, std::set<int>> readers;
  for (int n = first; n < first + count; ++n)
    for (const Access& a : collectAccesses(k, n))
      if (!a.isWrite && !a.indirect) readers[a.array].insert(n);
  std::vector<std::string> out;
  for (const auto& [array, nests] : readers)
    if (nests.size() >= 2 && !k.params[size_t(array)].isLocal()) out.push_back(k.params[size_t(array)].name);
  return out;
}

// Candidate `s` of fused run [first, first + count) (addFusedCandidates), valued, into `out`; or
// why it has no plan, into `pruned`.
void addFusedCandidate(const Kernel& k, const SpaceOptions& o, int first, int count, Schedule s,
                       const std::vector<NestModel>& models, const std::vector<const NestCandidate*>& best,
                       std::vector<Candidate>& out, std::vector<PrunedCandidate>& pruned) {
  SchedulePlan plan = planSchedule(k, s, o.limits);
  if (!plan.ok() || plan.fusions.empty()) {
    pruned.push_back({fmt::format("nest {}: {}", first, printSchedule(s)),
                      plan.ok() ? "not fused" : fmt::format("{}", fmt::join(plan.reasons, "; "))});
    return;
  }
  Candidate c;
  c.schedule = s;
  c.text = printSchedule(s);
  double seconds = 0;
  std::vector<NestEstimate> parts;
  const NestEstimate* dominant = nullptr;
  for (size_t n = 0; n < k.nests.size(); ++n) {
    auto p = std::make_shared<const NestPlan>(plan.nests[n]);
    const bool fused = int(n) >= first && int(n) < first + count;
    NestEstimate e = fused ? models[n - size_t(first)].estimate(*p, o.device) : best[n]->est;
    if (fused) parts.push_back(e);
    c.plans.push_back(fused ? p : best[n]->plan);
    c.estimatedBytes += e.bytes;
    c.estimatedFlops += e.flops;
    seconds += e.seconds;
  }
  const FusionSavings saved = fusionSavings(k, plan.fusions[0], parts, o.device);
  for (const NestEstimate& e : parts)
    if (!dominant || e.seconds > dominant->seconds) dominant = &e;
  c.estimatedBytes -= saved.bytes;
  c.score = (seconds - saved.seconds) * 1e6;
  c.threadsPerBlock = dominant->threads;
  c.blocks = dominant->blocks;
  c.registerTile = dominant->registerTile;
  c.sharedBytes = dominant->sharedBytes;
  c.occupancy = dominant->occupancy;
  out.push_back(std::move(c));
}

// The fused candidates of run `run` (fusableRuns): a block of R rows of the shared index
// (`i: grid.x[, thread.y R]`), the nests' other index (each nest's innermost one; the others
// serial) across T threads, U values at once (`j: serial[, unroll U], thread.x T`): the row
// reductions split across the block's threads (shuffles, then shared memory) and the row walked
// coalesced. The other nests take their best-predicted schedule (`best`). Valued as the sum of
// the nests' estimates less what fusion saves (fusionSavings). Beside each, where the plan allows
// it, the same with `keep:` of the arrays several of the nests read (their rows in registers), and
// that with `stores: streaming` in the nests that store outputs.
void addFusedCandidates(const Kernel& k, const SpaceOptions& o, std::pair<int, int> run,
                        const std::vector<const NestCandidate*>& best, std::vector<Candidate>& out,
                        std::vector<PrunedCandidate>& pruned) {
  const int first = run.first, count = run.second;
  std::vector<NestModel> models;
  for (int n = first; n < first + count; ++n) models.emplace_back(k, n);
  if (!std::all_of(models.begin(), models.end(), [](const NestModel& m) { return m.ok(); })) return;
  // A nest with no index but the shared one has no threads to match the others' block with.
  for (int n = first; n < first + count; ++n)
    if (models[size_t(n - first)].domain().size() < 2) return;
  const int64_t rowsTotal = k.nests[size_t(first)].loops[0].hi->intValue - k.nests[size_t(first)].loops[0].lo->intValue;
  const std::vector<std::string> keepable = sharedReads(k, first, count);
  // 8 rows of 32 threads: short rows (256 values) a warp each.
  // Unrolled values after the thread part (`thread.x T, unroll 4`) are a thread's 4 neighbours:
  // 16-byte vector loads and stores where the row is aligned.
  for (int64_t rows : {1, 2, 4, 8})
    for (int64_t threads : {32, 64, 128, 256, 512, 1024})
      for (int64_t unroll : {1, 4, -4}) {
        if (rows * threads > std::min<int64_t>(o.limits.maxThreadsPerBlock, o.device.maxThreadsPerBlock) || rows * threads < o.minThreads ||
            (rowsTotal + rows - 1) / rows < o.minBlocks || (rows == 8 && threads != 32))
          continue;
        Schedule s;
        for (size_t n = 0; n < k.nests.size(); ++n) {
          if (int(n) < first || int(n) >= first + count) {
            s.nests.push_back(best[n]->plan->schedule);
            continue;
          }
          NestSchedule ns;
          const NestModel& m = models[n - size_t(first)];
          const std::string& lead = k.nests[n].loops[0].name;
          IndexSchedule li{lead, {{Placement::GridX, std::nullopt}}};
          if (rows > 1) li.parts.push_back({Placement::ThreadY, rows});
          ns.indices.push_back(li);
          std::vector<std::string> others;
          for (const NestIndex& ni : m.domain())
            if (ni.name != lead) others.push_back(ni.name);
          for (size_t q = 0; q < others.size(); ++q) {
            IndexSchedule is{others[q], {{Placement::Serial, std::nullopt}}};
            if (q + 1 == others.size()) {
              if (unroll > 1) is.parts.push_back({Placement::Unroll, unroll});
              is.parts.push_back({Placement::ThreadX, threads});
              if (unroll < 0) is.parts.push_back({Placement::Unroll, -unroll});
            }
            ns.indices.push_back(is);
          }
          if (int(n) == first) ns.fuse = count;
          s.nests.push_back(ns);
        }
        if (!keepable.empty()) {
          Schedule kept = s;
          kept.nests[size_t(first)].kept = keepable;
          if (planSchedule(k, kept, o.limits).ok()) {
            // With the row read once, the outputs are the other half of the traffic: streamed
            // past L2 (evict-first) in the nests that store them.
            Schedule streamed = kept;
            bool any = false;
            for (int n = first; n < first + count; ++n)
              for (const Stmt& st : k.nests[size_t(n)].body)
                if (st.kind == StmtKind::Store && !k.params[size_t(st.array)].isLocal())
                  any = streamed.nests[size_t(n)].streamingStores = true;
            if (any && planSchedule(k, streamed, o.limits).ok())
              addFusedCandidate(k, o, first, count, std::move(streamed), models, best, out, pruned);
            addFusedCandidate(k, o, first, count, std::move(kept), models, best, out, pruned);
          }
        }
        addFusedCandidate(k, o, first, count, std::move(s), models, best, out, pruned);
      }
}

// Deterministic sample of `count` distinct indices of [0, n): a partial Fisher-Yates shuffle
// driven by mt19937_64, whose output sequence the standard fixes.
std::vector<size_t> sampleIndices(size_t n, size_t count, uint64_t seed) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::mt19937_64 rng(seed);
  count = std::min(count, n);
  for (size_t i = 0; i < count; ++i) std::swap(idx[i], idx[i + rng() % (n - i)]);
  idx.resize(count);
  return idx;
}

// The placements of one index as a comparable profile: the first part's placement, whether a
// serial part follows a grid first part (blocks that walk several positions of a parallel index,
// or each block's share of a reduction split across blocks), and, per placement of the other
// parts, the product of their factors.
struct IndexProfile {
  Placement first{};
  bool walks = false;
  std::map<Placement, int64_t> factors;
};

IndexProfile profileOf(const IndexSchedule& is) {
  IndexProfile p;
  p.first = is.parts.front().place;
  size_t from = 1;
  if (isGridPlacement(p.first) && is.parts.size() > 1 && is.parts[1].place == Placement::Serial) {
    p.walks = true;
    from = 2;
  }
  for (size_t i = from; i < is.parts.size(); ++i) {
    int64_t& f = p.factors.emplace(is.parts[i].place, 1).first->second;
    f *= is.parts[i].factor.value_or(1);
  }
  return p;
}

// How far apart two profiles' outer placements are: the same tile, only distributed differently,
// is 1 -- a block that walks positions against one that does not, or a reduction split across
// blocks against the same steps in one block ('k: grid.z, serial 94, unroll 16' against 'k:
// serial, unroll 16'); any other change of the outer placement is 2.
double outerDistance(const IndexProfile& x, const IndexProfile& y) {
  if (x.first == y.first) return x.walks == y.walks ? 0 : 1;
  // (A profile walks only behind a grid part, so a serial one never does.)
  const bool splitAgainstSerial = (x.walks && y.first == Placement::Serial) || (y.walks && x.first == Placement::Serial);
  return splitAgainstSerial ? 1 : 2;
}

}  // namespace

namespace {

// Families of the emitter's choices whose worth the static model does not see (it gives them no
// credit, so they rank behind their plain siblings): sampling measures a few of each.
std::vector<std::string> familiesOf(const Schedule& s, const std::set<std::string>& parallelNames) {
  std::vector<std::string> out;
  for (const NestSchedule& n : s.nests) {
    for (const ClauseRow& row : clauseTable())
      if (*row.family && !clauseAtDefault(row, n)) out.push_back(row.family);
    // `long_rows:` on one thread per row and on lanes per row are two shapes (SpMV's power-law
    // rows: one thread per row, or 2 lanes; the model values neither's rebalancing): one of each.
    if (n.longRows > 0 && std::none_of(n.indices.begin(), n.indices.end(), [&](const IndexSchedule& is) {
          return !parallelNames.count(is.index) &&
                 std::any_of(is.parts.begin(), is.parts.end(), [](const SchedulePart& p) { return isThreadPlacement(p.place); });
        }))
      std::replace(out.begin(), out.end(), std::string("long_rows"), std::string("long_rows, a row a thread"));
    for (const IndexSchedule& is : n.indices) {
      const bool parallel = parallelNames.count(is.index) > 0;
      for (size_t p = 1; p < is.parts.size(); ++p) {
        // Blocks walking several positions with multi-buffered tiles (positions pipelined).
        if (parallel && n.buffers > 1 && is.parts[p].place == Placement::Serial && is.parts[p].factor.value_or(1) > 1 &&
            isGridPlacement(is.parts[0].place))
          out.push_back("positions pipelined");
      }
      // Cyclic rows (a serial part ahead of the grid part of a parallel index): the balance term
      // values them, but on a model of the dispatch that no measurement has calibrated yet.
      if (parallel && is.parts.size() > 1 && is.parts[0].place == Placement::Serial && isGridPlacement(is.parts[1].place))
        out.push_back("cyclic rows");
      // A staged reduction split across blocks (split-K).
      if (!parallel && !n.shared.empty() && !is.parts.empty() && isGridPlacement(is.parts[0].place))
        out.push_back("split-K");
    }
  }
  return out;
}

}  // namespace

namespace {

// How far apart two nest schedules' values of one clause are (see scheduleDistance).
double clauseDistance(const ClauseRow& row, const NestSchedule& x, const NestSchedule& y) {
  switch (row.kind) {
    case ClauseKind::Number: return x.*row.number != y.*row.number ? row.distance : 0;
    case ClauseKind::Keyword: return x.*row.flag != y.*row.flag ? row.distance : 0;
    case ClauseKind::Mma: return x.*row.mma != y.*row.mma ? row.distance : 0;
    case ClauseKind::Scan: return x.*row.scan != y.*row.scan ? row.distance : 0;
    case ClauseKind::Arrays: {
      std::set<std::string> sx((x.*row.arrays).begin(), (x.*row.arrays).end());
      std::set<std::string> sy((y.*row.arrays).begin(), (y.*row.arrays).end());
      double d = 0;
      for (const std::string& a : sx) d += sy.count(a) ? 0 : row.distance;
      for (const std::string& a : sy) d += sx.count(a) ? 0 : row.distance;
      return d;
    }
    case ClauseKind::ArrayFlag: {
      // Arrays both stage, marked in one only: the same tile, stored the other way.
      double d = 0;
      for (const std::string& a : std::set<std::string>(x.shared.begin(), x.shared.end()))
        if (std::find(y.shared.begin(), y.shared.end(), a) != y.shared.end()) {
          const auto& fx = x.*row.arrays;
          const auto& fy = y.*row.arrays;
          const bool inX = std::find(fx.begin(), fx.end(), a) != fx.end();
          const bool inY = std::find(fy.begin(), fy.end(), a) != fy.end();
          if (inX != inY) d += row.distance;
        }
      return d;
    }
  }
  return 0;
}

}  // namespace

double scheduleDistance(const Schedule& a, const Schedule& b) {
  if (a.nests.size() != b.nests.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t n = 0; n < a.nests.size(); ++n) {
    const NestSchedule& x = a.nests[n];
    const NestSchedule& y = b.nests[n];
    std::set<std::string> names;
    for (const IndexSchedule& is : x.indices) names.insert(is.index);
    for (const IndexSchedule& is : y.indices) names.insert(is.index);
    for (const std::string& name : names) {
      const IndexSchedule* xi = x.find(name);
      const IndexSchedule* yi = y.find(name);
      if (!xi || !yi) {
        d += 3;
        continue;
      }
      IndexProfile px = profileOf(*xi), py = profileOf(*yi);
      d += outerDistance(px, py);
      std::set<Placement> places;
      for (const auto& [pl, f] : px.factors) places.insert(pl);
      for (const auto& [pl, f] : py.factors) places.insert(pl);
      for (Placement pl : places) {
        double fx = double(px.factors.count(pl) ? px.factors.at(pl) : 1);
        double fy = double(py.factors.count(pl) ? py.factors.at(pl) : 1);
        d += std::min(2.0, std::fabs(std::log2(fx / fy)));
      }
    }
    for (const ClauseRow& row : clauseTable()) d += clauseDistance(row, x, y);
  }
  return d;
}

Space enumerateSchedules(const Kernel& bound, const SpaceOptions& options) {
  Space space;
  if (!bound.isBound()) throw Error(fmt::format("kernel '{}' must be bound before its schedules are enumerated", bound.name));
  Schedule defaults = defaultSchedule(bound);
  std::vector<NestSpace> nests;
  nests.reserve(bound.nests.size());
  for (size_t n = 0; n < bound.nests.size(); ++n) {
    nests.emplace_back(bound, (int)n, options, defaults);
    NestSpace& ns = nests.back();
    ns.run();
    space.enumerated += ns.enumerated;
    space.sharedStaging = space.sharedStaging || ns.sharedOffered;
    space.splitReductions = space.splitReductions || ns.splitOffered;
    space.crossBlockReductions = space.crossBlockReductions || ns.crossBlockOffered;
    for (PrunedCandidate& p : ns.pruned) space.pruned.push_back(std::move(p));
  }

  // The product over nests, capped: each nest keeps its best-predicted schedules (its default
  // among them) so that the product stays under the cap.
  const double cap = 200000;
  double product = 1;
  for (const NestSpace& ns : nests) product *= (double)std::max<size_t>(1, ns.kept.size());
  if (product > cap && !nests.empty()) {
    size_t perNest = std::max<size_t>(1, (size_t)std::floor(std::pow(cap, 1.0 / (double)nests.size())));
    for (NestSpace& ns : nests) {
      if (ns.kept.size() <= perNest) continue;
      auto def = std::find_if(ns.kept.begin(), ns.kept.end(), [](const NestCandidate& c) { return c.isDefault; });
      if (def != ns.kept.end() && def - ns.kept.begin() >= (ptrdiff_t)perNest) std::iter_swap(def, ns.kept.begin() + perNest - 1);
      space.sampledOut += (int64_t)(ns.kept.size() - perNest);
      ns.kept.resize(perNest);
    }
  }

  // The default schedule first, so that it survives ties and sampling.
  std::vector<size_t> pos(nests.size(), 0);
  std::vector<Candidate> all;
  std::string defaultText = printSchedule(defaults);
  bool someNestEmpty = std::any_of(nests.begin(), nests.end(), [](const NestSpace& ns) { return ns.kept.empty(); });
  if (nests.empty()) {
    all.push_back(makeCandidate({}));
  } else if (!someNestEmpty) {
    while (true) {
      std::vector<const NestCandidate*> parts;
      for (size_t n = 0; n < nests.size(); ++n) parts.push_back(&nests[n].kept[pos[n]]);
      all.push_back(makeCandidate(parts));
      size_t n = 0;
      while (n < nests.size() && ++pos[n] == nests[n].kept.size()) pos[n++] = 0;
      if (n == nests.size()) break;
    }
  }
  // Fused launches (`fuse: N`) of the runs of nests that may share one, beside the unfused products.
  if (!someNestEmpty)
    for (std::pair<int, int> run : fusableRuns(bound)) {
      std::vector<const NestCandidate*> best;
      for (const NestSpace& ns : nests) best.push_back(&ns.kept[0]);
      const size_t before = all.size();
      addFusedCandidates(bound, options, run, best, all, space.pruned);
      space.enumerated += int64_t(all.size() - before);
    }
  for (Candidate& c : all) {
    // Every kept candidate must parse back to itself: the tuner stores the text.
    auto again = parseSchedule(c.text);
    RTCG_ASSERT(again.ok() && *again.schedule == c.schedule, "schedule text does not round-trip: " + c.text);
  }
  // Ties are common (the model does not see staging layouts, steps or buffer counts): tied
  // candidates are taken round-robin over the placements of their parallel indices, so that the
  // best-predicted half of a sample covers several tilings instead of every staging variant of one.
  std::set<std::string> parallelNames;
  for (size_t n = 0; n < bound.nests.size(); ++n)
    if (auto indices = nestIndices(bound, (int)n))
      for (const NestIndex& ni : *indices)
        if (ni.parallel) parallelNames.insert(ni.name);
  std::map<std::pair<double, std::string>, int64_t> seenPlacements;
  std::vector<int64_t> variant(all.size());
  for (size_t c = 0; c < all.size(); ++c) {
    std::string placement;
    for (const NestSchedule& n : all[c].schedule.nests) {
      for (const IndexSchedule& is : n.indices)
        if (parallelNames.count(is.index)) placement += printIndexSchedule(is) + ";";
      placement += "|";
    }
    variant[c] = seenPlacements[{all[c].score, placement}]++;
  }
  std::vector<size_t> order(all.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (all[a].score != all[b].score) return all[a].score < all[b].score;
    return variant[a] < variant[b];
  });
  {
    std::vector<Candidate> sorted;
    sorted.reserve(all.size());
    for (size_t c : order) sorted.push_back(std::move(all[c]));
    all = std::move(sorted);
  }

  // Sampling down to maxCandidates: the best-predicted half; then, for each family of the emitter's
  // choices that the model cannot value (see familiesOf) and that the half lacks, its
  // best-predicted few, so that the tuner measures every family the space offers; then a seeded
  // random sample of the rest. The default replaces the last pick when none of these took it.
  if (options.maxCandidates > 0 && (int64_t)all.size() > options.maxCandidates) {
    size_t budget = (size_t)options.maxCandidates;
    size_t best = (budget + 1) / 2;
    std::vector<Candidate> chosen(all.begin(), all.begin() + best);
    std::vector<bool> picked(all.size(), false);
    std::fill(picked.begin(), picked.begin() + best, true);
    std::set<std::string> covered;
    for (size_t c = 0; c < best; ++c)
      for (const std::string& f : familiesOf(all[c].schedule, parallelNames)) covered.insert(f);
    const size_t perFamily = std::max<size_t>(1, budget / 32);
    std::map<std::string, size_t> added;
    for (size_t c = best; c < all.size() && chosen.size() < budget; ++c) {
      bool take = false;
      for (const std::string& f : familiesOf(all[c].schedule, parallelNames))
        if (!covered.count(f) && added[f] < perFamily) take = true, ++added[f];
      if (take) chosen.push_back(all[c]), picked[c] = true;
    }
    std::vector<size_t> rest;
    for (size_t c = best; c < all.size(); ++c)
      if (!picked[c]) rest.push_back(c);
    for (size_t i : sampleIndices(rest.size(), std::min(rest.size(), budget - chosen.size()), options.seed))
      chosen.push_back(all[rest[i]]);
    bool hasDefault = std::any_of(chosen.begin(), chosen.end(), [&](const Candidate& c) { return c.text == defaultText; });
    auto def = std::find_if(all.begin(), all.end(), [&](const Candidate& c) { return c.text == defaultText; });
    if (!hasDefault && def != all.end()) chosen.back() = *def;
    space.sampledOut += (int64_t)(all.size() - chosen.size());
    std::set<std::string> taken;
    for (const Candidate& c : chosen) taken.insert(c.text);
    for (Candidate& c : all)
      if (!taken.count(c.text)) space.reserve.push_back(std::move(c));
    all = std::move(chosen);
    std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.score < b.score; });
  }
  space.candidates = std::move(all);
  return space;
}

}  // namespace rtcg
