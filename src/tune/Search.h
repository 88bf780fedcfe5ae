// The tuner's search loop and its policy, apart from the machinery that compiles and measures:
// what to measure next (the default schedule first, the baseline; then compile-completion order),
// the race thresholds sent with each candidate, the time and candidate budgets, and the
// refinement rounds and their ranking. It reaches NVRTC and the GPU only through two narrow
// interfaces (SearchCompiler, SearchMeasurer), so that the policy runs on the CPU in tests with a
// compiler that hands jobs back at once and a measurer that replays recorded medians
// (tests/tuner/test_search.cpp replays bench/results' exhaustive SGEMM n=4096 search).
//
// tune() (tune/Tuner.h) sets a search up (space, warm start, reference, workers) and runs it
// through runSearch with the compile pool and the measuring workers behind the interfaces.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "tune/CompilePool.h"
#include "tune/Tuner.h"
#include "tune/TuningDb.h"
#include "tune/WorkerProcess.h"
#include "tune/WorkerProtocol.h"

namespace rtcg {

// Compiles the search's candidates as one batch that grows: its first jobs (job 0 the default
// schedule) are under way when the search starts (compiling overlaps with the reference), and each
// refinement round is appended to it, numbered after the jobs before. Called from one thread at a
// time.
class SearchCompiler {
 public:
  virtual ~SearchCompiler() = default;
  // The next finished candidate in completion order, waiting for one; nullopt while every job
  // appended so far has been handed out (a later append() hands out more).
  virtual std::optional<CompiledCandidate> next() = 0;
  // Starts no further jobs (those compiling are still handed out); nothing is appended after.
  virtual void stop() = 0;
  // Adds a refinement round's jobs to the batch, also while earlier ones are still compiling.
  virtual void append(std::vector<CompileJob> jobs) = 0;
  virtual int64_t finished() const = 0;  // compiles finished (failed ones included)
  virtual double seconds() const = 0;    // the batch's wall time compiling (CompilePool::seconds)
};

// Measures compiled candidates on devices(), one candidate at a time on each (a device is measured
// from one thread at a time; several devices from one thread each).
class SearchMeasurer {
 public:
  virtual ~SearchMeasurer() = default;
  virtual size_t devices() const = 0;
  // `label`: the candidate's schedule text (what a replaying measurer looks its time up by).
  virtual MeasureOutcome measure(size_t device, const std::string& label, worker::CandidateMessage msg) = 0;
  // How many candidates `device` holds at once: 1, measured by measure(); or 2, handed over by
  // send() while the one before is measured, each outcome taken by receive() in the order sent
  // (a device whose every candidate travels, another MPI rank's, then never waits for this
  // process between two).
  virtual size_t depth(size_t /*device*/) const { return 1; }
  virtual void send(size_t device, const std::string& label, worker::CandidateMessage msg);
  virtual MeasureOutcome receive(size_t device);
};

// The race thresholds a candidate is measured under, from the best median so far (0: none yet,
// no race).
struct RaceLimits {
  double raceMs = 0, raceTimedMs = 0, raceCloseMs = 0;  // see worker::CandidateMessage
};
RaceLimits raceLimits(double bestMs);

// The best median a candidate races against: this search's best, or an earlier search's of the
// key (a resumed search) when faster; 0 when there is neither.
double raceBest(const std::optional<CandidateRecord>& best, const std::optional<CandidateRecord>& earlierBest);

// Recombination: where a kernel's nests run as one launch each (no `fuse:`), a launch's time
// depends on its own nest's schedule, so each nest's fastest measured schedule together is a
// candidate of its own. `measured`: verified schedules with each launch's time (a worker's
// ResultMessage::launchMs); the combination, or nullopt where fewer than two qualify (as many
// launches as nests, no fusion) or it is one of them.
std::optional<Schedule> recombineNests(const std::vector<std::pair<Schedule, std::vector<double>>>& measured);

// One refinement round: the unqueued reserve candidates nearest (scheduleDistance, plus 0.75
// per rank of the measured candidate they are near) to the three fastest verified candidates.
// Times within kNearTie of each other are one time, ranked in the order `measured` lists them (the
// jobs' order): timing noise (about 1% under an L2 flush; more from one GPU of a model to another)
// cannot reorder them and steer the round elsewhere.
inline constexpr double kNearTie = 0.03;
struct RefinementRound {
  std::vector<const CandidateRecord*> top;  // the fastest verified, fastest first (at most 3; ties as above)
  // (distance, reserve position) of the picked candidates, nearest first; ties in reserve order
  // (the model's rank).
  std::vector<std::pair<double, size_t>> picked;
};
// `measured`: the search's records to rank on, in job order; `scheduleOf`: the schedules of the candidates queued
// (records of others, planted ones, are not ranked against); `take`: at most this many. An empty
// round (no verified candidate, or nothing left) ends refinement.
RefinementRound rankRefinement(const std::vector<CandidateRecord>& measured,
                               const std::map<std::string, Schedule>& scheduleOf,
                               const std::vector<Candidate>& reserve, size_t take);

struct SearchInputs {
  // The first batch's labels and schedules (the compiler holds its jobs): refinement ranks the
  // reserve against the measured candidates among these and its own rounds'.
  std::map<std::string, Schedule> queued;
  std::vector<Candidate> reserve;  // refinement draws from here, in the model's order
  int64_t refineBudget = 0;        // candidates refinement rounds may add
  std::optional<CandidateRecord> earlierBest;  // a resumed search's earlier best (races from the start)
  double timeLimitSeconds = 0;     // 0: none; counted from after the default schedule
  int repeats = 20;                // TuneOptions::repeats (a verified candidate timed once lost the race)
  // Seconds since the tune() call began (a steady clock); tests give a simulated one.
  std::function<double()> now;
  std::function<void(const std::string&)> log;           // serialized by the caller
  std::function<void(const TuneProgress&)> progress;     // after each candidate
  std::function<void(const CandidateRecord&)> record;    // the tuning database, before counting
  // The search's phases as they end (TuneResult::timeline): "first result", "default schedule
  // measured", "refinement batch N queued", "last result".
  std::function<void(const std::string&)> mark;
};

// What runSearch leaves for the summary: compile counts and time.
struct SearchTotals {
  int64_t compiled = 0;  // finished compiles (failed ones included)
  double compileSeconds = 0;
  // Where the search's own time went (seconds, summed over candidates): emitting their CUDA C (on
  // the compile slots' threads, in parallel), recording them (the database), reporting progress,
  // ranking refinement rounds; and per device, waiting for a compiled candidate and for an
  // outcome (measure(), receive()).
  double emitSeconds = 0, recordSeconds = 0, progressSeconds = 0, rankSeconds = 0;
  std::vector<double> waitSeconds, measureSeconds;
};

// Runs the search: measures the default schedule first (on the device that fetches first), then
// everything the compiler hands out, on every device, with refinement rounds appended while
// budget, reserve and time remain: each is queued while the devices still measure what came
// before it (SearchLoop's lookahead, in Search.cpp), not after the last outcome, so that the
// devices do not wait for its compile. Fills `result`'s candidates, counters, best and default record, and
// refined/generated counts; result.generated and result.compileThreads must be set (the jobs the
// compiler starts with and the compile parallelism, a round's size), result.floatOps and minimalBytes for
// rates. Throws what the measurer throws (the other devices stop after their candidate).
SearchTotals runSearch(SearchInputs inputs, SearchCompiler& compiler, SearchMeasurer& measurer, TuneResult& result);

}  // namespace rtcg
