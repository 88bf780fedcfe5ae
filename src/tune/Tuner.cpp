#include "tune/Tuner.h"

#include "tune/TuningKeyFor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <optional>
#include <nlohmann/json.hpp>

#include "ir/Analysis.h"
#include "ir/Counts.h"
#include "reference/Compare.h"
#include "reference/Reference.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "tune/CompilePool.h"
#include "tune/Verify.h"
#include "tune/WarmStart.h"
#include "tune/WorkerProcess.h"
#include "tune/WorkerProtocol.h"

#ifndef RTCG_VERSION
#define RTCG_VERSION "unknown"
#endif

namespace rtcg {

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// A temporary file removed when this goes away.
struct TempFile {
  std::string path;
  TempFile() {
    const char* tmpdir = std::getenv("TMPDIR");
    path = fmt::format("{}/rtcg-reference-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    int fd = ::mkostemp(path.data(), O_CLOEXEC);
    if (fd < 0) throw Error(fmt::format("cannot create a temporary file for the reference outputs: {}", std::strerror(errno)));
    ::close(fd);
  }
  ~TempFile() { ::unlink(path.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
};


}  // namespace

int64_t referenceSampleSize(int64_t floatOps, double maxFlops, const std::vector<int64_t>& outerExtents) {
  if (maxFlops <= 0 || double(floatOps) <= maxFlops) return 0;
  int64_t largest = outerExtents.empty() ? 0 : *std::max_element(outerExtents.begin(), outerExtents.end());
  return std::max(kMinReferenceSample, int64_t(std::ceil(double(largest) * maxFlops / double(floatOps))));
}

int64_t refinementBudget(int64_t maxCandidates) { return maxCandidates >= 12 ? maxCandidates / 3 : 0; }

void setSpaceDevice(SpaceOptions& options, const cuda::DeviceProperties& props) {
  options.device.multiprocessors = props.multiprocessors;
  options.device.maxThreadsPerBlock = props.maxThreadsPerBlock;
  options.device.maxThreadsPerMultiprocessor = props.maxThreadsPerMultiprocessor;
  options.device.maxBlocksPerMultiprocessor = props.maxBlocksPerMultiprocessor;
  options.device.sharedPerBlockOptin = int64_t(props.sharedPerBlockOptin);
  options.device.sharedPerMultiprocessor = int64_t(props.sharedPerMultiprocessor);
  options.device.registersPerMultiprocessor = props.registersPerMultiprocessor;
  options.limits = deviceScheduleLimits(int64_t(props.sharedPerBlockOptin), props.maxThreadsPerBlock);
}

TuneResult tune(const std::string& fileName, const std::string& source, const Kernel& bound,
                const TuneOptions& options) {
  Clock::time_point t0 = Clock::now();
  // The compile pool logs from its threads (worker restarts), so calls are serialized here.
  std::mutex logMutex;
  auto log = [&](const std::string& s) {
    std::lock_guard<std::mutex> lock(logMutex);
    if (options.log) options.log(s);
  };
  if (!bound.isBound()) throw Error(fmt::format("kernel '{}' must have its sizes bound before tuning", bound.name));
  if (options.repeats < 1 || options.warmup < 0)
    throw Error(fmt::format("tuning needs at least 1 timed repeat and no negative warm-up (got {} and {})",
                            options.repeats, options.warmup));

  // The device, without a context: cuInit and property queries only.
  if (!cuda::cudaAvailable()) throw NoDeviceError(cuda::unavailableReason());
  if (options.deviceOrdinals.empty()) throw Error("tuning needs at least one device");
  cuda::Device device(options.deviceOrdinals.front());
  const cuda::DeviceProperties& props = device.properties();
  for (size_t i = 1; i < options.deviceOrdinals.size(); ++i) {
    int ordinal = options.deviceOrdinals[i];
    if (std::count(options.deviceOrdinals.begin(), options.deviceOrdinals.begin() + long(i), ordinal))
      throw Error(fmt::format("device {} is listed twice for one search", ordinal));
    cuda::Device other(ordinal);
    const cuda::DeviceProperties& p = other.properties();
    if (p.name != props.name || p.arch() != props.arch() || p.multiprocessors != props.multiprocessors)
      throw Error(fmt::format("device {} is {} ({}, {} multiprocessors) but device {} is {} ({}, {}): a search "
                              "compares medians measured on its devices, so they must be the same model",
                              ordinal, p.name, p.arch(), p.multiprocessors, props.ordinal, props.name, props.arch(),
                              props.multiprocessors));
  }
  std::string workerPath = findWorker(options.workerPath);

  TuneResult result;
  result.key = tuningKeyFor(bound, props);
  result.floatOps = floatOps(bound);
  result.minimalBytes = minimalBytes(bound);
  result.peakBandwidthGBs = props.peakBandwidthGBs();

  // The space, for this device. With a candidate budget, about a third of it is kept for
  // refinement rounds (neighbours of the fastest measured candidates, from what sampling left out).
  SpaceOptions spaceOptions = options.space;
  int64_t refineBudget = refinementBudget(spaceOptions.maxCandidates);
  spaceOptions.maxCandidates -= refineBudget;
  setSpaceDevice(spaceOptions, props);
  Space space = enumerateSchedules(bound, spaceOptions);
  result.enumerated = space.enumerated;
  result.pruned = int64_t(space.pruned.size());
  result.sampledOut = space.sampledOut;
  result.prunedList = space.pruned;
  log(fmt::format("{} ({}): {} schedules enumerated, {} pruned by the static model, {} dropped by sampling, {} to try",
                  bound.name, result.key.sizes, space.enumerated, space.pruned.size(), space.sampledOut,
                  space.candidates.size()));
  {
    std::map<std::string, int64_t> reasons;  // grouped, so the log stays short
    for (const PrunedCandidate& p : space.pruned) ++reasons[p.reason.substr(0, p.reason.find(" ("))];
    for (const auto& [reason, count] : reasons) log(fmt::format("  pruned {}: {}", count, reason));
  }

  // Opened now, so an unusable database fails before the reference (and the warm start below can
  // read it); the search is begun once the reference says how candidates are verified (part of its
  // settings).
  std::unique_ptr<TuningDb> db;
  if (options.dbPath != "-") db = std::make_unique<TuningDb>(options.dbPath.empty() ? TuningDb::defaultPath() : options.dbPath);

  // Refinement draws from what sampling left out; without any, its budget goes back to the sample.
  std::vector<Candidate> reserve = std::move(space.reserve);

  // Jobs: the default schedule first (always measured, the baseline), then the warm start
  // (tune/WarmStart.h: the database's winners at other sizes, from the reserve or, when the space
  // lacks them, validated as they are), then the space's candidates (best predicted first; a
  // budgeted sample gives up as many of its last, randomly drawn, ones as the warm start added),
  // then planted ones.
  std::vector<CompileJob> jobs;
  Schedule defaultSched = defaultSchedule(bound);
  std::vector<std::string> warmed =
      queueSearch(bound, spaceOptions.limits, defaultSched, space.candidates, reserve,
                  db ? warmStartSchedules(db->list(), result.key, kWarmStartSchedules) : std::vector<std::string>{},
                  spaceOptions.maxCandidates > 0, jobs);
  if (!warmed.empty())
    log(fmt::format("warm start: {} schedule{} the database found fastest for {} at other sizes", warmed.size(),
                    warmed.size() == 1 ? "" : "s", bound.name));
  result.warmStarted = int64_t(warmed.size());
  if (reserve.empty()) refineBudget = 0;
  for (const ExtraCandidate& e : options.extraCandidates) {
    Schedule s = defaultSched;
    if (!e.schedule.empty()) {
      ScheduleParseResult p = parseSchedule(e.schedule);
      if (!p.ok()) throw Error(fmt::format("planted candidate '{}': bad schedule: {}", e.label, p.error));
      s = *p.schedule;
    }
    jobs.push_back({e.label, s, e.rewrite});
  }
  // With `resume`: the fastest of the earlier searches, which candidates race against from the start.
  std::optional<CandidateRecord> earlierBest;
  if (options.resume) {
    if (!db) throw Error("resuming a search needs the tuning database (not --db -)");
    result.resumedSkipped = int64_t(dropMeasured(jobs, db->candidates(result.key)));
    log(fmt::format("resumed: {} candidates measured by earlier searches of this key are not measured again",
                    result.resumedSkipped));
    earlierBest = db->best(result.key);
  }
  result.generated = int64_t(jobs.size());

  // The reference program, compiled up front: its outer loops give the sample size for kernels
  // over the reference limit.
  ReferenceProgram referenceProgram(bound);
  ReferenceOptions referenceOptions;
  referenceOptions.sampleSeed = options.seed;
  referenceOptions.sampleOuterValues =
      referenceSampleSize(result.floatOps, options.referenceMaxFlops, referenceProgram.outerExtents());

  nlohmann::json settings = {{"maxCandidates", options.space.maxCandidates}, {"timeLimit", options.timeLimitSeconds},
                             {"minThreads", options.space.minThreads},       {"minBlocks", options.space.minBlocks},
                             {"repeats", options.repeats},                   {"warmup", options.warmup},
                             {"seed", options.seed},                         {"referenceMaxFlops", options.referenceMaxFlops}};

  // Compiling starts now and overlaps with the reference and everything after.
  LaunchLimits limits{props.maxThreadsPerBlock, props.registersPerBlock, int64_t(props.sharedPerBlockOptin)};
  // In rtcg-worker --compile-worker processes: NVRTC scales across processes, not threads.
  CompilePoolOptions poolOptions;
  poolOptions.parallel = options.compileThreads;
  poolOptions.measuringDevices = int(options.deviceOrdinals.size());
  poolOptions.workerPath = workerPath;
  poolOptions.log = log;
  std::map<std::string, Schedule> scheduleOf;  // measured labels -> schedules, for refinement
  for (const CompileJob& j : jobs) scheduleOf[j.label] = j.schedule;
  auto pool = std::make_unique<CompilePool>(bound, props.arch(), limits, std::move(jobs), poolOptions);
  result.compileThreads = pool->parallel();
  log(fmt::format("compiling {} candidates with NVRTC in {} worker processes for {}", result.generated,
                  pool->parallel(), props.arch()));

  // The float64 reference on the CPU, once, on the inputs the worker regenerates.
  std::map<std::string, double> scalars = tuningScalars(bound, options.seed);
  HostArgs inputs = tuningInputs(bound, options.seed, scalars);
  HostArgs refArgs = inputs;
  if (referenceOptions.sampleOuterValues > 0)
    log(fmt::format("computing the CPU reference ({:.3g} floating-point operations, over the limit of {:.3g}: on a "
                    "sample of {} values of each nest's outer loop) ...",
                    double(result.floatOps), options.referenceMaxFlops, referenceOptions.sampleOuterValues));
  else
    log(fmt::format("computing the CPU reference ({:.3g} floating-point operations) ...", double(result.floatOps)));
  ReferenceResult ref = referenceProgram.run(refArgs, referenceOptions);
  result.referenceSeconds = ref.seconds;
  result.referenceSampled = ref.sampled;
  if (ref.sampled) {
    int64_t checked = 0, elements = 0;
    for (const ReferenceOutput& o : ref.outputs) {
      checked += o.computedCount();
      elements += int64_t(o.values.size());
    }
    result.reference = fmt::format("sampled: {} of {} outer loop values, {} of {} output elements",
                                   ref.outerValuesRun, ref.outerValuesTotal, checked, elements);
  } else {
    result.reference = ref.fullReason.empty() ? "full" : fmt::format("full ({})", ref.fullReason);
  }
  log(fmt::format("CPU reference ({}): {:.3f} s", result.reference, ref.seconds));
  settings["reference"] = result.reference;
  result.settings = settings.dump();
  if (db) result.searchId = db->beginSearch(result.key, result.settings);
  TempFile refFile;
  {
    std::vector<worker::ReferenceArray> arrays;
    for (ReferenceOutput& o : ref.outputs) arrays.push_back({o.param, std::move(o.values), std::move(o.computed)});
    worker::writeReferenceFile(refFile.path, arrays);
  }

  worker::SetupMessage setup;
  setup.fileName = fileName;
  setup.source = source;
  setup.kernel = bound.name;
  setup.sizes = bound.sizes;
  setup.scalars = scalars;
  setup.seed = options.seed;
  for (size_t p = 0; p < bound.params.size(); ++p) {
    const Param& param = bound.params[p];
    if (!param.isArray() || param.mode == ArrayMode::Out) continue;
    Checksum c = checksum(inputs.array(int(p)));
    setup.inputs.push_back({param.name, c.sum, c.sumSquares});
  }
  setup.referencePath = refFile.path;
  setup.warmup = options.warmup;
  setup.repeats = options.repeats;
  setup.timingBudgetSeconds = options.timingBudgetSeconds;
  WorkerTimeouts timeouts{options.setupTimeoutSeconds, options.candidateTimeoutSeconds};
  // One measuring worker per device, set up in parallel (each uploads the inputs).
  std::vector<std::unique_ptr<WorkerProcess>> workers(options.deviceOrdinals.size());
  {
    std::vector<std::exception_ptr> errors(workers.size());
    std::vector<std::thread> starting;
    for (size_t w = 0; w < workers.size(); ++w)
      starting.emplace_back([&, w] {
        try {
          worker::SetupMessage mine = setup;
          mine.deviceOrdinal = options.deviceOrdinals[w];
          workers[w] = std::make_unique<WorkerProcess>(workerPath, std::move(mine), timeouts, log);
        } catch (...) {
          errors[w] = std::current_exception();
        }
      });
    for (std::thread& t : starting) t.join();
    for (std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
  }
  result.devices = int(workers.size());
  if (workers.size() > 1)
    log(fmt::format("measuring on {} devices ({}), one worker each", workers.size(),
                    fmt::join(options.deviceOrdinals, ", ")));
  // The time limit covers the search proper: the reference, the worker's setup and the baseline
  // (the default schedule, measured first) are excluded.
  Clock::time_point searchStart = Clock::now();

  TuneProgress progress;
  progress.generated = result.generated;
  std::deque<CompiledCandidate> held;  // compiled before the default schedule
  bool defaultSeen = false;
  // The next candidate to measure: the default schedule (job 0) first.
  auto nextCandidate = [&]() -> std::optional<CompiledCandidate> {
    if (defaultSeen && !held.empty()) {
      CompiledCandidate c = std::move(held.front());
      held.pop_front();
      return c;
    }
    while (std::optional<CompiledCandidate> c = pool->next()) {
      if (defaultSeen || c->job == 0) {
        defaultSeen = true;
        return c;
      }
      held.push_back(std::move(*c));
    }
    if (!held.empty()) {  // cannot happen (job 0 always finishes), but never lose candidates
      defaultSeen = true;
      CompiledCandidate c = std::move(held.front());
      held.pop_front();
      return c;
    }
    return std::nullopt;
  };

  int64_t poolsFinished = 0;  // over the pools retired so far (the first, then refinement rounds)
  double poolsSeconds = 0;
  bool firstPool = true;      // job 0 of the first pool is the default schedule
  size_t jobOffset = 0;       // job numbers of the current pool start here (for the log)

  double flops = double(result.floatOps), bytes = double(result.minimalBytes);
  bool dbFailed = false;
  auto finish = [&](CandidateRecord rec, bool isDefault) {
    double at = secondsSince(t0);
    rec.searchId = result.searchId;
    if (db && !dbFailed) {
      try {
        db->record(result.key, rec);
      } catch (const std::exception& e) {
        dbFailed = true;  // the search is still worth finishing; say so once
        log(fmt::format("cannot record in the tuning database (no more records will be written): {}", e.what()));
      }
    }
    switch (rec.status) {
      case CandidateStatus::Verified: ++result.verified; break;
      case CandidateStatus::WrongResult: ++result.wrong; break;
      case CandidateStatus::CompileFailed: ++result.compileFailed; break;
      case CandidateStatus::LaunchFailed: ++result.launchFailed; break;
      case CandidateStatus::Faulted: ++result.faulted; break;
      case CandidateStatus::TimedOut: ++result.timedOut; break;
      case CandidateStatus::Skipped: ++result.skipped; break;
    }
    if (rec.status == CandidateStatus::Verified && (!result.best || rec.medianMs < result.best->medianMs)) {
      result.best = rec;
      result.bestOverTime.emplace_back(at, rec.medianMs);
    }
    if (isDefault) result.defaultSchedule = rec;
    result.candidates.push_back(std::move(rec));
    result.completedSeconds.push_back(at);

    progress.compiled = poolsFinished + pool->finished();
    progress.compileFailed = result.compileFailed + result.skipped;
    progress.measured = result.verified + result.wrong + result.launchFailed + result.faulted + result.timedOut;
    progress.verified = result.verified;
    progress.failed = progress.measured - result.verified;
    progress.elapsedSeconds = at;
    progress.best = result.best;
    if (options.progress) options.progress(progress);
  };

  // With several devices, their workers measure in parallel: fetchMutex guards the compile pool
  // and `held`, resultMutex the results, the database and progress (finish).
  std::mutex fetchMutex, resultMutex;
  std::atomic<bool> aborted{false};  // a worker could not go on: the others stop too

  // The next candidate to measure and whether it is the default schedule; nullopt once the pool
  // has handed out everything. Once the time limit is reached, no new compiles start and what is
  // still compiling is drained, counted as not measured.
  auto fetch = [&]() -> std::optional<std::pair<CompiledCandidate, bool>> {
    std::lock_guard<std::mutex> lock(fetchMutex);
    while (std::optional<CompiledCandidate> c = nextCandidate()) {
      bool isDefault = firstPool && c->job == 0;
      if (!isDefault && options.timeLimitSeconds > 0 && secondsSince(searchStart) > options.timeLimitSeconds) {
        pool->stop();
        std::lock_guard<std::mutex> results(resultMutex);
        if (!result.timeLimitReached)
          log(fmt::format("time limit of {:g} s reached: no new candidates are started", options.timeLimitSeconds));
        result.timeLimitReached = true;
        ++result.notMeasured;
        continue;
      }
      return std::make_pair(std::move(*c), isDefault);
    }
    return std::nullopt;
  };

  // Measures one candidate on `worker` (or records why it cannot be measured).
  auto measureOne = [&](WorkerProcess& worker, CompiledCandidate c, bool isDefault) {
    CandidateRecord rec;
    rec.schedule = c.label;
    rec.compileMs = c.emitMs + c.compileMs;
    rec.registers = c.registers;
    rec.spillBytes = c.spillBytes;
    rec.sharedBytes = c.sharedBytes;
    if (!c.measurable()) {
      rec.status = c.status;
      rec.reason = c.reason;
      std::lock_guard<std::mutex> lock(resultMutex);
      log(fmt::format("candidate {} {}: {}", jobOffset + c.job, statusName(rec.status), rec.reason));
      finish(std::move(rec), isDefault);
      return;
    }
    worker::CandidateMessage msg{int64_t(jobOffset + c.job), c.module.launches, std::move(c.cubin)};
    {
      std::lock_guard<std::mutex> lock(resultMutex);
      // The best so far: this search's, or an earlier search's of the key when resuming one.
      double raceBest = result.best ? result.best->medianMs : 0;
      if (earlierBest && (raceBest == 0 || earlierBest->medianMs < raceBest)) raceBest = earlierBest->medianMs;
      if (raceBest > 0) {
        // Racing: a verifying launch over 4x the best median (and over 1 ms: below, launch
        // overhead blurs the comparison and full timing is cheap anyway) is timed once.
        msg.raceMs = std::max(1.0, 4.0 * raceBest);
        // And a first timed run over 1.5x the best median ends the timing there: it cannot win (a
        // timed run of a candidate as fast as the best would have to be 50% slow), and at SGEMM
        // n=4096 most of a search's candidates are such, each otherwise timed 22 times; so do
        // three timed runs all over 1.15x the best (timing noise under an L2 flush is about 1%).
        msg.raceTimedMs = 1.5 * raceBest;
        msg.raceCloseMs = 1.15 * raceBest;
      }
    }
    MeasureOutcome m = worker.measure(msg);
    rec.status = m.status;
    rec.reason = m.reason;
    rec.relativeError = m.result.relativeError;
    if (m.status == CandidateStatus::Verified) {
      rec.medianMs = m.result.medianMs;
      rec.registers = m.result.registers;
      rec.sharedBytes = m.result.sharedBytes;
      rec.occupancy = m.result.occupancy;
      double s = rec.medianMs * 1e-3;
      if (s > 0) {
        rec.gflops = flops / s * 1e-9;
        rec.gbytes = bytes / s * 1e-9;
      }
    }
    std::lock_guard<std::mutex> lock(resultMutex);
    if (m.status == CandidateStatus::Verified && m.result.repeats == 1 && options.repeats > 1) ++result.timedOnce;
    finish(std::move(rec), isDefault);
  };

  // Measures every candidate the current pool hands out, on every worker; false once the time
  // limit stopped it.
  auto measureAll = [&]() {
    if (firstPool) {
      // The default schedule first, alone: the baseline, measured whatever it costs; the time
      // limit counts the search after it.
      if (std::optional<std::pair<CompiledCandidate, bool>> c = fetch()) {
        bool isDefault = c->second;
        measureOne(*workers.front(), std::move(c->first), isDefault);
        if (isDefault && options.timeLimitSeconds > 0) {
          log(fmt::format("default schedule measured in {:.1f} s; the time limit counts from here",
                          secondsSince(searchStart)));
          searchStart = Clock::now();
        }
      }
    }
    std::vector<std::exception_ptr> errors(workers.size());
    auto measureOn = [&](size_t w) {
      try {
        while (!aborted)
          if (std::optional<std::pair<CompiledCandidate, bool>> c = fetch())
            measureOne(*workers[w], std::move(c->first), c->second);
          else
            break;
      } catch (...) {
        errors[w] = std::current_exception();
        aborted = true;
      }
    };
    if (workers.size() == 1) {
      measureOn(0);
    } else {
      std::vector<std::thread> threads;
      for (size_t w = 0; w < workers.size(); ++w) threads.emplace_back(measureOn, w);
      for (std::thread& t : threads) t.join();
    }
    for (std::exception_ptr& e : errors)
      if (e) std::rethrow_exception(e);
    return !result.timeLimitReached;
  };

  // Refinement: rounds of the unmeasured candidates nearest (scheduleDistance) to the fastest
  // verified ones, as many per round as compile in parallel, until the budget or the time is spent.
  auto retirePool = [&]() {
    poolsFinished += pool->finished();
    poolsSeconds += pool->seconds();
  };
  auto refine = [&]() {
    int round = 0;
    while (refineBudget > 0 && !reserve.empty()) {
      if (options.timeLimitSeconds > 0 && secondsSince(searchStart) > options.timeLimitSeconds) break;
      std::vector<const CandidateRecord*> top;
      for (const CandidateRecord& r : result.candidates)
        if (r.status == CandidateStatus::Verified && scheduleOf.count(r.schedule)) top.push_back(&r);
      if (top.empty()) break;
      std::sort(top.begin(), top.end(), [](auto* a, auto* b) { return a->medianMs < b->medianMs; });
      top.resize(std::min<size_t>(top.size(), 3));
      std::vector<std::pair<double, size_t>> ranked;  // (distance, reserve position): stable by model rank
      for (size_t i = 0; i < reserve.size(); ++i) {
        double d = std::numeric_limits<double>::infinity();
        for (size_t t = 0; t < top.size(); ++t)
          d = std::min(d, scheduleDistance(reserve[i].schedule, scheduleOf.at(top[t]->schedule)) + 0.75 * double(t));
        ranked.emplace_back(d, i);
      }
      size_t take = std::min<size_t>({size_t(refineBudget), size_t(std::max(1, result.compileThreads)), ranked.size()});
      std::partial_sort(ranked.begin(), ranked.begin() + take, ranked.end());
      std::vector<CompileJob> next;
      std::vector<bool> used(reserve.size(), false);
      for (size_t r = 0; r < take; ++r) {
        const Candidate& c = reserve[ranked[r].second];
        next.push_back({c.text, c.schedule, {}});
        scheduleOf[c.text] = c.schedule;
        used[ranked[r].second] = true;
      }
      std::vector<Candidate> rest;
      for (size_t i = 0; i < reserve.size(); ++i)
        if (!used[i]) rest.push_back(std::move(reserve[i]));
      reserve = std::move(rest);
      refineBudget -= int64_t(take);
      result.generated += int64_t(take);
      result.refined += int64_t(take);
      progress.generated = result.generated;
      log(fmt::format("refinement round {}: {} candidates nearest to the best {} (distance {:.2g} to {:.2g}); best so far "
                      "{:.4f} ms", ++round, take, top.size(), ranked.front().first, ranked[take - 1].first,
                      top.front()->medianMs));
      retirePool();
      firstPool = false;
      jobOffset = size_t(result.generated) - take;
      pool = std::make_unique<CompilePool>(bound, props.arch(), limits, std::move(next), poolOptions);
      if (!measureAll()) break;
    }
  };

  try {
    if (measureAll()) refine();
  } catch (...) {
    if (db && !dbFailed) {
      try {
        db->endSearch(result.searchId, secondsSince(t0), int(result.candidates.size()));
      } catch (...) {
      }
    }
    throw;
  }
  // Compiled candidates = those that NVRTC compiled, whether or not they were measured.
  bool fallback = pool->usedFallback();
  retirePool();
  result.notMeasured += result.generated - poolsFinished;  // never compiled (time limit)
  result.compiled = poolsFinished - result.compileFailed;
  result.compileSeconds = poolsSeconds;
  result.candidatesPerSecond = poolsSeconds > 0 ? double(poolsFinished) / poolsSeconds : 0;
  for (const std::unique_ptr<WorkerProcess>& w : workers) result.workerRestarts += w->restarts();
  result.wallSeconds = secondsSince(t0);
  if (db && !dbFailed) db->endSearch(result.searchId, result.wallSeconds, int(result.candidates.size()));
  if (options.resume && db && !dbFailed) result.bestOfAllSearches = db->best(result.key);
  log(fmt::format("search done in {:.1f} s: {} candidates ({} from refinement), {} verified, {} wrong, {} faulted, {} timed out, {} failed "
                  "to launch, {} skipped, {} failed to compile, {} not measured, {} timed once (too slow to win); NVRTC "
                  "{:.1f} candidates/s with {} compiles in parallel{}; worker restarts: {}",
                  result.wallSeconds, result.candidates.size(), result.refined, result.verified, result.wrong, result.faulted,
                  result.timedOut, result.launchFailed, result.skipped, result.compileFailed, result.notMeasured,
                  result.timedOnce, result.candidatesPerSecond, result.compileThreads,
                  fallback ? " (some on threads: a compile worker could not start)" : "",
                  result.workerRestarts));
  return result;
}

}  // namespace rtcg
