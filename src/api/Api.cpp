// The public embedding API (include/rtcg/rtcg.h) on top of the pipeline (KernelBuild.h), the kernel
// cache (runtime/KernelCache.h) and the driver runtime (runtime/*).
#include <fmt/format.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <unordered_map>

#include "api/ContextImpl.h"
#include "api/KernelArgs.h"
#include "api/ScheduleChoice.h"
#include "driver/Executable.h"
#include "driver/KernelBuild.h"
#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/KernelCache.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"
#include "support/Error.h"
#include "tune/Tuner.h"
#include "runtime/StateDirs.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"

namespace rtcg {

namespace detail {

// What a compile() produces, shared by every CompiledKernel (and the in-memory cache) for it.
struct KernelData {
  PreparedKernel prepared;
  std::string scheduleOrigin;
  std::shared_ptr<const Executable> executable;
  bool fromDisk = false;
  std::string signature;

  // What the variants for arrays off a 16-byte boundary (Context::wrap) are built from: the same
  // kernel and schedule, emitted for a smaller alignment on first need.
  std::string source;
  ProvedKernel proved;
  CompileOptions options;  // with the schedule text compile() chose
  ScheduleLimits limits;
  mutable std::mutex variantMutex;
  mutable std::map<int, std::shared_future<std::shared_ptr<const Executable>>> variants;  // by alignment
  // Kernels with a cross-block reduction: a module instance per (alignment, stream) of
  // launchAsync (streamInstance).
  mutable std::map<std::pair<int, CUstream_st*>, std::shared_ptr<const Executable>> streamInstances;
};

struct KernelImpl {
  std::shared_ptr<ContextImpl> context;
  std::shared_ptr<const KernelData> data;
};

std::shared_ptr<BufferImpl> allocate(const std::shared_ptr<ContextImpl>& ctx, size_t bytes) {
  auto b = std::make_shared<BufferImpl>();
  b->memory = cuda::DeviceBuffer(ctx->cuda, bytes);
  b->owner = ctx;
  return b;
}

std::shared_ptr<BufferImpl> wrapExternal(const std::shared_ptr<ContextImpl>& ctx, uint64_t address, size_t bytes,
                                         ElementType type) {
  const int elementBytes = typeBytes(toScalarType(type));
  if (address == 0 && bytes != 0)
    throw Error(fmt::format("rtcg::Context::wrap: a null device pointer for {} elements of {}",
                            bytes / size_t(elementBytes), elementTypeName(type)));
  // Kernels read elements whole: an address that is not a multiple of the element size is not a
  // pointer to T at all (the CUDA runtime would fault on it too).
  if (address % uint64_t(elementBytes) != 0)
    throw Error(fmt::format("rtcg::Context::wrap: the device pointer {:#x} is not aligned for {} ({} bytes)",
                            address, elementTypeName(type), elementBytes));
  auto b = std::make_shared<BufferImpl>();
  b->memory = cuda::DeviceBuffer::borrowed(ctx->cuda, address, bytes);
  b->owner = ctx;
  return b;
}

uint64_t devicePointer(const BufferImpl& b) { return b.memory.devicePtr(); }

// Copies go through a stream of the buffer's context and wait for it, so they are complete (and
// ordered after every earlier launch, which also waited) when they return.
void copyToDevice(BufferImpl& b, const void* src, size_t bytes) {
  BorrowedStream stream(*b.owner);
  b.memory.copyFromHostAsync(src, bytes, stream.get());
  stream.synchronize();
}

void copyToHost(const BufferImpl& b, void* dst, size_t bytes) {
  BorrowedStream stream(*b.owner);
  b.memory.copyToHostAsync(dst, bytes, stream.get());
  stream.synchronize();
}

}  // namespace detail

const char* elementTypeName(ElementType t) { return typeName(toScalarType(t)); }

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", computeMajor, computeMinor); }

const char* version() { return RTCG_VERSION; }

// ---- Context ---------------------------------------------------------------------------------------

Context::Context(int device) {
  cuda::initialize();  // NoDeviceError with the driver's reason
  int count = cuda::Device::count();
  if (count == 0) throw NoDeviceError("no CUDA device found");
  if (device < 0 || device >= count)
    throw Error(fmt::format("rtcg::Context: no CUDA device {} (this machine has {} device{}: 0..{})", device, count,
                            count == 1 ? "" : "s", count - 1));
  impl_ = std::make_shared<detail::ContextImpl>();
  impl_->cuda = cuda::Context::primary(device);
  const cuda::DeviceProperties& p = impl_->cuda->device().properties();
  DeviceInfo& d = impl_->info;
  d.ordinal = p.ordinal;
  d.name = p.name;
  d.computeMajor = p.computeMajor;
  d.computeMinor = p.computeMinor;
  d.multiprocessors = p.multiprocessors;
  d.sharedPerBlock = p.sharedPerBlock;
  d.sharedPerBlockOptin = p.sharedPerBlockOptin;
  d.sharedPerMultiprocessor = p.sharedPerMultiprocessor;
  d.registersPerBlock = p.registersPerBlock;
  d.registersPerMultiprocessor = p.registersPerMultiprocessor;
  d.l2Bytes = p.l2Bytes;
  d.totalMemory = p.totalMemory;
  d.clockKHz = p.clockKHz;
  d.driverVersion = p.driverVersion;
  impl_->arch = p.arch();
}

Context::~Context() = default;

const DeviceInfo& Context::device() const { return impl_->info; }

void Context::synchronize() { impl_->cuda->synchronize(); }

Context::CacheStats Context::cacheStats() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->stats;
}

namespace {

// The module for `prepared` in this context: loaded already, or loaded from the cubin the kernel
// cache gives (from memory, disk, or NVRTC). Concurrent callers with the same cubin key wait for
// one load.
detail::LoadedModule loadModule(detail::ContextImpl& ctx, const PreparedKernel& prepared, bool& reused,
                                CompileLog& log) {
  std::string key = cubinKey(prepared.module.source, ctx.arch);
  std::promise<detail::LoadedModule> promise;
  std::shared_future<detail::LoadedModule> existing;
  {
    std::lock_guard<std::mutex> lock(ctx.mutex);
    auto it = ctx.modules.find(key);
    if (it != ctx.modules.end())
      existing = it->second;
    else
      ctx.modules.emplace(key, promise.get_future().share());
  }
  if (existing.valid()) {
    reused = true;
    return existing.get();  // waits for a load in progress in another thread; rethrows its failure
  }
  reused = false;
  try {
    CacheSource source = CacheSource::Computed;
    KernelCache& cache = KernelCache::global();
    int diskErrors = cache.stats().diskErrors;
    std::string cubin = cache.getOrCompute(key, [&] { return compileCubin(prepared, ctx.arch); }, &source);
    // The disk cache only saves time: a directory that cannot be written is worth a word, no more.
    if (cache.stats().diskErrors > diskErrors)
      log.warn(fmt::format("the kernel cache cannot be written, compiled kernels stay in memory: {}",
                           cache.lastDiskError()));
    detail::LoadedModule m{std::make_shared<const Executable>(ctx.cuda, prepared.bound, prepared.module, cubin),
                           source};
    promise.set_value(m);
    return m;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(ctx.mutex);
    ctx.modules.erase(key);  // a later compile tries again
    throw;
  }
}

}  // namespace

namespace {

Tuning tuningPolicy(const CompileOptions& options) {
  const char* env = std::getenv("RTCG_TUNING");
  if (!env || !*env) return options.tuning;
  std::string v = env;
  if (v == "off") return Tuning::Off;
  if (v == "cached") return Tuning::UseCached;
  if (v == "tune") return Tuning::TuneOnFirstUse;
  throw Error(fmt::format("RTCG_TUNING='{}': expected off, cached or tune", v));
}

// The device's limits: tuned tiles may be in dynamic shared memory.
ScheduleLimits deviceLimits(const detail::ContextImpl& ctx) {
  const cuda::DeviceProperties& props = ctx.cuda->device().properties();
  return deviceScheduleLimits(int64_t(props.sharedPerBlockOptin), props.maxThreadsPerBlock, props.multiprocessors,
                              int64_t(props.sharedPerMultiprocessor));
}

// What the alignment variants of a compiled kernel are built from (executableFor), kept with it.
void keepForVariants(detail::KernelData& data, std::string_view source, const CompileOptions& options,
                     const ScheduleLimits& limits, ProvedKernel proved, const std::string& scheduleText) {
  data.source = std::string(source);
  data.options = options;
  data.options.schedule = scheduleText;
  // A variant is built at a launch, long after compile(): the caller's log may be gone by then (a
  // lambda over a local), so the variant's warnings go to stderr.
  data.options.log = nullptr;
  data.limits = limits;
  data.proved = std::move(proved);
}

// The device's side of the schedule choice: its tuning key and limits, and a search run now.
ScheduleInputs scheduleInputs(detail::ContextImpl& ctx, std::string_view source, const Kernel& target,
                              const CompileOptions& options, CompileLog& log) {
  const cuda::DeviceProperties& props = ctx.cuda->device().properties();
  ScheduleInputs in;
  in.key = tuningKeyFor(target, props, precisionOf(options));
  in.limits = deviceLimits(ctx);
  in.dbSnapshot = options.tuningDbSnapshot;
  in.tuneNow = [&ctx, source, &target, &options, &log]() -> std::optional<CandidateRecord> {
    TuneOptions tuneOptions;
    tuneOptions.space.maxCandidates = options.tuneMaxCandidates;
    tuneOptions.space.precision = precisionOf(options);
    tuneOptions.timeLimitSeconds = options.tuneTimeLimitSeconds;
    tuneOptions.deviceOrdinals = {ctx.info.ordinal};
    try {
      if (options.tuningDbSnapshot || state::tuningDbSnapshot())
        throw Error("it is read as a snapshot (tuningDbSnapshot, RTCG_TUNING_DB_SNAPSHOT), which is never written");
      tuneOptions.dbPath = TuningDb::defaultPath();
    } catch (const Error& e) {
      log.warn(fmt::format("tuning without a database (the result is not kept): {}", e.what()));
      tuneOptions.dbPath = "-";
    }
    if (options.onTuneProgress)
      tuneOptions.progress = [&options](const TuneProgress& p) {
        options.onTuneProgress({p.generated, p.measured, p.verified, p.elapsedSeconds, options.tuneTimeLimitSeconds,
                                p.best ? p.best->medianMs : 0});
      };
    return tune(options.fileName, std::string(source), target, tuneOptions).best;
  };
  return in;
}

}  // namespace

CompiledKernel Context::compile(std::string_view source, const Sizes& sizes, const CompileOptions& options) {
  detail::ContextImpl& ctx = *impl_;
  std::string request = requestKey(source, sizes, options);
  {
    std::lock_guard<std::mutex> lock(ctx.mutex);
    auto it = ctx.requests.find(request);
    if (it != ctx.requests.end()) {
      ++ctx.stats.memory;
      return CompiledKernel(std::make_shared<detail::KernelImpl>(detail::KernelImpl{impl_, it->second}));
    }
  }

  // The front end and the proof run once (they throw with the diagnostics); the schedule is looked
  // up by the proved kernel, then emitted. The policy is read first: a bad RTCG_TUNING is reported
  // whatever the source.
  Tuning policy = tuningPolicy(options);
  ProvedKernel proved = proveKernel(source, sizes, options);
  CompileLog log(options.log);
  ScheduleChoice choice =
      pickSchedule(source, proved, options, policy, scheduleInputs(ctx, source, proved.bound, options, log), log);
  PreparedKernel prepared = std::move(choice.prepared);
  std::string origin = std::move(choice.origin);
  bool reused = false;
  detail::LoadedModule module = loadModule(ctx, prepared, reused, log);

  auto data = std::make_shared<detail::KernelData>();
  data->signature = signatureOf(prepared.bound);
  keepForVariants(*data, source, options, deviceLimits(ctx), std::move(proved), prepared.scheduleText);
  data->prepared = std::move(prepared);
  data->scheduleOrigin = std::move(origin);
  data->executable = module.executable;
  data->fromDisk = module.source == CacheSource::Disk;
  {
    std::lock_guard<std::mutex> lock(ctx.mutex);
    if (reused || module.source == CacheSource::Memory)
      ++ctx.stats.memory;
    else if (module.source == CacheSource::Disk)
      ++ctx.stats.disk;
    else
      ++ctx.stats.nvrtc;
    ctx.requests.emplace(request, data);
  }
  return CompiledKernel(std::make_shared<detail::KernelImpl>(detail::KernelImpl{impl_, std::move(data)}));
}

// ---- CompiledKernel ------------------------------------------------------------------------------

namespace {

const detail::KernelData& dataOf(const std::shared_ptr<detail::KernelImpl>& impl) {
  if (!impl) throw Error("rtcg::CompiledKernel: this kernel is empty (default-constructed); get one from "
                         "rtcg::Context::compile");
  return *impl->data;
}

cuda::KernelArg scalarArg(const detail::ArgRef& a, ScalarType want) {
  // matchArguments allowed only exact types and the lossless widenings f32->f64, i32->i64.
  switch (want) {
    case ScalarType::F32: return cuda::KernelArg::f32(a.scalar.f32);
    case ScalarType::F64: return cuda::KernelArg::f64(a.type == ElementType::F32 ? double(a.scalar.f32) : a.scalar.f64);
    case ScalarType::I32: return cuda::KernelArg::i32(a.scalar.i32);
    case ScalarType::I64: return cuda::KernelArg::i64(a.type == ElementType::I32 ? int64_t(a.scalar.i32) : a.scalar.i64);
    case ScalarType::U32: return cuda::KernelArg::i32(int32_t(a.scalar.u32));  // the same 4 bytes
    case ScalarType::Bool:
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::I8:
    case ScalarType::U8: break;  // the frontend has no such scalar parameters
  }
  RTCG_ASSERT(false, "bool or storage-type scalar parameter");
}

// The pointer argument of an rtcg::Array, checked to be of this context; its address is noted in
// `addresses` (which variant serves the launch).
cuda::KernelArg deviceArrayArg(const detail::ContextImpl& ctx, const Kernel& bound, const detail::ArgRef& a,
                               size_t argIndex, const Param& param, std::vector<uint64_t>& addresses) {
  if (a.buffer && a.buffer->memory.context() != ctx.cuda)
    throw Error(fmt::format("{}: argument {} ({}) is an rtcg::Array of another device's context; kernels "
                            "take arrays of the Context that compiled them",
                            bound.name, argIndex + 1, param.name));
  addresses.push_back(a.buffer ? a.buffer->memory.devicePtr() : 0);
  return cuda::KernelArg::pointer(addresses.back());
}

// The executable for a launch whose arrays are all `alignment`-byte aligned: the compiled one for
// whole allocations, else the kernel's variant for that alignment (emitted, compiled and loaded on
// first need, once; it has its own cubin key, so the kernel cache keeps it too).
std::shared_ptr<const Executable> executableFor(detail::ContextImpl& ctx, const detail::KernelData& data,
                                                int alignment) {
  if (alignment >= kWholeAllocationAlignment) return data.executable;
  std::promise<std::shared_ptr<const Executable>> promise;
  std::shared_future<std::shared_ptr<const Executable>> existing;
  {
    std::lock_guard<std::mutex> lock(data.variantMutex);
    auto it = data.variants.find(alignment);
    if (it != data.variants.end())
      existing = it->second;
    else
      data.variants.emplace(alignment, promise.get_future().share());
  }
  if (existing.valid()) return existing.get();
  try {
    CompileLog log(data.options.log);
    PreparedKernel variant = prepareProved(data.source, data.proved, data.options, data.limits, alignment);
    bool reused = false;
    std::shared_ptr<const Executable> e = loadModule(ctx, variant, reused, log).executable;
    promise.set_value(e);
    return e;
  } catch (...) {
    promise.set_exception(std::current_exception());
    std::lock_guard<std::mutex> lock(data.variantMutex);
    data.variants.erase(alignment);
    throw;
  }
}

}  // namespace

void CompiledKernel::launch(const std::vector<detail::ArgRef>& args) const {
  const detail::KernelData& data = dataOf(impl_);
  const Kernel& bound = data.prepared.bound;
  detail::ContextImpl& ctx = *impl_->context;
  std::vector<std::optional<size_t>> match = matchArguments(bound, args);

  // Device copies of host vectors live until the launch and the copies back are done.
  std::vector<std::optional<cuda::KernelArg>> kernelArgs(bound.numSignatureParams());
  struct Staged {
    size_t param, arg;
    cuda::DeviceBuffer copy;
  };
  std::vector<Staged> staged;
  std::vector<uint64_t> addresses;  // of the device arrays: which variant serves them
  detail::BorrowedStream stream(ctx);
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    if (!match[p]) continue;
    const Param& param = bound.params[p];
    const detail::ArgRef& a = args[*match[p]];
    switch (a.kind) {
      case detail::ArgRef::Kind::Scalar:
        kernelArgs[p] = scalarArg(a, param.type);
        break;
      case detail::ArgRef::Kind::DeviceArray:
        kernelArgs[p] = deviceArrayArg(ctx, bound, a, *match[p], param, addresses);
        break;
      case detail::ArgRef::Kind::HostArray:
      case detail::ArgRef::Kind::ConstHostArray: {
        size_t bytes = a.count * size_t(typeBytes(param.type));
        cuda::DeviceBuffer copy(ctx.cuda, bytes);
        if (param.mode != ArrayMode::Out) {
          if (bytes) copy.copyFromHostAsync(a.host, bytes, stream.get());
        } else if (bytes) {
          // An out vector is overwritten as a whole: elements the kernel leaves alone become 0, not garbage.
          copy.fill8Async(0, stream.get());
        }
        kernelArgs[p] = cuda::KernelArg::buffer(copy);
        staged.push_back({p, *match[p], std::move(copy)});
        break;
      }
    }
  }
  // A kernel with a reduction split across blocks keeps its partials and arrival counters in
  // module-global scratch: its launches (from any thread, through any CompiledKernel sharing the
  // loaded module) run one at a time, each until it is complete.
  std::shared_ptr<const Executable> executable = executableFor(ctx, data, addressAlignment(addresses));
  std::unique_lock<std::mutex> exclusive = executable->exclusiveLaunch();
  executable->launch(kernelArgs, stream.get());
  // Written host vectors come back (matchArguments refused const vectors for written parameters).
  for (const Staged& s : staged)
    if (bound.params[s.param].isWritten() && s.copy.bytes())
      s.copy.copyToHostAsync(args[s.arg].host, s.copy.bytes(), stream.get());
  stream.synchronize();
}

const std::string& CompiledKernel::name() const { return dataOf(impl_).prepared.bound.name; }
const std::string& CompiledKernel::cudaSource() const { return dataOf(impl_).prepared.module.source; }
const std::string& CompiledKernel::scheduleText() const { return dataOf(impl_).prepared.scheduleText; }
const std::string& CompiledKernel::scheduleOrigin() const { return dataOf(impl_).scheduleOrigin; }
std::string CompiledKernel::signature() const { return dataOf(impl_).signature; }
bool CompiledKernel::loadedFromDiskCache() const { return dataOf(impl_).fromDisk; }

// ---- asynchronous launches -------------------------------------------------------------------------

namespace {

// The module instance that launches of a kernel with a cross-block reduction use on `stream`. Its
// partials and arrival counters are module-global (LaunchSpec::usesGlobalScratch): launches in one
// stream's order may share them, launches on two streams may not. So each stream gets its own
// loaded copy of the module (the same cubin, from the kernel cache), whose scratch only that
// stream's launches, in order, touch. Instances live as long as the compiled kernel.
std::shared_ptr<const Executable> streamInstance(detail::ContextImpl& ctx, const detail::KernelData& data,
                                                 int alignment, CUstream_st* stream) {
  std::lock_guard<std::mutex> lock(data.variantMutex);
  auto key = std::make_pair(alignment, stream);
  auto it = data.streamInstances.find(key);
  if (it != data.streamInstances.end()) return it->second;
  PreparedKernel prepared = alignment >= kWholeAllocationAlignment
                                ? data.prepared
                                : prepareProved(data.source, data.proved, data.options, data.limits, alignment);
  std::string cubin = KernelCache::global().getOrCompute(cubinKey(prepared.module.source, ctx.arch),
                                                         [&] { return compileCubin(prepared, ctx.arch); });
  auto instance = std::make_shared<const Executable>(ctx.cuda, prepared.bound, prepared.module, cubin);
  data.streamInstances.emplace(key, instance);
  return instance;
}

}  // namespace

void CompiledKernel::enqueue(CUstream_st* stream, const std::vector<detail::ArgRef>& args) const {
  const detail::KernelData& data = dataOf(impl_);
  const Kernel& bound = data.prepared.bound;
  detail::ContextImpl& ctx = *impl_->context;
  std::vector<std::optional<size_t>> match = matchArguments(bound, args);
  std::vector<std::optional<cuda::KernelArg>> kernelArgs(bound.numSignatureParams());
  std::vector<uint64_t> addresses;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    if (!match[p]) continue;
    const Param& param = bound.params[p];
    const detail::ArgRef& a = args[*match[p]];
    if (a.kind == detail::ArgRef::Kind::Scalar)
      kernelArgs[p] = scalarArg(a, param.type);
    else if (a.kind == detail::ArgRef::Kind::DeviceArray)
      kernelArgs[p] = deviceArrayArg(ctx, bound, a, *match[p], param, addresses);
    else
      throw Error(fmt::format("{}: argument {} ({}) is a {}: launchAsync takes rtcg::Array arguments (a host vector "
                              "is copied back after the launch, which only the synchronous call does); wrap or "
                              "upload it",
                              bound.name, *match[p] + 1, param.name, describeArgument(a)));
  }
  int alignment = addressAlignment(addresses);
  std::shared_ptr<const Executable> executable = data.executable->usesGlobalScratch()
                                                     ? streamInstance(ctx, data, alignment, stream)
                                                     : executableFor(ctx, data, alignment);
  cuda::Stream onStream = cuda::Stream::borrowed(ctx.cuda, stream);
  executable->launch(kernelArgs, &onStream);
}

}  // namespace rtcg
