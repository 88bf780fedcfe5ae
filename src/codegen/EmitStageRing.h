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

// The SIMT staging's rings (`shared:` tiles staged per reduction step or pipelined position,
// StagingPlan::ring), over steps whose count and bases `stepAt` gives at run time. The copy part
// (EmitStaging.cpp): `copy(at, mode, target, to)` copies (TileCopy: directly, by cp.async, or
// loads into and stores from the prefetch registers) the tiles of the step at base `at` without
// pointing the reads at them; `copyAndRead(at, mode, to)` does so and points the reads at the one
// buffer; `read(buffer, to)` points the reads at the current step's buffer `buffer`. Prefetched
// (`throughRegisters`: few enough elements a thread), a step is loaded into registers while the
// one before is computed and stored at its own start (one stage) or at that one's end (two).
struct StepCopies {
  std::function<void(const C::ExprP& at, TileCopy mode, const TileTarget& target, std::vector<C::Stmt>& to)> copy;
  std::function<void(const C::ExprP& at, TileCopy mode, std::vector<C::Stmt>& to)> copyAndRead;
  std::function<void(const C::ExprP& buffer, std::vector<C::Stmt>& to)> read;
  bool throughRegisters = false;
};

// The steps' copies: `before` goes ahead of the loop over steps, `stage` at the start of each
// step, `after` at its end, followed by the caller's barrier (which hands each step's buffer back
// to the copies); `step` counts the steps from 0. One stage: each step copies its tiles, then a
// barrier; prefetched, the first step is loaded ahead of the loop, each step stores its registers,
// and after the barrier issues the loads of the next one (where there is one) so that they overlap
// the step's arithmetic. More stages: the first ahead() steps are copied ahead of the loop (then
// landed and a barrier), each step issues the copy ahead() steps on into its buffer (freed by
// the caller's barrier of the step before) and reads its own; its end lands the next step.
// cp.async (N stages, N - 1 ahead) commits a group per step that exists and lands a step by
// waitForStepCopies; two buffers through the registers land by storing them.
void emitStepRing(const StageRing& ring, const C::ExprP& step, const StepAt& stepAt,
                  const StepCopies& copies, std::vector<C::Stmt>& before, std::vector<C::Stmt>& stage,
                  std::vector<C::Stmt>& after);

// The cp.async ring of the SIMT staging commits a group only where it issued copies (the mma
// rings never commit an empty group: openRing; `fragments 2` fills past the end instead,
// EmitMmaParts.h keepGroupFilled), and waits for one step's group by counting the groups with
// copies committed after it: `exists(n)` says whether the n-th step after the one waited for was
// copied (monotone in n; up to `most` of them). The wait is wait_group n for the largest such n (a
// chain of uniform branches), 0 where none: an empty group is complete at once and does not hold
// back a wait_group's count on the GPU (H200), so a count that includes empty groups lets a wait
// pass before its step landed.
void waitForStepCopies(int64_t most, const std::function<C::ExprP(int64_t n)>& exists, std::vector<C::Stmt>& out);
C::Stmt cpAsyncWait(int64_t pending);  // cp.async.wait_group `pending` (0 to 2)

}  // namespace rtcg::emit
