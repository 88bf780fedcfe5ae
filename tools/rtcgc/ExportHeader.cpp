#include "ExportHeader.h"

#include <fmt/format.h>

#include <set>

#include "codegen/CudaTypes.h"
#include "ir/Analysis.h"
#include "support/Error.h"

namespace rtcg {

namespace {

// Helpers every exported header shares, guarded so that an application may include the headers of
// several exports in one translation unit.
constexpr const char* kCommon = R"rtcg(#ifndef RTCG_EXPORT_COMMON_V1
#define RTCG_EXPORT_COMMON_V1
namespace rtcg_export {
namespace detail {

// A scalar argument of exactly type T: a double passed for a float parameter (or an int for a
// long long) is a compile-time error instead of a silent conversion.
template <class T>
struct Exact {
  T value;
  template <class U, class = std::enable_if_t<std::is_same_v<U, T>>>
  Exact(U v) : value(v) {}  // NOLINT: implicit on purpose
};

struct Launch {
  const char* function;
  unsigned grid[3], block[3];
  unsigned dynamicSharedBytes;
};

struct Image {
  const char* arch;  // "sm_90"
  int major, minor;
  const char* cubinFile;
  const Launch* launches;
};

inline std::string cudaError(CUresult r, const std::string& what) {
  const char* text = nullptr;
  cuGetErrorString(r, &text);
  return what + ": " + (text ? text : "unknown CUDA error") + " (" + std::to_string(int(r)) + ")";
}

// The image for the current context's device: the same major version, the highest minor not
// above the device's (a cubin runs on later minor versions of its major version).
inline std::string pickImage(const char* kernel, const Image* images, int count, const Image*& chosen) {
  CUdevice device;
  CUresult r = cuCtxGetDevice(&device);
  if (r != CUDA_SUCCESS) return cudaError(r, std::string(kernel) + ": no current CUDA context");
  int major = 0, minor = 0;
  cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
  cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
  chosen = nullptr;
  std::string built;
  for (int i = 0; i < count; ++i) {
    built += std::string(built.empty() ? "" : ", ") + images[i].arch;
    if (images[i].major == major && images[i].minor <= minor && (!chosen || images[i].minor > chosen->minor))
      chosen = &images[i];
  }
  if (chosen) return "";
  return std::string(kernel) + ": no cubin for this device (sm_" + std::to_string(major) + std::to_string(minor) +
         "); exported for " + built + ": export again with --arch sm_" + std::to_string(major) +
         std::to_string(minor);
}

inline std::string readFile(const std::string& path, std::string& data) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot read '" + path + "'";
  data.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return "";
}

// An array argument: a device allocation, 16-byte aligned (the kernels read arrays in 16-byte
// vectors), with at least `bytes` from `p` to its end.
inline std::string checkArray(const char* kernel, const char* name, CUdeviceptr p, unsigned long long bytes) {
  std::string where = std::string(kernel) + ": array '" + name + "'";
  if (p % 16 != 0) return where + " is not 16-byte aligned (every device allocation is)";
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = cuMemGetAddressRange(&base, &size, p);
  if (r != CUDA_SUCCESS) return cudaError(r, where + " is not a device allocation");
  if (p + bytes > base + size)
    return where + " needs " + std::to_string(bytes) + " bytes, but its allocation has " +
           std::to_string(base + size - p) + " from this pointer";
  return "";
}

}  // namespace detail
}  // namespace rtcg_export
#endif  // RTCG_EXPORT_COMMON_V1
)rtcg";

// A name of the header that could mean something else where it is compiled gets a trailing `_`
// (a C++ keyword or another reserved word of the emitter, a name the header uses), or a leading
// `v_` when its prefix is the risk: the CUDA driver API's (cuLaunchKernel, CUstream, CUDA_SUCCESS:
// a parameter of that name hides what the header calls) or the implementation's (a leading _).
// Macros of other names (errno, NULL, EOF, offsetof) are undefined around the class instead
// (withoutMacros), whatever headers came before.
std::string cName(const std::string& name, const std::set<std::string>& taken) {
  auto starts = [&](const char* p) { return name.rfind(p, 0) == 0; };
  std::string out = starts("cu") || starts("CU") || starts("_") ? "v_" + name : name;
  while (emit::reservedWords().count(out) || taken.count(out)) out += "_";
  return out;
}

// `body` with every name in `names` kept from expanding as a macro: pushed, undefined, and popped
// after it (#pragma push_macro: GCC, Clang, MSVC and NVCC's host compilers).
std::string withoutMacros(const std::set<std::string>& names, const std::string& body) {
  std::string before, after;
  for (const std::string& n : names) {
    before += fmt::format("#pragma push_macro(\"{0}\")\n#undef {0}\n", n);
    after += fmt::format("#pragma pop_macro(\"{}\")\n", n);
  }
  return before + body + after;
}

// A file name for a comment line: printable ASCII, anything else (a newline that would end the
// comment) as \xNN.
std::string commentText(const std::string& text) {
  std::string out;
  for (unsigned char c : text) out += c >= 0x20 && c < 0x7f ? std::string(1, char(c)) : fmt::format("\\x{:02x}", c);
  return out;
}

std::string launchTable(const ExportedImage& image, size_t index) {
  std::string out = fmt::format("  static constexpr detail::Launch kLaunches{}[] = {{\n", index);
  for (const LaunchSpec& l : image.launches)
    out += fmt::format("      {{\"{}\", {{{}, {}, {}}}, {{{}, {}, {}}}, {}}},\n", l.function, l.grid[0], l.grid[1],
                       l.grid[2], l.block[0], l.block[1], l.block[2], l.dynamicSharedBytes);
  return out + "  };\n";
}

struct Names {
  std::string cls, stream;
  std::vector<std::string> params;  // by Kernel::params index (empty for sizes)
};

std::string sizeName(const std::string& name) { return cName(name, {"sizes"}); }

Names namesOf(const Kernel& k) {
  Names n;
  // The members, and the locals of launch() that a parameter would hide (`e`, `args`, `f`, `l`, `r`).
  std::set<std::string> taken{"load", "launch", "detail", "kLaunches", "kImages", "module_", "functions_",
                              "launches_", "std", "rtcg_export", "kernelName", "sizes", "e", "args", "f", "l",
                              "r"};
  n.cls = cName(k.name, taken);
  taken.insert(n.cls);
  for (size_t i = 0; i < k.numSignatureParams(); ++i) {  // the locals are module memory, no argument
    const Param& p = k.params[i];
    n.params.push_back(p.kind == ParamKind::Size ? "" : cName(p.name, taken));
    if (p.kind != ParamKind::Size) taken.insert(n.params.back());
  }
  n.stream = cName("stream", taken);
  return n;
}

// The launch method: checks every array, then launches the nests in order.
std::string launchMethod(const Kernel& k, const Names& n, size_t nests) {
  std::vector<std::string> decl, checks, args;
  for (size_t p = 0; p < k.numSignatureParams(); ++p) {
    const Param& param = k.params[p];
    const std::string& name = n.params[p];
    if (param.kind == ParamKind::Size) continue;
    if (param.isArray()) {
      int64_t elements = 1;
      for (int64_t e : arrayShape(k, int(p))) elements *= e;
      decl.push_back(fmt::format("CUdeviceptr {}", name));
      checks.push_back(fmt::format("    if (std::string e = detail::checkArray(\"{}\", \"{}\", {}, {}ull * {}); "
                                   "!e.empty()) return e;  // {} {}[{}]\n",
                                   k.name, param.name, name, elements, typeBytes(param.type), typeName(param.type),
                                   param.name, elements));
      args.push_back("&" + name);
    } else {
      decl.push_back(fmt::format("detail::Exact<{}> {}", cudaTypeName(param.type), name));
      args.push_back(fmt::format("&{}.value", name));
    }
  }
  decl.push_back("CUstream " + n.stream);
  std::string out = fmt::format(
      "  // Launches every nest in order on `{}`; returns an empty string, or what went wrong. Arrays\n"
      "  // are device pointers (checked: 16-byte aligned, allocations long enough); scalars take\n"
      "  // exactly their C++ type.\n"
      "  std::string launch({}) const {{\n"
      "    if (!module_) return \"{}: launch before a successful load\";\n",
      n.stream, fmt::join(decl, ", "), k.name);
  for (const std::string& c : checks) out += c;
  out += fmt::format("    void* args[] = {{{}}};\n", args.empty() ? "nullptr" : fmt::format("{}", fmt::join(args, ", ")));
  out += fmt::format(
      "    for (int f = 0; f < {}; ++f) {{\n"
      "      const detail::Launch& l = launches_[f];\n"
      "      CUresult r = cuLaunchKernel(functions_[f], l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],\n"
      "                                  l.block[2], l.dynamicSharedBytes, {}, args, nullptr);\n"
      "      if (r != CUDA_SUCCESS) return detail::cudaError(r, std::string(\"{}: launching \") + l.function);\n"
      "    }}\n"
      "    return \"\";\n"
      "  }}\n",
      nests, n.stream, k.name);
  return out;
}

std::string loadMethod(const Kernel& k, size_t nests, size_t images) {
  return fmt::format(
      "  // Loads the cubin that suits the current context's device from `directory` (where rtcgc\n"
      "  // export wrote it) into the current context; returns an empty string, or what went wrong.\n"
      "  std::string load(const std::string& directory) {{\n"
      "    const detail::Image* image = nullptr;\n"
      "    if (std::string e = detail::pickImage(\"{0}\", kImages, {2}, image); !e.empty()) return e;\n"
      "    std::string data;\n"
      "    if (std::string e = detail::readFile(directory + \"/\" + image->cubinFile, data); !e.empty())\n"
      "      return \"{0}: \" + e;\n"
      "    CUmodule module = nullptr;\n"
      "    if (CUresult r = cuModuleLoadData(&module, data.data()); r != CUDA_SUCCESS)\n"
      "      return detail::cudaError(r, std::string(\"{0}: loading \") + image->cubinFile);\n"
      "    for (int f = 0; f < {1}; ++f) {{\n"
      "      const detail::Launch& l = image->launches[f];\n"
      "      CUresult r = cuModuleGetFunction(&functions_[f], module, l.function);\n"
      "      // Past 48 KiB of shared memory a launch must opt in (setting it below is harmless).\n"
      "      if (r == CUDA_SUCCESS && l.dynamicSharedBytes > 0)\n"
      "        r = cuFuncSetAttribute(functions_[f], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,\n"
      "                               int(l.dynamicSharedBytes));\n"
      "      if (r != CUDA_SUCCESS) {{\n"
      "        cuModuleUnload(module);\n"
      "        return detail::cudaError(r, std::string(\"{0}: function \") + l.function);\n"
      "      }}\n"
      "    }}\n"
      "    if (module_) cuModuleUnload(module_);\n"
      "    module_ = module;\n"
      "    launches_ = image->launches;\n"
      "    return \"\";\n"
      "  }}\n",
      k.name, nests, images);
}

std::string classBody(const Kernel& k, const std::vector<ExportedImage>& images, const Names& n) {
  size_t nests = images.front().launches.size();
  std::string out = fmt::format("class {} {{\n public:\n  static constexpr const char* kernelName = \"{}\";\n", n.cls,
                                k.name);
  out += "  struct sizes {\n";
  for (const auto& [name, value] : k.sizes)
    out += fmt::format("    static constexpr long long {} = {};\n", sizeName(name), value);
  out += "  };\n\n";
  out += fmt::format("  {0}() = default;\n  {0}(const {0}&) = delete;\n  {0}& operator=(const {0}&) = delete;\n"
                     "  ~{0}() {{\n    if (module_) cuModuleUnload(module_);\n  }}\n\n",
                     n.cls);
  out += loadMethod(k, nests, images.size()) + "\n" + launchMethod(k, n, nests);
  out += " private:\n";
  std::vector<std::string> entries;
  for (size_t i = 0; i < images.size(); ++i) {
    out += launchTable(images[i], i);
    const std::string& a = images[i].arch;  // sm_XY or sm_XYZ: the last digit is the minor version
    entries.push_back(fmt::format("{{\"{}\", {}, {}, \"{}\", kLaunches{}}}", a, a.substr(3, a.size() - 4),
                                  a.substr(a.size() - 1), images[i].cubinFile, i));
  }
  out += fmt::format("  static constexpr detail::Image kImages[] = {{{}}};\n", fmt::join(entries, ", "));
  out += fmt::format("  CUmodule module_ = nullptr;\n  CUfunction functions_[{}] = {{}};\n"
                     "  const detail::Launch* launches_ = nullptr;\n}};\n",
                     nests);
  return out;
}

}  // namespace

std::string exportHeaderName(const Kernel& k) { return k.name + ".h"; }

std::string exportHeader(const Kernel& k, const std::vector<ExportedImage>& images, const std::string& origin) {
  RTCG_ASSERT(!images.empty(), "an export has at least one architecture");
  Names n = namesOf(k);
  std::vector<std::string> sizes;
  for (const auto& [name, value] : k.sizes) sizes.push_back(fmt::format("{}={}", name, value));
  std::string out = fmt::format(
      "// Generated by rtcgc export: kernel {} ({}), {}.\n"  // ExportCommand.cpp recognizes it
      "// Loads the cubins beside this header and launches them through the CUDA driver API (link with\n"
      "// -lcuda, CUDA::cuda_driver in CMake): no NVRTC and no rtcg library needed. Usage:\n"
      "//   rtcg_export::{} k;\n"
      "//   std::string error = k.load(\"DIR\");  // in a current CUDA context\n"
      "//   if (error.empty()) error = k.launch(..., stream);\n",
      k.name, fmt::join(sizes, " "), commentText(origin), n.cls);
  for (const ExportedImage& i : images) out += fmt::format("// {}: {}, schedule: {}\n", i.arch, i.cubinFile, commentText(i.schedule));
  const bool locals = k.numSignatureParams() < k.params.size();
  if (locals)
    out += "// The kernel's local arrays are module-global memory: two launches of one loaded object must\n"
           "// not overlap (launches in stream order are fine).\n";
  for (const LaunchSpec& l : images.front().launches)
    if (l.usesGlobalScratch && !locals) {
      out += "// Some nest combines a reduction across blocks through module-global scratch: two launches\n"
             "// of one loaded object must not overlap (launches in stream order are fine).\n";
      break;
    }
  out += "#pragma once\n\n#include <cuda.h>\n\n#include <fstream>\n#include <iterator>\n#include <string>\n"
         "#include <type_traits>\n\n";
  out += kCommon;
  std::set<std::string> identifiers{n.cls, n.stream};
  for (const std::string& p : n.params)
    if (!p.empty()) identifiers.insert(p);
  for (const auto& [name, value] : k.sizes) identifiers.insert(sizeName(name));
  out += "\n" + withoutMacros(identifiers, "namespace rtcg_export {\n\n" + classBody(k, images, n) +
                                               "\n}  // namespace rtcg_export\n");
  return out;
}

}  // namespace rtcg
