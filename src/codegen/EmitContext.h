// The emitter's private interface: the state of one loop nest's emission (EmitContext) and the
// functions of its parts, one file each:
//   EmitModule.cpp     emitCuda: the index type, the functions and globals of the module
//   EmitLaunch.cpp     planLaunch: the emitter's view of a nest's plan (Plan.h), before any code
//   EmitNest.cpp       the kernel function's skeleton: parameters, indices, guards, positions, stores
//   EmitExpr.cpp       lowering of IR expressions and array accesses
//   EmitReduction.cpp  reduction loops and steps, lane combines, the cross-block epilogue
//   EmitLongRows.cpp   `long_rows:`: data-dependent ranges too long for their lanes, taken by the block
//   EmitOuterTile.cpp  an outer reduction's register tile: inner reductions per value, then the fold
//   EmitStaging.cpp    shared-memory tiles: storage, bases, copies, prefetch and pipelines
//   EmitStageRing.cpp  the rings of staged tiles (schedule/StageRing.h): every ring's copies ahead and hand-over
//   EmitStore.cpp      the statements' stores: plain or streaming (`stores: streaming`)
//   CudaTypes.cpp      CUDA names of types, vector types, literals, math functions, identities
//   EmitFusion.cpp     nests fused into one launch (`fuse:`): their code in one function, barriers between
//   EmitKeptRows.cpp   `keep:`: a row that several fused nests read, held in the thread's registers
//   EmitMma.cpp        a contraction on tensor cores (`mma:`): staged tiles, fragments, epilogue
//   EmitMmaHalf.cpp    its 16-bit arithmetics (bf16 / f16): ldmatrix, 16-byte cp.async copies
//   EmitMmaF64.cpp     its FP64 shapes (m8n8k4; sm_90's m16n8k4/k8/k16): fragment registers, helpers
//   EmitScan.cpp       a scan (`scan:`): a look-back scan or a scan per line, from fixed templates
//   EmitPrelude.cpp    fixed device helpers (floor division, cp.async, mma)
// Everything here is internal to src/codegen; Emitter.h is the interface.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "codegen/CAst.h"
#include "codegen/Emitter.h"
#include "ir/IR.h"
#include "schedule/Domain.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"

namespace rtcg::emit {

namespace C = rtcg::c;

// Unique C identifiers. DSL names are kept where possible; clashes with C/CUDA words, the
// functions the emitted code calls, and earlier names get a numeric suffix. The order of calls
// decides the suffixes, so the emitted text depends on it: emission asks for names in code order.
class Names {
 public:
  std::string fresh(const std::string& base);

 private:
  std::set<std::string> used_;
  // Per base name, the suffix to try first: those below it were taken when last asked, and names
  // are never given back (an unrolled body asks for one base hundreds of times: counting up from
  // 2 each time was quadratic).
  std::map<std::string, int> nextSuffix_;
};

// Where an index value is first known: at the top of the kernel (grid/thread parts only),
// inside the serial loops of parallel indices, or per register-tile point.
enum class Level { Top = 0, Group = 1, Point = 2 };

struct ParallelIndex {
  // Facts (planLaunch).
  const NestIndex* ni = nullptr;
  const Loop* loop = nullptr;
  const IndexSchedule* sched = nullptr;
  std::vector<int64_t> ext, stride;
  Level level = Level::Top;
  Level guardLevel = Level::Top;
  bool exact = false;  // the parts cover the domain exactly: no guard
  // Names and values, set while emitting.
  C::ExprP base;                      // lo + grid/thread terms
  std::vector<std::string> loopVars;  // per part, for serial/unroll parts
  std::string pointName;              // C name of a per-point index
};

// A register part of a parallel index: one factor of the thread's register-tile points.
struct RegPart {
  int par;   // index into LaunchFacts::par
  int part;  // part number in its schedule
  int64_t extent;
};

// A serial or unrolled part of a parallel index: one loop around the work of a position.
struct LoopPart {
  ParallelIndex* p;
  size_t part;
};

// Positions pipelined (NestPlan::pipeline) as the emitter sees them: the step group whose one step
// per position is copied ahead, and the serial part of a parallel index whose positions are pipelined.
struct PipelinedPositions {
  int group = -1;
  ParallelIndex* par = nullptr;
  size_t part = 0;
  C::ExprP stepBase;  // the reduction's lo: the one step's base
};

// The facts of one nest under its schedule that decide the shape of the code: filled by planLaunch
// alone, before anything is emitted, and only read afterwards. What the schedule means (parts,
// launch, groups, staging, the cross-block split, the pipeline, shared memory) is the nest's plan
// (EmitContext::plan, schedule/Plan.h); these are the emitter's views of it, pointing at the
// loops of the nest and holding the C names chosen while emitting.
struct LaunchFacts {
  std::vector<NestIndex> indices;
  std::map<int, IndexRange> ranges;  // every loop id of the nest -> hull of its values
  std::vector<ParallelIndex> par;    // the parallel indices, outermost first
  std::vector<RegPart> regParts;     // register parts, in clause order
  int64_t regPoints = 1;             // register-tile points per thread
  std::vector<LoopPart> loopParts;   // serial/unroll parts of parallel indices, in clause order
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t threads = 1;  // threads per block
  // Cooperative code (shared-memory staging, reductions across threads or blocks): every thread
  // of the block reaches every __syncthreads, so threads outside the domain do not return early;
  // their work is guarded per point.
  bool cooperative = false;
  int fullMask = 0;                  // the thread axes of reduction indices (bit a for axis a)
  // Where the tiles live: static shared arrays, or (NestPlan::dynamicShared) slices of dynamic
  // shared memory at these element offsets.
  std::vector<int64_t> tileOffsets;  // per staging.arrays entry (dynamic: elements into its type's array)
  PipelinedPositions pipe;
};

// A staged array's tile in shared memory, as the reads served from it see it.
struct StageRef {
  std::string storage;  // the shared array
  C::ExprP offset;      // of the tile (the buffer read) in it, in elements
  std::vector<C::ExprP> origins;  // per dimension: the array index of the tile's first element
  std::vector<int64_t> pitch;     // per dimension: elements between consecutive indices in the tile
  // Per dimension: the extent to clamp indices into (0: none), for whole dimensions that the
  // block's points overrun (StagedDim::clipped). In-domain indices are in range already; a point
  // outside the domain then reads inside the tile, never past it.
  std::vector<int64_t> clampTo;
};

// Where a tile copy goes, and whether the reads of the environment are pointed at it afterwards.
struct TileTarget {
  C::ExprP buffer;  // which buffer of a double-buffered tile (null: the first)
  bool pointReads = true;
};

enum class TileCopy { Direct, LoadToRegisters, StoreFromRegisters, Async };

// The base of a step and whether it exists: step n from the first one (fromStart) or n after
// the current one.
using StepAt = std::function<std::pair<C::ExprP, C::ExprP>(int64_t n, bool fromStart)>;

// The register part of the reduction loop whose body is being emitted (an outer register tile,
// OuterTile in schedule/Domain.h): the loop's variable holds the first of the thread's values,
// value v is that plus v * stride.
struct RegisterValues {
  int loop = -1;        // the loop's id; -1: none
  int64_t extent = 1;   // values
  int64_t stride = 1;   // between neighbouring values
  C::ExprP hi;          // the loop's upper bound (exclusive)
  bool guarded = false; // values may lie past hi (then computed at hi - 1 and left out)
};

// Per-point environment for lowering IR expressions.
struct Env {
  std::map<int, C::ExprP> vars;                 // loop and let ids
  std::map<const ExprNode*, C::ExprP> hoisted;  // reductions computed ahead, by node
  // Integer divisors computed once (hoisted) with their rtcg_mod_magic: % by them is
  // rtcg_floormod_by, without a division.
  std::map<const ExprNode*, C::ExprP> divisorMagic;
  // Reads served from shared memory, by param and access (StagedArray::access: "" for every read
  // of the array, "i,k" for the reads a[i, k] only); see findStaged.
  std::map<std::pair<int, std::string>, StageRef> staged;
  RegisterValues regValues;                     // of the enclosing reduction loop
  // `keep:` (EmitKeptRows.cpp): by name of a kept row's index (every loop of that name in the
  // nest has its clause), the slot of the thread's value where a loop of it encloses the code.
  std::map<std::string, C::ExprP> keptSlots;
  // Reduction loops (ids) whose value lies in every point's own range here (a full step over a
  // block's hull, HullSteps): pointRangeGuard does not check them.
  std::set<int> coveredLoops;
};

// A kept row (`keep:`, KeptRow in schedule/Plan.h) that the nest reads: the thread's array of its
// values (declared by the fused function) and whether this nest loads it (its first reader).
struct KeptState {
  const KeptRow* row = nullptr;
  std::string storage;
  bool loads = false;
};

// The shared-memory storage of the tiles and the prefetch registers of step tiles.
struct StagingState {
  struct Tile {
    std::string storage;
    int64_t offset = 0;
  };
  std::vector<Tile> tiles;                                   // per NestPlan::staging.arrays entry
  std::map<size_t, std::vector<std::string>> prefetchRegs;  // per staged tile: prefetch registers
};

// The names of reductions combined across threads (lanes) and blocks.
struct ReductionState {
  // A thread's reduction lane (its coordinates on the reduction thread axes) and slot (its other
  // coordinates) index the combine buffers. A group reduced over some of the reduction thread
  // axes only combines the lanes of those (the threads that differ on the other axes hold the
  // same partial): lane and slot per axis mask.
  struct LaneSet {
    C::ExprP lane, slot;
    int64_t lanes = 1;
  };
  std::map<int, LaneSet> laneSets;  // by mask of thread axes (bit a for axis a)
  int64_t lanes = 1;                // threads that share one output point
  C::ExprP lane, slot;              // over every reduction thread axis
  std::map<ScalarType, std::string> combineBuffers;
  // A reduction split across blocks: the scratch arrays and this block's place.
  std::map<ScalarType, std::string> partials;  // global partials array per accumulator type
  std::string arrivals;                        // global arrival counters
  std::string lastBlock;                       // shared flag: this block arrived last
  C::ExprP tile, rblock;                       // linear tile and block-within-tile coordinates
};

// `long_rows:` (EmitLongRows.cpp): the shared list of the ranges handed to the block, and the
// flag of this thread's point (set where its range's bounds are loaded).
struct LongRowState {
  std::string count;                 // shared: two counters of the list's entries, by position parity
  std::string lo, hi;                // shared: per entry, the range handed over
  std::vector<std::string> indices;  // shared: per entry, each parallel index (LaunchFacts::par order)
  C::ExprP parity;                   // this position's counter (0 or 1)
  std::string flag;                  // bool: this point's range goes to the block
};

// A prelude: helper code a module carries once, ahead of its kernels. The module prints the
// declared preludes in the order of their ranks, so that its text depends only on which were
// declared. Each rank stands beside its text; the bands: 1000s cp.async, 2000s mma.sync, 3000s
// wgmma and TMA, 4000s the producer's and the row groups', 5000s wgmma shapes (in the order of
// first use), 6000s accumulations, 7000s scans, from 8000 the scan nests' functions.
struct Prelude {
  int rank = 0;
  const char* text = nullptr;
};

// What the module must carry beside its kernels, declared by the emitter parts that use it.
struct ModuleNeeds {
  // The floor division / modulo helpers used, of int and long long: bit 0 rtcg_floordiv, bit 1
  // rtcg_floormod (only those are emitted: NVRTC warns of an unused static function).
  uint8_t floorInt = 0;
  uint8_t floorLL = 0;
  // The declared preludes by rank.
  std::map<int, std::string> preludes;
  void need(const Prelude& p) { need(p.rank, p.text); }
  void need(int rank, std::string text);  // one text a rank
  // `text` at the band's first free rank unless the band [band, end) holds it: texts of one kind
  // (wgmma shapes, scan functions) in the order of their first use.
  void needInOrder(int band, int end, std::string text);
  // The producer's prelude depends on every producer nest (setmaxnreg's counts): EmitModule.cpp
  // declares it (producerRank) once the nests are emitted.
  static constexpr int producerRank = 4000;
  static constexpr int wgmmaShapeBand = 5000, scanFunctionBand = 8000;  // needInOrder's bands
  bool producer = false, producerSplit = false;
  bool producerThreadCopies = false;  // a kept B copied by the producer's threads (rtcg_cp_async_mbar_arrive)
  std::set<int64_t> producerRegisters;  // every count a `producer` nest's setmaxnreg moves to
};

// An accumulation's emission (EmitAccumulate.cpp): the block's copy in shared memory
// (`accumulate: shared`), and with `aggregate: warp` the current point's pending update. With
// `slices S`, sliceLo names the first element (relative to the range's lo) of the block's slice;
// with `copies R`, copyBase the offset of this warp's copy in the copies. Empty where not used.
struct AccumulationState {
  std::string copy;
  std::string ok, at, value;
  std::string sliceLo, copyBase;
};

// The state of one nest's emission. Not copyable: the facts point into themselves.
struct EmitContext {
  EmitContext(const Kernel& k, const NestPlan& plan, ModuleNeeds& needs, std::string indexType)
      : k(k), nestIdx(plan.nest), nest(k.nests[plan.nest]), plan(plan), sched(plan.schedule), needs(needs),
        idx(std::move(indexType)) {}
  EmitContext(const EmitContext&) = delete;
  EmitContext& operator=(const EmitContext&) = delete;

  // A function declaring `type name = init;` in `body` under a fresh name from its base and
  // returning the name (type: the index type where empty).
  auto declarer(std::vector<C::Stmt>& body, std::string type = {}) {
    return [this, &body, type = type.empty() ? idx : std::move(type)](const std::string& base, C::ExprP init) {
      std::string n = names.fresh(base);
      body.push_back(C::decl(type, n, std::move(init)));
      return C::name(n);
    };
  }

  const Kernel& k;
  const int nestIdx;
  const LoopNest& nest;
  const NestPlan& plan;        // what the schedule means for this nest (planSchedule), read, never derived again
  const NestSchedule& sched;   // plan.schedule
  ModuleNeeds& needs;
  const std::string idx;  // the index type: "int" or "long long"
  int arrayAlignment = kWholeAllocationAlignment;  // of every array argument's address (EmittedModule)
  LaunchFacts facts;
  Names names;
  std::vector<std::string> paramNames;  // C names by param id (arrays: the aligned pointers)
  std::map<int, std::string> letNames;  // by let id
  C::ExprP tid;                         // linear thread index in the block (cooperative code)
  StagingState stage;
  ReductionState red;
  LongRowState longRows;
  AccumulationState accum;
  // A nest fused with others (FusionGroup, schedule/Plan.h): the kernel-local arrays held in
  // shared memory, by param id -> the shared array of the block's rows, and the first value of
  // the shared index in the block (its row 0). Empty for a nest of its own.
  std::map<int, std::string> rowStorage;
  C::ExprP rowBase;
  // The kernel-local arrays that some fused nests keep in shared memory: they have no module
  // global, and no other nest names them (every nest's context knows them).
  std::set<int> localsInShared;
  // The kept rows this nest reads (`keep:`); empty in other nests.
  std::vector<KeptState> kept;
  // Float products lowered while this is positive are written __fmul_rn / __dmul_rn, which NVRTC
  // never contracts into a fused multiply-add: their operands reach a comparison, a conversion to
  // an integer or bool, or floor, where the one rounding the contraction saves could move the
  // result across a boundary (0.7f * 10.0f - 7.0f is 0 rounded, -1.2e-7 fused), and the
  // reference rounds every f32 product (docs/language.md 6.2). exactLets: the lets whose values
  // reach such an operation (emitStatements lowers them so too).
  int exactProducts = 0;
  std::set<int> exactLets;

  const IndexSchedule& scheduleOf(const std::string& name) const;
};

// ---------------------------------------------------------------------------------------------
// Small helpers (EmitNest.cpp)

// An index constant: int, or long long when it does not fit.
inline C::ExprP lit(int64_t v) {
  return C::intLit(v, v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max());
}
inline C::Unroll unrollOf(Placement p) { return p == Placement::Unroll ? C::Unroll::Full : C::Unroll::Never; }
// threadIdx.x (axis 0), blockIdx.z (axis 2)... cast to the index type.
C::ExprP coordinate(const EmitContext& ctx, const char* builtin, int axis);
// !e, written without the `!` where the operator can be flipped: !(a < b) is a >= b.
C::ExprP negate(const C::ExprP& e);
// a && b, either may be null (true).
C::ExprP andAll(C::ExprP a, C::ExprP b);
// Appends `from` to `to`.
void append(std::vector<C::Stmt>& to, std::vector<C::Stmt>&& from);
// `stmts` under `guard` (null: unguarded), appended to `out`.
void appendGuarded(const C::ExprP& guard, std::vector<C::Stmt>&& stmts, std::vector<C::Stmt>& out);

// ---------------------------------------------------------------------------------------------
// The parts

// EmitLaunch.cpp: fills ctx.facts.
void planLaunch(EmitContext& ctx);

// EmitNest.cpp: the kernel function of the nest.
C::Function emitNest(EmitContext& ctx, LaunchSpec& launch, std::vector<C::GlobalArray>& globals);
C::ExprP indexValue(EmitContext& ctx, const ParallelIndex& p, const std::vector<int64_t>* regValues);
// The register coordinates of register point `point` (one per LaunchFacts::regParts entry).
std::vector<int64_t> regValuesOf(const EmitContext& ctx, int64_t point);
// The kernel's parameters (and the aligned array pointers), and the header comment from ctx.facts'
// launch: for the mma emitter, which builds its own function.
void declareNestParams(EmitContext& ctx, C::Function& fn, LaunchSpec& launch, std::vector<C::Stmt>& body);
// The module-global array that holds kernel-local array `param` (IR.h), and the declarations of
// all of them (EmitModule puts them before the functions).
std::string localArrayName(const Kernel& k, int param);
std::vector<C::GlobalArray> localArrays(const Kernel& k);
void describeNest(const EmitContext& ctx, C::Function& fn);

// EmitFusion.cpp: the one kernel function of the nests of a fusion group.
C::Function emitFusedNests(const Kernel& k, const SchedulePlan& plan, const FusionGroup& g, ModuleNeeds& needs,
                           const std::string& indexType, int arrayAlignment, const std::set<int>& localsInShared,
                           LaunchSpec& launch);

// EmitMma.cpp: the kernel function of a nest with an `mma:` plan.
C::Function emitMmaNest(EmitContext& ctx, LaunchSpec& launch);
void declarePointIndices(EmitContext& ctx, int64_t point, Env& env, std::vector<C::Stmt>& out, C::ExprP& guard);
// The condition under which the current point is inside the domain, where a point outside it can
// get here (null: always inside).
C::ExprP pointGuard(EmitContext& ctx, Env& env, std::vector<C::Stmt>& out);
// The condition under which the parallel indices that a range read (a data-dependent bound, IR.h)
// uses are inside the domain, where a point outside it can get there (null: always inside).
C::ExprP rangeGuard(EmitContext& ctx, const Expr& read, Env& env, std::vector<C::Stmt>& out);
// EmitReduction.cpp: whether `e` names the parallel index of loop `index` where `env` does not
// know it (a register-tile index outside a point), and whether it names any register-tile index so.
bool pointIndexIn(const EmitContext& ctx, const Expr& e, const Loop& index, const Env& env);
bool namesPointIndex(const EmitContext& ctx, const Expr& e, const Env& env);
// A hoisted group's loops whose bounds name register-tile indices run over the union of the points'
// ranges: the condition (null: none) under which a point's value of `loops` (in `penv`, which knows
// the point's indices) lies in the point's own range; `groupEnv` is the environment of the loops.
C::ExprP pointRangeGuard(EmitContext& ctx, const std::vector<Loop>& loops, const Env& groupEnv, Env& penv,
                         std::vector<C::Stmt>& out);

// EmitExpr.cpp
C::ExprP lower(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out);
// The lets of `nest` whose values reach a comparison, a conversion to an integer or bool, or floor
// of floats (EmitContext::exactLets): lowered with exactProducts set.
std::set<int> lowerLetsExactly(const LoopNest& nest);
// The tile that serves the read of `array` at `indices` in `env` (its access's own tile, else the
// array's), or null: read from global memory.
const StageRef* findStaged(const EmitContext& ctx, const Env& env, int array, const std::vector<Expr>& indices);

C::ExprP lowerAccess(EmitContext& ctx, int array, const std::vector<Expr>& indices, Env& env,
                     std::vector<C::Stmt>& out);

// EmitReduction.cpp
using ReductionBody = std::function<void(Env&, std::vector<C::Stmt>&)>;
void emitReductionLoops(EmitContext& ctx, const std::vector<Loop>& loops, size_t q, Env env, std::vector<C::Stmt>& out,
                        const ReductionBody& inner, int stageGroup = -1);
C::Stmt combine(ReduceOp op, ScalarType t, const C::ExprP& acc, const C::ExprP& v);
int groupMask(const EmitContext& ctx, const std::vector<Expr>& g);
inline bool splitGroup(const EmitContext& ctx, const std::vector<Expr>& g) { return groupMask(ctx, g) != 0; }
std::vector<ScalarType> combineBufferTypes(const EmitContext& ctx);
void declareLanes(EmitContext& ctx, std::vector<C::Stmt>& body);
void declareCrossBlock(EmitContext& ctx, std::vector<C::Stmt>& body);
void combineLanes(EmitContext& ctx, ReduceOp op, ScalarType t, const C::ExprP& acc, std::vector<C::Stmt>& out,
                  int mask);
using PointAccumulators = std::vector<std::map<const ExprNode*, C::ExprP>>;
void crossBlockCombine(EmitContext& ctx, const PointAccumulators& accs, const C::ExprP& position,
                       std::vector<C::Stmt>& out, std::vector<std::vector<C::Stmt>> pointStatements);
bool readsOnlyTiles(const EmitContext& ctx, const std::vector<Expr>& g, const Env& env);

// EmitBlockHull.cpp: the steps of a group staged along a varying reduction range (BlockHullSteps
// in schedule/Domain.h). The block's steps run over [lo, hi) (uniform); values in [fullLo, fullHi)
// lie in every thread's range; ownLo and ownHi (null: not checked per thread, being constant or on
// register-tile indices, which pointRangeGuard checks per point) are the thread's own bounds.
struct HullSteps {
  C::ExprP lo, hi, fullLo, fullHi, ownLo, ownHi;
};
const BlockHullSteps* blockHullOf(const EmitContext& ctx, int group);
// The bounds of loop `l` (the group's first) declared into `out`, in `env` (the block's position).
HullSteps hullSteps(EmitContext& ctx, const BlockHullSteps& bh, const Loop& l, Env& env, std::vector<C::Stmt>& out);
// v inside the thread's own range (null: always).
C::ExprP ownRangeGuard(const HullSteps& h, const C::ExprP& v);
// Whether the step of `span` values from `start` lies inside every thread's range.
C::ExprP fullStep(const HullSteps& h, const C::ExprP& start, int64_t span);

// EmitOuterTile.cpp: one step of hoisted group `gi` with an outer register tile (NestPlan::outerTile):
// the inner reductions of every register value of the outer index and point, then their fold into `accs`.
void emitOuterTileStep(EmitContext& ctx, size_t gi, const Env& renv, const PointAccumulators& accs,
                       std::vector<C::Stmt>& out);

// EmitStaging.cpp
void declareTiles(EmitContext& ctx, std::vector<C::Stmt>& body);
std::map<std::string, C::ExprP> tileBases(const EmitContext& ctx, const C::ExprP& stepBase = nullptr,
                                          const C::ExprP& pipelinedAt = nullptr);
void stageTile(EmitContext& ctx, size_t t, const std::map<std::string, C::ExprP>& bases, Env& env,
               std::vector<C::Stmt>& out, TileCopy mode = TileCopy::Direct, const std::vector<std::string>& regs = {},
               const TileTarget& target = TileTarget());
bool stageBlockTiles(EmitContext& ctx, bool movesWithSerial, Env& env, std::vector<C::Stmt>& out);
bool hasStepStaging(const EmitContext& ctx, int group);
void copyStep(EmitContext& ctx, int group, const C::ExprP& step, const StepAt& stepAt, Env& env,
              std::vector<C::Stmt>& before, std::vector<C::Stmt>& stage, std::vector<C::Stmt>& after);
int64_t copyVector(const EmitContext& ctx, size_t t);
int64_t baseDivisor(const EmitContext& ctx, const std::string& key, int group);


// EmitLongRows.cpp (`long_rows:`, LongRowPlan): the shared list and its counters (after
// declareLanes, with a barrier); the position (linear) whose counter the appends use; the end of
// the range of loop `l` (its `hi`, or `lo` for a range that goes to the block, which is appended to
// the list); the guard of the statements of a point whose range stayed with its lanes (null: no
// such path); and the block's pass over the list after the position.
void declareLongRows(EmitContext& ctx, std::vector<C::Stmt>& body);
void setLongRowPosition(EmitContext& ctx, const C::ExprP& position);
C::ExprP longRowEnd(EmitContext& ctx, const Loop& l, const C::ExprP& lo, const C::ExprP& hi, const Env& env,
                    std::vector<C::Stmt>& out);
C::ExprP shortRowGuard(const EmitContext& ctx);
void emitLongRows(EmitContext& ctx, const Env& genv, std::vector<C::Stmt>& out);
// EmitNest.cpp: the statements of the nest (lets and stores) at one point, in `env`.
void emitStatementsAt(EmitContext& ctx, Env& env, std::vector<C::Stmt>& out);

// EmitStore.cpp: the store of statement `statement` (an index into the nest's body) of `value`
// into `target`, the lowered access.
C::Stmt emitStore(const EmitContext& ctx, size_t statement, const C::ExprP& target, const C::ExprP& value);

// EmitAccumulate.cpp: accumulations (Stmt::accumulate, AccumulationPlan). The atomic of statement
// `statement` into `target` (the lowered element), or with `aggregate: warp` the point's record of
// its update; the block's copy (`accumulate: shared`) declared and set to the identity, and merged
// at the end; the warp's pending update declared before a point's guard and issued after it.
C::Stmt emitAccumulation(EmitContext& ctx, size_t statement, const C::ExprP& target, const C::ExprP& value);
void declareAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body);
void mergeAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body);
void openWarpAggregation(EmitContext& ctx, std::vector<C::Stmt>& pbody);
void closeWarpAggregation(EmitContext& ctx, std::vector<C::Stmt>& pbody);
// The atomics and the warp-aggregated accumulations (fixed text), in a module with accumulations.
extern const Prelude accumulateHelpers;
extern const Prelude accumulateU32Helpers;

// EmitScan.cpp: a scan nest (`scan:`, ScanPlan): its kernel, which calls the nest's device
// function (a prelude of the 8000s band) that instantiates the fixed scan templates
// (scanHelpers, and scanWarpHelpers for `layout warp`) for it; the look-back's status words and
// ticket in `globals`.
C::Function emitScanNest(EmitContext& ctx, LaunchSpec& launch, std::vector<C::GlobalArray>& globals);
extern const Prelude scanHelpers;
extern const Prelude scanU32Helpers;
extern const Prelude scanWarpHelpers;

// EmitKeptRows.cpp (`keep:`): the unrolling of a loop of index `index` (fully, where the index is
// a kept row's: its slots must be constants); the slot of the thread's value of a kept row's index
// at loop variables `vars` (per part; "" for thread parts) of parts of extents `ext`, or of a one-
// part serial loop at value `value`, into env; the kept value that serves a read (null: none); the
// loads of the rows this nest loads, into body.
C::Unroll keptUnroll(const EmitContext& ctx, const std::string& index, Placement place);
void setKeptSlot(const EmitContext& ctx, const std::string& index, const std::vector<int64_t>& ext,
                 const std::vector<std::string>& vars, Env& env);
void setKeptSlotOfSerial(const EmitContext& ctx, const Loop& l, const C::ExprP& value, Env& env);
C::ExprP keptRead(const EmitContext& ctx, int array, const std::vector<Expr>& indices, const Env& env);
void loadKeptRows(EmitContext& ctx, const Env& env, std::vector<C::Stmt>& body);

// EmitPrelude.cpp
// __device__ helpers for floor division and modulo of possibly negative integers of `type`.
std::vector<C::Function> floorHelpers(const std::string& type, uint8_t which);
// The cp.async helpers of `copy: async` (fixed text).
extern const Prelude asyncCopyHelpers;
extern const Prelude asyncCopyAtHelpers;
// The tensor-core helpers of `mma:` (fixed text): TF32 rounding and one mma.sync per shape. The
// host emulation of the tests defines the same functions (with the fragment layouts of the PTX ISA).
extern const Prelude mmaHelpers;
// The 16-bit mma helpers (fixed text): ldmatrix and mma.sync m16n8k16, bf16 and f16.
extern const Prelude mma16Helpers;
extern const Prelude mmaS8Helpers;
// EmitMmaF64.cpp: the sm_90 FP64 mma helpers (fixed text): mma.sync m16n8k4, m16n8k8, m16n8k16 .f64.
extern const Prelude mmaF64Sm90Helpers;

}  // namespace rtcg::emit
