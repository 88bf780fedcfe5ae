// Scans (`scan: lookback ...` / `scan: lines ...`, ScanPlan in schedule/ScanPlan.h): the nest's
// kernel calls one device function of the module's prelude, which instantiates the fixed scan
// templates below (rtcg_scan::lookback, rtcg_scan::lines, and in a module with a `layout warp`
// look-back rtcg_scan::lookbackWarp of a second text) for the nest's type, operator, block
// shape, segmentation and inclusiveness, with its extents as constants. The look-back's status
// words and ticket are module globals of the nest (named like a split reduction's scratch).
#include <fmt/format.h>

#include <limits>

#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

// Scans of u32 values, in modules that have one (the other modules' code stays as it was): the
// operators' identities and the status words' bits of unsigned int, ahead of scanHelpers, whose
// templates call bitsOf / fromBits with T unsigned int (a call of a fundamental type finds only the
// overloads declared before the template).
const Prelude scanU32Helpers{7000, R"(// Scans of u32 values: the identities of max and min (0 and 2^32 - 1) and the status words' bits.
namespace rtcg_scan {
template <class T> __device__ __forceinline__ T lowest();
template <class T> __device__ __forceinline__ T highest();
template <> __device__ __forceinline__ unsigned int lowest<unsigned int>() { return 0u; }
template <> __device__ __forceinline__ unsigned int highest<unsigned int>() { return 4294967295u; }
__device__ __forceinline__ unsigned int bitsOf(unsigned int v) { return v; }
__device__ __forceinline__ void fromBits(unsigned int b, unsigned int& v) { v = b; }
}  // namespace rtcg_scan
)"};

const Prelude scanHelpers{7010, R"(// Scans (scan: lookback / lines): the operators, the status words of the decoupled look-back,
// the scans of a warp, of a block, and of a tile or a line.
// RTCG_SCAN_HOLD_PREFIX: the host emulation's tests set it to keep tiles from publishing their
// inclusive prefixes (only a line's first tile does), so that every look-back combines aggregates
// back to the line's start; on the GPU it is false.
#ifndef RTCG_SCAN_HOLD_PREFIX
#define RTCG_SCAN_HOLD_PREFIX false
#endif
namespace rtcg_scan {
template <class T> __device__ __forceinline__ T lowest();
template <class T> __device__ __forceinline__ T highest();
template <> __device__ __forceinline__ int lowest<int>() { return -2147483647 - 1; }
template <> __device__ __forceinline__ int highest<int>() { return 2147483647; }
template <> __device__ __forceinline__ long long lowest<long long>() { return -9223372036854775807LL - 1; }
template <> __device__ __forceinline__ long long highest<long long>() { return 9223372036854775807LL; }
template <> __device__ __forceinline__ float lowest<float>() { return __int_as_float(-8388608); }
template <> __device__ __forceinline__ float highest<float>() { return __int_as_float(2139095040); }
template <> __device__ __forceinline__ double lowest<double>() { return __longlong_as_double(-4503599627370496LL); }
template <> __device__ __forceinline__ double highest<double>() { return __longlong_as_double(9218868437227405312LL); }
// The operators: identity and combination (older value first). Max and min keep a NaN, as the
// reference does.
struct Sum {
  template <class T> static __device__ __forceinline__ T identity() { return T(0); }
  template <class T> static __device__ __forceinline__ T apply(T a, T b) { return a + b; }
};
struct Product {
  template <class T> static __device__ __forceinline__ T identity() { return T(1); }
  template <class T> static __device__ __forceinline__ T apply(T a, T b) { return a * b; }
};
struct Max {
  template <class T> static __device__ __forceinline__ T identity() { return lowest<T>(); }
  template <class T> static __device__ __forceinline__ T apply(T a, T b) { return (a > b || a != a) ? a : b; }
};
struct Min {
  template <class T> static __device__ __forceinline__ T identity() { return highest<T>(); }
  template <class T> static __device__ __forceinline__ T apply(T a, T b) { return (a < b || a != a) ? a : b; }
};

// Status words, four 64-bit words a tile. State 1: the tile's aggregate; 2: its inclusive prefix
// (with a segment start in the tile: from the last one). 4-byte values: word 0 holds the tag
// (epoch % 2^30 * 4 + state) over the value's bits, so that one store publishes both. 8-byte
// values: the aggregate in word 1, the prefix in word 2, then after a fence word 0 = epoch * 4 +
// state. A word of another epoch (the launch before) reads as nothing published.
__device__ __forceinline__ unsigned int bitsOf(int v) { return static_cast<unsigned int>(v); }
__device__ __forceinline__ unsigned int bitsOf(float v) { return __float_as_uint(v); }
__device__ __forceinline__ void fromBits(unsigned int b, int& v) { v = static_cast<int>(b); }
__device__ __forceinline__ void fromBits(unsigned int b, float& v) { v = __uint_as_float(b); }
template <class T, bool WIDE = (sizeof(T) == 8)> struct Status;
template <class T> struct Status<T, false> {
  static __device__ __forceinline__ void publish(unsigned long long* s, long long tile, unsigned long long epoch,
                                                 unsigned int state, T v) {
    const unsigned long long tag = ((epoch & 0x3fffffffULL) << 2) | state;
    *reinterpret_cast<volatile unsigned long long*>(s + 4 * tile) = (tag << 32) | bitsOf(v);
  }
  static __device__ __forceinline__ unsigned int read(unsigned long long* s, long long tile, unsigned long long epoch, T& v) {
    const unsigned long long w = *reinterpret_cast<volatile unsigned long long*>(s + 4 * tile);
    const unsigned long long tag = w >> 32;
    if ((tag >> 2) != (epoch & 0x3fffffffULL)) return 0;
    fromBits(static_cast<unsigned int>(w & 0xffffffffULL), v);
    return static_cast<unsigned int>(tag & 3ULL);
  }
};
template <class T> struct Status<T, true> {
  static __device__ __forceinline__ void publish(unsigned long long* s, long long tile, unsigned long long epoch,
                                                 unsigned int state, T v) {
    *reinterpret_cast<volatile T*>(s + 4 * tile + state) = v;
    __threadfence();
    *reinterpret_cast<volatile unsigned long long*>(s + 4 * tile) = (epoch << 2) | state;
  }
  static __device__ __forceinline__ unsigned int read(unsigned long long* s, long long tile, unsigned long long epoch, T& v) {
    const unsigned long long w = *reinterpret_cast<volatile unsigned long long*>(s + 4 * tile);
    if ((w >> 2) != epoch || (w & 3ULL) == 0) return 0;
    __threadfence();
    v = *reinterpret_cast<volatile T*>(s + 4 * tile + (w & 3ULL));
    return static_cast<unsigned int>(w & 3ULL);
  }
};

// The inclusive scan of (flag, value) pairs over groups of `width` lanes (every lane of the warp
// calls it). A set flag starts a segment: (fa, a) then (fb, b) is (fa | fb, fb ? b : a op b).
template <class T, class OP, bool SEG>
__device__ __forceinline__ void warpInclusive(T& v, int& f, unsigned int lane, unsigned int width) {
  for (unsigned int d = 1; d < width; d <<= 1) {
    const T o = __shfl_up_sync(0xffffffffu, v, d, width);
    const int of = SEG ? __shfl_up_sync(0xffffffffu, f, d, width) : 0;
    if (lane >= d) {
      if (!SEG || !f) v = OP::template apply<T>(o, v);
      if (SEG) f |= of;
    }
  }
}

// The exclusive scan of the threads' (flag, value) pairs across the block, and the block's total.
template <class T, class OP, bool SEG, int THREADS>
__device__ __forceinline__ void blockExclusive(T v, int f, T& excl, int& exclF, T& total, int& totalF) {
  constexpr unsigned int WARPS = THREADS / 32;
  __shared__ T warpV[33];
  __shared__ int warpF[33];
  const unsigned int tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  warpInclusive<T, OP, SEG>(v, f, lane, 32);
  T te = __shfl_up_sync(0xffffffffu, v, 1);
  int tef = SEG ? __shfl_up_sync(0xffffffffu, f, 1) : 0;
  if (lane == 0) te = OP::template identity<T>(), tef = 0;
  if (lane == 31) warpV[warp] = v, warpF[warp] = f;
  __syncthreads();
  if (warp == 0) {
    T w = lane < WARPS ? warpV[lane] : OP::template identity<T>();
    int wf = lane < WARPS ? warpF[lane] : 0;
    warpInclusive<T, OP, SEG>(w, wf, lane, 32);
    T we = __shfl_up_sync(0xffffffffu, w, 1);
    int wef = SEG ? __shfl_up_sync(0xffffffffu, wf, 1) : 0;
    if (lane == 0) we = OP::template identity<T>(), wef = 0;
    if (lane < WARPS) warpV[lane] = we, warpF[lane] = wef;
    if (lane == WARPS - 1) warpV[32] = w, warpF[32] = wf;
  }
  __syncthreads();
  excl = (SEG && tef) ? te : OP::template apply<T>(warpV[warp], te);
  exclF = warpF[warp] | tef;
  total = warpV[32];
  totalF = warpF[32];
}

// Warp 0's look-back from `tile` over the status words S (Status, or a dense scan's Dense): the
// combination of the tiles lineFirst..tile - 1, 32 status words at a time (lane 31 the newest),
// each lane waiting until its tile has published; the window ends at its newest inclusive prefix
// (tiles before the line's first count as the identity's).
template <class T, class OP, class S>
__device__ __forceinline__ T lookBackWith(unsigned long long* status, long long tile, long long lineFirst,
                                          unsigned long long epoch, unsigned int lane) {
  T excl = OP::template identity<T>();
  for (long long newest = tile - 1;; newest -= 32) {
    const long long p = newest - (31 - static_cast<long long>(lane));
    T v = OP::template identity<T>();
    unsigned int state = 2;
    if (p >= lineFirst) {
      do state = S::read(status, p, epoch, v);
      while (state == 0);
    }
    const unsigned int prefixes = __ballot_sync(0xffffffffu, state == 2);
    const int top = prefixes ? 31 - __clz(static_cast<int>(prefixes)) : -1;
    T w = static_cast<int>(lane) >= top ? v : OP::template identity<T>();
    int none = 0;
    warpInclusive<T, OP, false>(w, none, lane, 32);
    excl = OP::template apply<T>(__shfl_sync(0xffffffffu, w, 31), excl);
    if (top >= 0) return excl;
  }
}

// Warp 0's part of a tile t of its line, status words S: publish the tile's total (at once as its
// inclusive prefix where the tile is the line's first or holds a segment start, which knows its
// prefix from that start), look back over the line's earlier tiles unless a segment starts the
// tile, publish the inclusive prefix, and leave the exclusive one in `before` (shared).
template <class T, class OP, bool SEG, class S>
__device__ __forceinline__ void publishAndLookBack(unsigned long long* status, long long tile, long long t,
                                                   unsigned long long epoch, unsigned int tid, T total, int totalF,
                                                   const unsigned char* flags, T& before) {
  if (tid >= 32) return;
  const bool closed = SEG && totalF;
  if (tid == 0) S::publish(status, tile, epoch, (t == 0 || closed) ? 2u : 1u, total);
  T b = OP::template identity<T>();
  if (t > 0 && !(SEG && flags[0])) b = lookBackWith<T, OP, S>(status, tile, tile - t, epoch, tid);
  if (tid == 0) {
    if (t > 0 && !closed && !RTCG_SCAN_HOLD_PREFIX) S::publish(status, tile, epoch, 2u, OP::template apply<T>(b, total));
    before = b;
  }
}

// One tile of a line (`scan: lookback`): blocks take tiles by ticket, in the order they start.
// Line l's position p is at (l / inner) * length * inner + l % inner + p * inner.
template <class T, class OP, int THREADS, int ITEMS, bool SEG, bool EXCL>
__device__ __forceinline__ void lookback(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ head,
                                         long long length, long long inner, long long tilesPerLine, long long tiles,
                                         unsigned long long* status, unsigned long long* ticket) {
  constexpr int TILE = THREADS * ITEMS;
  // The tile with a word of padding every 32 values: a thread's ITEMS neighbours (an even ITEMS)
  // then spread over the banks.
  __shared__ T buf[TILE + TILE / 32];
  __shared__ unsigned char flags[SEG ? TILE : 1];
  __shared__ unsigned long long taken;
  __shared__ T before;
  const unsigned int tid = threadIdx.x;
  if (tid == 0) taken = atomicAdd(ticket, 1ULL);
  __syncthreads();
  const unsigned long long epoch = taken / static_cast<unsigned long long>(tiles);
  const long long tile = static_cast<long long>(taken % static_cast<unsigned long long>(tiles));
  const long long line = tile / tilesPerLine, t = tile % tilesPerLine;
  const long long base = line / inner * length * inner + line % inner, p0 = t * TILE;
  const T id = OP::template identity<T>();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * THREADS + static_cast<int>(tid);
    const long long p = p0 + i;
    buf[i + i / 32] = p < length ? x[base + p * inner] : id;
    if (SEG) flags[i] = p < length && head[base + p * inner] == p;
  }
  __syncthreads();
  T v[ITEMS];
  int f[ITEMS];
  T agg = id;
  int aggF = 0;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = static_cast<int>(tid) * ITEMS + k;
    v[k] = buf[i + i / 32];
    f[k] = SEG ? flags[tid * ITEMS + k] : 0;
    agg = (SEG && f[k]) ? v[k] : OP::template apply<T>(agg, v[k]);
    aggF |= f[k];
  }
  T excl, total;
  int exclF, totalF;
  blockExclusive<T, OP, SEG, THREADS>(agg, aggF, excl, exclF, total, totalF);
  publishAndLookBack<T, OP, SEG, Status<T>>(status, tile, t, epoch, tid, total, totalF, flags, before);
  __syncthreads();
  T run = exclF ? excl : OP::template apply<T>(before, excl);
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const bool starts = SEG && f[k];
    const int i = static_cast<int>(tid) * ITEMS + k;
    if (EXCL) buf[i + i / 32] = starts ? id : run;
    run = starts ? v[k] : OP::template apply<T>(run, v[k]);
    if (!EXCL) buf[i + i / 32] = run;
  }
  __syncthreads();
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = k * THREADS + static_cast<int>(tid);
    const long long p = p0 + i;
    if (p < length) y[base + p * inner] = buf[i + i / 32];
  }
}

// Whole lines (`scan: lines`): LANES lanes of a warp a line, from its start to its end, ITEMS
// values a lane a step (lane l the step's values l, l + LANES, ...), the step's total carried on.
template <class T, class OP, int THREADS, int LANES, int ITEMS, bool SEG, bool EXCL>
__device__ __forceinline__ void lines(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ head,
                                      long long length, long long inner, long long count) {
  const unsigned int tid = threadIdx.x, lane = tid % LANES;
  const long long line = static_cast<long long>(blockIdx.x) * (THREADS / LANES) + tid / LANES;
  const bool live = line < count;
  const long long base = live ? line / inner * length * inner + line % inner : 0;
  const T id = OP::template identity<T>();
  T carry = id;
  for (long long p0 = 0; p0 < length; p0 += static_cast<long long>(LANES) * ITEMS) {
    T v[ITEMS];
    int f[ITEMS];
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const long long p = p0 + k * LANES + lane;
      const bool ok = live && p < length;
      v[k] = ok ? x[base + p * inner] : id;
      f[k] = SEG && ok && head[base + p * inner] == p;
    }
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      T s = v[k];
      int sf = f[k];
      warpInclusive<T, OP, SEG>(s, sf, lane, LANES);
      const T incl = (SEG && sf) ? s : OP::template apply<T>(carry, s);
      T out = incl;
      if (EXCL) {
        T prev = __shfl_up_sync(0xffffffffu, incl, 1, LANES);
        if (lane == 0) prev = carry;
        out = (SEG && f[k]) ? id : prev;
      }
      const long long p = p0 + k * LANES + lane;
      if (live && p < length) y[base + p * inner] = out;
      carry = __shfl_sync(0xffffffffu, incl, LANES - 1, LANES);
    }
  }
}
}  // namespace rtcg_scan
)"};

const Prelude scanWarpHelpers{7020, R"(// Scans, `scan: lookback ... layout warp`: each warp owns a run of the tile from load to store.
namespace rtcg_scan {
// Status words of the warp layout: one a tile for 4-byte values (the packed word of Status<T,
// false>: a look-back step's 32 words are 256 contiguous bytes), four for 8-byte values (Status<T,
// true> as it is).
template <class T, bool WIDE = (sizeof(T) == 8)> struct Dense;
template <class T> struct Dense<T, false> {
  static __device__ __forceinline__ void publish(unsigned long long* s, long long tile, unsigned long long epoch,
                                                 unsigned int state, T v) {
    const unsigned long long tag = ((epoch & 0x3fffffffULL) << 2) | state;
    *reinterpret_cast<volatile unsigned long long*>(s + tile) = (tag << 32) | bitsOf(v);
  }
  static __device__ __forceinline__ unsigned int read(unsigned long long* s, long long tile, unsigned long long epoch, T& v) {
    const unsigned long long w = *reinterpret_cast<volatile unsigned long long*>(s + tile);
    const unsigned long long tag = w >> 32;
    if ((tag >> 2) != (epoch & 0x3fffffffULL)) return 0;
    fromBits(static_cast<unsigned int>(w & 0xffffffffULL), v);
    return static_cast<unsigned int>(tag & 3ULL);
  }
};
template <class T> struct Dense<T, true> : Status<T, true> {};

// One tile of a line, warp w owning values w * 32 * ITEMS .. (w + 1) * 32 * ITEMS - 1 of it: the
// warp loads its run coalesced into shared memory (lane l the values l, l + 32, ...), each lane
// reduces its ITEMS neighbours there, the block scans the lanes' totals, warp 0 publishes and
// looks back, then each lane rescans its neighbours from shared memory in place and the warp
// stores its run. A whole tile (not the line's last) loads and stores without bounds checks.
template <class T, class OP, int THREADS, int ITEMS, bool SEG, bool EXCL>
__device__ __forceinline__ void lookbackWarp(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ head,
                                             long long length, long long inner, long long tilesPerLine, long long tiles,
                                             unsigned long long* status, unsigned long long* ticket) {
  constexpr int TILE = THREADS * ITEMS, RUN = 32 * ITEMS;
  __shared__ T buf[TILE + TILE / 32];
  __shared__ unsigned char flags[SEG ? TILE : 1];
  __shared__ unsigned long long taken;
  __shared__ T before;
  const unsigned int tid = threadIdx.x, lane = tid & 31u;
  if (tid == 0) taken = atomicAdd(ticket, 1ULL);
  __syncthreads();
  const unsigned long long epoch = taken / static_cast<unsigned long long>(tiles);
  const long long tile = static_cast<long long>(taken % static_cast<unsigned long long>(tiles));
  const long long line = tile / tilesPerLine, t = tile % tilesPerLine;
  const long long base = line / inner * length * inner + line % inner, p0 = t * TILE;
  const int run0 = static_cast<int>(tid >> 5) * RUN;
  const T id = OP::template identity<T>();
  const bool whole = p0 + TILE <= length;
  // Every load of the run issued before the first store to shared memory (ITEMS in flight a lane).
  T r[ITEMS];
  int h[SEG ? ITEMS : 1];
  if (whole) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const long long p = p0 + run0 + k * 32 + static_cast<int>(lane);
      r[k] = x[base + p * inner];
      if (SEG) h[k] = head[base + p * inner] == p;
    }
  } else {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const long long p = p0 + run0 + k * 32 + static_cast<int>(lane);
      r[k] = p < length ? x[base + p * inner] : id;
      if (SEG) h[k] = p < length && head[base + p * inner] == p;
    }
  }
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = run0 + k * 32 + static_cast<int>(lane);
    buf[i + i / 32] = r[k];
    if (SEG) flags[i] = static_cast<unsigned char>(h[k]);
  }
  __syncwarp();
  const int mine = run0 + static_cast<int>(lane) * ITEMS;
  T agg = id;
  int aggF = 0;
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = mine + k;
    const T v = buf[i + i / 32];
    const int f = SEG ? flags[i] : 0;
    agg = (SEG && f) ? v : OP::template apply<T>(agg, v);
    aggF |= f;
  }
  T excl, total;
  int exclF, totalF;
  blockExclusive<T, OP, SEG, THREADS>(agg, aggF, excl, exclF, total, totalF);
  publishAndLookBack<T, OP, SEG, Dense<T>>(status, tile, t, epoch, tid, total, totalF, flags, before);
  __syncthreads();
  T run = exclF ? excl : OP::template apply<T>(before, excl);
#pragma unroll
  for (int k = 0; k < ITEMS; ++k) {
    const int i = mine + k;
    const T v = buf[i + i / 32];
    const bool starts = SEG && flags[i];
    if (EXCL) buf[i + i / 32] = starts ? id : run;
    run = starts ? v : OP::template apply<T>(run, v);
    if (!EXCL) buf[i + i / 32] = run;
  }
  __syncwarp();
  if (whole) {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int i = run0 + k * 32 + static_cast<int>(lane);
      y[base + (p0 + i) * inner] = buf[i + i / 32];
    }
  } else {
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int i = run0 + k * 32 + static_cast<int>(lane);
      const long long p = p0 + i;
      if (p < length) y[base + p * inner] = buf[i + i / 32];
    }
  }
}
}  // namespace rtcg_scan
)"};

namespace {

const char* opName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "Sum";
    case ReduceOp::Product: return "Product";
    case ReduceOp::Max: return "Max";
    case ReduceOp::Min: return "Min";
  }
  return "Sum";
}

}  // namespace

C::Function emitScanNest(EmitContext& ctx, LaunchSpec& launch, std::vector<C::GlobalArray>& globals) {
  const ScanPlan& p = *ctx.plan.scan;
  const ScanForm& f = p.form;
  const LaunchPlan& l = ctx.plan.launch;
  const bool lookback = p.kind == ScanSchedule::Kind::Lookback;
  C::Function fn;
  fn.kind = C::FunctionKind::Kernel;
  fn.name = fmt::format("{}_{}", ctx.k.name, ctx.nestIdx);
  launch.function = fn.name;
  for (int a = 0; a < 3; ++a) {
    launch.grid[a] = (uint32_t)l.grid[a], launch.block[a] = (uint32_t)l.block[a];
    ctx.facts.grid[a] = l.grid[a], ctx.facts.block[a] = l.block[a];
  }
  ctx.facts.threads = l.threads;
  fn.launchBounds = (int)l.threads;
  // The nest's device function and scratch, named before the parameters so that none hides them.
  const std::string wrapper = ctx.names.fresh(fmt::format("rtcg_scan_nest_{}", ctx.nestIdx));
  std::string status, ticket;
  if (lookback) {
    status = ctx.names.fresh(fn.name + "_scan_status");
    ticket = ctx.names.fresh(fn.name + "_scan_ticket");
  }
  std::vector<C::Stmt> body;
  declareNestParams(ctx, fn, launch, body);
  const std::string type = cudaTypeName(f.type);
  const bool seg = f.head >= 0;
  std::vector<C::ExprP> args{C::name(ctx.paramNames[size_t(f.in)]), C::name(ctx.paramNames[size_t(f.out)])};
  if (seg) args.push_back(C::name(ctx.paramNames[size_t(f.head)]));
  std::string params = fmt::format("const {0}* __restrict__ x, {0}* __restrict__ y{1}", type,
                                   seg ? ", const int* __restrict__ head" : "");
  const char* headArg = seg ? "head" : "static_cast<const int*>(0)";
  std::string call;
  if (lookback) {
    params += ", unsigned long long* status, unsigned long long* ticket";
    args.push_back(C::name(status));
    args.push_back(C::name(ticket));
    call = fmt::format("rtcg_scan::{}<{}, rtcg_scan::{}, {}, {}, {}, {}>(x, y, {}, {}LL, {}LL, {}LL, {}LL, status, ticket);",
                       p.warpLayout ? "lookbackWarp" : "lookback", type, opName(f.op), p.threads, p.items, seg,
                       f.exclusive, headArg, f.length, f.inner, p.tilesPerLine, p.tiles);
    globals.push_back({"unsigned long long", status, p.statusWords,
                       {fmt::format("The decoupled look-back's status words of {}: {} a tile, tagged with the launch's "
                                    "epoch; launches of this module must not overlap",
                                    fn.name, p.statusWords == p.tiles ? "one" : "four")},
                       16});
    if (p.warpLayout) ctx.needs.need(scanWarpHelpers);
    globals.push_back({"unsigned long long", ticket, 1, {fmt::format("The tiles' ticket counter of {}", fn.name)}, 0});
    launch.usesGlobalScratch = true;
  } else {
    call = fmt::format("rtcg_scan::lines<{}, rtcg_scan::{}, {}, {}, {}, {}, {}>(x, y, {}, {}LL, {}LL, {}LL);", type,
                       opName(f.op), p.threads, p.lanes, p.items, seg, f.exclusive, headArg, f.length, f.inner,
                       f.lines());
  }
  if (f.type == ScalarType::U32) ctx.needs.need(scanU32Helpers);
  ctx.needs.need(scanHelpers);
  ctx.needs.needInOrder(ModuleNeeds::scanFunctionBand, std::numeric_limits<int>::max(),
                        fmt::format("// Nest {}: {}.\nstatic __device__ __forceinline__ void {}({}) {{\n  {}\n}}",
                                    ctx.nestIdx, printScanSchedule(ctx.sched.scan), wrapper, params, call));
  body.push_back(C::exprStmt(C::call(wrapper, std::move(args))));
  fn.body = std::move(body);
  describeNest(ctx, fn);
  return fn;
}

}  // namespace rtcg::emit
