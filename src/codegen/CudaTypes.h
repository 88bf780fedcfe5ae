// The CUDA spelling of the IR's types and operations, for the emitter: vector types, literals,
// math function names, reduction identities and the words emitted names must avoid.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "codegen/CAst.h"
#include "ir/IR.h"

namespace rtcg::emit {

// C/C++ keywords, CUDA built-ins and the functions the emitted code calls.
const std::set<std::string>& reservedWords();

// The CUDA math function of `fn` on `t` (f32: sqrtf, f64: sqrt...).
const char* mathName(MathFn fn, ScalarType t);

// The CUDA vector type of 16 bytes of `t` (f32, i32, f64, i64).
std::string vectorTypeName(ScalarType t);

// A literal of type `t`: `iv` for bool and integers, `fv` for floats.
c::ExprP literalOf(ScalarType t, int64_t iv, double fv);

// The value `v` of type `from` converted to `to`: a C cast between the built-in types; the
// cuda_fp16.h / cuda_bf16.h conversions to and from f16 and bf16, each rounding once to nearest
// even (from f16 and bf16 through float, which holds their values exactly).
c::ExprP convert(ScalarType to, ScalarType from, c::ExprP v);

// The identity of `op` on `t` (0, 1, the lowest or highest value).
c::ExprP reductionIdentity(ReduceOp op, ScalarType t);

}  // namespace rtcg::emit
