// The one emitter of the rings of staged tiles (EmitStageRing.h): the stages' buffers, the copies
// `ahead` steps ahead by the copy part, and each step's hand-over, from the plan's StageRing.
#include "codegen/EmitStageRing.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/Error.h"

namespace rtcg::emit {

namespace {

C::ExprP bin(const char* op, C::ExprP a, C::ExprP b) { return C::binary(op, std::move(a), std::move(b)); }

// Step `n`'s copies into `buffer`; cp.async's committed as one group.
void issue(const StageRing& ring, const RingCopy& copy, const C::ExprP& n, const C::ExprP& buffer,
           std::vector<C::Stmt>& to) {
  copy.step(n, buffer, to);
  if (ring.engine == CopyEngine::CpAsync) to.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
}

// The mbarrier hand-over's mbarriers, one a stage (count 1: the issuing thread's expect_tx),
// initialized by the issuing thread and made visible (to the async proxy too) before any use.
void initStageBarriers(const StageRing& ring, const RingCopy& copy, const RingHandOver& handOver,
                       std::vector<C::Stmt>& out) {
  std::vector<C::Stmt> init;
  for (int64_t s = 0; s < ring.stages; ++s)
    init.push_back(C::exprStmt(C::call("rtcg_mbar_init", {handOver.landed(lit(s)), lit(1)})));
  init.push_back(C::exprStmt(C::call("rtcg_mbar_init_fence", {})));
  out.push_back(C::ifThen(copy.issuer, std::move(init)));
  out.push_back(C::syncThreads());
}

// The cp.async wait for step `step`'s group: it has landed when at most ahead - 1 newer ones are
// in flight; the last ahead - 1 steps have fewer newer groups and wait for all.
void waitForGroup(const StageRing& ring, int64_t steps, const C::ExprP& step, std::vector<C::Stmt>& to) {
  const int64_t ahead = ring.ahead();
  if (ahead > 1)
    to.push_back(C::ifThen(bin("<", C::sum({step, lit(ahead - 1)}), lit(steps)), {cpAsyncWait(ahead - 1)},
                           {cpAsyncWait(0)}));
  else
    to.push_back(cpAsyncWait(0));
  if (ring.fenceAsyncProxy) to.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
}

std::string declareBuffer(EmitContext& ctx, const StageRing& ring, const C::ExprP& step, std::vector<C::Stmt>& to) {
  std::string buffer = ctx.names.fresh("buffer");
  to.push_back(C::decl(ctx.idx, buffer, bin("%", step, lit(ring.stages))));
  return buffer;
}

}  // namespace

StepRing openRing(EmitContext& ctx, const StageRing& ring, int64_t steps, const RingCopy& copy,
                  const RingHandOver& handOver, std::vector<C::Stmt>& out, std::vector<C::Stmt>* body) {
  RTCG_ASSERT(ring.stages > 1 && ring.engine != CopyEngine::Registers, "a ring of stages copies by cp.async or TMA");
  RTCG_ASSERT((ring.handOver == HandOver::Barrier) == (ring.engine == CopyEngine::CpAsync),
              "cp.async hands over at the block's barrier, TMA by mbarriers");
  if (ring.handOver == HandOver::Mbarrier) initStageBarriers(ring, copy, handOver, out);
  if (ring.producer()) handOver.open(out);
  std::vector<C::Stmt> prologue;
  for (int64_t s = 0; !ring.producer() && s < std::min(ring.ahead(), steps); ++s) issue(ring, copy, lit(s), lit(s), prologue);
  if (copy.issuer && !ring.producer()) out.push_back(C::ifThen(copy.issuer, std::move(prologue)));
  else append(out, std::move(prologue));
  StepRing opened;
  opened.step = ctx.names.fresh("step");
  opened.stepAt = [&ctx, ring, steps, copy, handOver](const C::ExprP& step, std::vector<C::Stmt>& to) {
    std::string buffer;
    if (ring.handOver == HandOver::Barrier) {
      waitForGroup(ring, steps, step, to);
    } else {
      // The phase of this buffer's use: its (step / stages)-th.
      buffer = declareBuffer(ctx, ring, step, to);
      to.push_back(C::exprStmt(C::call("rtcg_mbar_wait", {handOver.landed(C::name(buffer)),
                                                           bin("%", bin("/", step, lit(ring.stages)), lit(2))})));
      // The producer's threads copied the stage by cp.async (MmaPlan::aByThreads), which the
      // consumers' wgmma read through the async proxy: each fences after its wait.
      if (ring.fenceAsyncProxy) to.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
    }
    if (!ring.producer()) {
      to.push_back(C::syncThreads());
      std::string next = ctx.names.fresh("ahead");
      to.push_back(C::decl(ctx.idx, next, C::sum({step, lit(ring.ahead())})));
      std::vector<C::Stmt> refill;
      issue(ring, copy, C::name(next), bin("%", C::name(next), lit(ring.stages)), refill);
      C::ExprP exists = bin("<", C::name(next), lit(steps));
      to.push_back(C::ifThen(copy.issuer ? bin("&&", copy.issuer, exists) : exists, std::move(refill)));
    }
    if (buffer.empty()) buffer = declareBuffer(ctx, ring, step, to);
    return buffer;
  };
  if (body) opened.buffer = opened.stepAt(C::name(opened.step), *body);
  return opened;
}

C::Stmt cpAsyncWait(int64_t pending) {
  RTCG_ASSERT(pending >= 0 && pending <= 2, "the prelude has cp.async waits for 0 to 2 groups");
  return C::exprStmt(C::call(fmt::format("rtcg_cp_async_wait{}", pending), {}));
}

void waitForStepCopies(int64_t most, const std::function<C::ExprP(int64_t n)>& exists, std::vector<C::Stmt>& out) {
  std::vector<C::Stmt> chain{cpAsyncWait(0)};
  for (int64_t n = 1; n <= most; ++n) chain = {C::ifThen(exists(n), {cpAsyncWait(n)}, std::move(chain))};
  append(out, std::move(chain));
}

namespace {

// One stage: each step copies its tiles and points the reads at them, then a barrier; prefetched,
// the registers loaded ahead (the first step's ahead of the loop, the next one's after the
// barrier) are stored at the step's start.
void emitOneStage(const StepAt& stepAt, const StepCopies& copies, std::vector<C::Stmt>& before,
                  std::vector<C::Stmt>& stage) {
  if (!copies.throughRegisters) {
    copies.copyAndRead(stepAt(0, false).first, TileCopy::Direct, stage);
    stage.push_back(C::syncThreads());
    return;
  }
  const auto [next, hasNext] = stepAt(1, false);
  copies.copy(stepAt(0, true).first, TileCopy::LoadToRegisters, TileTarget(), before);
  copies.copyAndRead(stepAt(0, false).first, TileCopy::StoreFromRegisters, stage);
  stage.push_back(C::syncThreads());
  std::vector<C::Stmt> loads;
  copies.copy(next, TileCopy::LoadToRegisters, TileTarget(), loads);
  stage.push_back(C::ifThen(hasNext, std::move(loads)));
}

}  // namespace

void emitStepRing(const StageRing& ring, const C::ExprP& step, const StepAt& stepAt,
                  const StepCopies& copies, std::vector<C::Stmt>& before, std::vector<C::Stmt>& stage,
                  std::vector<C::Stmt>& after) {
  if (ring.stages == 1) return emitOneStage(stepAt, copies, before, stage);
  const int64_t N = ring.stages, ahead = ring.ahead();
  const bool async = ring.engine == CopyEngine::CpAsync;
  RTCG_ASSERT(async || N == 2, "more than two stages copy by cp.async");
  // Step `step + k`'s buffer: its number modulo N (two buffers through the registers: its parity).
  auto bufferOf = [&](int64_t k) {
    C::ExprP at = k ? C::sum({step, lit(k)}) : step;
    return async ? C::binary("%", at, lit(N)) : C::binary("&", at, lit(1));
  };
  // The copy of the step at `at` into `buffer`: cp.async's committed, the registers' loaded.
  const TileCopy issued = async ? TileCopy::Async : copies.throughRegisters ? TileCopy::LoadToRegisters : TileCopy::Direct;
  auto issue = [&](const C::ExprP& at, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    copies.copy(at, issued, issued == TileCopy::LoadToRegisters ? TileTarget() : TileTarget{buffer, false}, to);
    if (async) to.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
  };
  // The first `ahead` steps. cp.async commits groups only for the steps that exist (its waits
  // count them: waitForStepCopies); the threads' copies guard every element against the array.
  for (int64_t n = 0; n < ahead; ++n) {
    auto [at, exists] = stepAt(n, true);
    std::vector<C::Stmt> first;
    issue(at, lit(n), first);
    if (async) before.push_back(C::ifThen(exists, std::move(first)));
    else append(before, std::move(first));
  }
  if (async) waitForStepCopies(N - 2, [&](int64_t n) { return stepAt(n, true).second; }, before);
  else if (copies.throughRegisters) copies.copy(stepAt(0, true).first, TileCopy::StoreFromRegisters, TileTarget{lit(0), false}, before);
  before.push_back(C::syncThreads());
  // Each step: the copy `ahead` steps on into its buffer, the landing of the next step at the end.
  auto [at, exists] = stepAt(ahead, false);
  std::vector<C::Stmt> refill;
  issue(at, bufferOf(ahead), refill);
  stage.push_back(C::ifThen(exists, std::move(refill)));
  if (async) {
    waitForStepCopies(N - 2, [&](int64_t n) { return stepAt(n + 1, false).second; }, after);
  } else if (copies.throughRegisters) {
    const auto [next, hasNext] = stepAt(1, false);
    std::vector<C::Stmt> stores;
    copies.copy(next, TileCopy::StoreFromRegisters, TileTarget{bufferOf(1), false}, stores);
    after.push_back(C::ifThen(hasNext, std::move(stores)));
  }
  copies.read(bufferOf(0), stage);
}

}  // namespace rtcg::emit
