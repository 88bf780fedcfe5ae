#include "driver/Executable.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "ir/Analysis.h"
#include "reference/RandomFill.h"
#include "runtime/CudaDriver.h"
#include "support/Error.h"

namespace rtcg {

Executable::Executable(std::shared_ptr<cuda::Context> ctx, const Kernel& bound, const EmittedModule& module,
                       std::string_view image)
    : kernel_(bound), alignment_(module.arrayAlignment), module_(ctx, image), launches_(module.launches) {
  const cuda::DeviceProperties& dev = ctx->device().properties();
  for (const LaunchSpec& spec : launches_) {
    cuda::Function fn = module_.function(spec.function, spec.params.size() + spec.tensorMaps.size());
    uint64_t threads = uint64_t(spec.block[0]) * spec.block[1] * spec.block[2];
    cuda::FunctionAttributes attrs = fn.attributes();
    if (threads > uint64_t(attrs.maxThreadsPerBlock))
      throw Error(fmt::format("{}: a block of {} threads exceeds the {} this function can run with on {} "
                              "({} registers per thread)",
                              spec.function, threads, attrs.maxThreadsPerBlock, dev.name, attrs.registers));
    // Past 48 KiB of static and dynamic shared memory together, a launch must opt in (a 48 KiB
    // dynamic tile beside a split reduction's static last-block flag needs it too).
    if (spec.dynamicSharedBytes > 0 && spec.dynamicSharedBytes + attrs.staticSharedBytes > 48 * 1024)
      fn.setMaxDynamicSharedMemory(spec.dynamicSharedBytes);
    scratch_ = scratch_ || spec.usesGlobalScratch;
    functions_.push_back(std::move(fn));
  }
}

void Executable::launch(const std::vector<std::optional<cuda::KernelArg>>& args, const cuda::Stream* stream) const {
  for (size_t n = 0; n < launches_.size(); ++n) launchOne(n, args, stream);
}

void Executable::launchOne(size_t n, const std::vector<std::optional<cuda::KernelArg>>& args,
                           const cuda::Stream* stream) const {
  RTCG_ASSERT(args.size() == kernel_.numSignatureParams(), "one argument slot per parameter (no local takes one)");
  RTCG_ASSERT(n < launches_.size(), "no such launch");
  std::vector<cuda::KernelArg> list;
  const LaunchSpec& spec = launches_[n];
  for (int p : spec.params) {
    if (!args[p]) throw Error(fmt::format("no argument for parameter '{}'", kernel_.params[p].name));
    // The emitted code reads arrays as arrayAlignment()-byte aligned (see emitCuda): a
    // misaligned pointer would fault on the device and poison the context, so it is refused here
    // (the API picks a variant that fits its pointers before it gets here).
    uint64_t address = 0;
    if (args[p]->kind() == cuda::KernelArg::Kind::Pointer) std::memcpy(&address, args[p]->data(), 8);
    if (address % uint64_t(alignment_) != 0)
      throw Error(fmt::format("array '{}' is at {:#x}, which is not {}-byte aligned, as this module's code assumes",
                              kernel_.params[p].name, address, alignment_));
    list.push_back(*args[p]);
  }
  // TMA tensor maps (`mma: ... tma`), encoded from the arrays' device pointers per launch.
  // A kernel-local array's map is of its module variable (the kernel this runs for may be the
  // one as written, whose parameters do not list the locals of its precision policy's rewrite).
  for (const TensorMapSpec& t : spec.tensorMaps) {
    cuda::TensorMap2d m;
    std::string name = t.symbol;
    if (!t.symbol.empty()) {
      m.address = module_.globalAddress(t.symbol);
    } else {
      if (t.param < 0 || size_t(t.param) >= args.size())
        throw Error(fmt::format("{}: a TMA tensor map of parameter {}, which the kernel does not have", spec.function,
                                t.param));
      name = kernel_.params[size_t(t.param)].name;
      if (!args[t.param] || args[t.param]->kind() != cuda::KernelArg::Kind::Pointer)
        throw Error(fmt::format("no device pointer for array '{}', whose TMA tensor map {} takes", name,
                                spec.function));
      std::memcpy(&m.address, args[t.param]->data(), 8);
    }
    m.elementBytes = typeBytes(t.type), m.bf16 = t.type == ScalarType::BF16;
    m.inner = t.inner, m.outer = t.outer, m.pitchBytes = t.pitchBytes;
    m.boxInner = t.boxInner, m.boxOuter = t.boxOuter;
    list.push_back(cuda::encodeTensorMap2d(m, fmt::format("array '{}'", name)));
  }
  cuda::launch(functions_[n], {spec.grid[0], spec.grid[1], spec.grid[2]},
               {spec.block[0], spec.block[1], spec.block[2]}, spec.dynamicSharedBytes, stream, list);
}

std::vector<double> Executable::timeEachLaunch(const std::vector<std::optional<cuda::KernelArg>>& args,
                                               const cuda::Stream& stream, cuda::BenchmarkOptions options) const {
  options.raceMs = options.closeRaceMs = 0;
  std::vector<double> ms;
  for (size_t n = 0; n < launches_.size(); ++n)
    ms.push_back(
        cuda::benchmark(stream, [&](const cuda::Stream& s, int) { launchOne(n, args, &s); }, options).medianMs);
  return ms;
}

void poisonDevice(cuda::DeviceBuffer& b, ScalarType type) {
  if (b.bytes() == 0) return;
  switch (type) {
    case ScalarType::F32: b.fill32(0x7fc00000u); break;  // quiet NaN
    case ScalarType::F64: b.fill8(0xff); break;          // every byte 0xff is a NaN double
    case ScalarType::I32:
    case ScalarType::U32: b.fill32(uint32_t(int32_t(kPoisonInt))); break;
    case ScalarType::I64: {
      std::vector<int64_t> words(b.bytes() / 8, kPoisonInt);
      b.copyFromHost(words.data(), b.bytes());
      break;
    }
    case ScalarType::I8:
    case ScalarType::U8: b.fill8(uint8_t(uint64_t(kPoisonInt))); break;  // its low byte, as the host's setInt
    case ScalarType::F16:
    case ScalarType::BF16:  // 0xffff is a NaN in both
    case ScalarType::Bool: b.fill8(0xff); break;
  }
}

DeviceArgs::DeviceArgs(std::shared_ptr<cuda::Context> ctx, const Kernel& bound, const HostArgs& host) {
  buffers_.resize(bound.numSignatureParams());
  args_.resize(bound.numSignatureParams());
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind == ParamKind::Array) {
      buffers_[p].emplace(ctx, host.array(int(p)).bytes());
      args_[p] = cuda::KernelArg::buffer(*buffers_[p]);
    } else if (param.kind == ParamKind::Scalar) {
      const ScalarValue& v = host.scalar(int(p));
      switch (param.type) {
        case ScalarType::F32: args_[p] = cuda::KernelArg::f32(float(v.f)); break;
        case ScalarType::F64: args_[p] = cuda::KernelArg::f64(v.f); break;
        case ScalarType::I32: args_[p] = cuda::KernelArg::i32(int32_t(v.i)); break;
        case ScalarType::U32: args_[p] = cuda::KernelArg::i32(int32_t(uint32_t(v.i))); break;  // the same 4 bytes
        case ScalarType::I64: args_[p] = cuda::KernelArg::i64(v.i); break;
        case ScalarType::Bool:
        case ScalarType::F16:
        case ScalarType::BF16:
        case ScalarType::I8:
        case ScalarType::U8: RTCG_ASSERT(false, "bool or storage-type scalar parameter");  // the frontend refuses them
      }
    }
  }
  reset(bound, host);
}


void DeviceArgs::snapshotInputs(const Kernel& bound) {
  snapshot_.resize(bound.numSignatureParams());
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind != ParamKind::Array || param.mode == ArrayMode::Out || !buffers_[p]) continue;
    size_t bytes = buffers_[p]->bytes();
    if (bytes == 0) continue;
    try {
      snapshot_[p].emplace(buffers_[p]->context(), bytes);
      snapshot_[p]->copyFromDevice(*buffers_[p], bytes);
    } catch (const cuda::CudaError& e) {
      if (e.sticky()) throw;
      snapshot_[p].reset();  // no room: reset() uploads this one
    }
  }
}

void DeviceArgs::reset(const Kernel& bound, const HostArgs& host) {
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind != ParamKind::Array) continue;
    const HostArray& a = host.array(int(p));
    if (param.mode == ArrayMode::Out)
      poisonDevice(*buffers_[p], param.type);
    else if (p < snapshot_.size() && snapshot_[p])
      buffers_[p]->copyFromDevice(*snapshot_[p], snapshot_[p]->bytes());
    else if (a.bytes())
      buffers_[p]->copyFromHost(a.data(), a.bytes());
  }
}

void DeviceArgs::download(const Kernel& bound, HostArgs& host) const {
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    if (!bound.params[p].isWritten()) continue;
    HostArray& a = host.array(int(p));
    if (a.bytes()) buffers_[p]->copyToHost(a.data(), a.bytes());
  }
}

}  // namespace rtcg
