// `rtcgc export`: a kernel compiled ahead of time for several architectures, as cubins and a
// generated C++ header that launches them through the CUDA driver API (ExportHeader.h), so that an
// application ships tuned kernels with neither NVRTC nor the front end. Also the tuning-database
// lookup that `export --tuned` and `emit --tuned` share.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Schedule.h"

struct ExportArgs {
  std::string file;
  std::vector<std::string> defines;
  std::string kernel;
  std::string schedule;
  bool tuned = false;
  std::string db;  // empty: the default database
  std::string archs = "sm_90";
  std::string output;
  std::string precision = "ieee";  // --precision: which mma arithmetic the schedule may use
};

struct ExportCommand {
  CLI::App* command = nullptr;
  std::shared_ptr<ExportArgs> args;
};

ExportCommand addExportCommand(CLI::App& app);

// 0 ok, 1 input error (program, sizes, schedule, no tuned schedule, output directory), 2 bad
// command line, 3 NVRTC failed, 70 internal error.
int runExportCommand(const ExportCommand& cmd);

// The tuning database's fastest verified schedule for `bound` compiled for `arch`, under the exact
// key: where device 0 is of that architecture, its key (as Context::compile looks it up);
// elsewhere the one key of this kernel hash, architecture and rtcg version the database holds.
// `used` says where it came from (device, time). Throws rtcg::Error saying why when there is none,
// or when several devices' keys match and no device says which.
// `precision`: the policy the schedule was tuned under (part of the key, tune/TuningKeyFor.h).
std::string tunedSchedule(const rtcg::Kernel& bound, const std::string& arch, const std::string& dbPath,
                          std::string* used, rtcg::Precision precision = rtcg::Precision::Ieee);

// What a schedule may use on `arch` (its shared memory opt-in limit), for the architectures export
// supports; ScheduleLimits{} for others.
rtcg::ScheduleLimits exportScheduleLimits(const std::string& arch);
