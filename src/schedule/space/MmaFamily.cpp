// The mma family: tensor-core schedules of a qualifying contraction (schedule/Mma.h), in every
// arithmetic the precision policy allows for its type (and bf16 / f16 where the operands are
// conversions of such loads, under every policy): warps of 1 to 8 per block, 1x1 to 4x8 / 8x4
// fragments per warp, steps of 8, 16 and 32 values (16-bit: 16, 32 and 64; a reduction shorter
// than the longest also in one step of its own length), staged per step or by
// cp.async in 3 stages (where the reduction has more than one step; those also with `epilogue
// shared`). Tiles much larger than the output (a block tile whose half already covers a
// dimension) are left out, as are steps past the reduction's length. f64 on sm_90 also in
// m16n8k4/k8/k16 (steps of at least the shape's k; 4 stages too), without warp tiles whose
// accumulators and fragments the register estimate puts at the cap; those with `fragments 2` also
// with `copies hoisted`, and persistent with a small operand kept (`resident`), also in warp grids
// and steps fitted to the kept rows and the reduction (keptFitVariants; those also with `pingpong`,
// a ring a warp row). Each arithmetic's wgmma
// schedules (space/WgmmaFamily.cpp) come ahead of its mma ones.
#include <algorithm>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// The arithmetics and instruction shapes of the contraction's mma schedules: every arithmetic the
// policy allows, f64 in m8n8k4 and, on sm_90 (device model and target), m16n8k4/k8/k16.
std::vector<MmaSchedule> mmaInstructions(const NestSpace& s, const Contraction& c) {
  const SpaceOptions& o = s.options();
  std::vector<MmaSchedule> out;
  const bool sm90 = o.device.computeCapability >= 90 &&
                    (o.limits.computeCapability == 0 || o.limits.computeCapability >= 90);
  for (MmaArith arith : mmaAriths(o.precision, c)) {
    out.push_back(MmaSchedule{arith});
    if (arith == MmaArith::F64 && sm90)
      for (MmaShape shape : {MmaShape::M16N8K4, MmaShape::M16N8K8, MmaShape::M16N8K16}) {
        out.push_back(MmaSchedule{arith});
        out.back().shape = shape;
      }
  }
  return out;
}

// The operand worth keeping per persistent block (`resident`): the unbatched contraction's side of
// at most 1024 rows whose other side is 64 times as long or more, so that each block's many tiles
// reuse its kept tile (whether that tile fits the shared memory is the plan's); else None.
MmaOperand keptOperand(const Contraction& c) {
  if (!c.batch.empty()) return MmaOperand::None;
  auto small = [&](int64_t extent, int64_t other) { return extent <= 1024 && other >= 64 * extent; };
  return small(c.mExtent, c.nExtent) ? MmaOperand::A : small(c.nExtent, c.mExtent) ? MmaOperand::B : MmaOperand::None;
}

// FP64's sm_90 shapes with stages also with `fragments 2` (the next fragment-k loaded while this
// one's mma issue, across the step's barrier too), with either epilogue, where the register
// estimate with the carried fragment-k stays below the cap (255): it overcounts the large tiles
// here, and the tuner refuses what spills after all (launchObstacle); also with the
// __launch_bounds__ that keep that many registers for two or more blocks per multiprocessor,
// counted with 16 registers to spare: the estimate is within about that of NVRTC's count here,
// and a cap of exactly the estimate spilled (docs/bench.md). None for the smallest tiles
// (estimate 64 or less): their caps (9 blocks: 56 registers) are below what ptxas can compile an
// FP64 mma with.
// Each of a block a tile also with `copies hoisted` (the ring's copies prepared once per block,
// without the branch past the last step: fewer instructions a step, and copies among the mma).
// Also `persistent resident a` (or `b`) with the fragment epilogue, with and without those bounds,
// where that operand is small and the other long (keptOperand): a persistent block keeps its tile
// of the small one's whole reduction and streams the long one's tiles through the ring (the f64
// DG rows: D's 3 Np rows against u's elements). Without bounds the persistent form's grid counts
// on the blocks its register floor allows (MmaPlan::boundBlocks), usually more than these bounds':
// the bounded one is the fewer-blocks alternative (the memory-bound N3 row ran faster with it).
void fragmentVariants(NestSpace& s, const Contraction& c, MmaSchedule ms) {
  ms.fragments = 2;
  const int64_t threads = ms.warpsM * ms.warpsN * 32;
  if (mmaRegisters(ms, c.type) >= 255) return;
  const MmaOperand kept = keptOperand(c);
  for (int form = 0; form < 5; ++form) {
    if (form == 4 && kept == MmaOperand::None) continue;
    NestSchedule ns;
    ns.mma = ms;
    ns.mma.sharedEpilogue = form % 2 == 1;
    ns.mma.hoistCopies = form == 2 || form == 3;
    if (form == 4) ns.mma.persistent = true, ns.mma.resident = kept;
    const int64_t regs = mmaRegisters(ns.mma, c.type);
    if (regs >= 255) continue;
    const int64_t resident = std::min<int64_t>(
        s.options().device.registersPerMultiprocessor / (threads * ((regs + 16 + 7) / 8 * 8)), 2048 / threads);
    s.add(ns, Group::Plain);
    if (resident < 2 || regs <= 64) continue;
    ns.blocksPerSM = resident;
    s.add(ns, Group::Plain);
  }
}

// The schedules of one instruction, warp grid, fragment tile and step: 1, 3 and (FP64's sm_90
// shapes) 4 stages.
void stageVariants(NestSpace& s, const Contraction& c, const MmaSchedule& instruction, int64_t wm, int64_t wn,
                   int64_t tm, int64_t tn, int64_t kStep) {
  const MmaArith arith = instruction.arith;
  const bool sm90F64 = instruction.shape != MmaShape::Native;
  for (int64_t stages : {int64_t(1), int64_t(3), int64_t(4)}) {
    if (stages > 1 && c.kExtent <= kStep) continue;  // one step: nothing to pipeline
    // FP64's sm_90 shapes also with 4 stages: more bytes in flight per block, where the 16 x 8
    // fragments' registers leave few blocks per multiprocessor (3 stages stayed below cuBLAS).
    if (stages == 4 && !sm90F64) continue;
    // Their four doubles of accumulators per fragment and the step's fragments loaded ahead: warp
    // tiles and steps whose registers the model puts near the 255 cap may spill (mmaRegisters;
    // one at an estimate of 248 did), so the space keeps below 248.
    MmaSchedule probe = instruction;
    probe.warpsM = wm, probe.warpsN = wn, probe.tileM = tm, probe.tileN = tn, probe.k = kStep, probe.stages = stages;
    if (sm90F64 && mmaRegisters(probe, c.type) >= 248) continue;
    NestSchedule ns;
    ns.mma = MmaSchedule{arith, wm, wn, tm, tn, kStep, stages};
    ns.mma.shape = instruction.shape;
    s.add(ns, Group::Plain);
    // Pipelined ones also with the coalesced shared epilogue (the model weighs the fragments'
    // half-used store sectors against one more pass through shared memory). Large fragment
    // tiles, pipelined: also compiled with __launch_bounds__ for the blocks per multiprocessor
    // that the model's register count allows (2 or more), so that NVCC keeps to that count (its
    // own choice left occupancy limited by registers); the cap it gives holds the estimate (no
    // spills).
    const int64_t threads = wm * wn * 32, regs = mmaRegisters(ns.mma, c.type);
    const int64_t resident = std::min<int64_t>(
        s.options().device.registersPerMultiprocessor / (threads * ((regs + 7) / 8 * 8)), 2048 / threads);
    auto withBounds = [&](NestSchedule v) {
      if (stages == 1 || regs <= 64 || resident < 2) return;
      v.blocksPerSM = resident;
      s.add(v, Group::Plain);
    };
    withBounds(ns);
    if (stages > 1) {
      ns.mma.sharedEpilogue = true;
      s.add(ns, Group::Plain);
      withBounds(ns);
    }
    if (sm90F64 && stages > 1) fragmentVariants(s, c, ns.mma);
  }
}

// The kept operand's fitted tiles (FP64's sm_90 shapes, `persistent resident`, `fragments 2`): a
// block of 4 x wn warps of one fragment row each (tile 1 x tn), its N tile of 8 wn tn rows cutting
// the kept operand's rows into whole tiles with less than a fragment of padding in all, and the
// step the largest divisor of the reduction up to 32 values that leaves 3 steps or more. The
// power-of-two grids above pad the f64 DG rows' tiles (N = 7: D's 360 rows in tiles of 128 and
// 120 values in steps of 32 issue 1.14x the products), and one fragment row a warp ran fastest of
// the fitted grids measured (docs/bench.md, session 55). Each also with `pingpong`: its 4 warp rows
// run tiles of their own on rings of their own (5-11% faster at N = 7: docs/bench.md, session 59),
// those also in the largest step up to 64 that leaves 3 steps or more.
void keptFitVariants(NestSpace& s, const Contraction& c, const MmaSchedule& instruction) {
  const MmaOperand kept = keptOperand(c);
  if (kept == MmaOperand::None) return;
  const int64_t rows = kept == MmaOperand::A ? c.mExtent : c.nExtent;
  const int64_t fragK = mmaDims(instruction).k;
  // The step: the largest divisor up to 32 (up to 64 for `pingpong`, whose rows meet their own
  // barriers once a step: N = 7's k 40 ran 3% faster than its k 24 so; docs/bench.md, session 59).
  auto largestStep = [&](int64_t most) {
    int64_t step = 0;
    for (int64_t d = fragK; d <= most; d += fragK)
      if (d >= 8 && c.kExtent % d == 0 && c.kExtent / d >= 3) step = d;
    return step;
  };
  const int64_t kStep = largestStep(32), rowsStep = largestStep(64);
  if (kStep == 0) return;
  for (int64_t tiles = 1; tiles <= 16; ++tiles) {
    const int64_t width = ceilDiv(ceilDiv(rows, tiles), 8) * 8;
    if (width > 128) continue;
    if (width < 40) break;
    if (tiles * width - rows >= 8) continue;
    for (int64_t wn = 1; wn <= 5; ++wn) {
      const int64_t tn = width / 8 / wn;
      if (tn * wn * 8 != width || tn > 8) continue;
      std::vector<int64_t> steps{kStep};
      if (rowsStep != kStep) steps.push_back(rowsStep);  // its `pingpong` forms alone
      for (int64_t step : steps)
        for (int64_t stages : {int64_t(3), int64_t(4)}) {
          if (c.kExtent / step < stages) continue;
          NestSchedule ns;
          ns.mma = MmaSchedule{instruction.arith, 4, wn, 1, tn, step, stages};
          ns.mma.shape = instruction.shape;
          ns.mma.fragments = 2;
          ns.mma.persistent = true;
          ns.mma.resident = kept;
          if (mmaRegisters(ns.mma, c.type) >= 248) continue;
          if (step == kStep) s.add(ns, Group::Plain);
          ns.mma.pingpong = true;  // each warp row its own tiles and ring (MmaPlan::rowGroups)
          s.add(ns, Group::Plain);
        }
    }
  }
}

}  // namespace

bool mmaApplies(NestSpace& s) { return s.contraction() != nullptr; }

void mmaVariants(NestSpace& s) {
  const Contraction& c = *s.contraction();
  static const std::pair<int64_t, int64_t> warps[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 4}, {4, 2}};
  // 4x8 and 8x4: 64 x 64 and 128 x 32 warp tiles (TF32; 128 x 256 / 256 x 128 block tiles with 8
  // warps), fewer fragment loads per mma where the issue slots bound the loop (mmaIssueSeconds).
  static const std::pair<int64_t, int64_t> tiles[] = {{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 4},
                                                      {4, 2}, {4, 4}, {4, 8}, {8, 4}};
  for (const MmaSchedule& instruction : mmaInstructions(s, c)) {
    const MmaArith arith = instruction.arith;
    if (instruction.shape == MmaShape::Native) wgmmaVariants(s, c, arith);
    const MmaDims dims = mmaDims(instruction);
    const int64_t fragM = dims.m, fragN = dims.n, fragK = dims.k;
    // 16-bit steps: 16 to 64 values (32 to 128 bytes per row, as 8 to 32 of 32-bit values); s8:
    // 32 to 128 (the same bytes).
    std::vector<int64_t> kSteps = arith == MmaArith::S8 ? std::vector<int64_t>{32, 64, 128}
                                  : mmaIs16Bit(arith)   ? std::vector<int64_t>{16, 32, 64}
                                                        : std::vector<int64_t>{8, 16, 32};
    // A reduction shorter than the longest step also in one step of its own length (rounded up to
    // the instruction's k): the longest pads it (20 values in a step of 32: 1.6x the products and
    // the shared memory), the shorter ones pipeline a few steps. The memory-bound f64 DG row at
    // N = 3 ran fastest so (docs/bench.md, sessions 56-57).
    const int64_t whole = ceilDiv(c.kExtent, fragK) * fragK;
    if (whole < kSteps.back() && std::find(kSteps.begin(), kSteps.end(), whole) == kSteps.end())
      kSteps.insert(std::upper_bound(kSteps.begin(), kSteps.end(), whole), whole);
    for (auto [wm, wn] : warps)
      for (auto [tm, tn] : tiles) {
        const int64_t bm = wm * tm * fragM, bn = wn * tn * fragN;
        if ((bm > fragM && bm / 2 >= c.mExtent) || (bn > fragN && bn / 2 >= c.nExtent)) continue;
        for (int64_t kStep : kSteps) {
          if (kStep < fragK || (kStep > fragK && kStep / 2 >= c.kExtent)) continue;
          // FP64's sm_90 shapes in blocks of 4 warps or more: with one warp NVCC hoists a step's
          // copies and spilled where the estimate saw room.
          if (instruction.shape != MmaShape::Native && wm * wn < 4) break;
          stageVariants(s, c, instruction, wm, wn, tm, tn, kStep);
        }
      }
    if (instruction.shape != MmaShape::Native) keptFitVariants(s, c, instruction);
  }
}

}  // namespace rtcg::space
