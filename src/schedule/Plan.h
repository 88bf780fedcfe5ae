// The plan of a nest schedule: what it *means* for one loop nest of a bound kernel, derived once.
//
// A NestSchedule is what the user (or the space) chose; the plan is every fact the validator, the
// static model, the space, the report and the emitter need about that choice: per index its parts
// with their extents and strides, the launch shape, the reductions computed ahead of the
// statements, the statements' early loads, the shared-memory staging, the reduction split across
// blocks, the positions pipelined by multi-buffered tiles, and the shared memory the tiles take.
// planNest either returns the plan or every reason why none exists (the reasons validateSchedule
// reports: a schedule is legal exactly when every nest has a plan).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Domain.h"
#include "schedule/Mma.h"
#include "schedule/ScanPlan.h"
#include "schedule/Schedule.h"

namespace rtcg {

// One index of the nest under its clause: index value = lo + sum over parts p of v_p * stride[p],
// v_p in [0, extent[p]) (Schedule.h).
struct IndexPlan {
  std::string name;
  bool parallel = false;
  IndexRange hull;
  size_t clause = 0;             // its clause: NestPlan::schedule.indices[clause]
  std::vector<int64_t> extents;  // per part (partExtents)
  std::vector<int64_t> strides;  // per part: the product of the extents of the parts after it
  bool exact = false;            // constant bounds and the parts cover them exactly: no guard
  bool dataDependent = false;    // its range reads arrays (ir/DataRanges.h): extents are over the hull
  bool varying = false;          // a reduction range that follows other indices (`j in 0..i + 1`): likewise
};

// The launch: blocks and threads per axis, from the grid and thread parts of every index.
struct LaunchPlan {
  int64_t grid[3] = {1, 1, 1};
  int64_t block[3] = {1, 1, 1};
  int64_t threads = 1;           // per block
  int64_t blocks = 1;            // per launch
  int64_t regPoints = 1;         // register-tile points per thread (reg parts of parallel indices)
  int64_t outputsPerThread = 1;  // reg, serial and unroll parts of parallel indices
  int64_t crossBlocks = 1;       // blocks sharing one output tile (grid parts of reduction indices)
  int64_t lanes = 1;             // threads sharing one output point (thread parts of reduction indices)
  int reductionThreadAxes = 0;   // the thread axes of reduction indices' parts (bit a for axis a), even of one thread
  std::string threadXIndex;      // the index with the thread.x part ("" if none)
  int64_t threadX = 1;           // its extent
};

// Positions pipelined (see the `buffers:` clause in Schedule.h): the one step group staged per
// step whose block takes its whole reduction in one step, and the innermost serial part of a
// parallel index (more than one position) that its tiles move with. The copies of the next
// positions' tiles run while the block computes this one.
struct PositionPipeline {
  int group = -1;      // index into NestPlan::groups; -1: none
  std::string index;   // the parallel index
  size_t part = 0;     // its serial part
  int64_t stepBase = 0;  // the reduction's lo: the one step's base
  bool any() const { return group >= 0; }
};

// `long_rows: N` (Schedule.h): the one hoisted group whose single loop runs over a data-dependent
// range and is split across a group of lanes per output point (or run by one thread per point: a
// group of one, whose lane is the thread and whose combine buffer the pass declares itself; the
// plan is then cooperative, every thread reaching the pass's barriers). At run time a point whose range
// holds more than `threshold` values leaves it to the whole block: its lanes skip the range and the
// statement, the point's indices and range are appended to a list in shared memory (room for
// every lane group of the block), and after
// the position every thread of the block strides through each such range, the block combines by a
// tree in shared memory and its first thread runs the statements. Rows of a power-law matrix (most
// short, a few of thousands) then take a few lanes each, and the long ones every thread of a block.
struct LongRowPlan {
  int64_t threshold = 0;  // 0: none
  int group = -1;         // index into NestPlan::groups
  std::string index;      // the reduction index
  int64_t slots = 0;      // lane groups per block: the most ranges a block hands over per position
  bool any() const { return threshold > 0; }
};

// An accumulation (`h[bin[i]] += w[i]`, Stmt::accumulate) reaches memory by atomics. Without
// clauses each update is one atomic on the array's element in device memory (global atomics: any
// nest, any number of accumulations). `accumulate: shared` privatizes the nest's one accumulation
// per block: the block keeps a copy of the elements [lo, lo + extent) of the array (the flat range
// its index can reach: the whole array through an index map) in shared memory, set to the
// operator's identity at the start, updated by shared-memory atomics, and merged into the array at
// the end by one device atomic per element the block changed. The copy is a static shared array up
// to 40 KiB and dynamic shared memory above, up to the target's limit (ScheduleLimits::
// maxSharedBytes: 227 KiB on sm_90); the plan refuses what does not fit, so a small range (256 bins)
// can take it and a large one (65536 i32 bins: 256 KiB) cannot.
// `slices S`: the range is cut into S slices of sliceExtent = ceil(extent / S) elements (the last
// may be shorter) and the launch gets S times the blocks, grid.z the slice (an index on grid.z
// refuses it): each block runs its points as before but applies only the updates whose element is
// in its slice, and merges only its slice. The input is read S times; 65536 i32 bins in 2 slices
// take 128 KiB a block. `copies R`: R copies of the (slice's) range, warp w of the block updating
// copy w % R, so that fewer warps contend on each element; the merge combines the R values of an
// element and issues one atomic. `aggregate: warp`: the lanes of a warp whose updates name the same
// element first combine them (__match_any_sync and shuffles), and one lane issues the atomic: many
// lanes hitting one element cost one atomic (into shared memory too, with the copy). Both make the
// plan cooperative (no thread leaves early: the block's barriers and the warp's exchanges need every
// thread).
struct AccumulationPlan {
  int statement = -1;       // index into the nest's body of the accumulation the clauses apply to
  int array = -1;
  bool shared = false;      // `accumulate: shared`
  int64_t lo = 0, extent = 0;  // shared: the flat element range the block's copies cover (all slices)
  int64_t slices = 1;          // shared: `slices S` (grid.z the slice)
  int64_t sliceExtent = 0;     // shared: elements of one slice (extent when slices is 1)
  int64_t copies = 1;          // shared: `copies R`, each of sliceExtent elements
  int64_t bytes = 0;           // shared: the copies' bytes
  bool dynamic = false;        // shared: the copies live in dynamic shared memory (over 40 KiB)
  int64_t dynamicOffset = 0;   // dynamic: their byte offset in it (after the tiles)
  bool warp = false;        // `aggregate: warp`
  bool any() const { return shared || warp; }
};
// The nest's accumulations (indices into its body), and the flat element range [lo, lo + extent)
// statement `statement`'s index can reach (an index map's: the array's whole extent).
std::vector<int> accumulationStatements(const Kernel& k, int nest);
std::pair<int64_t, int64_t> accumulationRange(const Kernel& k, int nest, int statement);

struct NestPlan {
  int nest = 0;
  NestSchedule schedule;
  // Per index with a clause, in the order of nestIndices (parallel indices, then reduction names).
  // (The space keeps a plan per candidate, tens of thousands: plans hold no copies they can avoid.)
  std::vector<IndexPlan> parts;
  LaunchPlan launch;
  std::vector<std::vector<Expr>> groups;  // hoistedReductionGroups
  std::vector<Expr> earlyLoads;           // earlyStatementLoads with `loads: early`, else empty
  OuterTile outerTile;                    // a reg part on a reduction index (schedule/Domain.h)
  StagingPlan staging;                    // empty without `shared:`
  CrossBlockPlan crossBlock;
  PositionPipeline pipeline;
  LongRowPlan longRows;
  AccumulationPlan accumulation;          // `accumulate: shared ...`, `aggregate: warp`
  // Shared memory of the tiles and of what the emitter declares beside them (a combine buffer per
  // accumulator type with reduction thread axes, the last-block flag of a reduction split across
  // blocks). Past 48 KiB the tiles go to dynamic shared memory, which the launch provides.
  int64_t sharedBytes = 0;
  int64_t staticExtraBytes = 0;
  bool dynamicShared = false;
  // Dynamic shared memory: where each tile starts (bytes, 16-byte aligned; per staging.arrays
  // entry) and the bytes the launch provides. Empty and 0 when the tiles are static arrays.
  std::vector<int64_t> tileByteOffsets;
  int64_t dynamicSharedBytes = 0;
  // Every thread of a block reaches the block's barriers (staged tiles, a reduction split across
  // threads or blocks): threads outside the domain do not return early, their points are guarded.
  bool cooperative = false;
  // `stores: streaming`: the statements (indices into the nest's body) whose stores use the
  // streaming store __stcs. A store streams when no other statement of the nest reads its array
  // (a value read back is better left in L2; the statement's own read of the element it updates
  // comes before the store) and its element type has one (not bool); a kernel-local array never
  // streams (a later nest reads it back). The stores of a reduction
  // split across blocks stream too: the output is stored once, by the tile's last block, after the
  // combine, whose partials (scratch the last block reads back) are never streamed. Empty with
  // `stores: cached`; a schedule asking for streaming where no store qualifies has no plan.
  std::vector<int> streamedStores;
  // `mma:`: the nest's contraction on tensor cores (schedule/Mma.h). Such a plan has no index
  // parts: the launch and the shared memory above are the mma plan's.
  std::optional<MmaPlan> mma;
  // `scan:`: the nest's scan in one pass (schedule/ScanPlan.h); no index parts either.
  std::optional<ScanPlan> scan;

  const IndexPlan* index(std::string_view name) const;  // nullptr if absent
  const IndexSchedule& clauseOf(const IndexPlan& ip) const { return schedule.indices[ip.clause]; }
  bool streams(size_t statement) const;  // whether the store of body[statement] streams
};

// The plan of nest `nest` of the bound kernel `k` under `s`, or every reason why there is none
// (prefixed "nest N: " in kernels of several nests, as validateSchedule reports them).
struct NestPlanResult {
  std::optional<NestPlan> plan;
  std::vector<std::string> reasons;
  // Without a plan: the staging plan when it was made before a later check rejected the schedule
  // (too many bytes; buffers without steps), for the space's probes of variants to generate.
  std::optional<StagingPlan> staging;
  bool ok() const { return plan.has_value(); }
};
// `facts`: the nest's NestFacts (schedule/Domain.h) where the caller plans many of its schedules.
NestPlanResult planNest(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits = {},
                        const NestFacts* facts = nullptr);
// The same for a schedule with a `scan:` clause (schedule/ScanPlan.cpp).
NestPlanResult planScanNest(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits);

// Nests run fused in one launch (`fuse: N`, Schedule.h): nests first..first+count-1 share their
// leading parallel index `index` (fusionConflicts, ir/Analysis.h, says when they may), whose
// clause is the same in each and whose first part, on grid axis `axis`, is the only grid part of
// the nests; so a block owns the values lo + blockIdx * rows + [0, rows) of it in every nest, runs
// the nests' points of them one nest after another, and the launch is theirs (the same block).
// The kernel-local arrays that only these nests use, each access at the shared index alone
// (`rowmax[i]`), live in shared memory: `rows` elements per block, never in device memory.
// `keep: x` on the group's first nest (Schedule.h): the values of array `array` that the group's
// nests read at one access (`access`, accessKey "i,j"), held in each thread's registers. The
// access names, besides the shared index, one other index `index`, which every nest that reads it
// (`readers`, the first loads) maps by the same clause (`parts`: serial, unroll and thread parts
// only) over the same constant range lo..lo+extent, and the shared index is one value per thread
// (grid and thread parts only): so a thread reads the same `count` values in every reader. Value
// `slot` is the mixed-radix number of the index's serial and unroll parts (thread parts are the
// thread's own), the same in every reader; slots past the range are guarded (never read).
struct KeptRow {
  int array = -1;
  std::string access;
  std::string index;
  std::vector<SchedulePart> parts;
  int64_t lo = 0, extent = 0;
  int64_t count = 1;
  std::vector<int> readers;
};
// The most values of one kept row a thread holds: registers, not local memory (the emitter indexes
// them by constants; past this a row spills or costs occupancy). A block of T threads must fit a
// multiprocessor's 65536 registers (at most 255 a thread), and the nests' own code needs about as
// many as the row may take: half of min(255, 65536 / T), at most 64 (1024 threads: 32 values).
constexpr int64_t kMaxKeptValues = 64;
int64_t keptValueCap(int64_t threadsPerBlock);

struct FusionGroup {
  int first = 0, count = 1;
  std::string index;  // the shared index, as nest `first` names it
  int axis = 0;
  int64_t lo = 0;
  int64_t rows = 1;
  std::vector<int> sharedLocals;  // param ids
  int64_t sharedBytes = 0;        // of the shared locals
  std::vector<KeptRow> kept;      // `keep:`, in clause order
  bool holds(int nest) const { return nest >= first && nest < first + count; }
};

struct SchedulePlan {
  std::vector<NestPlan> nests;        // one per nest when every nest has a plan
  std::vector<std::string> reasons;   // else why not
  std::vector<FusionGroup> fusions;   // the groups of more than one nest, in nest order
  bool ok() const { return reasons.empty(); }
  const FusionGroup* groupOf(int nest) const;  // nullptr: the nest runs alone
};

// The fusion groups of `s` (its `fuse:` clauses) for the nests' plans, or the reasons why they
// cannot be fused (schedule/Fusion.cpp). Marks the fused nests' plans cooperative: every thread of
// a block reaches the barriers between the nests.
std::vector<FusionGroup> planFusion(const Kernel& k, const Schedule& s, std::vector<NestPlan>& plans,
                                    const ScheduleLimits& limits, std::vector<std::string>& reasons);
SchedulePlan planSchedule(const Kernel& k, const Schedule& s, const ScheduleLimits& limits = {});

// The index parts and the launch of `s` alone, without checking anything (clauses of unknown
// indices, repeated clauses and clauses with bad factors are left out): what the static model
// needs of a schedule it probes before validation. planNest builds its plan from the same function.
NestPlan sketchNest(const Kernel& k, int nest, const NestSchedule& s, const std::vector<NestIndex>& indices);

// The plan in words, for `rtcgc explain`: launch, index parts, staged tiles, pipeline, split
// reductions, shared memory, early loads. Several lines, each ending in '\n'.
std::string printPlan(const Kernel& k, const NestPlan& plan);
// A fusion group in words: "fused: nests 0 to 2 in one launch over 'i' (1 value per block);
// locals in shared memory: rowmax, rowsum (8 bytes per block)\n".
std::string printFusion(const Kernel& k, const FusionGroup& g);

}  // namespace rtcg
