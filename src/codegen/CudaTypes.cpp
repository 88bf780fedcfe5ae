#include "codegen/CudaTypes.h"

#include <cctype>
#include <fmt/format.h>
#include <limits>

#include "codegen/EmitContext.h"
#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg::emit {

const std::set<std::string>& reservedWords() {
  static const std::set<std::string> words = {
      // C/C++ keywords and type words
      "auto", "bool", "break", "case", "char", "class", "const", "constexpr", "continue", "default",
      "delete", "do", "double", "else", "enum", "extern", "false", "float", "for", "goto", "if",
      "inline", "int", "long", "namespace", "new", "operator", "private", "public", "register",
      "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "template",
      "this", "true", "typedef", "union", "unsigned", "using", "virtual", "void", "volatile",
      "while", "asm", "catch", "throw", "try", "typename", "friend", "mutable", "explicit",
      "export", "decltype", "nullptr", "alignas", "alignof", "static_assert", "thread_local",
      "and", "or", "not", "xor", "bitand", "bitor", "compl",
      // CUDA built-ins
      "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
      // functions the emitted code calls
      "sqrt", "sqrtf", "exp", "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "fabs", "fabsf",
      "abs", "llabs", "fmin", "fminf", "fmax", "fmaxf", "min", "max", "pow", "powf", "fma", "fmaf",
      "floor", "floorf", "fmod", "fmodf", "__int_as_float", "__longlong_as_double",
      "rtcg_floordiv", "rtcg_floormod", "__syncthreads", "__shfl_down_sync", "rtcg_smem_f32",
      "rtcg_smem_f64", "rtcg_smem_i32", "rtcg_smem_i64", "__threadfence", "__ldcg", "atomicInc", "atomicAdd",
      "__ldg", "__shfl_xor_sync", "__builtin_assume_aligned", "float4", "int4", "double2", "longlong2",
      "make_float4", "make_int4", "float2", "make_float2", "make_double2", "make_longlong2", "rtcg_cp_async4", "rtcg_cp_async8",
      "rtcg_cp_async16", "rtcg_cp_async_commit", "rtcg_cp_async_wait0", "rtcg_cp_async_wait1", "rtcg_cp_async_wait2",
      "rtcg_smem_f16", "rtcg_smem_bf16"};  // the cuda_fp16.h/cuda_bf16.h names all start with __
  return words;
}

std::string Names::fresh(const std::string& base) {
  std::string s;
  for (char ch : base) s += (std::isalnum((unsigned char)ch) || ch == '_') ? ch : '_';
  if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v_" + s;
  if (s.rfind("__", 0) == 0) s = "v" + s;  // leading __ is reserved for the implementation
  std::string name = s;
  for (int n = 2; reservedWords().count(name) || used_.count(name); ++n) name = fmt::format("{}_{}", s, n);
  used_.insert(name);
  return name;
}

const char* mathName(MathFn fn, ScalarType t) {
  bool f32 = t == ScalarType::F32;
  switch (fn) {
    case MathFn::Sqrt: return f32 ? "sqrtf" : "sqrt";
    case MathFn::Exp: return f32 ? "expf" : "exp";
    case MathFn::Log: return f32 ? "logf" : "log";
    case MathFn::Sin: return f32 ? "sinf" : "sin";
    case MathFn::Cos: return f32 ? "cosf" : "cos";
    case MathFn::Abs: return f32 ? "fabsf" : "fabs";
    case MathFn::Min: return f32 ? "fminf" : "fmin";
    case MathFn::Max: return f32 ? "fmaxf" : "fmax";
    case MathFn::Pow: return f32 ? "powf" : "pow";
    case MathFn::Fma: return f32 ? "fmaf" : "fma";
    case MathFn::Floor: return f32 ? "floorf" : "floor";
  }
  RTCG_ASSERT(false, "bad MathFn");
}

// The CUDA vector type of 16 bytes of `t` (f32, i32, f64, i64).
std::string vectorTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::F32: return "float4";
    case ScalarType::I32: return "int4";
    case ScalarType::F64: return "double2";
    case ScalarType::I64: return "longlong2";
    case ScalarType::F16:
    case ScalarType::BF16:  // copied element by element (copyVector)
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "no 16-byte vector of this element type");
}

c::ExprP literalOf(ScalarType t, int64_t iv, double fv) {
  switch (t) {
    case ScalarType::Bool: return c::boolLit(iv != 0);
    case ScalarType::I32: return c::intLit(iv);
    case ScalarType::I64: return c::intLit(iv, true);
    case ScalarType::F32: return c::floatLit(fv, true);
    case ScalarType::F64: return c::floatLit(fv, false);
    // The 16-bit types have no literals: their bits, exact (fv is a value of the type).
    case ScalarType::F16: return c::call("__ushort_as_half", {c::intLit(f16(fv).bits)});
    case ScalarType::BF16: return c::call("__ushort_as_bfloat16", {c::intLit(bf16(fv).bits)});
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

c::ExprP convert(ScalarType to, ScalarType from, c::ExprP v) {
  if (isHalf(from)) {
    v = c::call(from == ScalarType::F16 ? "__half2float" : "__bfloat162float", {v});  // exact
    if (to == ScalarType::F32) return v;
    from = ScalarType::F32;
  }
  if (!isHalf(to)) return c::castTo(cudaTypeName(to), v);
  const bool h = to == ScalarType::F16;
  switch (from) {
    case ScalarType::F32: return c::call(h ? "__float2half_rn" : "__float2bfloat16_rn", {v});
    case ScalarType::F64: return c::call(h ? "__double2half" : "__double2bfloat16", {v});
    case ScalarType::I32: return c::call(h ? "__int2half_rn" : "__int2bfloat16_rn", {v});
    case ScalarType::I64: return c::call(h ? "__ll2half_rn" : "__ll2bfloat16_rn", {v});
    case ScalarType::Bool: return c::call(h ? "__int2half_rn" : "__int2bfloat16_rn", {c::castTo("int", v)});
    default: break;
  }
  RTCG_ASSERT(false, "bad conversion");
}

c::ExprP reductionIdentity(ReduceOp op, ScalarType t) {
  const double inf = std::numeric_limits<double>::infinity();
  bool i64 = t == ScalarType::I64;
  int64_t lowest = i64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  int64_t highest = i64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  switch (op) {
    case ReduceOp::Sum: return literalOf(t, 0, 0.0);
    case ReduceOp::Product: return literalOf(t, 1, 1.0);
    case ReduceOp::Max: return literalOf(t, lowest, -inf);
    case ReduceOp::Min: return literalOf(t, highest, inf);
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

}  // namespace rtcg::emit
