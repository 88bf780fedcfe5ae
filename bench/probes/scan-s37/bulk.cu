namespace rtcg_scan {
__device__ __forceinline__ unsigned int smemAddr(const void* p) { return static_cast<unsigned int>(__cvta_generic_to_shared(p)); }
__device__ __forceinline__ void mbarInit(unsigned long long* bar, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smemAddr(bar)), "r"(count) : "memory");
}
__device__ __forceinline__ void mbarExpect(unsigned long long* bar, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smemAddr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbarWait(unsigned long long* bar, unsigned int parity) {
  asm volatile("{\n .reg .pred p;\n RTCG_WAIT_%=:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra RTCG_WAIT_%=;\n}\n" ::"r"(smemAddr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void bulkLoad(void* dst, const void* src, unsigned int bytes, unsigned long long* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(smemAddr(dst)), "l"(src), "r"(bytes), "r"(smemAddr(bar)) : "memory");
}
__device__ __forceinline__ void bulkStore(void* dst, const void* src, unsigned int bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(dst), "r"(smemAddr(src)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
__device__ __forceinline__ void bulkStoresRead() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
__device__ __forceinline__ void bulkStoresDone() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void fenceAsyncShared() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

template <class T> struct Vec4;
template <> struct Vec4<float> { typedef float4 type; };
template <> struct Vec4<int> { typedef int4 type; };

// Persistent look-back over one line with bulk copies: each block holds two tiles' buffers in
// shared memory; the next tile's bulk load is in flight while the block scans the current one.
template <class T, class OP, int THREADS, int ITEMS, bool EXCL>
__device__ __forceinline__ void lookbackBulk(const T* __restrict__ x, T* __restrict__ y, long long tiles,
                                             unsigned long long* status, unsigned long long* ticket) {
  static_assert(sizeof(T) == 4, "probe: 4-byte values");
  constexpr int TILE = THREADS * ITEMS, RUN = 32 * ITEMS, WARPS = THREADS / 32, CH = ITEMS / 4;
  constexpr unsigned int BYTES = TILE * sizeof(T);
  typedef typename Vec4<T>::type V4;
  extern __shared__ __align__(128) unsigned char rtcgScanSmem[];
  T* const buf0 = reinterpret_cast<T*>(rtcgScanSmem);
  __shared__ __align__(8) unsigned long long bar[2];
  __shared__ unsigned long long taken[2];
  __shared__ T warpTot[WARPS];
  __shared__ T before;
  const unsigned int tid = threadIdx.x, lane = tid & 31u, warp = tid >> 5;
  const T id = OP::template identity<T>();
  const unsigned long long span = static_cast<unsigned long long>(tiles) + gridDim.x;
  if (tid == 0) {
    mbarInit(&bar[0], 1);
    mbarInit(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    taken[0] = atomicAdd(ticket, 1ULL);
  }
  __syncthreads();
  const unsigned long long epoch = taken[0] / span;
  long long tile = static_cast<long long>(taken[0] % span);
  if (tid == 0 && tile < tiles) {
    mbarExpect(&bar[0], BYTES);
    bulkLoad(buf0, x + tile * TILE, BYTES, &bar[0]);
  }
  for (unsigned int it = 0; tile < tiles; ++it) {
    const unsigned int cur = it & 1u;
    T* const buf = buf0 + cur * TILE;
    if (tid == 0) taken[cur ^ 1u] = atomicAdd(ticket, 1ULL);
    if (lane == 0) bulkStoresRead();  // the other buffer's stores (the tile before) have read it
    mbarWait(&bar[cur], (it >> 1) & 1u);
    T* const run = buf + warp * RUN;
    T s = id;
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      const V4 v = reinterpret_cast<const V4*>(run)[c * 32 + lane];
      s = OP::template apply<T>(s, OP::template apply<T>(OP::template apply<T>(v.x, v.y), OP::template apply<T>(v.z, v.w)));
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s = OP::template apply<T>(s, __shfl_xor_sync(0xffffffffu, s, o));
    if (lane == 0) warpTot[warp] = s;
    __syncthreads();
    const long long next = static_cast<long long>(taken[cur ^ 1u] % span);
    if (tid == 0 && next < tiles) {
      mbarExpect(&bar[cur ^ 1u], BYTES);
      bulkLoad(buf0 + (cur ^ 1u) * TILE, x + next * TILE, BYTES, &bar[cur ^ 1u]);
    }
    if (warp == 0) {
      T w = lane < WARPS ? warpTot[lane] : id;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const T u = __shfl_up_sync(0xffffffffu, w, o);
        if (static_cast<int>(lane) >= o) w = OP::template apply<T>(u, w);
      }
      const T total = __shfl_sync(0xffffffffu, w, WARPS - 1);
      T we = __shfl_up_sync(0xffffffffu, w, 1);
      if (lane == 0) we = id;
      if (lane < WARPS) warpTot[lane] = we;
      if (lane == 0) Dense<T>::publish(status, tile, epoch, tile == 0 ? 2u : 1u, total);
      T b = id;
      if (tile > 0) b = lookBackWith<T, OP, Dense<T>>(status, tile, 0, epoch, lane);
      if (lane == 0) {
        if (tile > 0) Dense<T>::publish(status, tile, epoch, 2u, OP::template apply<T>(b, total));
        before = b;
      }
    }
    __syncthreads();
    T carry = OP::template apply<T>(before, warpTot[warp]);
#pragma unroll
    for (int c = 0; c < CH; ++c) {
      V4 v = reinterpret_cast<const V4*>(run)[c * 32 + lane];
      const T a0 = v.x, a1 = OP::template apply<T>(a0, v.y), a2 = OP::template apply<T>(a1, v.z), a3 = OP::template apply<T>(a2, v.w);
      T inc = a3;
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const T u = __shfl_up_sync(0xffffffffu, inc, o);
        if (static_cast<int>(lane) >= o) inc = OP::template apply<T>(u, inc);
      }
      T ex = __shfl_up_sync(0xffffffffu, inc, 1);
      const T pre = lane == 0 ? carry : OP::template apply<T>(carry, ex);
      if (EXCL) {
        v.x = pre; v.y = OP::template apply<T>(pre, a0); v.z = OP::template apply<T>(pre, a1); v.w = OP::template apply<T>(pre, a2);
      } else {
        v.x = OP::template apply<T>(pre, a0); v.y = OP::template apply<T>(pre, a1); v.z = OP::template apply<T>(pre, a2); v.w = OP::template apply<T>(pre, a3);
      }
      reinterpret_cast<V4*>(run)[c * 32 + lane] = v;
      carry = OP::template apply<T>(carry, __shfl_sync(0xffffffffu, inc, 31));
    }
    fenceAsyncShared();
    __syncwarp();
    if (lane == 0) bulkStore(y + tile * TILE + warp * RUN, run, RUN * sizeof(T));
    tile = next;
  }
  if (lane == 0) bulkStoresDone();
}
}  // namespace rtcg_scan
