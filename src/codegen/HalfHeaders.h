// rtcg's own cuda_fp16.h and cuda_bf16.h for NVRTC. NVRTC has no built-in copy of the CUDA
// toolkit's headers (13.0 reports "could not open source file" without an include path), and an
// application that embeds rtcg need not have the toolkit's include directory. Generated code
// includes these names only for kernels with f16 or bf16 values and uses only what they define:
// the types (2 bytes, as the toolkit's), their bits, the conversions to and from them, each
// rounding once to nearest even, and __ldg/__stcs. The same code compiles with the toolkit's
// headers (nvcc on `rtcgc emit` output), whose functions of these names mean the same.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rtcg {

// (include name, source) of each header, for nvrtcCreateProgram.
const std::vector<std::pair<std::string, std::string>>& nvrtcHalfHeaders();

}  // namespace rtcg
