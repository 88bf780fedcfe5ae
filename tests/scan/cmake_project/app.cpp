// A deliberately broken embedded kernel: `alpah` is a typo for `alpha`.
#include <rtcg/rtcg.h>

#include <vector>

void scaleOnDevice(rtcg::Context& ctx, std::vector<float>& x, std::vector<float>& y) {
  auto scale = ctx.compile(R"(
kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = alpah * x[i]; }
})", {{"n", 1024}});
  scale(2.0f, x, y);
}
