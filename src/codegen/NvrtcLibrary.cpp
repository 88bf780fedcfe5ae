#include "codegen/NvrtcLibrary.h"

#include "support/Error.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <vector>

namespace rtcg::detail {
namespace {

namespace fs = std::filesystem;

// The NVRTC sonames rtcg can use, newest first (its calls are all in CUDA 12's NVRTC).
constexpr const char* kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12"};
// Where NVIDIA's NVRTC wheels put the library, relative to site-packages.
constexpr const char* kWheelFiles[] = {"nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cuda_nvrtc/lib/libnvrtc.so.12"};

// Loads `name` (a soname or a path) and resolves every entry; on failure adds why to `tried`.
std::optional<NvrtcTable> load(const std::string& name, std::vector<std::string>& tried) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    tried.push_back(why ? why : name + ": cannot be loaded");
    return std::nullopt;
  }
  NvrtcTable t;
  bool complete = true;
#define RTCG_NVRTC_RESOLVE_ENTRY(member, symbol)                                           \
  t.member = reinterpret_cast<decltype(t.member)>(dlsym(handle, #symbol));                \
  if (!t.member) {                                                                         \
    tried.push_back(fmt::format("{}: has no {} (an NVRTC older than CUDA 12?)", name, #symbol)); \
    complete = false;                                                                      \
  }
  RTCG_NVRTC_ENTRIES(RTCG_NVRTC_RESOLVE_ENTRY)
#undef RTCG_NVRTC_RESOLVE_ENTRY
  if (!complete) {
    dlclose(handle);
    return std::nullopt;
  }
  t.path = name;
  return t;
}

// The folders of the binaries rtcg runs in: the file holding this code (the Python extension, or
// an executable) and the process's executable, as real paths.
std::vector<fs::path> ownFolders() {
  std::vector<fs::path> out;
  std::error_code ec;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&tryNvrtcLibrary), &info) && info.dli_fname && *info.dli_fname) {
    fs::path p = fs::canonical(info.dli_fname, ec);
    if (!ec) out.push_back(p.parent_path());
  }
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec && (out.empty() || exe.parent_path() != out.front())) out.push_back(exe.parent_path());
  return out;
}

// Candidate library files of the CUDA toolkit and of NVIDIA's wheel, in search order.
std::vector<std::string> candidateFiles() {
  std::vector<std::string> out;
  for (const char* var : {"CUDA_PATH", "CUDA_HOME"})
    if (const char* dir = std::getenv(var); dir && *dir)
      for (const char* soname : kSonames) out.push_back(fmt::format("{}/lib64/{}", dir, soname));
  for (const char* soname : kSonames) out.push_back(fmt::format("/usr/local/cuda/lib64/{}", soname));
  // The wheel: site-packages is the folder above rtcg/ (the extension) or rtcg/bin/ (the tools).
  for (const fs::path& folder : ownFolders()) {
    fs::path dir = folder;
    for (int up = 0; up < 3 && !dir.empty(); ++up, dir = dir.parent_path())
      for (const char* file : kWheelFiles) out.push_back((dir / file).string());
  }
  return out;
}

std::optional<NvrtcTable> find(std::string& failure) {
  std::vector<std::string> tried;
  if (const char* forced = std::getenv("RTCG_NVRTC_LIBRARY"); forced && *forced) {
    if (auto t = load(forced, tried)) return t;
    failure = fmt::format("RTCG_NVRTC_LIBRARY={} does not load as NVRTC: {}", forced, tried.back());
    return std::nullopt;
  }
  for (const char* soname : kSonames)
    if (auto t = load(soname, tried)) return t;
  for (const std::string& file : candidateFiles()) {
    std::error_code ec;
    if (!fs::exists(file, ec)) continue;
    if (auto t = load(file, tried)) return t;
  }
  std::string why;
  for (const std::string& t : tried) why += "\n  " + t;
  failure = fmt::format(
      "NVRTC (libnvrtc.so.13) was not found: rtcg compiles CUDA C with it at run time. Install either\n"
      "  - the CUDA toolkit (13 or 12; its lib64 folder in /usr/local/cuda, CUDA_PATH, CUDA_HOME or "
      "LD_LIBRARY_PATH), or\n"
      "  - NVIDIA's NVRTC wheel beside rtcg: pip install nvidia-cuda-nvrtc (or pip install 'rtcg[nvrtc]'),\n"
      "or name the library's file in RTCG_NVRTC_LIBRARY. Tried:{}",
      why);
  return std::nullopt;
}

struct Loaded {
  std::optional<NvrtcTable> table;
  std::string failure;
};

const Loaded& loaded() {
  static const Loaded l = [] {
    Loaded r;
    r.table = find(r.failure);
    return r;
  }();
  return l;
}

}  // namespace

const NvrtcTable* tryNvrtcLibrary() {
  const Loaded& l = loaded();
  return l.table ? &*l.table : nullptr;
}

const NvrtcTable& nvrtcLibrary() {
  const Loaded& l = loaded();
  if (!l.table) throw Error(l.failure);
  return *l.table;
}

}  // namespace rtcg::detail
