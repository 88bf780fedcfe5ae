// A raw CUDA module (CUDA C of one's own, examples/cuda/axpy_tiled.cu) compiled at run time with
// rtcg: compiled through rtcg's NVRTC route and kernel cache, launched on device arrays with its
// arguments checked first (a wrong one is refused before the launch), then tuned over the macro
// TILE and the block size against the module's reference kernel, the results in rtcg's tuning
// database, and the winner rebuilt, checked and timed.
//
//   raw_module [PATH/TO/axpy_tiled.cu]     (default: the source tree's copy)
//
// Exits 0 when every result matches the host loop, 1 when one does not (or on an error), 4
// without a CUDA driver or device.
#include <rtcg/rtcg.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "launch_timing.h"

#ifndef RTCG_EMBED_RAW_SOURCE
#define RTCG_EMBED_RAW_SOURCE "axpy_tiled.cu"
#endif

namespace {

std::string readText(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw rtcg::Error("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Elements of y that differ from a x + y0 computed on the host.
int mismatches(const std::vector<float>& y, const std::vector<float>& x, const std::vector<float>& y0, float a) {
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) bad += y[i] != a * x[i] + y0[i];
  return bad;
}

rtcg::LaunchConfig geometry(int n, int tile, int block) {
  return {{(n + tile * block - 1) / (tile * block)}, {block}};
}

}  // namespace

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : RTCG_EMBED_RAW_SOURCE;
  const int n = 1 << 24 | 7;  // no tile divides it
  const float a = 0.5f;
  try {
    const std::string source = readText(path);
    rtcg::Context ctx;
    std::vector<float> hostX(n), hostY(n);
    for (int i = 0; i < n; ++i) hostX[i] = float(i % 1013) - 500.0f, hostY[i] = float(i % 7);
    rtcg::Array<float> x = ctx.upload(hostX), y = ctx.upload(hostY);

    // Compile (or read from the kernel cache) with TILE = 4, and launch.
    rtcg::RawModule module = ctx.module(source, {{"-DTILE=4"}, "axpy_tiled.cu", {}});
    rtcg::RawFunction axpy = module.function("axpy_tiled");
    axpy.launch(geometry(n, 4, 256), n, a, x, y);  // the legacy default stream; LaunchConfig::stream for another
    ctx.synchronize();
    int bad = mismatches(y.download(), hostX, hostY, a);
    std::printf("axpy_tiled (TILE=4%s) on %s: %d mismatches of %d\n",
                module.loadedFromDiskCache() ? ", from the disk cache" : "", ctx.device().name.c_str(), bad, n);

    // A double where the kernel takes a float: refused before anything runs.
    try {
      axpy.launch(geometry(n, 4, 256), n, 0.5, x, y);
      std::printf("a wrong argument was launched\n");
      bad += 1;
    } catch (const rtcg::Error& e) {
      std::printf("refused before the launch: %s\n", e.what());
    }

    // Tune TILE and the block size against the reference kernel (y is read and written: its values
    // are restored before each verifying launch, not poisoned).
    y.upload(hostY);
    rtcg::RawTuneOptions tune;
    tune.function = "axpy_tiled";
    tune.space = {{"TILE", {"1", "2", "4", "8"}}, {"BLOCK", {"128", "256", "512"}}};
    tune.geometry = [&](const rtcg::RawVariant& v) {
      return geometry(n, std::stoi(v.at("TILE")), std::stoi(v.at("BLOCK")));
    };
    tune.reference = module.function("axpy_reference");
    tune.referenceConfig = geometry(n, 1, 256);
    tune.outputs = {3};
    tune.poisonOutputs = false;
    tune.problem = "n=" + std::to_string(n);
    tune.log = [](const std::string& line) { std::printf("  %s\n", line.c_str()); };
    rtcg::RawTuneResult result = ctx.tuneModule(source, {{}, "axpy_tiled.cu", {}}, tune, n, a, x, y);
    if (!result.best) {
      std::printf("no variant verified\n");
      return 1;
    }
    std::printf("best: %s, %.4f ms (%s; tuning key %s)\n", result.best->text.c_str(), result.best->medianMs,
                result.fromDatabase ? "from the tuning database" : "measured now", result.kernelHash.c_str());

    // The winner, built with its options, on fresh values.
    y.upload(hostY);
    rtcg::RawFunction best = ctx.module(source, {result.bestOptions, "axpy_tiled.cu", {}}).function("axpy_tiled");
    const rtcg::LaunchConfig config = tune.geometry(result.best->variant);
    best.launch(config, n, a, x, y);
    ctx.synchronize();
    int bestBad = mismatches(y.download(), hostX, hostY, a);
    std::printf("best variant: %d mismatches; %.4f ms per launch (wall clock, synchronous)\n", bestBad,
                embed::medianLaunchMs([&] {
                  best.launch(config, n, a, x, y);
                  ctx.synchronize();
                }));
    return bad == 0 && bestBad == 0 ? 0 : 1;
  } catch (const rtcg::NoDeviceError& e) {
    std::fprintf(stderr, "raw_module: no CUDA device, nothing to run: %s\n", e.what());
    return 4;
  } catch (const rtcg::Error& e) {
    std::fprintf(stderr, "raw_module: error: %s\n", e.what());
    return 1;
  }
}
