#include <fmt/format.h>

#include "codegen/EmitContext.h"

namespace rtcg::emit {

// __device__ helpers for floor division and modulo of possibly negative integers.
std::vector<C::Function> floorHelpers(const std::string& type) {
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
  return {div, mod};
}

// The cp.async helpers of `copy: async` (fixed text). Before sm_80 and in the host emulation of
// the tests (which defines its own, checking alignment) they are plain copies, which the
// barriers around each step make correct too.
const char* const asyncCopyHelpers = R"(// Copies global -> shared memory for tiles staged steps ahead ('copy: async'): cp.async on sm_80
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
#endif)";

}  // namespace rtcg::emit
