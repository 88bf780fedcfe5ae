// The mma term of the static model (SpaceModel.h): registers, residency, the share of the
// tensor-core peak a schedule sustains, issue slots and traffic of a contraction on tensor cores.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/Walk.h"
#include "schedule/SpaceModel.h"

namespace rtcg {

int64_t mmaRegisters(const MmaSchedule& ms, ScalarType type) {
  if (ms.wgmmaN > 0) return wgmmaRegisters(ms.wgmmaN);
  const bool f64 = ms.arith == MmaArith::F64;
  if (ms.shape != MmaShape::Native) {
    // FP64's sm_90 shapes: NVCC loads the fragments of the whole (unrolled) step ahead of its mma,
    // so all of them count, two registers a double, besides the accumulators and the addresses:
    // about 24 with stages (tiles as loaded); without, 40 and the thread's share of the step's
    // copies, which pass through registers (a value and its address). Against NVRTC 13 for sm_90 (warps 2x2), with stages:
    // m16n8k16 4x4 k 16: 251 registers (estimate 248), k 32: 255 and spills (344); 2x4 k 32: 202
    // (216); m16n8k8 4x4 k 16: 246 (248), k 8: 208 (200); m16n8k4 4x4 k 16: 228 (248); without:
    // m16n8k8 4x4 k 8: 236 (252), m16n8k16 4x2 k 16: 210 (244); spills with warps 2x1 (292) and
    // m16n8k16 warps 1x1 tile 2x4 k 16 (264).
    const MmaDims dims = mmaDims(ms);
    const int64_t accs = ms.tileM * ms.tileN * dims.m * dims.n / 32;
    const int64_t step = (ms.tileM * dims.m + ms.tileN * dims.n) * ms.k / 32;
    const int64_t threads = ms.warpsM * ms.warpsN * 32;
    const int64_t copies = (ms.warpsM * ms.tileM * dims.m + ms.warpsN * ms.tileN * dims.n) * ms.k / threads;
    // `fragments 2`: the next step's first fragment-k is loaded while the step's last one is still
    // held for its mma: one fragment-k's registers more.
    // The ring's copy of no bytes past the last step (keepGroupFilled) keeps an address of its own
    // live beside them: 8 more (m16n8k16 warps 2x2 tile 4x2 k 16 stages 3 fragments 2 epilogue
    // shared, estimate 248, spilled 4 bytes at 255).
    const int64_t carried = ms.fragments > 1 ? (ms.tileM * dims.m + ms.tileN * dims.n) * dims.k / 32 + 4 : 0;
    // `copies hoisted`: each 16-byte copy's source (two registers), destination and row bytes stay
    // live through the loop: four registers per two values a thread copies a step.
    const int64_t hoisted = ms.hoistCopies ? 2 * copies : 0;
    return std::min<int64_t>(255, (ms.stages > 1 ? 24 : 40 + 3 * copies) + hoisted + 2 * (accs + step + carried));
  }
  const int64_t accs = ms.tileM * ms.tileN * (f64 ? 2 : 4);
  const int64_t fragments = (ms.tileM * (f64 ? 1 : 4) + ms.tileN * (f64 ? 1 : 2)) * (ms.arith == MmaArith::Tf32x3 ? 2 : 1);
  return std::min<int64_t>(255, 32 + (accs + fragments) * (type == ScalarType::F64 ? 2 : 1));
}

int64_t mmaRegisterFloor(const MmaSchedule& ms) {
  // Checked against NVRTC 13 for sm_90 on the f64 DG rings capped at it (docs/bench.md, session
  // 43, helper branch f64occ): nearly all compiled without spills, at or below their uncapped count;
  // the few that spilled a word or two hold 4 fragment-k a step on the larger tiles.
  const MmaDims dims = mmaDims(ms);
  const int64_t accs = ms.tileM * ms.tileN * dims.m * dims.n / 32;
  const int64_t fragmentK = (ms.tileM * dims.m + ms.tileN * dims.n) * dims.k / 32;
  return std::max<int64_t>(64, 24 + 2 * (accs + 2 * fragmentK));
}

namespace {

constexpr double kOneRunStoreShare = 0.96;

// The mma term: a contraction on tensor cores (plan.mma). The arithmetic issued is the padded
// tiles' (partial tiles compute zeros), three times over for tf32x3, at the share of the
// arithmetic's peak (mmaPeak; an H100 SXM's dense FP16 1070 TF/s, TF32 535, FP64 mma 67) that the
// schedule sustains (mmaSustained). Memory: each operand element is read once per block that needs
// it (from L2 after the first; L2 serves about 3x DRAM), the output once (twice when the statement
// reads it back). Issue slots (mmaIssueSeconds) bound it too.

// wgmma's main loop: per warp and step one instruction per wgmma (the warpgroup's four warps each
// issue it), the fences, commit and wait (~8), the copies as mma.sync's (six per cp.async: of 16
// bytes, or of one value where a TF32 tile is K-major across the operand's contiguous direction)
// and the step's own (~12). No fragment loads: the tensor cores read shared memory themselves.
// With `tma` no thread copies: the step waits on its mbarrier (~4 more) and thread 0's few boxes
// are noise.
double wgmmaIssueSeconds(const MmaPlan& p, int64_t blocks, int64_t threads, const DeviceModel& d) {
  auto perCopy = [&](bool contiguousMn, bool mnMajor) { return contiguousMn && !mnMajor ? 1.0 : 16.0 / typeBytes(p.staged); };
  const double copies = p.ring.tma() ? 4.0 * double(threads)
                              : 6.0 * (double(p.blockM * p.blockK) / perCopy(p.a.kMajor, p.a.mnMajor) +
                                       double(p.blockN * p.blockK) / perCopy(p.b.kMajor, p.b.mnMajor));
  const double perStep = double(p.blockK / p.fragK) + 8 + copies / double(threads) + 12;
  return perStep * double(p.steps) * double(blocks) * double(threads / 32) / (d.peakFp32Flops / 64);
}

// Warp instructions of the main loop, per warp and step: per fragment-k the fragment loads
// (ldmatrix: one per A fragment or two B fragments; else one per register), tf32x3's split of
// copied values (five per register: two conversions, a subtraction and two more), the mma; per
// step the copies (about six instructions per cp.async of 16 bytes, eight per value converted
// through registers) and the step's own (wait, barrier, loop: about 12). A multiprocessor issues
// four warp instructions per cycle, one per quarter; an FP32 FMA is one, so the device issues
// peakFp32Flops / 64 per second. Large warp tiles are issue-bound rather than tensor-bound
// (docs/bench.md, "Decisions and their measurements").
double mmaIssueSeconds(const MmaPlan& p, const MmaSchedule& ms, int64_t blocks, int64_t threads, const DeviceModel& d) {
  if (p.isWgmma()) return wgmmaIssueSeconds(p, blocks, threads, d);
  const bool x3 = p.arith == MmaArith::Tf32x3, f64 = p.arith == MmaArith::F64;
  const int64_t aRegs = f64 ? p.fragM * p.fragK / 32 : 4, bRegs = f64 ? p.fragN * p.fragK / 32 : 2;
  auto loads = [&](int64_t frags, int64_t regs, bool kMajor, int64_t perLdmatrix) {
    const bool ldmatrix = p.tiles != TileForm::Padded && !f64 && (mmaPacked(p.arith) || !kMajor);  // FP64: value by value
    return ldmatrix ? (frags + perLdmatrix - 1) / perLdmatrix : frags * regs * (x3 && p.tiles == TileForm::Padded ? 2 : 1);
  };
  const int64_t split = x3 && p.tiles != TileForm::Padded ? 5 * (ms.tileM * aRegs + ms.tileN * bRegs) : 0;
  const int64_t perFragmentK = loads(ms.tileM, aRegs, p.a.kMajor, 1) + loads(ms.tileN, bRegs, p.b.kMajor, 2) + split +
                               ms.tileM * ms.tileN * (x3 ? 3 : 1);
  const int64_t values = (p.blockM + (p.residentB ? 0 : p.blockN)) * p.blockK;  // a kept B is copied once
  const double copies = p.tiles != TileForm::Padded ? 6.0 * double(values) / double(16 / typeBytes(p.staged))
                                        : 8.0 * double(values) * (x3 ? 1.5 : 1.0);
  const double perStep = double(perFragmentK * (p.blockK / p.fragK)) + copies / double(threads) + 12;
  const double warpInstructions = perStep * double(p.steps) * double(blocks) * double(threads / 32);
  return warpInstructions / (d.peakFp32Flops / 64);
}

// Registers (capped by blocks_per_sm; `spills` past the cap), shared memory and blocks per
// multiprocessor of an mma plan; false (with infinite seconds) where no block can be resident.
bool mmaResidency(const NestPlan& plan, const DeviceModel& d, NestEstimate& e, bool& spills) {
  const MmaPlan& p = *plan.mma;
  e.sharedBytes = p.sharedBytes;
  e.registers = mmaRegisters(plan.schedule.mma, p.c.type);
  // __launch_bounds__(threads, blocks_per_sm) caps the registers; past the cap NVCC spills. The
  // persistent mma.sync grid's bound (MmaPlan::boundBlocks) was chosen to hold the ring's
  // mmaRegisterFloor, which NVCC keeps to without spills.
  spills = plan.schedule.blocksPerSM > 0 &&
           e.registers > d.registersPerMultiprocessor / (e.threads * plan.schedule.blocksPerSM) / 8 * 8;
  if (const int64_t bound = p.minBlocks(plan.schedule.blocksPerSM); bound > 0)
    e.registers = std::min<int64_t>(e.registers, d.registersPerMultiprocessor / (e.threads * bound) / 8 * 8);
  const int64_t warps = e.threads / 32;
  int64_t perSm = d.maxBlocksPerMultiprocessor;
  perSm = std::min<int64_t>(perSm, d.maxThreadsPerMultiprocessor / std::max<int64_t>(1, e.threads));
  perSm = std::min<int64_t>(perSm, d.registersPerMultiprocessor / ((e.registers + 7) / 8 * 8 * e.threads));
  perSm = std::min<int64_t>(perSm, d.sharedPerMultiprocessor / std::max<int64_t>(1, e.sharedBytes));
  e.blocksPerMultiprocessor = std::max<int64_t>(0, perSm);
  if (e.blocksPerMultiprocessor == 0) {
    e.seconds = std::numeric_limits<double>::infinity();
    return false;
  }
  e.occupancy = double(e.blocksPerMultiprocessor * warps * 32) / d.maxThreadsPerMultiprocessor;
  return true;
}

// The peak of the plan's arithmetic: BF16/F16 the dense FP16 rate (peakTensorFlops), INT8 twice it
// (the H100 / H200 data sheets' dense INT8 TOPS), TF32 half of it, FP64 mma twice the FP64 pipe in the architecture's own shape. On sm_90 that is m16n8k*:
// m8n8k4, Ampere's shape, issues at about half of it there; of the sm_90 shapes, m16n8k16's
// fewer, longer instructions per product run fastest (m16n8k4/k8 at 0.91 of it), except with
// `fragments 2` on large tiles (`bigPrefetch`), where the operands double-buffered make the shorter
// shapes lose nothing. (Measurements: docs/bench.md, "Decisions and their measurements".)
double mmaPeak(const MmaPlan& p, const DeviceModel& d, bool bigPrefetch) {
  const bool slowF64Shape = p.shape == MmaShape::Native && d.computeCapability >= 90;
  const double f64Shape = slowF64Shape ? 0.5
                          : bigPrefetch ? 1.0
                          : p.shape == MmaShape::M16N8K4 || p.shape == MmaShape::M16N8K8 ? 0.91
                                                                                          : 1.0;
  return p.arith == MmaArith::F64 ? 2 * d.peakFp64Flops * f64Shape
         : p.arith == MmaArith::S8 ? 2 * d.peakTensorFlops
         : mmaIs16Bit(p.arith)    ? d.peakTensorFlops
                                  : d.peakTensorFlops / 2;
}

// The share of the peak the plan's main loop sustains, each calibrated on an H200 (the
// measurements: docs/bench.md, "Decisions and their measurements"):
// - mma.sync: 60% with the steps staged through registers between two barriers, 75% pipelined in
//   stages; tf32x3 on mma.sync splits every fragment register, 0.45 of that.
// - `fragments 2` takes the shared-memory loads' latency off the path from each step's barrier to
//   its mma: 79% on block tiles of 128 x 64 or more with more blocks than multiprocessors
//   (`bigPrefetch`), 69% on others (where its registers cost a block per multiprocessor and the
//   L2 traffic, not the loads' latency, bounds the tile).
// - wgmma: 45% as emitted without swizzle (slower than mma.sync); with `swizzle 128` 90%, 50%
//   where TF32 copies an operand value by value into its K-major tile; with `tma` the whole peak
//   with boxes 2 steps ahead (4 stages), 75% 1 step ahead.
// - times the wait for A's registers: TF32 through A's registers 62% waiting for each step's
//   wgmma, 79% with two register sets (pingPong); tf32x3 (split, partial sums) 44%; a producer
//   warpgroup takes the split and the barrier off the consumers: tf32x3 64% (m64n128) / 51%; with
//   both tiles split in shared memory by the producer, 85% and the split's own time
//   (producerSplitSeconds); with neither (bf16) 85%.
// `copies hoisted` on such tiles (MmaPlan::hoistedCopies): the ring's copies prepared once per
// block and issued among the step's mma, so the tensor cores' whole rate, plus kHoistedIssueShare
// of the main loop's issue time (estimateMma): on the DGEMM forms measured, the fewer instructions
// a product took, the faster the form ran (calibration: docs/bench.md, session 44).
constexpr double kHoistedShare = 1.0;
constexpr double kHoistedIssueShare = 0.8;

// With one fragment-k a step no mma issues before the step's barrier (`fragments 2` moves the
// barrier before the step's last one), and with four or more their registers crowd the warp: both
// ran slower than two fragment-ks a step (docs/bench.md, session 44).
double hoistedShare(const MmaPlan& p) {
  const int64_t fragmentKs = p.blockK / p.fragK;
  return fragmentKs == 1 ? 0.79 : fragmentKs == 2 ? kHoistedShare : 0.9;
}

double mmaSustained(const MmaPlan& p, bool bigPrefetch) {
  const bool valueCopies = p.arith == MmaArith::Tf32 && ((p.a.kMajor && !p.a.mnMajor) || (p.b.kMajor && !p.b.mnMajor));
  const double swizzled = p.ring.tma() ? (p.ring.ahead() >= 2 ? 1.0 : 0.75) : valueCopies ? 0.5 : 0.9;
  const double producerX3 = !p.registerA() ? 0.85 : p.fragN >= 128 ? 0.64 : 0.51;
  const double registerWait = p.ring.producer() ? (p.splitBuffers ? producerX3 : p.pingPong() ? 0.79 : p.registerA() ? 0.62 : 0.85)
                              : p.splitBuffers ? 0.44
                              : p.pingPong()     ? 0.79
                              : p.registerA()    ? 0.62
                                               : 1.0;
  const double tf32x3Sync = p.arith == MmaArith::Tf32x3 && !p.isWgmma() ? 0.45 : 1.0;
  return p.isWgmma()               ? (p.tiles == TileForm::Swizzle128 ? swizzled : 0.45) * registerWait
         : p.prefetchFragments() ? (bigPrefetch ? (p.hoistedCopies ? hoistedShare(p) : 0.79) : 0.69)
         : p.ring.stages > 1        ? 0.75 * tf32x3Sync
                               : 0.6 * tf32x3Sync;
}

// The producer's own time beside the tensor cores': tf32x3's split by its splitting warps where A
// comes from shared memory (both tiles split there; `resident` B once per block), at about
// kSplitRate values a second per multiprocessor (fitted on an H200 to the persistent DG rows
// whose split bounds them: docs/bench.md, session 38). With A from registers the consumers split
// A, and mmaSustained's shares hold B's split.
constexpr double kSplitRate = 6e9;

// A copied by the producer's threads (MmaPlan::aByThreads): about kThreadCopyRate values a
// second per multiprocessor, fitted on an H200 to dg_diff N = 8 (u's 660-byte rows: 4-byte
// cp.async, 2 to 4 stages, their copy and tf32x3's split then apart; docs/bench.md, session 45),
// where they copy by cp.async (tf32: nothing to split).
constexpr double kThreadCopyRate = 1.0e9;

// A by the producer's plain loads (MmaPlan::aByLoads), copied and split in one pass: about
// kLoadCopyRate values a second per multiprocessor with 8 rows in flight, kLoadCopyRate16 with
// 16: the whole kernels' times of dg_diff and dg_diff_stacked N = 8 at m64n128 pingpong, the
// pingpong and persistent factors (below) not taken out. Taken out (1.05e9, 1.27e9) the model
// fits those times, but the swizzled forms without a producer, which it puts at the memory bound
// there (0.32 ms), measure 0.53-0.68 ms, so it ranked the faster forms below them, and the
// search of dg_diff_stacked N8 ended at 1.13x cuBLAS instead of 1.22x (docs/bench.md, session
// 46). B's kept tiles are still split once a block at kSplitRate.
constexpr double kLoadCopyRate = 1.1e9;
constexpr double kLoadCopyRate16 = 1.4e9;

double producerSplitSeconds(const MmaPlan& p, double blocks, const DeviceModel& d) {
  const double aValues = double(p.tileCount() * p.steps * p.blockK * p.blockM);
  const double k = double(p.steps * p.blockK);
  const double once = p.residentB ? blocks * k * double(p.blockN) : 0;
  if (p.aByLoads())
    return aValues / (double(d.multiprocessors) * (p.aRowsInFlight >= 16 ? kLoadCopyRate16 : kLoadCopyRate)) +
           once / (double(d.multiprocessors) * kSplitRate);
  const double copies = p.aByThreads() ? aValues / (double(d.multiprocessors) * kThreadCopyRate) : 0.0;
  if (!p.ring.producer() || !p.splitBuffers || p.registerA()) return copies;
  const double perTile = k * double(p.blockM + (p.residentB ? 0 : p.blockN));
  return copies + (double(p.tileCount()) * perTile + once) / (double(d.multiprocessors) * kSplitRate);
}

// `persistent` (MmaPlan::persistentBlocks): the factor on the main loop's time. A tile's fill (its
// first stage's copy, which nothing overlaps) and drain (its last wgmma's wait and its stores) take
// about kFillDrainSteps steps of its time, which the shares above, measured on whole kernels of a
// tile a block, include once per tile: a persistent block exposes them once, its producer filling
// the next tile's stages while its consumers store the last one. So the tiles' steps plus one fill
// and drain per block, against one per tile; it matters where tiles have few steps.
constexpr double kFillDrainSteps = 2;

// `copies hoisted` (MmaPlan::hoistedCopies): kHoistedShare is its main loop's own, measured on
// DGEMM's long reductions (63 to 256 steps a tile), where a tile's fill and drain are a few percent
// of it; the other shares include theirs as measured. So a tile's kFillDrainSteps count apart: the
// factor on the main loop's time. On short reductions (the f64 DG rows' 7 to 15 steps) it matters.
double hoistedFactor(const MmaPlan& p) {
  if (!p.hoistedCopies) return 1.0;
  return (double(p.steps) + kFillDrainSteps) / double(p.steps);
}

double persistentFactor(const MmaPlan& p) {
  if (!p.persistent()) return 1.0;
  const double steps = double(p.steps), perBlock = double(p.tileCount()) / double(p.persistentBlocks);
  return (steps + kFillDrainSteps / perBlock) / (steps + kFillDrainSteps);
}

// `pingpong` (MmaPlan::alternatingTiles, and on mma.sync rowGroups): the factor on the main loop's time. A persistent
// block's one consumer runs each tile's epilogue (its fragments' stores) after the tile's steps,
// the tensor cores idle meanwhile; with the tiles alternating between consumers another's steps
// run beneath it. The epilogue is taken as kEpilogueSteps steps of a tile's time (on an H200, a
// 64 x 128 tile's 64 stores a thread against steps of k 32); the credit is its share of a tile.
constexpr double kEpilogueSteps = 1;

// mma.sync's row groups (MmaPlan::rowGroups): each step's barrier and each tile's epilogue, which
// every warp of a block-wide ring waits through, run beneath the other rows' mma instead:
// kRowGroupSteps of a tile's steps saved. Fitted on an H200 (docs/bench.md, session 59): the f64
// DG product at Np 120 (5 steps a tile) ran 0.1823 ms in 4 rows against 0.1925 by the block's ring.
constexpr double kRowGroupSteps = 0.28;

double pingpongFactor(const MmaPlan& p) {
  if (p.rowGroups > 0) return double(p.steps) / (double(p.steps) + kRowGroupSteps);
  if (!p.alternatingTiles) return 1.0;
  return double(p.steps) / (double(p.steps) + kEpilogueSteps);
}

// The epilogue's reads of memory beside the sums (DG lifting's rhs and invJ): the fragment epilogue
// computes kEpilogueValues values a thread at a time before their stores, so each such group of a
// tile waits for its loads: from DRAM (kEpilogueReadSeconds), or from L2 where the producer
// prefetched them (MmaPlan::epiloguePrefetch: kPrefetchedReadSeconds); the shared epilogue's pass
// waits once. The tiles that run their epilogues at once on a multiprocessor (its blocks, and a
// pingpong block's consumers) overlap those waits. Calibrated on an H200 (docs/bench.md, session
// 46): lifting N7's `m64n128 2x1 ... pingpong resident a` 0.1090 ms without the prefetch, 0.0953
// with it; N5's `m64n128 1x1 ... persistent resident a` 0.1245 against `m64n56 2x1 ... pingpong
// resident a` 0.0909, both prefetched.
constexpr double kEpilogueReadSeconds = 0.6e-6, kPrefetchedReadSeconds = 0.2e-6;
constexpr int64_t kEpilogueValues = 16;

double epilogueReadSeconds(const Kernel& k, int nest, const MmaPlan& p, int64_t blocksPerMultiprocessor,
                           const DeviceModel& d) {
  if (epilogueLoads(k.nests[size_t(nest)], p.c).empty()) return 0.0;
  const int64_t tileThreads = p.alternatingTiles ? 128 : p.consumerThreads > 0 ? p.consumerThreads : p.threads;
  const int64_t values = p.blockM * p.blockN / std::max<int64_t>(1, tileThreads);
  const int64_t groups = p.sharedEpilogue() ? 1 : (values + kEpilogueValues - 1) / kEpilogueValues;
  const double atOnce = double(std::max<int64_t>(1, blocksPerMultiprocessor) *
                               (p.alternatingTiles ? std::max<int64_t>(1, p.consumerGroups()) : 1));
  const double rounds = double(p.tileCount()) / (double(d.multiprocessors) * atOnce);
  return rounds * double(groups) * (p.epiloguePrefetch.empty() ? kEpilogueReadSeconds : kPrefetchedReadSeconds);
}

// Whether each block's outputs are one contiguous run of the output array, stored in 16-byte
// vectors (vector: epilogueVectorWidth's > 1): the block's tile spans the fast direction whole
// (one tile along it) and the output's stride along the slow one is that direction's extent (DG
// differentiation's rows of 3 Np values at low orders).
bool outputsInOneRun(const Kernel& k, int nest, const MmaPlan& p, int64_t vector) {
  if (vector == 1) return false;
  const bool alongM = p.epilogueAlongM();
  if ((alongM ? p.mTiles() : p.nTiles()) != 1) return false;
  const Stmt& st = k.nests[size_t(nest)].body[size_t(p.c.statement())];
  auto form = flatOffset(k, st.array, st.indices);
  return form && form->coeff(alongM ? p.c.n : p.c.m) == (alongM ? p.c.mExtent : p.c.nExtent);
}

}  // namespace

NestEstimate estimateMma(const Kernel& k, const NestPlan& plan, const DeviceModel& d) {
  const MmaPlan& p = *plan.mma;
  const MmaSchedule& ms = plan.schedule.mma;
  NestEstimate e;
  e.threads = plan.launch.threads;
  e.blocks = plan.launch.blocks;
  e.registerTile = e.outputsPerThread = plan.launch.outputsPerThread;
  bool spills = false;
  if (!mmaResidency(plan, d, e, spills)) return e;
  double batch = 1;
  for (int64_t b : p.c.batchExtent) batch *= double(std::max<int64_t>(1, b));
  const double nTiles = double(p.nTiles());
  const double elem = typeBytes(p.staged);  // 16-bit arithmetics: the operands' own 2 bytes
  e.flops = 2.0 * double(p.c.mExtent) * double(p.c.nExtent) * double(p.c.kExtent) * batch;
  // The output tiles: the blocks', or persistent's, which each block loops over.
  const int64_t tiles = p.tileCount();
  const double issued = 2.0 * double(tiles) * double(p.blockM * p.blockN) * double(p.issuedK()) *
                        (p.arith == MmaArith::Tf32x3 ? 3 : 1);
  // `fragments 2`'s credit needs block tiles of 128 x 64 or more and more blocks than
  // multiprocessors (smaller tiles and fewer blocks measured slower with it), or a persistent
  // grid's blocks looping over many tiles each.
  // `copies hoisted` also on one wave that all but fills the device (DGEMM's one wave of 128 x 64
  // blocks ran at cuBLAS's rate: docs/bench.md, session 44).
  const bool bigPrefetch = p.prefetchFragments() && p.blockM * p.blockN >= 128 * 64 &&
                           (e.blocks > d.multiprocessors || p.persistent() ||
                            (p.hoistedCopies && 10 * e.blocks >= 9 * d.multiprocessors));
  const double peak = mmaPeak(p, d, bigPrefetch);
  // The shared epilogue's pass: two accesses an output, or one of 16 bytes for each
  // epilogueVectorWidth outputs (arrays as whole allocations are 16-byte aligned).
  const int64_t epilogueVector = epilogueVectorWidth(k, plan.nest, p, 16);
  const double epiloguePass = p.sharedEpilogue() ? double(e.blocks) * double(p.blockM * p.blockN) * 2 /
                                                      (double(d.multiprocessors) * 32 * 1.5e9 * double(epilogueVector))
                                                : 0.0;
  const double sustained = mmaSustained(p, bigPrefetch);
  // pingpong: a tile's warps are its consumer's and its share of the producer's.
  // mma.sync's row groups: a tile's warps are its row's.
  const int64_t tileThreads = p.alternatingTiles ? 128 + 128 / p.consumerGroups()
                              : p.rowGroups > 0  ? e.threads / p.rowGroups
                                                 : e.threads;
  const double issue = mmaIssueSeconds(p, ms, tiles, tileThreads, d);
  // With hoisted copies the step's other instructions issue among its mma, and fewer of them a
  // product ran faster (docs/bench.md, session 44): a share of the issue time adds to the tensor
  // cores'.
  const double mainLoop = std::max({issued / (sustained * peak) + (p.hoistedCopies ? kHoistedIssueShare * issue : 0.0),
                                    issue, producerSplitSeconds(p, double(e.blocks), d)});
  const bool readsBack = [&] {
    bool r = false;
    const Stmt& st = k.nests[plan.nest].body[size_t(p.c.statement())];
    visitExprs(st.value, [&](const Expr& x) { r |= x->kind == ExprKind::Load && x->array == st.array; });
    return r;
  }();
  const double outputs = double(p.c.mExtent * p.c.nExtent) * batch * typeBytes(k.params[size_t(k.nests[plan.nest].body[size_t(p.c.statement())].array)].type);
  const double operands = double(p.c.kExtent) * elem * batch;
  // The fragment epilogue's stores (and loads of the output) use half of each 32-byte sector they
  // touch (Nsight Compute: 16 of 32 bytes), which L2 merges before DRAM: twice the outputs' L2
  // traffic, once their DRAM traffic (dg_diff_stacked N5 kept D's at 3.0 TB/s of the outputs and u
  // alone on an H200: docs/bench.md, session 39); the shared epilogue's are whole, for one more
  // pass through shared memory per block (two accesses per output, ~32 per cycle and
  // multiprocessor).
  const double outputTraffic = outputs * (readsBack ? 2 : 1);
  // A block's outputs in one run of whole vectors left a store-bound product 4% sooner than the
  // fragments' stores (docs/bench.md, session 45): their DRAM time counts at kOneRunStoreShare.
  const double dram = operands * double(p.c.mExtent + p.c.nExtent) +
                      outputTraffic * (outputsInOneRun(k, plan.nest, p, epilogueVector) ? kOneRunStoreShare : 1.0);
  // B's rows: once per M tile, or `resident`, once per block.
  const double bRows = p.residentB ? double(e.blocks * p.blockN) : double(p.c.nExtent) * double(p.mTiles());
  const double l2 = operands * (double(p.c.mExtent) * nTiles + bRows) + outputTraffic * (p.sharedEpilogue() ? 1 : 2);
  e.bytes = dram;
  const double memory = std::max(dram / d.memoryBandwidth, l2 / (3 * d.memoryBandwidth));
  // mma.sync's persistent ring (fragments 2) hides its tiles' fill and drain where the main loop
  // bounds the kernel; where memory does, it ran no faster than a block a tile (the f64 DG rows:
  // docs/bench.md, session 42).
  const bool hides = p.isWgmma() || mainLoop >= memory;
  const double compute = mainLoop * (hides ? persistentFactor(p) : 1.0) * pingpongFactor(p) * hoistedFactor(p) + epiloguePass;
  const double sms = d.multiprocessors, blocks = double(e.blocks);
  const double smUse = std::min(1.0, blocks / sms);
  // persistent: the blocks run unequal counts of tiles, the last round partly idle.
  const double waveUse = p.persistent() ? double(tiles) / (blocks * std::ceil(double(tiles) / blocks))
                         : blocks >= sms ? blocks / (sms * std::ceil(blocks / sms))
                                         : 1.0;
  // Barriers without a pipeline: a multiprocessor hides one block's staging behind another's mma.
  const double hiding = p.ring.stages > 1 ? 1.0 : std::min(1.0, 0.5 + 0.25 * double(std::min<int64_t>(e.blocksPerMultiprocessor, int64_t(std::ceil(blocks / sms)))));
  e.efficiency = smUse * waveUse * hiding;
  e.storeStride = 1;  // each quad of lanes stores runs of 8 neighbours along N
  e.seconds = d.launchOverhead + (std::max(memory, compute) + std::min(memory, compute) / 4) / e.efficiency +
              epilogueReadSeconds(k, plan.nest, p, e.blocksPerMultiprocessor, d);
  if (spills) e.seconds *= 2;  // local-memory traffic in the inner loop
  return e;
}

}  // namespace rtcg
