// DG element-local differentiation (examples/dg_diff.rtcg) for K = 100000 elements of Np = 20 nodes,
// compiled at run time with rtcg and checked against host loops in double. The host vectors are
// passed directly: inputs are copied to the device, outputs copied back. The kernel is then timed
// on device arrays, and the program prints its schedule and where it came from (the default
// schedule, or the tuning database's best after `rtcgc tune --manifest kernels.json`; see
// matmul.cpp and CMakeLists.txt).
#include <rtcg/rtcg.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "launch_timing.h"

namespace {

const char* const kDgDiff = R"(
// DG element-local differentiation: three derivative matrices applied to the nodal values of
// K elements with Np nodes each. One loop nest, so u[k, j] is loaded once for all three.
kernel dg_diff(K: int, Np: int,
               Dr: f32[Np, Np], Ds: f32[Np, Np], Dt: f32[Np, Np], u: f32[K, Np],
               out ur: f32[K, Np], out us: f32[K, Np], out ut: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, Dr[i, j] * u[k, j]);
    us[k, i] = sum(j in 0..Np, Ds[i, j] * u[k, j]);
    ut[k, i] = sum(j in 0..Np, Dt[i, j] * u[k, j]);
  }
}
)";

// ||out - D u|| / ||D u|| over all elements, with D u computed in double.
double relativeError(const std::vector<float>& D, const std::vector<float>& u, const std::vector<float>& out, int K,
                     int Np) {
  double errSq = 0, refSq = 0;
  for (int k = 0; k < K; ++k)
    for (int i = 0; i < Np; ++i) {
      double ref = 0;
      for (int j = 0; j < Np; ++j) ref += double(D[i * Np + j]) * u[k * Np + j];
      errSq += (out[k * Np + i] - ref) * (out[k * Np + i] - ref);
      refSq += ref * ref;
    }
  return std::sqrt(errSq / refSq);
}

}  // namespace

int main() {
  const int K = 100000, Np = 20;
  try {
    rtcg::Context ctx;
    rtcg::CompileOptions options;
    options.fileName = "dg_diff.rtcg";  // named in diagnostics
    rtcg::CompiledKernel diff = ctx.compile(kDgDiff, {{"K", K}, {"Np", Np}}, options);

    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    std::vector<float> Dr(Np * Np), Ds(Np * Np), Dt(Np * Np), u(K * Np);
    for (std::vector<float>* v : {&Dr, &Ds, &Dt, &u})
      for (float& x : *v) x = uniform(rng);
    std::vector<float> ur(K * Np), us(K * Np), ut(K * Np);

    diff(Dr, Ds, Dt, u, ur, us, ut);

    double err = std::max({relativeError(Dr, u, ur, K, Np), relativeError(Ds, u, us, K, Np),
                           relativeError(Dt, u, ut, K, Np)});
    std::printf("%s on %s: max relative error %.3g\n", diff.signature().c_str(), ctx.device().name.c_str(), err);

    // Timed on device arrays: host vectors would add their copies to every launch.
    rtcg::Array<float> dDr = ctx.upload(Dr), dDs = ctx.upload(Ds), dDt = ctx.upload(Dt), du = ctx.upload(u);
    rtcg::Array<float> dur = ctx.empty<float>(K * Np), dus = ctx.empty<float>(K * Np), dut = ctx.empty<float>(K * Np);
    embed::printScheduleAndTime(diff, embed::medianLaunchMs([&] { diff(dDr, dDs, dDt, du, dur, dus, dut); }));
    return err < 1e-5 ? 0 : 1;
  } catch (const rtcg::NoDeviceError& e) {
    std::fprintf(stderr, "dg_diff: no CUDA device, nothing to run: %s\n", e.what());
    return 4;
  } catch (const rtcg::Error& e) {
    std::fprintf(stderr, "dg_diff: error: %s\n", e.what());
    return 1;
  }
}
