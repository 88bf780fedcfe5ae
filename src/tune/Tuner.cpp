#include "tune/Tuner.h"

#include "tune/TuningKeyFor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <future>
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
#include "schedule/DeviceModels.h"
#include "schedule/PolicyRewrite.h"
#include "support/Cores.h"
#include "tune/CompilePool.h"
#include "tune/Search.h"
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

// Every device after the first must be another of the first's model: a search compares medians
// measured on its devices.
void checkSameModel(const std::vector<int>& ordinals, const cuda::DeviceProperties& props) {
  for (size_t i = 1; i < ordinals.size(); ++i) {
    int ordinal = ordinals[i];
    if (std::count(ordinals.begin(), ordinals.begin() + long(i), ordinal))
      throw Error(fmt::format("device {} is listed twice for one search", ordinal));
    cuda::Device other(ordinal);
    const cuda::DeviceProperties& p = other.properties();
    if (p.name != props.name || p.arch() != props.arch() || p.multiprocessors != props.multiprocessors)
      throw Error(fmt::format("device {} is {} ({}, {} multiprocessors) but device {} is {} ({}, {}): a search "
                              "compares medians measured on its devices, so they must be the same model",
                              ordinal, p.name, p.arch(), p.multiprocessors, props.ordinal, props.name, props.arch(),
                              props.multiprocessors));
  }
}

// The space's counts into `result`, and the log: its sizes and why candidates were pruned (grouped
// by reason, so the log stays short).
void noteSpace(const Space& space, const Kernel& bound, TuneResult& result, const WorkerProcess::Log& log) {
  result.enumerated = space.enumerated;
  result.pruned = int64_t(space.pruned.size());
  result.sampledOut = space.sampledOut;
  result.prunedList = space.pruned;
  log(fmt::format("{} ({}): {} schedules enumerated, {} pruned by the static model, {} dropped by sampling, {} to try",
                  bound.name, result.key.sizes, space.enumerated, space.pruned.size(), space.sampledOut,
                  space.candidates.size()));
  std::map<std::string, int64_t> reasons;
  for (const PrunedCandidate& p : space.pruned) ++reasons[p.reason.substr(0, p.reason.find(" ("))];
  for (const auto& [reason, count] : reasons) log(fmt::format("  pruned {}: {}", count, reason));
}

// The options a search is recorded with (TuneResult::settings; the reference is added once known).
nlohmann::json searchSettings(const TuneOptions& options) {
  return {{"maxCandidates", options.space.maxCandidates}, {"timeLimit", options.timeLimitSeconds},
          {"minThreads", options.space.minThreads},       {"minBlocks", options.space.minBlocks},
          {"repeats", options.repeats},                   {"warmup", options.warmup},
          {"seed", options.seed},                         {"referenceMaxFlops", options.referenceMaxFlops}};
}

// The test hook's planted candidates, after the search's own (TuneOptions::extraCandidates).
void queuePlanted(const std::vector<ExtraCandidate>& extras, const Schedule& defaultSched,
                  std::vector<CompileJob>& jobs) {
  for (const ExtraCandidate& e : extras) {
    Schedule s = defaultSched;
    if (!e.schedule.empty()) {
      ScheduleParseResult p = parseSchedule(e.schedule);
      if (!p.ok()) throw Error(fmt::format("planted candidate '{}': bad schedule: {}", e.label, p.error));
      s = *p.schedule;
    }
    jobs.push_back({e.label, s, e.rewrite, nullptr});
  }
}

// How candidates are verified (TuneResult::reference).
std::string describeReference(const ReferenceResult& ref) {
  if (!ref.sampled) return ref.fullReason.empty() ? "full" : fmt::format("full ({})", ref.fullReason);
  int64_t checked = 0, elements = 0;
  for (const ReferenceOutput& o : ref.outputs) {
    checked += o.computedCount();
    elements += int64_t(o.values.size());
  }
  return fmt::format("sampled: {} of {} outer loop values, {} of {} output elements", ref.outerValuesRun,
                     ref.outerValuesTotal, checked, elements);
}

// What every measuring worker is set up with (its device ordinal aside): the kernel to re-parse,
// the seed and checksums of the inputs it regenerates, the reference outputs' file and the timing.
worker::SetupMessage setupMessage(const std::string& fileName, const std::string& source, const Kernel& bound,
                                  const TuneOptions& options, const std::map<std::string, double>& scalars,
                                  const HostArgs& inputs, const std::string& referencePath) {
  worker::SetupMessage setup;
  setup.fileName = fileName;
  setup.source = source;
  setup.kernel = bound.name;
  setup.sizes = bound.sizes;
  setup.scalars = scalars;
  setup.seed = options.seed;
  setup.inputFiles = options.inputFiles;
  setup.precision = precisionName(options.space.precision);
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (!param.isArray() || param.mode == ArrayMode::Out) continue;
    Checksum c = checksum(inputs.array(int(p)));
    setup.inputs.push_back({param.name, c.sum, c.sumSquares});
  }
  setup.referencePath = referencePath;
  setup.warmup = options.warmup;
  setup.repeats = options.repeats;
  setup.timingBudgetSeconds = options.timingBudgetSeconds;
  return setup;
}

// One measuring worker process per device, started before its setup exists (WorkerProcess's
// second constructor: each creates its CUDA context meanwhile); none where one cannot be started
// here (startWorkers starts it again and says why).
std::vector<std::unique_ptr<WorkerProcess>> spawnWorkers(const TuneOptions& options, const WorkerProcess::Log& log) {
  std::vector<std::unique_ptr<WorkerProcess>> workers;
  WorkerTimeouts timeouts{options.setupTimeoutSeconds, options.candidateTimeoutSeconds};
  try {
    const std::string path = findWorker(options.workerPath);
    for (int ordinal : options.deviceOrdinals) workers.push_back(std::make_unique<WorkerProcess>(path, ordinal, timeouts, log));
  } catch (const Error&) {
    workers.clear();
  }
  return workers;
}

// One measuring worker per device, set up in parallel (each uploads the inputs): those `spawned`
// started, the others started now.
std::vector<std::unique_ptr<WorkerProcess>> startWorkers(const std::string& workerPath,
                                                         const worker::SetupMessage& setup,
                                                         const TuneOptions& options, const WorkerProcess::Log& log,
                                                         std::vector<std::unique_ptr<WorkerProcess>> spawned) {
  WorkerTimeouts timeouts{options.setupTimeoutSeconds, options.candidateTimeoutSeconds};
  std::vector<std::unique_ptr<WorkerProcess>> workers(options.deviceOrdinals.size());
  spawned.resize(workers.size());
  std::vector<std::exception_ptr> errors(workers.size());
  std::vector<std::thread> starting;
  for (size_t w = 0; w < workers.size(); ++w)
    starting.emplace_back([&, w] {
      try {
        worker::SetupMessage mine = setup;
        mine.deviceOrdinal = options.deviceOrdinals[w];
        if (spawned[w]) {
          spawned[w]->setUp(std::move(mine));
          workers[w] = std::move(spawned[w]);
        } else {
          workers[w] = std::make_unique<WorkerProcess>(workerPath, std::move(mine), timeouts, log);
        }
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  for (std::thread& t : starting) t.join();
  for (std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  return workers;
}

// The compile pool behind the search's compiler interface: started with the default schedule
// before the reference (compiling overlaps with it); the space's candidates and then each
// refinement round are appended to that batch, on the workers (local and remote) it started.
class PoolCompiler : public SearchCompiler {
 public:
  explicit PoolCompiler(std::unique_ptr<CompilePool> pool) : pool_(std::move(pool)) {}
  std::optional<CompiledCandidate> next() override { return pool_->next(); }
  void stop() override { pool_->stop(); }
  void append(std::vector<CompileJob> jobs) override { pool_->append(std::move(jobs)); }
  // Candidates compiled per host.
  std::vector<CompileHostCount> compiledOn() const { return pool_->hosts(); }
  int64_t finished() const override { return pool_->finished(); }
  double seconds() const override { return pool_->seconds(); }
  bool usedFallback() const { return pool_->usedFallback(); }

 private:
  std::unique_ptr<CompilePool> pool_;
};

// The measuring worker processes, one per device, and the remote devices after them, behind the
// search's measurer interface.
class WorkerMeasurer : public SearchMeasurer {
 public:
  WorkerMeasurer(std::vector<std::unique_ptr<WorkerProcess>>& workers,
                 std::vector<std::unique_ptr<RemoteMeasurer>>& remotes)
      : workers_(workers), remotes_(remotes) {}
  size_t devices() const override { return workers_.size() + remotes_.size(); }
  MeasureOutcome measure(size_t device, const std::string&, worker::CandidateMessage msg) override {
    if (device < workers_.size()) return workers_[device]->measure(msg);
    return remotes_[device - workers_.size()]->measure(msg);
  }
  // A local worker measures one candidate at a time; a remote device may hold two.
  size_t depth(size_t device) const override {
    return device < workers_.size() ? 1 : remotes_[device - workers_.size()]->depth();
  }
  void send(size_t device, const std::string& label, worker::CandidateMessage msg) override {
    if (device < workers_.size()) return SearchMeasurer::send(device, label, std::move(msg));
    remotes_[device - workers_.size()]->send(msg);
  }
  MeasureOutcome receive(size_t device) override {
    if (device < workers_.size()) return SearchMeasurer::receive(device);
    return remotes_[device - workers_.size()]->receive();
  }

 private:
  std::vector<std::unique_ptr<WorkerProcess>>& workers_;
  std::vector<std::unique_ptr<RemoteMeasurer>>& remotes_;
};

// Where the search's own time went (SearchTotals), after its timeline's events.
std::vector<std::pair<std::string, double>> busyTimes(const SearchTotals& totals) {
  std::vector<std::pair<std::string, double>> busy = {{"busy: emitting CUDA C", totals.emitSeconds},
                                                      {"busy: recording", totals.recordSeconds},
                                                      {"busy: reporting progress", totals.progressSeconds},
                                                      {"busy: ranking refinement", totals.rankSeconds}};
  for (size_t d = 0; d < totals.waitSeconds.size(); ++d) {
    busy.emplace_back(fmt::format("busy: device {} waiting for a compiled candidate", d), totals.waitSeconds[d]);
    busy.emplace_back(fmt::format("busy: device {} waiting for an outcome", d), totals.measureSeconds[d]);
  }
  return busy;
}

// The search's database: none for "-"; read-only (none if that fails, with a line in the log)
// when the search writes nothing (TuneOptions::writeDb).
std::unique_ptr<TuningDb> openDatabase(const TuneOptions& options, const WorkerProcess::Log& log) {
  if (options.dbPath == "-") return nullptr;
  if (options.writeDb)
    return std::make_unique<TuningDb>(options.dbPath.empty() ? TuningDb::defaultPath() : options.dbPath);
  std::optional<std::string> path =
      options.dbPath.empty() ? TuningDb::existingDefaultPath() : std::optional<std::string>(options.dbPath);
  if (!path) return nullptr;
  try {
    return std::make_unique<TuningDb>(*path, TuningDb::Access::ReadOnly);
  } catch (const Error& e) {
    log(fmt::format("the tuning database is not read here (no warm start; resuming skips nothing): {}", e.what()));
    return nullptr;
  }
}

}  // namespace

void RemoteMeasurer::send(const worker::CandidateMessage&) {
  throw InternalError("a remote device of depth 1 was sent a candidate to hold");
}

MeasureOutcome RemoteMeasurer::receive() {
  throw InternalError("a remote device of depth 1 was asked for a held candidate's outcome");
}

int64_t referenceSampleSize(int64_t floatOps, double maxFlops, const std::vector<int64_t>& outerExtents) {
  if (maxFlops <= 0 || double(floatOps) <= maxFlops) return 0;
  int64_t largest = outerExtents.empty() ? 0 : *std::max_element(outerExtents.begin(), outerExtents.end());
  return std::max(kMinReferenceSample, int64_t(std::ceil(double(largest) * maxFlops / double(floatOps))));
}

double searchWorkEstimate(const Kernel& bound, int64_t candidates, double referenceMaxFlops) {
  // Rates of the order of one server core's: only their ratio to each other matters.
  constexpr double kSetupSeconds = 1, kReferenceOpsPerSecond = 3e9, kComparedElementsPerSecond = 6e8;
  const double ops = double(arithmeticOps(bound));
  const bool sampled = referenceMaxFlops > 0 && ops > referenceMaxFlops && samplingObstacle(bound).empty();
  const double reference = (sampled ? referenceMaxFlops : ops) / kReferenceOpsPerSecond;
  const double compared = double(writtenElements(bound)) * double(std::max<int64_t>(1, candidates));
  return kSetupSeconds + reference + compared / kComparedElementsPerSecond;
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
  options.limits = deviceScheduleLimits(int64_t(props.sharedPerBlockOptin), props.maxThreadsPerBlock, props.multiprocessors,
                                        int64_t(props.sharedPerMultiprocessor));
  setModelPeaks(options.device, props.computeMajor, props.computeMinor, props.multiprocessors, props.clockKHz * 1e3);
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

  // The kernel the schedules schedule: the proved one, or its precision policy's rewrite
  // (schedule/PolicyRewrite.h). The reference, the inputs, the key and the rates are those of the
  // kernel as written.
  const Kernel scheduled = policyKernel(bound, options.space.precision);

  // The measuring workers' processes start first: each creates its CUDA context (the slowest part
  // of its setup) while this process reads the device and computes what the setup carries (the
  // inputs' checksums, the reference's path); startWorkers sets them up.
  if (options.deviceOrdinals.empty()) throw Error("tuning needs at least one device");
  std::vector<std::unique_ptr<WorkerProcess>> spawned = spawnWorkers(options, log);
  const double spawnedAt = secondsSince(t0);

  // The device, without a context: cuInit and property queries only (or the stand-in's properties).
  std::optional<cuda::Device> device;
  if (options.deviceProperties) {
    if (options.deviceOrdinals.size() != 1)
      throw Error("a search on given device properties (a stand-in device) measures on one device");
  } else {
    if (!cuda::cudaAvailable()) throw NoDeviceError(cuda::unavailableReason());
    device.emplace(options.deviceOrdinals.front());
    checkSameModel(options.deviceOrdinals, device->properties());
  }
  const cuda::DeviceProperties& props = options.deviceProperties ? *options.deviceProperties : device->properties();
  std::string workerPath = findWorker(options.workerPath);

  TuneResult result;
  // The timeline (TuneResult::timeline): phases end on several threads.
  std::mutex timelineMutex;
  auto note = [&](const std::string& event, double seconds) {
    std::lock_guard<std::mutex> lock(timelineMutex);
    result.timeline.emplace_back(event, seconds);
    if (options.timeline) options.timeline(event, seconds);
  };
  auto mark = [&](const std::string& event) { note(event, secondsSince(t0)); };
  if (!spawned.empty()) note("measuring workers started", spawnedAt);
  result.key = tuningKeyFor(bound, props, options.space.precision);
  result.precision = options.space.precision;
  result.floatOps = floatOps(bound);
  result.minimalBytes = minimalBytes(bound);
  result.peakBandwidthGBs = props.peakBandwidthGBs();
  DevicePeaks peaks = devicePeaks(props.computeMajor, props.computeMinor, props.multiprocessors, props.clockKHz * 1e3);
  // Each precision at its own peak: an f64 kernel's roofline is the FP64 rate (half of FP32's on
  // an H100), a mixed one's the rate of its mix.
  result.ops = floatOpsByPrecision(bound);
  result.peakGflops = arithmeticPeak(peaks.fp32, peaks.fp64, result.ops) * 1e-9;
  result.arithmetic = arithmeticName(result.ops);

  // The space's options for this device. With a candidate budget, about a third of it is kept
  // for refinement rounds (neighbours of the fastest measured candidates, from what sampling left
  // out).
  SpaceOptions spaceOptions = options.space;
  int64_t refineBudget = refinementBudget(spaceOptions.maxCandidates);
  spaceOptions.maxCandidates -= refineBudget;
  setSpaceDevice(spaceOptions, props);
  Schedule defaultSched = defaultSchedule(scheduled, spaceOptions.limits);

  // Compiling starts first, with the default schedule (job 0, known before the space is): its
  // workers start and warm NVRTC, and the default compiles, while the space is enumerated and the
  // reference computed. The space's candidates are appended to the batch once enumerated.
  LaunchLimits limits{props.maxThreadsPerBlock, props.registersPerBlock, int64_t(props.sharedPerBlockOptin),
                      props.multiprocessors, int64_t(props.sharedPerMultiprocessor)};
  // In rtcg-worker --compile-worker processes: NVRTC scales across processes, not threads.
  CompilePoolOptions poolOptions;
  poolOptions.parallel = options.compileThreads;
  poolOptions.measuringDevices =
      int(options.deviceOrdinals.size()) + (options.remoteCompileSlots.empty() ? options.remoteDeviceCount : 0);
  poolOptions.workerPath = workerPath;
  // A few compile workers start now, the others once the measuring workers are ready (their CUDA
  // contexts are made meanwhile) or the candidates are queued, whichever comes first (below).
  poolOptions.deferWorkers = true;
  poolOptions.log = log;
  poolOptions.remoteSlots = options.remoteCompileSlots;
  // A budgeted search's first batch has about its budget's sample (with the default and planted
  // ones); the pool is not given more slots than that, as when it got the whole batch at once.
  if (spaceOptions.maxCandidates > 0)
    poolOptions.expectedJobs = size_t(spaceOptions.maxCandidates) + 1 + options.extraCandidates.size();
  else
    poolOptions.expectedJobs = std::numeric_limits<size_t>::max();
  poolOptions.timeline = [&](const std::string& event) {
    mark(event == "job 0 compiled" ? "default schedule compiled" : event);
  };
  std::vector<CompileJob> first;
  first.push_back({printSchedule(defaultSched), defaultSched, {}, nullptr});  // as queueSearch queues it
  auto pool = std::make_unique<CompilePool>(scheduled, props.arch(), limits, std::move(first), poolOptions);
  CompilePool* const deferredStart = pool.get();  // startDeferredWorkers(), from the workers' start too
  mark("compile pool started");

  // The space, on a thread of its own (its future waits for it on the way out if something throws).
  std::future<Space> enumerating = std::async(std::launch::async, [&] {
    Space s = enumerateSchedules(scheduled, spaceOptions);
    mark("enumeration done");
    return s;
  });

  // Opened now, so an unusable database fails before the reference (and the warm start below can
  // read it); the search is begun once the reference says how candidates are verified (part of its
  // settings).
  std::unique_ptr<TuningDb> db = openDatabase(options, log);

  // The reference program, compiled up front: its outer loops give the sample size for kernels
  // over the reference limit. It runs on the cores this process may use (its affinity), but one
  // where there are more than two: the enumeration has that one.
  ReferenceProgram referenceProgram(bound);
  ReferenceOptions referenceOptions;
  referenceOptions.sampleSeed = options.seed;
  referenceOptions.threads = usableCores() > 2 ? usableCores() - 1 : usableCores();
  // Sized by every arithmetic operation the reference executes (an integer GEMM has no float ones).
  const int64_t referenceOps = arithmeticOps(bound);
  referenceOptions.sampleOuterValues =
      referenceSampleSize(referenceOps, options.referenceMaxFlops, referenceProgram.outerExtents());

  nlohmann::json settings = searchSettings(options);

  // The float64 reference on the CPU, once, on the inputs the worker regenerates. The measuring
  // workers are set up meanwhile (started above; now the inputs regenerated and uploaded), and so
  // are the remote devices (another rank's worker); they read the reference file, written here
  // before any candidate goes out, at their first candidate.
  std::map<std::string, double> scalars = tuningScalars(bound, options.seed);
  // The reference runs on these inputs themselves (it writes their outputs): the setup has their
  // checksums already.
  HostArgs inputs = tuningInputs(bound, options.seed, scalars, options.inputFiles);
  TempFile refFile;
  const worker::SetupMessage setup = setupMessage(fileName, source, bound, options, scalars, inputs, refFile.path);
  mark("inputs generated");
  std::future<std::vector<std::unique_ptr<WorkerProcess>>> starting = std::async(std::launch::async, [&] {
    std::vector<std::unique_ptr<WorkerProcess>> w = startWorkers(workerPath, setup, options, log, std::move(spawned));
    mark("measuring workers ready");
    deferredStart->startDeferredWorkers();
    return w;
  });
  std::future<std::vector<std::unique_ptr<RemoteMeasurer>>> startingRemotes;
  auto startRemotes = [&] {
    if (!options.remoteDevices) return;
    startingRemotes = std::async(std::launch::async, [&] {
      worker::SetupMessage remoteSetup = setup;
      remoteSetup.deviceOrdinal = options.deviceOrdinals.front();
      std::vector<std::unique_ptr<RemoteMeasurer>> r = options.remoteDevices(remoteSetup);
      mark("remote devices ready");
      return r;
    });
  };
  if (options.remoteDevicesBeforeReference) startRemotes();
  if (referenceOptions.sampleOuterValues > 0)
    log(fmt::format("computing the CPU reference ({:.3g} arithmetic operations, over the limit of {:.3g}: on a "
                    "sample of {} values of each nest's outer loop) ...",
                    double(referenceOps), options.referenceMaxFlops, referenceOptions.sampleOuterValues));
  else
    log(fmt::format("computing the CPU reference ({:.3g} arithmetic operations) ...", double(referenceOps)));
  ReferenceResult ref = referenceProgram.run(inputs, referenceOptions);
  result.referenceSeconds = ref.seconds;
  result.referenceSampled = ref.sampled;
  result.reference = describeReference(ref);
  log(fmt::format("CPU reference ({}): {:.3f} s", result.reference, ref.seconds));
  settings["reference"] = result.reference;
  result.settings = settings.dump();
  {
    std::vector<worker::ReferenceArray> arrays;
    for (ReferenceOutput& o : ref.outputs) {
      // Integer outputs go as their exact values only (verifyOutputs compares them exactly).
      if (!o.integers.empty()) o.values.clear();
      arrays.push_back({o.param, std::move(o.values), std::move(o.computed), std::move(o.integers)});
    }
    worker::writeReferenceFile(refFile.path, arrays);
  }
  mark("reference done");
  if (!options.remoteDevicesBeforeReference) startRemotes();

  Space space = enumerating.get();
  noteSpace(space, scheduled, result, log);

  // Refinement draws from what sampling left out; without any, its budget goes back to the sample.
  std::vector<Candidate> reserve = std::move(space.reserve);

  // Jobs: the default schedule first (always measured, the baseline; compiling already), then the
  // warm start (tune/WarmStart.h: the database's winners at other sizes, from the reserve or, when
  // the space lacks them, validated as they are), then the space's candidates (best predicted
  // first; a budgeted sample gives up as many of its last, randomly drawn, ones as the warm start
  // added), then planted ones.
  std::vector<CompileJob> jobs;
  std::vector<std::string> warmed =
      queueSearch(scheduled, spaceOptions.limits, defaultSched, space.candidates, reserve,
                  db ? warmStartSchedules(db->list(), result.key, kWarmStartSchedules) : std::vector<std::string>{},
                  spaceOptions.maxCandidates > 0, jobs);
  if (!warmed.empty())
    log(fmt::format("warm start: {} schedule{} the database found fastest for {} at other sizes", warmed.size(),
                    warmed.size() == 1 ? "" : "s", bound.name));
  result.warmStarted = int64_t(warmed.size());
  if (reserve.empty()) refineBudget = 0;
  queuePlanted(options.extraCandidates, defaultSched, jobs);
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
  std::map<std::string, Schedule> scheduleOf;  // measured labels -> schedules, for refinement
  for (const CompileJob& j : jobs) scheduleOf[j.label] = j.schedule;
  RTCG_ASSERT(!jobs.empty() && jobs.front().label == printSchedule(defaultSched),
              "the search's first job is not the default schedule");
  pool->append(std::vector<CompileJob>(std::make_move_iterator(jobs.begin() + 1), std::make_move_iterator(jobs.end())));
  mark("candidates queued");
  pool->startDeferredWorkers();  // if the measuring workers are not ready yet: jobs for every slot
  // A refinement round is as large as the pool's parallelism over the first batch: its slots, or
  // its jobs where they are fewer.
  result.compileThreads = std::min(pool->parallel(), int(jobs.size()));
  log(fmt::format("compiling {} candidates with NVRTC in {} worker processes for {}", result.generated,
                  result.compileThreads, props.arch()));
  if (!poolOptions.remoteSlots.empty()) {
    std::vector<std::string> where;
    for (const CompileHostCount& h : pool->hosts())
      where.push_back(fmt::format("{} {}", h.slots, h.host == "local" ? "here" : "on " + h.host));
    log(fmt::format("compiling with {} slots: {}", pool->parallel(), fmt::join(where, ", ")));
  }

  std::vector<std::unique_ptr<WorkerProcess>> workers = starting.get();
  std::vector<std::unique_ptr<RemoteMeasurer>> remotes;
  if (startingRemotes.valid()) remotes = startingRemotes.get();
  for (const std::unique_ptr<RemoteMeasurer>& r : remotes) r->referenceWritten();
  if (!remotes.empty()) mark("reference sent to the remote devices");
  if (db && options.writeDb) result.searchId = db->beginSearch(result.key, result.settings);
  result.devices = int(workers.size() + remotes.size());
  if (workers.size() > 1)
    log(fmt::format("measuring on {} devices ({}), one worker each", workers.size(),
                    fmt::join(options.deviceOrdinals, ", ")));
  for (const std::unique_ptr<RemoteMeasurer>& r : remotes) log(fmt::format("measuring also on {}", r->name()));
  // The search proper (tune/Search.h): the default schedule, then the rest, then refinement.
  SearchInputs in;
  in.queued = std::move(scheduleOf);
  in.reserve = std::move(reserve);
  in.refineBudget = refineBudget;
  in.earlierBest = earlierBest;
  in.timeLimitSeconds = options.timeLimitSeconds;
  in.repeats = options.repeats;
  in.now = [t0] { return secondsSince(t0); };
  in.log = log;
  in.progress = options.progress;
  in.mark = mark;
  bool dbFailed = false;
  in.record = [&](const CandidateRecord& rec) {
    if (!db || !options.writeDb || dbFailed) return;
    try {
      db->record(result.key, rec);
    } catch (const std::exception& e) {
      dbFailed = true;  // the search is still worth finishing; say so once
      log(fmt::format("cannot record in the tuning database (no more records will be written): {}", e.what()));
    }
  };
  PoolCompiler compiler(std::move(pool));
  WorkerMeasurer measurer(workers, remotes);
  SearchTotals totals;
  try {
    totals = runSearch(std::move(in), compiler, measurer, result);
  } catch (...) {
    if (db && options.writeDb && !dbFailed) {
      try {
        db->endSearch(result.searchId, secondsSince(t0), int(result.candidates.size()));
      } catch (...) {
      }
    }
    throw;
  }
  for (const auto& [what, seconds] : busyTimes(totals)) note(what, seconds);
  // Compiled candidates = those that NVRTC compiled, whether or not they were measured.
  bool fallback = compiler.usedFallback();
  result.compiledOn = compiler.compiledOn();
  result.notMeasured += result.generated - totals.compiled;  // never compiled (time limit)
  result.compiled = totals.compiled - result.compileFailed;
  result.compileSeconds = totals.compileSeconds;
  result.candidatesPerSecond = totals.compileSeconds > 0 ? double(totals.compiled) / totals.compileSeconds : 0;
  for (const std::unique_ptr<WorkerProcess>& w : workers) result.workerRestarts += w->restarts();
  for (const std::unique_ptr<RemoteMeasurer>& r : remotes) result.workerRestarts += r->restarts();
  result.wallSeconds = secondsSince(t0);
  if (db && options.writeDb && !dbFailed) db->endSearch(result.searchId, result.wallSeconds, int(result.candidates.size()));
  if (options.resume && db && !dbFailed) {
    result.bestOfAllSearches = db->best(result.key);  // written elsewhere: this search's best may be faster
    if (!options.writeDb && result.best && (!result.bestOfAllSearches || result.best->medianMs < result.bestOfAllSearches->medianMs))
      result.bestOfAllSearches = result.best;
  }
  log(fmt::format("search done in {:.1f} s: {} candidates ({} from refinement), {} verified, {} wrong, {} faulted, {} timed out, {} failed "
                  "to launch, {} skipped, {} failed to compile{}, {} not measured, {} timed once (too slow to win); NVRTC "
                  "{:.1f} candidates/s with {} compiles in parallel{}; worker restarts: {}",
                  result.wallSeconds, result.candidates.size(), result.refined, result.verified, result.wrong, result.faulted,
                  result.timedOut, result.launchFailed, result.skipped, result.compileFailed,
                  result.emitterErrors ? fmt::format(" ({} of them emitter errors: bugs in rtcg)", result.emitterErrors) : "",
                  result.notMeasured,
                  result.timedOnce, result.candidatesPerSecond, result.compileThreads,
                  fallback ? " (some on threads: a compile worker could not start)" : "",
                  result.workerRestarts));
  if (!result.bestLaunches.empty())
    log(fmt::format("the best's launches, each alone (ms): {}", fmt::join(result.bestLaunches, ", ")));
  return result;
}

int64_t recordSearch(TuningDb& db, const TuneResult& result) {
  int64_t id = db.beginSearch(result.key, result.settings);
  for (CandidateRecord c : result.candidates) {
    c.searchId = id;
    db.record(result.key, c);
  }
  db.endSearch(id, result.wallSeconds, int(result.candidates.size()));
  return id;
}

}  // namespace rtcg
