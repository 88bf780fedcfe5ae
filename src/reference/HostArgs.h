// The arguments of one run of a bound kernel on the host: one HostArray per array parameter and
// one value per runtime scalar parameter, addressed by parameter name or position
// (Kernel::params index). Size parameters take no argument (they are baked into the kernel).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "reference/HostArray.h"

namespace rtcg {

// A runtime scalar at its type: floats in `f` (an f32 scalar already rounded to float),
// integers in `i`.
struct ScalarValue {
  ScalarType type = ScalarType::F32;
  double f = 0.0;
  int64_t i = 0;
  static ScalarValue ofDouble(ScalarType t, double v);   // rounds to f32 / checks integrality
  static ScalarValue ofInt(ScalarType t, int64_t v);     // checks the i32 range
  double asDouble() const { return isFloat(type) ? f : double(i); }
};

// Extents of array parameter `param` of a bound kernel (shape expressions evaluated with the
// kernel's size bindings). Throws rtcg::Error if a size is unbound or an extent is negative.
std::vector<int64_t> hostArrayShape(const Kernel& bound, int param);

// Throws rtcg::Error when `copies` sets of `bound`'s host arrays, plus the float64 values the
// reference executor computes for its written arrays, would not fit in this machine's physical
// memory: `run --cpu -D n=2147483647` died of std::bad_alloc (exit 70) or the OOM killer instead.
void checkHostMemory(const Kernel& bound, int copies);

// Loads the values of in/inout array `name` of `bound` into `args` from `path`: whitespace-separated
// numbers in row-major order, exactly as many as it has elements (integers for integer arrays).
// Throws rtcg::Error naming the file, the array and what is wrong (not an in/inout array of the
// kernel, a token that is not a number, too few or too many values, an unreadable file).
class HostArgs;
void loadArrayFile(const Kernel& bound, HostArgs& args, const std::string& name, const std::string& path);
// The arrays a search loads from files (name -> path), each loaded once into a scratch copy of the
// arguments so that a wrong name or file fails before any GPU work (loadArrayFile's errors).
// Returns the paths made absolute: the worker processes that load them again may run elsewhere.
std::map<std::string, std::string> checkArrayFiles(const Kernel& bound, const std::map<std::string, std::string>& files);

class HostArgs {
 public:
  HostArgs() = default;
  // Allocates every array parameter of the signature at its shape (zero-filled); scalars start
  // unset. The kernel's locals are no arguments: the reference executor allocates them.
  explicit HostArgs(const Kernel& bound);

  int numParams() const { return int(names_.size()); }
  int paramIndex(const std::string& name) const;  // throws rtcg::Error naming the kernel's params

  HostArray& array(int param);
  const HostArray& array(int param) const;
  HostArray& array(const std::string& name) { return array(paramIndex(name)); }
  const HostArray& array(const std::string& name) const { return array(paramIndex(name)); }
  // Replaces an array argument; its element type and shape must match the parameter's.
  void setArray(const std::string& name, HostArray a);

  // Sets a scalar parameter, converted to its type (an integer scalar needs an integral value).
  void setScalar(int param, double value);
  void setScalar(const std::string& name, double value) { setScalar(paramIndex(name), value); }
  void setScalarInt(const std::string& name, int64_t value);
  // The scalar's value; throws rtcg::Error naming it if it was never set.
  const ScalarValue& scalar(int param) const;
  bool isArray(int param) const;
  bool isScalar(int param) const;

 private:
  void checkParam(int param) const;

  std::string kernelName_;
  std::vector<std::string> names_;
  std::vector<ParamKind> kinds_;
  std::vector<ScalarType> types_;
  std::vector<HostArray> arrays_;                  // by param; empty for non-arrays
  std::vector<std::optional<ScalarValue>> scalars_;  // by param
};

}  // namespace rtcg
