#include "api/ScheduleChoice.h"

#include <fmt/format.h>

#include <cstdio>
#include <mutex>
#include <set>
#include <vector>

#include "runtime/StateDirs.h"
#include "support/Error.h"
#include "tune/TuningLookup.h"

namespace rtcg {

namespace {

bool envSwitchOn(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return false;
  std::string s(v);
  return s != "0" && s != "off" && s != "false" && s != "no";
}

}  // namespace

void CompileLog::warn(const std::string& message) {
  std::string line = "rtcg: warning: " + message;
  if (sink_) return sink_(line);
  static std::mutex mutex;
  static std::set<std::string> shown;
  std::lock_guard lock(mutex);
  if (shown.insert(line).second) std::fprintf(stderr, "%s\n", line.c_str());
}

void CompileLog::note(const std::string& message) {
  std::string line = "rtcg: " + message;
  if (sink_) return sink_(line);
  if (envSwitchOn("RTCG_LOG")) std::fprintf(stderr, "%s\n", line.c_str());
}

namespace {

std::string describe(const TuningKey& k) {
  return fmt::format("{} ({}) on {} {} ({} multiprocessors), driver {}, NVRTC {}, rtcg {}", k.kernelName, k.sizes,
                     k.device, k.arch, k.multiprocessors, k.driverVersion, k.nvrtcVersion, k.rtcgVersion);
}

// A database schedule to try, and the rung of the lookup it came from.
struct Offer {
  std::string schedule;
  std::string origin;
  std::string from;  // the key it was measured for, in words
  // A schedule of the exact key that no longer plans is news (rtcg changed under the database);
  // one of a lower rung not fitting this kernel's sizes is expected, and only noted.
  bool warnIfStale = true;
};

// The schedules the database offers for the key: the exact key's best, or (exact false) the lower
// rungs' bests in ladder order. Nullopt, with a warning the first time, when there is no database
// or it cannot be read (the lower rungs are then not asked for).
std::optional<std::vector<Offer>> databaseOffers(const ScheduleInputs& in, bool exact, CompileLog& log) {
  std::string warning;
  std::optional<std::string> path = in.dbPath ? in.dbPath : TuningDb::existingDefaultPath(&warning);
  if (!warning.empty() && exact) log.warn(warning);
  if (!path) return std::nullopt;
  std::vector<Offer> offers;
  try {
    TuningDb db(*path, in.dbSnapshot ? TuningDb::Access::Snapshot : TuningDb::Access::ReadOnly);
    if (exact) {
      if (std::optional<CandidateRecord> best = db.best(in.key))
        offers.push_back({best->schedule, rungOrigin(LookupRung::Exact), describe(in.key), true});
    } else {
      for (const LookupOffer& o : lookupBelowExact(db, in.key))
        offers.push_back({o.best.schedule, rungOrigin(o.rung), describe(o.key), false});
    }
  } catch (const Error& e) {
    if (exact) log.warn(fmt::format("the tuning database cannot be read, tuned schedules are not used: {}", e.what()));
    return std::nullopt;
  }
  return offers;
}

// The first offer that still plans for this kernel (a schedule stored by another rtcg version, or
// for another device's limits, may not).
std::optional<ScheduleChoice> firstThatPlans(std::string_view source, const ProvedKernel& proved,
                                             const CompileOptions& options, const std::vector<Offer>& offers,
                                             const ScheduleLimits& limits, CompileLog& log) {
  for (const Offer& offer : offers) {
    CompileOptions effective = options;
    effective.schedule = offer.schedule;
    try {
      ScheduleChoice choice{prepareProved(source, proved, effective, limits), offer.origin};
      log.note(fmt::format("{}: schedule from the {} (measured for {}): {}", proved.bound.name, offer.origin,
                           offer.from, choice.prepared.scheduleText));
      return choice;
    } catch (const std::exception& e) {
      // Any failure, a user error or not: a stored row is data from elsewhere (another rtcg, an
      // import, a hand edit), and the kernel still compiles under the next offer or the default.
      std::string message = fmt::format("{}: the stored schedule '{}' (measured for {}) does not plan for this "
                                        "kernel, skipped: {}",
                                        proved.bound.name, offer.schedule, offer.from, e.what());
      offer.warnIfStale ? log.warn(message) : log.note(message);
    }
  }
  return std::nullopt;
}

std::optional<ScheduleChoice> tunedNow(std::string_view source, const ProvedKernel& proved,
                                       const CompileOptions& options, const ScheduleInputs& in, CompileLog& log) {
  if (!in.tuneNow) return std::nullopt;
  std::optional<CandidateRecord> best = in.tuneNow();
  if (!best) return std::nullopt;
  return firstThatPlans(source, proved, options, {{best->schedule, "tuned", "this device, now", true}}, in.limits,
                        log);
}

}  // namespace

ScheduleChoice pickSchedule(std::string_view source, const ProvedKernel& proved, const CompileOptions& options,
                              Tuning policy, const ScheduleInputs& in, CompileLog& log) {
  if (!options.schedule.empty()) return {prepareProved(source, proved, options, in.limits), "explicit"};
  // The exact key, then (asked to tune) a search now, then the lower rungs of the ladder: a search
  // measures this very key, which beats another driver's or size's measurement.
  if (policy != Tuning::Off) {
    std::optional<std::vector<Offer>> exact = databaseOffers(in, true, log);
    if (exact)
      if (auto choice = firstThatPlans(source, proved, options, *exact, in.limits, log)) return *choice;
    if (policy == Tuning::TuneOnFirstUse)
      if (auto choice = tunedNow(source, proved, options, in, log)) return *choice;
    if (exact)
      if (auto below = databaseOffers(in, false, log))
        if (auto choice = firstThatPlans(source, proved, options, *below, in.limits, log)) return *choice;
  }
  ScheduleChoice choice{prepareProved(source, proved, options, in.limits), "default"};
  log.note(fmt::format("{}: the default schedule: {}", proved.bound.name, choice.prepared.scheduleText));
  return choice;
}

}  // namespace rtcg
