// rtcgc: the rtcg command line. See docs/rtcgc.md.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <regex>
#include <sstream>

#include "CommandLine.h"
#include "DbCommand.h"
#include "ExitCodes.h"
#include "CudaCommand.h"
#include "ExportCommand.h"
#include "TuneCommand.h"
#include "codegen/NvrtcArchs.h"
#include "driver/Executable.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "ir/Counts.h"
#include "ir/Printer.h"
#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "schedule/DeviceModels.h"
#include "schedule/Plan.h"
#include "schedule/PolicyRewrite.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"
#include "tune/Tuner.h"
#include "tune/Verify.h"

namespace fs = std::filesystem;
using namespace rtcg;
using namespace rtcgc;

namespace {

struct Common {
  std::string file;
  std::vector<std::string> defines;
  std::string kernel;
  std::string precision = "ieee";  // --precision (emit, run, explain)
  Precision policy() const { return parsePrecision(precision).value_or(Precision::Ieee); }  // checked by the option
};

void report(const Diagnostics& diags, const SourceText& src) {
  std::string text = renderDiagnostics(diags, src);
  fwrite(text.data(), 1, text.size(), stderr);  // all of it, whatever bytes a message quotes
}

Kernel boundKernel(const Common& c, const SourceText& src) {
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, parseDefines(c.defines), c.kernel, diags);
  report(diags, src);
  if (!bound) throw Fail{kInputError};
  return *bound;
}

Compiled compile(const Common& c, const SourceText& src, const PipelineOptions& options) {
  Diagnostics diags;
  bool nvrtcFailed = false;
  std::optional<Compiled> out = compilePipeline(src, parseDefines(c.defines), options, diags, &nvrtcFailed);
  report(diags, src);
  if (!out) throw Fail{nvrtcFailed ? kNvrtcFailed : kInputError};
  return *out;
}

void checkArch(const std::string& arch) {
  static const std::regex form(R"((sm|compute)_[0-9]{2,3}[af]?)");
  if (!std::regex_match(arch, form)) {
    fmt::print(stderr, "rtcgc: error: bad architecture '{}': expected sm_XX or compute_XX, e.g. sm_90\n", arch);
    throw Fail{kUsage};
  }
}

// ---- check -------------------------------------------------------------------------------------

int runCheck(const Common& c) {
  SourceText src = readSource(c.file);
  Diagnostics diags;
  Program program;
  std::optional<Kernel> k;
  bool bindRequested = !c.defines.empty();
  if (bindRequested || !c.kernel.empty()) {
    k = frontKernel(src, c.kernel, diags, &program);
    if (k && bindRequested) {
      std::optional<Kernel> bound = bindAndProve(*k, parseDefines(c.defines), diags);
      if (!bound) k.reset();
    }
  } else {
    std::optional<Program> p = parseProgram(src.fileName, src.text, diags);
    if (p) program = *p;
    // As frontKernel says for every other command (an empty file passed check, then failed them).
    if (p && p->kernels.empty()) diags.error({}, "the file defines no kernel");
  }
  report(diags, src);
  if (diags.hasErrors()) return kInputError;
  // Only what was proved: after a warning that something is left to run time (an indirect index,
  // distinct writes, every out element written), "no nest races" would claim too much.
  const int warnings = int(std::count_if(diags.all().begin(), diags.all().end(),
                                         [](const Diagnostic& d) { return d.severity == Severity::Warning; }));
  if (bindRequested && warnings == 0)
    fmt::print("{}: kernel '{}' is well-formed; with these sizes every access is in bounds, no nest races and every "
               "element of its out arrays is written\n",
               c.file, k->name);
  else if (bindRequested)
    fmt::print("{}: kernel '{}' is well-formed; with these sizes every access, write and out array rtcg could "
               "analyse is proved (in bounds, race-free, written in full), but not what the {} above name{}: "
               "`rtcgc run --cpu` checks it on the reference executor\n",
               c.file, k->name, warnings == 1 ? "warning" : fmt::format("{} warnings", warnings),
               warnings == 1 ? "s" : "");
  else
    fmt::print("{}: {} kernel{} well-formed (bind sizes with -D to prove bounds and race freedom)\n", c.file,
               program.kernels.size(), program.kernels.size() == 1 ? "" : "s");
  return kOk;
}

// ---- emit --------------------------------------------------------------------------------------

struct EmitArgs {
  std::string schedule, output, arch = "sm_90";
  bool ptx = false, cubin = false, resources = false, nvrtcLog = false;
  bool tuned = false;  // --tuned: the tuning database's best schedule (ExportCommand.h's tunedSchedule)
  std::string db;
  int64_t maxSharedBytes = ScheduleLimits{}.maxSharedBytes;
  int64_t multiprocessors = 0;  // --multiprocessors (0: unknown)
};

// --multiprocessors: the count `mma: ... persistent` sizes its grid by (no device to ask here), with
// the shared memory per multiprocessor of --arch's device model where there is one.
void setMultiprocessors(ScheduleLimits& limits, int64_t multiprocessors, const std::string& arch) {
  if (multiprocessors <= 0) return;
  limits.multiprocessors = multiprocessors;
  if (std::optional<DeviceModel> model = archDeviceModel(arch)) limits.sharedPerMultiprocessor = model->sharedPerMultiprocessor;
}

int runEmit(const Common& c, const EmitArgs& e) {
  checkArch(e.arch);
  if (e.ptx && e.cubin) {
    fmt::print(stderr, "rtcgc: error: --ptx and --cubin exclude each other\n");
    return kUsage;
  }
  if (e.cubin && e.output.empty()) {
    fmt::print(stderr, "rtcgc: error: --cubin writes a binary file: name it with -o FILE\n");
    return kUsage;
  }
  if (e.cubin && e.arch.rfind("sm_", 0) != 0) {
    fmt::print(stderr, "rtcgc: error: a cubin needs a real architecture (sm_XX), not '{}'\n", e.arch);
    return kUsage;
  }
  if (std::string why = checkNvrtcArch(e.arch); !why.empty()) {
    fmt::print(stderr, "rtcgc: error: --arch: {}\n", why);
    return kUsage;
  }
  if (e.tuned && !e.schedule.empty()) {
    fmt::print(stderr, "rtcgc: error: --tuned and --schedule exclude each other\n");
    return kUsage;
  }
  SourceText src = readSource(c.file);
  PipelineOptions options;
  options.kernelName = c.kernel;
  options.schedule = e.schedule;
  options.precision = c.policy();
  if (e.tuned) {
    std::string used;
    options.schedule = tunedSchedule(boundKernel(c, src), e.arch, e.db, &used, c.policy());
    fmt::print(stderr, "rtcgc: {}\n", used);
  }
  options.arch = e.arch;
  options.wantPtx = e.ptx;
  options.compile = e.ptx || e.cubin || e.resources || e.nvrtcLog;
  options.limits.maxSharedBytes = e.maxSharedBytes;
  // A tuned schedule may keep its tiles in dynamic shared memory up to the architecture's limit.
  if (e.tuned) options.limits = exportScheduleLimits(e.arch);
  setMultiprocessors(options.limits, e.multiprocessors, e.arch);
  Compiled compiled = compile(c, src, options);

  std::string data;
  if (e.cubin)
    data.assign(compiled.binary.cubin.begin(), compiled.binary.cubin.end());
  else if (e.ptx)
    data = compiled.binary.ptx;
  else
    data = compiled.module.source;
  if (e.output.empty() || e.output == "-")
    fwrite(data.data(), 1, data.size(), stdout);
  else
    writeFileAtomically(e.output, data);
  if (e.nvrtcLog) fmt::print(stderr, "{}\n", compiled.binary.log);
  if ((e.resources || e.cubin) && compiled.binary.resources.empty())
    fmt::print(stderr, "rtcgc: warning: ptxas reported no resource use in the NVRTC log\n");
  if (e.resources || e.cubin)
    for (const KernelResources& r : compiled.binary.resources)
      fmt::print(stderr, "{}: {} registers, {} bytes shared, {} bytes local (spill stores {}, loads {})\n", r.name,
                 r.registers, r.sharedBytes, r.localBytes, r.spillStoreBytes, r.spillLoadBytes);
  return kOk;
}

// ---- run ---------------------------------------------------------------------------------------

struct RunArgs {
  bool cpu = false;
  uint64_t seed = 1;
  std::string schedule;
  std::vector<std::string> scalars;
  std::vector<std::string> inputs;  // NAME=FILE: an array's values instead of random ones
  int repeats = 20;
  double tolerance = -1;  // default by element type
  // GPU runs of kernels over this many floating-point operations are verified against a sampled
  // reference (as rtcgc tune does); 0: always the full reference.
  double referenceMaxFlops = 2e9;
};

// Random scalars (uniform in [-1, 1) for floats, [1, 8] for integers), overridable with -S name=value.
void setScalars(const Kernel& k, HostArgs& args, const RunArgs& r) {
  std::mt19937_64 rng(r.seed ^ 0x5ca1ab1eULL);
  std::map<std::string, std::string> given;
  for (const std::string& s : r.scalars) {
    size_t eq = s.find('=');
    if (eq == std::string::npos) {
      fmt::print(stderr, "rtcgc: error: bad scalar '-S {}': expected NAME=VALUE\n", s);
      throw Fail{kUsage};
    }
    given[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (size_t p = 0; p < k.numSignatureParams(); ++p) {
    const Param& param = k.params[p];
    if (param.kind != ParamKind::Scalar) continue;
    auto it = given.find(param.name);
    double value = isFloat(param.type) ? std::uniform_real_distribution<double>(-1, 1)(rng)
                                       : double(std::uniform_int_distribution<int>(1, 8)(rng));
    if (it != given.end() && isIntegral(param.type)) {
      // Exactly, in 64 bits: through strtod, 2^53 + 1 became 2^53 silently.
      char* end = nullptr;
      errno = 0;
      const long long v = std::strtoll(it->second.c_str(), &end, 10);
      if (end == it->second.c_str() || *end || errno == ERANGE ||
          (param.type == ScalarType::I32 && (v < INT32_MIN || v > INT32_MAX)) ||
          (param.type == ScalarType::U32 && (v < 0 || v > int64_t(UINT32_MAX)))) {
        fmt::print(stderr, "rtcgc: error: scalar '{}' needs an integer of type {}, got '{}'\n", param.name,
                   typeName(param.type), it->second);
        throw Fail{kUsage};
      }
      given.erase(it);
      args.setScalarInt(param.name, v);
      continue;
    }
    if (it != given.end()) {
      char* end = nullptr;
      value = std::strtod(it->second.c_str(), &end);
      if (end == it->second.c_str() || *end) {
        fmt::print(stderr, "rtcgc: error: scalar '{}' needs a number, got '{}'\n", param.name, it->second);
        throw Fail{kUsage};
      }
      given.erase(it);
    }
    args.setScalar(int(p), value);
  }
  for (const auto& [name, value] : given) {
    fmt::print(stderr, "rtcgc: error: '{}' is not a scalar parameter of kernel '{}'\n", name, k.name);
    throw Fail{kUsage};
  }
}

// --input NAME=FILE: the values of an `in` or `inout` array, whitespace-separated numbers in
// row-major order, exactly as many as it has elements (a CSR matrix of one's own, or a bad one:
// the reference executor checks ranges and indices before a GPU run reads through them).
void loadInputs(const Kernel& k, HostArgs& args, const RunArgs& r) {
  for (const std::string& spec : r.inputs) {
    const auto [name, path] = parseInputSpec(k, spec);
    loadArrayFile(k, args, name, path);
  }
}

// Reports the `out` arrays the kernel leaves partly unwritten (a GPU run of it could never verify:
// its result there is whatever the memory held); true if there are any.
bool unwrittenOutputs(const Kernel& bound, const ReferenceResult& result) {
  bool any = false;
  for (const ReferenceOutput& o : result.outputs) {
    if (o.unwritten <= 0 || bound.params[o.param].mode != ArrayMode::Out) continue;
    fmt::print(stderr, "rtcgc: error: kernel '{}' leaves {} of the {} elements of out array '{}' unwritten (the first at "
               "row-major index {})\n", bound.name, o.unwritten, o.values.size(), o.name, o.firstUnwritten);
    any = true;
  }
  return any;
}

int runRun(const Common& c, const RunArgs& r) {
  if (r.cpu && !r.schedule.empty()) {
    // The reference executor runs the loops as written; accepting a schedule it ignores looked
    // like a check of that schedule.
    fmt::print(stderr, "rtcgc: error: --schedule applies to GPU runs; run --cpu executes the kernel's loops as "
                       "written (check a schedule with `rtcgc emit --schedule`)\n");
    return kUsage;
  }
  SourceText src = readSource(c.file);
  if (r.cpu) {
    Kernel bound = boundKernel(c, src);
    checkHostMemory(bound, 1);
    HostArgs args(bound);
    fillInputs(bound, args, r.seed);
    loadInputs(bound, args, r);
    setScalars(bound, args, r);
    ReferenceOptions referenceOptions;
    referenceOptions.countUnwritten = true;
    ReferenceResult result = runReference(bound, args, referenceOptions);
    fmt::print("{} on the CPU reference executor: {:.3f} ms\n", bound.name, result.seconds * 1e3);
    for (const ReferenceOutput& o : result.outputs)
      fmt::print("  {}: {}\n", o.name, checksum(o.values).str());
    return unwrittenOutputs(bound, result) ? kInputError : kOk;
  }

  if (!cuda::cudaAvailable()) {
    fmt::print(stderr, "rtcgc: error: {}\n", cuda::unavailableReason());
    return kNoDevice;
  }
  std::shared_ptr<cuda::Context> ctx = cuda::Context::primary(0);
  const cuda::DeviceProperties& dev = ctx->device().properties();
  PipelineOptions options;
  options.kernelName = c.kernel;
  options.schedule = r.schedule;
  options.precision = c.policy();
  options.arch = dev.arch();
  options.limits = deviceScheduleLimits(int64_t(dev.sharedPerBlockOptin), dev.maxThreadsPerBlock, dev.multiprocessors,
                                        int64_t(dev.sharedPerMultiprocessor));
  Compiled compiled = compile(c, src, options);
  // The reference, the inputs and the tolerance are the kernel's as written; the module runs its
  // precision policy's rewrite (same parameters, kernel-local arrays of its own).
  const Kernel& bound = compiled.source;

  checkHostMemory(bound, 2);  // the arguments and the reference's copy of them
  HostArgs host(bound);
  fillInputs(bound, host, r.seed);
  loadInputs(bound, host, r);
  setScalars(bound, host, r);
  HostArgs refArgs = host;
  ReferenceProgram referenceProgram(bound);
  ReferenceOptions referenceOptions;
  referenceOptions.sampleSeed = r.seed;
  referenceOptions.sampleOuterValues =
      referenceSampleSize(arithmeticOps(bound), r.referenceMaxFlops, referenceProgram.outerExtents());
  ReferenceResult ref = referenceProgram.run(refArgs, referenceOptions);
  if (ref.sampled)
    fmt::print("reference: sampled ({} values of each nest's outer loop; {:.3g} arithmetic operations are over "
               "--reference-max-flops {:.3g})\n",
               referenceOptions.sampleOuterValues, double(arithmeticOps(bound)), r.referenceMaxFlops);

  Executable exe(ctx, compiled.kernel, compiled.module,
                 std::string_view(compiled.binary.cubin.data(), compiled.binary.cubin.size()));
  DeviceArgs dargs(ctx, compiled.kernel, host);
  cuda::Stream stream(ctx);
  exe.launch(dargs.args(), &stream);
  stream.synchronize();
  HostArgs gpu = host;
  dargs.download(bound, gpu);

  bool ok = true;
  auto verify = [&](const HostArgs& result, const char* when) {
    for (const ReferenceOutput& o : ref.outputs) {
      const HostArray& out = result.array(o.param);
      // Integer outputs exactly, whatever --tolerance says (it is for floats).
      Comparison cmp = compareWithReference(out, o);
      if (!o.computed.empty()) cmp.unwritten = countUnwritten(out, o.computed);
      double tol = r.tolerance >= 0 ? r.tolerance : verificationTolerance(bound, o.param, c.policy());
      bool pass = cmp.passes(tol);
      ok = ok && pass;
      fmt::print("  {}{}: {} ({}) {}\n", when, o.name, cmp.str(), cmp.exact ? "exact" : fmt::format("tolerance {:g}", tol),
                 pass ? "ok" : "MISMATCH");
    }
  };
  fmt::print("{} on {} ({}), schedule: {}\n", bound.name, dev.name, dev.arch(), printSchedule(compiled.schedule));
  verify(gpu, "");

  // Timing (inout arrays accumulate over the repeats; they are restored below).
  cuda::BenchmarkOptions bo;
  bo.repeats = r.repeats;
  cuda::BenchmarkResult t =
      cuda::benchmark(stream, [&](const cuda::Stream& s, int) { exe.launch(dargs.args(), &s); }, bo);
  // A module of several launches (nests, a policy's steps): each launch timed alone as well, in
  // order (each reads what the ones before it left), so the run says where the time goes.
  std::vector<std::string> perLaunch;
  if (exe.launches().size() > 1) {
    const std::vector<double> ms = exe.timeEachLaunch(dargs.args(), stream, bo);
    for (size_t n = 0; n < ms.size(); ++n) perLaunch.push_back(fmt::format("{} {:.4f}", exe.launches()[n].function, ms[n]));
  }
  // Once more after the timed launches, from fresh inputs and poisoned outputs: a kernel that
  // keeps state between launches (the arrival counters of a reduction split across blocks) must
  // leave it ready for the next one.
  dargs.reset(bound, host);
  exe.launch(dargs.args(), &stream);
  stream.synchronize();
  HostArgs again = host;
  dargs.download(bound, again);
  verify(again, "again after timing, ");
  double seconds = t.medianMs * 1e-3;
  // Floating-point operations per second; a kernel without any, its integer operations (GOP/s).
  const FloatOpsByPrecision ops = floatOpsByPrecision(bound);
  const bool integer = ops.total() == 0 && ops.integer > 0;
  const int64_t bytes = minimalBytes(bound);
  fmt::print("  time {:.4f} ms (median of {}, L2 flushed), {:.1f} {}, {:.1f} GB/s\n", t.medianMs, r.repeats,
             (integer ? ops.integer : ops.total()) / seconds * 1e-9, integer ? "GOP/s (integer)" : "GF/s",
             bytes / seconds * 1e-9);
  if (!perLaunch.empty())
    fmt::print("  per launch, ms (each alone, median of {}, L2 flushed): {}\n", r.repeats, fmt::join(perLaunch, ", "));
  return ok ? kOk : kMismatch;
}

// ---- explain -----------------------------------------------------------------------------------

struct ExplainArgs {
  std::string schedule, arch = "sm_90";
  int64_t maxSharedBytes = ScheduleLimits{}.maxSharedBytes;
  int64_t multiprocessors = 0;
};

// The plan of each nest under the schedule (default: the default schedule): what the emitter will
// generate, in words. A rejected schedule prints its reasons as errors (exit 1), as emit does.
int runExplain(const Common& c, const ExplainArgs& e) {
  checkArch(e.arch);
  SourceText src = readSource(c.file);
  Kernel bound = boundKernel(c, src);
  ScheduleLimits limits;
  limits.maxSharedBytes = e.maxSharedBytes;
  limits.computeCapability = computeCapabilityOf(e.arch);  // which mma shapes the target has
  setMultiprocessors(limits, e.multiprocessors, e.arch);
  Diagnostics diags;
  std::optional<ChosenSchedule> chosen = chooseSchedule(bound, e.schedule, limits, diags, c.policy());
  report(diags, src);
  if (!chosen) return kInputError;
  const Schedule* schedule = &chosen->schedule;
  const SchedulePlan& plan = chosen->plan;
  std::vector<std::string> sizes;
  for (const auto& [name, value] : bound.sizes) sizes.push_back(fmt::format("{}={}", name, value));
  fmt::print("kernel {} ({}) for {}, schedule: {}\n", bound.name, fmt::join(sizes, " "), e.arch,
             printSchedule(*schedule));
  if (!chosen->kernel.policy.empty()) fmt::print("{}", printPolicyRewrite(chosen->kernel));
  for (const NestPlan& n : plan.nests) fmt::print("{}", printPlan(chosen->kernel, n));
  for (const FusionGroup& g : plan.fusions) fmt::print("{}", printFusion(chosen->kernel, g));
  return kOk;
}

// ---- ir, devices -------------------------------------------------------------------------------

int runIr(const Common& c) {
  SourceText src = readSource(c.file);
  if (c.defines.empty()) {
    Diagnostics diags;
    std::optional<Kernel> k = frontKernel(src, c.kernel, diags);
    report(diags, src);
    if (!k) return kInputError;
    fputs(printKernel(*k).c_str(), stdout);
    return kOk;
  }
  fputs(printKernel(boundKernel(c, src)).c_str(), stdout);
  return kOk;
}

int runDevices() {
  if (!cuda::cudaAvailable()) {
    fmt::print(stderr, "rtcgc: error: {}\n", cuda::unavailableReason());
    return kNoDevice;
  }
  int n = cuda::Device::count();
  for (int i = 0; i < n; ++i) fmt::print("{}: {}\n", i, cuda::Device(i).properties().describe());
  return kOk;
}

void addPrecision(CLI::App* cmd, Common& c) {
  cmd->add_option("--precision", c.precision,
                  "tensor-core arithmetic contractions may use: ieee (default: no TF32; f64 contractions may use "
                  "FP64 mma), tf32x3 (3xTF32, FP32-class accuracy), tf32 (TF32 accuracy), fp64x / fp32x (f64 / f32 "
                  "contractions on INT8 tensor cores by the Ozaki scheme II, FP64- / FP32-class accuracy)")
      ->check(CLI::IsMember({"ieee", "tf32x3", "tf32", "fp64x", "fp32x"}));
}

void addCommon(CLI::App* cmd, Common& c, bool needFile = true) {
  cmd->add_option("file", c.file, "DSL source file")->required(needFile);
  cmd->add_option("-D,--define", c.defines, "bind a size parameter: -D n=500")->allow_extra_args(false);
  cmd->add_option("-k,--kernel", c.kernel, "the kernel to use when the file defines several");
}

}  // namespace

namespace {
int runMain(int argc, char** argv);
}

// A command that printed to a full or closed standard output failed, whatever it returned (`emit >
// /dev/full` exited 0, `db export > /dev/full` died as an internal error in fmt::print).
int main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write fails with EFBIG instead of killing the process, so
  // the writers' cleanup runs (temporaries, export staging directories) and the error is reported.
  std::signal(SIGXFSZ, SIG_IGN);
  int code = runMain(argc, argv);
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    fmt::print(stderr, "rtcgc: error: cannot write to standard output: {}\n", std::strerror(errno ? errno : EIO));
    return code == 0 || code == 70 ? 1 : code;
  }
  return code;
}

namespace {

int runMain(int argc, char** argv) {
  CLI::App app{"rtcgc: the rtcg loop-kernel compiler (DSL -> CUDA C -> cubin, CPU reference, GPU runs)", "rtcgc"};
  app.set_version_flag("--version", std::string("rtcgc ") + RTCG_VERSION);
  app.require_subcommand(1);
  app.footer("Exit codes: 0 ok, 1 input errors, 2 bad command line, 3 NVRTC failed, 4 no CUDA device, "
             "5 GPU result mismatch (tune: no candidate verified), 70 internal error.");

  Common common;
  EmitArgs emit;
  RunArgs run;

  CLI::App* check = app.add_subcommand("check", "check a program; with -D also prove bounds and race freedom");
  addCommon(check, common);

  CLI::App* emitCmd = app.add_subcommand("emit", "emit CUDA C (default), PTX or a cubin for bound sizes");
  addCommon(emitCmd, common);
  emitCmd->add_option("-s,--schedule", emit.schedule, "schedule text (default: the default schedule)");
  addPrecision(emitCmd, common);
  emitCmd->add_option("-o,--output", emit.output, "output file (default: standard output)")
      ->check(CLI::Validator([](std::string& p) { return p.empty() ? std::string("an empty file name") : std::string(); },
                             "FILE"));
  emitCmd->add_flag("--ptx", emit.ptx, "emit PTX compiled by NVRTC");
  emitCmd->add_flag("--cubin", emit.cubin, "emit a cubin compiled by NVRTC (needs -o)");
  emitCmd->add_flag("--resources", emit.resources, "print registers, shared and local memory per function");
  emitCmd->add_option("--arch", emit.arch, "target architecture (default sm_90)");
  emitCmd->add_option("--max-shared", emit.maxSharedBytes,
                      "bytes of shared memory a block's staged tiles may use (default 49152; above it they go to "
                      "dynamic shared memory, up to the device's opt-in limit: 232448 on sm_90, which `rtcgc run` "
                      "and the tuner use)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  emitCmd->add_option("--multiprocessors", emit.multiprocessors,
                      "the device's multiprocessors, which `mma: ... persistent` sizes its grid by (default: unknown, "
                      "and such a schedule refused; `run` and the tuner take the device's)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));
  emitCmd->add_flag("--nvrtc-log", emit.nvrtcLog, "print NVRTC's log (with ptxas -v output) to standard error");
  emitCmd->add_flag("--tuned", emit.tuned, "use the tuning database's best schedule for these sizes and --arch");
  emitCmd->add_option("--db", emit.db, "tuning database for --tuned (default: in the cache directory)");

  CLI::App* runCmd = app.add_subcommand("run", "run on random inputs: --cpu on the reference executor, else on the GPU");
  addCommon(runCmd, common);
  runCmd->add_flag("--cpu", run.cpu, "run the CPU reference executor and print checksums");
  runCmd->add_option("--seed", run.seed, "random seed for the inputs (default 1)")->check(nonNegative());
  runCmd->add_option("-s,--schedule", run.schedule, "schedule text (default: the default schedule)");
  addPrecision(runCmd, common);
  runCmd->add_option("-S,--scalar", run.scalars, "set a scalar parameter: -S alpha=2.5 (default random)");
  runCmd->add_option("--input", run.inputs,
                     "an in or inout array's values from a file: --input rowptr=rowptr.txt (whitespace-separated "
                     "numbers, row-major, as many as its elements; default random)");
  runCmd->add_option("--repeats", run.repeats, "timed repeats (default 20)")->check(CLI::Range(1, 100000));
  runCmd->add_option("--tolerance", run.tolerance,
                     "relative error allowed (default 1e-5 for f32, 1e-12 for f64, plus 2^-10 (f16) or 2^-7 (bf16) "
                     "where the kernel stores such arrays, scaled up by the square root of the reduction length / "
                     "256 for long reductions; integers exact)");
  CLI::Option* runMaxFlops =
      runCmd->add_option("--reference-max-flops", run.referenceMaxFlops,
                         "verify kernels of more floating-point operations than F against a sampled CPU reference "
                         "costing about F (default 2e9; 0: always the full reference)")
          ->check(nonNegative());
  bool runFullReference = false;
  runCmd->add_flag("--full-reference", runFullReference, "verify against the full CPU reference (no sampling)")
      ->excludes(runMaxFlops);

  ExplainArgs explain;
  CLI::App* explainCmd = app.add_subcommand("explain", "print the plan of each nest under a schedule: launch, index "
                                                       "parts, staged tiles, pipelines, split reductions, shared memory");
  addCommon(explainCmd, common);
  explainCmd->add_option("-s,--schedule", explain.schedule, "schedule text (default: the default schedule)");
  addPrecision(explainCmd, common);
  explainCmd->add_option("--arch", explain.arch, "target architecture (default sm_90)");
  explainCmd->add_option("--max-shared", explain.maxSharedBytes,
                         "bytes of shared memory a block's staged tiles may use (default 49152, as for emit)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 30));
  explainCmd->add_option("--multiprocessors", explain.multiprocessors,
                         "the device's multiprocessors, as for emit (`mma: ... persistent`)")
      ->check(CLI::Range(int64_t(1), int64_t(1) << 20));

  CLI::App* ir = app.add_subcommand("ir", "print the IR (bound when -D is given)");
  addCommon(ir, common);

  CLI::App* devices = app.add_subcommand("devices", "list CUDA devices");
  TuneCommand tuneCmd = addTuneCommand(app);
  DbCommand dbCmd = addDbCommand(app);
  ExportCommand exportCmd = addExportCommand(app);
  CudaCommand cudaCmd = addCudaCommand(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return kUsage;
  }

  return runCommand([&]() -> int {
    if (check->parsed()) return runCheck(common);
    if (emitCmd->parsed()) return runEmit(common, emit);
    if (runCmd->parsed()) {
      if (runFullReference) run.referenceMaxFlops = 0;
      return runRun(common, run);
    }
    if (explainCmd->parsed()) return runExplain(common, explain);
    if (ir->parsed()) return runIr(common);
    if (devices->parsed()) return runDevices();
    if (tuneCmd.command->parsed()) return runTuneCommand(tuneCmd);
    if (dbCmd.cmd->parsed()) return runDbCommand(dbCmd);
    if (exportCmd.command->parsed()) return runExportCommand(exportCmd);
    if (cudaCmd.command->parsed()) return runCudaCommand(cudaCmd);
    return kUsage;
  });
}

}  // namespace
