// A schedule: how the points of each loop nest of a kernel are mapped onto a GPU launch.
//
// Plain data with a one-line text form that parses back to an equal value:
//
//   i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4; shared: a, b
//
// Every index of a nest (its parallel indices and its reduction indices, by name) has a clause
// listing its *parts*, outer part first. The index value is
//   lo + sum over parts p of  v_p * (product of the factors of the parts after p)
// where v_p runs over [0, extent(p)). Every part except the first has a factor (its extent); the
// first part's extent is ceil(extent of the index / product of the other factors). Sizes that do
// not divide are guarded in the emitted code.
//
// Placements: grid.x|y|z (block index), thread.x|y|z (thread index in the block), reg (a fully
// unrolled per-thread register tile of a parallel index: several independent outputs per thread,
// placed innermost, inside the reduction loops), serial (a loop), unroll (an unrolled loop).
// Reduction indices take serial, unroll, thread and grid parts, and the index of an outer reduction
// (one computed ahead whose body holds reductions: `min(j, sum(e, ...))`) a reg part after its
// steps: `j: serial, reg 4` evaluates the body for 4 values of j at once (OuterTile in
// schedule/Domain.h). A thread part splits the
// reduction across the threads of a block: each thread accumulates a partial, and the partials of
// the threads that share an output are combined by a tree in shared memory. A grid part (on a
// grid axis no parallel index of the nest uses) splits it across blocks, e.g. for a dot product
//
//   i: serial, grid.x 264, thread.x 256     (i = v_serial * 264 * 256 + v_grid * 256 + v_thread)
//
// a coalesced grid-stride loop over 264 blocks: each block combines its threads' partials and
// stores the block's partial in a global scratch array of the module; the last block to arrive
// (an atomic counter per output tile) combines every block's partial in block order (the result
// does not depend on which block is last), stores the output and resets the counter, all in one
// launch (see crossBlockPlan in schedule/Domain.h). At most one reduction index per nest has grid
// parts. A reduction staged per step may be split across blocks when its grid parts come first
// (split-K: `k: grid.z, serial 32, unroll 16` gives each block 32 steps of 16 values of its share).
// Split reductions reassociate the combination (sum, product, max, min; in floating point
// the rounding differs from the serial order, as with any parallel reduction).
// The order of the clauses gives the loop order of the serial/unroll/reg parts of the parallel
// indices; reduction loops keep the nesting order they have in the kernel. `shared: a, b` names read-only arrays staged in shared memory: see
// planStaging (schedule/Domain.h) for what is staged where. `blocks_per_sm: 2` asks the compiler
// to fit two blocks on a multiprocessor (fewer registers per thread, more warps to hide barriers).
// `shared: a^T` stores a's tile with its dimensions reversed (a [i, k] box as k rows of i): a
// thread whose register points run along i then reads them as one vector per k, and holds only
// one k's operands at a time. `buffers: 2` gives each tile staged per reduction step two buffers:
// the next step is copied into one while the block computes from the other, so each step needs
// one barrier instead of two. `copy: async` with `buffers: N` (2 to 4) copies step tiles straight
// into shared memory with cp.async, N - 1 steps ahead of the arithmetic (more bytes in flight
// without registers to hold them). When a block takes its whole reduction in one step and walks
// several positions of a serial part of a parallel index (`k: grid.x, serial 16, thread.y 8, reg 8;
// ...; j: serial, unroll 35; shared: u^T; buffers: 2`), the buffers pipeline the positions
// instead: the next positions' tiles are copied while the block computes one (positions
// pipelined, like a persistent kernel streaming its tiles). `loads: early` loads what the
// statements read besides their reductions (`rhs[k, i] = rhs[k, i] + ...`: the old rhs) ahead of
// those reductions. `stores: streaming` stores the outputs that no other statement of the nest
// reads with the streaming store __stcs (st.global.cs: evict-first, so that outputs written once
// do not push out of L2 the inputs other blocks still read; see NestPlan::streamedStores for
// which stores qualify). `shared`, `buffers`, `copy`, `loads`, `blocks_per_sm`, `stores` and `long_rows` (NestSchedule::longRows) are
// clause names, not index names.
// An entry of `shared:` is an array (every read of it in the nest shares one tile) or one access
// of it, its index expressions in brackets as `explain` and the messages print them, without
// spaces: `shared: a[i,k]^T, a[j,k]` stages the two reads of a symmetric rank-k update (a[i, k] *
// a[j, k]) as two tiles, one moving with i and one with j, which one tile of `a` cannot be. An
// array named both whole and by an access is refused (which tile would serve that access?).
//
// `fuse: 3` on a nest's schedule runs it and the 2 nests after it as one launch: the nests share
// their leading parallel index (the same range), which every one of them maps identically onto
// the grid (the same clause, its first part the only grid part of the nests); each block runs the
// nests' points of its values of that index one nest after another, with a barrier between
// them, and a kernel-local array that only the fused nests use, at the shared index alone
// (`rowmax[i]`), lives in shared memory instead of device memory (softmax in one launch).
//
// `keep: x` beside `fuse: N` holds the values of x that several fused nests read at one access
// (`x[i, j]`, the other index mapped alike in each) in each thread's registers: one load per
// value for the whole group (KeptRow in schedule/Plan.h).
//
// Several nests: one schedule per nest, separated by ` | `. A nest with nothing to schedule (no
// parallel and no reduction index) prints as `-`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

enum class Placement : uint8_t { GridX, GridY, GridZ, ThreadX, ThreadY, ThreadZ, Reg, Serial, Unroll };

const char* placementName(Placement p);  // "grid.x", "thread.y", "reg", "serial", "unroll"
std::optional<Placement> parsePlacement(std::string_view s);
bool isGridPlacement(Placement p);
bool isThreadPlacement(Placement p);
int placementAxis(Placement p);  // 0/1/2 for x/y/z of grid and thread placements, -1 otherwise

struct SchedulePart {
  Placement place{};
  std::optional<int64_t> factor;  // absent for the first part only
  bool operator==(const SchedulePart&) const = default;
};

struct IndexSchedule {
  std::string index;
  std::vector<SchedulePart> parts;  // outer part first, never empty
  bool operator==(const IndexSchedule&) const = default;
};

// Tensor-core arithmetic of an `mma:` clause (schedule/Mma.h): the operands of a contraction go
// through the matrix units as TF32 (`tf32`: each operand rounded to 10 mantissa bits), as the
// big/small split of three TF32 products that emulates FP32 (`tf32x3`), as FP64 (`f64`: IEEE
// products and sums, only the order of summation differs), or as 16-bit values (`bf16`, `f16`: an
// f32 contraction of conversions of bf16 / f16 loads; their products are exact in f32, the sums are
// f32, only the order of summation differs), or as 8-bit integers (`s8`: an i32 contraction of
// i32 conversions of i8 loads; products and sums exact in i32, wrapping as the i32 sum does).
enum class MmaArith : uint8_t { None, Tf32, Tf32x3, F64, Bf16, F16, S8 };
const char* mmaArithName(MmaArith a);    // "tf32", "tf32x3", "f64", "bf16", "f16", "s8" ("none")
// The shape: "m16n8k8" (TF32), "m8n8k4" (F64), "m16n8k16" (16-bit), "m16n8k32" (s8)
const char* mmaShapeName(MmaArith a);
int64_t mmaFragK(MmaArith a);            // the shape's k: 8, 4, 16, 32
bool mmaIs16Bit(MmaArith a);             // bf16 or f16
// The arithmetics whose operands pass packed in 32-bit registers, loaded by ldmatrix from tiles of
// their storage type as loaded (bf16, f16, s8).
bool mmaPacked(MmaArith a);

// The instruction shape of an `mma:` clause. Native: the arithmetic's own (mmaShapeName). FP64 also
// has the shapes PTX ISA 7.8 adds for sm_90 (mma.sync m16n8k4, m16n8k8, m16n8k16 .f64): Hopper's FP64
// tensor cores reach their rate with these; m8n8k4, the Ampere shape, runs at a fraction of it.
enum class MmaShape : uint8_t { Native, M16N8K4, M16N8K8, M16N8K16 };
// An operand of a contraction as written: the product's first (A) or second (B) factor.
enum class MmaOperand : uint8_t { None, A, B };
struct MmaDims {
  int64_t m = 16, n = 8, k = 8;
};

// `mma: tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16`: the nest's one contraction statement computed by
// warps of tensor-core fragments (schedule/Mma.h says which statements qualify and what the plan
// is). A block has warpsM x warpsN warps; each warp owns tileM x tileN fragments of the output
// (a fragment is 16x8 for TF32 and 16-bit, 8x8 for F64), so a block owns (warpsM*tileM*16) x (warpsN*tileN*8)
// outputs (F64: 8 rows per fragment); the block stages `k` values of the reduction per step.
// `stages 3` (2 to 4) copies the steps with cp.async into that many buffers, stages - 1 steps ahead
// of the arithmetic (the operands are then converted to TF32 as fragments are loaded); without it
// (1) each step is loaded, converted once and stored between two barriers. `epilogue shared`: the
// warps write their accumulators to shared memory (the operand tiles' space) and the block applies
// the statement per output point in the output's memory order (coalesced stores); without it each
// thread stores its fragments' elements.
struct MmaSchedule {
  MmaArith arith = MmaArith::None;
  int64_t warpsM = 1, warpsN = 1;
  int64_t tileM = 1, tileN = 1;
  int64_t k = 8;
  int64_t stages = 1;
  bool sharedEpilogue = false;
  // `mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4`: Hopper's warpgroup MMA
  // (wgmma.mma_async, sm_90a) instead of mma.sync. wgmmaN is the instruction's N (8 to 256, a
  // multiple of 8; 0: mma.sync); warpsM x warpsN then count warpgroups (4 warps each), each
  // owning a 64 x wgmmaN output tile (tileM = tileN = 1). Operands are read from the staged
  // tiles through matrix descriptors (schedule/Mma.h).
  int64_t wgmmaN = 0;
  // `swizzle 128` (wgmma only): the tiles in the 128-byte swizzled layouts of the PTX ISA (8 rows
  // of 128 bytes an atom, the 16-byte chunks of row r XORed with r % 8) instead of the canonical
  // ones without swizzle: wgmma reads them without bank conflicts (schedule/Mma.h). 0: none.
  int64_t swizzle = 0;
  // `tma` (after `swizzle 128`): the tiles come by the Tensor Memory Accelerator
  // (cp.async.bulk.tensor) instead of cp.async, one thread issuing each stage's boxes, an mbarrier
  // per stage saying when they have landed (schedule/Mma.h).
  bool tma = false;
  // `producer` (after `tma`): one more warpgroup issues the TMA boxes (and splits tf32x3's tiles)
  // while the others only compute; stages are handed over by mbarriers, no block-wide barrier per
  // step (warp specialization; schedule/Mma.h, MmaPlan::ring: producer-consumer).
  bool producer = false;
  // `persistent` (after `producer`): a grid of at most the blocks that can be resident at once,
  // each looping over output tiles, the producer filling the next tile's stages while the
  // consumers store the last one's (schedule/Mma.h, MmaPlan::persistentBlocks).
  bool persistent = false;
  // `pingpong` (after `persistent`, with two or more warpgroups): the consumer warpgroups each own
  // whole tiles of one warpgroup, in turn (consumer c runs the block's tiles c, c + C, ...), so
  // that one's epilogue runs beneath another's wgmma (schedule/Mma.h, MmaPlan::alternatingTiles).
  bool pingpong = false;
  // `resident a` / `resident b` (after `persistent`): that operand's tiles of every reduction step
  // (the product's first or second factor, as written) stay in shared memory for the block's
  // tiles, copied (and tf32x3's split) once per block; the ring carries the other alone
  // (schedule/Mma.h, MmaPlan::residentB).
  MmaOperand resident = MmaOperand::None;
  // `group G` (after `resident`): the output tiles in groups of G M tiles, M fastest within a
  // group, where the tile index is linear (a batched contraction's blockIdx.x, a persistent
  // grid's tile): the blocks that run at once then read G rows of A's tiles and a few columns
  // of B's, which stay in L2 for the next ones, where N fastest reads all of B's tiles for each
  // row (schedule/Mma.h, MmaPlan::groupM). 0, the default: N fastest.
  int64_t group = 0;
  MmaShape shape = MmaShape::Native;  // f64 on sm_90: m16n8k4, m16n8k8 or m16n8k16
  // `fragments 2` (with stages): two sets of fragment registers. The next fragment-k's A and B
  // fragments are loaded from shared memory while this one's mma issue, and the next step's first
  // ones (its stage resident: one barrier earlier) while the step's last mma issue, so that no mma
  // waits on a shared-memory load after the barrier (CUTLASS's warp-level double buffering;
  // schedule/Mma.h). 1, the default: each fragment-k's fragments loaded just before its mma.
  int64_t fragments = 1;
  // `copies hoisted` (after `fragments 2`): the ring's copies with each thread's source addresses,
  // destinations and row guards computed once before the steps (a step adds its offset along k),
  // issued without a branch past the last step (zero fills) among the step's last mma, and the
  // ring's buffer carried instead of divided (schedule/Mma.h, MmaPlan::hoistedCopies).
  bool hoistCopies = false;
  bool any() const { return arith != MmaArith::None; }
  bool operator==(const MmaSchedule&) const = default;
};
// "tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16 [stages 3] [fragments 2] [epilogue shared]"
std::string printMmaSchedule(const MmaSchedule& m);
bool mmaWgmmaArith(MmaArith a);  // the arithmetics wgmma takes: bf16, f16 (k16), tf32 (k8) and s8 (k32)
// Whether wgmma has the shape m64nN for `a`: N a multiple of 8 from 8 to 256 (floating point); s8
// 8, 16, 24, then multiples of 16 to 256 (PTX ISA, wgmma.mma_async's integer shapes).
bool wgmmaShapeExists(MmaArith a, int64_t n);
const char* mmaShapeName(const MmaSchedule& m);      // its shape's name: "m16n8k8" (f64 on sm_90 too)
MmaDims mmaDims(const MmaSchedule& m);                // its instruction's M, N, K
// The lowest compute capability (80: sm_80) whose mma.sync has the clause's shape: 90 for FP64's
// m16n8k*, else 80.
int mmaMinComputeCapability(const MmaSchedule& m);

// `scan: lookback threads 256 items 8` or `scan: lines lanes 32 items 4 threads 256`: the nest is a
// scan (ir/Scan.h: a prefix reduction in its triangular form) computed in one pass instead of one
// reduction per point (schedule/ScanPlan.h says what each variant is). `lookback`: every line cut
// into tiles of threads x items values, one block a tile, tiles chained by a decoupled look-back;
// `lines`: `lanes` threads (1 to 32, a power of two: a part of one warp) scan one line from its
// start to its end, items values per lane a step, threads / lanes lines per block. No index clause
// beside it. `lookback ... layout warp`: each warp loads, scans and stores its own run of the
// tile (32 x items values) with no block barrier around the loads and stores, the values re-read
// from shared memory instead of held in registers across the look-back, and one status word a
// tile for 4-byte values (ScanPlan.h).
struct ScanSchedule {
  enum class Kind : uint8_t { None, Lookback, Lines };
  Kind kind = Kind::None;
  int64_t threads = 256;
  int64_t items = 8;
  int64_t lanes = 32;       // lines only
  bool warpLayout = false;  // lookback only: `layout warp`
  bool any() const { return kind != Kind::None; }
  bool operator==(const ScanSchedule&) const = default;
};
// "lookback threads 256 items 8", "lookback threads 256 items 12 layout warp",
// "lines lanes 32 items 4 threads 256"
std::string printScanSchedule(const ScanSchedule& s);

// `accumulate: shared`, `accumulate: shared slices S`, `accumulate: shared copies R` (both: `shared
// slices S copies R`): the nest's accumulation privatized per block in shared memory
// (AccumulationPlan, schedule/Plan.h, says what each means). `slices S` (2 to 64): each block
// keeps 1/S of the reachable elements, S times the blocks (grid.z the slice), for ranges too large
// for one copy; `copies R` (2 to 32): R copies of the block's range, a warp updating copy
// warp % R, combined at the merge, for small ranges many warps contend on.
struct AccumulateSchedule {
  bool shared = false;
  int64_t slices = 1;
  int64_t copies = 1;
  bool any() const { return shared; }
  bool operator==(const AccumulateSchedule&) const = default;
};
constexpr int64_t kMaxAccumulateSlices = 64, kMaxAccumulateCopies = 32;
// "shared", "shared slices 2", "shared copies 4", "shared slices 2 copies 2"; "global" when none.
std::string printAccumulateSchedule(const AccumulateSchedule& a);

// The precision policy of contractions (`--precision`, CompileOptions::precision): which
// tensor-core arithmetic a schedule may use. `ieee` (the default) never rounds an f32 operand to
// TF32 (f64 contractions may use FP64 mma: IEEE products and sums); `tf32x3` allows the 3xTF32
// split (FP32-class accuracy); `tf32` allows plain TF32 (and tf32x3). `fp64x` and `fp32x` rewrite
// each f64 (fp64x) or f32 (fp32x) contraction into the steps of the Ozaki scheme II on INT8
// tensor cores (schedule/PolicyRewrite.h) with FP64- or FP32-class accuracy; their other nests
// follow `ieee`.
enum class Precision : uint8_t { Ieee, Tf32x3, Tf32, Fp64x, Fp32x };
const char* precisionName(Precision p);  // "ieee", "tf32x3", "tf32", "fp64x", "fp32x"
// Whether the policy rewrites contractions (fp64x, fp32x) before they are scheduled.
inline bool precisionRewrites(Precision p) { return p == Precision::Fp64x || p == Precision::Fp32x; }
std::optional<Precision> parsePrecision(std::string_view s);
// Whether the policy allows `arith`.
bool precisionAllows(Precision p, MmaArith arith);

struct NestSchedule {
  std::vector<IndexSchedule> indices;  // clause order
  std::vector<std::string> shared;     // staged in shared memory: arrays or accesses (`a[i,k]`, see above)
  std::vector<std::string> transposed; // of `shared`: tiles stored with their dimensions reversed (`a^T`)
  // `buffers: N`: tiles staged per reduction step get N buffers (1: one buffer; 2: the next step
  // is copied while this one computes; 3, 4 only with `copy: async`).
  int64_t buffers = 1;
  // `copy: async`: step tiles go from global to shared memory with cp.async (sm_80 and later),
  // buffers - 1 steps ahead, without passing through registers (`copy: registers`, the default).
  bool asyncCopy = false;
  // `loads: early`: the statements' own loads (earlyStatementLoads, schedule/Domain.h: an
  // in-place update's old value) are issued ahead of the reductions computed for them, so that
  // they overlap the arithmetic (`loads: late`, the default: where the statement reads them).
  bool earlyLoads = false;
  // `blocks_per_sm: N`: the kernel is compiled with __launch_bounds__(threads, N), so that NVCC
  // keeps its registers few enough for N blocks per multiprocessor (0: no such request).
  int64_t blocksPerSM = 0;
  // `stores: streaming`: the stores of outputs no other statement of the nest reads use the
  // streaming store __stcs (evict-first in L2; NestPlan::streamedStores says which); `stores:
  // cached`, the default: plain stores.
  bool streamingStores = false;
  // `long_rows: N`: a reduction over a data-dependent range (a CSR row) split across a group of
  // lanes per output point, or run by one thread per point, sends each row longer than N values to
  // the whole block instead: the block strides through it and combines by a tree
  // (NestPlan::longRows; 0: no such path).
  int64_t longRows = 0;
  // `mma: ...`: the nest's contraction on tensor cores (no index clauses beside it).
  MmaSchedule mma;
  // `fuse: N` (on the first nest of the group): this nest and the N - 1 after it run fused, as
  // one launch (FusionPlan, schedule/Plan.h; legality: fusionConflicts, ir/Analysis.h). 1, the
  // default: a launch of its own.
  int64_t fuse = 1;
  // `keep: x` (on the first nest of a fused group): the values of x that the group's nests read at
  // one access (`x[i, j]`), with the same mapping of its other index onto each thread, stay in
  // that thread's registers: the first nest that reads them loads them, all at once, and the later
  // nests read the registers (KeptRow, schedule/Plan.h). Array names only.
  std::vector<std::string> kept;
  // `accumulate: shared [slices S] [copies R]` (`accumulate: global`, the default): the nest's
  // accumulation updates a per-block copy of its elements in shared memory, merged at the end
  // (AccumulateSchedule above; AccumulationPlan, schedule/Plan.h). `aggregate: warp` (`aggregate:
  // none`, the default): the lanes of a warp that update one element combine their values and issue
  // one atomic.
  AccumulateSchedule accumulate;
  bool warpAggregation = false;
  // `scan: ...`: the nest's scan in one pass (ScanSchedule above; no index clauses beside it).
  ScanSchedule scan;
  const IndexSchedule* find(std::string_view index) const;  // nullptr if absent
  bool isTransposed(std::string_view array) const;
  bool operator==(const NestSchedule&) const = default;
};

// The parts of a `shared:` entry: "a[i,k]" is array "a", access "i,k"; "a" is array "a", access ""
// (every read of it).
std::string_view stagedArrayName(std::string_view entry);
std::string_view stagedAccess(std::string_view entry);

struct Schedule {
  std::vector<NestSchedule> nests;  // one per loop nest of the kernel, in order
  bool operator==(const Schedule&) const = default;
};

// ---------------------------------------------------------------------------------------------
// The clauses of a nest schedule besides its index clauses, as one table: printing, parsing,
// scheduleDistance (Space.h), the space's sampling of families the model cannot value and the
// tuning report's "by schedule choice" view iterate it, so that a new clause is one row here plus
// the code that plans (Plan.h) and emits it. Rows print in table order.
enum class ClauseKind : uint8_t {
  Arrays,     // `shared: a, b`: a list of array names
  ArrayFlag,  // `a^T`: a mark on arrays of the Arrays row, printed and parsed with them
  Number,     // `buffers: 2`: an integer in [min, max], not printed at its default
  Keyword,    // `copy: async|registers`: a flag set by its first word, not printed when clear
  Mma,        // `mma: tf32 m16n8k8 warps 2x2 tile 4x2 k 16`: the MmaSchedule, not printed when none
  Scan,       // `scan: lookback threads 256 items 8`: the ScanSchedule, not printed when none
  Accumulate, // `accumulate: shared slices 2`: the AccumulateSchedule, not printed when global
};

struct ClauseRow {
  const char* name;  // the clause name (the report's choice name)
  ClauseKind kind;
  std::vector<std::string> NestSchedule::*arrays = nullptr;  // Arrays, ArrayFlag
  int64_t NestSchedule::*number = nullptr;                   // Number
  int64_t defaultNumber = 0, min = 0, max = 0;
  const char* expected = nullptr;    // Number: what the parser expects, "a number of buffers (1 to 4)"
  const char* rangeError = nullptr;  // Number: "buffers must be between 1 and 4"
  bool NestSchedule::*flag = nullptr;  // Keyword
  const char* yes = nullptr;           // Keyword: the word that sets the flag
  const char* no = nullptr;            // Keyword: the word that clears it (the default)
  MmaSchedule NestSchedule::*mma = nullptr;  // Mma
  ScanSchedule NestSchedule::*scan = nullptr;  // Scan
  AccumulateSchedule NestSchedule::*accumulate = nullptr;  // Accumulate
  // scheduleDistance: what a differing value costs (Arrays: per array only one schedule stages;
  // ArrayFlag: per array both stage, marked in one only).
  double distance = 1;
  // The family of schedules whose clause is not at its default that sampling keeps a few of (the
  // static model gives them no credit; "": none).
  const char* family = "";
  // Arrays: whether an entry may name one access (`a[i,k]`) and carry the `^T` mark (`shared:`),
  // or only an array name (`keep:`).
  bool accesses = true;
};

const std::vector<ClauseRow>& clauseTable();
bool clauseAtDefault(const ClauseRow& row, const NestSchedule& s);
// The clause's value in words: "a, b" (none: "none"), "2", "async"/"registers"; blocks_per_sm at
// its default is "none".
std::string clauseValue(const ClauseRow& row, const NestSchedule& s);

std::string printIndexSchedule(const IndexSchedule& s);  // "i: grid.y, thread.y 16"
std::string printNestSchedule(const NestSchedule& s);
std::string printSchedule(const Schedule& s);

// Result of parsing schedule text: the schedule, or an error message with the 1-based column of
// the offending character. Never throws on user input.
struct ScheduleParseResult {
  std::optional<Schedule> schedule;
  std::string error;
  int column = 0;
  bool ok() const { return schedule.has_value(); }
};
ScheduleParseResult parseSchedule(std::string_view text);

// Limits of the target and of the emitter that validation enforces.
struct ScheduleLimits {
  int64_t maxThreadsPerBlock = 1024;
  int64_t maxBlockDim[3] = {1024, 1024, 64};
  int64_t maxGridDim[3] = {2147483647, 65535, 65535};
  int64_t maxRegTile = 128;         // points of the register tile of one thread
  // Shared memory of the staged tiles per block. Up to 48 KiB the emitter uses static shared
  // memory; above, dynamic shared memory (LaunchSpec::dynamicSharedBytes), which the launch must
  // opt in to: raise this up to the device's opt-in limit (227 KiB on sm_90) to allow it.
  int64_t maxSharedBytes = 48 * 1024;
  // Global scratch of a reduction split across blocks (partials and arrival counters, static
  // `__device__` arrays of the module): 128 MiB holds SGEMM n=3000 split in two (72 MB).
  int64_t maxGlobalScratchBytes = 128 * 1024 * 1024;
  // The target's compute capability (90: sm_90), where known (0: any; the emitted code's #error
  // guards then stop NVRTC). An `mma:` shape the target lacks is refused with a reason.
  int computeCapability = 0;
  // The device's multiprocessors and shared memory per multiprocessor, where known (0: unknown).
  // `mma: ... persistent` sizes its grid by the blocks that can be resident at once, and is
  // refused where the count is unknown.
  int64_t multiprocessors = 0;
  int64_t sharedPerMultiprocessor = 0;
};

// The compute capability of an architecture name: "sm_90" and "sm_90a" are 90, "compute_80" 80; 0
// for a name of another form.
int computeCapabilityOf(std::string_view arch);

// The limits of a device with `sharedPerBlockOptin` bytes of shared memory per block with opt-in
// (227 KiB on sm_90) and `maxThreadsPerBlock` threads: tiles up to the opt-in limit; where known,
// its multiprocessors and their shared memory (0: unknown).
ScheduleLimits deviceScheduleLimits(int64_t sharedPerBlockOptin, int64_t maxThreadsPerBlock,
                                    int64_t multiprocessors = 0, int64_t sharedPerMultiprocessor = 0);

// Every reason why `s` cannot be used for the bound kernel `k` (empty if it is legal), e.g.
// "nest 0: index 'q' is not an index of the nest". Never throws on user input.
std::vector<std::string> validateSchedule(const Kernel& k, const Schedule& s,
                                          const ScheduleLimits& limits = {});

// One thread per output point: the innermost parallel index on thread.x (up to 256 threads per
// block) and a grid axis for it and the next two parallel indices; further outer parallel
// indices are serial loops. Reductions are serial, nothing is staged. Except a nest of fewer than
// 32768 output points summing over one index of 256 values or more (a thread per point would
// leave most of a GPU idle): read contiguously, a block per point, the sum split over 256 threads
// (and, without an output index, over 128 blocks: `k: serial, grid.x 128, thread.x 256`); read
// with a stride but contiguously along the innermost output index, 32 points a block and the sum
// over 8 threads each, 8 rows of a thread in flight (`j: grid.x, thread.x 32; k: serial, unroll 8,
// thread.y 8`). A rewriting policy's INT8 products get the first tensor-core form the limits plan
// (wgmma with TMA on sm_90, else mma.sync); without limits, those of ScheduleLimits' defaults.
Schedule defaultSchedule(const Kernel& k);
Schedule defaultSchedule(const Kernel& k, const ScheduleLimits& limits);

}  // namespace rtcg
