// The staged family: read-only operands staged in shared memory per block or per reduction step,
// with the step's length and unrolling, one to three buffers (the third filled by cp.async),
// transposed tiles, positions pipelined, split-K shares, early loads and blocks_per_sm. Called
// for each placement of the SIMT tiles family (space/SimtFamily.cpp).
#include <algorithm>
#include <cmath>
#include <set>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// A staged variant, and the same with the statements' own loads issued ahead of the reductions
// (`loads: early`) where the statements read something outside them (DG lifting's old rhs):
// with `withEarlyLoads` (the first tile layout, no blocks_per_sm), while they hold at most 8
// registers per thread across the reductions (one per load and register point).
void addStaged(NestSpace& s, const NestSchedule& ns, bool withEarlyLoads = true) {
  if (!s.add(ns, Group::Shared) || !withEarlyLoads) return;
  const size_t loads = earlyStatementLoads(s.kernel(), s.nest(), ns).size();
  if (loads == 0 || (int64_t)loads * partProduct(ns.indices, isReg) > 8) return;
  // Legal exactly when `ns` is (just added) and its reductions are computed ahead of the
  // statements in this block (the plan's `loads:` checks).
  if (s.kept.back().est.crossBlocks > 1 || s.kept.back().plan->groups.empty()) return;
  NestSchedule early = ns;
  early.earlyLoads = true;
  s.add(early, Group::Shared);
}

// Whether a tile staged per reduction step moves with the serial part of a parallel index (the
// emitter then pipelines those positions; a tile that stays is copied once per position).
bool stepTileMovesWithSerial(NestSpace& s, const NestSchedule& ns) {
  StagingPlan plan = s.stagingOf(ns);
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
std::optional<std::vector<IndexSchedule>> withSerialPositions(const NestSpace& s, const std::vector<IndexSchedule>& pc,
                                                             int64_t positions) {
  int best = -1;
  int64_t bestBlocks = 0;
  for (size_t c = 0; c < pc.size(); ++c) {
    const IndexSchedule& is = pc[c];
    if (is.parts.empty() || !isGridPlacement(is.parts[0].place)) continue;
    if (is.parts.size() > 1 && is.parts[1].place == Placement::Serial) return std::nullopt;
    const NestIndex* ni = s.model().index(is.index);
    int64_t blocks = partExtents(is, std::max<int64_t>(1, ni->hull.extent()))[0];
    if (blocks > bestBlocks) best = (int)c, bestBlocks = blocks;
  }
  if (best < 0) return std::nullopt;
  const int64_t tiles = outputTiles(s.model(), pc).first;
  if (tiles / positions < 2 * s.options().device.multiprocessors || bestBlocks < 2 * positions) return std::nullopt;
  std::vector<IndexSchedule> out = pc;
  std::vector<SchedulePart>& parts = out[best].parts;
  parts.insert(parts.begin() + 1, part(Placement::Serial, positions));
  return out;
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
std::vector<std::optional<SplitK>> splitKShares(const NestSpace& s, const std::vector<IndexSchedule>& pc, int64_t step,
                                                const std::vector<std::string>& staged) {
  const SpaceOptions& o = s.options();
  std::vector<std::optional<SplitK>> out{std::nullopt};
  const int64_t ext = innermostReductionExtent(s.model());  // 0 without a reduction
  if (ext == 0 || step <= 0 || step > 16) return out;
  // Plain variables, not a structured binding: the lambda below captures axis, which clang
  // before 16 refuses for a binding (and the fuzz build, tests/fuzz/run.sh, is clang).
  const std::pair<int64_t, int> tilesAndAxis = outputTiles(s.model(), pc);
  const int64_t tiles = tilesAndAxis.first;
  const int axis = tilesAndAxis.second;
  const int64_t sms = o.device.multiprocessors;
  // Only blocks of at least 64 x 64 outputs: smaller ones fill the device with more tiles instead.
  const int64_t outputsPerBlock = partProduct(pc, isReg) * partProduct(pc, isThreadPlacement);
  if (axis < 0 || outputsPerBlock < 4096) return out;
  std::set<int64_t> seen;
  auto share = [&](int64_t g) {
    int64_t stepsPerBlock = ceilDiv(ext, step * g);
    int64_t blocks = ceilDiv(ext, step * stepsPerBlock);  // what the shares come to
    if (blocks < 2 || blocks > o.limits.maxGridDim[axis] || !seen.insert(stepsPerBlock).second) return;
    out.push_back(SplitK{kGrids[axis], stepsPerBlock});
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
  // least 4 steps. What idles in a last wave is mostly multiprocessors, not slots (see the model),
  // so the tuner measures the split rather than the model favouring it (docs/bench.md).
  NestSchedule probe;
  probe.indices = pc;
  for (IndexSchedule& r : reductionClauses(s.model(), 1, step)) probe.indices.push_back(std::move(r));
  probe.shared = staged;
  const int64_t perSm = s.model().estimate(probe, o.device).blocksPerMultiprocessor;
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
bool runsAlongFirstDimension(const std::vector<IndexSchedule>& pc, const StagedArray& sa) {
  if (sa.level != StageLevel::Step || sa.dims.size() != 2) return false;
  // The second dimension moves with the step only, or, where one step takes the whole
  // reduction, spans it without moving (that layout measured faster, docs/bench.md).
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

// The sets of read-only operands worth staging for placement `pc`: those the block reuses
// (requests per distinct element >= 4) or reads uncoalesced (>= 4x sector waste), all together
// and, when several qualify, each alone; empty when none is worth it.
std::vector<std::vector<std::string>> stagedSets(const NestSpace& s, const std::vector<IndexSchedule>& pc) {
  NestSchedule plain;
  plain.indices = pc;
  for (IndexSchedule& r : reductionClauses(s.model(), 1, 0)) plain.indices.push_back(std::move(r));
  NestEstimate e = s.model().estimate(plain, s.options().device);
  std::vector<std::string> worth;
  for (const std::string& a : s.model().readOnlyArrays()) {
    auto r = e.reuse.find(a);
    auto c = e.coalescing.find(a);
    if ((r != e.reuse.end() && r->second >= 4) || (c != e.coalescing.end() && c->second >= 4)) worth.push_back(a);
  }
  if (worth.empty()) return {};
  std::vector<std::vector<std::string>> sets{worth};
  // Every read-only operand staged too: the model counts a warp's broadcast reads once, so it
  // undervalues staging an operand (a's rows in a matrix product) that the L1 serves only
  // partly once register tiles make each thread read several rows.
  const std::vector<std::string>& everything = s.model().readOnlyArrays();
  if (everything.size() > worth.size() && everything.size() <= 4) sets.push_back(everything);
  if (worth.size() > 1)
    for (const std::string& a : worth) sets.push_back({a});
  return sets;
}

// The reduction steps staged: 8, 16, 32 (those the extent needs), a short reduction also in one
// step, without a remainder; a longer one (up to 192: DG lifting's 84 and 144 face values,
// differentiation's 84 to 165 nodes) in one step too, which sharedVariants offers only for
// blocks whose positions are pipelined: one step per position is what lets them copy the next
// position's tiles during this one's arithmetic. {0} without a reduction: the block's whole
// footprint is staged once.
std::vector<int64_t> stagedSteps(int64_t ext) {
  std::vector<int64_t> steps;
  if (ext > 0) steps = sizesFor({8, 16, 32}, ext);
  else steps = {0};
  if (ext > 8 && ext <= 64 && std::find(steps.begin(), steps.end(), ext) == steps.end()) steps.push_back(ext);
  if (ext > 64 && ext <= 192) steps.push_back(ext);
  return steps;
}

// The buffer counts of a staged variant `ns` whose single-buffered staging is `single`: one
// buffer, and, where tiles are staged per step, two (one barrier per step instead of two; neither
// wins everywhere, so both are measured) and three filled by cp.async two steps ahead (`copy:
// async`: more bytes in flight without registers to hold them; it helped some kernels and hurt
// others, docs/bench.md), while they fit. Generated after the others, so they rank behind the
// ties (see the model). Split-K shares (`split`) and 16-bit tiles (cp.async copies 4 bytes or
// more: the plan's reason) without cp.async.
std::vector<std::pair<int64_t, bool>> bufferCounts(NestSpace& s, const NestSchedule& ns, const StagingPlan& single,
                                                   bool split) {
  std::vector<std::pair<int64_t, bool>> out{{1, false}};
  const bool steps = std::any_of(single.arrays.begin(), single.arrays.end(),
                                 [](const StagedArray& sa) { return sa.level == StageLevel::Step; });
  if (!steps || !single.errors.empty()) return out;
  const bool twoByteTile = std::any_of(single.arrays.begin(), single.arrays.end(), [&](const StagedArray& sa) {
    return typeBytes(s.kernel().params[sa.array].type) < 4;
  });
  for (auto [buffers, async] : {std::pair<int64_t, bool>{2, false}, {3, true}}) {
    if ((split || twoByteTile) && async) continue;
    NestSchedule multi = ns;
    multi.buffers = buffers;
    multi.asyncCopy = async;
    if (s.stagingOf(multi).bytes <= s.options().limits.maxSharedBytes) out.push_back({buffers, async});
  }
  return out;
}

// One step for the whole reduction, multi-buffered: also blocks that walk several positions of
// their largest grid index, copying the next positions' tiles while they compute one (positions
// pipelined, see the emitter), in the first layout.
void pipelinedVariants(NestSpace& s, const std::vector<IndexSchedule>& pc, const NestSchedule& ns, int64_t step,
                       bool unrollStep, const std::vector<std::string>& transposed,
                       const std::vector<std::pair<int64_t, bool>>& counts) {
  for (int64_t positions : {4, 16})
    if (auto serialPc = withSerialPositions(s, pc, positions)) {
      NestSchedule pipelined = ns;
      pipelined.indices = *serialPc;
      for (IndexSchedule& r : reductionClauses(s.model(), 1, step, unrollStep)) pipelined.indices.push_back(std::move(r));
      pipelined.transposed = transposed;
      if (!stepTileMovesWithSerial(s, pipelined)) break;  // nothing to pipeline (LIFT alone)
      for (auto [buffers, async] : counts) {
        if (buffers < 2) continue;
        pipelined.buffers = buffers;
        pipelined.asyncCopy = async;
        addStaged(s, pipelined);
      }
    }
}

}  // namespace

// Staging variants of one placement of the parallel indices: the sets of stagedSets, each with
// the steps of stagedSteps, its split-K shares, buffer counts and tile layouts.
void sharedVariants(NestSpace& s, const std::vector<IndexSchedule>& pc) {
  const std::vector<std::vector<std::string>> sets = stagedSets(s, pc);
  if (sets.empty()) return;
  const int64_t ext = innermostReductionExtent(s.model());
  const std::vector<int64_t> steps = stagedSteps(ext);
  const bool longOneStep = ext > 64 && ext <= 192;
  // A staged step is unrolled while the unrolled body stays small (statements times register
  // tile times step at most 512): the unrolled loop keeps the shared-memory addresses in
  // immediates, but larger bodies make NVRTC take seconds per candidate. The whole reduction in
  // one step is unrolled up to three times further (1536 points): it is the block's only loop
  // over the reduction, NVRTC still compiles it in about a second, and unrolled it ran faster
  // than as a loop. A step of 8 is unrolled also for 16 x 8 register tiles (1024 points). Not for
  // the 8 x 4 tiles of three statements (DG differentiation, 768 points): unrolled they were
  // still slower than the unrolled 8 x 2 tiles, and the model, which then ranked them first,
  // left the measured winners out of small samples. (Measurements: docs/bench.md.)
  const int64_t tile = pointsPerThread(s, pc);
  const int64_t regTile = partProduct(pc, isReg), threads = partProduct(pc, isThreadPlacement);
  auto unrollStep = [&](int64_t step) {
    return (step <= 8 && regTile > 64) || step * tile <= (step >= ext ? 1536 : 512);
  };
  for (const auto& set : sets)
    for (int64_t step : steps)
      for (const std::optional<SplitK>& share : splitKShares(s, pc, step, set)) {
        NestSchedule ns;
        ns.indices = pc;
        for (IndexSchedule& r : reductionClauses(s.model(), 1, step, unrollStep(step))) ns.indices.push_back(std::move(r));
        if (share) {
          // Split-K: `r: grid.<axis>, serial S, <step>`, each block S steps of the reduction.
          IndexSchedule& r = ns.indices.back();
          r.parts.front() = part(Placement::Serial, share->stepsPerBlock);
          r.parts.insert(r.parts.begin(), part(share->grid));
        }
        ns.shared = set;
        // Split-K shares only in the first layout and without cp.async (and for steps of up to
        // 16, splitKShares): at small sizes nearly every large tile qualifies, and the space
        // would double.
        const StagingPlan single = s.stagingOf(ns);
        const std::vector<std::pair<int64_t, bool>> counts = bufferCounts(s, ns, single, share.has_value());
        // Step tiles whose first dimension a thread's register points run along (contiguously,
        // in vector-sized runs) and whose second is the reduction: stored transposed, a step
        // reads one vector per value of the reduction and holds one value's operands at a time
        // (fewer registers: 128 instead of 177 for an 8 x 8 matrix-product tile). Generated
        // first, so that it ranks ahead of the untransposed tie.
        std::vector<std::string> transposable;
        for (const StagedArray& sa : single.arrays)
          if (runsAlongFirstDimension(pc, sa)) transposable.push_back(stagingEntry(s.kernel(), sa));
        std::vector<std::vector<std::string>> layouts;
        if (!transposable.empty()) layouts.push_back(transposable);
        layouts.push_back({});
        if (share) layouts.resize(1);
        if (!share && step >= ext && ext > 0 && counts.size() > 1)
          pipelinedVariants(s, pc, ns, step, unrollStep(step), layouts.front(), counts);
        if (longOneStep && step == ext) continue;  // only pipelined (above)
        for (const std::vector<std::string>& transposed : layouts)
          for (auto [buffers, async] : counts) {
            ns.transposed = transposed;
            ns.buffers = buffers;
            ns.asyncCopy = async;
            ns.blocksPerSM = 0;
            addStaged(s, ns, transposed == layouts.front());
            // Large register tiles leave room for one block per multiprocessor, whose warps all
            // wait at the staging barriers: also compiled for two blocks (fewer registers per
            // thread), where the cap that gives still holds the tile and about 48 registers of
            // operands and addresses (below that, NVCC spills: 512 threads of 64 points got 64).
            int64_t cap = s.options().device.registersPerMultiprocessor / (threads * 2);
            if (regTile >= 32 && threads >= 128 && cap >= regTile + 48) {
              ns.blocksPerSM = 2;
              addStaged(s, ns, false);
            }
          }
      }
  s.forgetProbes();  // probes whose variants were not generated
}

}  // namespace rtcg::space
