// The indices of a loop nest as a schedule sees them: each parallel loop, and each reduction
// index name (all reduction loops of that name in the nest), with the hull of the values it takes.
// Interval arithmetic here is self-contained so that scheduling does not depend on the heavier
// analyses of ir/Analysis.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/Interval.h"
#include "schedule/Schedule.h"
#include "schedule/StageRing.h"

namespace rtcg {

// Inclusive integer range [lo, hi]; empty when hi < lo (the analyses' Interval).
using IndexRange = Interval;

// Value of an integer expression built from literals, bound size parameters (k.sizes) and
// integer arithmetic (floor / and %); nullopt if it is not such a constant.
std::optional<int64_t> constIntValue(const Expr& e, const Kernel& k);

// Conservative range of an integer expression when the Index variables in `vars` (by id) range
// over the given intervals. nullopt if unbounded (loads, unknown variables, floats, ...).
std::optional<IndexRange> rangeOfInt(const Expr& e, const Kernel& k,
                                     const std::map<int, IndexRange>& vars);

struct NestIndex {
  std::string name;
  bool parallel = false;
  std::vector<const Loop*> loops;  // the parallel loop, or every reduction loop of this name
  IndexRange hull;                 // values the index takes anywhere in the nest
  bool constantBounds = false;     // every loop of it has constant lo and hi
  bool dataDependent = false;      // a loop of it has a range that reads an array (hull: ir/DataRanges.h)
};

// The parallel indices of nest `nest` (outermost first), then its reduction index names in order
// of first appearance. nullopt (with `error` set) when a bound cannot be bounded.
std::optional<std::vector<NestIndex>> nestIndices(const Kernel& k, int nest, std::string* error = nullptr);

// The mean trip count of reduction loop `loop` of nest `nest` over the points of its scope (the
// parallel domain and the reduction loops around it): (n + 1) / 2 for `j in 0..i + 1` under
// `i in 0..n`, where the hull is n. Sampled (up to 16 evenly spaced values per enclosing loop, each
// weighted by the points under it), so exact for affine bounds over affine domains up to rounding.
// nullopt when a bound in its scope cannot be evaluated at a point (it reads an array).
std::optional<double> meanTripCount(const Kernel& k, int nest, const Loop& loop);
// The points of nest `nest`'s parallel domain, sampled the same way: n (n + 1) / 2 for the triangle
// `i in 0..n, j in 0..i + 1`. nullopt when a bound cannot be evaluated at a point.
std::optional<double> domainPoints(const Kernel& k, int nest);

// Extent of each part of an index of extent `extent` (the first part covers the rest; its extent
// is at least 1). Factors must be positive. Their product saturates at kMaxSaturatedPoints (no
// overflow, however large the factors): indexPointsProblem refuses such clauses.
constexpr int64_t kMaxSaturatedPoints = int64_t(1) << 62;
std::vector<int64_t> partExtents(const IndexSchedule& s, int64_t extent);

// Why the parts of clause `s` cover more points than the emitted code can count (nullopt: they do
// not): an index and the counters of its parts are 32-bit integers, so the points (the product of
// the part extents) must be at most 2^31 - 1, and the last one, hull.lo + points - 1, too. A
// `serial 2147483648` part wrapped its int counter: the loop never ended and stored out of bounds.
std::optional<std::string> indexPointsProblem(const IndexSchedule& s, const IndexRange& hull);
// The part of indexPointsProblem that holds for every kernel (the product of a clause's factors
// alone), for schedules met without their kernel: a tuning database's imported rows.
std::optional<std::string> factorProductProblem(const Schedule& s);

// Every Reduce expression reachable from `e` (pre-order, outer reductions first).
void collectReductions(const Expr& e, std::vector<Expr>& out);
// The Reduce expressions of `e` not inside another one (schedule/Reduction.cpp).
void topReductions(const Expr& e, std::vector<Expr>& out);
// The ids of the variables of `kind` that `e` names, into `out`.
void varIds(const Expr& e, VarKind kind, std::set<int>& out);

}  // namespace rtcg

namespace rtcg {

// ---------------------------------------------------------------------------------------------
// Reductions computed ahead of the statements.
//
// The emitter computes a top-level reduction of a statement ahead of the statements (so that the
// points of a register tile share one pass over the reduction loops, and reductions over the same
// loops share one loop) when it depends on no let, reads no array the nest writes, and its ranges
// that read arrays (data-dependent) do not depend on a parallel index with a register part. Affine
// bounds on a register-tile index are fine: the loops run over the union of the points' ranges
// (clamped to the hull) and each point's updates are guarded by its own range. Such reductions are
// grouped by their loop structure (same names and bounds); groups and their members are in order of
// appearance.
std::vector<std::vector<Expr>> hoistedReductionGroups(const Kernel& k, int nest, const NestSchedule& s);

// What planning a schedule of one nest finds from the nest alone: its indices (nestIndices) and its
// hoisted groups, which depend on the schedule only through the nest's loops with a reg part
// (memoized by those). Found once where many schedules of one nest are planned (the space plans
// tens of thousands) and handed to planNest, which otherwise finds them per schedule. Not
// thread-safe (the memo).
class NestFacts {
 public:
  NestFacts(const Kernel& k, int nest);
  const Kernel& kernel() const { return *k_; }
  int nest() const { return nest_; }
  // nestIndices(k, nest, &error); nullptr where it is nullopt, error() saying why.
  const std::vector<NestIndex>* indices() const { return indices_ ? &*indices_ : nullptr; }
  const std::string& error() const { return error_; }
  // hoistedReductionGroups(k, nest, s) (valid while the facts live).
  const std::vector<std::vector<Expr>>& hoistedGroups(const NestSchedule& s) const;

 private:
  const Kernel* k_;
  int nest_;
  std::optional<std::vector<NestIndex>> indices_;
  std::string error_;
  mutable std::map<std::vector<int>, std::vector<std::vector<Expr>>> groups_;  // by the reg loops' ids
};

// The statements' loads that `loads: early` issues ahead of those reductions (an in-place
// update's old value: `rhs[k, i] = rhs[k, i] + ...`), so that their latency overlaps the
// arithmetic instead of following it: loads outside any reduction, in statements ahead of the
// first let, of arrays not staged in shared memory, with direct indices (no loads, no lets),
// whose array no earlier statement writes and the statement itself writes only at the same
// element. In order of appearance.
std::vector<Expr> earlyStatementLoads(const Kernel& k, int nest, const NestSchedule& s);

// ---------------------------------------------------------------------------------------------
// Register tiles of an outer reduction (a reg part on a reduction index).
//
// A reduction computed ahead of the statements whose body holds reductions of its own (`d[i] =
// min(j in 0..m, sum(e in 0..D, (q[i, e] - r[j, e]) * (q[i, e] - r[j, e])))`: an outer reduction
// over j around inner ones over e) may give its index a register part, as a parallel index does:
// with `j: serial, reg 4` each thread evaluates the body for 4 values of j at once. The inner
// reductions (grouped by their loops, as the hoisted groups are) make one pass over their loops for
// every register point of the parallel indices and every value of j (a q[i, e] load serves the 4
// values of j, an r[j, e] load the thread's points of i: the register tile of a matrix product),
// then the 4 results are folded into the thread's accumulator of the outer reduction. Values of j
// past its range are computed from its last value (in range) and left out of the fold. Thread and
// grid parts of j split the outer reduction as usual, and `shared:` stages r per step of j.
struct OuterTile {
  std::string index;      // the reduction index with the reg part; empty: none
  int group = -1;         // the hoisted group (hoistedReductionGroups) of the reductions over it
  size_t part = 0;        // its reg part
  int64_t extent = 1;     // values of the index a thread takes at once (the reg factor)
  std::vector<std::vector<Expr>> inner;  // the reductions nested in the group's bodies, by loops
  bool any() const { return group >= 0; }
};
// The outer tile of nest `nest` under `s` (any() false without a reg part on a reduction index),
// and in `reasons` why such a reg part cannot be emitted (empty when it can). `groups`: the
// nest's hoistedReductionGroups under `s`.
OuterTile outerTile(const Kernel& k, int nest, const NestSchedule& s, const std::vector<std::vector<Expr>>& groups,
                    std::vector<std::string>& reasons);

// ---------------------------------------------------------------------------------------------
// Shared-memory staging of read-only operands.
//
// A staged array is copied into a shared-memory tile (a box: one interval per dimension) and the
// reads it covers are served from the tile. The box of an affine access is found from the
// coefficients of its index expressions: every loop is either *uniform-based* (the same base for
// all threads of the block at the copy, plus an in-block span) or ranges over the hull of its
// values. Two levels:
//   Block: one copy per block (per position of the serial parts of parallel indices when the box
//          moves with them). Chosen when no access depends on a reduction index, or when the box
//          is the whole array (a small operand every block reads, like a DG derivative matrix).
//          Every read of the array in the nest is served from the tile.
//   Step:  one copy per iteration of the step part (stepPartOf: the first part not on the grid)
//          of the first loop of a hoisted reduction group; the step covers that loop's parts
//          after it and the group's inner loops in full. Grid parts ahead of the step part split
//          the reduction across blocks: each block steps through its share.
//          Only the reads inside that group's reductions are served from the tile.

// Keys of the uniform-based variables of a box: "p:<name>" for a parallel index (base: its lo
// plus its grid and serial/unroll parts; span: its thread and register parts) and "step" for the
// staged reduction step (base: lo + step * the inner factor; span: the inner factor).
struct StagedDim {
  std::map<std::string, int64_t> coeffs;  // uniform-based keys with their coefficients
  int64_t constant = 0;                   // origin = constant + sum(coeff * base(key))
  int64_t size = 1;                       // elements of the box along this dimension
  int64_t extent = 1;                     // the array's extent
  bool whole = false;                     // the box is the whole dimension (origin 0)
  bool clipped = false;                   // whole, and the block's span was larger than the array
                                          // (points outside the domain would index past the tile)
};

enum class StageLevel : uint8_t { Block, Step };

struct StagedArray {
  int array = -1;  // param index
  // The access it serves (accessKey: "i,k"), from a `shared: a[i,k]` entry; empty: every read of
  // the array the level covers.
  std::string access;
  StageLevel level = StageLevel::Block;
  int group = -1;              // Step: index into hoistedReductionGroups
  bool movesWithSerial = false;  // Block: the box depends on a serial/unroll part of a parallel index
  std::vector<StagedDim> dims;
  std::vector<size_t> order;     // storage order of the dimensions, outermost first (reversed for `a^T`)
  std::vector<int64_t> padded;   // box sizes (by dimension) with the padding of the innermost stored
                                 // dimension (see planStaging: +1 against bank conflicts of column
                                 // reads, else rows rounded to 16-byte alignment)
  int64_t elements = 1;          // product of padded: one buffer
  int64_t buffers = 1;           // Step level with `buffers: N`: N buffers of `elements`
  int64_t bytes = 0;             // every buffer
};

// Steps over a block's hull of a varying reduction range. Tiles staged per step along a reduction
// index whose bounds follow parallel indices (a triangle's row `k in 0..i + 1`) need the same
// steps, and so the same barriers, in every thread of the block: the steps run over the union of
// the block's ranges (for bounds affine in the parallel indices, their extremes over the block's
// in-block spans of those indices, at the block's bases, clamped to the index's hull), and each
// thread keeps its own range: a step that lies inside every thread's range (from the largest lo
// to the smallest hi over the block) runs unguarded, the others guard each value against the
// thread's (or register point's) own bounds. A block on a triangle's diagonal so takes up to one
// tile of values more than its longest row needs, masked.
struct HullBound {
  // Over the block, the bound lies in [least + sum(c * base), most + sum(c * base)], base the
  // block's base of each parallel index (the "p:<name>" keys of StagedDim: grid and serial parts).
  std::map<std::string, int64_t> coeffs;
  int64_t least = 0, most = 0;
  bool varies() const { return !coeffs.empty(); }
};
struct BlockHullSteps {
  int group = -1;     // the hoisted group staged per step (hoistedReductionGroups)
  std::string index;  // its first loop's index
  HullBound lo, hi;
  IndexRange hull;    // of the index: the steps are clamped to it
};

struct StagingPlan {
  std::vector<StagedArray> arrays;  // in the order of NestSchedule::shared
  // The ring of the tiles staged per step (`buffers: N` stages; `copy: async`: cp.async, else
  // the threads' registers; the block's barrier each step).
  StageRing ring;
  std::vector<BlockHullSteps> blockHulls;  // per group staged along a varying range
  int64_t bytes = 0;                // every tile (all its buffers), each aligned to 16 bytes
  std::vector<std::string> errors;  // why an array cannot be staged (empty when the plan is usable)
};

// The index expressions of a load as a `shared:` entry names them: printed, without spaces ("i,k"
// for a[i, k]).
std::string accessKey(const Kernel& k, const std::vector<Expr>& indices);
inline std::string accessKey(const Kernel& k, const Expr& load) { return accessKey(k, load->operands); }

// The `shared:` entry a staged tile comes from: its array's name, or with its access ("a[i,k]").
std::string stagingEntry(const Kernel& k, const StagedArray& sa);

// The in-block span of each part placement of a parallel index: the thread and register parts.
bool isInBlockPlacement(Placement p);

// ---------------------------------------------------------------------------------------------
// Reductions split across the threads of a block (a thread part on a reduction index): every
// thread accumulates a partial over its share of the values, then the partials of the threads
// computing the same outputs are combined in shared memory, and one thread stores.
//
// Why a nest's split reduction indices (thread or grid parts) cannot be emitted (empty if they
// can): every loop of a split index must be a loop of a reduction computed ahead of the
// statements (see hoistedReductionGroups). Bounds may vary with other indices (a triangle's row
// `j in 0..i + 1`; on a register-tile index: the union of the points' rows) or read arrays (a CSR
// row; not across blocks): each loop strides through its own range from its start, with trip counts
// computed at run time and the values past its end guarded.
// `facts`: the nest's NestFacts (its indices and hoisted reduction groups) when the caller has
// them; found here otherwise.
std::vector<std::string> splitReductionReasons(const Kernel& k, int nest, const NestSchedule& s,
                                               const NestFacts* facts = nullptr);

// ---------------------------------------------------------------------------------------------
// Reductions split across blocks (grid parts on one reduction index of the nest).
//
// The blocks with the same grid coordinates of the parallel indices (an output *tile*) share the
// reduction: block b of the tile (its coordinates on the reduction's grid axes) accumulates over
// its share of the values, combines its lanes (the threads on reduction thread axes), and its
// lane-0 thread of each slot (the other thread coordinates: one output point each) stores the
// block's partials in a module-global scratch array. Then the block's first thread adds one to
// the tile's arrival counter (after __threadfence); the block that brings it to `blocks` reads
// every partial of the tile in block order, the lanes of each slot striding over the blocks and
// then combined by the shared-memory tree (so the result does not depend on the order in which
// blocks arrive), evaluates the statements, and resets the counter to 0 for the next launch.
// This happens once per position of the serial/unroll parts of the parallel indices (each has
// its own counters and partials), so one launch does it all. Reductions of the nest over other
// indices are computed in full by every block.
//
// Scratch layout, per accumulator type: partials[((counter * values + v) * slots + slot) * blocks + b]
// (the lanes of a slot read neighbouring blocks), or without reduction thread axes (every thread
// a slot, split-K) partials[((counter * values + v) * blocks + b) * slots + slot] (neighbouring
// threads store and read neighbouring partials); counter = tile * positions + position (tile and b
// linear over their grid axes, x fastest) and v = reduction (in group order) * regPoints + register point.
struct CrossBlockPlan {
  std::string index;                     // the reduction index with grid parts; empty: none
  bool gridAxis[3] = {false, false, false};  // grid axes of that index
  int64_t blocks = 1;                    // blocks per tile (product of the index's grid parts)
  int64_t tiles = 1;                     // blocks along the grid parts of the parallel indices
  int64_t positions = 1;                 // iterations of the serial/unroll parts of parallel indices
  int64_t slots = 1;                     // output points per block at one position and register point
  int64_t regPoints = 1;                 // register-tile points per thread
  std::vector<int> groups;               // hoisted reduction groups (hoistedReductionGroups) over `index`
  std::map<ScalarType, int64_t> values;  // per accumulator type: values per slot
  int64_t counters = 0;                  // tiles * positions arrival counters (unsigned int)
  double scratchBytes = 0;               // partials of every type plus the counters
  bool any() const { return !index.empty(); }
};
// The plan of nest `nest` under `s` (any() false when no reduction index has a grid part). The
// schedule must be valid apart from its scratch size (validateSchedule checks that against
// ScheduleLimits::maxGlobalScratchBytes). `facts`: as for splitReductionReasons.
CrossBlockPlan crossBlockPlan(const Kernel& k, int nest, const NestSchedule& s, const NestFacts* facts = nullptr);

// The part of a reduction index's schedule that the staged steps iterate: its first part that is
// not on the grid. Grid parts ahead of it split the reduction across blocks (each block steps
// through its own share of the values: split-K); the parts after it make up one step. Equal to
// `is.parts.size()` when every part is on the grid.
size_t stepPartOf(const IndexSchedule& is);
// Values of the index one step covers: the product of the factors of the parts after stepPartOf.
int64_t stepSpanOf(const IndexSchedule& is);

// `facts`: as for splitReductionReasons.
StagingPlan planStaging(const Kernel& k, int nest, const NestSchedule& s, const NestFacts* facts = nullptr);

// How many plans of a non-empty `shared:` planStaging has made in this process (it is the costly
// part of planning a candidate): what tests check to keep the space from re-planning.
int64_t planStagingCount();

// Whether the box of `sa` moves with the parallel index `index` (a "p:<index>" key of its dims).
bool movesWith(const StagedArray& sa, const std::string& index);

// Per dimension of `sa`: the elements between consecutive indices in its shared-memory tile (1 for
// the innermost stored dimension, then the padded sizes inward out, in `order`).
std::vector<int64_t> storedPitches(const StagedArray& sa);

}  // namespace rtcg
