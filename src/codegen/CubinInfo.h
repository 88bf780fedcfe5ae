// Resource use of each kernel read from a cubin (an ELF file), for when NVRTC's log carries no
// ptxas -v lines (seen with NVRTC 13.0.88 on the GPU host: an empty log for some kernels).
#pragma once

#include <string_view>
#include <vector>

#include "codegen/Nvrtc.h"

namespace rtcg {

// Registers (EIATTR_REGCOUNT) and stack frame bytes (EIATTR_FRAME_SIZE) from the `.nv.info`
// section, static shared memory from the size of `.nv.shared.<kernel>` (less the 1 KiB that
// sm_80 and later reserve per block, which the section includes). Spill byte counts are not
// in the cubin and stay 0. Returns nothing for input that is not a well-formed 64-bit ELF cubin
// (never reads out of bounds).
std::vector<KernelResources> resourcesFromCubin(std::string_view cubin);

}  // namespace rtcg
