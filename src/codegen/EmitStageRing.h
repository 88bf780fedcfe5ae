// Internal to the emitter: every ring of staged tiles (schedule/StageRing.h), emitted by one
// function (EmitStageRing.cpp) from the plan's StageRing and two parts: the copy (what one step's
// copies are, and which thread issues them) and the hand-over (the mbarrier a landed stage
// completes; what opens a producer-consumer ring).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "codegen/EmitContext.h"

namespace rtcg::emit {

// The copies of step `step` into the buffer `buffer` (its index in the ring), appended to `to`.
using CopyStep = std::function<void(const C::ExprP& step, const C::ExprP& buffer, std::vector<C::Stmt>& to)>;

// The copy part. cp.async: the threads' copies, which the ring commits as one group a step. TMA:
// the issuing thread's expect_tx and boxes. `issuer`: the condition of the thread that issues the
// copies (and initializes the stages' mbarriers); null: every thread.
struct RingCopy {
  CopyStep step;
  C::ExprP issuer;
};

// The hand-over part. mbarrier and producer-consumer: `landed(buffer)` is the mbarrier that a
// stage's landing completes (and the consumers wait for, by the parity of the buffer's use).
// producer-consumer: `open(out)` initializes the mbarriers and emits the producer's branch, which
// issues every step itself.
struct RingHandOver {
  std::function<C::ExprP(const C::ExprP& buffer)> landed;
  std::function<void(std::vector<C::Stmt>& out)> open;
};

// An opened ring: the step loop's variable, its body's buffer, and `stepAt(step, to)`, which emits
// the start of any step (its stage handed over, the refill ahead) and returns its buffer's name.
struct StepRing {
  std::string step, buffer;
  std::function<std::string(const C::ExprP& step, std::vector<C::Stmt>& to)> stepAt;
};

// The ring of `ring` over `steps` reduction steps (a known count). Into `out`: the hand-over's
// opening (mbarriers, the producer's branch) and the copies of the first min(ahead, steps) steps
// (cp.async: a group each). Each step's start: wait until the stage has landed (cp.async: at most
// ahead - 1 newer groups in flight, all in the last ahead - 1 steps, then the async proxy fence
// where the ring has one; mbarrier: the stage's phase), then, unless a producer fills the ring, a
// barrier (every copy visible, every thread done with the buffer refilled next) and the copy
// `ahead` steps on where that step exists. No cp.async group is committed past the last step: on
// the GPU an empty group is complete at once and does not hold back cp.async.wait_group's count,
// and a ring that counted empty groups let a wait pass before its stage landed where a reduction
// had fewer steps than stages (H200). With a null `body` the ring is opened without a step (the
// caller emits each step's start by stepAt).
StepRing openRing(EmitContext& ctx, const StageRing& ring, int64_t steps, const RingCopy& copy,
                  const RingHandOver& handOver, std::vector<C::Stmt>& out, std::vector<C::Stmt>* body);

}  // namespace rtcg::emit
