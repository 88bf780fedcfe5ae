// The schedule space of one nest (internal to schedule/Space.cpp and the family files beside it):
// NestSpace, the coordinator that the families of schedules add their variants to (each variant
// planned, validated and valued once, the illegal ones recorded with their reasons, the model's
// pruning at the end), and the helpers the families share to build placements.
//
// A family is one file of src/schedule/space/ with a generator `void xVariants(NestSpace&)` and
// one row of the family table (space/Families.cpp): its name, whether it applies to the nest, and
// its generator. NestSpace::run calls the rows in table order; the order is the order in which
// candidates are generated, which decides ties of the model's ranking (see Space.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/IntOps.h"
#include "schedule/Mma.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"

namespace rtcg::space {

inline SchedulePart part(Placement p, std::optional<int64_t> factor = std::nullopt) { return {p, factor}; }

inline constexpr Placement kGrids[3] = {Placement::GridX, Placement::GridY, Placement::GridZ};

// One schedule of one nest, with the model's estimate.
struct NestCandidate {
  std::string text;
  NestEstimate est;
  bool isDefault = false;
  std::shared_ptr<const NestPlan> plan;  // its schedule too
};

// The variants the validator may reject as a whole (the emitter does not support them for this
// nest): when none of a group is legal, its rejected variants are summarized in one pruned entry.
// Plain variants are reported one by one. (The order is the order of those entries.)
enum class Group { Plain, Shared, Split, CrossBlock, OuterTile };

// Enumerates the schedules of one nest. Everything generated is validated against the kernel
// (the other nests take their default schedule) and estimated by the model; what fails
// validation or the constraints is recorded with its reason.
class NestSpace {
 public:
  NestSpace(const Kernel& k, int nest, const SpaceOptions& o, const Schedule& defaults);

  std::vector<NestCandidate> kept;
  std::vector<PrunedCandidate> pruned;
  int64_t enumerated = 0;
  bool sharedOffered = false, splitOffered = false, crossBlockOffered = false;

  // The default schedule, then every family of the table that applies, then the model's pruning.
  void run();

  const Kernel& kernel() const { return k_; }
  int nest() const { return nest_; }
  const SpaceOptions& options() const { return o_; }
  const NestModel& model() const { return *model_; }
  // The nest's contraction where it qualifies for mma (schedule/Mma.h), matched once.
  const Contraction* contraction();

  // Adds a generated nest schedule (once), with its plan; false when it was generated before or
  // is illegal (recorded in `pruned`, or for a group other than Plain summarized by
  // finishGroups) or needs more shared memory than the limits allow.
  bool add(const NestSchedule& ns, Group group, bool isDefault = false);

  // The staging of a variant about to be generated, planned once (add takes the plan): its
  // plan's, or where the variant is rejected before its tiles are planned (a split-K share past
  // the scratch limit), planStaging's, as the generation has always seen it.
  StagingPlan stagingOf(const NestSchedule& ns);
  // Drops the plans that stagingOf made for variants that were not added.
  void forgetProbes() { planned_.clear(); }

  // The indices of up to `n` kept candidates that can be resident, best predicted first (ties in
  // generation order where `stable`, else in partial_sort's order).
  std::vector<size_t> bestKept(size_t n, bool stable = false) const;

  // Runs jobs 0 .. count-1, each adding variants, on up to enumerationThreads(options()) threads,
  // with the same outcome as running them one after another on this space: each job runs on a
  // shard (a NestSpace of its own that knows what this one had seen before), and the shards are
  // merged in job order, a variant that an earlier job generated dropped as add would have. A job
  // may depend on the space only through its own adds (what they return, its own kept entries);
  // where one of its adds returned true for a variant that an earlier job generated (in order,
  // add would have returned false), or it threw, the job is run again on this space, in order.
  void runJobs(size_t count, const std::function<void(NestSpace&, size_t)>& job);

 private:
  // A shard of `parent` for runJobs, planning and valuing with `model` (a copy of the parent's
  // model for its thread: the model memoizes, and is not thread-safe).
  NestSpace(const NestSpace& parent, const NestModel& model);
  // Appends a shard's adds that are new here, in its order.
  void merge(NestSpace& shard);

  const Kernel& k_;
  int nest_;
  const SpaceOptions& o_;
  const Schedule& defaults_;
  std::unique_ptr<NestModel> ownModel_;  // a shard has none
  const NestModel* model_;               // ownModel_, or a shard's thread's copy
  std::set<std::string> seen_;
  // A shard's: its parent's seen_ when the jobs began (also seen, here), and its adds of variants
  // new to it, in order, with what each returned and where its entry went.
  enum class Entry { Kept, Pruned, Rejected };
  struct Added {
    std::string text;
    Group group;
    bool result;   // what add returned
    bool accepts;  // marked its group as accepted
    Entry entry;
  };
  const std::set<std::string>* parentSeen_ = nullptr;
  std::vector<Added> added_;
  void noteAdded(std::string text, Group group, bool result, bool accepts, Entry entry);
  std::map<Group, bool> accepted_;                          // some variant of the group is legal
  std::map<Group, std::vector<PrunedCandidate>> rejected_;  // its illegal variants
  std::vector<std::string> reasonsBefore_, reasonsAfter_;   // of the other nests' defaults
  // Plans made before their variant is added (probes of its staging), by text: add takes them.
  std::map<std::string, NestPlanResult> planned_;
  std::optional<std::optional<Contraction>> contraction_;

  std::string where() const;
  NestPlanResult takePlan(const NestSchedule& ns, const std::string& text);
  void finishGroups();
  void prune();
};

// One row of the family table (space/Families.cpp): a family of schedules, whether it applies to
// the nest (its generator is called only then) and its generator.
struct SpaceFamily {
  const char* name;
  bool (*applies)(NestSpace&);
  void (*generate)(NestSpace&);
};
const std::vector<SpaceFamily>& spaceFamilies();

// The threads runJobs uses: options.threads, or where it is 0 the usable cores, at most 8.
int enumerationThreads(const SpaceOptions& options);

// Calls work(begin, end) for consecutive chunks that cover [0, n) (each once), on up to `threads`
// threads; the first exception a chunk throws is rethrown once all are done. For work whose
// chunks write their own results (merged by the caller in order).
void forChunks(size_t n, int threads, const std::function<void(size_t begin, size_t end)>& work);

// ---------------------------------------------------------------------------------------------
// Helpers the families share (space/Placements.cpp)

// How the register tile of a parallel index sits around its thread part.
struct TileLayout {
  int64_t xVector = 1;   // x: this many neighbouring points per thread (reg inside thread.x)
  bool yCyclic = false;  // y: the register tile outside thread.y instead of inside it
  int64_t yGroups = 1;   // y (not cyclic): the tile in this many runs, outside thread.y
};

// Reduction clauses: every reduction serial, the innermost one unrolled by `unroll` (or, with
// `step` > 0, tiled into steps of `step` for staging, the step unrolled where `unrollStep`).
std::vector<IndexSchedule> reductionClauses(const NestModel& m, int64_t unroll, int64_t step, bool unrollStep = false);

// The innermost reduction's extent (at least 1; 0 without a reduction).
int64_t innermostReductionExtent(const NestModel& m);

// Unroll factors worth trying for the innermost reduction.
std::vector<int64_t> unrolls(const NestModel& m);

// Product of the factors of the parts of `pc` placed where `placed` says.
int64_t partProduct(const std::vector<IndexSchedule>& pc, bool (*placed)(Placement));
inline bool isReg(Placement p) { return p == Placement::Reg; }

// Statements times register-tile points: the size of one step of an unrolled reduction body.
int64_t pointsPerThread(const NestSpace& s, const std::vector<IndexSchedule>& pc);

// Sizes from `options` worth trying for an extent: larger ones only while the previous size
// does not already cover it.
std::vector<int64_t> sizesFor(std::initializer_list<int64_t> options, int64_t extent);

// The placement of the parallel indices: `x` on thread.x (T threads, a register tile of rx
// outside it so that neighbouring threads still touch neighbouring points; with
// layout.xVector = v, v of those points neighbours inside the thread part, which the emitted
// code reads from shared memory as vectors), `y` (may be null) on thread.y with a register
// tile of ry inside it (or outside, layout.yCyclic: neighbouring threads on neighbouring rows,
// in different shared-memory banks), the rest on grid axes (x first, then y, z) and serial
// loops past three axes or past the 65535 blocks of grid.y/z.
std::vector<IndexSchedule> parallelClauses(const NestSpace& s, const NestIndex* x, int64_t tx, int64_t rx,
                                           const NestIndex* y, int64_t ty, int64_t ry,
                                           Placement xThread = Placement::ThreadX, TileLayout layout = {});

// Output tiles of a placement of the parallel indices (its blocks) and the first grid axis it
// leaves free (-1: none), where a reduction split across blocks can go.
std::pair<int64_t, int> outputTiles(const NestModel& m, const std::vector<IndexSchedule>& pc);

// thread.y sizes for a few outputs per block beside a reduction split on thread.x: 1, and those
// of 2, 4, 8 that the innermost parallel index (none: null) has room for.
std::vector<int64_t> outputThreadYSizes(const NestIndex* innermost);

// ---------------------------------------------------------------------------------------------
// Generators one family calls from another's (the others are named only by the family table)

// Staging variants of one placement of the parallel indices (space/StagedFamily.cpp).
void sharedVariants(NestSpace& s, const std::vector<IndexSchedule>& pc);
// The wgmma schedules of one arithmetic (space/WgmmaFamily.cpp), generated ahead of mma's.
void wgmmaVariants(NestSpace& s, const Contraction& c, MmaArith arith);
// `long_rows: N` beside a few lanes per row (space/RowFamily.cpp).
void longRowVariants(NestSpace& s, const NestSchedule& base, int64_t lanes, int64_t threads);


// ---------------------------------------------------------------------------------------------
// The fused family, over the product of the nests' spaces (space/FusedFamily.cpp)

// The runs of consecutive nests that may be fused (fusionConflicts empty), longest from each start:
// [first, first + count) with count >= 2.
std::vector<std::pair<int, int>> fusableRuns(const Kernel& k);

// The fused candidates of run `run` into `out` (what has no plan into `pruned`), the other nests
// at their best-predicted schedule (`best`, one per nest).
void addFusedCandidates(const Kernel& k, const SpaceOptions& o, std::pair<int, int> run,
                        const std::vector<const NestCandidate*>& best, std::vector<Candidate>& out,
                        std::vector<PrunedCandidate>& pruned);

}  // namespace rtcg::space
