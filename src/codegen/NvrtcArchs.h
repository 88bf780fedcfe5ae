// The architectures this NVRTC can compile for, to refuse others as a user error: `--arch sm_999`
// failed inside NVRTC and was reported as a bug in rtcg (exit 3).
#pragma once

#include <string>
#include <vector>

namespace rtcg {

// NVRTC's supported compute capabilities (nvrtcGetSupportedArchs): 75, 80, ..., ascending.
std::vector<int> nvrtcSupportedArchs();  // empty where NVRTC cannot be loaded

// An empty string when `arch` is "sm_XX" or "compute_XX" (optionally with an a/f suffix, as
// sm_90a) for a supported XX; else why not, naming the supported ones.
std::string checkNvrtcArch(const std::string& arch);

}  // namespace rtcg
