// app.cpp with the typo fixed and the kernel moved to a header (the test copies this over app.cpp).
#include <rtcg/rtcg.h>

#include <vector>

#include "kernels.h"

void scaleOnDevice(rtcg::Context& ctx, std::vector<float>& x, std::vector<float>& y) {
  auto scale = ctx.compile(kScaleSource, {{"n", 1024}});
  scale(2.0f, x, y);
}
