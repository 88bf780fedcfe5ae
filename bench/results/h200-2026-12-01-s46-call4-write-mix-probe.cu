// Probe: how fast can an H200 move 16 MB read + 48 MB written (dg_diff_f64 N3's bytes)?
#include <cstdio>
#include <vector>
#include <algorithm>
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e_)); return 1; } } while (0)
const int K = 100000;
__global__ void copy_mix(const double2* __restrict__ u, double2* __restrict__ w) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < K * 30; i += gridDim.x * blockDim.x) {
    const int k = i / 30, j = i % 30; w[i] = u[k * 10 + (j % 10)];
  }
}
// One thread per output double2, no grid stride.
__global__ void copy_flat(const double2* __restrict__ u, double2* __restrict__ w) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= K * 30) return;
  const int k = i / 30, j = i % 30; w[i] = u[k * 10 + (j % 10)];
}
__global__ void copy_flat_cs(const double2* __restrict__ u, double2* __restrict__ w) {
  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i >= K * 30) return;
  const int k = i / 30, j = i % 30; __stcs(&w[i], __ldg(&u[k * 10 + (j % 10)]));
}
// Each thread reads one double2 of u and writes three double2 (a 1:3 mix), 4 items a thread.
__global__ void copy_x4(const double2* __restrict__ u, double2* __restrict__ w) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * 4;
#pragma unroll
  for (int q = 0; q < 4; ++q) { int i = base + q; if (i < K * 30) { const int k = i / 30, j = i % 30; w[i] = u[k * 10 + (j % 10)]; } }
}
__global__ void write_only(double2* __restrict__ w, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) w[i] = make_double2(i, 1.0);
}
__global__ void read_only(const double2* __restrict__ u, int n, double* sink) {
  double s = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) { double2 v = u[i]; s += v.x + v.y; }
  if (s == 1234.5) *sink = s;
}
__global__ void copy_11(const double2* __restrict__ a, double2* __restrict__ b, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) b[i] = a[i];
}
int main() {
  double2 *u, *w, *big; double* sink; char* flush;
  CK(cudaMalloc(&u, size_t(K) * 10 * 16)); CK(cudaMalloc(&w, size_t(K) * 30 * 16)); CK(cudaMalloc(&big, size_t(64) << 20));
  CK(cudaMalloc(&sink, 8)); CK(cudaMalloc(&flush, 256 << 20));
  CK(cudaMemset(u, 1, size_t(K) * 160));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  auto timeit = [&](auto launch) {
    std::vector<float> t;
    for (int r = 0; r < 5; ++r) launch();
    for (int r = 0; r < 40; ++r) {
      cudaMemsetAsync(flush, r, 256 << 20);
      cudaEventRecord(a); launch(); cudaEventRecord(b); cudaEventSynchronize(b);
      float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
  };
  const double mix = 64e6, wbytes = 48e6;
  const int nw = K * 30, blocks = (nw + 255) / 256;
  for (int pass = 0; pass < 2; ++pass) {
    float t;
    t = timeit([&] { copy_mix<<<132 * 8, 256>>>(u, w); }); printf("mix grid-stride 1056x256  %.4f ms %.0f GB/s\n", t, mix / t / 1e6);
    t = timeit([&] { copy_mix<<<132 * 16, 256>>>(u, w); }); printf("mix grid-stride 2112x256  %.4f ms %.0f GB/s\n", t, mix / t / 1e6);
    t = timeit([&] { copy_flat<<<blocks, 256>>>(u, w); }); printf("mix flat                  %.4f ms %.0f GB/s\n", t, mix / t / 1e6);
    t = timeit([&] { copy_flat_cs<<<blocks, 256>>>(u, w); }); printf("mix flat stcs             %.4f ms %.0f GB/s\n", t, mix / t / 1e6);
    t = timeit([&] { copy_x4<<<(nw / 4 + 255) / 256 + 1, 256>>>(u, w); }); printf("mix x4                    %.4f ms %.0f GB/s\n", t, mix / t / 1e6);
    t = timeit([&] { write_only<<<132 * 16, 256>>>(w, nw); }); printf("write 48 MB               %.4f ms %.0f GB/s\n", t, wbytes / t / 1e6);
    t = timeit([&] { cudaMemsetAsync(w, 0, size_t(nw) * 16); }); printf("memset 48 MB              %.4f ms %.0f GB/s\n", t, wbytes / t / 1e6);
    t = timeit([&] { read_only<<<132 * 16, 256>>>(w, nw, sink); }); printf("read 48 MB                %.4f ms %.0f GB/s\n", t, wbytes / t / 1e6);
    t = timeit([&] { copy_11<<<132 * 16, 256>>>(big, big + (32 << 20) / 16, (32 << 20) / 16); }); printf("copy 32+32 MB             %.4f ms %.0f GB/s\n", t, 64e6 * 1.048576 / t / 1e6);
    t = timeit([&] { cudaMemcpyAsync(big, big + (32 << 20) / 16, 32 << 20, cudaMemcpyDeviceToDevice); }); printf("memcpy 32+32 MB           %.4f ms %.0f GB/s\n", t, 64e6 * 1.048576 / t / 1e6);
  }
  return 0;
}
