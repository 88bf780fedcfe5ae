// Helpers of the persistent and pingpong wgmma tests: an H200's schedule limits (and fewer
// multiprocessors, so that blocks run several tiles each), a schedule's text planned for one
// nest, and reasons joined for messages.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schedule/Mma.h"
#include "schedule/Schedule.h"

namespace rtcg::testing {

inline ScheduleLimits limitsOf(int64_t multiprocessors) {
  return deviceScheduleLimits(227 * 1024, 1024, multiprocessors, 228 * 1024);
}
inline const ScheduleLimits kH200 = limitsOf(132);
// The same with sm_90's compute capability, which FP64's sm_90 mma shapes need.
inline ScheduleLimits sm90Limits(int64_t multiprocessors = 132) {
  ScheduleLimits l = limitsOf(multiprocessors);
  l.computeCapability = 90;
  return l;
}

// `schedule` (a wgmma clause, ` pingpong` last where it has it) with `words` before its ` pingpong`
// and `tail` after it, in the clause's order: "... stages 2" + " swizzle 128 tma producer
// persistent" + " pingpong" + " resident a".
inline std::string beforePingpong(const std::string& schedule, const std::string& words, const std::string& tail) {
  const size_t at = schedule.find(" pingpong");
  return (at == std::string::npos ? schedule + words : schedule.substr(0, at) + words + " pingpong") + tail;
}

inline std::optional<MmaPlan> plan(const Kernel& k, const std::string& text, const ScheduleLimits& limits,
                                   std::vector<std::string>& reasons) {
  auto parsed = parseSchedule(text);
  EXPECT_TRUE(parsed.schedule) << text << ": " << parsed.error;
  if (!parsed.schedule) return std::nullopt;
  return planMma(k, 0, parsed.schedule->nests[0], limits, reasons);
}

inline std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, "; ")); }

}  // namespace rtcg::testing
