// The plan parts of staged tiles. The stage ring: how the tiles of a reduction's steps reach
// shared memory, one plan part that the SIMT staging (`shared:` with `buffers:` and `copy:`, StagingPlan::ring) and the tensor-core
// plans (`mma: ... stages N [tma [producer]]`, MmaPlan::ring) fill alike, and that one emitter
// (codegen/EmitStageRing.cpp) turns into code.
//
// A ring has `stages` buffers per tile; step s computes from buffer s % stages while the copies of
// the next `ahead` steps are in flight. The copy engine says who moves the bytes: the block's
// threads through their registers (`copy: registers`, and mma without stages, which converts as it
// stores), cp.async (global to shared in commit groups, sm_80), or TMA (one thread issues a stage's
// boxes of a tensor map, an mbarrier counts their bytes). The hand-over says how a landed stage
// passes to the arithmetic and how a read one passes back to the copies: the block meets at a
// barrier each step (each thread having waited for its own copies), every thread waits for the
// stage's mbarrier phase and then the block meets at a barrier, or a producer warpgroup fills
// stages that the consumer warpgroups release on an mbarrier of their own (no block barrier).
#pragma once

#include <cstdint>
#include <string>

namespace rtcg {

enum class CopyEngine : uint8_t { Registers, CpAsync, Tma };
enum class HandOver : uint8_t { Barrier, Mbarrier, ProducerConsumer };

// When the arithmetic is done with a step's buffer, which says how far ahead the copies may run.
enum class StageRelease : uint8_t {
  AtStepEnd,      // at the block's meeting after the step: stages - 1 steps ahead
  AfterNextStep,  // a step later (wgmma in flight through the next step): stages - 2 ahead
  BeforeRefill,   // before its refill is issued (`fragments 2`'s registers, the producer's `empty`): stages ahead
};

struct StageRing {
  int64_t stages = 1;  // buffers of each tile staged per step
  CopyEngine engine = CopyEngine::Registers;
  HandOver handOver = HandOver::Barrier;
  StageRelease release = StageRelease::AtStepEnd;
  // The arithmetic reads the tiles through the async proxy (wgmma) while the threads' cp.async
  // wrote them through the generic one: each thread fences its copies before the hand-over (a
  // producer's threads' copies: each consumer fences after its wait for the stage).
  bool fenceAsyncProxy = false;

  // Steps whose copies run ahead of the step being computed.
  int64_t ahead() const {
    return release == StageRelease::AfterNextStep ? stages - 2 : release == StageRelease::BeforeRefill ? stages : stages - 1;
  }
  bool tma() const { return engine == CopyEngine::Tma; }
  bool producer() const { return handOver == HandOver::ProducerConsumer; }
};

// The form of a staged tile in shared memory: Padded, the box's rows padded against bank conflicts
// (the SIMT staging, whose StagedArray::padded and ::order say its pitches and transposition;
// mma.sync without stages, converted as stored); AsLoaded, the values as the copy moves them,
// rows along the operand's contiguous direction (mma.sync with stages, the 16-bit arithmetics);
// Canonical, wgmma's core matrices of 8 rows of 16 bytes; Swizzle128, wgmma's 128-byte swizzled
// atoms, what a TMA box with 128-byte swizzle writes (MmaPlan::tiles, with the pitches and the
// transposition of each operand: MmaPlan::OperandTile: pitch, kMajor).
enum class TileForm : uint8_t { Padded, AsLoaded, Canonical, Swizzle128 };

const char* tileFormName(TileForm f);      // "padded", "as loaded", "canonical", "128-byte swizzle"
const char* copyEngineName(CopyEngine e);  // "registers", "cp.async", "TMA"
const char* handOverName(HandOver h);      // "barrier", "mbarrier", "producer-consumer"
// The ring in words, for `rtcgc explain` and tests: "3 stages, 2 steps ahead, cp.async, barrier".
std::string printStageRing(const StageRing& r);

}  // namespace rtcg
