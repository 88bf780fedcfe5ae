#include "reference/HostArgs.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <sstream>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/IntOps.h"
#include "support/Error.h"
#include "support/InputFile.h"

namespace rtcg {

ScalarValue ScalarValue::ofDouble(ScalarType t, double v) {
  ScalarValue s;
  s.type = t;
  if (t == ScalarType::F32) {
    s.f = double(float(v));
  } else if (t == ScalarType::F64) {
    s.f = v;
  } else if (isHalf(t)) {
    s.f = roundToFloat(v, t);
  } else {
    if (!(std::floor(v) == v) || std::abs(v) > 9007199254740992.0)
      throw Error(fmt::format("{} is not an integer value for a {} scalar", v, typeName(t)));
    return ofInt(t, int64_t(v));
  }
  return s;
}

ScalarValue ScalarValue::ofInt(ScalarType t, int64_t v) {
  if (isFloat(t)) return ofDouble(t, double(v));
  if (t == ScalarType::I32 && (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()))
    throw Error(fmt::format("{} is out of range for an i32 scalar", v));
  if (t == ScalarType::U32 && (v < 0 || v > int64_t(std::numeric_limits<uint32_t>::max())))
    throw Error(fmt::format("{} is out of range for a u32 scalar (0 to 4294967295)", v));
  ScalarValue s;
  s.type = t;
  s.i = t == ScalarType::Bool ? (v != 0) : v;
  return s;
}

// Shape expressions are integer expressions in size parameters (constants once bound).
static int64_t evalSizeExpr(const Kernel& k, const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm: return e->intValue;
    case ExprKind::Var: {
      if (e->varKind == VarKind::Size) {
        const std::string& name = e->varId >= 0 && e->varId < int(k.params.size()) ? k.params[e->varId].name : e->name;
        auto it = k.sizes.find(name);
        if (it == k.sizes.end())
          throw Error(fmt::format("size parameter '{}' of kernel '{}' is not bound", name, k.name));
        return it->second;
      }
      break;
    }
    case ExprKind::Unary:
      if (e->unaryOp == UnaryOp::Neg) return wrapSub(0, evalSizeExpr(k, e->operands[0]));
      break;
    case ExprKind::Cast:
      if (isInteger(e->type)) return evalSizeExpr(k, e->operands[0]);
      break;
    case ExprKind::Binary: {
      int64_t a = evalSizeExpr(k, e->operands[0]), b = evalSizeExpr(k, e->operands[1]);
      if ((e->binaryOp == BinaryOp::Div || e->binaryOp == BinaryOp::Mod) && b == 0)
        throw Error(fmt::format("division by zero in an array extent of kernel '{}'", k.name));
      if (auto r = wrappingIntArith(e->binaryOp, a, b)) return *r;
      break;
    }
    default: break;
  }
  throw Error(fmt::format("array extent of kernel '{}' at line {} is not an integer expression in size parameters",
                          k.name, e->loc.line));
}

std::vector<int64_t> hostArrayShape(const Kernel& bound, int param) {
  RTCG_ASSERT(param >= 0 && param < int(bound.params.size()) && bound.params[param].isArray(),
              "hostArrayShape of a non-array parameter");
  const Param& p = bound.params[param];
  std::vector<int64_t> shape;
  for (const Expr& e : p.shape) {
    int64_t v = evalSizeExpr(bound, e);
    if (v < 0) throw Error(fmt::format("extent {} of array '{}' is negative", v, p.name));
    shape.push_back(v);
  }
  return shape;
}

void checkHostMemory(const Kernel& bound, int copies) {
  double bytes = 0;  // in double: a product of extents may not fit 64 bits
  for (size_t i = 0; i < bound.params.size(); ++i) {
    const Param& p = bound.params[i];
    if (!p.isArray()) continue;
    double elements = 1;
    for (int64_t e : hostArrayShape(bound, int(i))) elements *= double(e);
    bytes += elements * (copies * typeBytes(p.type) + (p.isWritten() ? 8 : 0));
  }
  double physical = double(::sysconf(_SC_PHYS_PAGES)) * double(::sysconf(_SC_PAGESIZE));
  if (physical > 0 && bytes > physical)
    throw Error(fmt::format("the host arrays of kernel '{}' and their reference values need {:.1f} GiB, more than "
                            "this machine's {:.1f} GiB of memory; bind smaller sizes",
                            bound.name, bytes / double(1 << 30), physical / double(1 << 30)));
}

HostArgs::HostArgs(const Kernel& bound) : kernelName_(bound.name) {
  for (size_t i = 0; i < bound.numSignatureParams(); ++i) {
    const Param& p = bound.params[i];
    names_.push_back(p.name);
    kinds_.push_back(p.kind);
    types_.push_back(p.type);
    arrays_.push_back(p.isArray() ? HostArray(p.type, hostArrayShape(bound, int(i))) : HostArray());
    scalars_.emplace_back();
  }
}

int HostArgs::paramIndex(const std::string& name) const {
  for (size_t i = 0; i < names_.size(); ++i)
    if (names_[i] == name) return int(i);
  throw Error(fmt::format("kernel '{}' has no parameter '{}' (parameters: {})", kernelName_, name,
                          fmt::join(names_, ", ")));
}

void HostArgs::checkParam(int param) const {
  if (param < 0 || param >= numParams())
    throw Error(fmt::format("kernel '{}' has no parameter #{} (it has {})", kernelName_, param, numParams()));
}

bool HostArgs::isArray(int param) const { checkParam(param); return kinds_[param] == ParamKind::Array; }
bool HostArgs::isScalar(int param) const { checkParam(param); return kinds_[param] == ParamKind::Scalar; }

HostArray& HostArgs::array(int param) {
  if (!isArray(param)) throw Error(fmt::format("parameter '{}' of kernel '{}' is not an array", names_[param], kernelName_));
  return arrays_[param];
}
const HostArray& HostArgs::array(int param) const { return const_cast<HostArgs*>(this)->array(param); }

void HostArgs::setArray(const std::string& name, HostArray a) {
  HostArray& slot = array(name);
  if (a.type() != slot.type() || a.shape() != slot.shape())
    throw Error(fmt::format("argument for array '{}' is {}, the kernel expects {}", name, a.describe(), slot.describe()));
  slot = std::move(a);
}

void HostArgs::setScalar(int param, double value) {
  if (!isScalar(param))
    throw Error(fmt::format("parameter '{}' of kernel '{}' is not a runtime scalar", names_[param], kernelName_));
  try {
    scalars_[param] = ScalarValue::ofDouble(types_[param], value);
  } catch (const Error& e) {
    throw Error(fmt::format("scalar '{}': {}", names_[param], e.what()));
  }
}

void HostArgs::setScalarInt(const std::string& name, int64_t value) {
  int param = paramIndex(name);
  if (!isScalar(param)) throw Error(fmt::format("parameter '{}' of kernel '{}' is not a runtime scalar", name, kernelName_));
  try {
    scalars_[param] = ScalarValue::ofInt(types_[param], value);
  } catch (const Error& e) {
    throw Error(fmt::format("scalar '{}': {}", name, e.what()));
  }
}

const ScalarValue& HostArgs::scalar(int param) const {
  if (!isScalar(param)) throw Error(fmt::format("parameter '{}' of kernel '{}' is not a runtime scalar", names_[param], kernelName_));
  if (!scalars_[param]) throw Error(fmt::format("no value given for scalar '{}' of kernel '{}'", names_[param], kernelName_));
  return *scalars_[param];
}

void loadArrayFile(const Kernel& bound, HostArgs& args, const std::string& name, const std::string& path) {
  const int p = bound.findParam(name);
  if (p < 0 || !bound.params[size_t(p)].isArray() || bound.params[size_t(p)].mode == ArrayMode::Out ||
      bound.params[size_t(p)].isLocal())
    throw Error(fmt::format("'{}' is not an in or inout array of kernel '{}' (an input file gives one)", name, bound.name));
  std::istringstream in(readInputFile(path, size_t(1) << 30));
  HostArray& a = args.array(p);
  const bool integer = isIntegral(a.type()) || isNarrowInt(a.type());
  std::string token;
  int64_t n = 0;
  while (in >> token) {
    char* end = nullptr;
    errno = 0;
    const long long iv = integer ? std::strtoll(token.c_str(), &end, 10) : 0;
    const double fv = integer ? double(iv) : std::strtod(token.c_str(), &end);
    if (end == token.c_str() || *end || errno == ERANGE)
      throw Error(fmt::format("{}: value {} ('{}') is not {} number", path, n + 1, token, integer ? "an integer" : "a"));
    if (n >= a.size()) break;
    if ((isNarrowInt(a.type()) || isUnsigned(a.type())) && wrapToInt(iv, a.type()) != iv)
      throw Error(fmt::format("{}: value {} ({}) is out of the range of {}", path, n + 1, iv, typeName(a.type())));
    if (integer) a.setInt(n, iv);
    else a.set(n, fv);
    ++n;
  }
  if (n != a.size() || (in >> token))
    throw Error(fmt::format("{}: '{}' has {} elements, the file {}", path, name, a.size(),
                            n < a.size() ? fmt::format("holds {}", n) : std::string("holds more")));
}

std::map<std::string, std::string> checkArrayFiles(const Kernel& bound, const std::map<std::string, std::string>& files) {
  std::map<std::string, std::string> out;
  if (files.empty()) return out;
  HostArgs probe(bound);
  for (const auto& [name, path] : files) {
    loadArrayFile(bound, probe, name, path);
    out[name] = std::filesystem::absolute(path).string();
  }
  return out;
}

}  // namespace rtcg
