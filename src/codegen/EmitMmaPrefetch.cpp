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
#include <fmt/format.h>

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

}  // namespace

void emitPrefetchedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const CopyStep& copyStep,
                         std::vector<C::Stmt>& out) {
  const int64_t S = p.ring.stages, fragmentKs = p.blockK / p.fragK;
  auto bufferA = [&](const C::ExprP& b) { return C::product(b, lit(p.a.buffer)); };
  auto bufferB = [&](const C::ExprP& b) { return C::product(b, lit(p.b.buffer)); };
  for (int64_t s = 0; s < p.ring.ahead(); ++s) {
    copyStep(lit(s), lit(s), out);  // past the last step: zero fills
    out.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
  }
  out.push_back(cpAsyncWait(S - 2));
  out.push_back(C::syncThreads());
  const WarpFragments carried =
      declareCarried(ctx, loadFragments(ctx, p, nm, lit(0), bufferA(lit(0)), bufferB(lit(0)), out), out);

  std::vector<C::Stmt> body;
  const std::string step = ctx.names.fresh("step"), buffer = ctx.names.fresh("buffer");
  body.push_back(C::decl(ctx.idx, buffer, bin("%", C::name(step), lit(S))));
  WarpFragments current = takeCarried(ctx, carried, body);
  for (int64_t kf = 0; kf < fragmentKs; ++kf) {
    if (kf + 1 < fragmentKs) {
      WarpFragments next = loadFragments(ctx, p, nm, lit((kf + 1) * p.fragK), bufferA(C::name(buffer)),
                                         bufferB(C::name(buffer)), body);
      issueMmas(ctx, p, nm, current, body);
      current = std::move(next);
      continue;
    }
    // The step's last fragment-k: the next step's stage (landed: S - 2 newer groups in flight) and
    // the barrier, the next step's first fragments, this one's mma, then the refill of this
    // step's buffer, read by no warp any more.
    body.push_back(cpAsyncWait(S - 2));
    body.push_back(C::syncThreads());
    const C::ExprP following = bin("%", C::sum({C::name(step), lit(1)}), lit(S));
    assignCarried(carried, loadFragments(ctx, p, nm, lit(0), bufferA(following), bufferB(following), body), body);
    issueMmas(ctx, p, nm, current, body);
    std::string ahead = ctx.names.fresh("ahead");
    body.push_back(C::decl(ctx.idx, ahead, C::sum({C::name(step), lit(p.ring.ahead())})));
    copyOrFill(ctx, p, nm, copyStep, C::name(ahead), C::name(buffer), body);
  }
  out.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
}

}  // namespace rtcg::emit::mma
