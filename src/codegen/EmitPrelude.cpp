#include <fmt/format.h>

#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

void ModuleNeeds::need(int rank, std::string text) {
  auto [at, added] = preludes.try_emplace(rank, std::move(text));
  RTCG_ASSERT(added || at->second == text, fmt::format("two preludes of rank {}", rank));
}

void ModuleNeeds::needInOrder(int band, int end, std::string text) {
  int next = band;
  for (auto it = preludes.lower_bound(band); it != preludes.end() && it->first < end; ++it, ++next)
    if (it->second == text) return;
  RTCG_ASSERT(next < end, fmt::format("more preludes than the band from rank {} holds", band));
  preludes.emplace(next, std::move(text));
}

// __device__ helpers for floor division (which & 1) and modulo (which & 2) of possibly negative
// integers, and (which & 4, int) the modulo by a divisor's multiplier computed once, with modulo's.
std::vector<C::Function> floorHelpers(const std::string& type, uint8_t which) {
  C::Param a{type, "a"}, b{type, "b"};
  C::Function div{C::FunctionKind::DeviceInline, type, "rtcg_floordiv", {a, b}, 0,
                  {fmt::format("Floor division of {} (rounds toward -infinity).", type)}, {}};
  C::ExprP na = C::name("a"), nb = C::name("b"), q = C::name("q"), r = C::name("r"), zero = C::intLit(0);
  auto signsDiffer = [&](C::ExprP x) { return C::binary("!=", C::binary("<", x, zero), C::binary("<", nb, zero)); };
  div.body = {C::decl(type, "q", C::binary("/", na, nb)),
              C::returnStmt(C::ternary(C::binary("&&", C::binary("!=", C::binary("*", q, nb), na), signsDiffer(na)),
                                       C::binary("-", q, C::intLit(1)), q))};
  C::Function mod{C::FunctionKind::DeviceInline, type, "rtcg_floormod", {a, b}, 0,
                  {fmt::format("Floor modulo of {} (the result has the sign of b).", type)}, {}};
  mod.body = {C::decl(type, "r", C::binary("%", na, nb)),
              C::returnStmt(C::ternary(C::binary("&&", C::binary("!=", r, zero), signsDiffer(r)), C::binary("+", r, nb), r))};
  std::vector<C::Function> out;
  if (which & 1) out.push_back(std::move(div));
  if (which & 2) out.push_back(std::move(mod));
  if ((which & 4) && type == "int") {  // a modulo by a divisor computed once (hoistBatchUniform)
    // Granlund and Montgomery's multiplier for dividends below 2^31: m = ceil(2^(31 + l) / b)
    // with 2^(l - 1) < b <= 2^l fits 32 bits, and m b - 2^(31 + l) < b <= 2^l makes
    // floor(u m / 2^(31 + l)) = floor(u / b) for every u < 2^31.
    C::Function magic{C::FunctionKind::DeviceInline, "unsigned long long", "rtcg_mod_magic", {b}, 0,
                      {"The multiplier rtcg_floormod_by takes for b > 0 (0 for the others: % then): m = ceil(2^(31 + l) / b)",
                       "with 2^(l - 1) < b <= 2^l, below 2^32, in the low 32 bits and the shift 31 + l above them."}, {}};
    C::ExprP l = C::name("l"), one = C::intLit(1, true);
    C::ExprP twoTo = C::binary("<<", one, C::sum({C::intLit(31), l}));
    magic.body = {C::ifThen(C::binary("<=", nb, zero), {C::returnStmt(C::intLit(0, true))}),
                  C::decl("int", "l", zero, false),
                  C::forLoop("int", "i", zero, C::intLit(31), C::Unroll::Default,
                             {C::assign(l, "+=", C::castTo("int", C::binary("<", C::binary("<<", one, C::name("i")), nb)))}),
                  C::decl("unsigned long long", "m", C::binary("/", C::binary("-", C::sum({twoTo, C::castTo("long long", nb)}), one),
                                                              C::castTo("long long", nb))),
                  C::returnStmt(C::binary("|", C::name("m"), C::binary("<<", C::castTo("unsigned long long", C::sum({C::intLit(31), l})),
                                                                      C::intLit(32))))};
    C::Param mp{"unsigned long long", "magic"};
    C::Function by{C::FunctionKind::DeviceInline, type, "rtcg_floormod_by", {a, b, mp}, 0,
                   {"Floor modulo of int by b > 0 through magic = rtcg_mod_magic(b), without a division: with",
                    "s = -1 where a < 0, u = a ^ s (a, or -a - 1) lies below 2^31, floor(a / b) = floor(u / b) ^ s,",
                    "and floor(u / b) is u's product with the multiplier shifted right. Unsigned products: the",
                    "remainder is exact even where q * b wraps."}, {}};
    C::ExprP mg = C::name("magic"), s = C::name("s"), u = C::name("u");
    C::ExprP prod = C::binary("*", C::castTo("unsigned long long", u), C::castTo("unsigned int", mg));
    C::ExprP quot = C::binary("^", C::castTo("unsigned int", C::binary(">>", prod, C::castTo("int", C::binary(">>", mg, C::intLit(32))))), s);
    by.body = {C::ifThen(C::binary("==", mg, C::intLit(0, true)), {C::returnStmt(C::call("rtcg_floormod", {na, nb}))}),
               C::decl("unsigned int", "s", C::castTo("unsigned int", C::binary(">>", na, C::intLit(31)))),
               C::decl("unsigned int", "u", C::binary("^", C::castTo("unsigned int", na), s)),
               C::returnStmt(C::castTo("int", C::binary("-", C::castTo("unsigned int", na), C::binary("*", quot, C::castTo("unsigned int", nb)))))};
    if (!(which & 2)) out.push_back(std::move(mod));
    out.push_back(std::move(magic));
    out.push_back(std::move(by));
  }
  return out;
}

// The cp.async helpers of `copy: async` (fixed text). Before sm_80 and in the host emulation of
// the tests (which defines its own, checking alignment) they are plain copies, which the
// barriers around each step make correct too.
const Prelude asyncCopyHelpers{1000, R"(// Copies global -> shared memory for tiles staged steps ahead ('copy: async'): cp.async on sm_80
// and later (src_bytes < size zero-fills the rest), plain copies before.
#ifndef RTCG_HOST_EMULATION
#if __CUDA_ARCH__ >= 800
#define RTCG_CP_ASYNC(kind, size) \
  asm volatile("cp.async." kind ".shared.global [%0], [%1], " #size ", %2;\n" \
               :: "r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src), "r"(src_bytes) : "memory")
__device__ __forceinline__ void rtcg_cp_async4(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("ca", 4); }
__device__ __forceinline__ void rtcg_cp_async8(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("ca", 8); }
__device__ __forceinline__ void rtcg_cp_async16(void* dst, const void* src, int src_bytes) { RTCG_CP_ASYNC("cg", 16); }
__device__ __forceinline__ void rtcg_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait0() { asm volatile("cp.async.wait_group 0;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait1() { asm volatile("cp.async.wait_group 1;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_cp_async_wait2() { asm volatile("cp.async.wait_group 2;\n" ::: "memory"); }
#else
__device__ __forceinline__ void rtcg_cp_async4(void* dst, const void* src, int src_bytes) {
  *(int*)dst = src_bytes ? *(const int*)src : 0;
}
__device__ __forceinline__ void rtcg_cp_async8(void* dst, const void* src, int src_bytes) {
  *(long long*)dst = src_bytes ? *(const long long*)src : 0;
}
__device__ __forceinline__ void rtcg_cp_async16(void* dst, const void* src, int src_bytes) {
  *(int4*)dst = src_bytes ? *(const int4*)src : make_int4(0, 0, 0, 0);
}
__device__ __forceinline__ void rtcg_cp_async_commit() {}
__device__ __forceinline__ void rtcg_cp_async_wait0() {}
__device__ __forceinline__ void rtcg_cp_async_wait1() {}
__device__ __forceinline__ void rtcg_cp_async_wait2() {}
#endif
#endif)"};

// cp.async into shared memory at a constant byte offset from `dst` (`copies hoisted`'s rounds, whose
// buffers are literals): the offset goes into the instruction, so that each copy's destination is
// one register for all the buffers rather than one a buffer (NVCC keeps each buffer's converted
// address live across the loop otherwise). Macros, for the instruction's immediate; elsewhere the
// plain helpers at dst + offset.
const Prelude asyncCopyAtHelpers{1010, R"(// cp.async at a constant byte offset from the destination ('copies hoisted'): the offset in the instruction.
#if !defined(RTCG_HOST_EMULATION) && __CUDA_ARCH__ >= 800
#define RTCG_CP_ASYNC_AT(kind, size, dst, src, src_bytes, offset) \
  asm volatile("cp.async." kind ".shared.global [%0+%3], [%1], " #size ", %2;\n" \
               :: "r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(src), "r"(src_bytes), "n"(offset) : "memory")
#define RTCG_CP_ASYNC4_AT(dst, src, src_bytes, offset) RTCG_CP_ASYNC_AT("ca", 4, dst, src, src_bytes, offset)
#define RTCG_CP_ASYNC8_AT(dst, src, src_bytes, offset) RTCG_CP_ASYNC_AT("ca", 8, dst, src, src_bytes, offset)
#define RTCG_CP_ASYNC16_AT(dst, src, src_bytes, offset) RTCG_CP_ASYNC_AT("cg", 16, dst, src, src_bytes, offset)
#else
#define RTCG_CP_ASYNC4_AT(dst, src, src_bytes, offset) rtcg_cp_async4((char*)(dst) + (offset), src, src_bytes)
#define RTCG_CP_ASYNC8_AT(dst, src, src_bytes, offset) rtcg_cp_async8((char*)(dst) + (offset), src, src_bytes)
#define RTCG_CP_ASYNC16_AT(dst, src, src_bytes, offset) rtcg_cp_async16((char*)(dst) + (offset), src, src_bytes)
#endif)"};

// TF32 rounding and the mma.sync instructions of `mma:` schedules (sm_80 and later). Operands pass
// as floats holding TF32 bit patterns (rounded by rtcg_tf32_rna when staged); each helper is one
// warp-wide instruction on the fragments of the calling lane (layouts: PTX ISA, mma.m16n8k8 and
// mma.m8n8k4). The host emulation defines the same functions.
const Prelude mmaHelpers{2000, R"mma(// Tensor-core helpers ('mma:'): cvt.rna.tf32.f32 rounds to 10 mantissa bits (nearest, ties away
// from zero); d += a * b on one m16n8k8 TF32 or m8n8k4 FP64 fragment of this lane.
#ifndef RTCG_HOST_EMULATION
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ float rtcg_tf32_rna(float x) {
  unsigned int r;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(x));
  return __uint_as_float(r);
}
__device__ __forceinline__ void rtcg_mma_tf32(float& d0, float& d1, float& d2, float& d3, float a0, float a1,
                                              float a2, float a3, float b0, float b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%0, %1, %2, %3};\n"
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
               : "r"(__float_as_uint(a0)), "r"(__float_as_uint(a1)), "r"(__float_as_uint(a2)),
                 "r"(__float_as_uint(a3)), "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}
__device__ __forceinline__ void rtcg_mma_f64(double& d0, double& d1, double a0, double b0) {
  asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, %1};\n"
               : "+d"(d0), "+d"(d1) : "d"(a0), "d"(b0));
}
#else
#error "mma schedules need sm_80 or later (mma.sync with TF32 and FP64 operands)"
#endif
#endif)mma"};

// The 16-bit arithmetics of `mma:` (bf16 / f16): ldmatrix (four or two 8x8 matrices of 16-bit
// values from shared memory, lane l giving the address of row l % 8 of matrix l / 8; .trans
// transposes each) and mma.sync m16n8k16 with f32 accumulators. Operands pass as 32-bit registers
// of two packed values (layouts: PTX ISA, mma.m16n8k16 and ldmatrix). The host emulation defines
// the same functions.
const Prelude mma16Helpers{2020, R"mma(// Tensor-core helpers of 16-bit 'mma:' schedules: ldmatrix and mma.sync m16n8k16 (f32 += bf16/f16 products).
#ifndef RTCG_HOST_EMULATION
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
#define RTCG_LDMATRIX(shape, ...) \
  asm volatile("ldmatrix.sync.aligned.m8n8." shape ".shared.b16 " __VA_ARGS__)
__device__ __forceinline__ unsigned int rtcg_smem_address(const void* p) {
  return (unsigned int)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void rtcg_ldmatrix_x4(unsigned int& r0, unsigned int& r1, unsigned int& r2,
                                                 unsigned int& r3, const void* p) {
  RTCG_LDMATRIX("x4", "{%0, %1, %2, %3}, [%4];\n" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(rtcg_smem_address(p)));
}
__device__ __forceinline__ void rtcg_ldmatrix_x4_trans(unsigned int& r0, unsigned int& r1, unsigned int& r2,
                                                       unsigned int& r3, const void* p) {
  RTCG_LDMATRIX("x4.trans", "{%0, %1, %2, %3}, [%4];\n" : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(rtcg_smem_address(p)));
}
__device__ __forceinline__ void rtcg_ldmatrix_x2(unsigned int& r0, unsigned int& r1, const void* p) {
  RTCG_LDMATRIX("x2", "{%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(rtcg_smem_address(p)));
}
__device__ __forceinline__ void rtcg_ldmatrix_x2_trans(unsigned int& r0, unsigned int& r1, const void* p) {
  RTCG_LDMATRIX("x2.trans", "{%0, %1}, [%2];\n" : "=r"(r0), "=r"(r1) : "r"(rtcg_smem_address(p)));
}
#define RTCG_MMA16(type) \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, " \
               "{%8, %9}, {%0, %1, %2, %3};\n" \
               : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3) \
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1))
__device__ __forceinline__ void rtcg_mma_bf16(float& d0, float& d1, float& d2, float& d3, unsigned int a0,
                                              unsigned int a1, unsigned int a2, unsigned int a3, unsigned int b0,
                                              unsigned int b1) {
  RTCG_MMA16("bf16");
}
__device__ __forceinline__ void rtcg_mma_f16(float& d0, float& d1, float& d2, float& d3, unsigned int a0,
                                             unsigned int a1, unsigned int a2, unsigned int a3, unsigned int b0,
                                             unsigned int b1) {
  RTCG_MMA16("f16");
}
#else
#error "16-bit mma schedules need sm_80 or later (mma.sync m16n8k16 with f32 accumulators, ldmatrix)"
#endif
#endif)mma"};

// The s8 arithmetic of `mma:`: mma.sync m16n8k32 with s32 accumulators (wrapping, as the i32 sum
// does: no .satfinite). Operands pass as 32-bit registers of four packed bytes (layouts: PTX ISA,
// mma.m16n8k32), loaded by mma16Helpers' ldmatrix. The host emulation defines the same function.
const Prelude mmaS8Helpers{2030, R"mma(// Tensor-core helper of s8 'mma:' schedules: mma.sync m16n8k32 (s32 += s8 products).
#ifndef RTCG_HOST_EMULATION
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
__device__ __forceinline__ void rtcg_mma_s8(int& d0, int& d1, int& d2, int& d3, unsigned int a0, unsigned int a1,
                                            unsigned int a2, unsigned int a3, unsigned int b0, unsigned int b1) {
  asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+r"(d0), "+r"(d1), "+r"(d2), "+r"(d3)
               : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
#else
#error "s8 mma schedules need sm_80 or later (mma.sync m16n8k32 with s32 accumulators)"
#endif
#endif)mma"};

}  // namespace rtcg::emit
