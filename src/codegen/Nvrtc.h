// Compiling CUDA C to device code with NVRTC, in process. Thread-safe: each call owns its NVRTC
// program, so the tuner may compile from several threads at once.
#pragma once

#include <string>
#include <vector>

namespace rtcg {

// What ptxas reports for one __global__ function (from its -v output).
struct KernelResources {
  std::string name;
  int registers = 0;      // per thread
  int sharedBytes = 0;    // static shared memory per block
  int localBytes = 0;     // stack frame per thread (local memory, spills included)
  int spillStoreBytes = 0;
  int spillLoadBytes = 0;
  // False where the resources come from the cubin (resourcesFromCubin), which records no spills:
  // its stack frame (localBytes) then stands for them.
  bool spillsKnown = true;
};

struct CudaCompileResult {
  bool success = false;
  std::string log;                // NVRTC's log (errors, warnings, ptxas info lines)
  std::vector<char> cubin;        // for a real architecture (sm_XX)
  std::string ptx;                // when asked for, or always for a virtual one (compute_XX)
  std::vector<KernelResources> resources;  // per kernel; empty for a virtual architecture
  const KernelResources* find(const std::string& kernel) const;  // nullptr if absent
};

// Compiles `source` (named `name` in messages) for `arch` ("sm_90", or a virtual "compute_90"
// for which only PTX is produced). `extraOptions` are passed to NVRTC as they are. Never throws
// for bad CUDA source: success is false and the log says why.
CudaCompileResult compileCuda(const std::string& source, const std::string& name,
                              const std::string& arch = "sm_90",
                              const std::vector<std::string>& extraOptions = {}, bool wantPtx = false);

// Parses the ptxas `-v` lines of an NVRTC log into per-kernel resources.
std::vector<KernelResources> parsePtxasInfo(const std::string& log);

// The NVRTC options rtcg compiles generated code with: every route to NVRTC (the pipeline, the
// kernel cache, the tuner's compile workers) passes these, and they are part of every cubin key.
std::vector<std::string> nvrtcOptions();

// The architecture to compile `source` for when the target is `arch`: a module whose source holds
// the line "// rtcg-arch: sm_90a" (wgmma schedules: arch-specific instructions, whose cubin loads
// only on sm_90) compiles for sm_90a where the target is sm_90 (its own features are a superset);
// every other module and target as given.
std::string nvrtcArchFor(const std::string& source, const std::string& arch);
bool nvrtcNeedsSm90a(const std::string& source);  // whether the source holds that line

// "13.0": the NVRTC library loaded at run time ("unknown" if it cannot say); part of cubin and
// tuning keys.
std::string nvrtcVersionString();

}  // namespace rtcg
