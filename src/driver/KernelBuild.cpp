#include "driver/KernelBuild.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "codegen/HalfHeaders.h"
#include "driver/Pipeline.h"
#include "runtime/Hash.h"
#include "support/Diagnostics.h"

namespace rtcg {

std::vector<DiagnosticRecord> diagnosticRecords(const Diagnostics& diags, std::string_view fileName) {
  std::vector<DiagnosticRecord> out;
  for (const Diagnostic& d : diags.all()) {
    DiagnosticRecord r;
    r.file = std::string(fileName);
    if (d.loc.valid()) r.line = d.loc.line, r.column = d.loc.col, r.length = d.loc.length;
    r.severity = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
    r.message = d.message;
    out.push_back(std::move(r));
  }
  return out;
}

// rtcg::CompileError with the rendered diagnostics (the API's form of a user error) and the same
// as records.
[[noreturn]] void throwDiagnostics(const Diagnostics& diags, const SourceText& src) {
  std::string text = renderDiagnostics(diags, src);
  std::vector<DiagnosticRecord> records = diagnosticRecords(diags, src.fileName);
  if (text.empty()) {
    text = fmt::format("{}: the kernel could not be compiled\n", src.fileName);
    records.push_back({src.fileName, 0, 0, 0, "error", "the kernel could not be compiled"});
  }
  throw CompileError(text, std::move(records));
}

ProvedKernel proveKernel(std::string_view source, const Sizes& sizes, const CompileOptions& options) {
  SourceText src{options.fileName, std::string(source)};
  Diagnostics diags;
  std::optional<Kernel> bound = rtcg::proveKernel(src, sizes, options.kernel, diags);
  if (!bound) throwDiagnostics(diags, src);
  return ProvedKernel{std::move(*bound), std::move(diags)};
}

PreparedKernel prepareProved(std::string_view source, const ProvedKernel& proved, const CompileOptions& options,
                             const ScheduleLimits& limits, int arrayAlignment) {
  PipelineOptions po;
  po.limits = limits;
  po.arrayAlignment = arrayAlignment;
  po.kernelName = options.kernel;
  po.schedule = options.schedule;
  po.precision = precisionOf(options);
  po.compile = false;  // the cubin comes from the kernel cache (or NVRTC through it)
  Diagnostics diags = proved.diagnostics;
  std::optional<Compiled> compiled = compileProved(proved.bound, po, diags);
  if (!compiled) throwDiagnostics(diags, SourceText{options.fileName, std::string(source)});
  PreparedKernel out{std::move(compiled->kernel), std::move(compiled->schedule), "", std::move(compiled->module)};
  out.scheduleText = printSchedule(out.schedule);
  return out;
}

PreparedKernel prepareKernel(std::string_view source, const Sizes& sizes, const CompileOptions& options,
                             const ScheduleLimits& limits) {
  return prepareProved(source, proveKernel(source, sizes, options), options, limits);
}

Kernel tuningTarget(std::string_view source, const Sizes& sizes, const CompileOptions& options) {
  return proveKernel(source, sizes, options).bound;  // the key does not depend on the schedule
}

std::string requestKey(std::string_view source, const Sizes& sizes, const CompileOptions& options) {
  // The tuning policy is part of the request: the same source may be served untuned and tuned.
  const char* policyOverride = std::getenv("RTCG_TUNING");
  std::vector<std::string> parts{"rtcg-request-v2", std::string(source), options.kernel, options.schedule,
                                 fmt::format("tuning={}/{}", int(options.tuning), policyOverride ? policyOverride : ""),
                                 precisionName(precisionOf(options))};
  for (const auto& [name, value] : sizes) parts.push_back(fmt::format("{}={}", name, value));
  return hashKey(parts);
}

std::string cubinKey(const std::string& cudaSource, const std::string& arch) {
  std::vector<std::string> parts{"rtcg-cubin-v1", cudaSource, arch, nvrtcVersionString(), RTCG_VERSION,
                                 fmt::format("{}", fmt::join(nvrtcOptions(), "\x1f"))};
  // rtcg's own NVRTC headers compile with the source that includes them: their text is part of the
  // key of such a kernel (a changed header must not serve an old cubin), and of no other kernel's.
  for (const auto& [name, text] : nvrtcHalfHeaders())
    if (cudaSource.find("#include <" + name + ">") != std::string::npos) parts.push_back(text);
  return hashKey(parts);
}

std::string compileCubin(const PreparedKernel& k, const std::string& arch) {
  CudaCompileResult r = compileGenerated(k.bound.name, k.module.source, arch);
  if (!r.success) throw Error(nvrtcFailureMessage(k.bound.name, arch, r.log));
  if (r.cubin.empty()) throw Error(fmt::format("NVRTC produced no cubin for '{}' ({})", k.bound.name, arch));
  return std::string(r.cubin.begin(), r.cubin.end());
}

}  // namespace rtcg
