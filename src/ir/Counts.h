// What one run of a bound kernel must do at least: its floating-point operations and its minimal
// memory traffic. Properties of the IR (no schedule, no device): the tuner's rates and rooflines,
// the benchmark's GFLOP/s and `rtcgc run`'s throughput divide by them.
#pragma once

#include <cstdint>

#include "ir/IR.h"

namespace rtcg {

// Minimal traffic of one run: every array read once (in, inout) and written once (out, inout).
int64_t minimalBytes(const Kernel& bound);
// Floating-point operations of one run: arithmetic and math calls on float values, counted per
// point of their domain (a reduction step counts its combine as one operation).
int64_t floatOps(const Kernel& bound);

}  // namespace rtcg
