#include "api/KernelArgs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/Emitter.h"
#include "ir/Analysis.h"
#include "ir/Counts.h"
#include "support/Error.h"

namespace rtcg {

const char* cppTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
    case ScalarType::I32: return "int32_t";
    case ScalarType::I64: return "int64_t";
    case ScalarType::F16: return "rtcg::f16";
    case ScalarType::BF16: return "rtcg::bf16";
    case ScalarType::I8: return "int8_t";
    case ScalarType::U8: return "uint8_t";
    case ScalarType::U32: return "uint32_t";
    case ScalarType::Bool: return "bool";
  }
  return "?";
}

const char* cppTypeName(ElementType t) {
  switch (t) {
    case ElementType::F32: return "float";
    case ElementType::F64: return "double";
    case ElementType::I32: return "int32_t";
    case ElementType::I64: return "int64_t";
    case ElementType::F16: return "rtcg::f16";
    case ElementType::BF16: return "rtcg::bf16";
    case ElementType::I8: return "int8_t";
    case ElementType::U8: return "uint8_t";
    case ElementType::U32: return "uint32_t";
  }
  return "?";
}

ScalarType toScalarType(ElementType t) {
  switch (t) {
    case ElementType::F32: return ScalarType::F32;
    case ElementType::F64: return ScalarType::F64;
    case ElementType::I32: return ScalarType::I32;
    case ElementType::I64: return ScalarType::I64;
    case ElementType::F16: return ScalarType::F16;
    case ElementType::BF16: return ScalarType::BF16;
    case ElementType::I8: return ScalarType::I8;
    case ElementType::U8: return ScalarType::U8;
    case ElementType::U32: return ScalarType::U32;
  }
  RTCG_ASSERT(false, "unknown ElementType");
}

namespace {

const char* modePrefix(const Param& p) {
  if (!p.isArray()) return "";
  switch (p.mode) {
    case ArrayMode::In: return "";
    case ArrayMode::Out: return "out ";
    case ArrayMode::InOut: return "inout ";
    case ArrayMode::Local: return "";  // (a local is no argument)
  }
  return "";
}

std::string shapeText(const Kernel& bound, int param) {
  return fmt::format("{}[{}]", typeName(bound.params[param].type), fmt::join(arrayShape(bound, param), ", "));
}

// A scalar of C++ type `given` passes exactly to a parameter of type `want`.
bool scalarConverts(ElementType given, ScalarType want) {
  ScalarType g = toScalarType(given);
  if (g == want) return true;
  return (g == ScalarType::F32 && want == ScalarType::F64) || (g == ScalarType::I32 && want == ScalarType::I64);
}

const void* memoryOf(const detail::ArgRef& a) {
  if (a.kind == detail::ArgRef::Kind::DeviceArray) return a.buffer.get();
  if (a.kind == detail::ArgRef::Kind::Scalar) return nullptr;
  return a.host;
}

}  // namespace

std::string describeParamType(const Kernel& bound, int param) {
  const Param& p = bound.params[param];
  if (p.isArray()) {
    int64_t n = elementCount(bound, param);
    return fmt::format("{} ({} element{})", shapeText(bound, param), n, n == 1 ? "" : "s");
  }
  return fmt::format("{} scalar", typeName(p.type));
}

std::string describeArgument(const detail::ArgRef& a) {
  using Kind = detail::ArgRef::Kind;
  switch (a.kind) {
    case Kind::Scalar: return cppTypeName(a.type);
    case Kind::DeviceArray:
    case Kind::HostArray:
    case Kind::ConstHostArray: {
      const char* holder = a.kind == Kind::DeviceArray ? "rtcg::Array"
                           : a.kind == Kind::HostArray ? "std::vector"
                                                       : "const std::vector";
      return fmt::format("{}<{}> of {} element{}", holder, cppTypeName(a.type), a.count, a.count == 1 ? "" : "s");
    }
  }
  return "?";
}

std::string signatureOf(const Kernel& bound) {
  std::vector<std::string> params, sizes;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind == ParamKind::Size) {
      auto it = bound.sizes.find(param.name);
      sizes.push_back(it == bound.sizes.end() ? param.name : fmt::format("{} = {}", param.name, it->second));
    } else if (param.isArray()) {
      params.push_back(fmt::format("{}{}: {}", modePrefix(param), param.name, shapeText(bound, int(p))));
    } else {
      params.push_back(fmt::format("{}: {}", param.name, typeName(param.type)));
    }
  }
  std::string s = fmt::format("{}({})", bound.name, fmt::join(params, ", "));
  if (!sizes.empty()) s += fmt::format(" with {}", fmt::join(sizes, ", "));
  return s;
}

std::vector<std::optional<size_t>> matchArguments(const Kernel& bound, const std::vector<detail::ArgRef>& args) {
  using Kind = detail::ArgRef::Kind;
  std::vector<int> argParams;  // argument position -> parameter index
  std::vector<std::string> sizeNames;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    if (bound.params[p].kind == ParamKind::Size)
      sizeNames.push_back(bound.params[p].name);
    else
      argParams.push_back(int(p));
  }
  if (args.size() != argParams.size()) {
    std::string sizesNote =
        sizeNames.empty() ? ""
                          : fmt::format("; size parameter{} {} take{} no argument", sizeNames.size() == 1 ? "" : "s",
                                        fmt::join(sizeNames, ", "), sizeNames.size() == 1 ? "s" : "");
    throw Error(fmt::format("{}: expected {} argument{}, given {} (the signature is {}{})", bound.name,
                            argParams.size(), argParams.size() == 1 ? "" : "s", args.size(), signatureOf(bound),
                            sizesNote));
  }

  std::vector<std::optional<size_t>> byParam(bound.numSignatureParams());
  for (size_t i = 0; i < args.size(); ++i) {
    int p = argParams[i];
    const Param& param = bound.params[p];
    const detail::ArgRef& a = args[i];
    auto fail = [&](const std::string& why) {
      throw Error(fmt::format("{}: argument {} ({}{}): expected {}, given {}{}", bound.name, i + 1, modePrefix(param),
                              param.name, describeParamType(bound, p), describeArgument(a), why));
    };
    if (param.isArray()) {
      if (a.kind == Kind::Scalar) fail("");
      if (toScalarType(a.type) != param.type) fail("");
      if (int64_t(a.count) != elementCount(bound, p)) fail("");
      if (a.kind == Kind::ConstHostArray && param.isWritten())
        fail(fmt::format(" (the kernel writes '{}': pass a non-const std::vector<{}> or an rtcg::Array<{}>)",
                         param.name, cppTypeName(a.type), cppTypeName(a.type)));
      if (a.kind == Kind::DeviceArray && a.count > 0 && !a.buffer)
        fail(" (a default-constructed rtcg::Array has no memory)");
    } else {
      if (a.kind != Kind::Scalar) fail("");
      if (!scalarConverts(a.type, param.type))
        fail(fmt::format(" (pass a {}; rtcg converts a scalar only where no value can change)",
                         cppTypeName(param.type)));
    }
    byParam[p] = i;
  }

  // A written array aliasing another argument would break the race-freedom proof.
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& written = bound.params[argParams[i]];
    const void* mem = memoryOf(args[i]);
    if (!written.isWritten() || !mem || args[i].count == 0) continue;
    for (size_t j = 0; j < args.size(); ++j) {
      if (j == i || memoryOf(args[j]) != mem) continue;
      size_t first = std::min(i, j), second = std::max(i, j);
      const Param& p1 = bound.params[argParams[first]];
      const Param& p2 = bound.params[argParams[second]];
      throw Error(fmt::format("{}: argument {} ({}{}) and argument {} ({}{}) are the same memory; the kernel "
                              "writes '{}' and was proved race-free only for distinct arrays: pass a separate "
                              "array",
                              bound.name, first + 1, modePrefix(p1), p1.name, second + 1, modePrefix(p2), p2.name,
                              written.name));
    }
  }
  return byParam;
}

int addressAlignment(const std::vector<uint64_t>& addresses) {
  int alignment = kWholeAllocationAlignment;
  for (uint64_t a : addresses)
    while (a % uint64_t(alignment) != 0) alignment /= 2;
  return alignment;
}

}  // namespace rtcg
