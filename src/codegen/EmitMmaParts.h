// Internal to the mma emitter (EmitMma.cpp, EmitMmaHalf.cpp): the names the kernel's parts share.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "codegen/EmitContext.h"
#include "codegen/EmitStageRing.h"

namespace rtcg::emit::mma {

// A staged tile: its own static shared array (offset 0), or a slice of the dynamic shared memory.
struct Tile {
  std::string storage;
  int64_t offset = 0;  // elements
};

struct MmaNames {
  C::ExprP tid, lane, g, t, wm, wn, m0, n0;
  C::ExprP wgm, wgn;               // wgmma: the warpgroup's origin in the block tile
  C::ExprP aLane, bLane;           // 16-bit: this lane's ldmatrix row address in each tile (elements)
  std::vector<Tile> tileA, tileB;  // per part: [0] the (big) value, [1] the small part (tf32x3)
  std::vector<std::vector<std::vector<std::string>>> acc;  // [fm][fn][element]
  std::map<int, C::ExprP> batch;                           // batch loop id -> its value
  // What every epilogue point's Env starts from (its vars are the batch's): the subexpressions of
  // the batch indices alone (a per-batch constant: the Ozaki products' modulus) in `hoisted`, and
  // the multipliers of those that divide an i32 % (rtcg_mod_magic), computed once before it
  // (hoistBatchUniform).
  Env epilogue;
  std::string tmapA, tmapB;                                // TMA: the tensor map parameters' names
  C::ExprP rounds;  // `persistent`: the block's count of tiles (MmaPlan::persistentBlocks)
  // `pingpong` (MmaPlan::alternatingTiles): the consumer's index (its warpgroup) and, in its tile
  // loop, its count of tiles so far (the tile turn's phase).
  C::ExprP consumer, tileTurn;
  // mma.sync's row groups (MmaPlan::rowGroups): this thread's group, and the index and count of
  // the threads that copy its ring's stages (the group's; null / 0: the block's).
  C::ExprP rowGroup, copyTid;
  int64_t copyThreads = 0;
  // The copying thread's index and the copying threads' count: the row group's, else the block's.
  const C::ExprP& copier() const { return copyTid ? copyTid : tid; }
  int64_t copiers(int64_t blockThreads) const { return copyThreads > 0 ? copyThreads : blockThreads; }
  // For its lifetime the copies are the block's (a kept operand, which every thread copies before
  // the row groups' rings): copier() is tid and copiers() the block's threads; the group's again
  // after it.
  class BlockCopies {
   public:
    explicit BlockCopies(MmaNames& nm) : nm_(nm), tid_(nm.copyTid), threads_(nm.copyThreads) {
      nm.copyTid = nullptr, nm.copyThreads = 0;
    }
    ~BlockCopies() { nm_.copyTid = tid_, nm_.copyThreads = threads_; }
    BlockCopies(const BlockCopies&) = delete;
    BlockCopies& operator=(const BlockCopies&) = delete;

   private:
    MmaNames& nm_;
    C::ExprP tid_;
    int64_t threads_;
  };
  // The fragment epilogue's second pass (valuesFirst): the accumulators hold the statements'
  // values, which the stores take as they are.
  bool accumulatorsHoldValues = false;
};

// EmitMma.cpp: the block tile's origin (nm.m0, nm.n0) and batch indices (nm.batch), declared in
// `body`: from blockIdx (tile null), or (persistent) from the linear tile index `tile` in the
// batched order (MmaPlan::gridX). tileLoop: `persistent`'s loop over the block's tiles (round r:
// tile blockIdx.x + r * grid), each's origin declared first, then `each(round, body)`. `consumer`
// with alternatingTiles: the consumer's own rounds (nm.consumer + turn * consumers, turn counted
// in nm.tileTurn).
void declareTileOrigin(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& tile,
                       std::vector<C::Stmt>& body);
C::Stmt tileLoop(EmitContext& ctx, const MmaPlan& p, MmaNames& nm,
                 const std::function<void(const C::ExprP& round, std::vector<C::Stmt>& body)>& each,
                 bool consumer = false);

// The producer's prefetches of the epilogue's reads (MmaPlan::epiloguePrefetch) for the tile at
// (nm.m0, nm.n0) and nm.batch: each the bytes from the tile's first point to its last.
void epiloguePrefetches(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out);

using Offsets = std::vector<std::pair<int64_t, int64_t>>;  // per fragment register: (row, k) from (g, t)

// EmitMmaF64.cpp: the FP64 shapes' fragments (m8n8k4; sm_90's m16n8k4, m16n8k8, m16n8k16).
Offsets f64AOffsets(const MmaPlan& p);  // A registers: (row, k) offsets from (g, t)
Offsets f64BOffsets(const MmaPlan& p);  // B registers: (column, k) offsets from (g, t)
int f64AccElements(const MmaPlan& p);   // accumulators per fragment: 2 (m8n8k4) or 4
const char* f64MmaHelper(const MmaPlan& p);  // the prelude's helper of the shape

// Element `at` of a tile.
inline C::ExprP tileRef(const Tile& t, const C::ExprP& at) {
  return C::index(C::name(t.storage), t.offset ? C::sum({lit(t.offset), at}) : at);
}
inline C::ExprP bin(const char* op, C::ExprP a, C::ExprP b) { return C::binary(op, std::move(a), std::move(b)); }

// EmitMma.cpp: accumulator element r of fragment (fm, fn): its row and column in the block tile
// (PTX's C fragment layout), or in the domain with `blockOrigin` (the block tile's origin added).
std::pair<C::ExprP, C::ExprP> accPoint(const MmaPlan& p, const MmaNames& nm, size_t fm, size_t fn, int r,
                                       bool blockOrigin);

// N's stacked rows (statement, i) at a pair of wgmma's accumulator chunk (emitEpilogue): the
// statement and i - lo of its first column; where the statements differ only in their arrays
// (sameStoresButArrays), the chunk's array instead of the statement, chosen once for its pairs.
struct ChunkColumn {
  C::ExprP part, inner, array;
};

// Statement q's target and value at the point's column + `column`, the sum replaced by `sum`,
// their statements into `to`.
using PointAt = std::function<std::pair<C::ExprP, C::ExprP>(size_t q, int64_t column, const C::ExprP& sum,
                                                            std::vector<C::Stmt>& to)>;

// EmitMma.cpp: the epilogue's environment at the point (m, n + column), N's rows from `chunk`
// where given (emitPoint's and the odd rows' targets).
Env pointEnv(const MmaPlan& p, const MmaNames& nm, const C::ExprP& m, const C::ExprP& n, int64_t column,
             const ChunkColumn* chunk);
// EmitMma.cpp: the output point (mm, nn) relative to the domain's origin: declared, guarded, and
// `body(q, at, n)`'s statements for the statement there (the only one, or the stacked one its row
// or column picks; n: the column's name). With `chunk`, N's rows are bound from it rather than
// from the column's division.
void emitPoint(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::ExprP mm, C::ExprP nn, const ChunkColumn* chunk,
               const std::function<std::vector<C::Stmt>(size_t q, const PointAt& at, const C::ExprP& n)>& body,
               std::vector<C::Stmt>& out);
// The stacked statements' arrays chosen by `statement`, declared as the pointer `name`.
C::Stmt statementArrayDecl(const EmitContext& ctx, const MmaPlan& p, const C::ExprP& statement, const std::string& name);
// wgmma's chunk fn of stacked rows: its first column's statement and i - lo, declared once.
std::pair<C::ExprP, C::ExprP> declareChunkStatement(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, size_t fn,
                                                    std::vector<C::Stmt>& out);

// EmitMmaOddRows.cpp: wgmma's fragment epilogue on output rows of an odd number of f32 values.
// Whether it stores float2 pairs from each row's own alignment (`sameStoresButArrays`: stacked
// statements that differ only in their arrays), and one accumulator chunk's stores so: each
// chunk's first columns rotated once in the quad (`rotated`, shared by the epilogue's chunks),
// `plain` the chunk's stores as without where a chunk of stacked statements crosses into the next.
// OddPairState: what an epilogue's chunks share (the rotations; the rows of each run of one
// statement's columns, by its first column, declared at its first chunk).
bool oddPairStores(const EmitContext& ctx, const MmaPlan& p, bool sameStoresButArrays);
// A thread's row of the tile under one statement's odd pairs (EmitMmaOddRows.cpp, declareOddRows).
struct OddRow {
  C::ExprP pair, odd, inside, left;
};
struct OddPairState {
  std::map<std::pair<size_t, size_t>, std::string> rotated;
  std::map<int64_t, std::array<OddRow, 2>> runs;
};
void storeOddPairChunk(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t fn, OddPairState& state,
                       const std::function<void(std::vector<C::Stmt>&)>& plain, std::vector<C::Stmt>& out);

// EmitMmaRows.cpp: the rows of a side (Contraction::mRows / nRows). bindRow binds the loops of
// row `point` (from the side's origin) in env and returns the stacked statement's index there
// (null where the side stacks none); a plain side binds its loop to lo + point, as always.
C::ExprP bindRow(const MmaPlan& p, bool isA, const C::ExprP& point, Env& env);
// Binds the reduction loop of every statement (each sum has its own) to kLo + kq.
void bindK(const MmaPlan& p, const C::ExprP& kq, Env& env);
// The side's operand lowered by `lowerOne`: one expression, or where the side stacks statements
// (part not null) the choice `part == 0 ? x0 : part == 1 ? x1 : ... x_last` over their operands.
C::ExprP operandAt(const MmaPlan& p, bool isA, const C::ExprP& part,
                   const std::function<C::ExprP(const Expr& operand)>& lowerOne);
// The statements `body(q)` of stacked statement q chosen by `part` (an if-else chain), or body(0)
// in a block where part is null.
C::Stmt chooseStatement(const MmaPlan& p, const C::ExprP& part,
                        const std::function<std::vector<C::Stmt>(size_t q)>& body);

// EmitMmaHalf.cpp: the 16-bit arithmetics (bf16 / f16 m16n8k16), and the tiles as loaded that
// TF32 and FP64's sm_90 shapes with stages share with them (MmaPlan::tiles: AsLoaded).
// The lane's ldmatrix addresses in the tiles (nm.aLane, nm.bLane; TF32: of (rows x k) tiles only).
void declareLdmatrixLanes(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body);
// One operand's (rows x k) box of the step at k0 into the buffer starting at element `buffer`
// (null: the only one), as loaded: cp.async of 16 bytes where aligned, else element by element
// (16-bit: through registers; TF32: cp.async of 4 bytes). By the block's threads, or by `threads`
// threads whose index is `tid` (the producer warpgroup: MmaPlan::residentByThreads), in a loop
// not unrolled (its copies run once; unrolled, their addresses would take the registers).
void stageOperandAsLoaded(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, const C::ExprP& k0,
                      const C::ExprP& buffer, std::vector<C::Stmt>& out, const C::ExprP& tid = nullptr,
                      int64_t threads = 0);
// Whether stageOperandAsLoaded copies with cp.async (then the step waits for its group); whether
// it copies operand `isA` so (else through registers: 16-bit values not 16 bytes aligned).
bool halfCopiesAsync(const EmitContext& ctx, const MmaPlan& p);
bool copiesAsync(const EmitContext& ctx, const MmaPlan& p, bool isA);
// Elements per cp.async of operand isA's tile as loaded (16, 8 or 4 bytes' worth; 1: value by value).
int64_t copyRunElements(const EmitContext& ctx, const MmaPlan& p, bool isA);

// EmitMmaHoisted.cpp: `copies hoisted` (MmaPlan::hoistedCopies). prepare() declares in `out`, once
// per block, each of the thread's copies of the operand's box: its destination in a buffer, its
// source at the first step, and its bytes where only the rows bound them; copy() then issues the
// copies of ring step `step` (any step: past the last they zero-fill) into the buffer starting at
// element `buffer`, without a branch (where the copies do not divide among the threads, the last
// one's guard on the thread's index). For the steps whose copies are whole steps of the reduction
// (every k of the step in it), startCarried() declares each copy's source at ring step `first`,
// and copyWhole() issues the next step's copies from those sources and advances them a step: no
// clamp, no k guard, and where the rows are in range for every block (the tiles divide the rows)
// no byte count either. After `whole` such steps copy() takes its sources from the carried ones
// (at ring step first + whole), so that the prepared ones need no registers in the loop.
class HoistedCopies {
 public:
  void prepare(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, std::vector<C::Stmt>& out);
  void copy(EmitContext& ctx, const MmaPlan& p, const C::ExprP& step, const C::ExprP& buffer,
            std::vector<C::Stmt>& out) const;
  void startCarried(EmitContext& ctx, const MmaPlan& p, int64_t first, int64_t whole, std::vector<C::Stmt>& out);
  void copyWhole(EmitContext& ctx, const MmaPlan& p, const C::ExprP& buffer, std::vector<C::Stmt>& out) const;
  // Whether every copy's rows are in range for every block (copyWhole then gives no byte count).
  bool fullRows() const;

 private:
  struct Slot {
    C::ExprP index, dst, src, rowBytes, kk;  // index: the thread's copy number (guarded slot only)
    C::ExprP carried;                        // startCarried's source
    bool fullRows = false;                   // every block's run in range: V values, no byte count
  };
  bool isA_ = true, kMajor_ = false;
  int64_t V_ = 1, runs_ = 0, stepDelta_ = 0;
  int64_t carriedStep_ = 0;  // the ring step the carried sources reach after the whole steps
  C::ExprP base_;  // the array's start: the source of a copy of no bytes
  Tile tile_;
  std::vector<Slot> slots_;
};
// One fragment-k (kk) of the step: ldmatrix per fragment, then every mma.
void halfFragmentStep(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk, const C::ExprP& bufA,
                      const C::ExprP& bufB, std::vector<C::Stmt>& out);

// EmitMma.cpp: one fragment-k's operand registers at kk of the buffers starting at bufA and bufB
// (null: the only ones), as const locals declared in `out` (TF32 and FP64; the 16-bit
// arithmetics: halfFragmentStep), and the warp's mma on them. tf32x3 sums the small products first
// (a_small b_big, a_big b_small), then the big one, and adds that to the accumulator in FP32.
using Fragments = std::vector<std::vector<std::vector<C::ExprP>>>;  // [fragment][part][register]
struct WarpFragments {
  Fragments a, b;  // a[fm][part][reg], b[fn][part][reg] (part 1: tf32x3's small parts)
};
WarpFragments loadFragments(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk,
                            const C::ExprP& bufA, const C::ExprP& bufB, std::vector<C::Stmt>& out);
void issueMmas(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const WarpFragments& f, std::vector<C::Stmt>& out);

// EmitMma.cpp: the staged tiles (static arrays, or slices of the dynamic shared memory).
void declareMmaTiles(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body);

// The rings of the pipelined reductions are openRing's (EmitStageRing.h): mma.sync's and wgmma's
// cp.async copies of step s into buffer s % stages by a CopyStep, wgmma's fenced for the async
// proxy; the shared epilogue waits for every group (its tile is the operands' space). `fragments
// 2`'s ring (EmitMmaPrefetch.cpp) fills past the end instead (copyOrFill).
// In place of a step past the last one: a cp.async of no bytes (zero fill) into this thread's word
// of A's buffer `buffer`, which no later step reads, so that the group is not empty.
std::vector<C::Stmt> keepGroupFilled(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer);
// The first element of buffer `buffer` of operand isA's ring: buffer * its elements, after the
// rings of the row groups before this thread's (MmaPlan::rowGroups).
C::ExprP ringBuffer(const MmaPlan& p, const MmaNames& nm, bool isA, const C::ExprP& buffer);
// A ring's refill in the loop: step `stepIndex` copied into `buffer`, or past the last step
// (`steps`: null, the plan's steps) keepGroupFilled's copy there; then the commit (the group is
// never empty).
void copyOrFill(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const CopyStep& copyStep,
                const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to,
                const C::ExprP& steps = nullptr);

// EmitTma.cpp: TMA's parts of the ring (MmaPlan::ring: TMA): the copy (thread 0 issues a step's
// boxes from the tensor map parameters nm.tmapA and nm.tmapB) and the mbarrier hand-over (a
// stage's mbarrier at barrierAt). tmaHelpers: the prelude (rtcg_tensor_map, mbarrier and copy
// helpers).
RingCopy tmaCopy(const MmaPlan& p, const MmaNames& nm);
RingHandOver tmaHandOver(const MmaPlan& p, const MmaNames& nm);
extern const Prelude tmaHelpers;
// The pointer to mbarrier `index` (8 bytes each from MmaPlan::barrierOffset; stage s's is s).
C::ExprP barrierAt(const MmaPlan& p, const MmaNames& nm, const C::ExprP& index);
// The issue of step `stepIndex` into `buffer` (one thread's): the bytes expected on the stage's
// mbarrier (every box's, zero-filled parts too), then the boxes.
std::vector<C::Stmt> issueStep(const MmaPlan& p, const MmaNames& nm, const std::string& mapA, const std::string& mapB,
                               const C::ExprP& stepIndex, const C::ExprP& buffer);
// `resident` (MmaPlan::residentB): the issue of B's tiles of every step, at N origin `n0`, into
// B's buffer of each step, on mbarrier `bar` (one thread's).
std::vector<C::Stmt> issueResidentB(const MmaPlan& p, const MmaNames& nm, const C::ExprP& n0, const C::ExprP& bar);
// EmitWgmmaProducer.cpp (MmaPlan::ring: producer-consumer): the ring's hand-over part: its opening
// is the mbarriers' initialization and the producer warpgroup's branch (its steps' boxes, tf32x3's
// splits; then it returns), and the consumers wait for each step's stage (full, or tf32x3's
// ready). releaseStage(step) is the consumers' arrival on that step's stage's `empty` mbarrier,
// once its wgmma is waited for.
RingHandOver producerHandOver(EmitContext& ctx, const MmaPlan& p, MmaNames& nm);
void releaseStage(const MmaPlan& p, const MmaNames& nm, const C::ExprP& step, std::vector<C::Stmt>& to);
// residentB: the consumers' one wait for B's resident tiles (copied, and under tf32x3 split).
void waitResident(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to);
// orderedIssue: before a step's first wgmma, the wait for this warpgroup's turn; after its commit,
// the turn passed to the next consumer warpgroup.
void waitTurn(const MmaPlan& p, const MmaNames& nm, const C::ExprP& step, std::vector<C::Stmt>& to);
void passTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to);
// alternatingTiles: before a tile's first step, the wait for its tile turn (the previous round's
// consumer done issuing); after its last step's issue, the turn passed to the next consumer.
void waitTileTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to);
void passTileTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to);
// The prelude: rtcg_mbar_arrive, rtcg_cp_async_mbar_arrive (`threadCopies`: a plan's producer threads copy a
// kept B or A by cp.async), rtcg_ld4, rtcg_tf32_small and rtcg_tf32_small4_put (`split`: a plan splits
// tf32x3's tiles, MmaPlan::aByLoads' included), and rtcg_setmaxnreg_inc_N / _dec_N for each N of `counts`.
std::string producerHelpers(const std::set<int64_t>& counts, bool split, bool threadCopies);
// rtcg_prefetch_l2_range(first, end): the bytes from `first` rounded down to 16 to `end` rounded
// down to 16 into L2 (cp.async.bulk.prefetch.L2 takes 16-byte units; arrays are whole allocations,
// 16-byte aligned); the host emulation checks that [first, end) lies within one of the kernel's
// arrays.
extern const Prelude prefetchL2Helpers;
// EmitMmaPrefetch.cpp: rtcg_bar_sync(id, threads), a barrier of some of the block's warps (bar.sync).
extern const Prelude namedBarrierHelpers;
// rtcg_epilogue_yield(): the warp sleeps about 32 ns (__nanosleep; nothing in the host emulation),
// between an epilogue's chunks (EmitMmaOddRows.cpp, storeOddPairChunk).
extern const Prelude epilogueYieldHelpers;
// The tensor map parameters (nm.tmapA, nm.tmapB) after the function's others, and their
// LaunchSpec::tensorMaps.
void declareTensorMaps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::Function& fn, LaunchSpec& launch);
// EmitMmaPrefetch.cpp: the reduction with `fragments 2` (MmaPlan::prefetchFragments): the
// cp.async ring `stages` steps ahead, each step's fragment-k loaded before the previous one's mma,
// and the next step's first fragments loaded after the barrier that precedes the step's last mma.
void emitPrefetchedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const CopyStep& copyStep,
                         std::vector<C::Stmt>& out);
// The same with `copies hoisted` (MmaPlan::hoistedCopies): the copies prepared once (HoistedCopies)
// and issued after the step's barrier, before its last mma, whatever the step (zero fills past the
// last one); the ring's buffer index carried from step to step.
void emitHoistedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out);
// The same ring over a persistent block's tiles (mma.sync `persistent`, MmaPlan::keptWhole): one
// loop over the ring's steps of all its tiles, each copy at its own tile's origin, B's kept tile
// copied first where resident, and `finishTile` (the epilogue) with the accumulators zeroed after
// each tile's last step. `copyOperand(isA, k0, buffer, to)` copies one operand's box of the step
// at k0 into the buffer starting at element `buffer`, at the origin nm holds.
using OperandCopy = std::function<void(bool isA, const C::ExprP& k0, const C::ExprP& buffer, std::vector<C::Stmt>& to)>;
void emitPersistentPrefetchedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const OperandCopy& copyOperand,
                                   const std::function<void(std::vector<C::Stmt>& out)>& finishTile,
                                   std::vector<C::Stmt>& out);

// EmitWgmma.cpp: a warpgroup's accumulators of its 64 x N tile (nm.acc[0][chunk]: N / 2 a thread,
// chunk c holding rows g, g, g + 8, g + 8 and columns 2t, 2t + 1 of the warp's 16 x 8), declared
// as floats of zero named base<c>_<r>.
void declareWgmmaAccumulators(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body,
                              const char* base);

// EmitWgmmaRegisters.cpp: what a step's wgmma reads or writes in registers besides the
// accumulators. A set (MmaPlan::pingPong: two, alternating by step): A's fragments (registerA;
// [fragment-k][part][register], part 1 tf32x3's small ones, unsigned int bits) and tf32x3's
// partial sums, declared before the loop so that each set keeps its registers.
struct RegisterSet {
  std::vector<std::vector<std::vector<std::string>>> a;
  MmaNames partial;
};
RegisterSet declareRegisterSet(EmitContext& ctx, const MmaPlan& p, int set, std::vector<C::Stmt>& body);
std::vector<C::ExprP> nameList(const std::vector<std::string>& v);
// registerA: the warp's A fragments of the step from buffer `buffer` of the MN-major tile into the
// set's registers.
void loadRegisterA(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer,
                   const RegisterSet& rs, std::vector<C::Stmt>& body);
// After the wait that retired a group of helper `name`: its set's A registers read into `sink`
// (NAME_keep) and tf32x3's partial sums added to the accumulators.
void retire(const MmaPlan& p, const MmaNames& nm, const std::string& name, const RegisterSet& rs,
            const std::string& sink, std::vector<C::Stmt>& to);
// tf32x3: the step's buffer of each shared-memory tile split into big (in place) and small parts
// (the small tile's buffer `small`), then the async proxy fence and a barrier.
void splitStep(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer, const C::ExprP& small,
               std::vector<C::Stmt>& body);
// The split's loops alone, by `threads` threads whose index is `tid` (splitStep: the block's).
// `helper(x, small)` splits four values: rtcg_tf32_split4 (big parts rounded to nearest, in place).
// (The producer's split, whose big parts are the values truncated as the tensor cores read them,
// is its own: EmitWgmmaProducer.cpp.)
void splitTiles(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer,
                const C::ExprP& small, const C::ExprP& tid, int64_t threads, std::vector<C::Stmt>& body,
                const char* helper = "rtcg_tf32_split4");

// EmitWgmma.cpp: wgmma (MmaPlan::wgmma): the tiles, the warpgroup's accumulators (nm.acc[0][chunk]:
// 16 rows x 8 columns of each warp, as m16n8 fragments) and the pipelined steps.
// `persistent`: the steps and `finishTile` (the epilogue: EmitMma.cpp) run in tileLoop, after
// the producer's branch; otherwise the caller emits the epilogue after this.
void emitWgmmaMain(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body,
                   const std::function<void(std::vector<C::Stmt>& out)>& finishTile);
// Element offset of (row, k) in a stage's tile of one operand, in its canonical layout.
C::ExprP wgmmaTileAt(const MmaPlan& p, bool isA, const C::ExprP& row, const C::ExprP& k);
// The helpers' text: the common one (descriptors, fences; once per module) and the instruction of
// one plan's shape and layouts (a function per distinct name).
extern const Prelude wgmmaCommonHelpers;
extern const Prelude wgmmaSwizzleHelpers;  // `swizzle 128`'s descriptor, after the common ones
extern const Prelude wgmmaSplitHelpers;    // tf32x3's split (EmitWgmmaRegisters.cpp)
std::string wgmmaShapeHelper(const MmaPlan& p);

}  // namespace rtcg::emit::mma
