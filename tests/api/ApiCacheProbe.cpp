// api_cache_probe: a fresh process that compiles one kernel through the public API, runs it, and
// prints one line of key=value facts, for the cross-process disk-cache tests and the cold/warm
// start-up timing:
//
//   api_cache_probe N   ->  context_ms=... compile_ms=... from_disk=0|1 nvrtc=.. disk=.. memory=..
//                           rel_error=...
//
// compile_ms is the time from the DSL string to a launchable kernel (Context::compile). The kernel
// is matmul of size N; the result is checked against a host loop in double.
// Exit codes: 0 ok, 1 bad result or usage, 4 no CUDA device.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "rtcg/rtcg.h"

namespace {

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: api_cache_probe N\n");
    return 1;
  }
  const int n = std::atoi(argv[1]);
  if (n <= 0) {
    std::fprintf(stderr, "api_cache_probe: N must be a positive integer\n");
    return 1;
  }
  try {
    auto t0 = std::chrono::steady_clock::now();
    rtcg::Context ctx;
    double contextMs = msSince(t0);
    t0 = std::chrono::steady_clock::now();
    rtcg::CompiledKernel mm = ctx.compile(kMatmul, {{"n", n}});
    double compileMs = msSince(t0);

    std::vector<float> a(size_t(n) * n), b(size_t(n) * n), c(size_t(n) * n);
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = float(int(i * 7 % 13) - 6) / 8.0f;
      b[i] = float(int(i * 5 % 11) - 5) / 4.0f;
    }
    mm(a, b, c);
    double num = 0, den = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int k = 0; k < n; ++k) s += double(a[size_t(i) * n + k]) * b[size_t(k) * n + j];
        num += (c[size_t(i) * n + j] - s) * (c[size_t(i) * n + j] - s);
        den += s * s;
      }
    double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    rtcg::Context::CacheStats st = ctx.cacheStats();
    std::printf("context_ms=%.3f compile_ms=%.3f from_disk=%d nvrtc=%d disk=%d memory=%d rel_error=%.3g\n",
                contextMs, compileMs, mm.loadedFromDiskCache() ? 1 : 0, st.nvrtc, st.disk, st.memory, rel);
    return rel < 1e-5 ? 0 : 1;
  } catch (const rtcg::NoDeviceError& e) {
    std::fprintf(stderr, "api_cache_probe: %s\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "api_cache_probe: error: %s\n", e.what());
    return 1;
  }
}
