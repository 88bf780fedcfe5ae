// The CPU reference executor: the ground truth GPU results are compared with.
//
// It executes a bound kernel exactly as ir/IR.h states (nests in order, every point of each
// nest's domain, statements in order, lets, reductions starting from their identities), with
// all floating-point arithmetic in double (f32 data included: f32 values are carried in double
// and rounded to float only by an explicit cast to f32 and when stored into an f32 array), and
// integer arithmetic in 64 bits with floor / and %. Every array access, affine or indirect, is
// bounds-checked: an out-of-range index throws rtcg::Error naming the array, the index, the
// extent, the source line and the loop indices of the point.
//
// Each nest's points are independent by construction, so the outermost loop of a nest is split
// across threads. The kernel is compiled once to a register machine (Bytecode.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "reference/HostArgs.h"

namespace rtcg {

namespace refvm {
struct CompiledKernel;
}

struct ReferenceOptions {
  int threads = 0;  // 0: std::thread::hardware_concurrency()
};

// The double-precision result of one written (out or inout) array.
struct ReferenceOutput {
  int param = -1;
  std::string name;
  std::vector<double> values;  // row-major, unrounded (an f32 output's values before rounding)
};

struct ReferenceResult {
  std::vector<ReferenceOutput> outputs;  // the written arrays, in parameter order
  double seconds = 0.0;                  // execution time, compilation excluded
  // The values of output `name`; throws rtcg::Error if it is not a written array.
  const std::vector<double>& values(const std::string& name) const;
};

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
  ReferenceResult run(HostArgs& args, const ReferenceOptions& options = {}) const;

 private:
  std::unique_ptr<refvm::CompiledKernel> compiled_;
};

// Compiles and runs once.
ReferenceResult runReference(const Kernel& bound, HostArgs& args, const ReferenceOptions& options = {});

}  // namespace rtcg
