// Session 46 n8bulk prototype harness: loads cubins of emitted (and hand-edited) dg_diff /
// dg_diff_stacked kernels, verifies them against a float64 reference on sampled elements, and times
// them (CUDA events, L2 flushed by a 256 MB memset before each launch, median of 30) beside
// cublasSgemm with D stacked, in one process.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char* s; cuGetErrorString(r_, &s); printf("CU error %s at %d: %s\n", #x, __LINE__, s); exit(1); } } while (0)
#define CR(x) do { cudaError_t r_ = (x); if (r_ != cudaSuccess) { printf("CUDA error %s at %d: %s\n", #x, __LINE__, cudaGetErrorString(r_)); exit(1); } } while (0)
int main(int argc, char** argv) {
  int K = atoi(argv[1]), Np = atoi(argv[2]), reps = atoi(argv[3]);
  CR(cudaFree(0));
  size_t nu = size_t(K) * Np, nd = size_t(Np) * Np;
  std::vector<float> hu(nu), hd(3 * nd);
  srand(1);
  for (auto& x : hu) x = rand() / float(RAND_MAX) * 2 - 1;
  for (auto& x : hd) x = rand() / float(RAND_MAX) * 2 - 1;
  float *u, *D, *o3, *w; void* flush;
  CR(cudaMalloc(&u, nu * 4)); CR(cudaMalloc(&D, 3 * nd * 4)); CR(cudaMalloc(&o3, 3 * nu * 4)); CR(cudaMalloc(&w, 3 * nu * 4));
  CR(cudaMalloc(&flush, 256 << 20));
  CR(cudaMemcpy(u, hu.data(), nu * 4, cudaMemcpyHostToDevice)); CR(cudaMemcpy(D, hd.data(), 3 * nd * 4, cudaMemcpyHostToDevice));
  float *Dr = D, *Ds = D + nd, *Dt = D + 2 * nd, *ur = o3, *us = o3 + nu, *ut = o3 + 2 * nu;
  cudaEvent_t e0, e1; CR(cudaEventCreate(&e0)); CR(cudaEventCreate(&e1));
  auto timeIt = [&](auto&& launch) {
    std::vector<float> t;
    launch(); CR(cudaDeviceSynchronize());
    for (int r = 0; r < reps; ++r) {
      CR(cudaMemsetAsync(flush, r & 255, 256 << 20));
      CR(cudaEventRecord(e0)); launch(); CR(cudaEventRecord(e1)); CR(cudaEventSynchronize(e1));
      float ms; CR(cudaEventElapsedTime(&ms, e0, e1)); t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
  };
  // Verification: every 61st element and the last 70 (the tail tile), float64 reference.
  auto verify = [&](bool stacked) {
    std::vector<float> out(3 * nu);
    CR(cudaMemcpy(out.data(), stacked ? w : o3, 3 * nu * 4, cudaMemcpyDeviceToHost));
    double e2 = 0, r2 = 0, maxe = 0; long bad = 0, n = 0;
    for (int k = 0; k < K; ++k) {
      if (k % 61 && k < K - 70) continue;
      for (int m = 0; m < 3 * Np; ++m) {
        double s = 0;
        for (int j = 0; j < Np; ++j) s += double(hd[size_t(m) * Np + j]) * hu[size_t(k) * Np + j];
        int q = m / Np, i = m % Np;
        double g = stacked ? out[size_t(k) * 3 * Np + m] : out[q * nu + size_t(k) * Np + i];
        double d = std::fabs(g - s); e2 += d * d; r2 += s * s; maxe = std::max(maxe, d); ++n;
        if (!(d <= 1e-4 * (1 + std::fabs(s)))) ++bad;
      }
    }
    printf("  verify: rel %.3g, max abs %.3g, %ld of %ld beyond 1e-4 %s\n", std::sqrt(e2 / r2), maxe, bad, n, bad ? "WRONG" : "ok");
  };
  cublasHandle_t h; cublasCreate(&h);
  float one = 1, zero = 0;
  auto cub = [&] { cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 3 * Np, K, Np, &one, D, Np, u, Np, &zero, w, 3 * Np); };
  CR(cudaMemset(w, 0xff, 3 * nu * 4));
  double flops = 2.0 * K * 3 * Np * Np;
  float tc = timeIt(cub);
  printf("cublasSgemm (D stacked): %.4f ms, %.1f GF/s\n", tc, flops / tc / 1e6); verify(true);
  for (int a = 4; a < argc; ++a) {
    // name:cubin:kind(d|s):gridx:gridy:block:smem
    char name[256], cubin[256], kind; int gx, gy, bx, smem;
    char* s = argv[a]; for (char* c = s; *c; ++c) if (*c == ':') *c = ' ';
    sscanf(s, "%255s %255s %c %d %d %d %d", name, cubin, &kind, &gx, &gy, &bx, &smem);
    CUmodule mod; CUfunction f;
    CK(cuModuleLoad(&mod, cubin));
    CK(cuModuleGetFunction(&f, mod, kind == 'd' ? "dg_diff_0" : "dg_diff_stacked_0"));
    CK(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem));
    void* pd[] = {&Dr, &Ds, &Dt, &u, &ur, &us, &ut};
    void* ps[] = {&D, &u, &w};
    auto launch = [&] { CK(cuLaunchKernel(f, gx, gy, 1, bx, 1, 1, smem, 0, kind == 'd' ? pd : ps, nullptr)); };
    CR(cudaMemset(kind == 'd' ? o3 : w, 0xff, 3 * nu * 4));
    float t = timeIt(launch);
    CR(cudaDeviceSynchronize());
    printf("%s (%s): %.4f ms, %.1f GF/s, %.2fx cublasSgemm\n", name, kind == 'd' ? "dg_diff" : "dg_diff_stacked", t, flops / t / 1e6, tc / t);
    verify(kind == 's');
    CK(cuModuleUnload(mod));
  }
  return 0;
}
