// The compile pipeline as one visible list of steps, shared by rtcgc, the embedding API
// (driver/KernelBuild.h) and the tuner (its compile pool and worker processes):
//
//   source --parseProgram--> Program --selectKernel--> Kernel --bindSizes--> bound Kernel
//          --checkBounds, checkRaces--> proved Kernel --schedule (default or parsed, validated)-->
//          --emitCuda--> CUDA C + launch specs --compileGenerated (NVRTC)--> cubin
//
// Each step reports user errors as Diagnostics (rendered with the DSL source) and stops there.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "ir/IR.h"
#include "schedule/Schedule.h"
#include "support/Diagnostics.h"

namespace rtcg {

struct SourceText {
  std::string fileName;
  std::string text;
};

// Parses the source and picks the kernel named `kernelName` (or the only kernel when empty).
std::optional<Kernel> frontKernel(const SourceText& src, const std::string& kernelName, Diagnostics& diags,
                                  Program* programOut = nullptr);

// Binds sizes and proves accesses in bounds and nests race-free.
std::optional<Kernel> bindAndProve(const Kernel& k, const SizeBindings& sizes, Diagnostics& diags);

// The schedule: parsed from `text` and validated against the kernel under `limits`, or the
// default schedule when `text` is empty. Errors go to diags (without a DSL location). The
// precision policy must apply to the kernel (precisionObstacle) and allow the schedule's mma
// arithmetic (precisionReasons, schedule/Mma.h). A policy that rewrites contractions (fp64x,
// fp32x) is applied first (applyPolicy, schedule/PolicyRewrite.h): the schedule is one of the
// rewritten kernel, which comes with it.
// The schedule comes with its plan (planned once; the emitter and `explain` read it).
struct ChosenSchedule {
  Kernel kernel;  // what the schedule schedules: the proved kernel, or its policy's rewrite
  Schedule schedule;
  SchedulePlan plan;
};
std::optional<ChosenSchedule> chooseSchedule(const Kernel& bound, const std::string& text, const ScheduleLimits& limits,
                                             Diagnostics& diags, Precision precision = Precision::Ieee);

struct Compiled {
  Kernel kernel;  // bound (its precision policy's rewrite, where one applies): what the module runs
  Schedule schedule;
  EmittedModule module;
  CudaCompileResult binary;  // NVRTC output (empty when PipelineOptions::compile is false)
  Kernel source;  // bound as written: its reference, inputs and tolerance are the run's (the same parameters)
};

struct PipelineOptions {
  std::string kernelName;
  std::string schedule;
  std::string arch = "sm_90";
  bool wantPtx = false;
  bool compile = true;  // run NVRTC (false: stop after emitting CUDA C)
  // What the schedule may use. Where a device is known, its limits (deviceScheduleLimits), so
  // that the tiles the tuner found in dynamic shared memory compile.
  ScheduleLimits limits;
  // What the code may assume of array addresses (codegen/Emitter.h): 16 for whole allocations.
  int arrayAlignment = kWholeAllocationAlignment;
  // Which tensor-core arithmetic f32 contractions may use (schedule/Schedule.h).
  Precision precision = Precision::Ieee;
};

// The whole pipeline. On failure returns nullopt with diags set; an NVRTC failure (a bug in the
// emitter, never the user's) is reported as an error whose message holds the NVRTC log, and
// `nvrtcFailed` is set. It is proveKernel, then compileProved.
std::optional<Compiled> compilePipeline(const SourceText& src, const SizeBindings& sizes,
                                        const PipelineOptions& options, Diagnostics& diags,
                                        bool* nvrtcFailed = nullptr);

// The first half: front end, size binding and proof of the kernel options.kernelName names.
std::optional<Kernel> proveKernel(const SourceText& src, const SizeBindings& sizes, const std::string& kernelName,
                                  Diagnostics& diags);

// The second half, on a kernel proveKernel gave: schedule, emitter and (with options.compile)
// NVRTC. A caller that needs the proved kernel before it knows the schedule (Context::compile
// looks the schedule up in the tuning database by the proved kernel) runs the front end once.
std::optional<Compiled> compileProved(const Kernel& bound, const PipelineOptions& options, Diagnostics& diags,
                                      bool* nvrtcFailed = nullptr);

// The one route from CUDA C to NVRTC: generated code (compileGenerated) and raw CUDA modules
// (driver/RawModule.h) both compile here, with nvrtcOptions() (codegen/Nvrtc.h) first, then
// `userOptions` (a raw module's own: -DTILE=128, --use_fast_math; none for generated code), for
// the architecture nvrtcArchFor picks, under the name `fileName` (what NVRTC's messages say).
CudaCompileResult compileThroughNvrtc(const std::string& fileName, const std::string& cudaSource,
                                      const std::string& arch, const std::vector<std::string>& userOptions,
                                      bool wantPtx);

// Generated code's use of that route: the pipeline, the kernel cache (compileCubin) and the
// tuner's compile pool and compile workers all compile here, under `<kernelName>.cu`, so that a
// cubin does not depend on which of them built it.
CudaCompileResult compileGenerated(const std::string& kernelName, const std::string& cudaSource,
                                   const std::string& arch, bool wantPtx = false);

// The message for NVRTC failing on generated code: a bug in rtcg's emitter, never the user's.
std::string nvrtcFailureMessage(const std::string& kernelName, const std::string& arch, const std::string& log);

// Renders diagnostics against the source.
std::string renderDiagnostics(const Diagnostics& diags, const SourceText& src);

}  // namespace rtcg
