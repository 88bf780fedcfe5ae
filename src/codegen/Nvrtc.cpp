#include "codegen/Nvrtc.h"
#include "codegen/HalfHeaders.h"

#include "codegen/CubinInfo.h"
#include "codegen/NvrtcLibrary.h"

#include <fmt/format.h>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>
#include <string_view>

namespace rtcg {

const KernelResources* CudaCompileResult::find(const std::string& kernel) const {
  for (const KernelResources& r : resources)
    if (r.name == kernel) return &r;
  return nullptr;
}

namespace {

// The decimal number that ends right before the first `suffix` in `line` (`24` of "24 bytes
// stack frame"), if there is one. Plain string scanning: the log holds kernel names of any length,
// and std::regex recurses per character (a 30 000-character name overflowed the stack).
std::optional<int> numberBefore(std::string_view line, std::string_view suffix) {
  size_t end = line.find(suffix);
  if (end == std::string_view::npos) return std::nullopt;
  size_t begin = end;
  while (begin > 0 && std::isdigit((unsigned char)line[begin - 1])) --begin;
  int value = 0;
  if (begin == end || std::from_chars(line.data() + begin, line.data() + end, value).ec != std::errc()) return std::nullopt;
  return value;
}

// The name of "Compiling entry function 'NAME' for 'sm_90'", if `line` is one.
std::optional<std::string> entryName(std::string_view line) {
  constexpr std::string_view kEntry = "Compiling entry function '";
  size_t begin = line.find(kEntry);
  if (begin == std::string_view::npos) return std::nullopt;
  begin += kEntry.size();
  size_t end = line.find('\'', begin);
  if (end == std::string_view::npos || end == begin) return std::nullopt;
  return std::string(line.substr(begin, end - begin));
}

}  // namespace

std::vector<KernelResources> parsePtxasInfo(const std::string& log) {
  std::vector<KernelResources> out;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (std::optional<std::string> name = entryName(line)) {
      out.push_back({*name});
    } else if (out.empty()) {
      continue;
    } else if (auto frame = numberBefore(line, " bytes stack frame, ")) {
      out.back().localBytes = *frame;
      out.back().spillStoreBytes = numberBefore(line, " bytes spill stores").value_or(0);
      out.back().spillLoadBytes = numberBefore(line, " bytes spill loads").value_or(0);
    } else if (auto used = numberBefore(line, " registers"); used && line.find("Used ") != std::string::npos) {
      out.back().registers = *used;
      if (auto smem = numberBefore(line, " bytes smem")) out.back().sharedBytes = *smem;
    }
  }
  return out;
}

namespace {

// Owns an nvrtcProgram for the duration of one compilation.
struct Program {
  const detail::NvrtcTable& nvrtc;
  nvrtcProgram handle = nullptr;
  ~Program() {
    if (handle) nvrtc.destroyProgram(&handle);
  }
};

std::string programLog(const detail::NvrtcTable& nvrtc, nvrtcProgram p) {
  size_t size = 0;
  if (nvrtc.getProgramLogSize(p, &size) != NVRTC_SUCCESS || size <= 1) return "";
  std::string log(size, '\0');
  if (nvrtc.getProgramLog(p, log.data()) != NVRTC_SUCCESS) return "";
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
  const detail::NvrtcTable& nvrtc = detail::nvrtcLibrary();  // throws rtcg::Error where there is none
  Program prog{nvrtc};
  // rtcg's cuda_fp16.h and cuda_bf16.h (HalfHeaders.h): NVRTC reads a header only where the
  // source includes it, so other kernels compile as before.
  std::vector<const char*> headers, includeNames;
  for (const auto& [include, text] : nvrtcHalfHeaders()) {
    includeNames.push_back(include.c_str());
    headers.push_back(text.c_str());
  }
  nvrtcResult rc = nvrtc.createProgram(&prog.handle, source.c_str(), name.c_str(), int(headers.size()), headers.data(),
                                      includeNames.data());
  if (rc != NVRTC_SUCCESS) {
    r.log = fmt::format("nvrtcCreateProgram failed: {}", nvrtc.getErrorString(rc));
    return r;
  }
  std::vector<std::string> options = {"--gpu-architecture=" + arch, "--std=c++17"};
  if (real) options.push_back("--ptxas-options=-v");  // resource use, read back from the log
  options.insert(options.end(), extraOptions.begin(), extraOptions.end());
  std::vector<const char*> argv;
  for (const std::string& o : options) argv.push_back(o.c_str());

  rc = nvrtc.compileProgram(prog.handle, (int)argv.size(), argv.data());
  r.log = programLog(nvrtc, prog.handle);
  if (rc != NVRTC_SUCCESS) {
    r.log = fmt::format("NVRTC could not compile '{}' for {}: {}\n{}", name, arch, nvrtc.getErrorString(rc), r.log);
    return r;
  }
  if (real) {
    size_t size = 0;
    if ((rc = nvrtc.getCUBINSize(prog.handle, &size)) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetCUBINSize failed: {}", nvrtc.getErrorString(rc));
      return r;
    }
    r.cubin.resize(size);
    if ((rc = nvrtc.getCUBIN(prog.handle, r.cubin.data())) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetCUBIN failed: {}", nvrtc.getErrorString(rc));
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
    if ((rc = nvrtc.getPTXSize(prog.handle, &size)) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetPTXSize failed: {}", nvrtc.getErrorString(rc));
      return r;
    }
    r.ptx.assign(size, '\0');
    if ((rc = nvrtc.getPTX(prog.handle, r.ptx.data())) != NVRTC_SUCCESS) {
      r.log += fmt::format("\nnvrtcGetPTX failed: {}", nvrtc.getErrorString(rc));
      r.ptx.clear();
      return r;
    }
    if (!r.ptx.empty() && r.ptx.back() == '\0') r.ptx.pop_back();
  }
  r.success = true;
  return r;
}

std::vector<std::string> nvrtcOptions() { return {}; }

bool nvrtcNeedsSm90a(const std::string& source) { return source.find("\n// rtcg-arch: sm_90a") != std::string::npos; }

std::string nvrtcArchFor(const std::string& source, const std::string& arch) {
  if ((arch == "sm_90" || arch == "compute_90") && nvrtcNeedsSm90a(source)) return arch + "a";
  return arch;
}

std::string nvrtcVersionString() {
  const detail::NvrtcTable* nvrtc = detail::tryNvrtcLibrary();
  int major = 0, minor = 0;
  if (!nvrtc || nvrtc->version(&major, &minor) != NVRTC_SUCCESS) return "unknown";
  return fmt::format("{}.{}", major, minor);
}

}  // namespace rtcg
