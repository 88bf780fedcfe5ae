// The state behind rtcg::RawModule and rtcg::RawFunction (include/rtcg/rtcg.h), shared by the
// API's raw-module files (RawModule.cpp: compile, load, launch; RawTune.cpp: the tuning loop).
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/ContextImpl.h"
#include "driver/RawModule.h"
#include "rtcg/rtcg.h"
#include "runtime/Module.h"

namespace rtcg::detail {

struct RawModuleImpl {
  std::shared_ptr<ContextImpl> context;
  std::string text, fileName;
  raw::ModuleImage image;  // cubin, entries (the lowered signatures), NVRTC's warnings
  cuda::Module module;
  bool fromDisk = false;
};

struct RawFunctionImpl {
  std::shared_ptr<RawModuleImpl> module;
  cuda::Function function;
  std::vector<raw::Parameter> params;
  std::mutex sharedMutex;
  size_t sharedOptedIn = 0;  // dynamic shared memory this function may use (cuFuncSetAttribute)
};

// The check's view of each argument (raw::argumentMismatch).
std::vector<raw::Argument> describeRawArgs(const std::vector<RawArg>& args);

}  // namespace rtcg::detail
