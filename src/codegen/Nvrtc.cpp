#include "codegen/Nvrtc.h"

#include "codegen/CubinInfo.h"

#include <fmt/format.h>
#include <nvrtc.h>
#include <regex>
#include <sstream>

namespace rtcg {

const KernelResources* CudaCompileResult::find(const std::string& kernel) const {
  for (const KernelResources& r : resources)
    if (r.name == kernel) return &r;
  return nullptr;
}

std::vector<KernelResources> parsePtxasInfo(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::vector<KernelResources> out;
  std::istringstream in(log);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({m[1].str()});
    } else if (out.empty()) {
      continue;
    } else if (std::regex_search(line, m, frame)) {
      out.back().localBytes = std::stoi(m[1].str());
      out.back().spillStoreBytes = std::stoi(m[2].str());
      out.back().spillLoadBytes = std::stoi(m[3].str());
    } else if (std::regex_search(line, m, used)) {
      out.back().registers = std::stoi(m[1].str());
      if (std::regex_search(line, m, smem)) out.back().sharedBytes = std::stoi(m[1].str());
    }
  }
  return out;
}

namespace {

// Owns an nvrtcProgram for the duration of one compilation.
struct Program {
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtcDestroyProgram(&handle);
  }
};

std::string programLog(nvrtcProgram p) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
  log.resize(size - 1);  // drop the terminating NUL
  return log;
}

}  // namespace

CudaCompileResult compileCuda(const std::string& source, const std::string& name, const std::string& arch,
                              const std::vector<std::string>& extraOptions, bool wantPtx) {
  CudaCompileResult r;
  const bool real = arch.rfind("sm_", 0) == 0;
  if (!real && arch.rfind("compute_", 0) != 0) {
    r.log = fmt::format("unknown GPU architecture '{}' (expected sm_XX or compute_XX)", arch);
    return r;
  }
  Program prog;
  nvrtcResult rc = nvrtcCreateProgram(&prog.handle, source.c_str(), name.c_str(), 0, nullptr, nullptr);
  if (rc != NVRTC_SUCCESS) {
    r.log = fmt::format("nvrtcCreateProgram failed: {}", nvrtcGetErrorString(rc));
    return r;
  }
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17"};
  if (real) options.push_back("--ptxas-options=-v");  // resource use, read back from the log
  options.insert(options.end(), extraOptions.begin(), extraOptions.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  rc = nvrtcCompileProgram(prog.handle, (int)argv.size(), argv.data());
  r.log = programLog(prog.handle);
  if (rc != NVRTC_SUCCESS) {
    r.log = fmt::format("NVRTC could not compile '{}' for {}: {}\n{}", name, arch, nvrtcGetErrorString(rc), r.log);
    return r;
  }
  if (real) {
    size_t size = 0;
    if ((rc = nvrtcGetCUBINSize(prog.handle, &size)) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetCUBINSize failed: {}", nvrtcGetErrorString(rc));
      return r;
    }
    r.cubin.resize(size);
    if ((rc = nvrtcGetCUBIN(prog.handle, r.cubin.data())) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetCUBIN failed: {}", nvrtcGetErrorString(rc));
      r.cubin.clear();
      return r;
    }
    r.resources = parsePtxasInfo(r.log);
    // Some NVRTC builds (13.0.88 on the GPU host) return an empty log for some kernels: read
    // what the cubin itself records instead.
    if (r.resources.empty()) r.resources = resourcesFromCubin(std::string_view(r.cubin.data(), r.cubin.size()));
  }
  if (wantPtx || !real) {
    size_t size = 0;
    if ((rc = nvrtcGetPTXSize(prog.handle, &size)) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetPTXSize failed: {}", nvrtcGetErrorString(rc));
      return r;
    }
    r.ptx.assign(size, '\0');
    if ((rc = nvrtcGetPTX(prog.handle, r.ptx.data())) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetPTX failed: {}", nvrtcGetErrorString(rc));
      r.ptx.clear();
      return r;
    }
    if (!r.ptx.empty() && r.ptx.back() == '\0') r.ptx.pop_back();
  }
  r.success = true;
  return r;
}

std::vector<std::string> nvrtcOptions() { return {}; }

std::string nvrtcVersionString() {
  int major = 0, minor = 0;
  if (nvrtcVersion(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

}  // namespace rtcg
