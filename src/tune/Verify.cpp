#include "tune/Verify.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "driver/Executable.h"
#include "ir/Counts.h"
#include "ir/Scan.h"
#include "reference/HostArgs.h"
#include "reference/RandomFill.h"
#include "support/Error.h"

namespace rtcg {

std::map<std::string, double> tuningScalars(const Kernel& bound, uint64_t seed) {
  std::mt19937_64 rng(seed ^ 0x5ca1ab1eULL);
  std::map<std::string, double> out;
  for (const Param& p : bound.params) {
    if (p.kind != ParamKind::Scalar) continue;
    out[p.name] = isFloat(p.type) ? std::uniform_real_distribution<double>(-1, 1)(rng)
                                  : double(std::uniform_int_distribution<int>(1, 8)(rng));
  }
  return out;
}

HostArgs tuningInputs(const Kernel& bound, uint64_t seed, const std::map<std::string, double>& scalars,
                      const std::map<std::string, std::string>& inputFiles) {
  HostArgs args(bound);
  fillInputs(bound, args, seed);
  for (const auto& [name, path] : inputFiles) loadArrayFile(bound, args, name, path);
  size_t used = 0;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind != ParamKind::Scalar) continue;
    auto it = scalars.find(param.name);
    if (it == scalars.end()) throw Error(fmt::format("no value for scalar parameter '{}'", param.name));
    args.setScalar(int(p), it->second);
    ++used;
  }
  if (used != scalars.size())
    for (const auto& [name, value] : scalars)
      if (bound.findParam(name) < 0 || bound.params[size_t(bound.findParam(name))].kind != ParamKind::Scalar)
        throw Error(fmt::format("'{}' is not a scalar parameter of kernel '{}'", name, bound.name));
  return args;
}

namespace {

// The unit roundoff of a store into a 16-bit array (f16: 2^-11, bf16: 2^-8); 0 for other types.
double storeRoundoff(ScalarType t) { return t == ScalarType::F16 ? 0x1p-11 : t == ScalarType::BF16 ? 0x1p-8 : 0.0; }

}  // namespace

double verificationTolerance(const Kernel& bound, int param, Precision precision) {
  const Param& p = bound.params.at(size_t(param));
  if (!isFloat(p.type)) return 0.0;
  // f16 and bf16 outputs are computed in f32 (the language converts before any arithmetic), so
  // they follow f32's policy.
  const bool f64 = p.type == ScalarType::F64;
  double base = f64 ? 1e-12 : 1e-5;
  if (!f64 && precision == Precision::Tf32x3) base = 4e-5;
  if (!f64 && precision == Precision::Tf32) base = 2e-3;
  int64_t outputs = 0;
  // A rounding to 16 bits amplifies a difference in the value rounded (the device computes in
  // f32, the reference in double) to one last place, 2u, where the two straddle a rounding
  // boundary; such a store anywhere in the kernel can reach every output.
  double halfRoundoff = 0.0;
  for (size_t q = 0; q < bound.numSignatureParams(); ++q) {
    if (!bound.params[q].isWritten()) continue;
    halfRoundoff = std::max(halfRoundoff, storeRoundoff(bound.params[q].type));
    int64_t n = 1;
    for (int64_t e : hostArrayShape(bound, int(q))) n *= e;
    outputs += n;
  }
  double opsPerOutput = outputs > 0 ? double(floatOps(bound)) / double(outputs) : 0.0;
  // A scan's last value is a sum (product) of its whole line, combined in another order than the
  // reference's: the tolerance of a sum of that length (docs/language.md 5.2).
  for (size_t n = 0; n < bound.nests.size(); ++n)
    if (auto scan = recogniseScan(bound, int(n))) opsPerOutput = std::max(opsPerOutput, double(scan->length));
  return (base + 2 * halfRoundoff) * std::max(1.0, std::sqrt(opsPerOutput / 256.0));
}

ExpectedOutput expectedOutput(const ReferenceOutput& ref) {
  ExpectedOutput e;
  e.param = ref.param;
  e.checked = ref.computed;
  if (ref.integers.empty()) e.values = ref.values;
  else e.integers = ref.integers;
  return e;
}

std::string Verification::failures() const {
  std::string out;
  for (const OutputCheck& o : outputs) {
    if (o.pass) continue;
    if (!out.empty()) out += "; ";
    out += o.comparison.exact ? fmt::format("{}: {} (integers must be exact)", o.name, o.comparison.str())
                              : fmt::format("{}: {} exceeds tolerance {:g}", o.name, o.comparison.str(), o.tolerance);
  }
  return out;
}

Verification verifyOutputs(const Kernel& bound, const HostArgs& gpu, const std::vector<ExpectedOutput>& expected,
                           Precision precision) {
  Verification v;
  int written = 0;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {  // the outputs (a local is none)
    if (!bound.params[p].isWritten()) continue;
    ++written;
    auto it = std::find_if(expected.begin(), expected.end(), [&](const ExpectedOutput& e) { return e.param == int(p); });
    if (it == expected.end())
      throw Error(fmt::format("no reference values for output '{}' of kernel '{}'", bound.params[p].name, bound.name));
    OutputCheck c;
    c.name = bound.params[p].name;
    const HostArray& out = gpu.array(int(p));
    // The poison check a sample would lose: unchecked elements of an `out` array must be written.
    const Unchecked unchecked = bound.params[p].mode == ArrayMode::Out ? Unchecked::MustBeWritten : Unchecked::Ignore;
    if (isIntegral(bound.params[p].type) || isNarrowInt(bound.params[p].type)) {
      if (it->integers.size() != size_t(out.size()))
        throw Error(fmt::format("the reference of integer output '{}' of kernel '{}' holds {} exact values for {} "
                                "elements",
                                bound.params[p].name, bound.name, it->integers.size(), out.size()));
      c.comparison = it->checked.empty() ? compareExact(out, it->integers)
                                         : compareExact(out, it->integers, it->checked, unchecked);
    } else {
      // Both throw on a size mismatch.
      c.comparison = it->checked.empty() ? compare(out, it->values) : compare(out, it->values, it->checked, unchecked);
    }
    c.tolerance = verificationTolerance(bound, int(p), precision);
    c.pass = c.comparison.passes(c.tolerance);
    v.pass = v.pass && c.pass;
    v.worstRelativeError = std::max(v.worstRelativeError, c.comparison.relativeError);
    v.outputs.push_back(std::move(c));
  }
  if (int(expected.size()) != written)
    throw Error(fmt::format("{} reference outputs for kernel '{}', which writes {} arrays", expected.size(), bound.name,
                            written));
  return v;
}

}  // namespace rtcg
