// `fragments 2` (MmaPlan::prefetchFragments, schedule/Mma.h): the steps of an mma.sync reduction
// with two sets of fragment registers, as CUTLASS's warp-level mainloop double-buffers them. With
// one set each step waits at its barrier, then loads its fragments from shared memory and only then
// issues its mma: every step puts a shared-memory load's latency between the barrier and the tensor
// pipe, which the warps of a multiprocessor hide only where there are enough of them (the large warp
// tiles that make a block fast leave two or three). Here the loads of the next fragment-k precede
// the mma of this one, and the barrier moves before the step's last mma: the block waits there for
// the NEXT step's stage, which the first fragments are then loaded from, so that the wait overlaps
// the mma still in flight and the step's last mma issue while those loads are outstanding.
//
// The ring: the copies run `stages` steps ahead (instead of stages - 1). Step s's buffer s % S is
// refilled with step s + S right after the barrier of step s, which every warp reaches only after
// loading all of step s's fragments (its last fragment-k's were loaded before the barrier, the
// first's in step s - 1), so no warp still reads it. At that barrier S - 2 groups may be in flight
// (steps s + 2 .. s + S - 1): step s + 1 has landed. Before the loop the block waits for the first
// two steps and loads step 0's first fragments. No group is empty (EmitMmaParts.h): the prelude
// copies the steps past the last one as zero fills, the loop commits a copy of no bytes there
// (keepGroupFilled). So the last step's loads of the step after it read zeros or a step's values,
// never a buffer no copy wrote (whose values NVCC's scheduling let reach the sums: the wrong f64
// `fragments 2` candidates of issue 36, docs/bench.md).
// The fragments carried from one step to the next are variables declared before the loop; within a
// step every fragment-k's registers are const locals (NVCC renames them: the register sets are its
// allocation of these lifetimes). The last step loads the first fragments of the buffer after it
// (zeros, or an earlier step's values); they are never used.
//
// `persistent` (mma.sync, MmaPlan::keptWhole): one loop over the ring's steps of all the block's
// tiles, numbered on across them (ring step r * steps + s is tile round r's step s, in buffer
// (r * steps + s) % S), so the copies S steps ahead reach into the next tile and its first stages
// land while the block adds the last steps of this one and stores it. A copy takes its own tile's
// origin (blockIdx.x + round * grid, in the batched order: declareTileOrigin). A kept B (resident)
// is copied once before the ring, in a group of its own that the first wait covers (a wait for
// every group where some thread copies none of A's runs); each step reads its columns of it.
// After a tile's last step, inside the loop, its epilogue, then its accumulators zeroed; the next
// step's first fragments are in registers by then.
#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"

namespace rtcg::emit::mma {

namespace {

// Every fragment register of `f` (part 0: FP64 has no small parts) through `each`.
template <typename F>
void forEachRegister(WarpFragments& f, F each) {
  for (Fragments* side : {&f.a, &f.b})
    for (auto& fragment : *side)
      for (C::ExprP& r : fragment[0]) each(r);
}

// The carried set: variables initialised from `loaded` (before the loop), named after them.
WarpFragments declareCarried(EmitContext& ctx, WarpFragments loaded, std::vector<C::Stmt>& out) {
  forEachRegister(loaded, [&](C::ExprP& r) {
    std::string n = ctx.names.fresh(r->text + "_next");
    out.push_back(C::decl("double", n, r, false));
    r = C::name(n);
  });
  return loaded;
}

// `carried` = `loaded`, register by register (both sets have one shape).
void assignCarried(WarpFragments carried, WarpFragments loaded, std::vector<C::Stmt>& out) {
  std::vector<C::ExprP> values;
  forEachRegister(loaded, [&](C::ExprP& r) { values.push_back(r); });
  size_t i = 0;
  forEachRegister(carried, [&](C::ExprP& r) { out.push_back(C::assign(r, "=", values[i++])); });
}

// The step's first fragments: const copies of the carried ones (the carried variables are
// reassigned before this step's mma on them issue).
WarpFragments takeCarried(EmitContext& ctx, WarpFragments carried, std::vector<C::Stmt>& out) {
  forEachRegister(carried, [&](C::ExprP& r) {
    std::string n = ctx.names.fresh(r->text.substr(0, r->text.find("_next")));
    out.push_back(C::decl("double", n, r));
    r = C::name(n);
  });
  return carried;
}

// A step's fragment-ks but its last, from the stage at bufA / bufB: each loads the next
// fragment-k's fragments, then issues the current one's mma. Returns the last one's fragments.
WarpFragments leadingFragmentKs(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, WarpFragments current,
                                const C::ExprP& bufA, const C::ExprP& bufB, std::vector<C::Stmt>& body) {
  for (int64_t kf = 0; kf + 1 < p.blockK / p.fragK; ++kf) {
    WarpFragments next = loadFragments(ctx, p, nm, lit((kf + 1) * p.fragK), bufA, bufB, body);
    issueMmas(ctx, p, nm, current, body);
    current = std::move(next);
  }
  return current;
}

// The ring's barrier: the block's, or a row group's (MmaPlan::rowGroups) named barrier 1 + g of
// its warps' threads.
C::Stmt ringBarrier(const MmaPlan& p, const MmaNames& nm) {
  if (p.rowGroups == 0) return C::syncThreads();
  return C::exprStmt(C::call("rtcg_bar_sync", {C::sum({nm.rowGroup, lit(1)}), lit(nm.copyThreads)}));
}

// The ring's start: the first steps' stages landed (S - 2 newer groups in flight; `pending` where
// given), the block met, step 0's first fragments loaded into the carried set (declared here).
WarpFragments startRing(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& bufA, const C::ExprP& bufB,
                        std::vector<C::Stmt>& out, int64_t pending = -1) {
  out.push_back(cpAsyncWait(pending >= 0 ? pending : p.ring.stages - 2));
  out.push_back(ringBarrier(p, nm));
  return declareCarried(ctx, loadFragments(ctx, p, nm, lit(0), bufA, bufB, out), out);
}

// A step up to its last fragment-k, from the stage at bufA / bufB: the carried first fragments
// taken, every fragment-k but the last issued. Returns the last one's fragments.
WarpFragments stepButLast(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const WarpFragments& carried,
                          const C::ExprP& bufA, const C::ExprP& bufB, std::vector<C::Stmt>& body) {
  return leadingFragmentKs(ctx, p, nm, takeCarried(ctx, carried, body), bufA, bufB, body);
}

// Before a step's last mma: the next step's stage landed (S - 2 newer groups in flight), the block
// met at the barrier, the next step's first fragments loaded into the carried set.
void meetNextStep(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const WarpFragments& carried,
                  const C::ExprP& nextA, const C::ExprP& nextB, std::vector<C::Stmt>& body) {
  body.push_back(cpAsyncWait(p.ring.stages - 2));
  body.push_back(ringBarrier(p, nm));
  assignCarried(carried, loadFragments(ctx, p, nm, lit(0), nextA, nextB, body), body);
}

}  // namespace

void emitPrefetchedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const CopyStep& copyStep,
                         std::vector<C::Stmt>& out) {
  const int64_t S = p.ring.stages;
  auto bufferA = [&](const C::ExprP& b) { return C::product(b, lit(p.a.buffer)); };
  auto bufferB = [&](const C::ExprP& b) { return C::product(b, lit(p.b.buffer)); };
  for (int64_t s = 0; s < p.ring.ahead(); ++s) {
    copyStep(lit(s), lit(s), out);  // past the last step: zero fills
    out.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
  }
  const WarpFragments carried = startRing(ctx, p, nm, bufferA(lit(0)), bufferB(lit(0)), out);

  std::vector<C::Stmt> body;
  const std::string step = ctx.names.fresh("step"), buffer = ctx.names.fresh("buffer");
  body.push_back(C::decl(ctx.idx, buffer, bin("%", C::name(step), lit(S))));
  const WarpFragments current = stepButLast(ctx, p, nm, carried, bufferA(C::name(buffer)), bufferB(C::name(buffer)), body);
  // The step's last fragment-k: the next step's stage and first fragments, this one's mma, then
  // the refill of this step's buffer, read by no warp any more.
  const C::ExprP following = bin("%", C::sum({C::name(step), lit(1)}), lit(S));
  meetNextStep(ctx, p, nm, carried, bufferA(following), bufferB(following), body);
  issueMmas(ctx, p, nm, current, body);
  std::string ahead = ctx.names.fresh("ahead");
  body.push_back(C::decl(ctx.idx, ahead, C::sum({C::name(step), lit(p.ring.ahead())})));
  copyOrFill(ctx, p, nm, copyStep, C::name(ahead), C::name(buffer), body);
  out.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
}

// `copies hoisted`: where the tiles divide the rows (every copy's rows in range: no byte counts),
// the steps in three loops. The first `whole` steps refill whole steps of the reduction
// (HoistedCopies::copyWhole: carried sources, no clamp, no k guard), and the first multiple of S
// of them run S to a round, each with its buffer a literal, so that the fragment loads' and
// copies' shared addresses are a register and a constant offset rather than computed from the
// carried buffer index in every step (the guards and those made the step take a third more
// instructions than cuBLAS's; docs/bench.md, session 45). The rest of the whole ones carry the
// buffer; the last steps refill past the reduction (or its partial last step) with the guarded
// copies (HoistedCopies::copy). Elsewhere one loop of guarded copies: tiles that pass the edge
// keep a byte count a copy in registers, beside which the split loops spilled (n = 1003).
void emitHoistedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  const int64_t S = p.ring.stages, ahead = p.ring.ahead();
  HoistedCopies copiesA, copiesB;
  copiesA.prepare(ctx, p, nm, true, out);
  copiesB.prepare(ctx, p, nm, false, out);
  auto bufferA = [&](const C::ExprP& b) { return C::product(b, lit(p.a.buffer)); };
  auto bufferB = [&](const C::ExprP& b) { return C::product(b, lit(p.b.buffer)); };
  auto commit = [](std::vector<C::Stmt>& to) { to.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {}))); };
  auto copyStep = [&](const C::ExprP& step, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    copiesA.copy(ctx, p, step, bufferA(buffer), to);
    copiesB.copy(ctx, p, step, bufferB(buffer), to);
    commit(to);
  };
  auto copyWhole = [&](const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    copiesA.copyWhole(ctx, p, bufferA(buffer), to);
    copiesB.copyWhole(ctx, p, bufferB(buffer), to);
    commit(to);
  };
  for (int64_t s = 0; s < ahead; ++s) copyStep(lit(s), lit(s), out);
  const WarpFragments carried = startRing(ctx, p, nm, bufferA(lit(0)), bufferB(lit(0)), out);
  const bool wholeSteps = p.c.kExtent % p.blockK == 0;
  const bool split = copiesA.fullRows() && copiesB.fullRows();
  const int64_t whole = split ? std::max<int64_t>(0, p.steps - ahead - (wholeSteps ? 0 : 1)) : 0, rounds = whole / S;
  if (whole > 0) {
    copiesA.startCarried(ctx, p, ahead, whole, out);
    copiesB.startCarried(ctx, p, ahead, whole, out);
  }
  // One step in buffer `buffer` (the next one's stage: `following`), its refill by `refill`. As
  // emitPrefetchedSteps, the refill before the last mma: every fragment of this step's buffer is in
  // registers once the warp passes the barrier.
  auto step = [&](const C::ExprP& buffer, const C::ExprP& following,
                  const std::function<void(std::vector<C::Stmt>&)>& refill, std::vector<C::Stmt>& body) {
    const WarpFragments current = stepButLast(ctx, p, nm, carried, bufferA(buffer), bufferB(buffer), body);
    meetNextStep(ctx, p, nm, carried, bufferA(following), bufferB(following), body);
    refill(body);
    issueMmas(ctx, p, nm, current, body);
  };
  if (rounds > 0) {
    std::vector<C::Stmt> body;
    for (int64_t b = 0; b < S; ++b)
      step(lit(b), lit((b + 1) % S), [&](std::vector<C::Stmt>& to) { copyWhole(lit(b), to); }, body);
    out.push_back(C::forLoop(ctx.idx, ctx.names.fresh("round"), lit(0), lit(rounds), C::Unroll::Never, std::move(body)));
  }
  // The ring's buffer, carried (step % S without a division) from the rounds' end, buffer 0.
  const std::string buffer = ctx.names.fresh("buffer");
  if (rounds * S < p.steps) out.push_back(C::decl(ctx.idx, buffer, lit(0), false));
  const std::string s = ctx.names.fresh("step"), following = ctx.names.fresh("following");
  auto loop = [&](int64_t from, int64_t to, bool copiesWhole) {
    if (from >= to) return;
    std::vector<C::Stmt> body;
    body.push_back(C::decl(ctx.idx, following, C::ternary(bin("<", C::name(buffer), lit(S - 1)),
                                                           C::sum({C::name(buffer), lit(1)}), lit(0))));
    step(C::name(buffer), C::name(following), [&](std::vector<C::Stmt>& into) {
      if (copiesWhole) copyWhole(C::name(buffer), into);
      else copyStep(C::sum({C::name(s), lit(ahead)}), C::name(buffer), into);
    }, body);
    body.push_back(C::assign(C::name(buffer), "=", C::name(following)));
    out.push_back(C::forLoop(ctx.idx, s, lit(from), lit(to), C::Unroll::Never, std::move(body)));
  };
  loop(rounds * S, whole, true);
  loop(whole, p.steps, false);
}

void emitPersistentPrefetchedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const OperandCopy& copyOperand,
                                   const std::function<void(std::vector<C::Stmt>& out)>& finishTile,
                                   std::vector<C::Stmt>& out) {
  const int64_t S = p.ring.stages;
  const bool kept = p.keptWhole();
  // Ring step g: its tile's origin (declared in `to`; nm's origin restored by `restore`) and its
  // reduction step.
  // Of a literal ring step (the prologue's) its round and step as literals.
  auto literal = [](const C::ExprP& g) { return g->kind == C::ExprKind::IntLit; };
  // Row groups: the group's round r is the block's r * G + g.
  auto atTile = [&](const C::ExprP& g, std::vector<C::Stmt>& to) {
    std::string tile = ctx.names.fresh("tile");
    C::ExprP round = literal(g) ? lit(g->intValue / p.steps) : p.steps == 1 ? g : bin("/", g, lit(p.steps));
    if (p.rowGroups > 0)
      round = literal(round) ? C::sum({lit(round->intValue * p.rowGroups), nm.rowGroup})
                             : C::sum({C::product(round, lit(p.rowGroups)), nm.rowGroup});
    to.push_back(C::decl(ctx.idx, tile, C::sum({coordinate(ctx, "blockIdx", 0), C::product(round, lit(p.persistentBlocks))})));
    declareTileOrigin(ctx, p, nm, C::name(tile), to);
  };
  const C::ExprP m0 = nm.m0, n0 = nm.n0;
  const std::map<int, C::ExprP> batch = nm.batch;
  auto restore = [&] { nm.m0 = m0, nm.n0 = n0, nm.batch = batch; };
  auto kStep = [&](const C::ExprP& g) {
    return literal(g) ? lit(g->intValue % p.steps) : p.steps == 1 ? lit(0) : bin("%", g, lit(p.steps));
  };
  auto bufferA = [&](const C::ExprP& b) { return ringBuffer(p, nm, true, b); };
  // B's columns of ring step g in buffer b: the kept tile's of its reduction step, or the ring's.
  auto bufferB = [&](const C::ExprP& g, const C::ExprP& b) {
    return kept ? C::product(kStep(g), lit(p.keptStep(1))) : ringBuffer(p, nm, false, b);
  };
  const CopyStep copyStep = [&](const C::ExprP& g, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    std::vector<C::Stmt> copy;
    atTile(g, copy);
    const C::ExprP k0 = C::product(kStep(g), lit(p.blockK));
    copyOperand(true, k0, bufferA(buffer), copy);
    if (!kept) copyOperand(false, k0, ringBuffer(p, nm, false, buffer), copy);
    restore();
    append(to, std::move(copy));
  };
  if (kept) {
    // Every round's N tile is the first's (the grid is a multiple of the N tiles: residentGrid).
    // By the block's threads; row groups then wait for it and meet once, since each group's ring
    // meets its own warps only.
    std::vector<C::Stmt> copy;
    atTile(lit(0), copy);
    const std::string s = ctx.names.fresh("kept_step");
    std::vector<C::Stmt> each;
    {
      const MmaNames::BlockCopies byBlock(nm);
      copyOperand(false, C::product(C::name(s), lit(p.blockK)), C::product(C::name(s), lit(p.keptStep(1))), each);
    }
    copy.push_back(C::forLoop(ctx.idx, s, lit(0), lit(p.steps), C::Unroll::Never, std::move(each)));
    restore();
    copy.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
    if (p.rowGroups > 0) {
      copy.push_back(cpAsyncWait(0));
      copy.push_back(C::syncThreads());
    }
    out.push_back(C::block(std::move(copy)));
  }
  const std::string total = ctx.names.fresh("ring_steps");
  out.push_back(C::decl(ctx.idx, total, C::product(nm.rounds, lit(p.steps))));
  for (int64_t s = 0; s < p.ring.ahead(); ++s) copyOrFill(ctx, p, nm, copyStep, lit(s), lit(s), out, C::name(total));
  // A thread that copies runs of the kept B but none of A's stages (A's runs fewer than the
  // threads: 4x5 warps of m16n8k8 tiles 1x3 at k 16) has the kept group alone, since a commit of no
  // copies makes no group (the GPU's, the host emulation's), and a first wait for S - 2 left that
  // group in flight: there the ring's start waits for every group.
  // Row groups met after the kept copy's wait.
  const bool threadsPastA = p.blockM * p.blockK / copyRunElements(ctx, p, true) < ctx.plan.launch.threads;
  const WarpFragments carried = startRing(ctx, p, nm, bufferA(lit(0)), bufferB(lit(0), lit(0)), out,
                                          kept && threadsPastA && p.rowGroups == 0 ? 0 : -1);

  std::vector<C::Stmt> body;
  const std::string step = ctx.names.fresh("step"), buffer = ctx.names.fresh("buffer");
  body.push_back(C::decl(ctx.idx, buffer, bin("%", C::name(step), lit(S))));
  const WarpFragments current =
      stepButLast(ctx, p, nm, carried, bufferA(C::name(buffer)), bufferB(C::name(step), C::name(buffer)), body);
  // As emitPrefetchedSteps: the next ring step's stage and first fragments (the next tile's where
  // this step is its tile's last), this one's mma, the refill S steps ahead.
  const C::ExprP nextStep = C::sum({C::name(step), lit(1)});
  const C::ExprP following = bin("%", nextStep, lit(S));
  meetNextStep(ctx, p, nm, carried, bufferA(following), bufferB(nextStep, following), body);
  issueMmas(ctx, p, nm, current, body);
  std::string ahead = ctx.names.fresh("ahead");
  body.push_back(C::decl(ctx.idx, ahead, C::sum({C::name(step), lit(p.ring.ahead())})));
  copyOrFill(ctx, p, nm, copyStep, C::name(ahead), C::name(buffer), body, C::name(total));
  // The tile's last step: its epilogue, its accumulators zeroed for the next tile.
  std::vector<C::Stmt> finish;
  atTile(C::name(step), finish);
  finishTile(finish);
  restore();
  for (const auto& row : nm.acc)
    for (const auto& chunk : row)
      for (const std::string& a : chunk) finish.push_back(C::assign(C::name(a), "=", literalOf(p.c.type, 0, 0.0)));
  if (p.steps == 1) body.push_back(C::block(std::move(finish)));
  else body.push_back(C::ifThen(bin("==", kStep(C::name(step)), lit(p.steps - 1)), std::move(finish)));
  out.push_back(C::forLoop(ctx.idx, step, lit(0), C::name(total), C::Unroll::Never, std::move(body)));
}

const Prelude namedBarrierHelpers{4030, R"bar(// A barrier of some of the block's warps: mma.sync's row groups ('pingpong'), each its own.
#ifdef RTCG_HOST_EMULATION
inline void rtcg_bar_sync(int id, int threads) { rtcg_emu_bar_sync(id, threads); }
#else
__device__ __forceinline__ void rtcg_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
#endif)bar"};

}  // namespace rtcg::emit::mma
