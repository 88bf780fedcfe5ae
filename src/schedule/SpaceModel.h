// The static cost model of the schedule space: a cheap estimate of how fast one nest runs under a
// nest schedule, from the footprints and strides of its accesses (ir/Analysis.h). It ranks
// candidates and prunes the hopeless ones; it never decides alone (the tuner measures).
//
// The model, per nest:
// - Launch shape: threads per block (thread parts), blocks (grid parts), register tile (reg parts
//   of parallel indices), outputs per thread (reg, serial and unroll parts of parallel indices).
// - Registers per thread ~ 24 + statements * register tile (the accumulators) + the operands of one
//   reduction value + the staged step's prefetch registers; with threads and staged shared bytes
//   this gives resident blocks per multiprocessor and the occupancy. Over 255, NVCC spills: the
//   arithmetic rate halves.
// - Instruction issue, per thread: multiply-adds (flops / 2), loads (each element the thread
//   uses, once: register tiles share operands; staged tiles read as 16-byte vectors where the
//   thread's points run along the stored rows), tile copies (3 per element: load, store,
//   address), loop control (3 per iteration of a rolled reduction loop part, 6 per staged step)
//   and stores. A multiprocessor issues one instruction per scheduler and clock, so the
//   arithmetic rate is the peak times the multiply-adds' share (the issue efficiency), times
//   W / (W + 4) for W warps resident per multiprocessor (slots idle while all wait at a barrier
//   or on shared memory).
// - Global traffic, per access, for one block (grid parts fixed, the block's tile): F = distinct
//   elements it touches (box footprint, capped by the number of index points), U = elements its
//   threads request (threads * per-thread footprint; a broadcast along thread.x counts once per
//   warp). Staged in shared memory: F, loaded cooperatively row by row (each row of the tile's
//   innermost dimension rounded up to 32-byte sectors). Otherwise: F + (U - F)/4
//   (repeated reads mostly hit in L1/L2, at a quarter of the cost), times the coalescing factor of
//   the stride along the thread.x index (1: 1x; 0: broadcast, 1x; s: min(32, |s|) sector waste).
//   Stores move F, times the same factor. Indirect accesses cost 4x their request count.
//   Bytes = blocks * per-block traffic.
// - Time = launch overhead + (max(memory, compute) + min(memory, compute) / 4) / efficiency, with
//   memory = bytes / bandwidth and compute = flops / (peak * issue efficiency) (imperfect overlap;
//   the peak is the sustained FP32 rate for fp32 operations and the device's FP64 share of it for
//   operations on f64 values: an f64 nest computes at half the rate on an H100;
//   with `copy: async`, compute * 1.15 and no prefetch registers: measured on an H100, cp.async
//   steps ahead helped memory-bound DG tiles by 3-8% and cost compute-bound matrix-product
//   tiles 9-17%), where efficiency =
//   (fraction of multiprocessors with a block) * (latency hiding: warps in flight per
//   multiprocessor times the ILP of the register tile, over 32) * (wave quantization), each <= 1.
// - A reduction over a reduction (`min(j, sum(e, ...))`): the inner loops run once per step of
//   the outer one, so an operand of the inner reduction that does not move with the outer index
//   (q[i, e]) is loaded again at each step, and the inner loops' control repeats with it; a reg
//   part on the outer index (an outer register tile) shares those loads over its R values and
//   holds R inner accumulators per register point, whose independent chains count as ILP.
// - A data-dependent range (a CSR row, ir/DataRanges.h) counts as a row of the mean length: its
//   extent over the parallel points. Its arrays' footprints are then one row's per parallel point
//   of the block's box (an undercount where a block holds several rows: each reads its own).
//   So does a reduction range whose bounds vary with other indices (a triangle's row `0..i + 1`:
//   (n + 1) / 2 values, not the hull's n; meanTripCount): a triangle costs half its square.
//   A triangular output domain counts its own points (domainPoints), and only the blocks whose
//   tile meets it (coveredBlocks): the others leave at once.
// - Work balance: where rows are of unequal length (a triangle's reduction range, a triangular
//   output domain), blocks hold unequal work, and a multiprocessor left at the end with a few long
//   blocks runs them at a fraction of its rate (k blocks of W warps hide latency as k * W * ILP / 32
//   of them, as in the efficiency). The model counts each block's work from the bounds (blockWork:
//   the trip counts of its points, a short row at least one step of its lanes), runs the blocks in
//   dispatch order on the multiprocessors (the first dealt in turn, each later one to the first
//   slot that frees, a multiprocessor's blocks sharing its rate), and scales the efficiency by the
//   time of equal blocks over that time (workBalance). So `i: grid.x` on trmv, whose last blocks
//   hold the longest rows, is charged its tail, and cyclic rows (`i: serial, grid.x G`: every
//   block's rows spread over the triangle) their own: a block's rows still differ by G per
//   position, so they balance only over several positions.
// - `stores: streaming`: neutral (a factor of 1 on the memory time). A streaming store moves the
//   same bytes as a plain one; its gain is L2 room for the reads other blocks repeat, which the
//   traffic model already counts as hits, so the model cannot value it and the tuner measures it
//   (see streamingStoreFactor).
// - `long_rows: N` (rows longer than N go to the whole block): the block's pass after each position,
//   120 cycles per block and position (two barriers, whatever the slots); no credit for the rows it
//   rebalances (the data decide: the space offers the family on lanes per row and on a row a
//   thread, the search samples one of each, the tuner measures them).
// - A reduction split across blocks (grid parts on a reduction index: blocks count them like any
//   grid part, and each block's footprint is its share) adds its second pass: 1 us for the fence
//   and atomic round trip, plus the last block of a tile reading the tile's partials (8 bytes per
//   block and output point) at one multiprocessor's share of the bandwidth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ir/Analysis.h"
#include "schedule/Domain.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

namespace rtcg {

struct NestEstimate {
  int64_t threads = 1, blocks = 1, registerTile = 1, outputsPerThread = 1;
  int64_t crossBlocks = 1;  // blocks sharing one output tile (grid parts of a reduction index)
  int64_t registers = 0, sharedBytes = 0, blocksPerMultiprocessor = 0;  // 0: cannot be resident
  double occupancy = 0, efficiency = 0;
  // Rows of unequal length: how busy the block slots stay with the blocks' own work, relative to
  // equal blocks (NestModel::workBalance; 1 where every block holds the same work). A factor of
  // the efficiency.
  double balance = 1;
  double issueEfficiency = 1;  // multiply-adds over all instructions a thread issues
  double bytes = 0, flops = 0, seconds = 0;
  double fp64Flops = 0;  // the share of flops on f64 values, at the device's FP64 rate
  std::string threadXIndex;   // index with the thread.x part ("" if none)
  int64_t storeStride = 1;    // stride of the (first) store along thread.x; 0 if broadcast or unknown
  std::string storeArray;
  std::map<std::string, double> reuse;  // read-only array -> requests / distinct elements per block
  std::map<std::string, int64_t> coalescing;  // read array -> sector waste factor along thread.x
};

// What the model knows of one nest of a bound kernel; built once, queried per candidate. Not
// thread-safe (it memoizes footprints).
class NestModel {
 public:
  NestModel(const Kernel& k, int nest);

  bool ok() const { return ok_; }  // the nest's indices could be bounded
  const std::string& error() const { return error_; }
  const Kernel& kernel() const { return *k_; }
  int nest() const { return nest_; }
  // The indices as the model counts them (a data-dependent or varying range: its mean row).
  const std::vector<NestIndex>& indices() const { return indices_; }
  // The nest's indices as nestIndices finds them (true hulls): what planStaging needs.
  const std::vector<NestIndex>& domain() const { return domain_; }
  // What planning the nest's schedules shares (planNest's `facts`).
  const NestFacts& facts() const { return facts_; }
  const NestIndex* index(const std::string& name) const;
  std::vector<const NestIndex*> parallel() const;
  std::vector<const NestIndex*> reductions() const;
  double parallelPoints() const { return points_; }
  // What of the arrays the nest only reads can be staged (`shared:` entries), in order of first
  // access: an array by name, or each access of it ("a[i,k]", "a[j,k]") where its reads move with
  // different parallel indices (one tile cannot serve them: a symmetric rank-k update).
  const std::vector<std::string>& readOnlyArrays() const { return readOnly_; }
  // The `shared:` entry of access `access` (an index into the nest's accesses) in `s` that stages
  // it ("" if none does).
  std::string stagedEntry(const NestSchedule& s, size_t access) const;

  // The work of each block of the launch, in dispatch order (blockIdx.x fastest): per point of its
  // tile at each of its positions, the product of its reductions' trip counts, at least one step of
  // the lanes sharing the point. nullopt where every block holds the same work (constant bounds) or
  // it cannot be counted (a data-dependent range, a bound that reads a reduction index, more than
  // 65536 blocks). A reduction split across blocks gives each of a tile's blocks its share.
  // The list is memoized by the model (valid while it lives); nullptr where it does not apply.
  const std::vector<double>* blockWork(const NestPlan& plan) const;
  // The values one step of the innermost reduction takes per point: its lanes times its unroll
  // parts (a row shorter than that still costs the step).
  int64_t stepValues(const NestPlan& plan) const;
  // The balance term (see "Work balance" above): the time the blocks would take with equal work
  // over the time they take with their own, both run on `sms` multiprocessors of `perSm` block
  // slots, a multiprocessor's blocks sharing its rate, k of them issuing at min(1, k * share) of
  // it. nullopt where blockWork is.
  std::optional<double> workBalance(const NestPlan& plan, int64_t sms, int64_t perSm, double share) const;

  // The estimate of a planned nest schedule (planNest): the launch, the staged tiles and the early
  // loads come from the plan.
  NestEstimate estimate(const NestPlan& plan, const DeviceModel& d) const;
  // The same for a schedule not planned (a probe that may not be legal): its sketch (sketchNest)
  // with its staging planned.
  NestEstimate estimate(const NestSchedule& s, const DeviceModel& d) const;

  // Shared bytes for staging `arrays` under schedule `s`: the block's footprint of each with the
  // innermost serial part of each reduction index as the step. nullopt if it cannot be bounded.
  std::optional<int64_t> stagedBytes(const NestSchedule& s, const std::vector<std::string>& arrays) const;
  std::optional<int64_t> stagedBytes(const NestPlan& plan, const std::vector<std::string>& arrays) const;

 private:
  const Kernel* k_;
  int nest_;
  NestFacts facts_;
  bool ok_ = false;
  std::string error_;
  std::vector<NestIndex> indices_;
  std::vector<NestIndex> domain_;   // the nest's indices with their true hulls (staging plans need them)
  std::set<std::string> meanRows_;  // indices whose hull here is a mean row (meanDataRows, meanVaryingRows)
  // Data-dependent ranges whose hull is shorter than the parallel points (a guarded fallback,
  // `0..flag[i]`): the mean trips per point, below one (meanDataRows). Their bodies' accesses and
  // arithmetic count at that share (tripShare).
  std::map<std::string, double> rareRows_;
  double tripShare(const Access& a) const;
  bool varying_ = false;            // some index's bounds vary with other indices (a triangle)
  bool parallelVarying_ = false;    // a parallel index's bounds do (a triangular output domain)
  std::vector<Access> accesses_;
  std::vector<std::string> readOnly_;
  std::vector<std::string> entryOf_;   // per access: its readOnly_ entry ("" for writes and written arrays)
  std::vector<std::string> keyOf_;     // per access: its accessKey ("i,k")
  double points_ = 1;       // parallel domain points (hull product)
  double flopsPerPoint_ = 0;
  double fp64FlopsPerPoint_ = 0;  // of which on f64 values

  struct Tiles {
    std::map<int, Interval> block, thread, step;  // by loop id
    std::map<std::string, int64_t> threadCount;     // index -> points per thread
    // Cyclic rows (a serial part ahead of a parallel index's grid part): the tiles are one
    // position's, whose rows lie G blocks' rows apart from the next position's; the block moves
    // this many positions' traffic.
    double cyclicPositions = 1;
  };
  std::vector<std::optional<std::set<int>>> usedLoops_;  // per access: loop ids of its affine offset
  // Per access, found once (the model asks for them per candidate): its flat offset (flatOffset:
  // its strides) and each index's affine form (toAffine).
  std::vector<std::optional<AffineForm>> flatForms_;
  std::vector<std::vector<std::optional<AffineForm>>> indexForms_;
  // strideAlong(access, loopId) from the flat offset found once.
  std::optional<int64_t> strideIn(size_t access, int loopId) const;
  // Per access: the loop id its last and its first index are (coefficient 1, alone), else -1.
  std::vector<std::pair<int, int>> rowLoops_;
  mutable std::map<std::vector<int64_t>, double> distinctCache_;
  // coveredBlocks' share, by the blocks and the span of a block along each parallel index.
  mutable std::map<std::vector<int64_t>, double> coveredCache_;
  mutable std::map<std::vector<int64_t>, std::optional<Box>> boxCache_;
  // blockWork's, by distribution of the rows (std::map: the entries stay where they are), with
  // workBalance's by residency (multiprocessors, blocks per multiprocessor, share).
  struct BlockWork {
    std::vector<double> works;
    std::map<std::tuple<int64_t, int64_t, double>, std::optional<double>> balance;
  };
  mutable std::map<std::vector<int64_t>, BlockWork> workCache_;
  BlockWork* countBlockWork(const NestPlan& plan) const;

  // Instructions one thread issues, by kind (see the model above).
  struct IssueCounts {
    double fmas = 0, loads = 0, copies = 0, control = 0, stores = 0;
    double total() const { return fmas + loads + copies + control + stores; }
  };

  // Per reduction index nested in another reduction: the index of the reduction around it (an
  // outer reduction, schedule/Domain.h OuterTile), by name.
  std::map<std::string, std::string> outerOf_;
  // Values of reduction index `name` a thread takes at once: the factors of its reg parts (1: none).
  static int64_t regValues(const NestPlan& plan, const std::string& name);
  // How many times a thread reads the elements of access `ai` it uses: once per step of every
  // outer reduction around its inner reduction that it does not move with (q[i, e] in
  // min(j, sum(e, ...)): once per value of j, over j's register values).
  double reloads(const NestPlan& plan, const Tiles& t, size_t ai) const;
  void meanDataRows();
  void meanVaryingRows();
  void listStagingEntries(const std::set<int>& written);
  double coveredBlocks(const NestPlan& plan) const;
  // The extents of the parts of an index under its plan: the plan's, or for a data-dependent or
  // varying range the parts of its mean row (meanDataRows, meanVaryingRows), which the plan (split
  // over its hull) is not.
  std::vector<int64_t> partsOf(const NestPlan& plan, const IndexPlan& ip, const NestIndex& ni) const;
  // The values a block steps through along a varying range staged over the block's hull
  // (BlockHullSteps): its mean row plus half the spread of the bounds over the block (a block of T
  // rows of a triangle takes its longest row, about T / 2 more than their mean), at most the true
  // hull; the mean row where `plan` does not stage along `ni` over a hull.
  int64_t hullRow(const NestPlan& plan, const NestIndex& ni) const;
  // Values stepped through per useful one over the plan's block hulls (1 without any): the masked
  // values of the steps take the issue slots of computed ones.
  double hullWaste(const NestPlan& plan) const;
  Tiles tiles(const NestPlan& plan) const;
  std::optional<int64_t> stagedBytes(const Tiles& t, const std::vector<std::string>& arrays) const;
  int64_t vectorWidth(const NestSchedule& s, size_t access, bool transposed) const;
  const NestIndex* innermostReduction() const;  // the last reduction index; nullptr if none
  double stepsPerThread(const NestPlan& plan) const;
  double loopControl(const NestPlan& plan) const;
  // What estimate's parts hand on to each other.
  struct EstimateState {
    Tiles t;
    IssueCounts issue;
    double operandsPerValue = 0;  // registers holding one reduction value's operands
    double activeBlocks = 1;      // blocks with work (a triangle's empty blocks leave at once)
    int64_t outerValues = 1;      // an outer register tile's values per point
    int64_t warps = 1;            // per block
    bool spills = false;          // the registers pass the cap
    int64_t spilled = 0;          // by how many
  };
  void estimateTraffic(const NestPlan& plan, NestEstimate& e, EstimateState& st) const;
  bool estimateResidency(const NestPlan& plan, const DeviceModel& d, NestEstimate& e, EstimateState& st) const;
  void estimateTime(const NestPlan& plan, const DeviceModel& d, NestEstimate& e, EstimateState& st) const;
  void addSecondPasses(const NestPlan& plan, const DeviceModel& d, NestEstimate& e) const;
  double distinctElements(size_t access, const std::map<int, Interval>& tile) const;
  const std::optional<Box>& box(size_t access, const std::map<int, Interval>& tile) const;
  std::vector<int64_t> tileKey(size_t access, const std::map<int, Interval>& tile) const;
  int loopIdIn(const Access& a, const std::string& index) const;  // -1 if not in a's scope
  int64_t warpRunLanes(const NestPlan& plan, size_t access) const;
  double bankConflictWays(const NestPlan& plan, size_t access, const StagedArray& sa, int64_t width,
                          const std::string& threadXIndex, int64_t threadX) const;
};

// Registers per thread an `mma:` schedule of a contraction of type `type` needs (before a cap):
// ~32 for addresses and indices, the accumulators, one step's fragment registers (tf32x3: big and
// small parts). The model's estimate, and the space's count for `blocks_per_sm` beside `mma:`.
int64_t mmaRegisters(const MmaSchedule& ms, ScalarType type);

// Registers per thread below which a `fragments 2` ring of FP64's sm_90 shapes does not compile
// without spills: its accumulators and two fragment-k sets (two registers a double), ~24 of
// addresses and counters; at least 64 (ptxas compiles no FP64 mma below that). What a
// persistent mma.sync ring's grid counts on (schedule/Mma.cpp, planPersistent), under
// __launch_bounds__ that cap the registers there.
int64_t mmaRegisterFloor(const MmaSchedule& ms);

// The model's estimate of a plan on tensor cores (plan.mma; schedule/SpaceModelMma.cpp).
NestEstimate estimateMma(const Kernel& k, const NestPlan& plan, const DeviceModel& d);

// Nests fused into one launch (FusionGroup, schedule/Plan.h), against the sum of their own
// estimates (`parts`, one per nest of the group): the launches after the first, and per nest the
// device-memory bytes it no longer moves: its accesses to the locals kept in shared memory (the
// whole local per array and nest), and three quarters of its reads of an array that an earlier
// fused nest read (the block read the same rows moments before: L1/L2 hits, charged at a quarter
// as the traffic model charges repeated reads; all of them for a row kept in registers, `keep:`,
// whose registers the plan caps, keptValueCap). A nest's saved time is its saved bytes at the
// bandwidth over its efficiency, at most 80% of its own time (it still computes, and barriers).
struct FusionSavings {
  double bytes = 0;
  double seconds = 0;
};
FusionSavings fusionSavings(const Kernel& k, const FusionGroup& g, const std::vector<NestEstimate>& parts,
                            const DeviceModel& d);

}  // namespace rtcg
