// A 500 x 500 matrix product compiled at run time with rtcg, checked against a host loop in double,
// then timed. It prints the schedule and where it came from: the default schedule, or the tuning
// database's best when `rtcgc tune --manifest kernels.json` (the manifest rtcg-scan writes while
// this project builds) has tuned it for this device. Both use the default tuning database
// ($RTCG_TUNING_DB, else in $RTCG_CACHE_DIR, else in $XDG_DATA_HOME/rtcg or ~/.local/share/rtcg).
#include <rtcg/rtcg.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "launch_timing.h"

int main() {
  const int n = 500;
  try {
    rtcg::Context ctx;  // device 0; throws rtcg::NoDeviceError without a driver or device
    // The default policy (Tuning::UseCached): the tuning database's schedule when it has one.
    rtcg::CompiledKernel mm = ctx.compile(R"(
      kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
        for i in 0..n, j in 0..n {
          c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
        }
      })",
                                          {{"n", n}});

    std::mt19937 rng(1);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> hostA(n * n), hostB(n * n);
    for (float& x : hostA) x = uniform(rng);
    for (float& x : hostB) x = uniform(rng);

    rtcg::Array<float> a = ctx.upload(hostA), b = ctx.upload(hostB), c = ctx.empty<float>(n * n);
    mm(a, b, c);  // returns when the result is ready
    std::vector<float> hostC = c.download();

    double errSq = 0, refSq = 0;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double ref = 0;
        for (int k = 0; k < n; ++k) ref += double(hostA[i * n + k]) * hostB[k * n + j];
        errSq += (hostC[i * n + j] - ref) * (hostC[i * n + j] - ref);
        refSq += ref * ref;
      }
    double rel = std::sqrt(errSq / refSq);
    std::printf("%s on %s (%s): relative error %.3g%s\n", mm.signature().c_str(), ctx.device().name.c_str(),
                ctx.device().arch().c_str(), rel, mm.loadedFromDiskCache() ? " (kernel from the disk cache)" : "");
    embed::printScheduleAndTime(mm, embed::medianLaunchMs([&] { mm(a, b, c); }));
    return rel < 1e-5 ? 0 : 1;
  } catch (const rtcg::NoDeviceError& e) {
    std::fprintf(stderr, "matmul: no CUDA device, nothing to run: %s\n", e.what());
    return 4;
  } catch (const rtcg::Error& e) {
    std::fprintf(stderr, "matmul: error: %s\n", e.what());
    return 1;
  }
}
