// What one run of a bound kernel must do at least: its floating-point operations and its minimal
// memory traffic. Properties of the IR (no schedule, no device): the tuner's rates and rooflines,
// the benchmark's GFLOP/s and `rtcgc run`'s throughput divide by them.
#pragma once

#include <cstdint>
#include <string>

#include "ir/IR.h"

namespace rtcg {

// Minimal traffic of one run: every element an access can touch read once (in, inout) and written
// once (out, inout). An access whose indices are distinct loop indices touches its loops' points
// (the lower triangle of a: half of it); any other access counts its whole array.
int64_t minimalBytes(const Kernel& bound);
// Elements of array param `array` of a bound kernel: the product of its shape (arrayShape).
int64_t elementCount(const Kernel& bound, int array);
// Elements of the signature's arrays a run writes (out and inout): what each measured candidate's
// outputs hold, read back and compared with the reference.
int64_t writtenElements(const Kernel& bound);
// Floating-point operations of one run: arithmetic and math calls on float values, counted per
// point of their domain (a reduction step counts its combine as one operation; a scan, ir/Scan.h,
// one combine per value).
int64_t floatOps(const Kernel& bound);

// The same operations by precision: an operation on f64 operands counts as fp64, every other one
// as fp32 (a GPU runs FP64 at a fraction of the FP32 rate: half on an H100, 1/64 on an L40S), so
// that rooflines and the static model divide each by its own peak (arithmeticPeak).
// Integer arithmetic (i32, i64) is counted apart (`integer`, not in total()): the work of the
// CPU reference (its sampling) and the throughput of integer kernels (an i8 GEMM's i32 sums).
struct FloatOpsByPrecision {
  double fp32 = 0, fp64 = 0;
  double integer = 0;
  double total() const { return fp32 + fp64; }
};
FloatOpsByPrecision floatOpsByPrecision(const Kernel& bound);
// Arithmetic operations of one run of any type (floats and integers, as above): what the CPU
// reference executes, for sizing its sample.
int64_t arithmeticOps(const Kernel& bound);

// The peak a mix of operations runs at when each precision runs at its own: the time of both
// (fp32Ops / fp32Peak + fp64Ops / fp64Peak) spread over all. Without fp64 operations, fp32Peak
// exactly; with fp64 operations and no fp64 peak (0: unknown), fp32Peak.
double arithmeticPeak(double fp32Peak, double fp64Peak, const FloatOpsByPrecision& ops);
// "fp32", "fp64" or "mixed (N% fp64)": the arithmetic the peak above is for, in words; "integer"
// for a kernel of integer arithmetic only (an i8 GEMM).
std::string arithmeticName(const FloatOpsByPrecision& ops);

}  // namespace rtcg
