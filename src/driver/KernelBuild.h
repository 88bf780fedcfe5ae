// The host side of Context::compile, testable without a device: DSL source and sizes to a bound,
// proved, scheduled kernel with its CUDA C (errors as rtcg::Error holding the rendered
// diagnostics); the cache keys; and NVRTC compilation of the emitted source to a cubin.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "codegen/Emitter.h"
#include "ir/IR.h"
#include "rtcg/rtcg.h"
#include "schedule/Schedule.h"
#include "support/Diagnostics.h"

namespace rtcg {

struct SourceText;

// The diagnostics as the public API's records (rtcg/Error.h), each in `fileName`.
std::vector<DiagnosticRecord> diagnosticRecords(const Diagnostics& diags, std::string_view fileName);
// Throws rtcg::CompileError: the diagnostics rendered against `src` (the API's form of a user
// error), and as records.
[[noreturn]] void throwDiagnostics(const Diagnostics& diags, const SourceText& src);

struct PreparedKernel {
  Kernel bound;            // sizes bound, accesses proved in bounds, nests proved race-free
  Schedule schedule;
  std::string scheduleText;  // printSchedule(schedule)
  EmittedModule module;    // CUDA C and launch specs
};

// Runs the pipeline up to CUDA C (no NVRTC). Throws rtcg::Error whose message is the rendered
// diagnostics of bad source, sizes or schedule. `limits`: the device's (deviceScheduleLimits).
// The schedule layer's policy for the API's (the same three values, in the same order).
inline Precision precisionOf(PrecisionPolicy p) { return Precision(uint8_t(p)); }
inline Precision precisionOf(const CompileOptions& options) { return precisionOf(options.precision); }
static_assert(uint8_t(PrecisionPolicy::Tf32x3) == uint8_t(Precision::Tf32x3) && uint8_t(PrecisionPolicy::Tf32) == uint8_t(Precision::Tf32));
static_assert(uint8_t(PrecisionPolicy::Fp64x) == uint8_t(Precision::Fp64x) && uint8_t(PrecisionPolicy::Fp32x) == uint8_t(Precision::Fp32x));

PreparedKernel prepareKernel(std::string_view source, const Sizes& sizes, const CompileOptions& options,
                             const ScheduleLimits& limits = {});

// The same in two halves, so that a caller runs the front end and the proof once: proveKernel
// gives the kernel options.kernel names with its sizes bound and proved (options.schedule is not
// looked at); prepareProved schedules (options.schedule, or the default) and emits it. Both throw
// rtcg::Error with the diagnostics rendered against `source`.
struct ProvedKernel {
  Kernel bound;
  // The front end's and the proof's warnings (e.g. an indirect index checked at run time): an
  // error of a later step is rendered with them, as when the pipeline runs in one go.
  Diagnostics diagnostics;
};
ProvedKernel proveKernel(std::string_view source, const Sizes& sizes, const CompileOptions& options);
// `arrayAlignment`: what the emitted code may assume of array addresses (codegen/Emitter.h); the
// default is whole allocations, a smaller power of two gives the variant for external memory.
PreparedKernel prepareProved(std::string_view source, const ProvedKernel& proved, const CompileOptions& options,
                             const ScheduleLimits& limits = {}, int arrayAlignment = kWholeAllocationAlignment);

// The bound kernel whose tuning-database entry Context::compile looks up (Tuning::UseCached) or
// writes (Tuning::TuneOnFirstUse) for (source, sizes, options) when options.schedule is empty: the
// kernel options.kernel names (the only one when empty), its sizes bound and proved. `rtcgc tune
// --manifest` tunes exactly this kernel, under tuningKeyFor(it, device), so an application finds
// what was tuned ahead of time. Throws rtcg::Error with the rendered diagnostics.
Kernel tuningTarget(std::string_view source, const Sizes& sizes, const CompileOptions& options);

// Identifies a compile() request: source text, kernel name, schedule text and sizes. Two requests
// with the same key give the same PreparedKernel.
std::string requestKey(std::string_view source, const Sizes& sizes, const CompileOptions& options);

// Identifies a cubin: the emitted CUDA source (which fully determines the code), the target
// architecture, the NVRTC version and options, and the rtcg version.
std::string cubinKey(const std::string& cudaSource, const std::string& arch);

// Compiles the emitted source with NVRTC for `arch`; returns the cubin bytes. NVRTC failing on
// generated code is a bug in rtcg's emitter: rtcg::Error with NVRTC's log.
std::string compileCubin(const PreparedKernel& k, const std::string& arch);

}  // namespace rtcg
