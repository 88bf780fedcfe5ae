#include "codegen/CudaTypes.h"

#include <cctype>
#include <fmt/format.h>
#include <limits>

#include "codegen/EmitContext.h"
#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg::emit {

const std::set<std::string>& reservedWords() {
  static const std::set<std::string> words = [] {
    std::set<std::string> w = {
        // Every C++20 keyword and alternative token ([lex.key], [lex.digraph]); C's `restrict`.
        "alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch",
        "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr",
        "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default",
        "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
        "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
        "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public",
        "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static",
        "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true",
        "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile",
        "wchar_t", "while", "xor", "xor_eq", "restrict",
        // Identifiers with a meaning in some places, and the standard namespace.
        "final", "override", "import", "module", "std",
        // Macros the C and C++ headers (and NVRTC's built-in ones) define, and standard typedefs.
        "NULL", "EOF", "errno", "assert", "offsetof", "INFINITY", "NAN", "HUGE_VAL", "HUGE_VALF", "CHAR_BIT",
        "INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LONG_MIN", "LLONG_MAX", "LLONG_MIN", "ULLONG_MAX",
        "FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "RAND_MAX", "EXIT_SUCCESS",
        "EXIT_FAILURE", "SIZE_MAX", "INT8_MAX", "INT16_MAX", "INT32_MAX", "INT64_MAX", "UINT8_MAX", "UINT16_MAX",
        "UINT32_MAX", "UINT64_MAX", "INT32_MIN", "INT64_MIN", "stdin", "stdout", "stderr", "size_t", "ptrdiff_t",
        "nullptr_t", "max_align_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
        "uint64_t", "intptr_t", "uintptr_t", "uint", "ushort", "ulong", "printf", "malloc", "free", "memcpy",
        "memset", "clock", "clock64",
        // CUDA built-ins
        "threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
        // functions the emitted code calls
        "sqrt", "sqrtf", "exp", "expf", "log", "logf", "sin", "sinf", "cos", "cosf", "fabs", "fabsf", "abs",
        "llabs", "fmin", "fminf", "fmax", "fmaxf", "min", "max", "pow", "powf", "fma", "fmaf", "floor", "floorf",
        "fmod", "fmodf", "rtcg_floordiv", "rtcg_floormod", "rtcg_smem_f32", "rtcg_smem_f64", "rtcg_smem_i32",
        "rtcg_smem_i64", "atomicInc", "atomicAdd", "atomicCAS", "atomicExch", "rtcg_cp_async4", "rtcg_cp_async8",
        "rtcg_cp_async16", "rtcg_cp_async_commit", "rtcg_cp_async_wait0", "rtcg_cp_async_wait1",
        "rtcg_cp_async_wait2", "rtcg_smem_f16", "rtcg_smem_bf16"};
    // CUDA's vector types and their make_ functions (char1 ... double4); the cuda_fp16.h and
    // cuda_bf16.h names, and every other name the implementation reserves, start with __ or _X
    // (Names::fresh renames those).
    for (const char* base : {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                             "ulonglong", "float", "double"})
      for (int n = 1; n <= 4; ++n) {
        w.insert(std::string(base) + std::to_string(n));
        w.insert("make_" + std::string(base) + std::to_string(n));
      }
    return w;
  }();
  return words;
}

std::string Names::fresh(const std::string& base) {
  std::string s;
  for (char ch : base) s += (std::isalnum((unsigned char)ch) || ch == '_') ? ch : '_';
  if (s.empty() || std::isdigit((unsigned char)s[0])) s = "v_" + s;
  // A leading __, or _ and a capital, is reserved for the implementation (__LINE__, _Bool).
  if (s.rfind("__", 0) == 0 || (s.size() > 1 && s[0] == '_' && std::isupper((unsigned char)s[1]))) s = "v" + s;
  std::string name = s;
  if (reservedWords().count(name) || used_.count(name)) {
    int& n = nextSuffix_.try_emplace(s, 2).first->second;
    for (name = fmt::format("{}_{}", s, n); reservedWords().count(name) || used_.count(name);)
      name = fmt::format("{}_{}", s, ++n);
    ++n;
  }
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
    case ScalarType::U32: return "uint4";
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::I8:
    case ScalarType::U8:  // copied element by element (copyVector)
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "no 16-byte vector of this element type");
}

c::ExprP literalOf(ScalarType t, int64_t iv, double fv) {
  switch (t) {
    case ScalarType::Bool: return c::boolLit(iv != 0);
    case ScalarType::I32: return c::intLit(iv);
    case ScalarType::I64: return c::intLit(iv, true);
    case ScalarType::U32: return c::uintLit(uint32_t(uint64_t(iv)));  // 4294967295u
    case ScalarType::F32: return c::floatLit(fv, true);
    case ScalarType::F64: return c::floatLit(fv, false);
    // The 16-bit types have no literals: their bits, exact (fv is a value of the type).
    case ScalarType::F16: return c::call("__ushort_as_half", {c::intLit(f16(fv).bits)});
    case ScalarType::BF16: return c::call("__ushort_as_bfloat16", {c::intLit(bf16(fv).bits)});
    // Nor do the 8-bit integers: a conversion of the int.
    case ScalarType::I8:
    case ScalarType::U8: return c::castTo(cudaTypeName(t), c::intLit(iv));
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

c::ExprP convert(ScalarType to, ScalarType from, c::ExprP v) {
  if (isHalf(from)) {
    v = c::call(from == ScalarType::F16 ? "__half2float" : "__bfloat162float", {v});  // exact
    if (to == ScalarType::F32) return v;
    from = ScalarType::F32;
  }
  // A float to u32: truncated toward zero and saturated, NaN giving 0 (cvt.rzi.u32; the host
  // emulation defines the same, where C's conversion of a value out of range is undefined).
  if (to == ScalarType::U32 && isFloat(from))
    return c::call(from == ScalarType::F64 ? "__double2uint_rz" : "__float2uint_rz", {v});
  if (!isHalf(to)) return c::castTo(cudaTypeName(to), v);
  const bool h = to == ScalarType::F16;
  switch (from) {
    case ScalarType::F32: return c::call(h ? "__float2half_rn" : "__float2bfloat16_rn", {v});
    case ScalarType::F64: return c::call(h ? "__double2half" : "__double2bfloat16", {v});
    case ScalarType::I32: return c::call(h ? "__int2half_rn" : "__int2bfloat16_rn", {v});
    case ScalarType::I64: return c::call(h ? "__ll2half_rn" : "__ll2bfloat16_rn", {v});
    case ScalarType::U32: return c::call(h ? "__ll2half_rn" : "__ll2bfloat16_rn", {c::castTo("long long", v)});  // exact widening
    case ScalarType::Bool:
    case ScalarType::I8:
    case ScalarType::U8: return c::call(h ? "__int2half_rn" : "__int2bfloat16_rn", {c::castTo("int", v)});
    default: break;
  }
  RTCG_ASSERT(false, "bad conversion");
}

c::ExprP reductionIdentity(ReduceOp op, ScalarType t) {
  const double inf = std::numeric_limits<double>::infinity();
  bool i64 = t == ScalarType::I64;
  int64_t lowest = i64 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  int64_t highest = i64 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int32_t>::max();
  if (t == ScalarType::U32) lowest = 0, highest = std::numeric_limits<uint32_t>::max();
  switch (op) {
    case ReduceOp::Sum: return literalOf(t, 0, 0.0);
    case ReduceOp::Product: return literalOf(t, 1, 1.0);
    case ReduceOp::Max: return literalOf(t, lowest, -inf);
    case ReduceOp::Min: return literalOf(t, highest, inf);
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

}  // namespace rtcg::emit
