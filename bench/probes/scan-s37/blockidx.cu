namespace rtcg_scan {
template <class T, class OP, int THREADS, int ITEMS, bool SEG, bool EXCL>
__device__ __forceinline__ void lookbackWarpB(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ head,
                                             long long length, long long inner, long long tilesPerLine, long long tiles,
                                             unsigned long long* status, unsigned long long* ticket) {
  constexpr int TILE = THREADS * ITEMS, RUN = 32 * ITEMS;
  __shared__ T buf[TILE + TILE / 32];
  __shared__ unsigned char flags[SEG ? TILE : 1];
  __shared__ unsigned long long taken;
  __shared__ T before;
  const unsigned int tid = threadIdx.x, lane = tid & 31u;
  if (tid == 0) taken = atomicAdd(ticket, 1ULL);
  const long long tile = blockIdx.x;
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
  if (tid < 32) {
    const unsigned long long epoch = taken / static_cast<unsigned long long>(tiles);
    const bool closed = SEG && totalF;
    if (tid == 0) Dense<T>::publish(status, tile, epoch, (t == 0 || closed) ? 2u : 1u, total);
    T b = id;
    if (t > 0 && !(SEG && flags[0])) b = lookBackWith<T, OP, Dense<T>>(status, tile, tile - t, epoch, tid);
    if (tid == 0) {
      if (t > 0 && !closed && !RTCG_SCAN_HOLD_PREFIX)
        Dense<T>::publish(status, tile, epoch, 2u, OP::template apply<T>(b, total));
      before = b;
    }
  }
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
