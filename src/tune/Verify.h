// Verification of a candidate's outputs against the float64 reference: the rule that decides
// whether a candidate's time may count. A wrong candidate can never win.
//
// Per written array: no NaN/Inf where the reference is finite (outputs are poisoned before each
// verifying launch, so an element the kernel forgot to write is NaN or a sentinel), and
//  - f32: relative L2 error <= 1e-5, scaled up by sqrt(floating-point operations per output
//    element / 256) for long reductions (rounding error grows like the square root of the length);
//  - f64: the same rule with 1e-12;
//  - integers: exact, in 64 bits (never through double, which cannot tell i64 values apart above 2^53).
// The precision policy (`--precision`) widens the f32 rule where it lets contractions use tensor
// cores: tf32x3 4e-5 (the split drops the small x small products, about 2^-22 of each, and the
// tensor cores accumulate in their own order), tf32 2e-3 (each operand rounded to 10 mantissa
// bits: 2^-11 of each product at worst, about 3e-4 measured), both scaled like the ieee rule. f64
// is unchanged (FP64 mma has IEEE products and sums).
// With a sampled reference (ExpectedOutput::checked), the rules apply to the checked elements,
// and every other element of an `out` array must have been written: not NaN/Inf (float) nor the
// integer poison. The sampled reference is used only for kernels that write every element of
// their `out` arrays (samplingObstacle), so a correct candidate leaves none poisoned.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "reference/Compare.h"
#include "reference/HostArgs.h"
#include "reference/Reference.h"
#include "schedule/Schedule.h"

namespace rtcg {

// The scalar arguments of tuning runs, by name: uniform in [-1, 1) for floats and in [1, 8] for
// integers, drawn from `seed` (the same rule as `rtcgc run`).
std::map<std::string, double> tuningScalars(const Kernel& bound, uint64_t seed);

// The arguments candidates are verified and timed on: fillInputs(bound, seed) and `scalars`, then
// the arrays of `inputFiles` (name -> file) loaded from their files. The parent (for the
// reference) and the worker (for the GPU) both build them this way. Throws rtcg::Error for a
// scalar that is missing or not a parameter, or an input file that does not fit its array.
HostArgs tuningInputs(const Kernel& bound, uint64_t seed, const std::map<std::string, double>& scalars,
                      const std::map<std::string, std::string>& inputFiles = {});

// The relative L2 error allowed for written array parameter `param` of the bound kernel.
double verificationTolerance(const Kernel& bound, int param, Precision precision = Precision::Ieee);

struct OutputCheck {
  std::string name;
  Comparison comparison;
  double tolerance = 0;
  bool pass = false;
};

struct Verification {
  bool pass = true;
  double worstRelativeError = 0;
  std::vector<OutputCheck> outputs;
  // "c: rel 3.1e-02 > tolerance 1e-05 (max abs 1.2, non-finite 0 of 16384)" for each failing output.
  std::string failures() const;
};

struct ExpectedOutput {
  int param = -1;
  std::vector<double> values;  // float outputs
  // A sampled reference: 1 for the elements `values` (or `integers`) holds the reference of; empty: all.
  std::vector<uint8_t> checked;
  // Integer outputs: the exact values, compared exactly (compareExact); `values` is not used.
  std::vector<int64_t> integers;
};
// The expected output of a reference output: its exact integers for an integer array, else its values.
ExpectedOutput expectedOutput(const ReferenceOutput& ref);

// Compares every written array of `gpu` with `expected` (one entry per written array, any order).
// Throws rtcg::Error when `expected` does not match the kernel's written arrays (or a mask does
// not match its array, or an integer output comes without its exact `integers`).
Verification verifyOutputs(const Kernel& bound, const HostArgs& gpu, const std::vector<ExpectedOutput>& expected,
                           Precision precision = Precision::Ieee);

}  // namespace rtcg
