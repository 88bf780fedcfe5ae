// Runs emitted CUDA on the host: the source is compiled with the system g++ after
// cuda_host_emulation.h into a shared object, loaded, and each launch runs on its grid with the
// threads of a block as fibers of one thread (cuda_host_emulation.h). Lets the tests check the emitted code's results against the
// reference executor for any schedule, without a GPU.
#pragma once

#include <string>

#include "codegen/Emitter.h"
#include "ir/IR.h"
#include "reference/HostArgs.h"
#include "schedule/Schedule.h"

namespace rtcg::testing {

struct EmulationOptions {
  // Runs of the whole kernel in the same loaded module. Before every run after the first, the
  // `out` arrays are poisoned (poison()), so a run that does not write them shows. After every
  // run, the arrival counters of the functions with global scratch must be back at 0.
  int runs = 1;
  int blockOrder = 0;  // the order the blocks run in: 0 grid order, 1 reversed, 2 shuffled
  // Scans' look-back: tiles publish their aggregates only (RTCG_SCAN_HOLD_PREFIX), so that each
  // look-back combines the aggregates of every tile before it in its line.
  bool scanHoldPrefix = false;
};

// Emits `k` under `s` (with `limits`), runs it on the host on `args` (written arrays updated in
// place). Returns an empty string on success, else what went wrong (compiler log, ...).
std::string runEmittedOnHost(const Kernel& k, const Schedule& s, HostArgs& args, const ScheduleLimits& limits = {},
                             const EmulationOptions& options = {});

// Fills the inputs (fillInputs, scalars 1.25, 0.75, ...), runs the reference and the emitted
// code on the host, and returns "" if every written array matches within `tolerance` (relative
// L2 error), else a description of the mismatch.
std::string checkOnHost(const Kernel& k, const std::string& schedule, double tolerance = 1e-5,
                        const ScheduleLimits& limits = {}, const EmulationOptions& options = {});

// checkOnHost for a kernel a precision policy rewrote: inputs and scalars as checkOnHost fills
// them, the reference of `proved`, the emulation of `scheduled` (checkScheduledOnHostWith).
std::string checkScheduledOnHost(const Kernel& proved, const Kernel& scheduled, const std::string& schedule,
                                 double tolerance = 1e-5, const ScheduleLimits& limits = {},
                                 const EmulationOptions& options = {});

// checkOnHost on the given arguments (inputs as the caller filled them: a CSR matrix of its own).
std::string checkOnHostWith(const Kernel& k, const std::string& schedule, HostArgs args, double tolerance = 1e-5,
                            const ScheduleLimits& limits = {}, const EmulationOptions& options = {});

// The same for a kernel a precision policy rewrote (schedule/PolicyRewrite.h): the reference runs
// `proved` (the kernel as written), the emulation `scheduled` (its rewrite) under the schedule.
std::string checkScheduledOnHostWith(const Kernel& proved, const Kernel& scheduled, const std::string& schedule,
                                     HostArgs args, double tolerance = 1e-5, const ScheduleLimits& limits = {},
                                     const EmulationOptions& options = {});

}  // namespace rtcg::testing
