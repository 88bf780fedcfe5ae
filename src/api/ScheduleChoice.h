// How compile() picks the schedule of a kernel, without a device: the explicit one, else the
// tuning database's (or a search's), else the default, as CompileOptions::tuning says. The
// database is a help, never a requirement: a database that cannot be found, opened or read, or a
// stored schedule that no longer plans for this kernel, is a warning and the next choice is used.
// Context::compile gives the device's key and limits; the tests give recorded ones.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "driver/KernelBuild.h"
#include "rtcg/rtcg.h"
#include "tune/TuningDb.h"

namespace rtcg {

// Where compile()'s warnings and notes go: to CompileOptions::log when the caller gave one (every
// message); else warnings to stderr once per process (the same warning from every compile would
// bury the program's output), and notes (which schedule was used and why) to stderr only when the
// environment variable RTCG_LOG is set (to anything but 0, off, false or no).
class CompileLog {
 public:
  explicit CompileLog(std::function<void(const std::string&)> sink) : sink_(std::move(sink)) {}
  void warn(const std::string& message);  // "rtcg: warning: " + message
  void note(const std::string& message);  // "rtcg: " + message

 private:
  std::function<void(const std::string&)> sink_;
};

struct ScheduleChoice {
  PreparedKernel prepared;
  std::string origin;  // CompiledKernel::scheduleOrigin()
};

struct ScheduleInputs {
  TuningKey key;                      // the device's key for the proved kernel (tuningKeyFor)
  ScheduleLimits limits;              // the device's (deviceScheduleLimits)
  std::optional<std::string> dbPath;  // nullopt: TuningDb::existingDefaultPath()
  bool dbSnapshot = false;            // read it as TuningDb::Access::Snapshot
  // Runs a search now (Tuning::TuneOnFirstUse) and returns its winner; empty: no search possible.
  std::function<std::optional<CandidateRecord>()> tuneNow;
};

// Schedules and emits `proved`. Throws rtcg::Error only for the caller's own mistakes (a bad
// explicit schedule) or a default schedule that cannot be emitted, never for the database.
ScheduleChoice pickSchedule(std::string_view source, const ProvedKernel& proved, const CompileOptions& options,
                              Tuning policy, const ScheduleInputs& inputs, CompileLog& log);

}  // namespace rtcg
