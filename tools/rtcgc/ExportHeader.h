// The C++ header `rtcgc export` writes beside the cubins: a class per exported kernel that loads
// the cubin suiting the current context's device and launches every nest through the CUDA driver
// API, so that an application ships tuned kernels with neither NVRTC nor rtcg's front end. Sizes
// are baked in (as in the cubins); the launch checks each array's device allocation (16-byte
// aligned, long enough for the bound shape) and takes scalars only of their exact C++ type.
#pragma once

#include <string>
#include <vector>

#include "codegen/Emitter.h"
#include "ir/IR.h"

namespace rtcg {

// One architecture of an export: its cubin (a file name beside the header) and the launches of
// the module compiled for it (a tuned schedule may differ between architectures).
struct ExportedImage {
  std::string arch;       // "sm_90"
  std::string cubinFile;  // "matmul.sm_90.cubin"
  std::string schedule;   // the schedule's text, for the header's comment
  std::vector<LaunchSpec> launches;
};

// The header's text for the bound kernel `k`; `origin` is a line for its first comment (source
// file, rtcg version). The class is named after the kernel, in namespace rtcg_export.
std::string exportHeader(const Kernel& k, const std::vector<ExportedImage>& images, const std::string& origin);

// "matmul.h": the header's file name.
std::string exportHeaderName(const Kernel& k);

}  // namespace rtcg
