// Internal to src/codegen: NVRTC's entry points, resolved with dlsym from the NVRTC library found
// at run time, so that nothing links against libnvrtc and rtcg's binaries (the Python wheel's
// extension, rtcgc, rtcg-worker) load on a machine without the CUDA toolkit. nvrtc.h is included
// for its types only. Where the library is looked for, in order (the first that loads wins):
//   1. RTCG_NVRTC_LIBRARY, a file path, if set (then only it);
//   2. libnvrtc.so.13, then .so.12, by the dynamic loader's own search (LD_LIBRARY_PATH, the
//      binary's run path, the ld.so cache);
//   3. the CUDA toolkit: $CUDA_PATH/lib64, $CUDA_HOME/lib64, /usr/local/cuda/lib64;
//   4. NVIDIA's NVRTC wheel (pip install nvidia-cuda-nvrtc: nvidia/cu13/lib/libnvrtc.so.13, or
//      nvidia/cuda_nvrtc/lib/libnvrtc.so.12 for CUDA 12) in the site-packages folder that holds the
//      binary rtcg runs in (the rtcg wheel's rtcg/_rtcg*.so or rtcg/bin/rtcgc).
#pragma once
#include <nvrtc.h>

#include <string>

namespace rtcg::detail {

#define RTCG_NVRTC_ENTRIES(X)                              \
  X(version, nvrtcVersion)                                 \
  X(getErrorString, nvrtcGetErrorString)                   \
  X(getNumSupportedArchs, nvrtcGetNumSupportedArchs)       \
  X(getSupportedArchs, nvrtcGetSupportedArchs)             \
  X(createProgram, nvrtcCreateProgram)                     \
  X(destroyProgram, nvrtcDestroyProgram)                   \
  X(compileProgram, nvrtcCompileProgram)                   \
  X(getProgramLogSize, nvrtcGetProgramLogSize)             \
  X(getProgramLog, nvrtcGetProgramLog)                     \
  X(getCUBINSize, nvrtcGetCUBINSize)                       \
  X(getCUBIN, nvrtcGetCUBIN)                               \
  X(getPTXSize, nvrtcGetPTXSize)                           \
  X(getPTX, nvrtcGetPTX)

struct NvrtcTable {
#define RTCG_NVRTC_DECLARE_ENTRY(member, symbol) decltype(&::symbol) member = nullptr;
  RTCG_NVRTC_ENTRIES(RTCG_NVRTC_DECLARE_ENTRY)
#undef RTCG_NVRTC_DECLARE_ENTRY
  std::string path;  // the file that was loaded
};

// The loaded table (loaded once per process, thread-safe). Throws rtcg::Error naming where it
// looked, the CUDA toolkit and the NVRTC wheel when no NVRTC library loads.
const NvrtcTable& nvrtcLibrary();

// The table if NVRTC loads, else nullptr (for callers that have an answer without it).
const NvrtcTable* tryNvrtcLibrary();

}  // namespace rtcg::detail
