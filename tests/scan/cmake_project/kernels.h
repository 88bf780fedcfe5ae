// The kernel of app_fixed.cpp, defined in a header: editing it must rerun the scan.
#pragma once
#include <string_view>

constexpr std::string_view kScaleSource = R"(
kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = alpha * x[i]; }
})";
