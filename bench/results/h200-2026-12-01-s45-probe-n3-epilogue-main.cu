// Probe (session 45): dg_diff_f64 N3's epilogue forms against cublasDgemm and a copy of the same bytes.
#include <cublas_v2.h>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cmath>
#define CK(x) do { cudaError_t err_ = (x); if (err_ != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(err_)); exit(1); } } while (0)
const int K = 100000, NP = 20, M = 60;
__global__ void copy_mix(const double2* __restrict__ u, double2* __restrict__ w) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < K * 30; i += gridDim.x * blockDim.x) {
    const int k = i / 30, j = i % 30;
    w[i] = u[k * 10 + (j % 10)];
  }
}
typedef void (*Kern)(const double*, const double*, double*);
struct Entry { const char* name; Kern k; int smem; };
int main() {
  std::vector<double> hD(M * NP), hu((size_t)K * NP), ref((size_t)K * M), out((size_t)K * M);
  srand(45);
  for (auto& x : hD) x = rand() / (double)RAND_MAX - 0.5;
  for (auto& x : hu) x = rand() / (double)RAND_MAX - 0.5;
  for (int k = 0; k < K; ++k) for (int m = 0; m < M; ++m) { double s = 0; for (int j = 0; j < NP; ++j) s += hD[m * NP + j] * hu[(size_t)k * NP + j]; ref[(size_t)k * M + m] = s; }
  double *D, *u, *w; char* flush;
  CK(cudaMalloc(&D, hD.size() * 8)); CK(cudaMalloc(&u, hu.size() * 8)); CK(cudaMalloc(&w, ref.size() * 8));
  CK(cudaMalloc(&flush, 256 << 20));
  CK(cudaMemcpy(D, hD.data(), hD.size() * 8, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(u, hu.data(), hu.size() * 8, cudaMemcpyHostToDevice));
  cublasHandle_t h; cublasCreate(&h);
  Entry es[] = {{"plain", k_plain, 55296}, {"streaming", k_stream, 55296}, {"epilogue shared", k_eshared, 69632},
                {"span double2", k_span, 69632}, {"span double2 stcs", k_span_cs, 69632}};
  for (auto& e : es) CK(cudaFuncSetAttribute(e.k, cudaFuncAttributeMaxDynamicSharedMemorySize, e.smem));
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const int n = 6 + 2;
  auto timeit = [&](auto launch) {
    std::vector<float> t;
    for (int r = 0; r < 5; ++r) launch();
    for (int r = 0; r < 40; ++r) {
      CK(cudaMemsetAsync(flush, r, 256 << 20));
      cudaEventRecord(a); launch(); cudaEventRecord(b); CK(cudaEventSynchronize(b));
      float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms);
    }
    std::sort(t.begin(), t.end()); return t[t.size() / 2];
  };
  auto check = [&](auto launch) {
    CK(cudaMemset(w, 0xff, ref.size() * 8)); launch(); CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(out.data(), w, out.size() * 8, cudaMemcpyDeviceToHost));
    double num = 0, den = 0; for (size_t i = 0; i < ref.size(); ++i) { double d = out[i] - ref[i]; num += d * d; den += ref[i] * ref[i]; }
    return std::sqrt(num / den);
  };
  const double bytes = 8.0 * (double(K) * NP + double(K) * M + M * NP);
  for (int pass = 0; pass < 2; ++pass) {
    double one = 1, zero = 0;
    auto peer = [&] { cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, M, K, NP, &one, D, NP, u, NP, &zero, w, M); };
    float tp = timeit(peer);
    printf("pass %d cublasDgemm %.4f ms %.0f GB/s err %.2e\n", pass, tp, bytes / tp / 1e6, check(peer));
    auto cp = [&] { copy_mix<<<132 * 8, 256>>>((const double2*)u, (double2*)w); };
    float tc = timeit(cp);
    printf("pass %d copy(16 MB read, 48 MB written) %.4f ms %.0f GB/s\n", pass, tc, bytes / tc / 1e6);
    for (auto& e : es) {
      auto l = [&] { e.k<<<782, 256, e.smem>>>(D, u, w); };
      float t = timeit(l);
      printf("pass %d %-20s %.4f ms %.0f GB/s %.3fx peer err %.2e\n", pass, e.name, t, bytes / t / 1e6, tp / t, check(l));
    }
  }
}
