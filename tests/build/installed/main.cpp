// Uses the installed library's API (no GPU needed): find_package(rtcg) gave the include path, the
// library and its dependencies.
#include <rtcg/rtcg.h>

#include <cstdio>

int main() {
  rtcg::CompileOptions options;
  std::printf("rtcg: TuneOnFirstUse takes at most %d candidates by default\n", options.tuneMaxCandidates);
  return options.tuneMaxCandidates > 0 ? 0 : 1;
}
