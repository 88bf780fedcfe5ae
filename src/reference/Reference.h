// The CPU reference executor: the ground truth GPU results are compared with.
//
// It executes a bound kernel exactly as ir/IR.h states (nests in order, every point of each
// nest's domain, statements in order, lets, reductions starting from their identities), with
// all floating-point arithmetic in double (f32 data included: f32 values are carried in double
// and rounded to float only by an explicit cast to f32 and when stored into an f32 array; a
// reduction that is a sum of loads or of products of two loads is accumulated as if in twice
// double precision and rounded once, Machine.cpp's Dot2, so it is far more accurate than any
// GPU order of the same sum and a comparison measures the GPU's error), and
// integer arithmetic in 64 bits with floor / and %. Every array access, affine or indirect, is
// bounds-checked: an out-of-range index throws rtcg::Error naming the array, the index, the
// extent, the source line and the loop indices of the point.
//
// Each nest's points are independent by construction, so the outermost loop of a nest is split
// across threads. The kernel is compiled once to a register machine (Bytecode.h).
//
// One thing the frontend cannot prove is checked at run time: that the points of a nest storing
// through an indirect index (y[idx[i]] = ...) write distinct elements. Where two points store to
// the same element, the result would depend on the order they run in (on a GPU, a race): the run
// throws rtcg::Error naming the array, the element and both points. Such a nest runs on one thread.
//
// Sampled runs, for verifying large kernels at a fraction of the cost: only some values of each
// nest's outermost loop are run, and the result says exactly which output elements they wrote
// (ReferenceOutput::computed); the other elements hold no reference value. A wrong GPU kernel is
// wrong almost everywhere, so a spread sample of rows catches it. This is sound only for kernels
// samplingObstacle() accepts; for the others a sampled run falls back to the full one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "reference/Compare.h"
#include "ir/Scan.h"
#include "reference/HostArgs.h"
#include "support/Error.h"

namespace rtcg {

namespace refvm {
struct CompiledKernel;
}

// Two points of a nest stored to the same element through an indirect index (see the top of this
// file): the kernel's result depends on the order its points run in, so it has none to compare
// with. A user error (the program, or its index data).
class WriteConflictError : public Error {
 public:
  using Error::Error;
};

struct ReferenceOptions {
  int threads = 0;  // 0: std::thread::hardware_concurrency()
  // Sampling: run only this many values of each nest's outermost loop (chosen by
  // sampleOuterValues with sampleSeed); 0: every value, the full reference.
  int64_t sampleOuterValues = 0;
  uint64_t sampleSeed = 1;
  // Full runs: mark the elements the kernel writes, and count in each output those it does not
  // (ReferenceOutput::unwritten). Slower; `rtcgc run --cpu` uses it, since a kernel whose
  // indirect stores miss elements of an `out` array passed it with NaNs in its checksum.
  bool countUnwritten = false;
};

// The double-precision result of one written (out or inout) array.
struct ReferenceOutput {
  int param = -1;
  std::string name;
  std::vector<double> values;  // row-major, unrounded (an f32 output's values before rounding)
  // Integer outputs: the exact values (`values` holds them as doubles, exact only up to 2^53, for
  // checksums); compare with compareWithReference, which uses these. Empty for float outputs.
  std::vector<int64_t> integers;
  // Sampled runs: 1 for each element the sampled points wrote, the only elements whose `values`
  // are the kernel's result; empty for full runs (every element is).
  std::vector<uint8_t> computed;
  int64_t computedCount() const;  // elements with a reference value
  // With ReferenceOptions::countUnwritten on a full run: the elements no point wrote (-1 when not
  // counted), and the row-major index of the first.
  int64_t unwritten = -1, firstUnwritten = -1;
};

struct ReferenceResult {
  std::vector<ReferenceOutput> outputs;  // the written arrays, in parameter order
  double seconds = 0.0;                  // execution time, compilation excluded
  // Sampled runs: `sampled` set, and per nest the outer loop values that ran (sorted; empty for
  // a nest without loops, which always runs its single point).
  bool sampled = false;
  std::vector<std::vector<int64_t>> outerValues;
  int64_t outerValuesRun = 0, outerValuesTotal = 0;  // over all nests with loops
  // Sampling was asked for but the full kernel ran: why (samplingObstacle, or a sample that
  // would cover every value anyway).
  std::string fullReason;
  // The values of output `name`; throws rtcg::Error if it is not a written array.
  const std::vector<double>& values(const std::string& name) const;
};

// `out` (a result of the kernel, e.g. a GPU's) against the reference output `ref` of the same
// array: integer arrays exactly (compareExact with ref.integers), float arrays by compare() with
// ref.values; a sampled reference (ref.computed) compares the computed elements only, and
// `unchecked` says what to do with the others. Throws rtcg::Error if the sizes differ.
Comparison compareWithReference(const HostArray& out, const ReferenceOutput& ref,
                                Unchecked unchecked = Unchecked::Ignore);

// Why sampling the outer loops of `bound` would not give exact reference values for the
// elements the sampled points write, or would lose the unwritten-element check; empty when it is
// sound. It is sound when
//  - no nest reads an array an earlier nest writes (it would read the unsampled points' elements
//    unwritten) and no array is written by two nests (the later one's unsampled points would
//    leave the earlier one's values where the full run has others), and
//  - every `out` array is written in full by one nest whose parallel loops index it directly
//    (c[i, j] over i in 0..n, j in 0..n, in any order; a dimension of extent 1 may be indexed by
//    0): then every element of it is written by the kernel, so a verifier may require every
//    element of a GPU result to be written, not only the sampled ones.
//  - no nest stores through an indirect index (a sample would check only the points it runs for
//    two storing to the same element).
std::string samplingObstacle(const Kernel& bound);

// `count` distinct values of [lo, hi), sorted: lo and hi - 1, about half of the others evenly
// strided and the rest drawn at random from `seed`. Every value when count > (hi - lo) / 2 (a
// sample that large saves little). count must be at least 2.
std::vector<int64_t> sampleOuterValues(int64_t lo, int64_t hi, int64_t count, uint64_t seed);

// A bound kernel compiled for the reference executor; run it as often as needed.
class ReferenceProgram {
 public:
  // Throws rtcg::Error for IR that cannot be executed (see Bytecode.h compileKernel).
  explicit ReferenceProgram(const Kernel& bound);
  ~ReferenceProgram();
  ReferenceProgram(ReferenceProgram&&) noexcept;
  ReferenceProgram& operator=(ReferenceProgram&&) noexcept;

  // Runs the kernel on `args`: written arrays are updated in place (at their element type) and
  // their double-precision values returned. Throws rtcg::Error for arguments that do not match
  // the kernel (unset scalar, wrong array type or shape) and for run-time errors (out-of-range
  // index, integer division by zero); arrays may then hold partial results.
  // With options.sampleOuterValues, runs a sample (see the top of this file) or, where
  // samplingObstacle() objects or the sample would cover every value, the full kernel with
  // ReferenceResult::fullReason saying why.
  ReferenceResult run(HostArgs& args, const ReferenceOptions& options = {}) const;

  // The number of values of each nest's outermost loop (1 for a nest without loops), for
  // choosing a sample size.
  std::vector<int64_t> outerExtents() const;

 private:
  std::unique_ptr<refvm::CompiledKernel> compiled_;
  std::string samplingObstacle_;  // samplingObstacle(bound), computed once
  // Per nest: its scan form (ir/Scan.h), which runs in one pass instead of a reduction per point.
  std::vector<std::optional<ScanForm>> scans_;
};

// Compiles and runs once.
ReferenceResult runReference(const Kernel& bound, HostArgs& args, const ReferenceOptions& options = {});

}  // namespace rtcg
