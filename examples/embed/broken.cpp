// A deliberately broken embedded kernel, built only with -DRTCG_EMBED_BROKEN=ON: the kernel reads
// `xs`, which is no parameter. rtcg-scan fails the build before this file is compiled, pointing
// into the string literal (the CTest test api_consumer_build_broken expects exactly this):
//
// .../broken.cpp:19:40: error: unknown array 'xs'; did you mean 'x'?
//           for i in 0..n { y[i] = alpha * xs[i]; }
//                                          ^~
// Without the scan the error would show only when the program runs, as an rtcg::Error from compile().
#include <rtcg/rtcg.h>

#include <cstdio>
#include <vector>

int main() {
  try {
    rtcg::Context ctx;
    rtcg::CompiledKernel scale = ctx.compile(R"(
      kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {
        for i in 0..n { y[i] = alpha * xs[i]; }
      })",
                                             {{"n", 1000}});
    std::vector<float> x(1000, 1.0f), y(1000);
    scale(2.0f, x, y);
    std::printf("scale: y[0] = %g\n", y[0]);
    return 0;
  } catch (const rtcg::NoDeviceError& e) {
    std::fprintf(stderr, "broken: no CUDA device, nothing to run: %s\n", e.what());
    return 4;
  } catch (const rtcg::Error& e) {
    std::fprintf(stderr, "broken: error: %s\n", e.what());
    return 1;
  }
}
