// What the embedding examples print about a compiled kernel: the schedule it was built with and
// where that came from (CompiledKernel::scheduleOrigin(): "default", "tuning database", "tuned" or
// "explicit"), and its time per launch.
//
// The public API has no event timing: every launch is synchronous (it returns when the kernel is
// done), so the time is wall-clock (std::chrono::steady_clock) around single launches on device
// arrays, after warm-up launches, median of the timed ones. It includes the launch and
// synchronization overhead (a few microseconds), which dominates for very small kernels.
#pragma once

#include <rtcg/rtcg.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace embed {

constexpr int kWarmupLaunches = 3;
constexpr int kTimedLaunches = 20;

// Median wall-clock milliseconds of one call of `launch` (a synchronous kernel launch).
template <class Launch>
double medianLaunchMs(Launch&& launch) {
  for (int i = 0; i < kWarmupLaunches; ++i) launch();
  std::vector<double> ms;
  for (int i = 0; i < kTimedLaunches; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    launch();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return ms[ms.size() / 2];
}

//   matmul: schedule (default): i: grid.y, thread.y 1; j: grid.x, thread.x 32; k: serial
//   matmul: time 0.4123 ms per launch (default schedule; wall clock, median of 20 synchronous launches after 3 warm-up)
inline void printScheduleAndTime(const rtcg::CompiledKernel& k, double ms) {
  std::printf("%s: schedule (%s): %s\n", k.name().c_str(), k.scheduleOrigin().c_str(), k.scheduleText().c_str());
  std::printf("%s: time %.4f ms per launch (%s schedule; wall clock, median of %d synchronous launches after %d "
              "warm-up)\n",
              k.name().c_str(), ms, k.scheduleOrigin().c_str(), kTimedLaunches, kWarmupLaunches);
}

}  // namespace embed
