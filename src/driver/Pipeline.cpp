#include "driver/Pipeline.h"

#include <fmt/format.h>

#include "frontend/Frontend.h"
#include "ir/Analysis.h"
#include "ir/Coverage.h"
#include "ir/Bind.h"
#include "schedule/Mma.h"
#include "schedule/PolicyRewrite.h"
#include "support/Error.h"

namespace rtcg {

std::optional<Kernel> frontKernel(const SourceText& src, const std::string& kernelName, Diagnostics& diags,
                                  Program* programOut) {
  std::optional<Program> program = parseProgram(src.fileName, src.text, diags);
  if (!program) return std::nullopt;
  if (programOut) *programOut = *program;
  if (program->kernels.empty()) {
    diags.error({}, "the file defines no kernel");
    return std::nullopt;
  }
  if (kernelName.empty()) {
    if (program->kernels.size() == 1) return program->kernels.front();
    std::string names;
    for (const Kernel& k : program->kernels) names += (names.empty() ? "" : ", ") + k.name;
    diags.error({}, fmt::format("the file defines {} kernels ({}); choose one with --kernel NAME",
                                program->kernels.size(), names));
    return std::nullopt;
  }
  if (const Kernel* k = program->find(kernelName)) return *k;
  std::string names;
  for (const Kernel& k : program->kernels) names += (names.empty() ? "" : ", ") + k.name;
  diags.error({}, fmt::format("no kernel named '{}' in the file (it defines: {})", kernelName, names));
  return std::nullopt;
}

std::optional<Kernel> bindAndProve(const Kernel& k, const SizeBindings& sizes, Diagnostics& diags) {
  std::optional<Kernel> bound = bindSizes(k, sizes, diags);
  if (!bound) return std::nullopt;
  // Both checks run so that one run reports every problem.
  bool inBounds = checkBounds(*bound, diags);
  bool raceFree = checkRaces(*bound, diags);
  bool written = checkOutputsWritten(*bound, diags);
  if (!inBounds || !raceFree || !written || diags.hasErrors()) return std::nullopt;
  return bound;
}

std::optional<ChosenSchedule> chooseSchedule(const Kernel& proved, const std::string& text, const ScheduleLimits& limits,
                                             Diagnostics& diags, Precision precision) {
  // A rewriting policy's obstacles are its rewrite's errors (with their locations): rewritten once.
  if (std::string why = precisionRewrites(precision) ? "" : precisionObstacle(proved, precision); !why.empty()) {
    diags.error({}, why);
    return std::nullopt;
  }
  std::optional<Kernel> rewritten = applyPolicy(proved, precision, diags);
  if (!rewritten) return std::nullopt;
  const Kernel& bound = *rewritten;
  Schedule schedule;
  if (text.empty()) {
    schedule = defaultSchedule(bound, limits);
  } else {
    ScheduleParseResult parsed = parseSchedule(text);
    if (!parsed.ok()) {
      diags.error({}, fmt::format("bad schedule at column {}: {}\n  {}\n  {}^", parsed.column, parsed.error, text,
                                  std::string(parsed.column > 1 ? parsed.column - 1 : 0, ' ')));
      return std::nullopt;
    }
    schedule = std::move(*parsed.schedule);
  }
  SchedulePlan plan = planSchedule(bound, schedule, limits);
  std::vector<std::string> reasons = plan.reasons;
  if (!text.empty())
    for (std::string& r : precisionReasons(schedule, precision)) reasons.push_back(std::move(r));
  for (const std::string& r : reasons) diags.error({}, "illegal schedule: " + r);
  if (!reasons.empty()) return std::nullopt;
  return ChosenSchedule{std::move(*rewritten), std::move(schedule), std::move(plan)};
}

std::optional<Compiled> compilePipeline(const SourceText& src, const SizeBindings& sizes,
                                        const PipelineOptions& options, Diagnostics& diags, bool* nvrtcFailed) {
  if (nvrtcFailed) *nvrtcFailed = false;
  std::optional<Kernel> bound = proveKernel(src, sizes, options.kernelName, diags);
  if (!bound) return std::nullopt;
  return compileProved(*bound, options, diags, nvrtcFailed);
}

std::optional<Kernel> proveKernel(const SourceText& src, const SizeBindings& sizes, const std::string& kernelName,
                                  Diagnostics& diags) {
  std::optional<Kernel> kernel = frontKernel(src, kernelName, diags);
  if (!kernel) return std::nullopt;
  return bindAndProve(*kernel, sizes, diags);
}

std::optional<Compiled> compileProved(const Kernel& bound, const PipelineOptions& options, Diagnostics& diags,
                                      bool* nvrtcFailed) {
  if (nvrtcFailed) *nvrtcFailed = false;
  // The architecture NVRTC compiles for decides which mma shapes exist (FP64 m16n8k*: sm_90).
  ScheduleLimits limits = options.limits;
  if (limits.computeCapability == 0) limits.computeCapability = computeCapabilityOf(options.arch);
  std::optional<ChosenSchedule> chosen = chooseSchedule(bound, options.schedule, limits, diags, options.precision);
  if (!chosen) return std::nullopt;

  Compiled out{chosen->kernel, chosen->schedule, emitCuda(chosen->kernel, chosen->plan, options.arrayAlignment), {},
               bound};
  if (!options.compile) return out;
  out.binary = compileGenerated(bound.name, out.module.source, options.arch, options.wantPtx);
  if (!out.binary.success) {
    if (nvrtcFailed) *nvrtcFailed = true;
    diags.error({}, nvrtcFailureMessage(bound.name, options.arch, out.binary.log));
    return std::nullopt;
  }
  return out;
}

CudaCompileResult compileThroughNvrtc(const std::string& fileName, const std::string& cudaSource,
                                      const std::string& arch, const std::vector<std::string>& userOptions,
                                      bool wantPtx) {
  std::vector<std::string> options = nvrtcOptions();
  options.insert(options.end(), userOptions.begin(), userOptions.end());
  return compileCuda(cudaSource, fileName, nvrtcArchFor(cudaSource, arch), options, wantPtx);
}

CudaCompileResult compileGenerated(const std::string& kernelName, const std::string& cudaSource,
                                   const std::string& arch, bool wantPtx) {
  return compileThroughNvrtc(kernelName + ".cu", cudaSource, arch, {}, wantPtx);
}

std::string nvrtcFailureMessage(const std::string& kernelName, const std::string& arch, const std::string& log) {
  return fmt::format("NVRTC could not compile the generated CUDA C of '{}' for {} (this is a bug in rtcg's emitter; "
                     "please report it with the kernel):\n{}",
                     kernelName, arch, log);
}

std::string renderDiagnostics(const Diagnostics& diags, const SourceText& src) {
  return diags.render(src.fileName, src.text);
}

}  // namespace rtcg
