// Probe: can a write-heavy copy of f64 DG N3's bytes (u: K x 20 read, w: K x 60 written) go faster
// with TMA bulk stores (cp.async.bulk.global.shared::cta) than with plain stores?
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)
constexpr int NP = 20, NO = 60;

__global__ void plain(const double* __restrict__ u, double* __restrict__ w, long K) {
  long t = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (t >= K * NO) return;
  long k = t / NO; int m = t % NO;
  w[t] = u[k * NP + m % NP] * (1 + m / NP);
}
// A block of E elements: reads u's tile, writes its E*60 outputs into shared memory in w's layout,
// then one thread stores the contiguous run with one bulk copy.
template <int E, bool PERSIST>
__global__ void bulk(const double* __restrict__ u, double* __restrict__ w, long K) {
  extern __shared__ __align__(128) double sm[];
  const long tiles = (K + E - 1) / E;
  int buf = 0;
  for (long tile = blockIdx.x; tile < tiles; tile += PERSIST ? gridDim.x : tiles) {
    double* s = sm + buf * E * NO;
    if (PERSIST && threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
    __syncthreads();
    const long k0 = tile * E;
    const int n = (int)min((long)E, K - k0);
    for (int i = threadIdx.x; i < n * NO; i += blockDim.x) {
      int e = i / NO, m = i % NO;
      s[i] = u[(k0 + e) * NP + m % NP] * (1 + m / NP);
    }
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      unsigned sa = (unsigned)__cvta_generic_to_shared(s);
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(w + k0 * NO), "r"(sa),
                   "r"(n * NO * 8) : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    }
    buf ^= PERSIST ? 1 : 0;
  }
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
}
// Plain 16-byte stores from shared memory (as rtcg's shared epilogue): the reference for the bulk form.
template <int E>
__global__ void vec(const double* __restrict__ u, double* __restrict__ w, long K) {
  extern __shared__ __align__(128) double sm[];
  const long k0 = blockIdx.x * (long)E;
  const int n = (int)min((long)E, K - k0);
  for (int i = threadIdx.x; i < n * NO; i += blockDim.x) {
    int e = i / NO, m = i % NO;
    sm[i] = u[(k0 + e) * NP + m % NP] * (1 + m / NP);
  }
  __syncthreads();
  double2* dst = (double2*)(w + k0 * NO);
  const double2* src = (const double2*)sm;
  for (int i = threadIdx.x; i < n * NO / 2; i += blockDim.x) dst[i] = src[i];
}
int main() {
  const long K = 100000;
  double *u, *w, *flush;
  CK(cudaMalloc(&u, K * NP * 8)); CK(cudaMalloc(&w, K * NO * 8)); CK(cudaMalloc(&flush, 256 << 20));
  std::vector<double> h(K * NP);
  for (long i = 0; i < K * NP; ++i) h[i] = 1.0 + (i % 977) * 1e-3;
  CK(cudaMemcpy(u, h.data(), K * NP * 8, cudaMemcpyHostToDevice));
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  std::vector<double> want(K * NO), got(K * NO);
  auto run = [&](const char* name, auto launch) {
    std::vector<float> ts;
    for (int r = 0; r < 40; ++r) {
      CK(cudaMemset(flush, r, 256 << 20));
      CK(cudaMemset(w, 0xff, K * NO * 8));
      cudaEventRecord(a); launch(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
      float ms; cudaEventElapsedTime(&ms, a, b); if (r >= 5) ts.push_back(ms);
    }
    CK(cudaGetLastError());
    CK(cudaMemcpy(got.data(), w, K * NO * 8, cudaMemcpyDeviceToHost));
    long bad = 0; for (long i = 0; i < K * NO; ++i) bad += got[i] != want[i];
    std::sort(ts.begin(), ts.end());
    printf("%-28s %.4f ms  %.0f GB/s  bad %ld\n", name, ts[ts.size() / 2], (K * (NP + NO) * 8) / ts[ts.size() / 2] / 1e6, bad);
  };
  for (long k = 0; k < K; ++k) for (int m = 0; m < NO; ++m) want[k * NO + m] = h[k * NP + m % NP] * (1 + m / NP);
  run("plain", [&] { plain<<<(K * NO + 255) / 256, 256>>>(u, w, K); });
  run("vec E64 t256", [&] { vec<64><<<(K + 63) / 64, 256, 64 * NO * 8>>>(u, w, K); });
  run("vec E32 t128", [&] { vec<32><<<(K + 31) / 32, 128, 32 * NO * 8>>>(u, w, K); });
#define BULK(E, T, P, G) { auto f = bulk<E, P>; CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (P ? 2 : 1) * E * NO * 8)); \
  char nm[64]; snprintf(nm, 64, "bulk E%d t%d %s g%d", E, T, P ? "persist" : "", G); \
  run(nm, [&] { f<<<G, T, (P ? 2 : 1) * E * NO * 8>>>(u, w, K); }); }
  BULK(64, 256, false, (int)((K + 63) / 64));
  BULK(32, 128, false, (int)((K + 31) / 32));
  BULK(16, 128, false, (int)((K + 15) / 16));
  BULK(64, 256, true, sms * 4);
  BULK(64, 256, true, sms * 6);
  BULK(32, 256, true, sms * 8);
  BULK(32, 128, true, sms * 12);
  run("plain again", [&] { plain<<<(K * NO + 255) / 256, 256>>>(u, w, K); });
  return 0;
}
