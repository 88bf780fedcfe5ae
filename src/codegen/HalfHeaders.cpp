#include "codegen/HalfHeaders.h"

namespace rtcg {

namespace {

// f16: PTX's cvt instructions, which round to nearest even (.rn) from f32, f64 and integers, and
// widen exactly; supported on every architecture rtcg targets.
const char* const kFp16 = R"(// rtcg's cuda_fp16.h for NVRTC (src/codegen/HalfHeaders.cpp): the storage type and its conversions.
#pragma once
struct __align__(2) __half { unsigned short __x; };
static __device__ __forceinline__ __half __ushort_as_half(unsigned short u) { __half h; h.__x = u; return h; }
static __device__ __forceinline__ float __half2float(__half h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h.__x)); return f;
}
static __device__ __forceinline__ __half __float2half_rn(float f) {
  __half h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h.__x) : "f"(f)); return h;
}
static __device__ __forceinline__ __half __double2half(double d) {
  __half h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h.__x) : "d"(d)); return h;
}
static __device__ __forceinline__ __half __int2half_rn(int i) {
  __half h; asm("cvt.rn.f16.s32 %0, %1;" : "=h"(h.__x) : "r"(i)); return h;
}
static __device__ __forceinline__ __half __ll2half_rn(long long i) {
  __half h; asm("cvt.rn.f16.s64 %0, %1;" : "=h"(h.__x) : "l"(i)); return h;
}
static __device__ __forceinline__ __half __ldg(const __half* p) { return __ushort_as_half(__ldg(&p->__x)); }
static __device__ __forceinline__ void __stcs(__half* p, __half v) { __stcs(&p->__x, v.__x); }
)";

// bf16: from f32 by cvt.rn.bf16.f32 on sm_80 and later, else by adding the rounding carry to the
// f32 bits (ties to even); from f64 and integers rounded to odd first (to f32 with the dropped
// bits folded into the last one), which keeps the one rounding to bf16 correct.
const char* const kBf16 = R"(// rtcg's cuda_bf16.h for NVRTC (src/codegen/HalfHeaders.cpp): the storage type and its conversions.
#pragma once
struct __align__(2) __nv_bfloat16 { unsigned short __x; };
static __device__ __forceinline__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short u) {
  __nv_bfloat16 b; b.__x = u; return b;
}
static __device__ __forceinline__ float __bfloat162float(__nv_bfloat16 b) { return __uint_as_float((unsigned int)b.__x << 16); }
static __device__ __forceinline__ __nv_bfloat16 __float2bfloat16_rn(float f) {
#if __CUDA_ARCH__ >= 800
  __nv_bfloat16 b; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b.__x) : "f"(f)); return b;
#else
  unsigned int u = __float_as_uint(f);
  if (f != f) return __ushort_as_bfloat16((unsigned short)((u >> 16) | 0x40u));
  u += 0x7fffu + ((u >> 16) & 1u);
  return __ushort_as_bfloat16((unsigned short)(u >> 16));
#endif
}
static __device__ __forceinline__ __nv_bfloat16 __double2bfloat16(double d) {
  float f = __double2float_rz(d);
  if ((double)f != d && d == d) f = __uint_as_float(__float_as_uint(f) | 1u);
  return __float2bfloat16_rn(f);
}
static __device__ __forceinline__ __nv_bfloat16 __int2bfloat16_rn(int i) { return __double2bfloat16((double)i); }
static __device__ __forceinline__ __nv_bfloat16 __ll2bfloat16_rn(long long i) {
  double d = __ll2double_rz(i);
  if (__double2ll_rz(d) != i) d = __longlong_as_double(__double_as_longlong(d) | 1ll);
  return __double2bfloat16(d);
}
static __device__ __forceinline__ __nv_bfloat16 __ldg(const __nv_bfloat16* p) {
  return __ushort_as_bfloat16(__ldg(&p->__x));
}
static __device__ __forceinline__ void __stcs(__nv_bfloat16* p, __nv_bfloat16 v) { __stcs(&p->__x, v.__x); }
)";

}  // namespace

const std::vector<std::pair<std::string, std::string>>& nvrtcHalfHeaders() {
  static const std::vector<std::pair<std::string, std::string>> headers = {{"cuda_fp16.h", kFp16},
                                                                           {"cuda_bf16.h", kBf16}};
  return headers;
}

}  // namespace rtcg
