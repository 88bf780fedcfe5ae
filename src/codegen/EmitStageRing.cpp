// The one emitter of the rings of staged tiles (EmitStageRing.h): the stages' buffers, the copies
// `ahead` steps ahead by the copy part, and each step's hand-over, from the plan's StageRing.
#include "codegen/EmitStageRing.h"

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

}  // namespace rtcg::emit
