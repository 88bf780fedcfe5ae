// Raw CUDA modules in the embedding API (include/rtcg/rtcg.h): Context::module compiles through
// driver/RawModule.h (the one NVRTC route, the kernel cache) and loads the cubin; RawFunction
// checks every launch's arguments against the function's parameters before it enqueues anything.
#include <fmt/format.h>

#include "api/RawModuleApi.h"
#include "api/ScheduleChoice.h"
#include "runtime/Launch.h"
#include "support/Error.h"

namespace rtcg {

namespace detail {

std::vector<raw::Argument> describeRawArgs(const std::vector<RawArg>& args) {
  std::vector<raw::Argument> out;
  out.reserve(args.size());
  for (const RawArg& a : args) {
    raw::Argument r;
    r.description = a.description;
    switch (a.kind) {
      case RawArg::Kind::Array:
        r.kind = raw::Argument::Kind::Array;
        r.size = sizeof(uint64_t);
        r.elementType = elementTypeName(a.type);
        break;
      case RawArg::Kind::Pointer:
        r.kind = raw::Argument::Kind::Pointer;
        r.size = a.bytes.size();
        break;
      case RawArg::Kind::Value:
        r.kind = raw::Argument::Kind::Value;
        r.size = a.bytes.size();
        break;
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace detail

RawModule Context::module(std::string_view cudaSource, const ModuleOptions& options) {
  detail::ContextImpl& ctx = *impl_;
  auto m = std::make_shared<detail::RawModuleImpl>();
  m->context = impl_;
  m->text = std::string(cudaSource);
  m->fileName = options.fileName.empty() ? "module.cu" : options.fileName;
  KernelCache& cache = KernelCache::global();
  const int diskErrors = cache.stats().diskErrors;
  CacheSource source = CacheSource::Computed;
  m->image = raw::cachedModule(cache, m->text, m->fileName, options.nvrtcOptions, ctx.arch, ctx.info.driverVersion,
                               &source);
  CompileLog log(options.log);
  if (cache.stats().diskErrors > diskErrors)
    log.warn(fmt::format("the kernel cache cannot be written, compiled modules stay in memory: {}",
                         cache.lastDiskError()));
  if (!m->image.warnings.empty()) log.warn(fmt::format("NVRTC's warnings for {}:\n{}", m->fileName, m->image.warnings));
  m->image.ptx.clear();  // only `rtcgc cuda --ptx` writes it out
  m->module = cuda::Module(ctx.cuda, m->image.cubin);
  m->fromDisk = source == CacheSource::Disk;
  {
    std::lock_guard<std::mutex> lock(ctx.mutex);
    if (source == CacheSource::Memory)
      ++ctx.stats.memory;
    else if (source == CacheSource::Disk)
      ++ctx.stats.disk;
    else
      ++ctx.stats.nvrtc;
  }
  return RawModule(std::move(m));
}

// ---- RawModule -----------------------------------------------------------------------------------

namespace {

const detail::RawModuleImpl& moduleOf(const std::shared_ptr<detail::RawModuleImpl>& impl) {
  if (!impl) throw Error("rtcg::RawModule: this module is empty (default-constructed); get one from rtcg::Context::module");
  return *impl;
}

detail::RawFunctionImpl& functionOf(const std::shared_ptr<detail::RawFunctionImpl>& impl) {
  if (!impl)
    throw Error("rtcg::RawFunction: this function is empty (default-constructed); get one from RawModule::function");
  return *impl;
}

}  // namespace

RawFunction RawModule::function(const std::string& name) const {
  const detail::RawModuleImpl& m = moduleOf(impl_);
  const raw::PtxEntry* entry = m.image.find(name);
  if (!entry)
    throw Error(fmt::format("{} has no __global__ function '{}' (it defines: {}); a function that is not extern \"C\" "
                            "has its C++ mangled name",
                            m.fileName, name, m.image.entryNames()));
  auto f = std::make_shared<detail::RawFunctionImpl>();
  f->module = impl_;
  f->function = m.module.function(name);
  // Sizes from the driver (cuFuncGetParamInfo, CUDA 12.4+); the lowered signature otherwise.
  const std::vector<size_t>& sizes = f->function.parameterSizes() ? *f->function.parameterSizes() : entry->paramSizes;
  f->params = raw::parameterTable(sizes, raw::sourceParameters(m.text, name));
  return RawFunction(std::move(f));
}

std::vector<std::string> RawModule::functionNames() const {
  std::vector<std::string> out;
  for (const raw::PtxEntry& e : moduleOf(impl_).image.entries) out.push_back(e.name);
  return out;
}

bool RawModule::loadedFromDiskCache() const { return moduleOf(impl_).fromDisk; }
const std::string& RawModule::warnings() const { return moduleOf(impl_).image.warnings; }

// ---- RawFunction ---------------------------------------------------------------------------------

const std::string& RawFunction::name() const { return functionOf(impl_).function.name(); }

std::vector<RawParameter> RawFunction::parameters() const {
  std::vector<RawParameter> out;
  for (const raw::Parameter& p : functionOf(impl_).params) out.push_back({p.name, p.type, p.size, p.pointer});
  return out;
}

int RawFunction::maxThreadsPerBlock() const { return functionOf(impl_).function.attributes().maxThreadsPerBlock; }
int RawFunction::registers() const { return functionOf(impl_).function.attributes().registers; }

void RawFunction::enqueue(const LaunchConfig& config, const std::vector<detail::RawArg>& args) const {
  detail::RawFunctionImpl& f = functionOf(impl_);
  const detail::ContextImpl& ctx = *f.module->context;
  const std::string& name = f.function.name();
  if (std::string why = raw::argumentMismatch(name, f.params, detail::describeRawArgs(args)); !why.empty())
    throw Error(why);
  for (const auto& [dim, what] : {std::pair{config.grid, "grid"}, std::pair{config.block, "block"}})
    if (dim.x == 0 || dim.y == 0 || dim.z == 0)
      throw Error(fmt::format("'{}': the {} ({}, {}, {}) is empty", name, what, dim.x, dim.y, dim.z));
  // cuLaunchKernel reads each parameter through a pointer to its bytes.
  std::vector<uint64_t> addresses(args.size());
  std::vector<void*> params(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const detail::RawArg& a = args[i];
    if (a.kind == detail::RawArg::Kind::Array) {
      if (a.buffer && a.buffer->memory.context() != ctx.cuda)
        throw Error(fmt::format("'{}': argument {} is an rtcg::Array of another device's context", name, i + 1));
      addresses[i] = a.buffer ? a.buffer->memory.devicePtr() : 0;
      params[i] = &addresses[i];
    } else {
      params[i] = const_cast<char*>(a.bytes.data());
    }
  }
  // Above the default 48 KiB, dynamic shared memory is opted into per function (once per size).
  if (config.sharedBytes > ctx.cuda->device().properties().sharedPerBlock) {
    std::lock_guard<std::mutex> lock(f.sharedMutex);
    if (config.sharedBytes > f.sharedOptedIn) {
      f.function.setMaxDynamicSharedMemory(config.sharedBytes);
      f.sharedOptedIn = config.sharedBytes;
    }
  }
  cuda::Stream stream = cuda::Stream::borrowed(ctx.cuda, config.stream);
  cuda::launchPacked(f.function, {config.grid.x, config.grid.y, config.grid.z},
                     {config.block.x, config.block.y, config.block.z}, config.sharedBytes, &stream, params);
}

}  // namespace rtcg
