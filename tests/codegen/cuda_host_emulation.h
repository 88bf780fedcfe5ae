// Just enough of CUDA to run the emitter's kernels on the host, for tests without a GPU.
//
// The emitted CUDA translation unit is compiled with g++ after this header. Blocks run one after
// another (in grid order, or reversed or shuffled: rtcg_emu_block_order); the threads of a block
// run as fibers of one OS thread, each until it waits at a barrier: __syncthreads(), its warp's
// around each emulated warp shuffle and mma, an mbarrier (the runtime's scheduler; the per-thread
// state below is a global it saves and restores at each switch). What needs fibers, barriers or
// containers (the launch, __syncthreads, the mbarriers, the wgmma queues) is declared here and
// defined in cuda_host_emulation_runtime.cpp, which the build compiles once and the emulation links
// into every kernel's shared object (each has its own copy of the runtime's state, as of this
// header's); so this header includes only light standard headers, and a kernel's compile neither
// reads <thread> and the like nor instantiates them (tests/CMakeLists.txt precompiles it). `__shared__` becomes `static`: one
// instance shared by the threads of the running block. Dynamic shared memory (`extern
// __shared__ T rtcg_smem_*[]`) is the storage defined here: the test drops those declaration lines. Every function is `inline` so
// that the header can be included in several test binaries.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <math.h>
#include <vector>

#include "../../include/rtcg/Half.h"

struct rtcg_emu_dim3 {
  unsigned int x = 0, y = 0, z = 0;
};

// The running thread's (the runtime switches them with the fibers).
inline rtcg_emu_dim3 threadIdx, blockIdx;
inline unsigned int rtcg_emu_linear_tid = 0;

#define __global__
#define __device__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __grid_constant__

void __syncthreads();  // the block's barrier (the runtime's)
// bar.sync id, threads: a barrier of `threads` of the block's threads (id 1 to 15; whole warps),
// the count fixed by its first arrival in each phase (a different count aborts, as a misuse).
void rtcg_emu_bar_sync(int id, int threads);
void rtcg_emu_warp_sync();  // this thread's warp's barrier: the lanes' exchanges (shuffles, mma)
inline void __syncwarp(unsigned int = 0xffffffffu) { rtcg_emu_warp_sync(); }

// Products the emitter keeps out of fused multiply-adds (EmitContext::exactProducts): rounded once.
inline float __fmul_rn(float a, float b) { volatile float p = a * b; return p; }
inline double __dmul_rn(double a, double b) { volatile double p = a * b; return p; }

inline float __int_as_float(int bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline double __longlong_as_double(long long bits) {
  double d;
  std::memcpy(&d, &bits, sizeof d);
  return d;
}

using std::max;
using std::min;
// Float to u32 as cvt.rzi.u32 converts (the emitter's u32(x)): truncated toward zero, saturated to
// [0, 2^32 - 1], NaN to 0, where C's conversion of a value out of range is undefined.
inline unsigned int __double2uint_rz(double v) {
  if (!(v > 0)) return 0u;  // NaN, zeros and negatives
  if (v >= 4294967296.0) return 4294967295u;
  return (unsigned int)v;
}
inline unsigned int __float2uint_rz(float v) { return __double2uint_rz(double(v)); }
inline long long llabs(long long v) { return v < 0 ? -v : v; }

// The 16-bit types of cuda_fp16.h and cuda_bf16.h (the test drops the emitted #include lines):
// storage only, as the emitted code converts before any arithmetic, 2-byte aligned as on the
// GPU. The conversions round to nearest even, each once, and are written independently of
// rtcg's reference executor (include/rtcg/Half.h) where the host allows, so a wrong rounding in
// either shows as a mismatch: f16 through GCC's _Float16, bf16 from float with the carry trick
// on its bits; bf16 from double and integers uses the reference's own rounding (Half.h).
struct __half { unsigned short x; };
struct __nv_bfloat16 { unsigned short x; };
inline __half rtcg_emu_f16(_Float16 h) {
  __half out;
  std::memcpy(&out.x, &h, 2);
  return out;
}
inline float __half2float(__half h) {
  _Float16 v;
  std::memcpy(&v, &h.x, 2);
  return float(v);
}
inline __half __float2half_rn(float v) { return rtcg_emu_f16(_Float16(v)); }
inline __half __double2half(double v) { return rtcg_emu_f16(_Float16(v)); }
inline __half __int2half_rn(int v) { return rtcg_emu_f16(_Float16(v)); }
inline __half __ll2half_rn(long long v) { return rtcg_emu_f16(_Float16(v)); }
inline __half __ushort_as_half(unsigned short bits) { return {bits}; }
inline float __bfloat162float(__nv_bfloat16 b) { return __int_as_float(int(unsigned(b.x) << 16)); }
inline __nv_bfloat16 __float2bfloat16_rn(float v) {
  unsigned int u;
  std::memcpy(&u, &v, 4);
  if (std::isnan(v)) return {(unsigned short)((u >> 16) | 0x40)};  // quiet
  u += 0x7fffu + ((u >> 16) & 1);  // ties to even: the carry reaches bit 16 past the halfway point
  return {(unsigned short)(u >> 16)};
}
inline __nv_bfloat16 __double2bfloat16(double v) { return {rtcg::bf16(v).bits}; }
inline __nv_bfloat16 __int2bfloat16_rn(int v) { return {rtcg::bf16(double(v)).bits}; }
inline __nv_bfloat16 __ll2bfloat16_rn(long long v) { return {rtcg::bf16(rtcg::half_detail::roundToOdd(v)).bits}; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short bits) { return {bits}; }

// Dynamic shared memory: every extern __shared__ array starts at the same address, as on the GPU.
alignas(16) inline unsigned char rtcg_emu_dynamic_smem[232448];
#define rtcg_smem_f32 (reinterpret_cast<float*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_f64 (reinterpret_cast<double*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_i32 (reinterpret_cast<int*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_i64 (reinterpret_cast<long long*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_f16 (reinterpret_cast<__half*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_bf16 (reinterpret_cast<__nv_bfloat16*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_i8 (reinterpret_cast<signed char*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_u8 (reinterpret_cast<unsigned char*>(rtcg_emu_dynamic_smem))
#define rtcg_smem_u32 (reinterpret_cast<unsigned int*>(rtcg_emu_dynamic_smem))

// Warp shuffles: the lanes exchange values through per-thread slots between two barriers of the
// warp (every lane calls the shuffle at the same point: the emitter only shuffles in uniform code).
inline double rtcg_emu_slots[1024];
// v of lane `source` of this thread's warp (this thread's own v when source is outside the warp).
template <class T>
inline T rtcg_emu_shuffle(T v, unsigned int source) {
  unsigned int warpBase = rtcg_emu_linear_tid - rtcg_emu_linear_tid % 32;
  static_assert(sizeof(T) <= sizeof(double));
  std::memcpy(&rtcg_emu_slots[rtcg_emu_linear_tid], &v, sizeof v);
  rtcg_emu_warp_sync();
  T out = v;
  if (source < 32) std::memcpy(&out, &rtcg_emu_slots[warpBase + source], sizeof out);
  rtcg_emu_warp_sync();
  return out;
}
template <class T>
inline T __shfl_down_sync(unsigned int, T v, int delta) {
  return rtcg_emu_shuffle(v, rtcg_emu_linear_tid % 32 + delta);
}
template <class T>
inline T __shfl_xor_sync(unsigned int, T v, int laneMask) {
  return rtcg_emu_shuffle(v, (rtcg_emu_linear_tid % 32) ^ (unsigned int)laneMask);
}
// Scans' shuffles (EmitScan.cpp) within segments of `width` lanes: up by `delta` (a lane below
// its segment's delta keeps its own value), and from lane `source` of the segment.
template <class T>
inline T __shfl_up_sync(unsigned int, T v, unsigned int delta, int width = 32) {
  const unsigned int lane = rtcg_emu_linear_tid % 32, inSegment = lane % (unsigned int)width;
  return rtcg_emu_shuffle(v, inSegment >= delta ? lane - delta : 32u);
}
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }

// Global memory across blocks (reductions split across blocks): `__device__` arrays at module scope
// are plain globals of the shared object (zero-initialized, like a loaded module's). The blocks of
// the emulation run one after another, so fences and atomics only have to be correct among the
// threads of one block; they are real ones anyway.
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
inline unsigned int atomicAdd(unsigned int* address, unsigned int value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
// The atomics of accumulations (EmitAccumulate.cpp's rtcg_atomic_*), for every type the emitter
// uses: compare-and-swap loops on the value's bits where the builtins have no such operation.
inline int atomicAdd(int* address, int value) { return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST); }
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long value) {
  return __atomic_fetch_add(address, value, __ATOMIC_SEQ_CST);
}
template <class T, class F>
inline T rtcg_emu_atomic_update(T* address, F f) {
  T old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(address, &old, f(old), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
  }
  return old;
}
inline float atomicAdd(float* address, float value) {
  static_assert(sizeof(float) == sizeof(uint32_t));
  uint32_t* bits = reinterpret_cast<uint32_t*>(address);
  uint32_t old = rtcg_emu_atomic_update(bits, [&](uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    f += value;
    std::memcpy(&b, &f, 4);
    return b;
  });
  float f;
  std::memcpy(&f, &old, 4);
  return f;
}
inline double atomicAdd(double* address, double value) {
  uint64_t* bits = reinterpret_cast<uint64_t*>(address);
  uint64_t old = rtcg_emu_atomic_update(bits, [&](uint64_t b) {
    double d;
    std::memcpy(&d, &b, 8);
    d += value;
    std::memcpy(&b, &d, 8);
    return b;
  });
  double d;
  std::memcpy(&d, &old, 8);
  return d;
}
inline int atomicMax(int* address, int value) { return rtcg_emu_atomic_update(address, [&](int o) { return o > value ? o : value; }); }
inline int atomicMin(int* address, int value) { return rtcg_emu_atomic_update(address, [&](int o) { return o < value ? o : value; }); }
inline long long atomicMax(long long* address, long long value) {
  return rtcg_emu_atomic_update(address, [&](long long o) { return o > value ? o : value; });
}
inline long long atomicMin(long long* address, long long value) {
  return rtcg_emu_atomic_update(address, [&](long long o) { return o < value ? o : value; });
}
inline unsigned int atomicMax(unsigned int* address, unsigned int value) {
  return rtcg_emu_atomic_update(address, [&](unsigned int o) { return o > value ? o : value; });
}
inline unsigned int atomicMin(unsigned int* address, unsigned int value) {
  return rtcg_emu_atomic_update(address, [&](unsigned int o) { return o < value ? o : value; });
}

// The warp votes and exchanges of warp-aggregated accumulations. As the shuffles above, every lane
// of the warp calls them at the same point (the emitter calls rtcg_warp_* in uniform code); the
// mask names the lanes of the warp (all of them: the emitter passes the partial last warp's).
template <class T>
inline T __shfl_sync(unsigned int, T v, int source, int width = 32) {
  const unsigned int lane = rtcg_emu_linear_tid % 32;
  return rtcg_emu_shuffle(v, lane - lane % (unsigned int)width + (unsigned int)source % (unsigned int)width);
}
inline unsigned long long rtcg_emu_keys[1024];
// Every lane of the warp publishes `mine`; the bits of the lanes in `mask` whose value `pick` takes.
template <class F>
inline unsigned int rtcg_emu_vote(unsigned int mask, unsigned long long mine, F pick) {
  unsigned int warpBase = rtcg_emu_linear_tid - rtcg_emu_linear_tid % 32;
  rtcg_emu_keys[rtcg_emu_linear_tid] = mine;
  rtcg_emu_warp_sync();
  unsigned int out = 0;
  for (unsigned int l = 0; l < 32; ++l)
    if ((mask >> l & 1u) && pick(rtcg_emu_keys[warpBase + l])) out |= 1u << l;
  rtcg_emu_warp_sync();
  return out;
}
// The lanes of this warp (within `mask`) whose `key` equals this lane's.
inline unsigned int __match_any_sync(unsigned int mask, unsigned long long key) {
  return rtcg_emu_vote(mask, key, [&](unsigned long long k) { return k == key; });
}
inline unsigned int __ballot_sync(unsigned int mask, int predicate) {
  return rtcg_emu_vote(mask, predicate != 0, [](unsigned long long k) { return k != 0; });
}
inline int __any_sync(unsigned int mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __ffs(unsigned int x) { return x == 0 ? 0 : __builtin_ctz(x) + 1; }
inline int __popc(unsigned int x) { return __builtin_popcount(x); }

// ((old >= limit) ? 0 : old + 1), returning old.
inline unsigned int atomicInc(unsigned int* address, unsigned int limit) {
  unsigned int old = __atomic_load_n(address, __ATOMIC_SEQ_CST);
  while (!__atomic_compare_exchange_n(address, &old, old >= limit ? 0u : old + 1u, false, __ATOMIC_SEQ_CST,
                                      __ATOMIC_SEQ_CST)) {
  }
  return old;
}
template <class T>
inline T __ldcg(const T* address) {
  return *address;
}

// 16-byte vectors and the read-only load. A vector load from an address that is not aligned to
// its size faults on the GPU: here it aborts, so a wrong alignment proof fails the test.
struct alignas(8) float2 { float x, y; };
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(16) int4 { int x, y, z, w; };
struct alignas(16) uint4 { unsigned int x, y, z, w; };
struct alignas(16) double2 { double x, y; };
struct alignas(16) longlong2 { long long x, y; };
inline float2 make_float2(float x, float y) { return {x, y}; }
inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
inline uint4 make_uint4(unsigned int x, unsigned int y, unsigned int z, unsigned int w) { return {x, y, z, w}; }
inline double2 make_double2(double x, double y) { return {x, y}; }
inline longlong2 make_longlong2(long long x, long long y) { return {x, y}; }
template <class T>
inline T __ldg(const T* address) {
  if (reinterpret_cast<uintptr_t>(address) % alignof(T) != 0) {
    std::fprintf(stderr, "misaligned %zu-byte load at %p\n", sizeof(T), (const void*)address);
    std::abort();
  }
  return *address;
}

// The streaming store of `stores: streaming` (st.global.cs: evict-first in L2, the same value in
// memory). One template for the scalar and vector types CUDA overloads it for (float, double,
// int, long long, float4, double2, int4, longlong2): the value must have the pointer's element
// type, as the emitter casts it, since on the GPU a mismatch would be an ambiguous overload. A
// misaligned address aborts, like a vector load's.
template <class T>
inline void __stcs(T* address, T value) {
  if (reinterpret_cast<uintptr_t>(address) % alignof(T) != 0) {
    std::fprintf(stderr, "misaligned %zu-byte store at %p\n", sizeof(T), (const void*)address);
    std::abort();
  }
  *address = value;
}

// cp.async ('copy: async', mma stages): the emitted module leaves its helpers to this header. A
// copy aborts on an address that is not aligned to its size, as the GPU would fault; src_bytes <
// size zero-fills the rest. The copies land as late as the GPU may land them: a copy waits in this
// thread's queue until a wait retires its group, so a read of a stage that no wait covered sees
// what the buffer held before (a test against the reference then fails). A commit of no copies
// makes no group: on the GPU an empty group is complete at once and does not hold back a
// `cp.async.wait_group N`, whose count then covers only groups with copies (H200: a ring that
// counted on empty groups read stages before they landed).
#define RTCG_HOST_EMULATION 1
struct rtcg_emu_copy {
  void* dst;
  int size;
  unsigned char data[16];
};
// The running thread's queues (the runtime switches them with the fibers).
inline std::vector<rtcg_emu_copy> rtcg_emu_uncommitted;
inline std::vector<std::vector<rtcg_emu_copy>> rtcg_emu_groups;  // committed, oldest first
inline void rtcg_emu_cp_async(void* dst, const void* src, int size, int src_bytes) {
  if (reinterpret_cast<uintptr_t>(dst) % size != 0 || (src_bytes > 0 && reinterpret_cast<uintptr_t>(src) % size != 0)) {
    std::fprintf(stderr, "misaligned %d-byte cp.async from %p to %p\n", size, src, dst);
    std::abort();
  }
  rtcg_emu_copy c{dst, size, {}};
  if (src_bytes > 0) std::memcpy(c.data, src, src_bytes);
  rtcg_emu_uncommitted.push_back(c);
}
inline void rtcg_cp_async4(void* dst, const void* src, int src_bytes) { rtcg_emu_cp_async(dst, src, 4, src_bytes); }
inline void rtcg_cp_async8(void* dst, const void* src, int src_bytes) { rtcg_emu_cp_async(dst, src, 8, src_bytes); }
inline void rtcg_cp_async16(void* dst, const void* src, int src_bytes) { rtcg_emu_cp_async(dst, src, 16, src_bytes); }
inline void rtcg_cp_async_commit() {
  if (rtcg_emu_uncommitted.empty()) return;
  rtcg_emu_groups.push_back(std::move(rtcg_emu_uncommitted));
  rtcg_emu_uncommitted.clear();
}
// Lands the oldest groups until at most `pending` are left.
inline void rtcg_emu_cp_async_wait(size_t pending) {
  size_t landed = 0;
  for (; rtcg_emu_groups.size() - landed > pending; ++landed)
    for (const rtcg_emu_copy& c : rtcg_emu_groups[landed]) std::memcpy(c.dst, c.data, size_t(c.size));
  rtcg_emu_groups.erase(rtcg_emu_groups.begin(), rtcg_emu_groups.begin() + std::ptrdiff_t(landed));
}
inline void rtcg_cp_async_wait0() { rtcg_emu_cp_async_wait(0); }
inline void rtcg_cp_async_wait1() { rtcg_emu_cp_async_wait(1); }
inline void rtcg_cp_async_wait2() { rtcg_emu_cp_async_wait(2); }

// Tensor cores ('mma:'): the helpers of the emitted prelude, with the fragment layouts of the PTX
// ISA. Each lane deposits its fragment registers in per-block slots, a barrier, each lane computes
// its elements of D from its warp's slots, a barrier (as the shuffles do: every thread of the block
// reaches every mma, which the emitter guarantees). lane = 4 * group + thread_in_group.
//   m16n8k8 TF32: A 16x8 row: a0 (group, t), a1 (group + 8, t), a2 (group, t + 4), a3 (group + 8, t + 4);
//                 B 8x8 col:  b0 (t, group), b1 (t + 4, group);
//                 C/D 16x8:   c0 (group, 2t), c1 (group, 2t + 1), c2 (group + 8, 2t), c3 (group + 8, 2t + 1).
//   m8n8k4 FP64:  A 8x4: a0 (group, t); B 4x8: b0 (t, group); C/D 8x8: c0 (group, 2t), c1 (group, 2t + 1).
//   m16n8kK FP64 (sm_90, K = 4, 8, 16): A 16xK: a(2j + i) (group + 8i, t + 4j); B Kx8: bj (t + 4j, group);
//                 C/D 16x8 as TF32's.
// TF32: cvt.rna rounds to 10 mantissa bits, to nearest with ties away from zero (add half of the
// dropped 13 bits' range to the magnitude, then clear them; Inf and NaN pass); the mma reads only
// the top 19 bits of each operand, so the low 13 bits of an unconverted operand are ignored.
inline float rtcg_emu_bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
}
inline uint32_t rtcg_emu_float_bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}
// TF32 fragments loaded by ldmatrix arrive as the bits of 32-bit words.
inline float __uint_as_float(unsigned int u) { return rtcg_emu_bits_float(u); }
inline unsigned int __float_as_uint(float f) { return rtcg_emu_float_bits(f); }
inline float rtcg_tf32_rna(float x) {
  uint32_t b = rtcg_emu_float_bits(x);
  if ((b & 0x7f800000u) == 0x7f800000u) return x;
  return rtcg_emu_bits_float((b + 0x1000u) & 0xffffe000u);
}
inline float rtcg_emu_tf32_operand(float x) { return rtcg_emu_bits_float(rtcg_emu_float_bits(x) & 0xffffe000u); }
inline double rtcg_emu_mma_slots[1024][12];

inline void rtcg_mma_tf32(float& d0, float& d1, float& d2, float& d3, float a0, float a1, float a2, float a3, float b0,
                          float b1) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  const float mine[6] = {a0, a1, a2, a3, b0, b1};
  for (int r = 0; r < 6; ++r) rtcg_emu_mma_slots[tid][r] = rtcg_emu_tf32_operand(mine[r]);
  rtcg_emu_warp_sync();
  float a[16][8], b[8][8];
  for (unsigned int l = 0; l < 32; ++l) {
    const double* s = rtcg_emu_mma_slots[base + l];
    const unsigned int g = l / 4, t = l % 4;
    a[g][t] = float(s[0]), a[g + 8][t] = float(s[1]), a[g][t + 4] = float(s[2]), a[g + 8][t + 4] = float(s[3]);
    b[t][g] = float(s[4]), b[t + 4][g] = float(s[5]);
  }
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  float* d[4] = {&d0, &d1, &d2, &d3};
  for (int r = 0; r < 4; ++r) {
    const unsigned int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    float acc = *d[r];
    for (int k = 0; k < 8; ++k) acc += a[row][k] * b[k][col];  // TF32 products are exact in float
    *d[r] = acc;
  }
}

inline void rtcg_mma_f64(double& d0, double& d1, double a0, double b0) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  rtcg_emu_mma_slots[tid][0] = a0, rtcg_emu_mma_slots[tid][1] = b0;
  rtcg_emu_warp_sync();
  double a[8][4], b[4][8];
  for (unsigned int l = 0; l < 32; ++l) {
    const unsigned int g = l / 4, t = l % 4;
    a[g][t] = rtcg_emu_mma_slots[base + l][0], b[t][g] = rtcg_emu_mma_slots[base + l][1];
  }
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  for (int r = 0; r < 2; ++r) {
    double acc = r ? d1 : d0;
    for (int k = 0; k < 4; ++k) acc = std::fma(a[g][k], b[k][2 * t + r], acc);
    (r ? d1 : d0) = acc;
  }
}

// FP64 m16n8kK (K = 4, 8, 16): `mine` holds the lane's K / 2 A registers, then its K / 4 B
// registers. Each element of D is the fused sum in k order (IEEE products and sums: the tensor
// cores' order may differ, as any parallel sum's).
template <int K>
inline void rtcg_emu_mma_f64_16x8(double* const d[4], const double* mine) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  for (int r = 0; r < K / 2 + K / 4; ++r) rtcg_emu_mma_slots[tid][r] = mine[r];
  rtcg_emu_warp_sync();
  double a[16][K], b[K][8];
  for (unsigned int l = 0; l < 32; ++l) {
    const double* s = rtcg_emu_mma_slots[base + l];
    const unsigned int g = l / 4, t = l % 4;
    for (int j = 0; j < K / 4; ++j) {
      a[g][t + 4 * j] = s[2 * j], a[g + 8][t + 4 * j] = s[2 * j + 1];
      b[t + 4 * j][g] = s[K / 2 + j];
    }
  }
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  for (int r = 0; r < 4; ++r) {
    const unsigned int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    double acc = *d[r];
    for (int k = 0; k < K; ++k) acc = std::fma(a[row][k], b[k][col], acc);
    *d[r] = acc;
  }
}
inline void rtcg_mma_f64_m16n8k4(double& d0, double& d1, double& d2, double& d3, double a0, double a1, double b0) {
  double* const d[4] = {&d0, &d1, &d2, &d3};
  const double mine[3] = {a0, a1, b0};
  rtcg_emu_mma_f64_16x8<4>(d, mine);
}
inline void rtcg_mma_f64_m16n8k8(double& d0, double& d1, double& d2, double& d3, double a0, double a1, double a2,
                                 double a3, double b0, double b1) {
  double* const d[4] = {&d0, &d1, &d2, &d3};
  const double mine[6] = {a0, a1, a2, a3, b0, b1};
  rtcg_emu_mma_f64_16x8<8>(d, mine);
}
inline void rtcg_mma_f64_m16n8k16(double& d0, double& d1, double& d2, double& d3, double a0, double a1, double a2,
                                  double a3, double a4, double a5, double a6, double a7, double b0, double b1,
                                  double b2, double b3) {
  double* const d[4] = {&d0, &d1, &d2, &d3};
  const double mine[12] = {a0, a1, a2, a3, a4, a5, a6, a7, b0, b1, b2, b3};
  rtcg_emu_mma_f64_16x8<16>(d, mine);
}

// 16-bit mma ('mma: bf16 / f16 m16n8k16'): ldmatrix and mma.sync as in the PTX ISA, on registers
// of two packed 16-bit values (the lower half the first). ldmatrix: lane l supplies the address of
// row l % 8 of matrix l / 8 (x2: lanes 0-15 only; the others' addresses are ignored, as on the GPU);
// lane (group g, thread t) receives per matrix M the pair M[g][2t], M[g][2t + 1], and with .trans
// M[2t][g], M[2t + 1][g]. An address off 16 bytes aborts, as the GPU would fault.
//   m16n8k16: A 16x16 row: a0 (g, 2t..), a1 (g + 8, 2t..), a2 (g, 2t + 8..), a3 (g + 8, 2t + 8..);
//             B 16x8 col:  b0 (2t.., g), b1 (2t + 8.., g); C/D as m16n8k8.
// The products of two 16-bit values are exact in float; the sum runs in float in k order.
inline const void* rtcg_emu_ldmatrix_slots[1024];

inline void rtcg_emu_ldmatrix(unsigned int* const regs[], int matrices, bool trans, const void* p) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  if (lane < unsigned(matrices) * 8 && reinterpret_cast<uintptr_t>(p) % 16 != 0) {
    std::fprintf(stderr, "misaligned ldmatrix row address %p\n", p);
    std::abort();
  }
  rtcg_emu_ldmatrix_slots[tid] = p;
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  auto at = [&](int m, unsigned int row, unsigned int col) {
    return unsigned(static_cast<const unsigned short*>(rtcg_emu_ldmatrix_slots[base + 8 * m + row])[col]);
  };
  for (int m = 0; m < matrices; ++m)
    *regs[m] = trans ? at(m, 2 * t, g) | at(m, 2 * t + 1, g) << 16 : at(m, g, 2 * t) | at(m, g, 2 * t + 1) << 16;
  rtcg_emu_warp_sync();
}
inline void rtcg_ldmatrix_x4(unsigned int& r0, unsigned int& r1, unsigned int& r2, unsigned int& r3, const void* p) {
  unsigned int* const regs[] = {&r0, &r1, &r2, &r3};
  rtcg_emu_ldmatrix(regs, 4, false, p);
}
inline void rtcg_ldmatrix_x4_trans(unsigned int& r0, unsigned int& r1, unsigned int& r2, unsigned int& r3,
                                   const void* p) {
  unsigned int* const regs[] = {&r0, &r1, &r2, &r3};
  rtcg_emu_ldmatrix(regs, 4, true, p);
}
inline void rtcg_ldmatrix_x2(unsigned int& r0, unsigned int& r1, const void* p) {
  unsigned int* const regs[] = {&r0, &r1};
  rtcg_emu_ldmatrix(regs, 2, false, p);
}
inline void rtcg_ldmatrix_x2_trans(unsigned int& r0, unsigned int& r1, const void* p) {
  unsigned int* const regs[] = {&r0, &r1};
  rtcg_emu_ldmatrix(regs, 2, true, p);
}

inline float rtcg_emu_half_value(unsigned int bits, bool bf16) {
  if (bf16) return rtcg_emu_bits_float(bits << 16);
  _Float16 h;
  const unsigned short b = (unsigned short)bits;
  std::memcpy(&h, &b, sizeof h);
  return float(h);
}

inline void rtcg_emu_mma16(bool bf16, float* const d[4], const unsigned int mine[6]) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  for (int r = 0; r < 6; ++r) rtcg_emu_mma_slots[tid][r] = double(mine[r]);
  rtcg_emu_warp_sync();
  float a[16][16], b[16][8];
  for (unsigned int l = 0; l < 32; ++l) {
    const double* s = rtcg_emu_mma_slots[base + l];
    const unsigned int g = l / 4, t = l % 4;
    auto pair = [&](int r, float& lo, float& hi) {
      const unsigned int v = (unsigned int)s[r];
      lo = rtcg_emu_half_value(v & 0xffffu, bf16), hi = rtcg_emu_half_value(v >> 16, bf16);
    };
    pair(0, a[g][2 * t], a[g][2 * t + 1]), pair(1, a[g + 8][2 * t], a[g + 8][2 * t + 1]);
    pair(2, a[g][2 * t + 8], a[g][2 * t + 9]), pair(3, a[g + 8][2 * t + 8], a[g + 8][2 * t + 9]);
    pair(4, b[2 * t][g], b[2 * t + 1][g]), pair(5, b[2 * t + 8][g], b[2 * t + 9][g]);
  }
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  for (int r = 0; r < 4; ++r) {
    const unsigned int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    float acc = *d[r];
    for (int k = 0; k < 16; ++k) acc += a[row][k] * b[k][col];  // 16-bit products are exact in float
    *d[r] = acc;
  }
}
inline void rtcg_mma_bf16(float& d0, float& d1, float& d2, float& d3, unsigned int a0, unsigned int a1,
                          unsigned int a2, unsigned int a3, unsigned int b0, unsigned int b1) {
  float* const d[4] = {&d0, &d1, &d2, &d3};
  const unsigned int mine[6] = {a0, a1, a2, a3, b0, b1};
  rtcg_emu_mma16(true, d, mine);
}
inline void rtcg_mma_f16(float& d0, float& d1, float& d2, float& d3, unsigned int a0, unsigned int a1,
                         unsigned int a2, unsigned int a3, unsigned int b0, unsigned int b1) {
  float* const d[4] = {&d0, &d1, &d2, &d3};
  const unsigned int mine[6] = {a0, a1, a2, a3, b0, b1};
  rtcg_emu_mma16(false, d, mine);
}

// s8 mma ('mma: s8 m16n8k32'): registers of four packed bytes (the lowest the first), loaded by
// the ldmatrix above (a row of its matrices is 16 bytes either way):
//   m16n8k32: A 16x32 row: a0 (g, 4t..), a1 (g + 8, 4t..), a2 (g, 4t + 16..), a3 (g + 8, 4t + 16..);
//             B 32x8 col:  b0 (4t.., g), b1 (4t + 16.., g); C/D as m16n8k8, in s32.
// The sum wraps modulo 2^32, as mma.sync without .satfinite does.
inline void rtcg_mma_s8(int& d0, int& d1, int& d2, int& d3, unsigned int a0, unsigned int a1, unsigned int a2,
                        unsigned int a3, unsigned int b0, unsigned int b1) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, lane = tid % 32;
  const unsigned int mine[6] = {a0, a1, a2, a3, b0, b1};
  for (int r = 0; r < 6; ++r) rtcg_emu_mma_slots[tid][r] = double(mine[r]);
  rtcg_emu_warp_sync();
  int a[16][32], b[32][8];
  for (unsigned int l = 0; l < 32; ++l) {
    const double* s = rtcg_emu_mma_slots[base + l];
    const unsigned int g = l / 4, t = l % 4;
    auto bytes = [&](int r, auto&& put) {
      const unsigned int v = (unsigned int)s[r];
      for (unsigned int i = 0; i < 4; ++i) put(i, int(static_cast<signed char>((v >> (8 * i)) & 0xffu)));
    };
    bytes(0, [&](unsigned int i, int x) { a[g][4 * t + i] = x; });
    bytes(1, [&](unsigned int i, int x) { a[g + 8][4 * t + i] = x; });
    bytes(2, [&](unsigned int i, int x) { a[g][4 * t + 16 + i] = x; });
    bytes(3, [&](unsigned int i, int x) { a[g + 8][4 * t + 16 + i] = x; });
    bytes(4, [&](unsigned int i, int x) { b[4 * t + i][g] = x; });
    bytes(5, [&](unsigned int i, int x) { b[4 * t + 16 + i][g] = x; });
  }
  rtcg_emu_warp_sync();
  const unsigned int g = lane / 4, t = lane % 4;
  int* const d[4] = {&d0, &d1, &d2, &d3};
  for (int r = 0; r < 4; ++r) {
    const unsigned int row = g + (r >= 2 ? 8 : 0), col = 2 * t + (r & 1);
    unsigned int acc = unsigned(*d[r]);
    for (int k = 0; k < 32; ++k) acc += unsigned(a[row][k] * b[k][col]);
    *d[r] = int(acc);
  }
}

// wgmma ('mma: ... wgmma', sm_90a): the descriptors and the instruction as the PTX ISA defines
// them, decoded against the emulated shared memory, so that a wrong start address, leading or stride
// byte offset reads wrong values (and fails the comparison with the reference). Tiles live in the
// dynamic shared memory (the plan's), whose start is shared address 0 here. Descriptor: start
// address >> 4 in bits 0-13, leading dimension byte offset (LBO) >> 4 in 16-29, stride dimension
// byte offset (SBO) >> 4 in 32-45, base offset in 49-51 (0 here), swizzle in 62-63 (0: none, 1:
// 128 bytes (rtcg_emu_wgmma_swizzled); the only ones rtcg emits, others abort). Canonical layouts without swizzle, in core matrices of 8 rows
// of 16 bytes (e = 16 bytes of elements): K-major (imm-trans 0) element (row, k) at start + (row / 8)
// SBO + (k / e) LBO + (row % 8) 16 + (k % e) bytes; MN-major (imm-trans 1, 16-bit only) at start +
// (row / e) SBO + (k / 8) LBO + (k % 8) 16 + (row % e) bytes (row: M of A, N of B). D of m64nN: thread
// (warp w of the warpgroup, group g, thread t) holds d[4c + i] at row 16w + g (+ 8 for i >= 2), column
// 8c + 2t + (i & 1). TF32 operands: their top 19 bits (as mma.sync reads them); the sum runs in
// float in k order. Each thread computes its own D from shared memory (no exchange is needed),
// and as late as the hardware may: an issued wgmma joins the thread's next committed group and
// runs when a wait_group leaves fewer groups in flight, reading shared memory then, so a buffer
// refilled before its wgmma was waited for gives wrong values (and a group never waited for
// aborts at the thread's end).
inline unsigned long long rtcg_wgmma_desc(const void* p, unsigned int lbo, unsigned int sbo) {
  const std::ptrdiff_t at = static_cast<const unsigned char*>(p) - rtcg_emu_dynamic_smem;
  if (at < 0 || at >= std::ptrdiff_t(sizeof rtcg_emu_dynamic_smem) || at % 16 != 0) {
    std::fprintf(stderr, "wgmma descriptor of %p: not a 16-byte aligned address of the dynamic shared memory\n", p);
    std::abort();
  }
  return (unsigned long long)(at >> 4) | (unsigned long long)(lbo >> 4) << 16 | (unsigned long long)(sbo >> 4) << 32;
}
inline void rtcg_fence_proxy_async() {}
// The kernel's arrays (runEmittedOnHost registers each before the launches): a prefetch into L2
// (rtcg_prefetch_l2_range's emulation) must lie within one of them, first <= end, or it aborts.
inline std::vector<std::pair<const unsigned char*, size_t>> rtcg_emu_arrays;
inline void rtcg_emu_prefetch_l2(const void* first, const void* end) {
  const auto* a = static_cast<const unsigned char*>(first);
  const auto* b = static_cast<const unsigned char*>(end);
  for (const auto& [base, bytes] : rtcg_emu_arrays)
    if (a >= base && a <= b && b <= base + bytes) return;
  std::fprintf(stderr, "prefetch of [%p, %p): not within one of the kernel's arrays\n", first, end);
  std::abort();
}
// 'swizzle 128': layout type 1 in bits 62-63.
inline unsigned long long rtcg_wgmma_desc_sw128(const void* p, unsigned int lbo, unsigned int sbo) {
  return rtcg_wgmma_desc(p, lbo, sbo) | 1ull << 62;
}

// The 128-byte swizzled layouts (layout type 1), as the PTX ISA's canonical layouts with
// Swizzle<3, 4, 3> on the byte address: the address formed from the start, the row (K-major: rows
// of 128 bytes, SBO per 8 rows, k within the row from the start; MN-major: W = 128 bytes of rows
// per atom row, LBO per W rows, k rows of 128 bytes, SBO per 8 k), then bits 4-6 XORed with bits
// 7-9. With base offset 0 the atoms must start at multiples of 1024 bytes: a K-major start may sit
// within the first 128-byte row of an atom (k inside the row), an MN-major one only at an atom.
inline unsigned long long rtcg_emu_wgmma_swizzled(unsigned long long desc, bool mnMajor, unsigned int size,
                                                   unsigned int row, unsigned int k, unsigned int depth) {
  const unsigned long long start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4,
                           sbo = ((desc >> 32) & 0x3fff) << 4, w = 128 / size;
  const bool aligned = mnMajor ? start % 1024 == 0 : (start % 1024) + depth * size <= 128;
  if (!aligned) {
    std::fprintf(stderr, "wgmma descriptor %llx: a 128-byte swizzled %s operand's start at shared byte %llu is not "
                 "where a 1024-byte atom (base offset 0) allows\n", desc, mnMajor ? "MN-major" : "K-major", start);
    std::abort();
  }
  const unsigned long long at = mnMajor ? start + (row / w) * lbo + (k / 8) * sbo + (k % 8) * 128 + (row % w) * size
                                        : start + (row / 8) * sbo + (row % 8) * 128 + k * size;
  return at ^ ((at >> 7) & 7) << 4;
}

// Element (row, k) of a wgmma operand (kind 0 f16, 1 bf16, 2 tf32, 3 s8) through its descriptor.
inline unsigned int rtcg_emu_wgmma_size(int kind) { return kind == 2 ? 4 : kind == 3 ? 1 : 2; }
inline unsigned int rtcg_emu_wgmma_depth(int kind) { return kind == 2 ? 8 : kind == 3 ? 32 : 16; }
inline float rtcg_emu_wgmma_operand(unsigned long long desc, bool mnMajor, int kind, unsigned int row, unsigned int k) {
  const unsigned int layout = unsigned(desc >> 62);
  if ((layout != 0 && layout != 1) || ((desc >> 49) & 7) != 0) {
    std::fprintf(stderr, "wgmma descriptor %llx: 64- or 32-byte swizzle or a base offset (not emulated)\n", desc);
    std::abort();
  }
  const unsigned long long start = (desc & 0x3fff) << 4, lbo = ((desc >> 16) & 0x3fff) << 4,
                           sbo = ((desc >> 32) & 0x3fff) << 4;
  const unsigned int size = rtcg_emu_wgmma_size(kind), e = 16 / size;
  const unsigned long long at =
      layout == 1 ? rtcg_emu_wgmma_swizzled(desc, mnMajor, size, row, k, rtcg_emu_wgmma_depth(kind))
      : mnMajor   ? start + (row / e) * sbo + (k / 8) * lbo + (k % 8) * 16 + (row % e) * size
                  : start + (row / 8) * sbo + (k / e) * lbo + (row % 8) * 16 + (k % e) * size;
  if (at + size > sizeof rtcg_emu_dynamic_smem) {
    std::fprintf(stderr, "wgmma operand element at shared byte %llu: outside the shared memory\n", at);
    std::abort();
  }
  const unsigned char* p = rtcg_emu_dynamic_smem + at;
  if (kind == 3) return float(static_cast<signed char>(*p));
  if (kind == 2) {
    uint32_t bits;
    std::memcpy(&bits, p, 4);
    return rtcg_emu_bits_float(bits & 0xffffe000u);
  }
  unsigned short bits;
  std::memcpy(&bits, p, 2);
  return rtcg_emu_half_value(bits, kind == 1);
}

// aRows: A from registers (TF32, 'rs'): this thread's rows g and g + 8 of its warp's 16, k 0-7,
// gathered at issue; else null (A through descA).
// Calls f(e, row, col) for each of this thread's accumulators d[e] of an m64nN tile (D's layout).
template <class F>
inline void rtcg_emu_wgmma_each(int n, F&& f) {
  const unsigned int tid = rtcg_emu_linear_tid % 128, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
  for (int c = 0; c < n / 8; ++c)
    for (int i = 0; i < 4; ++i) f(4 * c + i, 16 * warp + g + (i >= 2 ? 8 : 0), 8 * c + 2 * t + (i & 1));
}

inline void rtcg_emu_wgmma_run(int kind, int n, int transA, int transB, unsigned long long descA,
                               unsigned long long descB, float* const d[], const float (*aRows)[8] = nullptr,
                               int scaleD = 1) {
  const unsigned int depth = rtcg_emu_wgmma_depth(kind);
  rtcg_emu_wgmma_each(n, [&](int e, unsigned int row, unsigned int col) {
    float acc = scaleD ? *d[e] : 0.0f;
    for (unsigned int k = 0; k < depth; ++k)
      acc += (aRows ? aRows[e % 4 >= 2 ? 1 : 0][k] : rtcg_emu_wgmma_operand(descA, transA, kind, row, k)) *
             rtcg_emu_wgmma_operand(descB, transB, kind, col, k);
    *d[e] = acc;
  });
}

// The wgmma queues (the runtime's): rtcg_emu_wgmma issues one into this thread's next group
// (scaleD 0: D = A B, the accumulators' values ignored), rtcg_wgmma_commit closes the group,
// rtcg_emu_wgmma_wait(N) runs the oldest groups (rtcg_emu_wgmma_run) until at most N are in
// flight; a thread that ends with wgmma not waited for aborts. rtcg_emu_wgmma_rs is wgmma with A
// from registers (TF32, m64nNk8): thread (warp w, g, t) holds a0 (row g, k t), a1 (g + 8, t), a2
// (g, t + 4), a3 (g + 8, t + 4) of its warp's 16 rows, the m16n8k8 pattern; the values are gathered
// from the warp's lanes at issue (the registers' values then; the block meets twice, as every
// thread issues the same wgmma) and their top 19 bits used.
void rtcg_emu_wgmma(int kind, int n, int transA, int transB, unsigned long long descA, unsigned long long descB,
                    float* const d[], int scaleD = 1);
void rtcg_emu_wgmma_rs(int n, const float a[4], unsigned long long descB, float* const d[], int scaleD = 1);
// s8 (K-major operands, m64nNk32): D (s32) += the exact i32 sum of the products, wrapping as the
// tensor cores do.
void rtcg_emu_wgmma_s8(int n, unsigned long long descA, unsigned long long descB, int* const d[], int scaleD = 1);
inline void rtcg_emu_wgmma_run_s8(int n, unsigned long long descA, unsigned long long descB, int* const d[], int scaleD) {
  rtcg_emu_wgmma_each(n, [&](int e, unsigned int row, unsigned int col) {
    unsigned int acc = scaleD ? unsigned(*d[e]) : 0u;
    for (unsigned int k = 0; k < rtcg_emu_wgmma_depth(3); ++k)
      acc += unsigned(int(rtcg_emu_wgmma_operand(descA, false, 3, row, k)) * int(rtcg_emu_wgmma_operand(descB, false, 3, col, k)));
    *d[e] = int(acc);
  });
}
void rtcg_wgmma_commit();
void rtcg_emu_wgmma_wait(size_t inFlight);

// TMA ('mma: ... tma'): the emulated tensor map (the launcher encodes it in the parameter's 128
// bytes: address, extents, row pitch, box, element size), the mbarriers and the 2-D box copy.
// An mbarrier (8 bytes of shared memory, keyed by address) counts pending arrivals and
// transaction bytes; a phase completes when both reach zero, and try_wait.parity p returns once
// the phase of parity p has completed (the completed phases' count has another parity). The copy
// runs at once, as a box of the array with zeros outside it, written with the 128-byte swizzle
// (chunk bits 4-6 of the shared address XORed with bits 7-9), and completes its bytes on the
// mbarrier. A wait holds its thread until the phase completes, as __syncthreads holds it until
// every thread arrived (a protocol error that leaves every thread waiting, a hang on the GPU, is
// reported as a deadlock and aborts; no clock decides it).
void rtcg_mbar_init(void* bar, unsigned int count);
inline void rtcg_mbar_init_fence() {}
void rtcg_mbar_expect_tx(void* bar, unsigned int bytes);
void rtcg_mbar_wait(void* bar, unsigned int parity);
void rtcg_mbar_arrive(void* bar);  // an arrival without bytes (`producer`'s consumers and splitters)
// cp.async.mbarrier.arrive.noinc: the arrival once this thread's cp.async (committed or not) have
// landed; here they land at once, then the thread arrives.
inline void rtcg_cp_async_mbar_arrive(void* bar) {
  rtcg_cp_async_commit();
  rtcg_emu_cp_async_wait(0);
  rtcg_mbar_arrive(bar);
}
void rtcg_emu_mbar_complete_tx(void* bar, long long bytes);  // a TMA copy's bytes arrived
struct rtcg_emu_tensor_map_fields {
  const unsigned char* address;
  unsigned long long inner, outer, pitchBytes, boxInner, boxOuter, elementBytes;
};
// The launcher's encoding of a tensor map (what cuTensorMapEncodeTiled would make of the spec).
template <class Map>
inline Map rtcg_emu_tensor_map(const void* address, unsigned long long inner, unsigned long long outer,
                               unsigned long long pitchBytes, unsigned long long boxInner, unsigned long long boxOuter,
                               unsigned long long elementBytes) {
  static_assert(sizeof(Map) == 128 && sizeof(rtcg_emu_tensor_map_fields) <= 128);
  const rtcg_emu_tensor_map_fields f{static_cast<const unsigned char*>(address), inner, outer, pitchBytes,
                                     boxInner, boxOuter, elementBytes};
  Map m{};
  std::memcpy(&m, &f, sizeof f);
  return m;
}
template <class Map>
inline void rtcg_tma_load_2d(void* dst, const Map* map, void* bar, int inner, int outer) {
  rtcg_emu_tensor_map_fields f;
  std::memcpy(&f, map, sizeof f);
  const std::ptrdiff_t base = static_cast<unsigned char*>(dst) - rtcg_emu_dynamic_smem;
  const unsigned long long rowBytes = f.boxInner * f.elementBytes, bytes = rowBytes * f.boxOuter;
  if (rowBytes != 128 || base < 0 || base % 1024 != 0 ||
      base + std::ptrdiff_t(bytes) > std::ptrdiff_t(sizeof rtcg_emu_dynamic_smem)) {
    std::fprintf(stderr, "TMA box to shared byte %td: not 1024-byte aligned, rows not 128 bytes (128-byte swizzle), "
                 "or past the shared memory\n", base);
    std::abort();
  }
  // The hardware reads a box from a 16-byte aligned global address only (an H200 raises an illegal
  // instruction otherwise: docs/bench.md, session 58); the rows are 16-byte multiples apart (the
  // map's encoding), so the inner coordinate's bytes must be one too.
  const long long startBytes = (long long)inner * (long long)f.elementBytes;
  if (startBytes % 16 != 0) {
    std::fprintf(stderr, "TMA box at inner coordinate %d: its global start (%lld bytes into a row) is not 16-byte "
                 "aligned\n", inner, startBytes);
    std::abort();
  }
  for (unsigned long long r = 0; r < f.boxOuter; ++r)
    for (unsigned long long e = 0; e < f.boxInner; ++e) {
      const long long gi = (long long)inner + (long long)e, go = (long long)outer + (long long)r;
      unsigned long long at = base + r * rowBytes + e * f.elementBytes;
      at ^= ((at >> 7) & 7) << 4;
      const bool inside = gi >= 0 && go >= 0 && (unsigned long long)gi < f.inner && (unsigned long long)go < f.outer;
      if (inside) std::memcpy(rtcg_emu_dynamic_smem + at, f.address + go * f.pitchBytes + gi * f.elementBytes, f.elementBytes);
      else std::memset(rtcg_emu_dynamic_smem + at, 0, f.elementBytes);
    }
  rtcg_emu_mbar_complete_tx(bar, (long long)bytes);
}

// The order in which the blocks of a grid run: 0 in order (x fastest), 1 reversed, 2 a fixed
// shuffle. A cross-block reduction must give the same bits whichever block arrives last.
inline int rtcg_emu_block_order = 0;
// Scans' look-back (EmitScan.cpp): with this set, tiles publish aggregates only (a line's first
// tile its prefix), so every look-back walks back to the line's start (EmulationOptions).
inline bool rtcg_emu_scan_hold_prefix = false;
#define RTCG_SCAN_HOLD_PREFIX rtcg_emu_scan_hold_prefix

// Runs kernel(context) (a call of the emitted function with its arguments) on every thread of the
// grid (the runtime's).
void rtcg_emu_launch(const unsigned int grid[3], const unsigned int block[3], void (*kernel)(void*), void* context);
