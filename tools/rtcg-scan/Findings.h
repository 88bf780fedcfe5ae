// What rtcg-scan finds in C++ sources: embedded DSL kernels (the text of the string literal given
// to rtcg::Context::compile, with a map from every DSL byte back to its C++ position), their
// constant size bindings, and the calls of the resulting kernel objects. Plain data, no clang
// types, so the checks and the manifest build and test without libclang.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

// A position in a C++ file: 1-based line and byte column, as clang and gcc report them.
struct CppPos {
  int line = 0;
  int col = 0;
  bool operator==(const CppPos&) const = default;
};

// DSL text decoded from one or more C++ string-literal tokens, with the C++ position of the
// character each byte came from (`pos.size() == text.size()`). `end` is the position of the last
// piece's closing quote, used for diagnostics at the end of the DSL text.
struct MappedText {
  std::string file;  // the C++ file the literal is spelled in
  std::string text;
  std::vector<CppPos> pos;
  CppPos end;
};

// One argument at a call of a compiled kernel, classified from its C++ type.
struct CallArg {
  enum class Kind { DeviceArray, HostVector, ConstHostVector, Scalar, Other };
  Kind kind = Kind::Other;
  std::optional<ScalarType> type;  // element (arrays) or scalar type when it is one rtcg accepts
  std::string typeSpelling;        // the C++ element / scalar type as written by clang ("float")
  CppPos pos;
};

// `k(a, b, c)` where `k` holds the result of the compile call.
struct KernelCall {
  CppPos pos;  // the call expression
  std::vector<CallArg> args;
};

struct FoundKernel {
  std::string file;  // the C++ file of the compile call
  CppPos callPos;    // the call's `compile` name
  MappedText source;
  // Size bindings: `sizes` holds those given as compile-time constants; `sizesConstant` is true
  // when every binding is one (so the DSL's bounds and races can be proved at build time).
  SizeBindings sizes;
  bool sizesConstant = false;
  std::optional<std::string> kernelName;  // CompileOptions::kernel when visible ("" = the only one)
  std::string variable;                   // the variable initialised from the call, if any
  std::vector<KernelCall> calls;
};

}  // namespace rtcg
