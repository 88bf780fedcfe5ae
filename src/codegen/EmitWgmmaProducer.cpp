// Warp specialization for wgmma (`mma: ... swizzle 128 tma producer`, MmaPlan::ring: producer-consumer): the
// block's last warpgroup is a producer. Its thread 0 issues each step's TMA boxes once the stage's
// buffer is free, which the consumers (the warpgroups of the output tile) say on the stage's
// `empty` mbarrier, every consumer warp arriving once the wgmma that read the stage is waited
// for; TMA completes the stage's `full` mbarrier. Under tf32x3 the producer's other three warps
// split the landed tiles, fence the small parts for the async proxy and arrive on the stage's
// `ready` mbarrier, which the consumers wait for instead of `full`. So no step meets the whole
// block at a barrier: the consumers' wgmma wait only for data, and the split runs beside them.
// The producer returns after its last step; it needs few registers, which setmaxnreg gives the
// consumers where the plan says so.
//
// The big parts of the split are the values as the tensor cores read them (their top 19 bits,
// truncated), so only the small parts (the rest, rounded to nearest) are written, to the stage's
// own small buffer: the split was what limited tf32x3, and writing only the small parts is faster
// at the same error than rounding the big parts in place; three warps split and thread 0 issues
// apart from them, as the issue would otherwise wait for the consumers (docs/bench.md, "Decisions
// and their measurements").
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

namespace {

// The mbarriers: a stage's full, empty and (tf32x3) ready; a consumer warpgroup's turn; `resident`'s
// one full and (tf32x3) ready for B's tiles (index 0 of theirs).
enum class Barrier { Full, Empty, Ready, Turn, ResidentFull, ResidentReady };

constexpr int64_t kSplitThreads = 96;  // tf32x3: the producer's warps 1-3 split the landed tiles
constexpr int64_t kProducerThreads = 128;  // the producer warpgroup (residentByThreads: all copy)

C::ExprP stageBarrier(const MmaPlan& p, const MmaNames& nm, Barrier which, const C::ExprP& buffer) {
  const int64_t turns = (p.splitBuffers ? 3 : 2) * p.ring.stages;
  const int64_t resident = turns + (p.orderedIssue || p.alternatingTiles ? p.consumerGroups() : 0);
  const int64_t first = which == Barrier::Turn           ? turns
                        : which == Barrier::ResidentFull  ? resident
                        : which == Barrier::ResidentReady ? resident + 1
                                                          : int64_t(which) * p.ring.stages;
  return barrierAt(p, nm, first ? C::sum({lit(first), buffer}) : buffer);
}

// A warp's one arrival on `bar`: lane 0's after a __syncwarp, which orders every lane's part
// before it (and in the host emulation, whose lanes are threads, makes the warp's wgmma waits
// precede it). One arrival a warp instead of 32 on one mbarrier: fewer shared-memory atomics at
// the same speed; the producer polls without sleeping (docs/bench.md).
void warpArrives(const MmaNames& nm, C::ExprP bar, std::vector<C::Stmt>& to) {
  to.push_back(C::exprStmt(C::call("__syncwarp", {})));
  to.push_back(C::ifThen(bin("==", nm.lane, lit(0)), {C::exprStmt(C::call("rtcg_mbar_arrive", {std::move(bar)}))}));
}

// Parity of the phase of a buffer's use by step `step`: its (step / stages)-th.
C::ExprP useParity(const MmaPlan& p, const C::ExprP& step) {
  return bin("%", bin("/", step, lit(p.ring.stages)), lit(2));
}

// The producer's wait before it refills ring step `at`'s stage (at `buffer`), past the ring's first
// round: the stage's previous use freed by the consumers (`empty`, that use's phase).
C::Stmt waitStageFree(const MmaPlan& p, const MmaNames& nm, const C::ExprP& at, const C::ExprP& buffer) {
  C::ExprP previous = bin("%", C::sum({bin("/", at, lit(p.ring.stages)), lit(1)}), lit(2));
  return C::ifThen(bin(">=", at, lit(p.ring.stages)),
                   {C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, Barrier::Empty, buffer), previous}))});
}

// tf32x3: the landed stage's tiles split by the producer's 96 splitting threads (thread `tid`),
// the small parts into the stage's buffer of the small tiles. Each thread loads kSplitBatch quads
// before it writes the small parts of any: the writes go to the same shared array as the loads,
// so the compiler would not issue a load before the write ahead of it, and each quad would cost a
// shared-memory round trip of its own (the split limited the DG rows: docs/bench.md, session 38).
constexpr int64_t kSplitBatch = 4;

// One operand's `size` values from element `start` of its big tile (the landed values) to the same
// place of its small tile.
void splitRange(EmitContext& ctx, bool isA, const std::vector<Tile>& tiles, const C::ExprP& start, int64_t size,
                const C::ExprP& tid, std::vector<C::Stmt>& body) {
  const int64_t rounds = (size / 4 + kSplitThreads - 1) / kSplitThreads;
  for (int64_t first = 0; first < rounds; first += kSplitBatch) {
    std::vector<C::Stmt> stores;
    for (int64_t r = first; r < std::min(rounds, first + kSplitBatch); ++r) {
      const std::string e = ctx.names.fresh(isA ? "split_a" : "split_b"), v = ctx.names.fresh("quad");
      body.push_back(C::decl(ctx.idx, e, C::product(C::sum({tid, lit(r * kSplitThreads)}), lit(4))));
      // A last round past the tile loads its first quad, and writes nothing.
      const bool past = (r + 1) * kSplitThreads * 4 > size;
      C::ExprP at = past ? C::ternary(bin("<", C::name(e), lit(size)), C::name(e), lit(0)) : C::name(e);
      body.push_back(C::decl("float4", v, C::call("rtcg_ld4", {C::unary("&", tileRef(tiles[0], C::sum({start, at})))})));
      C::Stmt store = C::exprStmt(C::call("rtcg_tf32_small4_put", {C::name(v), C::unary("&", tileRef(tiles[1], C::sum({start, C::name(e)})))}));
      stores.push_back(past ? C::ifThen(bin("<", C::name(e), lit(size)), {std::move(store)}) : std::move(store));
    }
    append(body, std::move(stores));
  }
}

// A landed stage's tiles (A's where not from registers, B's where not resident).
void splitLanded(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer, const C::ExprP& tid,
                 std::vector<C::Stmt>& body) {
  for (bool isA : {true, false}) {
    if ((isA && p.registerA()) || (!isA && p.residentB)) continue;
    const int64_t size = p.tile(isA).buffer;
    splitRange(ctx, isA, isA ? nm.tileA : nm.tileB, C::product(buffer, lit(size)), size, tid, body);
  }
}

// `resident`'s N origin: the block's N tile, the same for all its tiles.
C::ExprP residentOrigin(EmitContext& ctx, const MmaPlan& p) {
  return C::product(bin("%", coordinate(ctx, "blockIdx", 0), lit(p.nTiles())), lit(p.blockN));
}

// `resident` (MmaPlan::residentB), before the ring's first step: the issuer's copy of B's tiles
// (residentSplit: the splitters' one split of them).
std::vector<C::Stmt> residentIssue(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm) {
  if (!p.residentB || p.residentByThreads()) return {};
  return issueResidentB(p, nm, residentOrigin(ctx, p), stageBarrier(p, nm, Barrier::ResidentFull, lit(0)));
}

// residentByThreads: the producer warpgroup's copy of B's kept tiles (each step's at its buffer),
// before thread 0 issues the ring and the others split; every thread arrives on `resident full`
// once its copies have landed (through registers: once stored).
std::vector<C::Stmt> residentCopy(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& ptid) {
  std::vector<C::Stmt> body;
  if (!p.residentByThreads()) return body;
  MmaNames kept = nm;
  const std::string n0 = ctx.names.fresh("kept_n0");
  body.push_back(C::decl(ctx.idx, n0, residentOrigin(ctx, p)));
  kept.n0 = C::name(n0);
  for (int64_t step = 0; step < p.steps; ++step)
    stageOperandAsLoaded(ctx, p, kept, false, lit(step * p.blockK), lit(step * p.b.buffer), body, ptid, kProducerThreads);
  const char* arrive = copiesAsync(ctx, p, false) ? "rtcg_cp_async_mbar_arrive" : "rtcg_mbar_arrive";
  body.push_back(C::exprStmt(C::call(arrive, {stageBarrier(p, nm, Barrier::ResidentFull, lit(0))})));
  return body;
}

std::vector<C::Stmt> residentSplit(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& tid) {
  std::vector<C::Stmt> body;
  if (!p.residentB) return body;
  body.push_back(C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, Barrier::ResidentFull, lit(0)), lit(0)})));
  splitRange(ctx, false, nm.tileB, lit(0), p.steps * p.b.buffer, tid, body);
  body.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
  warpArrives(nm, stageBarrier(p, nm, Barrier::ResidentReady, lit(0)), body);
  return body;
}

// aByLoads (MmaPlan::aCopy: Registers): the plain loads of one batch of A's rows of tile step
// `step` at nm's origin. Warp w loads the tile's rows from w * blockM / 4 on (`first`: the
// batch's first row), a row's 32 values of k a load (lane l: k 32 c + l of the step); zeros
// outside the domain. Each load's value and its place in the swizzled stage (a row's 32 values
// in 32 banks).
struct RowLoad {
  C::ExprP value, at;
};
std::vector<RowLoad> rowLoads(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& first,
                              const C::ExprP& step) {
  const int64_t chunks = p.blockK / 32;
  std::vector<RowLoad> loads;
  for (int64_t r = 0; r < p.aRowsInFlight; ++r) {
    C::ExprP row = C::sum({first, lit(r / chunks)}), kk = C::sum({lit(r % chunks * 32), nm.lane});
    C::ExprP point = C::sum({nm.m0, row}), kq = C::sum({C::product(step, lit(p.blockK)), kk});
    Env env;
    env.vars = nm.batch;
    C::ExprP part = bindRow(p, true, point, env);
    bindK(p, kq, env);
    std::vector<C::Stmt> lowered;
    C::ExprP value = operandAt(p, true, part, [&](const Expr& op) { return lower(ctx, op, env, lowered); });
    RTCG_ASSERT(lowered.empty(), "an mma operand lowers to one expression");
    C::ExprP inside = bin("&&", bin("<", point, lit(p.c.mExtent)), bin("<", kq, lit(p.c.kExtent)));
    loads.push_back({C::ternary(inside, value, literalOf(p.staged, 0, 0.0)), wgmmaTileAt(p, true, row, kk)});
  }
  return loads;
}

// The value in register `x` (the big part, as the tensor cores read it) and its small part at
// place `at` of the stage's big and small tiles.
void storeSplit(const MmaNames& nm, const C::ExprP& at, const std::string& x, std::vector<C::Stmt>& body) {
  body.push_back(C::assign(tileRef(nm.tileA[0], at), "=", C::name(x)));
  body.push_back(C::assign(tileRef(nm.tileA[1], at), "=", C::call("rtcg_tf32_small", {C::name(x)})));
}

// The first row of warp `ptid / 32`'s batch `batch` (none: its first) of a step's loads.
C::ExprP firstLoadRow(const MmaPlan& p, const C::ExprP& ptid, const std::string& batch) {
  const int64_t chunks = p.blockK / 32;
  C::ExprP firstRow = C::product(bin("/", ptid, lit(32)), lit(p.blockM / 4));
  if (!batch.empty()) firstRow = C::sum({firstRow, C::product(C::name(batch), lit(p.aRowsInFlight / chunks))});
  return firstRow;
}

// aByLoads: A's slice of tile step `step` at the tile's origin into the stage starting at element
// `start` by the producer's plain loads (rowLoads), aRowsInFlight loads into registers before any
// is stored (a store after each load would wait out its latency alone), then each value and its
// small part stored (storeSplit).
void loadStage(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid, const C::ExprP& step,
               const C::ExprP& start, std::vector<C::Stmt>& body) {
  const int64_t chunks = p.blockK / 32, loads = p.warpLoadsPerStep();
  const int64_t inFlight = p.aRowsInFlight, batches = loads / inFlight;
  RTCG_ASSERT(p.staged == ScalarType::F32 && p.blockK % 32 == 0 && inFlight > 0 && loads % inFlight == 0 &&
                  inFlight % chunks == 0,
              "the producer's loads: f32 rows of 32 values, batches dividing a warp's loads");
  const std::string batch = ctx.names.fresh("batch"), first = ctx.names.fresh("load_row");
  std::vector<C::Stmt> each;
  each.push_back(C::decl(ctx.idx, first, firstLoadRow(p, ptid, batches > 1 ? batch : "")));
  std::vector<std::pair<std::string, C::ExprP>> loaded;  // the value's register, its place in the stage
  for (RowLoad& l : rowLoads(ctx, p, nm, C::name(first), step)) {
    loaded.emplace_back(ctx.names.fresh("loaded"), C::sum({start, l.at}));
    each.push_back(C::decl("float", loaded.back().first, l.value));
  }
  for (const auto& [x, at] : loaded) storeSplit(nm, at, x, each);
  if (batches == 1) append(body, std::move(each));
  else body.push_back(C::forLoop(ctx.idx, batch, lit(0), lit(batches), C::Unroll::Never, std::move(each)));
}

// A tile of the producer's thread-copied loop (round `round`): the epilogue's reads into L2 by its
// thread 0 as the tile starts (into `body`), and the tile's step loop: its index, the ring step
// (round * steps + step) and that step's buffer, declared first in the loop's body `each`.
struct TileSteps {
  std::string step, ring, buffer;
  std::vector<C::Stmt> each;
};
// Thread 0's prefetches of the tile's epilogue reads into L2, as the tile starts.
void tilePrefetches(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid, std::vector<C::Stmt>& body) {
  std::vector<C::Stmt> prefetches;
  epiloguePrefetches(ctx, p, nm, prefetches);
  if (!prefetches.empty()) body.push_back(C::ifThen(bin("==", ptid, lit(0)), std::move(prefetches)));
}

TileSteps startTile(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid, const C::ExprP& round,
                    std::vector<C::Stmt>& body) {
  tilePrefetches(ctx, p, nm, ptid, body);
  TileSteps t{ctx.names.fresh("step"), ctx.names.fresh("ring_step"), ctx.names.fresh("buffer"), {}};
  t.each.push_back(C::decl(ctx.idx, t.ring, C::sum({C::product(round, lit(p.steps)), C::name(t.step)})));
  t.each.push_back(C::decl(ctx.idx, t.buffer, bin("%", C::name(t.ring), lit(p.ring.stages))));
  return t;
}

// aLoadsAhead (a step's loads all in flight at once): register sets carry ring steps' values
// ahead, set h the steps h, h + sets, ... of each tile (sets = aLoadsAhead: a tile's steps are a
// multiple of it, so a ring step's set is its step's in the tile). Before the loop the block's
// first tile's first `sets` steps are loaded; each step then waits for its stage, stores the
// values its set carries (storeSplit), fences, arrives on `ready` and loads into the set the
// values of the ring step `sets` later: the tile's, or past its last step the next tile's (round
// + 1: tile + persistentBlocks), zeros past the block's last tile. The loop runs over groups of
// `sets` steps in straight-line code, so that each set is registers of its own.
C::Stmt loadedStepsAhead(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid) {
  const int64_t sets = p.aLoadsAhead;
  RTCG_ASSERT(p.aRowsInFlight == p.warpLoadsPerStep() && sets >= 1 && sets <= 3 && p.steps % sets == 0,
              "loads ahead: a step's loads in flight at once, the tile's steps in groups of the sets");
  std::vector<C::Stmt> out;
  const std::string row = ctx.names.fresh("load_row");
  out.push_back(C::decl(ctx.idx, row, firstLoadRow(p, ptid, "")));
  MmaNames first = nm;
  declareTileOrigin(ctx, p, first, coordinate(ctx, "blockIdx", 0), out);
  std::vector<std::vector<std::string>> regs(static_cast<size_t>(sets));
  std::vector<C::ExprP> places;
  for (int64_t h = 0; h < sets; ++h)
    for (RowLoad& l : rowLoads(ctx, p, first, C::name(row), lit(h))) {
      regs[size_t(h)].push_back(ctx.names.fresh("ahead"));
      if (h == 0) places.push_back(l.at);
      out.push_back(C::decl("float", regs[size_t(h)].back(), l.value, false));
    }
  out.push_back(tileLoop(ctx, p, nm, [&](const C::ExprP& round, std::vector<C::Stmt>& body) {
    tilePrefetches(ctx, p, nm, ptid, body);
    MmaNames next = nm;
    C::ExprP nextTile = C::sum({coordinate(ctx, "blockIdx", 0),
                                C::product(C::sum({round, lit(1)}), lit(p.persistentBlocks))});
    declareTileOrigin(ctx, p, next, nextTile, body);
    const std::string group = ctx.names.fresh(sets == 1 ? "step" : sets == 2 ? "step_pair" : "step_triple");
    std::vector<C::Stmt> each;
    for (int64_t h = 0; h < sets; ++h) {
      C::ExprP step = C::name(group);
      if (sets > 1) {
        const std::string s = ctx.names.fresh("step");
        each.push_back(C::decl(ctx.idx, s, C::sum({C::product(C::name(group), lit(sets)), lit(h)})));
        step = C::name(s);
      }
      const std::string ring = ctx.names.fresh("ring_step"), buffer = ctx.names.fresh("buffer");
      each.push_back(C::decl(ctx.idx, ring, C::sum({C::product(round, lit(p.steps)), step})));
      each.push_back(C::decl(ctx.idx, buffer, bin("%", C::name(ring), lit(p.ring.stages))));
      each.push_back(waitStageFree(p, nm, C::name(ring), C::name(buffer)));
      const C::ExprP start = C::product(C::name(buffer), lit(p.a.buffer));
      const std::vector<std::string>& set = regs[size_t(h)];
      for (size_t r = 0; r < set.size(); ++r) storeSplit(nm, C::sum({start, places[r]}), set[r], each);
      each.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
      each.push_back(C::exprStmt(C::call("rtcg_mbar_arrive", {stageBarrier(p, nm, Barrier::Ready, C::name(buffer))})));
      const std::string past = ctx.names.fresh("past_tile"), nextStep = ctx.names.fresh("next_step"),
                        nextM = ctx.names.fresh("next_m");
      const C::ExprP later = C::sum({step, lit(sets)});
      each.push_back(C::decl("bool", past, bin(">=", later, lit(p.steps))));
      each.push_back(C::decl(ctx.idx, nextStep, C::ternary(C::name(past), bin("-", later, lit(p.steps)), later)));
      each.push_back(C::decl(ctx.idx, nextM, C::ternary(C::name(past), next.m0, nm.m0)));
      MmaNames at = nm;
      at.m0 = C::name(nextM);
      std::vector<RowLoad> loads = rowLoads(ctx, p, at, C::name(row), C::name(nextStep));
      for (size_t r = 0; r < set.size(); ++r) each.push_back(C::assign(C::name(set[r]), "=", loads[r].value));
    }
    body.push_back(C::forLoop(ctx.idx, group, lit(0), lit(p.steps / sets), C::Unroll::Never, std::move(each)));
  }));
  return C::block(std::move(out));
}

// aByLoads: the producer's loop over the block's tiles and their steps (ring step r): all 128
// threads wait until the consumers have freed r's stage, load and store their share of it
// (loadStage), fence for the async proxy and arrive on the stage's `ready` (count 128), which
// the consumers wait for. The stage's writers are these threads alone, so `empty` orders them.
// As threadCopiedSteps, thread 0 prefetches the epilogue's reads into L2 as each tile starts (startTile).
C::Stmt loadedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid) {
  if (p.aLoadsAhead > 0) return loadedStepsAhead(ctx, p, nm, ptid);
  return tileLoop(ctx, p, nm, [&](const C::ExprP& round, std::vector<C::Stmt>& body) {
    auto [step, ring, buffer, each] = startTile(ctx, p, nm, ptid, round, body);
    each.push_back(waitStageFree(p, nm, C::name(ring), C::name(buffer)));
    loadStage(ctx, p, nm, ptid, C::name(step), C::product(C::name(buffer), lit(p.a.buffer)), each);
    each.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
    each.push_back(C::exprStmt(C::call("rtcg_mbar_arrive", {stageBarrier(p, nm, Barrier::Ready, C::name(buffer))})));
    body.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(each)));
  });
}

// aByThreads: the producer warpgroup's steps when its 128 threads copy A themselves. B's kept tiles
// first (by the threads, or thread 0's boxes), and the splitters' one split of them; then, under
// tf32x3 (the plan's aByLoads wherever it splits), the plain loads' steps (loadedSteps); else
// (tf32) a loop over the block's tiles and their steps (ring step r): each thread waits until the
// consumers have freed r's stage, copies its share of A's tile there by cp.async (the tile's
// origin, the step's k) and arrives on the stage's `full` once its copies land
// (cp.async.mbarrier.arrive.noinc, 128 arrivals).
std::vector<C::Stmt> threadCopiedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid) {
  std::vector<C::Stmt> out = residentCopy(ctx, p, nm, ptid);
  std::vector<C::Stmt> issuing = residentIssue(ctx, p, nm);
  if (!issuing.empty()) out.push_back(C::ifThen(bin("==", ptid, lit(0)), std::move(issuing)));
  if (p.splitBuffers) {
    RTCG_ASSERT(p.aByLoads(), "a split A copied by the producer's threads is the plain loads' (planProducerLoads)");
    out.push_back(C::ifThen(bin(">=", ptid, lit(32)), residentSplit(ctx, p, nm, bin("-", ptid, lit(32)))));
    out.push_back(loadedSteps(ctx, p, nm, ptid));
    return out;
  }
  out.push_back(tileLoop(ctx, p, nm, [&](const C::ExprP& round, std::vector<C::Stmt>& body) {
    auto [step, ring, buffer, each] = startTile(ctx, p, nm, ptid, round, body);
    each.push_back(waitStageFree(p, nm, C::name(ring), C::name(buffer)));
    stageOperandAsLoaded(ctx, p, nm, true, C::product(C::name(step), lit(p.blockK)),
                         C::product(C::name(buffer), lit(p.a.buffer)), each, ptid, kProducerThreads);
    each.push_back(C::exprStmt(C::call("rtcg_cp_async_mbar_arrive", {stageBarrier(p, nm, Barrier::Full, C::name(buffer))})));
    body.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(each)));
  }));
  return out;
}

// The producer's steps. Its thread 0 issues every step's boxes, from the second round on once the
// consumers have freed the stage (the previous use's phase of `empty`): up to `stages` steps
// ahead. Under tf32x3 its other three warps (96 threads) wait for each step's boxes to land,
// split them, fence and arrive on `ready` (a warp each): the split never waits for the consumers.
//
// `persistent`: the issuer loops over the block's tiles (tileLoop), its steps numbered on across
// them (the ring step round * steps + step: buffer and phases), each tile's boxes at its own
// origin and the step's k; the splitters, which need no origin, loop over all the block's ring
// steps at once.
std::vector<C::Stmt> producerSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& ptid) {
  if (p.aByThreads()) return threadCopiedSteps(ctx, p, nm, ptid);
  // each(ring step, step of the tile, buffer, body) over `count` steps, the first ring step `base`.
  auto loop = [&](const C::ExprP& base, int64_t count, auto&& each) {
    const std::string step = ctx.names.fresh("step"), buffer = ctx.names.fresh("buffer");
    std::vector<C::Stmt> body;
    C::ExprP at = C::name(step);
    if (base) {
      const std::string ring = ctx.names.fresh("ring_step");
      body.push_back(C::decl(ctx.idx, ring, C::sum({base, C::name(step)})));
      at = C::name(ring);
    }
    body.push_back(C::decl(ctx.idx, buffer, bin("%", at, lit(p.ring.stages))));
    each(at, C::name(step), C::name(buffer), body);
    return C::forLoop(ctx.idx, step, lit(0), lit(count), C::Unroll::Never, std::move(body));
  };
  auto issue = [&](const C::ExprP& at, const C::ExprP& step, const C::ExprP& buffer, std::vector<C::Stmt>& body) {
    body.push_back(waitStageFree(p, nm, at, buffer));
    append(body, issueStep(p, nm, nm.tmapA, nm.tmapB, step, buffer));
  };
  C::Stmt issuer = !p.persistent() ? loop(nullptr, p.steps, issue)
                                   : tileLoop(ctx, p, nm, [&](const C::ExprP& round, std::vector<C::Stmt>& body) {
                                       epiloguePrefetches(ctx, p, nm, body);
                                       body.push_back(loop(C::product(round, lit(p.steps)), p.steps, issue));
                                     });
  std::vector<C::Stmt> issuing = residentIssue(ctx, p, nm);
  // The epilogue's reads into L2 as a tile starts (persistent: each tile's, in its loop above).
  if (!p.persistent()) epiloguePrefetches(ctx, p, nm, issuing);
  issuing.push_back(std::move(issuer));
  std::vector<C::Stmt> branches;
  if (p.residentByThreads()) append(branches, residentCopy(ctx, p, nm, ptid));
  branches.push_back(C::ifThen(bin("==", ptid, lit(0)), std::move(issuing)));
  if (!p.splitBuffers) return branches;
  auto split = [&](const C::ExprP& step, const C::ExprP&, const C::ExprP& buffer, std::vector<C::Stmt>& body) {
    body.push_back(C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, Barrier::Full, buffer), useParity(p, step)})));
    splitLanded(ctx, p, nm, buffer, bin("-", ptid, lit(32)), body);
    body.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
    warpArrives(nm, stageBarrier(p, nm, Barrier::Ready, buffer), body);
  };
  // The splitters' steps: the tile's, or persistent's every ring step of the block's tiles.
  C::Stmt splitter = !p.persistent() ? loop(nullptr, p.steps, split) : [&] {
    const std::string steps = ctx.names.fresh("ring_steps");
    std::vector<C::Stmt> all = residentSplit(ctx, p, nm, bin("-", ptid, lit(32)));
    all.push_back(C::decl(ctx.idx, steps, C::product(nm.rounds, lit(p.steps))));
    C::Stmt each = loop(nullptr, 0, split);
    each.hi = C::name(steps);
    all.push_back(std::move(each));
    return C::block(std::move(all));
  }();
  branches.push_back(C::ifThen(bin(">=", ptid, lit(32)), {std::move(splitter)}));
  return branches;
}

// The producer-consumer ring's opening: the mbarriers and the producer's branch.
void openProducer(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  // The mbarriers: full (TMA's, count 1; aByThreads: the producer's 128 threads; aByLoads: none
  // arrive, not initialized), empty (every consumer warp), ready (the splitting warps; aByLoads,
  // the one split A by threads: the producer's 128 threads).
  std::vector<C::Stmt> init;
  const std::vector<std::pair<Barrier, int64_t>> barriers = {
      {Barrier::Full, p.aByThreads() ? kProducerThreads : 1}, {Barrier::Empty, p.releasingWarps()},
      {Barrier::Ready, p.aByLoads() ? kProducerThreads : kSplitThreads / 32}};
  for (auto [which, count] : barriers) {
    if (which == Barrier::Ready && !p.splitBuffers) continue;
    if (which == Barrier::Full && p.aByLoads()) continue;
    for (int64_t s = 0; s < p.ring.stages; ++s)
      init.push_back(C::exprStmt(C::call("rtcg_mbar_init", {stageBarrier(p, nm, which, lit(s)), lit(count)})));
  }
  // The consumers' turns (orderedIssue per step, alternatingTiles per tile): one a warpgroup, its
  // four warps arrive on the next's.
  for (int64_t w = 0; (p.orderedIssue || p.alternatingTiles) && w < p.consumerThreads / 128; ++w)
    init.push_back(C::exprStmt(C::call("rtcg_mbar_init", {stageBarrier(p, nm, Barrier::Turn, lit(w)), lit(4)})));
  // `resident`: B's tiles' full (TMA's, or the producer's threads') and, under tf32x3, ready (the
  // splitting warps').
  if (p.residentB) {
    init.push_back(C::exprStmt(C::call("rtcg_mbar_init", {stageBarrier(p, nm, Barrier::ResidentFull, lit(0)),
                                                          lit(p.residentByThreads() ? kProducerThreads : 1)})));
    if (p.splitBuffers)
      init.push_back(C::exprStmt(C::call("rtcg_mbar_init", {stageBarrier(p, nm, Barrier::ResidentReady, lit(0)),
                                                            lit(kSplitThreads / 32)})));
  }
  init.push_back(C::exprStmt(C::call("rtcg_mbar_init_fence", {})));
  out.push_back(C::ifThen(bin("==", nm.tid, lit(0)), std::move(init)));
  out.push_back(C::syncThreads());
  // The producer's branch: its registers given up first (setmaxnreg is per warp, every thread).
  std::string ptid = ctx.names.fresh("producer_tid");
  std::vector<C::Stmt> producer;
  if (p.producerRegisters)
    producer.push_back(C::exprStmt(C::call(fmt::format("rtcg_setmaxnreg_dec_{}", p.producerRegisters), {})));
  producer.push_back(C::decl(ctx.idx, ptid, bin("-", nm.tid, lit(p.consumerThreads))));
  append(producer, producerSteps(ctx, p, nm, C::name(ptid)));
  producer.push_back(C::returnStmt());
  out.push_back(C::ifThen(bin(">=", nm.tid, lit(p.consumerThreads)), std::move(producer)));
  if (p.consumerRegisters)
    out.push_back(C::exprStmt(C::call(fmt::format("rtcg_setmaxnreg_inc_{}", p.consumerRegisters), {})));
}

}  // namespace

RingHandOver producerHandOver(EmitContext& ctx, const MmaPlan& p, MmaNames& nm) {
  // The consumers wait for the stage's `full` (TMA's), or under tf32x3 its `ready` (the split's).
  const Barrier landed = p.splitBuffers ? Barrier::Ready : Barrier::Full;
  return RingHandOver{[&p, &nm, landed](const C::ExprP& buffer) { return stageBarrier(p, nm, landed, buffer); },
                      [&ctx, &p, &nm](std::vector<C::Stmt>& out) { openProducer(ctx, p, nm, out); }};
}

void waitTurn(const MmaPlan& p, const MmaNames& nm, const C::ExprP& step, std::vector<C::Stmt>& to) {
  if (!p.orderedIssue) return;
  // Warpgroup w > 0 waits for w - 1's issue of the same step, warpgroup 0 for the last one's issue
  // of the step before (none before step 0).
  C::ExprP wg = bin("/", nm.tid, lit(128)), first = bin("==", wg, lit(0));
  C::ExprP phase = bin("-", step, C::castTo("int", first));
  to.push_back(C::ifThen(bin(">=", phase, lit(0)),
                         {C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, Barrier::Turn, wg),
                                                                 bin("%", phase, lit(2))}))}));
}

void passTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to) {
  if (!p.orderedIssue) return;
  C::ExprP next = bin("%", C::sum({bin("/", nm.tid, lit(128)), lit(1)}), lit(p.consumerThreads / 128));
  warpArrives(nm, stageBarrier(p, nm, Barrier::Turn, next), to);
}

void waitTileTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to) {
  if (!p.alternatingTiles) return;
  // Round r's consumer waits for round r - 1's to pass it on: consumer c > 0's turn t (round c + t C)
  // is its mbarrier's t-th phase, consumer 0's turn t its (t - 1)-th (round 0 waits for none).
  C::ExprP phase = bin("-", nm.tileTurn, C::castTo("int", bin("==", nm.consumer, lit(0))));
  to.push_back(C::ifThen(bin(">=", phase, lit(0)),
                         {C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, Barrier::Turn, nm.consumer),
                                                                 bin("%", phase, lit(2))}))}));
}

void passTileTurn(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to) {
  if (!p.alternatingTiles) return;
  C::ExprP next = bin("%", C::sum({nm.consumer, lit(1)}), lit(p.consumerGroups()));
  warpArrives(nm, stageBarrier(p, nm, Barrier::Turn, next), to);
}

void waitResident(const MmaPlan& p, const MmaNames& nm, std::vector<C::Stmt>& to) {
  if (!p.residentB) return;
  const Barrier which = p.splitBuffers ? Barrier::ResidentReady : Barrier::ResidentFull;
  to.push_back(C::exprStmt(C::call("rtcg_mbar_wait", {stageBarrier(p, nm, which, lit(0)), lit(0)})));
  // The threads' copies went through the generic proxy; wgmma reads through the async one.
  if (p.residentByThreads()) to.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
}

void releaseStage(const MmaPlan& p, const MmaNames& nm, const C::ExprP& step, std::vector<C::Stmt>& to) {
  warpArrives(nm, stageBarrier(p, nm, Barrier::Empty, bin("%", step, lit(p.ring.stages))), to);
}

// The plain arrival and, per register count a plan moves to (`counts`), setmaxnreg's increase
// and decrease (PTX ISA: mbarrier.arrive; setmaxnreg, sm_90a: an immediate). The host emulation
// defines the arrival; setmaxnreg has nothing to emulate.
std::string producerHelpers(const std::set<int64_t>& counts, bool split, bool threadCopies) {
  std::string s = R"producer(// Warp specialization ('mma: ... tma producer'): an arrival on an mbarrier, setmaxnreg.
#ifndef RTCG_HOST_EMULATION
__device__ __forceinline__ void rtcg_mbar_arrive(void* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"((unsigned int)__cvta_generic_to_shared(bar)) : "memory");
}
#endif
)producer";
  // `resident` B copied by the producer's threads: an arrival once this thread's cp.async land.
  if (threadCopies)
    s += R"producer(#ifndef RTCG_HOST_EMULATION
__device__ __forceinline__ void rtcg_cp_async_mbar_arrive(void* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"((unsigned int)__cvta_generic_to_shared(bar)) : "memory");
}
#endif
)producer";
  // tf32x3's split by the producer: the small parts alone, against the big parts as the tensor
  // cores read the values (their top 19 bits: truncated), so the landed tile stays as it is; a
  // value's (the plain loads', MmaPlan::aByLoads) or four landed ones'.
  if (split)
    s += R"producer(__device__ __forceinline__ float4 rtcg_ld4(const float* x) { return *reinterpret_cast<const float4*>(x); }
__device__ __forceinline__ float rtcg_tf32_small(float a) {
  return rtcg_tf32_rna(a - __uint_as_float(__float_as_uint(a) & 0xffffe000u));
}
__device__ __forceinline__ void rtcg_tf32_small4_put(float4 v, float* small) {
  *reinterpret_cast<float4*>(small) = make_float4(rtcg_tf32_small(v.x), rtcg_tf32_small(v.y), rtcg_tf32_small(v.z), rtcg_tf32_small(v.w));
}
)producer";
  for (int64_t n : counts)
    for (const char* dir : {"inc", "dec"})
      s += fmt::format("#ifdef RTCG_HOST_EMULATION\ninline void rtcg_setmaxnreg_{0}_{1}() {{}}\n#else\n"
                       "__device__ __forceinline__ void rtcg_setmaxnreg_{0}_{1}() {{\n"
                       "  asm volatile(\"setmaxnreg.{0}.sync.aligned.u32 {1};\\n\" ::: \"memory\");\n}}\n#endif\n",
                       dir, n);
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

// The end is rounded down, not up: a prefetch past the array's end could reach memory that is not
// mapped; the last bytes of a range that ends inside a 16-byte unit stay out (a hint only).
const Prelude prefetchL2Helpers{4010, R"prefetch(// The epilogue's reads prefetched into L2 by the producer ('mma: ... tma producer').
#ifdef RTCG_HOST_EMULATION
inline void rtcg_prefetch_l2_range(const void* first, const void* end) { rtcg_emu_prefetch_l2(first, end); }
#else
__device__ __forceinline__ void rtcg_prefetch_l2_range(const void* first, const void* end) {
  const unsigned long long a = (unsigned long long)first & ~15ull, b = (unsigned long long)end & ~15ull;
  if (b > a) asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;\n" ::"l"(a), "r"((unsigned int)(b - a)) : "memory");
}
#endif)prefetch"};

const Prelude epilogueYieldHelpers{4020, R"yield(// A pause between the epilogue's chunks (its stores leave the memory pipe to the producer's loads).
#ifdef RTCG_HOST_EMULATION
inline void rtcg_epilogue_yield() {}
#else
__device__ __forceinline__ void rtcg_epilogue_yield() { __nanosleep(32); }
#endif)yield"};

}  // namespace rtcg::emit::mma
