// The default test run samples its longest loops (host emulations, exhaustive space walks, NVRTC
// compiles) so that ctest stays within minutes on two shared cores; RTCG_FULL_TESTS=1 (or
// `ctest -L long`, which sets it) runs every case. The sample is deterministic, never random: a
// failure in the default run reproduces, and each test still runs cases of every family it covers.
#pragma once

#include <cstdlib>
#include <cstring>

namespace rtcgtest {

inline bool fullTests() {
  const char* v = std::getenv("RTCG_FULL_TESTS");
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// Keeps one case in `stride` (the first, then every stride-th) unless the full set runs. A test
// asks keep() once per case, in a fixed order, so the sample is the same on every run.
class CaseSample {
 public:
  explicit CaseSample(int stride) : stride_(fullTests() ? 1 : stride) {}
  bool keep() { return count_++ % stride_ == 0; }
  int stride() const { return stride_; }

 private:
  int stride_;
  int count_ = 0;
};

}  // namespace rtcgtest
