// Raw CUDA modules: CUDA C text of the application's own (PyCUDA's SourceModule, jitify), compiled
// at run time through the one route to NVRTC (driver/Pipeline.h, compileThroughNvrtc) and kept in
// the kernel cache (runtime/KernelCache.h) under a key of its own (moduleKey). Host-side and
// testable without a device: compiling, the cache payload, NVRTC's log as diagnostics in the
// user's file, the functions' parameters (the lowered signature, the source's declaration) and
// the check of launch arguments against them. The API (Context::module) loads and launches.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/KernelCache.h"
#include "support/Diagnostics.h"

namespace rtcg::raw {

// A __global__ function of a compiled module as its PTX declares it (the NVRTC-lowered signature):
// the symbol (extern "C" names as written, others mangled) and each parameter's size in bytes.
struct PtxEntry {
  std::string name;
  std::vector<size_t> paramSizes;
  bool operator==(const PtxEntry&) const = default;
};

// A compiled module: the cubin, its entries, NVRTC's warnings and the PTX (the last two only from
// compileModule: the cache keeps the cubin and the entries).
struct ModuleImage {
  std::string cubin;
  std::vector<PtxEntry> entries;
  std::string warnings;
  std::string ptx;
  const PtxEntry* find(std::string_view name) const;  // nullptr if absent
  std::string entryNames() const;                     // "saxpy, scale" (or "none")
};

// The module's NVRTC options as given: each one word beginning with '-' (-DTILE=128, -I dir as
// "-Idir", --use_fast_math). Options that choose the architecture or the output are refused: rtcg
// compiles for the device it loads on, to a cubin. Throws rtcg::Error naming the option.
void checkOptions(const std::vector<std::string>& options);

// The kernel-cache key of a module: its text, file name (__FILE__ and messages), options, the
// architecture, the NVRTC, driver and rtcg versions and rtcg's own NVRTC options, and the text of
// rtcg's NVRTC headers the source includes.
std::string moduleKey(const std::string& text, const std::string& fileName, const std::vector<std::string>& options,
                      const std::string& arch, int driverVersion);

// Compiles through compileThroughNvrtc (cubin and PTX in one NVRTC run). Bad CUDA C is the user's
// error: rtcg::CompileError whose diagnostics are NVRTC's, at their lines and columns of
// `fileName` (nvrtcDiagnostics). Bad options: rtcg::Error.
ModuleImage compileModule(const std::string& text, const std::string& fileName,
                          const std::vector<std::string>& options, const std::string& arch);

// The image as the kernel cache stores it, and back (nullopt for bytes of another format).
std::string encodeImage(const ModuleImage& image);
std::optional<ModuleImage> decodeImage(std::string_view bytes);

// The image from `cache` (memory or disk), else compiled and stored. `source` says where it came from.
ModuleImage cachedModule(KernelCache& cache, const std::string& text, const std::string& fileName,
                         const std::vector<std::string>& options, const std::string& arch, int driverVersion,
                         CacheSource* source = nullptr);

// The `.entry` declarations of PTX text with their parameters' sizes.
std::vector<PtxEntry> parsePtxEntries(const std::string& ptx);

// NVRTC's log as diagnostics against the user's source: "FILE(LINE): error: MESSAGE" with the
// echoed line and caret NVRTC prints under it becomes an error at LINE and the caret's column of
// `source`; warnings likewise. Lines of other files (a header) keep their file in the message,
// without a location. The summary lines ("2 errors detected ...") are dropped.
Diagnostics nvrtcDiagnostics(const std::string& log, const std::string& fileName, const std::string& source);

// A parameter as the source declares it: `const float* __restrict__ x` is name "x", type
// "const float* __restrict__", a pointer.
struct SourceParam {
  std::string name, type;
  bool pointer = false;
  bool operator==(const SourceParam&) const = default;
};

// The parameters of the __global__ function `function` as the text declares them (comments
// ignored, macros not expanded); nullopt when no single declaration of it is found. For names and
// the pointer check in messages: sizes come from the driver or the lowered signature.
std::optional<std::vector<SourceParam>> sourceParameters(const std::string& text, const std::string& function);

// What a launch checks an argument against: a parameter's size (from the driver, else the
// lowered signature), and where the source's declaration agrees in count, its name and type.
struct Parameter {
  size_t size = 0;
  std::string name, type;  // empty when the declaration is not known
  bool pointer = false;    // meaningful when `type` is not empty
};
std::vector<Parameter> parameterTable(const std::vector<size_t>& sizes,
                                      const std::optional<std::vector<SourceParam>>& declared);

// A launch argument as the check sees it.
struct Argument {
  enum class Kind { Array, Pointer, Value } kind = Kind::Value;  // an rtcg array, a bare device pointer, bytes
  size_t size = 0;           // bytes passed (8 for arrays and pointers)
  std::string elementType;   // arrays: "f32", "f64", "i32", "i64", "f16", "bf16"; else empty
  std::string description;   // "rtcg::Array<f32> of 1000", "float 2.5"
};

// Why these arguments cannot be passed to `function` with these parameters, or "" when they can:
// the count, each size, a value for a pointer parameter or an array for a value parameter, and an
// array whose element type the declared pointer names otherwise (float*, double*, int*, int64_t*, ...).
// The message names the function, the argument's position and the parameter's name and type.
std::string argumentMismatch(const std::string& function, const std::vector<Parameter>& params,
                             const std::vector<Argument>& args);

}  // namespace rtcg::raw
