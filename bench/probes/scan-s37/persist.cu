namespace rtcg_scan {
// Persistent variant of lookbackWarp: a grid of resident blocks takes tiles by ticket; while warp 0
// looks back on tile n, every thread's loads of tile n + 1 are in flight (registers), and its stores of
// tile n follow. A launch consumes tiles + gridDim.x tickets (each block's last take fails).
template <class T, class OP, int THREADS, int ITEMS, bool SEG, bool EXCL, bool STREAM>
__device__ __forceinline__ void lookbackWarpP(const T* __restrict__ x, T* __restrict__ y, const int* __restrict__ head,
                                             long long length, long long inner, long long tilesPerLine, long long tiles,
                                             unsigned long long* status, unsigned long long* ticket) {
  constexpr int TILE = THREADS * ITEMS, RUN = 32 * ITEMS;
  __shared__ T buf[TILE + TILE / 32];
  __shared__ unsigned char flags[SEG ? TILE : 1];
  __shared__ unsigned long long taken[2];
  __shared__ T before;
  const unsigned int tid = threadIdx.x, lane = tid & 31u;
  const unsigned long long span = static_cast<unsigned long long>(tiles) + gridDim.x;
  if (tid == 0) taken[0] = atomicAdd(ticket, 1ULL);
  __syncthreads();
  const unsigned long long epoch = taken[0] / span;
  long long tile = static_cast<long long>(taken[0] % span);
  const int run0 = static_cast<int>(tid >> 5) * RUN;
  const T id = OP::template identity<T>();
  T r[ITEMS];
  int h[SEG ? ITEMS : 1];
  auto load = [&](long long tl) {
    const long long line = tl / tilesPerLine, t = tl % tilesPerLine;
    const long long base = line / inner * length * inner + line % inner, p0 = t * TILE;
    const long long q = p0 + run0 + static_cast<int>(lane);
    const T* __restrict__ src = x + base + q * inner;
    if (p0 + TILE <= length) {
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        r[k] = src[k * 32 * inner];
        if (SEG) h[k] = head[base + (q + k * 32) * inner] == q + k * 32;
      }
    } else {
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        const long long p = q + k * 32;
        r[k] = p < length ? src[k * 32 * inner] : id;
        if (SEG) h[k] = p < length && head[base + p * inner] == p;
      }
    }
  };
  if (tile < tiles) load(tile);
  unsigned int par = 0;
  while (tile < tiles) {
    const long long line = tile / tilesPerLine, t = tile % tilesPerLine;
    const long long base = line / inner * length * inner + line % inner, p0 = t * TILE;
    const bool whole = p0 + TILE <= length;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
      const int i = run0 + k * 32 + static_cast<int>(lane);
      buf[i + i / 32] = r[k];
      if (SEG) flags[i] = static_cast<unsigned char>(h[k]);
    }
    if (tid == 0) taken[par ^ 1u] = atomicAdd(ticket, 1ULL);
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
    const long long next = static_cast<long long>(taken[par ^ 1u] % span);
    if (next < tiles) load(next);
    if (tid < 32) {
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
    {
      T* __restrict__ dst = y + base + (p0 + run0 + static_cast<int>(lane)) * inner;
      const long long left = length - (p0 + run0 + static_cast<int>(lane));
#pragma unroll
      for (int k = 0; k < ITEMS; ++k) {
        const int i = run0 + k * 32 + static_cast<int>(lane);
        if (whole || k * 32 < left) {
          if (STREAM) __stcs(dst + k * 32 * inner, buf[i + i / 32]);
          else dst[k * 32 * inner] = buf[i + i / 32];
        }
      }
    }
    __syncwarp();
    tile = next;
    par ^= 1u;
  }
}
}  // namespace rtcg_scan
