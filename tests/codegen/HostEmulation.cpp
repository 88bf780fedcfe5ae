#include "codegen/HostEmulation.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <sstream>

#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "support/Error.h"

namespace rtcg::testing {

namespace {

// The translation unit g++ compiles: the emulation header, the emitted source without its
// `extern __shared__` declarations (the header provides that storage) and its CUDA includes (the
// header defines what the code uses of cuda_fp16.h and cuda_bf16.h), and one launcher per
// kernel taking its arguments as an array of pointers.
std::string hostSource(const Kernel& k, const EmittedModule& m) {
  std::string out = "#include \"cuda_host_emulation.h\"\n";  // found by compileCommand's include path
  std::istringstream in(m.source);
  for (std::string line; std::getline(in, line);)
    if (line.find("extern __shared__") == std::string::npos && line.rfind("#include <cuda_", 0) != 0) out += line + "\n";
  for (const LaunchSpec& l : m.launches) {
    std::vector<std::string> args;
    for (size_t a = 0; a < l.params.size(); ++a) {
      const Param& p = k.params[l.params[a]];
      std::string type = cudaTypeName(p.type);
      args.push_back(p.isArray() ? fmt::format("({}*)args[{}]", type, a) : fmt::format("*({}*)args[{}]", type, a));
    }
    // TMA tensor maps: the emulation's encoding of each, from its array's pointer.
    for (const TensorMapSpec& t : l.tensorMaps) {
      const size_t a = size_t(std::find(l.params.begin(), l.params.end(), t.param) - l.params.begin());
      // A kernel-local array's map: of its module variable.
      const std::string data = t.symbol.empty() ? fmt::format("args[{}]", a) : fmt::format("(void*){}", t.symbol);
      args.push_back(fmt::format("rtcg_emu_tensor_map<rtcg_tensor_map>({}, {}, {}, {}, {}, {}, {})", data, t.inner,
                                 t.outer, t.pitchBytes, t.boxInner, t.boxOuter, typeBytes(t.type)));
    }
    out += fmt::format(
        "extern \"C\" void rtcg_emu_run_{0}(void** arguments) {{\n"
        "  const unsigned int grid[3] = {{{1}, {2}, {3}}}, block[3] = {{{4}, {5}, {6}}};\n"
        "  rtcg_emu_launch(grid, block, [](void* context) {{ void** args = static_cast<void**>(context); {0}({7}); }}, arguments);\n}}\n",
        l.function, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1], l.block[2], fmt::join(args, ", "));
  }
  out += "extern \"C\" void rtcg_emu_set_block_order(int order) { rtcg_emu_block_order = order; }\n";
  out += "extern \"C\" void rtcg_emu_add_array(const void* p, unsigned long long bytes) { "
         "rtcg_emu_arrays.push_back({static_cast<const unsigned char*>(p), bytes}); }\n";
  out += "extern \"C\" void rtcg_emu_set_scan_hold_prefix(int hold) { rtcg_emu_scan_hold_prefix = hold != 0; }\n";
  return out;
}

// The g++ command that builds `dir`/kernel.so, linking the emulation's runtime in. The header's
// precompiled form (tests/CMakeLists.txt makes it and the runtime's object with the same options,
// RTCG_EMU_CXX_FLAGS) is on the include path before the header's folder: g++ uses it when its
// options match and reads the header itself otherwise.
#if !defined(RTCG_EMU_CXX_FLAGS) || !defined(RTCG_EMU_BUILD_DIR)
#error "a target with HostEmulation.cpp calls rtcg_use_host_emulation (tests/CMakeLists.txt)"
#endif
std::string compileCommand(const std::filesystem::path& dir) {
  return fmt::format("g++ {0} -shared -I{1} -I{2}/tests/codegen -o {3}/kernel.so {3}/kernel.cpp {1}/cuda_host_emulation_runtime.o "
                     "> {3}/log.txt 2>&1",
                     RTCG_EMU_CXX_FLAGS, RTCG_EMU_BUILD_DIR, RTCG_SOURCE_DIR, dir.string());
}

}  // namespace

std::string runEmittedOnHost(const Kernel& k, const Schedule& s, HostArgs& args, const ScheduleLimits& limits,
                             const EmulationOptions& options) {
  EmittedModule m = emitCuda(k, s, limits);
  static std::atomic<int> counter{0};
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              fmt::format("rtcg_emu_{}_{}", getpid(), counter++);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "kernel.cpp") << hostSource(k, m);
  const std::string cmd = compileCommand(dir);
  if (std::system(cmd.c_str()) != 0) {
    std::ifstream log(dir / "log.txt");
    std::stringstream ss;
    ss << log.rdbuf();
    return "g++ failed:\n" + ss.str().substr(0, 4000) + "\n" + m.source;
  }
  void* so = dlopen((dir / "kernel.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!so) return std::string("dlopen failed: ") + dlerror();

  // Argument storage: arrays by their host data, scalars at their type.
  std::vector<uint64_t> scalars(k.params.size());
  std::vector<void*> pointers(k.params.size());
  for (size_t p = 0; p < k.numSignatureParams(); ++p) {  // a local is module memory, no argument
    const Param& par = k.params[p];
    if (par.isArray()) {
      pointers[p] = args.array((int)p).data();
    } else if (par.kind == ParamKind::Scalar) {
      const ScalarValue& v = args.scalar((int)p);
      switch (par.type) {
        case ScalarType::F32: { float f = (float)v.f; std::memcpy(&scalars[p], &f, 4); break; }
        case ScalarType::F64: std::memcpy(&scalars[p], &v.f, 8); break;
        case ScalarType::I32: { int32_t i = (int32_t)v.i; std::memcpy(&scalars[p], &i, 4); break; }
        default: std::memcpy(&scalars[p], &v.i, 8); break;
      }
      pointers[p] = &scalars[p];
    }
  }
  auto setOrder = (void (*)(int))dlsym(so, "rtcg_emu_set_block_order");
  if (!setOrder) return "missing rtcg_emu_set_block_order";
  setOrder(options.blockOrder);
  auto addArray = (void (*)(const void*, unsigned long long))dlsym(so, "rtcg_emu_add_array");
  if (!addArray) return "missing rtcg_emu_add_array";
  for (size_t p = 0; p < k.numSignatureParams(); ++p)
    if (k.params[p].isArray()) addArray(args.array((int)p).data(), args.array((int)p).bytes());
  auto setHold = (void (*)(int))dlsym(so, "rtcg_emu_set_scan_hold_prefix");
  if (!setHold) return "missing rtcg_emu_set_scan_hold_prefix";
  setHold(options.scanHoldPrefix ? 1 : 0);
  for (int run = 0; run < options.runs; ++run) {
    if (run > 0)
      for (size_t p = 0; p < k.numSignatureParams(); ++p)
        if (k.params[p].isArray() && k.params[p].mode == ArrayMode::Out) poison(args.array((int)p));
    for (const LaunchSpec& l : m.launches) {
      auto launch = (void (*)(void**))dlsym(so, ("rtcg_emu_run_" + l.function).c_str());
      if (!launch) return "missing launcher for " + l.function;
      std::vector<void*> a;
      for (int p : l.params) a.push_back(pointers[p]);
      launch(a.data());
      if (l.usesGlobalScratch && !l.arrivalCounters.empty()) {  // (a local's module memory has none)
        auto counters = (const unsigned int*)dlsym(so, l.arrivalCounters.c_str());
        if (!counters) return "missing global scratch " + l.arrivalCounters;
        for (uint32_t c = 0; c < l.arrivalCounterCount; ++c)
          if (counters[c] != 0)
            return fmt::format("run {}: {}[{}] = {} after the launch (the last block resets it to 0)\n{}", run + 1,
                               l.arrivalCounters, c, counters[c], m.source);
      }
    }
  }
  dlclose(so);
  std::filesystem::remove_all(dir);
  return "";
}

std::string checkOnHost(const Kernel& k, const std::string& schedule, double tolerance, const ScheduleLimits& limits,
                        const EmulationOptions& options) {
  return checkScheduledOnHost(k, k, schedule, tolerance, limits, options);
}

std::string checkScheduledOnHost(const Kernel& proved, const Kernel& scheduled, const std::string& schedule,
                                 double tolerance, const ScheduleLimits& limits, const EmulationOptions& options) {
  const Kernel& k = proved;
  HostArgs args(k);
  fillInputs(k, args, 42);
  double scalar = 1.25;     // float scalars: 1.25, 0.75, 0.25, ...
  int64_t integer = 3;      // integer scalars: 3, 2, 1, 1, ... (never 0: kernels may divide by one)
  for (size_t p = 0; p < k.numSignatureParams(); ++p) {
    const Param& param = k.params[p];
    if (param.kind != ParamKind::Scalar) continue;
    if (!isFloat(param.type)) {
      args.setScalarInt(param.name, integer);
      integer = std::max<int64_t>(1, integer - 1);
    } else {
      args.setScalar((int)p, scalar);
      scalar -= 0.5;
    }
  }
  return checkScheduledOnHostWith(k, scheduled, schedule, std::move(args), tolerance, limits, options);
}

std::string checkOnHostWith(const Kernel& k, const std::string& schedule, HostArgs args, double tolerance,
                            const ScheduleLimits& limits, const EmulationOptions& options) {
  return checkScheduledOnHostWith(k, k, schedule, std::move(args), tolerance, limits, options);
}

std::string checkScheduledOnHostWith(const Kernel& proved, const Kernel& k, const std::string& schedule, HostArgs args,
                                     double tolerance, const ScheduleLimits& limits, const EmulationOptions& options) {
  auto parsed = parseSchedule(schedule);
  if (!parsed.ok()) return "schedule does not parse: " + parsed.error;
  HostArgs refArgs = args;
  ReferenceResult ref = runReference(proved, refArgs);
  std::string err = runEmittedOnHost(k, *parsed.schedule, args, limits, options);
  if (!err.empty()) return err;
  std::string out;
  for (const ReferenceOutput& o : ref.outputs) {
    Comparison c = compareWithReference(args.array(o.param), o);  // integers exactly
    if (!c.passes(tolerance))
      out += fmt::format("{} differs from the reference: {}\n{}\n", o.name, c.str(),
                         emitCuda(k, *parsed.schedule, limits).source);
  }
  return out;
}

}  // namespace rtcg::testing
