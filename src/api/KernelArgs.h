// Matching the arguments of a CompiledKernel call against the bound kernel's signature. Pure host
// code (no device), so the rules are testable anywhere.
//
// Arguments are the non-size parameters in declaration order. An array parameter takes an
// rtcg::Array<T> or a std::vector<T> of exactly the bound shape's element count and of its element
// type; a written (out/inout) parameter does not take a const vector; a scalar parameter takes a
// scalar of its type, or a narrower one that converts exactly (float for f64, int32_t for i64).
// A written array must not share memory with another argument: the kernel was proved race-free
// for distinct arrays.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "rtcg/rtcg.h"

namespace rtcg {

// "f32[500, 500] (250000 elements)" for an array, "f32 scalar" for a scalar parameter.
std::string describeParamType(const Kernel& bound, int param);
// "rtcg::Array<double> of 250000 elements", "const std::vector<float> of 3 elements", "double".
std::string describeArgument(const detail::ArgRef& arg);
// "matmul(a: f32[500, 500], b: f32[500, 500], out c: f32[500, 500]) with n = 500".
std::string signatureOf(const Kernel& bound);

// The C++ element type name an ElementType is held in ("float", ...).
const char* cppTypeName(ElementType t);
const char* cppTypeName(ScalarType t);
ScalarType toScalarType(ElementType t);

// Checks `args` against `bound` and returns, for each kernel parameter, the index of its argument
// in `args` (nullopt for size parameters). Throws rtcg::Error at the first mismatch, naming the
// kernel, the argument (1-based position among the arguments, and the parameter's name), what was
// expected and what was given.
std::vector<std::optional<size_t>> matchArguments(const Kernel& bound, const std::vector<detail::ArgRef>& args);

// The alignment every one of `addresses` has, at most 16 (codegen/Emitter.h's whole allocations):
// which variant of a kernel serves a launch with these device arrays. A null address (an empty
// array) counts as aligned.
int addressAlignment(const std::vector<uint64_t>& addresses);

}  // namespace rtcg
