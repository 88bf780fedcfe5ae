// The empirical tuner: enumerate candidate schedules, emit and compile them with NVRTC on all
// cores while earlier ones are measured, verify every candidate's output against the reference
// before its time counts, time the verified ones, keep the fastest and record all of them.
//
// Measurement runs in a separate worker process (tools/rtcg-worker) that holds the CUDA context:
// a candidate that faults (illegal address poisons a context) or hangs kills only the worker,
// which is restarted; the candidate is recorded as failed with its reason and the search goes on.
// The calling process never creates a CUDA context during a search (it initializes the driver to
// read the device's properties, which creates none).
//
// Order of a search: start the compile pool with the default schedule alone (its workers start
// and warm NVRTC) -> at once, and side by side: enumerate the space (schedule/Space.h, on a
// thread of its own), start the measuring workers (and the remote devices') and compute the
// float64 reference on the CPU (the cores of its affinity, but one, which the enumeration has,
// where there are more than two; logged with its time; sampled for kernels over
// TuneOptions::referenceMaxFlops) -> the space's candidates appended to the pool -> measure the
// default schedule first (compiled by then), then the others in compile-completion order ->
// record each (tune/TuningDb.h). TuneResult::timeline says when each phase ended.
// With a time limit, no new candidate starts once it is exceeded; the one in flight finishes.
// With a candidate budget smaller than the space, two thirds of it go to the space's sample (its
// best-predicted half and a seeded random rest) and a third to refinement rounds: each round
// compiles and measures the unmeasured candidates nearest (scheduleDistance) to the three fastest
// verified so far, so the search walks from where the measurements, not the model, point (each
// round queued while the devices still measure what came before it: tune/Search.h).
//
// tune() sets the search up (devices, space, database, warm start, reference, workers); the loop
// and its policy (measuring order, races, budgets, refinement) are tune/Search.h, which reaches
// the compile pool and the workers through two narrow interfaces and is tested on the CPU.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/Counts.h"
#include "ir/IR.h"
#include "schedule/Space.h"
#include "tune/CompilePool.h"
#include "tune/TuningDb.h"
#include "tune/WorkerProcess.h"

namespace rtcg {

namespace cuda {
struct DeviceProperties;
}

// A measuring device outside this process's workers (TuneOptions::remoteDevices): measures one
// candidate at a time, like WorkerProcess::measure. Throws rtcg::Error when the device is gone
// (the search stops, as it does when a local worker cannot be restarted).
class RemoteMeasurer {
 public:
  virtual ~RemoteMeasurer() = default;
  virtual MeasureOutcome measure(const worker::CandidateMessage& candidate) = 0;
  // A device that may hold two candidates, the next one sent while the one before is measured
  // (SearchMeasurer::depth: another MPI rank's), says 2 and implements send() and receive(): the
  // outcomes of what send() handed over, in order. Depth 1 uses measure() alone.
  virtual size_t depth() const { return 1; }
  virtual void send(const worker::CandidateMessage& candidate);
  virtual MeasureOutcome receive();
  // The reference outputs are in the setup's file now (made before it was written: a device that
  // sends them sends them now, while the first candidates compile, not with its first candidate).
  virtual void referenceWritten() {}
  virtual std::string name() const = 0;  // "rank 2 (host, device 0)", for the log
  virtual int restarts() const = 0;      // of its worker process
};

struct TuneProgress {
  int64_t generated = 0;      // candidates to try (kept by the space, plus planted ones)
  int64_t compiled = 0;       // compiles finished (failed ones included)
  int64_t compileFailed = 0;  // compile failures and skipped candidates (spills, cannot launch)
  int64_t measured = 0, verified = 0, failed = 0;  // run on the GPU; failed: wrong, faulted, timed out, launch failed
  double elapsedSeconds = 0;
  std::optional<CandidateRecord> best;
};

// Test hook: a candidate whose CUDA C is a rewrite of the emitted code of `schedule` (same
// functions and launches), e.g. a planted wrong or faulting kernel. It is measured like any other.
struct ExtraCandidate {
  std::string label;     // recorded as its schedule text, e.g. "planted: writes 0 to c[0]"
  std::string schedule;  // whose launches it uses; empty: the default schedule
  std::function<std::string(const std::string& emittedCuda)> rewrite;
};

// Kernels over this many floating-point operations are verified against a sampled reference by
// default (TuneOptions::referenceMaxFlops); it runs at least kMinReferenceSample outer loop
// values (or all of them, if fewer).
constexpr double kDefaultReferenceMaxFlops = 2e9;
constexpr int64_t kMinReferenceSample = 64;
// Schedules a search takes from the database's winners at other sizes (tune/WarmStart.h).
constexpr size_t kWarmStartSchedules = 4;

struct TuneOptions {
  SpaceOptions space;              // constraints and sampling; its device model is set from the device
  double timeLimitSeconds = 0;     // 0: no limit; counted once the default schedule is measured
                                   // (the reference, the worker's setup and that baseline excluded)
  int compileThreads = 0;          // parallel compilations (compile-worker processes); 0: hardware concurrency, at most 16 per device
  int warmup = 2;                  // untimed runs per candidate
  int repeats = 20;                // timed runs per candidate (median); fewer (>= 3) for slow kernels
  double timingBudgetSeconds = 2;  // about how long timing one candidate may take
  double candidateTimeoutSeconds = 10;  // no result of the verifying launch within this: a hang
  double setupTimeoutSeconds = 300;     // worker start to ready (input upload)
  uint64_t seed = 1;               // inputs and scalars (and the reference's sample)
  // In/inout arrays whose values come from files rather than the seed (rtcgc tune --input
  // NAME=FILE): a CSR matrix of one's own, so that the search ranks schedules on the rows the
  // kernel will see. Format: reference/HostArgs.h loadArrayFile.
  std::map<std::string, std::string> inputFiles;
  // A kernel of more floating-point operations than this is verified against a sampled reference:
  // enough values of each nest's outermost loop (at least kMinReferenceSample) to cost about this
  // many operations, and only the output elements they write are compared (Reference.h; every
  // element of an `out` array must still be written). 0: always the full reference.
  double referenceMaxFlops = kDefaultReferenceMaxFlops;
  // The devices candidates are measured on, one worker process each, taking candidates as they
  // finish: a search over two GPUs measures about twice as many per second. The first device's
  // properties define the space; all must be the same model (name, architecture and
  // multiprocessors: a median from one is compared with medians from the others).
  std::vector<int> deviceOrdinals{0};
  // Skip the candidates the database measured for this key before (dropMeasured, tune/WarmStart.h),
  // so that an exhaustive search cut by its time limit continues in the next run. Needs a database.
  bool resume = false;
  std::string dbPath;              // empty: TuningDb::defaultPath(); "-": no database
  std::string workerPath;          // empty: find rtcg-worker ($RTCG_WORKER, next to this executable, PATH)
  std::function<void(const TuneProgress&)> progress;  // called after each candidate, one call at a time
  std::function<void(const std::string&)> log;         // search events: reference time, pruning, worker restarts
  std::vector<ExtraCandidate> extraCandidates;         // test hook (see above)
  // The device's properties instead of the driver's: a search on a machine without a GPU, whose
  // measuring worker is a stand-in (the test suite's fake worker; `rtcgc tune` sets it from
  // $RTCG_TEST_DEVICE). Needs one device ordinal; null: ask the driver.
  std::shared_ptr<const cuda::DeviceProperties> deviceProperties;
  // false: the database is read (warm start, resume) but nothing is written to it; the caller
  // records the result elsewhere (an MPI rank whose searches rank 0 writes with recordSearch).
  // A database that cannot be opened read-only is then no database.
  bool writeDb = true;
  // Measuring devices beyond the local ones (an MPI rank's GPU: tools/rtcgc/MpiTune.h), made once
  // the reference file is written, from the setup message the local workers got (the reference
  // outputs are in the file setup.referencePath names, on this machine); with
  // remoteDevicesBeforeReference, as the search starts, beside the local workers' start, the
  // enumeration and the reference: the file is written only before the first candidate is
  // measured. Each measures one candidate at a time (or two: RemoteMeasurer::depth).
  std::function<std::vector<std::unique_ptr<RemoteMeasurer>>(const worker::SetupMessage& setup)> remoteDevices;
  int remoteDeviceCount = 0;  // how many remoteDevices makes: the compile pool is sized for them too
  bool remoteDevicesBeforeReference = false;
  // Called as each phase of the search ends (TuneResult::timeline), from whichever thread ended it,
  // one call at a time.
  std::function<void(const std::string& event, double seconds)> timeline;
  // Compile slots served elsewhere (another MPI rank's compile workers: tools/rtcgc/MpiTune.h),
  // used by the compile pool besides this process's workers. Given any, the local workers are
  // sized for the local devices alone (the remote devices' hosts bring their own).
  std::vector<std::shared_ptr<RemoteCompileSlot>> remoteCompileSlots;
};

struct TuneResult {
  TuningKey key;
  int64_t searchId = 0;                     // in the database (0: none)
  std::vector<CandidateRecord> candidates;  // every candidate measured or failed, in completion order
  std::vector<double> completedSeconds;     // when each completed, seconds since the start
  // When each phase ended, seconds since the start, in the order they ended: "compile pool
  // started", "compile workers started", "measuring workers ready", "remote devices ready",
  // "reference done", "enumeration done", "candidates queued", "reference sent to the remote
  // devices", "default schedule compiled",
  // "first result", "default schedule measured", "refinement batch N queued", "last result";
  // and where the search's own time went on this process, as "busy: ..." entries (seconds, not
  // times): emitting CUDA C (on the compile slots' threads, in parallel), recording in the
  // database, reporting progress, ranking refinement rounds, each device waiting for a compiled
  // candidate and for its outcomes.
  std::vector<std::pair<std::string, double>> timeline;
  std::optional<CandidateRecord> best;      // fastest verified
  std::optional<CandidateRecord> defaultSchedule;  // the default schedule's record
  int64_t enumerated = 0, generated = 0, pruned = 0, sampledOut = 0;
  Precision precision = Precision::Ieee;    // the policy searched under (part of the key)
  int64_t refined = 0;                      // of `generated`: picked by refinement rounds
  int64_t warmStarted = 0;                  // of `generated`: the database's winners at other sizes
  int64_t resumedSkipped = 0;               // with `resume`: measured by earlier searches, not again
  std::optional<CandidateRecord> bestOfAllSearches;  // with `resume`: the database's best for the key
  int64_t compiled = 0, compileFailed = 0, skipped = 0;
  int64_t emitterErrors = 0;                // of compileFailed: the emitter failed on a plan (a bug in rtcg)
  int64_t verified = 0, wrong = 0, faulted = 0, timedOut = 0, launchFailed = 0;
  int64_t notMeasured = 0;                  // compiled or never started when the time limit hit
  int64_t timedOnce = 0;                    // of `verified`: timed by one run (slow: lost the race)
  bool timeLimitReached = false;
  int workerRestarts = 0;
  int devices = 1;                          // measuring workers (TuneOptions::deviceOrdinals)
  int compileThreads = 0;                   // compile-worker processes used
  // Candidates compiled (failed ones included) per host of compile slots: "local" first, then each
  // host of TuneOptions::remoteCompileSlots ("rank 1"); slots: the compile pool's (every batch ran on them).
  std::vector<CompileHostCount> compiledOn;
  double wallSeconds = 0, compileSeconds = 0, referenceSeconds = 0;
  // How candidates were verified: "full", "full (REASON)" when sampling was wanted but not sound,
  // or "sampled: 64 of 4096 outer loop values, 262144 of 16777216 output elements".
  std::string reference;
  bool referenceSampled = false;
  double candidatesPerSecond = 0;           // NVRTC throughput during the search
  std::vector<PrunedCandidate> prunedList;
  std::vector<std::pair<double, double>> bestOverTime;  // (seconds since start, best median ms)
  // The best's launches, each timed alone (a module of several: worker::ResultMessage::launchMs),
  // as "function ms"; empty for one launch.
  std::vector<std::string> bestLaunches;
  // For rates and rooflines: the kernel's ideal work and the device's peak bandwidth.
  int64_t floatOps = 0, minimalBytes = 0;
  FloatOpsByPrecision ops;  // floatOps by precision
  double peakBandwidthGBs = 0;              // theoretical, from memory clock and bus width
  // The device's arithmetic peak for the kernel (schedule/DeviceModels.h: multiprocessors, clock,
  // architecture) at the kernel's arithmetic (ir/Counts.h: arithmeticPeak of its fp32 and fp64
  // operations); 0 for an unknown architecture.
  double peakGflops = 0;
  std::string arithmetic = "fp32";  // arithmeticName: which peak that is
  std::string settings;                     // the options, for people and the database
};

// The number of outer loop values the tuner's sampled reference runs for a kernel of `floatOps`
// operations whose nests' outer loops have `outerExtents` values: about maxFlops worth (the
// largest outer loop's share), at least kMinReferenceSample; 0 (the full reference) when the
// kernel is within maxFlops or maxFlops is 0.
int64_t referenceSampleSize(int64_t floatOps, double maxFlops, const std::vector<int64_t>& outerExtents);

// A search's work in rough seconds of one host, to deal a manifest's keys largest first: the CPU
// reference (its sample, or the whole kernel where sampling cannot be used) and the read-back
// and comparison of `candidates` candidates' outputs. It ranks searches; it predicts no time.
double searchWorkEstimate(const Kernel& bound, int64_t candidates, double referenceMaxFlops);

// The share of a candidate budget that a search keeps for refinement rounds (neighbours of the
// fastest measured candidates): a third of a budget of 12 or more, else none.
int64_t refinementBudget(int64_t maxCandidates);

// `options` with the device model and schedule limits of a device: the space a search on it
// enumerates.
void setSpaceDevice(SpaceOptions& options, const cuda::DeviceProperties& props);

// Tunes the bound kernel (from `source`, which the worker re-parses). Throws NoDeviceError without
// a device, rtcg::Error for other problems before or outside the candidates (no worker, a worker
// that cannot start, an unwritable database); candidates' failures are results, not errors.
TuneResult tune(const std::string& fileName, const std::string& source, const Kernel& bound,
                const TuneOptions& options);

// Writes a search run elsewhere (TuneOptions::writeDb false: an MPI rank's) into `db`: a search
// row with its settings and time, and every candidate of it. Returns the new search's id.
int64_t recordSearch(TuningDb& db, const TuneResult& result);

}  // namespace rtcg
