// rtcg/compiler.h: the pipeline's steps (driver/Pipeline.h) as functions with results as data.
#include "rtcg/compiler.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>

#include "api/KernelArgs.h"
#include "codegen/NvrtcArchs.h"
#include "driver/KernelBuild.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "ir/Printer.h"
#include "runtime/CudaDriver.h"
#include "reference/HostArgs.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/PolicyRewrite.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "tune/CompilePool.h"
#include "tune/ServedWorker.h"
#include "tune/TestDevice.h"
#include "tune/Tuner.h"
#include "tune/TuningDb.h"
#include "tune/WorkerProcess.h"

namespace rtcg::compiler {

namespace {

const char* modeName(ArrayMode m) { return m == ArrayMode::In ? "in" : m == ArrayMode::Out ? "out" : "inout"; }

KernelInfo infoOf(const Kernel& k) {
  KernelInfo info;
  info.name = k.name;
  for (size_t i = 0; i < k.numSignatureParams(); ++i) {  // the signature: never the locals
    const Param& p = k.params[i];
    ParamInfo pi;
    pi.name = p.name;
    pi.kind = p.kind == ParamKind::Size ? "size" : p.kind == ParamKind::Scalar ? "scalar" : "array";
    pi.type = typeName(p.type);
    if (p.isArray()) {
      pi.mode = modeName(p.mode);
      for (const Expr& e : p.shape) {
        pi.shape.push_back(printExpr(e, &k));
        if (k.isBound() && e->kind == ExprKind::IntImm) pi.boundShape.push_back(e->intValue);
      }
    }
    info.params.push_back(std::move(pi));
  }
  return info;
}

// The program, at most kMaxSourceBytes as rtcgc reads (a 100 MB string was parsed).
SourceText sourceText(std::string_view source, const std::string& fileName) {
  if (source.size() > kMaxSourceBytes)
    throw Error(fmt::format("the source is {} bytes, larger than the limit of {} MiB", source.size(),
                            kMaxSourceBytes >> 20));
  return SourceText{fileName, std::string(source)};
}

ScheduleLimits limitsOf(const Options& o) {
  if (o.maxSharedBytes < 0)  // -1 meant the default silently
    throw Error(fmt::format("maxSharedBytes {}: expected 0 (the default limit) or a positive number of bytes",
                            o.maxSharedBytes));
  ScheduleLimits limits;
  if (o.maxSharedBytes > 0) limits.maxSharedBytes = o.maxSharedBytes;
  return limits;
}

void checkArch(const std::string& arch) {
  if (std::string why = checkNvrtcArch(arch); !why.empty()) throw Error(fmt::format("arch '{}': {}", arch, why));
}

Compiled runPipeline(std::string_view source, const Sizes& sizes, const Options& o, bool compile, bool wantPtx) {
  SourceText src = sourceText(source, o.fileName);
  PipelineOptions po;
  po.kernelName = o.kernel;
  po.schedule = o.schedule;
  po.arch = o.arch;
  po.compile = compile;
  po.wantPtx = wantPtx;
  po.limits = limitsOf(o);
  po.precision = precisionOf(o.precision);
  Diagnostics diags;
  bool nvrtcFailed = false;
  std::optional<Compiled> out = compilePipeline(src, sizes, po, diags, &nvrtcFailed);
  if (!out) {
    // NVRTC failing on generated code is rtcg's bug, not a diagnostic of the user's program.
    if (nvrtcFailed) throw Error(renderDiagnostics(diags, src));
    throwDiagnostics(diags, src);
  }
  return std::move(*out);
}

// The value of a shape extent under `sizes`; nullopt while a size in it is unbound (or it divides
// by zero, which no bound size does).
std::optional<int64_t> evalExtent(const Expr& e, const Kernel& k, const Sizes& sizes) {
  switch (e->kind) {
    case ExprKind::IntImm: return e->intValue;
    case ExprKind::Var: {
      if (e->varKind != VarKind::Size) return std::nullopt;
      auto it = sizes.find(k.params[e->varId].name);
      if (it == sizes.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Cast: return evalExtent(e->operands[0], k, sizes);
    case ExprKind::Unary: {
      auto a = evalExtent(e->operands[0], k, sizes);
      if (!a || e->unaryOp != UnaryOp::Neg || *a == INT64_MIN) return std::nullopt;
      return -*a;
    }
    case ExprKind::Binary: {
      auto a = evalExtent(e->operands[0], k, sizes), b = evalExtent(e->operands[1], k, sizes);
      if (!a || !b) return std::nullopt;
      // Sizes given by the caller may be anything: an overflowing step is no value (a solution is
      // verified by evaluating it again, and bindSizes checks the bound shapes).
      int64_t r = 0;
      switch (e->binaryOp) {
        case BinaryOp::Add: return __builtin_add_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinaryOp::Sub: return __builtin_sub_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinaryOp::Mul: return __builtin_mul_overflow(*a, *b, &r) ? std::nullopt : std::optional<int64_t>(r);
        case BinaryOp::Div:
          if (*b == 0 || (*b == -1 && *a == INT64_MIN)) return std::nullopt;
          return *a / *b - ((*a % *b != 0) && ((*a < 0) != (*b < 0)));
        case BinaryOp::Mod: {
          if (*b == 0 || *b == -1) return *b == 0 ? std::nullopt : std::optional<int64_t>(0);
          int64_t m = *a % *b;
          return (m != 0 && ((m < 0) != (*b < 0))) ? m + *b : m;
        }
        default: return std::nullopt;
      }
    }
    case ExprKind::Call:
      if (e->mathFn == MathFn::Min || e->mathFn == MathFn::Max) {
        auto a = evalExtent(e->operands[0], k, sizes), b = evalExtent(e->operands[1], k, sizes);
        if (!a || !b) return std::nullopt;
        return e->mathFn == MathFn::Min ? std::min(*a, *b) : std::max(*a, *b);
      }
      return std::nullopt;
    default: return std::nullopt;
  }
}

void unboundSizes(const Expr& e, const Kernel& k, const Sizes& sizes, std::vector<std::string>& out) {
  if (e->kind == ExprKind::Var && e->varKind == VarKind::Size) {
    const std::string& name = k.params[e->varId].name;
    if (!sizes.count(name) && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  for (const Expr& o : e->operands) unboundSizes(o, k, sizes, out);
}

TuneCandidate candidateOf(const CandidateRecord& c, double completed = 0) {
  TuneCandidate t;
  t.schedule = c.schedule;
  t.status = statusName(c.status);
  t.reason = c.reason;
  t.medianMs = c.medianMs;
  t.gflops = c.gflops;
  t.gbytes = c.gbytes;
  t.relativeError = c.relativeError;
  t.registers = c.registers;
  t.spillBytes = c.spillBytes;
  t.sharedBytes = c.sharedBytes;
  t.occupancy = c.occupancy;
  t.compileMs = c.compileMs;
  t.completedSeconds = completed;
  return t;
}

}  // namespace

std::vector<KernelInfo> parse(std::string_view source, const std::string& fileName) {
  SourceText src = sourceText(source, fileName);
  Diagnostics diags;
  std::optional<Program> program = parseProgram(src.fileName, src.text, diags);
  if (program && program->kernels.empty()) diags.error({}, "the source defines no kernel");
  if (!program || diags.hasErrors()) throwDiagnostics(diags, src);
  std::vector<KernelInfo> out;
  for (const Kernel& k : program->kernels) {
    out.push_back(infoOf(k));
    out.back().diagnostics = diagnosticRecords(diags, fileName);
  }
  return out;
}

KernelInfo check(std::string_view source, const Sizes& sizes, const Options& options) {
  SourceText src = sourceText(source, options.fileName);
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, sizes, options.kernel, diags);
  if (!bound) throwDiagnostics(diags, src);
  KernelInfo info = infoOf(*bound);
  info.sizes = bound->sizes;
  info.signature = signatureOf(*bound);
  info.diagnostics = diagnosticRecords(diags, options.fileName);
  return info;
}

std::string emit(std::string_view source, const Sizes& sizes, const Options& options) {
  return runPipeline(source, sizes, options, false, false).module.source;
}

std::string explain(std::string_view source, const Sizes& sizes, const Options& options) {
  checkArch(options.arch);  // named in the text: '../../etc' was printed as the target
  SourceText src = sourceText(source, options.fileName);
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, sizes, options.kernel, diags);
  if (!bound) throwDiagnostics(diags, src);
  ScheduleLimits limits = limitsOf(options);
  std::optional<ChosenSchedule> chosen =
      chooseSchedule(*bound, options.schedule, limits, diags, precisionOf(options.precision));
  if (!chosen) throwDiagnostics(diags, src);
  const Schedule* schedule = &chosen->schedule;
  const SchedulePlan& plan = chosen->plan;
  std::vector<std::string> sizeText;
  for (const auto& [name, value] : bound->sizes) sizeText.push_back(fmt::format("{}={}", name, value));
  std::string out = fmt::format("kernel {} ({}) for {}, schedule: {}\n", bound->name, fmt::join(sizeText, " "),
                                options.arch, printSchedule(*schedule));
  if (!chosen->kernel.policy.empty()) out += printPolicyRewrite(chosen->kernel);
  for (const NestPlan& n : plan.nests) out += printPlan(chosen->kernel, n);
  for (const FusionGroup& g : plan.fusions) out += printFusion(chosen->kernel, g);
  return out;
}

std::string cubin(std::string_view source, const Sizes& sizes, const Options& options) {
  checkArch(options.arch);
  if (options.arch.rfind("sm_", 0) != 0)
    throw Error(fmt::format("a cubin needs a real architecture (sm_XX), not '{}'", options.arch));
  Compiled c = runPipeline(source, sizes, options, true, false);
  return std::string(c.binary.cubin.begin(), c.binary.cubin.end());
}

std::string ptx(std::string_view source, const Sizes& sizes, const Options& options) {
  checkArch(options.arch);
  return runPipeline(source, sizes, options, true, true).binary.ptx;
}

ShapeBinding bindShapes(std::string_view source, const std::vector<std::optional<std::vector<int64_t>>>& shapes,
                        const Sizes& given, const Options& options) {
  SourceText src = sourceText(source, options.fileName);
  Diagnostics diags;
  std::optional<Kernel> kernel = frontKernel(src, options.kernel, diags);
  if (!kernel) throwDiagnostics(diags, src);
  const Kernel& k = *kernel;
  ShapeBinding out;
  out.sizes = given;
  std::vector<int> argParams;  // argument position -> parameter
  for (size_t p = 0; p < k.numSignatureParams(); ++p)
    if (k.params[p].kind != ParamKind::Size) argParams.push_back(int(p));
  if (shapes.size() != argParams.size())
    throw Error(fmt::format("{}: takes {} argument{} (its non-size parameters), given {}", k.name, argParams.size(),
                            argParams.size() == 1 ? "" : "s", shapes.size()));
  auto where = [&](size_t arg, size_t dim) {
    return fmt::format("argument {} ({}), dimension {}", arg + 1, k.params[argParams[arg]].name, dim);
  };
  for (size_t a = 0; a < shapes.size(); ++a) {
    const Param& param = k.params[argParams[a]];
    if (!param.isArray() || !shapes[a]) continue;
    if (shapes[a]->size() != param.shape.size())
      throw Error(fmt::format("{}: argument {} ({}) has {} dimension{}, the parameter {} ({}: {}[{}])", k.name, a + 1,
                              param.name, shapes[a]->size(), shapes[a]->size() == 1 ? "" : "s", param.shape.size(),
                              param.name, typeName(param.type), fmt::join(infoOf(k).params[argParams[a]].shape, ", ")));
  }
  // Passes until nothing new is bound: an extent with one unbound size is solved for it where it is
  // linear in it (its values at 0, 1 and 2 differ by the same non-zero step) and the solution
  // evaluates back to the extent.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t a = 0; a < shapes.size(); ++a) {
      const Param& param = k.params[argParams[a]];
      if (!param.isArray() || !shapes[a]) continue;
      for (size_t d = 0; d < param.shape.size(); ++d) {
        std::vector<std::string> unknown;
        unboundSizes(param.shape[d], k, out.sizes, unknown);
        if (unknown.size() != 1) continue;
        const int64_t extent = (*shapes[a])[d];
        Sizes trial = out.sizes;
        auto at = [&](int64_t x) {
          trial[unknown[0]] = x;
          return evalExtent(param.shape[d], k, trial);
        };
        auto f0 = at(0), f1 = at(1), f2 = at(2);
        if (!f0 || !f1 || !f2) continue;
        int64_t step = 0, step2 = 0, offset = 0;
        if (__builtin_sub_overflow(*f1, *f0, &step) || __builtin_sub_overflow(*f2, *f1, &step2) ||
            __builtin_sub_overflow(extent, *f0, &offset))
          continue;
        if (step == 0 || step2 != step || (step == -1 && offset == INT64_MIN) || offset % step != 0) continue;
        int64_t x = offset / step;
        if (at(x) != extent) continue;
        out.sizes[unknown[0]] = x;
        out.from[unknown[0]] = where(a, d);
        progress = true;
      }
    }
  }
  std::vector<std::string> missing;
  for (const Param& p : k.params)
    if (p.kind == ParamKind::Size && !out.sizes.count(p.name)) missing.push_back(p.name);
  if (!missing.empty())
    throw Error(fmt::format("{}: the size{} {} cannot be bound from the arguments' shapes (no extent is the size or "
                            "linear in it); give {} explicitly",
                            k.name, missing.size() == 1 ? "" : "s", fmt::join(missing, ", "),
                            missing.size() == 1 ? "it" : "them"));
  return out;
}

namespace {

// A RemoteDevice of the request behind the tuner's remote measurer interface.
class RemoteDeviceMeasurer : public RemoteMeasurer {
 public:
  explicit RemoteDeviceMeasurer(RemoteDevice device) : device_(std::move(device)) {}
  MeasureOutcome measure(const worker::CandidateMessage& candidate) override {
    int restarts = 0;
    MeasureOutcome o = decodeOutcome(device_.measure(worker::encode(candidate)), &restarts);
    restarts_ = restarts;
    return o;
  }
  std::string name() const override { return device_.name; }
  int restarts() const override { return restarts_; }

 private:
  RemoteDevice device_;
  std::atomic<int> restarts_{0};
};

// A CompileSlot of the request behind the compile pool's remote slot interface.
class RequestCompileSlot : public ::rtcg::RemoteCompileSlot {
 public:
  explicit RequestCompileSlot(CompileSlot slot) : slot_(std::move(slot)) {}
  std::optional<std::string> exchange(const std::string& frame, double timeoutSeconds,
                                      const std::atomic<bool>& abandon) override {
    return slot_.compile(frame, timeoutSeconds, [&abandon] { return abandon.load(); });
  }
  std::string host() const override { return slot_.host; }

 private:
  CompileSlot slot_;
};

// A CompileSlotServer's compile worker: the one findWorker finds, or none (the slots compile on
// threads).
std::string serverWorker(const std::string& workerPath) {
  try {
    return findWorker(workerPath);
  } catch (const Error&) {
    return "";
  }
}

}  // namespace

struct CompileSlotServer::Impl {
  CompileSlotHost host;
};

CompileSlotServer::CompileSlotServer(int slots, const std::string& workerPath)
    : impl_(new Impl{CompileSlotHost(serverWorker(workerPath), std::max(1, slots))}) {}
CompileSlotServer::~CompileSlotServer() = default;
int CompileSlotServer::slots() const { return impl_->host.slots(); }
std::string CompileSlotServer::compile(int slot, const std::string& frame, double timeoutSeconds) {
  return impl_->host.compile(slot, frame, timeoutSeconds);
}
void CompileSlotServer::abandon() { impl_->host.abandon(); }
int64_t CompileSlotServer::compiled() const { return impl_->host.compiled(); }

struct MeasuringWorker::Impl {
  ServedWorker served;
};

MeasuringWorker::MeasuringWorker(const std::string& setup, const std::string& reference, int deviceOrdinal,
                                 const std::string& workerPath)
    : impl_(new Impl{ServedWorker(setup, reference, deviceOrdinal, workerPath)}) {}
MeasuringWorker::~MeasuringWorker() = default;
std::string MeasuringWorker::measure(const std::string& candidate) { return impl_->served.measure(candidate); }
std::string MeasuringWorker::device() const {
  const worker::ReadyMessage& r = impl_->served.worker().ready();
  return r.device + " (" + r.arch + ")";
}

TuneReport tune(std::string_view source, const Sizes& sizes, const TuneRequest& request) {
  CompileOptions co;
  co.kernel = request.kernel;
  co.fileName = request.fileName;
  Kernel bound = tuningTarget(source, sizes, co);  // CompileError for bad source or sizes
  if (std::string why = precisionObstacle(bound, precisionOf(request.precision)); !why.empty()) throw Error(why);
  TuneOptions o;
  o.space.precision = precisionOf(request.precision);
  o.inputFiles = checkArrayFiles(bound, request.inputFiles);  // before any GPU work
  o.space.maxCandidates = request.maxCandidates;
  o.space.seed = request.seed;
  o.seed = request.seed;
  o.timeLimitSeconds = request.timeLimitSeconds;
  o.deviceOrdinals = request.devices.empty() ? std::vector<int>{0} : request.devices;
  o.dbPath = request.dbPath;
  o.workerPath = request.workerPath;
  o.resume = request.resume;
  o.log = request.log;
  o.deviceProperties = testDeviceFromEnv();  // tests: a stand-in device (tune/TestDevice.h)
  if (request.remoteDevices) {
    o.remoteDeviceCount = request.remoteDeviceCount;
    auto make = request.remoteDevices;
    o.remoteDevices = [make](const worker::SetupMessage& setup) {
      std::vector<std::unique_ptr<RemoteMeasurer>> out;
      for (RemoteDevice& d : make(worker::encode(setup), readInputFile(setup.referencePath, size_t(1) << 40)))
        out.push_back(std::make_unique<RemoteDeviceMeasurer>(std::move(d)));
      return out;
    };
  }
  o.compileThreads = request.compileThreads;
  for (const CompileSlot& slot : request.compileSlots) {
    if (!slot.compile) throw Error(fmt::format("TuneRequest::compileSlots: the slot of '{}' has no compile function", slot.host));
    o.remoteCompileSlots.push_back(std::make_shared<RequestCompileSlot>(slot));
  }
  if (request.progress) {
    double limit = request.timeLimitSeconds;
    auto progress = request.progress;
    o.progress = [progress, limit](const TuneProgress& p) {
      progress({p.generated, p.measured, p.verified, p.elapsedSeconds, limit, p.best ? p.best->medianMs : 0});
    };
  }
  TuneResult r = rtcg::tune(request.fileName, std::string(source), bound, o);
  TuneReport out;
  out.kernel = r.key.kernelName;
  out.sizes = r.key.sizes;
  out.device = r.key.device;
  out.arch = r.key.arch;
  out.searchId = r.searchId;
  if (r.best) out.best = candidateOf(*r.best);
  if (r.defaultSchedule) out.defaultSchedule = candidateOf(*r.defaultSchedule);
  for (size_t i = 0; i < r.candidates.size(); ++i)
    out.candidates.push_back(candidateOf(r.candidates[i], i < r.completedSeconds.size() ? r.completedSeconds[i] : 0));
  out.devices = r.devices;
  for (const CompileHostCount& h : r.compiledOn) out.compiledOn.push_back({h.host, h.slots, h.compiled});
  out.enumerated = r.enumerated;
  out.generated = r.generated;
  out.pruned = r.pruned;
  out.verified = r.verified;
  out.wrong = r.wrong;
  out.faulted = r.faulted;
  out.timedOut = r.timedOut;
  out.launchFailed = r.launchFailed;
  out.compileFailed = r.compileFailed;
  out.skipped = r.skipped;
  out.notMeasured = r.notMeasured;
  out.timeLimitReached = r.timeLimitReached;
  out.wallSeconds = r.wallSeconds;
  out.reference = r.reference;
  return out;
}

}  // namespace rtcg::compiler
