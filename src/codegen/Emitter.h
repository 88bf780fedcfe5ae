// The CUDA emitter: readable CUDA C for a bound kernel under a schedule, one `extern "C"
// __global__` function per loop nest (named `<kernel>_<nest>`; nests fused by `fuse:` share one,
// `<kernel>_<first>_<last>`), launched in nest order.
//
// The code is built as a C syntax tree (CAst.h) and printed by the strict printer. Sizes are
// baked in as constants. Each function starts with a comment naming the kernel, the bound sizes,
// the schedule and the launch shape; a function with a reduction split across blocks also says
// which module-global scratch it uses (LaunchSpec::usesGlobalScratch).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"

namespace rtcg {

// A TMA tensor map the launch passes (`mma: ... tma`): a 2-D tiled CUtensorMap of array parameter
// `param` (its device pointer), `inner` x `outer` elements of `type` (inner contiguous, rows
// pitchBytes apart), boxes of boxInner x boxOuter elements, 128-byte swizzle, out-of-bounds
// elements zero-filled. Executable::launch encodes it (cuTensorMapEncodeTiled) and passes its 128
// bytes after the parameters.
struct TensorMapSpec {
  int param = -1;
  std::string symbol;  // a kernel-local array's `__device__` variable (its address is the module's); else empty
  ScalarType type{};
  uint64_t inner = 0, outer = 0, pitchBytes = 0;
  uint32_t boxInner = 0, boxOuter = 0;
  bool operator==(const TensorMapSpec&) const = default;
};

struct LaunchSpec {
  std::string function;                  // `<kernel>_<nest>`
  std::array<uint32_t, 3> grid{1, 1, 1};   // blocks per grid, x y z
  std::array<uint32_t, 3> block{1, 1, 1};  // threads per block, x y z
  uint32_t dynamicSharedBytes = 0;        // bytes of `extern __shared__` memory the launch must provide
  // Kernel arguments in order, as indices into Kernel::params: every parameter except the Size
  // ones, in declaration order. Arrays are passed as device pointers, scalars by value.
  std::vector<int> params;
  // TMA tensor maps, passed after `params` in this order (`const __grid_constant__` parameters).
  std::vector<TensorMapSpec> tensorMaps;
  // A reduction split across blocks: the function combines the blocks' partials through
  // module-global scratch (`__device__` arrays) and resets it itself, so launches of it must not
  // overlap (two concurrent launches would share the scratch); launches in stream order are fine.
  bool usesGlobalScratch = false;
  std::string arrivalCounters;        // the `__device__ unsigned int` counters (0 between launches)
  uint32_t arrivalCounterCount = 0;
};

// The alignment every array argument's address is assumed to have. 16 (whole device allocations)
// lets NVVM merge neighbouring accesses and the staging copies use 16-byte vector loads; a variant
// for external memory at an offset assumes only what its pointers have (4 or 8: any legal pointer
// of 4- or 8-byte elements), without vector loads. Executable::launch checks the addresses.
constexpr int kWholeAllocationAlignment = 16;

struct EmittedModule {
  std::string source;                // the whole CUDA translation unit
  std::vector<LaunchSpec> launches;  // one per loop nest (fused nests: one per group), in launch order
  int arrayAlignment = kWholeAllocationAlignment;  // what the code assumes of array addresses
};

// Emits CUDA C for the bound kernel `k` (ir/Bind.h) under `plan`, the one meaning of its schedule
// (planSchedule, or the plans a space's Candidate carries: candidatePlan, schedule/Space.h). The
// plan must hold a plan per nest: one with reasons is an internal error (the caller plans, and
// rejects the schedule with those reasons), as is any failure of the emitter itself.
EmittedModule emitCuda(const Kernel& k, const SchedulePlan& plan, int arrayAlignment = kWholeAllocationAlignment);
// Plans the schedule (planSchedule) and emits it. Throws rtcg::Error whose
// message lists the reasons when the kernel is not bound or the schedule is illegal for it
// (validateSchedule).
// `limits` bounds what validation accepts (raise maxSharedBytes for tiles in dynamic shared
// memory above 48 KiB; the launch must then opt in to LaunchSpec::dynamicSharedBytes).
EmittedModule emitCuda(const Kernel& k, const Schedule& s);
EmittedModule emitCuda(const Kernel& k, const Schedule& s, const ScheduleLimits& limits);
// The same for arrays whose addresses are only `arrayAlignment`-byte aligned (a power of two; the
// default 16 emits exactly what the overloads above emit).
EmittedModule emitCuda(const Kernel& k, const Schedule& s, const ScheduleLimits& limits, int arrayAlignment);

}  // namespace rtcg
