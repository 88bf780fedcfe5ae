// The tuner's search policy on the CPU (tune/Search.h): what is measured next, the race
// thresholds, the time limit and the refinement rounds, driven by a compiler that hands jobs back
// at once and a measurer that replays what an H100 measured for every candidate of the SGEMM
// n=4096 space (bench/results/h100-2026-11-25-exhaustive-4096.tsv), on a simulated clock.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <deque>

#include <condition_variable>
#include <functional>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>

#include "MeasuredTsv.h"
#include "SpaceOptionsFor.h"
#include "driver/Pipeline.h"
#include "schedule/Space.h"
#include "tune/Search.h"
#include "tune/Tuner.h"
#include "tune/WarmStart.h"

using namespace rtcg;

namespace {

// schedule -> fastest median of bench/results/FILE.
std::map<std::string, double> readMedians(const std::string& file) {
  std::map<std::string, double> out;
  for (const rtcgtest::MeasuredCandidate& m : rtcgtest::readMeasured(file)) {
    auto [at, fresh] = out.emplace(m.schedule, m.ms);
    if (!fresh) at->second = std::min(at->second, m.ms);
  }
  return out;
}

Kernel loadBound(const std::string& example, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + example);
  std::stringstream ss;
  ss << in.rdbuf();
  Diagnostics diags;
  SourceText src{example, ss.str()};
  std::optional<Kernel> bound = proveKernel(src, sizes, "", diags);
  if (!bound) throw std::runtime_error(renderDiagnostics(diags, src));
  return *bound;
}

// What tune() queues for a budget of `maxCandidates` (no warm start, no planted candidates): the
// default schedule, the space's sample of two thirds of the budget; the rest of the space is the
// reserve refinement draws from.
struct Queued {
  std::vector<CompileJob> jobs;
  std::vector<Candidate> reserve;
  int64_t refineBudget = 0;
};

Queued queue(const Kernel& bound, int64_t maxCandidates, std::optional<SpaceOptions> options = std::nullopt) {
  Queued q;
  SpaceOptions o;  // an H100's device model by default
  o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock);
  if (options) o = *options;
  q.refineBudget = refinementBudget(maxCandidates);
  o.maxCandidates = maxCandidates - q.refineBudget;
  Space space = enumerateSchedules(bound, o);
  q.reserve = std::move(space.reserve);
  queueSearch(bound, o.limits, defaultSchedule(bound), space.candidates, q.reserve, {}, true, q.jobs);
  return q;
}

// Hands each job back at once: in job order, or with the default schedule (job 0) last, as when it
// compiles slowest, or the first batch in a shuffled order (`shuffle` its seed, 0 for none), as
// compiles sharing a loaded host finish. A job the recording has no time for was not legal on the device that measured
// it: skipped, as the compile pool skips what cannot launch. Keeps every job (a job's number is
// its place among them) and, for each refinement round appended, how many jobs were queued and
// how many candidates recorded (`recordedNow`) before it.
class ReplayCompiler : public SearchCompiler {
 public:
  ReplayCompiler(std::vector<CompileJob> first, const std::map<std::string, double>& recorded, bool defaultLast,
                 unsigned shuffle = 0)
      : recorded_(recorded) {
    append(std::move(first));
    batches.clear();
    queuedBefore.clear();
    recordedBefore.clear();
    if (defaultLast && order_.size() > 1) std::rotate(order_.begin(), order_.begin() + 1, order_.end());
    if (shuffle) std::shuffle(order_.begin(), order_.end(), std::mt19937(shuffle));
  }
  std::optional<CompiledCandidate> next() override {
    if (stopped_ || handed_ == order_.size()) {
      ++handedOutAll;
      if (onHandedOut) onHandedOut();
      return std::nullopt;
    }
    size_t job = order_[handed_++];
    CompiledCandidate c;
    c.job = job;
    c.label = jobs_[job].label;
    c.module.launches = {LaunchSpec{"first"}, LaunchSpec{"second"}};  // two launches, timed alone too
    if (!recorded_.count(c.label)) {
      c.status = CandidateStatus::Skipped;
      c.reason = "not legal on the recording's device";
    }
    return c;
  }
  void stop() override { stopped_ = true; }
  void append(std::vector<CompileJob> jobs) override {
    if (stopped_) ADD_FAILURE() << "a stopped compiler was appended to";
    batches.push_back(jobs.size());
    queuedBefore.push_back(jobs_.size());
    recordedBefore.push_back(recordedNow ? recordedNow() : 0);
    if (onAppend) onAppend(jobs);
    for (CompileJob& j : jobs) {
      order_.push_back(jobs_.size());
      jobs_.push_back(std::move(j));
    }
  }
  int64_t finished() const override { return int64_t(handed_.load()); }
  double seconds() const override { return 1; }
  const std::vector<CompileJob>& jobs() const { return jobs_; }

  std::vector<size_t> batches;  // the sizes of the refinement rounds
  std::vector<size_t> queuedBefore, recordedBefore;  // per round: jobs queued, candidates recorded
  std::function<size_t()> recordedNow;
  std::function<void(const std::vector<CompileJob>&)> onAppend;  // a refinement round
  std::function<void()> onHandedOut;  // next() found every job handed out
  size_t handedOutAll = 0;            // how often

 private:
  const std::map<std::string, double>& recorded_;
  std::vector<CompileJob> jobs_;
  std::vector<size_t> order_;
  std::atomic<size_t> handed_{0};
  bool stopped_ = false;
};

// Replays the recorded medians, one simulated second per candidate, and keeps what it was sent. A
// candidate whose median is over the message's first-run race is timed once, as the worker would.
class ReplayMeasurer : public SearchMeasurer {
 public:
  struct Sent {
    std::string label;
    size_t device;
    worker::CandidateMessage msg;
  };
  ReplayMeasurer(const std::map<std::string, double>& recorded, double& clock, size_t devices = 1)
      : recorded_(recorded), clock_(clock), devices_(devices) {}
  size_t devices() const override { return devices_; }
  MeasureOutcome measure(size_t device, const std::string& label, worker::CandidateMessage msg) override {
    if (before) before(label);
    if (device == 0 && laterDepth > 1) {  // the other device gets its two first (at most 10 s)
      std::unique_lock<std::mutex> lock(mutex_);
      heldTwo_.wait_for(lock, std::chrono::seconds(10), [&] { return mostHeld >= 2; });
    }
    std::lock_guard<std::mutex> lock(mutex_);
    clock_ += 1;
    MeasureOutcome m;
    m.result.id = msg.id;
    m.result.medianMs = recorded_.at(label);
    m.result.repeats = msg.raceTimedMs > 0 && m.result.medianMs > msg.raceTimedMs ? 1 : 20;
    if (m.result.repeats > 1) m.result.launchMs = {0.25 * m.result.medianMs, 0.75 * m.result.medianMs};
    sent.push_back({label, device, std::move(msg)});
    return m;
  }

  // Devices after the first hold `laterDepth` candidates: send() keeps one, receive() measures the
  // oldest kept.
  size_t depth(size_t device) const override { return device == 0 ? 1 : laterDepth; }
  void send(size_t device, const std::string& label, worker::CandidateMessage msg) override {
    std::lock_guard<std::mutex> lock(mutex_);
    held_[device].emplace_back(label, std::move(msg));
    mostHeld = std::max(mostHeld, held_[device].size());
    heldTwo_.notify_all();
  }
  MeasureOutcome receive(size_t device) override {
    std::pair<std::string, worker::CandidateMessage> next;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      next = std::move(held_[device].front());
      held_[device].pop_front();
    }
    return measure(device, next.first, std::move(next.second));
  }
  size_t stillHeld() {
    std::lock_guard<std::mutex> lock(mutex_);
    size_t n = 0;
    for (const auto& [device, held] : held_) n += held.size();
    return n;
  }

  std::vector<Sent> sent;
  std::function<void(const std::string& label)> before;  // called first, outside the lock
  size_t laterDepth = 1;
  size_t mostHeld = 0;  // the most candidates a device held at once (send())

 private:
  const std::map<std::string, double>& recorded_;
  double& clock_;
  size_t devices_;
  std::mutex mutex_;
  std::condition_variable heldTwo_;
  std::map<size_t, std::deque<std::pair<std::string, worker::CandidateMessage>>> held_;
};

class SearchReplay : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    recorded_ = new std::map<std::string, double>(readMedians("h100-2026-11-25-exhaustive-4096.tsv"));
    bound_ = new Kernel(loadBound("matmul.rtcg", {{"n", 4096}}));
    queues_ = new std::map<int64_t, Queued>;
  }
  static void TearDownTestSuite() {
    delete recorded_;
    delete bound_;
    delete queues_;
  }

  struct Run {
    TuneResult result;
    SearchTotals totals;
    std::vector<ReplayMeasurer::Sent> sent;
    size_t mostHeld = 0, stillHeld = 0;
    std::vector<size_t> rounds, queuedBefore, recordedBefore;
    std::vector<std::string> firstBatch, reserve;
    std::vector<std::string> jobs;  // every job's label, by job number
    std::vector<std::string> marks, log;
    int64_t refineBudget = 0;
  };

  // A search of `maxCandidates` over the recording (or `recording`), compiling `parallel` at a
  // time. `handedOut`: called when the compiler finds every job handed out; `appended`: with each
  // refinement round's jobs. `perturb` (a seed; 0 for none): the first batch compiles in a shuffled
  // order and every recorded time is off by up to 1% either way, as on another GPU of the model.
  static Run search(int64_t maxCandidates, double timeLimit = 0, bool defaultLast = false, int parallel = 4,
                    std::optional<CandidateRecord> earlierBest = std::nullopt, size_t devices = 1,
                    std::function<void(const std::string&)> before = {}, size_t laterDepth = 1,
                    const std::map<std::string, double>* recording = nullptr, std::function<void()> handedOut = {},
                    std::function<void(const std::vector<CompileJob>&)> appended = {}, unsigned perturb = 0) {
    Queued q = queued(maxCandidates);
    std::map<std::string, double> noisy = recording ? *recording : *recorded_;
    if (perturb) {
      std::mt19937 noise(perturb);
      for (auto& [label, ms] : noisy) ms *= std::uniform_real_distribution<double>(0.99, 1.01)(noise);
    }
    const std::map<std::string, double>& replayed = perturb ? noisy : recording ? *recording : *recorded_;
    Run run;
    run.refineBudget = q.refineBudget;
    SearchInputs in;
    for (const CompileJob& j : q.jobs) {
      in.queued[j.label] = j.schedule;
      run.firstBatch.push_back(j.label);
    }
    for (const Candidate& c : q.reserve) run.reserve.push_back(c.text);
    in.reserve = std::move(q.reserve);
    in.refineBudget = q.refineBudget;
    in.earlierBest = earlierBest;
    in.timeLimitSeconds = timeLimit;
    double clock = 0;
    in.now = [&clock] { return clock; };
    std::atomic<size_t> recorded{0};
    in.record = [&recorded](const CandidateRecord&) { ++recorded; };
    std::mutex mutex;  // marks and log lines come from several threads
    in.mark = [&](const std::string& event) {
      std::lock_guard<std::mutex> lock(mutex);
      run.marks.push_back(event);
    };
    in.log = [&](const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      run.log.push_back(line);
    };
    run.result.generated = int64_t(q.jobs.size());
    run.result.compileThreads = parallel;
    ReplayCompiler compiler(std::move(q.jobs), replayed, defaultLast, perturb);
    compiler.recordedNow = [&recorded] { return recorded.load(); };
    compiler.onHandedOut = std::move(handedOut);
    compiler.onAppend = std::move(appended);
    ReplayMeasurer measurer(replayed, clock, devices);
    measurer.before = std::move(before);
    measurer.laterDepth = laterDepth;
    run.totals = runSearch(std::move(in), compiler, measurer, run.result);
    run.sent = std::move(measurer.sent);
    run.mostHeld = measurer.mostHeld;
    run.stillHeld = measurer.stillHeld();
    run.rounds = compiler.batches;
    run.queuedBefore = compiler.queuedBefore;
    run.recordedBefore = compiler.recordedBefore;
    for (const CompileJob& j : compiler.jobs()) run.jobs.push_back(j.label);
    return run;
  }

  // The space is enumerated once per budget (30010 schedules at n=4096).
  static const Queued& queued(int64_t maxCandidates) {
    auto at = queues_->find(maxCandidates);
    if (at == queues_->end()) at = queues_->emplace(maxCandidates, queue(*bound_, maxCandidates)).first;
    return at->second;
  }

  static std::map<std::string, double>* recorded_;
  static Kernel* bound_;
  static std::map<int64_t, Queued>* queues_;
};
std::map<std::string, double>* SearchReplay::recorded_ = nullptr;
Kernel* SearchReplay::bound_ = nullptr;
std::map<int64_t, Queued>* SearchReplay::queues_ = nullptr;

std::vector<std::string> labels(const TuneResult& r) {
  std::vector<std::string> out;
  for (const CandidateRecord& c : r.candidates) out.push_back(c.schedule);
  return out;
}

TEST_F(SearchReplay, MeasuresTheDefaultScheduleFirstAndTheRestInCompletionOrder) {
  Run run = search(36, 0, /*defaultLast=*/true);
  ASSERT_FALSE(run.result.candidates.empty());
  EXPECT_EQ(run.result.candidates.front().schedule, run.firstBatch.front());
  ASSERT_TRUE(run.result.defaultSchedule);
  EXPECT_EQ(run.result.defaultSchedule->schedule, run.firstBatch.front());
  // Then the first batch as it was handed out (here job order: it was held back until the default
  // came), then the refinement rounds.
  std::vector<std::string> got = labels(run.result);
  ASSERT_GE(got.size(), run.firstBatch.size());
  EXPECT_EQ(std::vector<std::string>(got.begin(), got.begin() + long(run.firstBatch.size())), run.firstBatch);
}

TEST_F(SearchReplay, SameInputsMeasureTheSameCandidatesInTheSameOrder) {
  Run a = search(60), b = search(60);
  EXPECT_EQ(labels(a.result), labels(b.result));
  ASSERT_TRUE(a.result.best && b.result.best);
  EXPECT_EQ(a.result.best->schedule, b.result.best->schedule);
}

// A module of several launches: the best's launches, each timed alone by the worker, in the result.
TEST_F(SearchReplay, KeepsTheBestCandidatesTimePerLaunch) {
  Run run = search(36);
  ASSERT_TRUE(run.result.best);
  const double ms = run.result.best->medianMs;
  EXPECT_EQ(run.result.bestLaunches,
            (std::vector<std::string>{fmt::format("first {:.4f}", 0.25 * ms), fmt::format("second {:.4f}", 0.75 * ms)}));
}

TEST_F(SearchReplay, RacesEachCandidateAgainstTheBestMeasuredBeforeIt) {
  std::optional<CandidateRecord> earlier;
  for (bool resumed : {false, true}) {
    Run run = search(36, 0, false, 4, earlier);
    double best = earlier ? earlier->medianMs : 0;
    for (const ReplayMeasurer::Sent& s : run.sent) {
      SCOPED_TRACE(s.label);
      if (best == 0) {
        EXPECT_EQ(s.msg.raceMs, 0);
        EXPECT_EQ(s.msg.raceTimedMs, 0);
        EXPECT_EQ(s.msg.raceCloseMs, 0);
      } else {
        EXPECT_DOUBLE_EQ(s.msg.raceMs, std::max(1.0, 4 * best));
        EXPECT_DOUBLE_EQ(s.msg.raceTimedMs, 1.5 * best);
        EXPECT_DOUBLE_EQ(s.msg.raceCloseMs, 1.15 * best);
      }
      double ms = recorded_->at(s.label);
      best = best == 0 ? ms : std::min(best, ms);
    }
    // Those over 1.5x the best at their turn were timed once: counted as lost races.
    EXPECT_GT(run.result.timedOnce, 0);
    EXPECT_LT(run.result.timedOnce, run.result.verified);
    if (!resumed) {
      // A resumed search races against the earlier search's best from its first candidate.
      earlier = CandidateRecord{};
      earlier->medianMs = run.result.best->medianMs;
    } else {
      EXPECT_GT(run.sent.front().msg.raceTimedMs, 0);
    }
  }
}

TEST_F(SearchReplay, RefinementRoundsSpendAThirdOfTheBudgetOnTheReserve) {
  Run run = search(36, 0, false, /*parallel=*/4);
  // 36: 24 sampled (with the default), 12 in rounds of as many as compile at once.
  EXPECT_EQ(run.result.refined, 12);
  EXPECT_EQ(run.rounds, (std::vector<size_t>{4, 4, 4}));
  EXPECT_EQ(run.result.generated, int64_t(run.firstBatch.size()) + 12);
  EXPECT_EQ(run.result.candidates.size(), run.firstBatch.size() + 12);
  EXPECT_EQ(run.totals.compiled, int64_t(run.firstBatch.size()) + 12);
  std::set<std::string> first(run.firstBatch.begin(), run.firstBatch.end());
  std::set<std::string> reserve(run.reserve.begin(), run.reserve.end());
  for (size_t i = run.firstBatch.size(); i < run.result.candidates.size(); ++i) {
    const std::string& s = run.result.candidates[i].schedule;
    EXPECT_TRUE(reserve.count(s)) << s;
    EXPECT_FALSE(first.count(s)) << s;
  }
  // Each candidate is measured once.
  std::vector<std::string> all = labels(run.result);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
  // And refinement walks from the measured best: it improves on the sample here.
  double sampleBest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < run.firstBatch.size(); ++i)
    if (run.result.candidates[i].status == CandidateStatus::Verified)
      sampleBest = std::min(sampleBest, run.result.candidates[i].medianMs);
  EXPECT_LE(run.result.best->medianMs, sampleBest);
}

TEST_F(SearchReplay, TheTimeLimitCountsFromTheDefaultScheduleAndStopsNewCandidates) {
  // One simulated second per candidate: the default, then 6 before 6 s > 5 s; the next one
  // fetched is drained as not measured, and no refinement round starts.
  Run run = search(36, /*timeLimit=*/5);
  EXPECT_TRUE(run.result.timeLimitReached);
  EXPECT_EQ(run.sent.size(), 7u);  // skipped candidates (not legal on the device) take no time
  EXPECT_EQ(run.result.notMeasured, 1);
  EXPECT_EQ(run.result.refined, 0);
  EXPECT_TRUE(run.rounds.empty());
  EXPECT_EQ(run.result.candidates.front().schedule, run.firstBatch.front());
}

// The default schedule is handed out first; while one device measures it, the others go on with
// the rest (a slow default once held them idle: about 2 s at the start of an SGEMM n = 4096 search
// on two H200s). Here the default's measurement waits, up to 10 s, for another candidate measured.
TEST_F(SearchReplay, SeveralDevicesMeasureEveryCandidateOnceAndOthersGoOnBesideTheDefault) {
  const std::string defaultLabel = queued(36).jobs.front().label;
  std::mutex m;
  std::condition_variable cv;
  int others = 0;
  bool overlapped = false;
  auto before = [&](const std::string& label) {
    std::unique_lock<std::mutex> lock(m);
    if (label == defaultLabel) {
      overlapped = cv.wait_for(lock, std::chrono::seconds(10), [&] { return others > 0; });
    } else {
      ++others;
      cv.notify_all();
    }
  };
  Run run = search(36, 0, false, 4, std::nullopt, /*devices=*/2, before);
  EXPECT_TRUE(overlapped);
  ASSERT_FALSE(run.sent.empty());
  ASSERT_TRUE(run.result.defaultSchedule.has_value());
  EXPECT_EQ(run.result.defaultSchedule->schedule, defaultLabel);
  std::vector<std::string> all = labels(run.result);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
  EXPECT_EQ(run.result.candidates.size(), run.firstBatch.size() + 12);
}

// A device that holds two candidates (another MPI rank's: RemoteMeasurer::depth) gets the next
// one while it measures the one before, so that it never waits for rank 0 between them; every
// candidate is still measured once, and every one it was sent comes back.
TEST_F(SearchReplay, ADeviceHoldingTwoGetsTheNextBeforeTheLastOutcomeAndMeasuresEachOnce) {
  Run one = search(36, 0, false, 4, std::nullopt, /*devices=*/2);
  EXPECT_EQ(one.mostHeld, 0u);  // depth 1: measure() alone
  Run run = search(36, 0, false, 4, std::nullopt, /*devices=*/2, {}, /*laterDepth=*/2);
  EXPECT_EQ(run.mostHeld, 2u);
  EXPECT_EQ(run.stillHeld, 0u);
  std::vector<std::string> all = labels(run.result);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
  EXPECT_EQ(run.result.candidates.size(), run.firstBatch.size() + 12);
  EXPECT_EQ(run.result.candidates.size(), one.result.candidates.size());
  std::set<size_t> devices;
  for (const ReplayMeasurer::Sent& s : run.sent) devices.insert(s.device);
  EXPECT_EQ(devices, (std::set<size_t>{0, 1}));
  ASSERT_TRUE(run.result.defaultSchedule.has_value());
  EXPECT_EQ(run.result.defaultSchedule->schedule, run.firstBatch.front());
}

// Refinement rounds do not wait for the last outcome of what came before them (on two H200s the
// devices idled through each round's compile, about 1 s of a 9 s search): each round is queued
// before the outcome of the last candidate queued before it is in (here that outcome waits, up to
// 10 s, for the next round), ranked on the outcomes known then. The budget is still spent exactly,
// each candidate measured once under its job's number, and the log and the timeline name each
// round; with one device, and with two, the second holding two.
TEST_F(SearchReplay, TheNextRefinementRoundIsQueuedBeforeTheCandidatesBeforeItAreMeasured) {
  const Queued& q = queued(36);
  auto lastMeasurable = [&](const std::vector<CompileJob>& jobs) {
    for (size_t i = jobs.size(); i-- > 0;)
      if (recorded_->count(jobs[i].label)) return jobs[i].label;
    return std::string();
  };
  for (size_t devices : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} devices", devices));
    std::mutex m;
    std::condition_variable cv;
    size_t appended = 0;  // rounds queued
    // The last measurable job of the sample (0) and of each round (k) -> k.
    std::map<std::string, size_t> lastOf = {{lastMeasurable(q.jobs), 0}};
    std::vector<size_t> waitedInVain;  // what came before these rounds was measured before they were queued
    auto onAppend = [&](const std::vector<CompileJob>& jobs) {
      std::lock_guard<std::mutex> lock(m);
      lastOf[lastMeasurable(jobs)] = ++appended;
      cv.notify_all();
    };
    auto before = [&](const std::string& label) {
      std::unique_lock<std::mutex> lock(m);
      auto at = lastOf.find(label);
      if (at == lastOf.end() || at->second >= 3) return;  // 3 rounds spend the budget
      const size_t k = at->second;
      if (!cv.wait_for(lock, std::chrono::seconds(10), [&] { return appended > k; })) waitedInVain.push_back(k + 1);
    };
    Run run = search(36, 0, false, /*parallel=*/4, std::nullopt, devices, before, /*laterDepth=*/devices, nullptr, {},
                     onAppend);
    ASSERT_EQ(run.rounds, (std::vector<size_t>{4, 4, 4}));
    EXPECT_TRUE(waitedInVain.empty()) << "round " << waitedInVain.front() << " waited for the outcomes before it";
    if (devices == 1)  // what the round was ranked on (with two, the other device measures meanwhile)
      for (size_t k = 0; k < run.rounds.size(); ++k) EXPECT_LT(run.recordedBefore[k], run.queuedBefore[k]);
    EXPECT_EQ(run.result.refined, run.refineBudget);
    EXPECT_EQ(run.result.generated, int64_t(run.firstBatch.size()) + run.refineBudget);
    EXPECT_EQ(run.jobs.size(), run.firstBatch.size() + size_t(run.refineBudget));
    EXPECT_EQ(run.result.candidates.size(), run.jobs.size());
    EXPECT_EQ(run.totals.compiled, int64_t(run.jobs.size()));
    EXPECT_EQ(std::set<std::string>(run.jobs.begin(), run.jobs.end()).size(), run.jobs.size());
    std::vector<std::string> all = labels(run.result);
    EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
    // A measured candidate's id and a failed one's log line name its job.
    std::set<int64_t> ids;
    for (const ReplayMeasurer::Sent& s : run.sent) {
      ASSERT_LT(size_t(s.msg.id), run.jobs.size());
      EXPECT_EQ(run.jobs[size_t(s.msg.id)], s.label);
      EXPECT_TRUE(ids.insert(s.msg.id).second) << s.label << " measured twice";
    }
    int rounds = 0;
    for (const std::string& line : run.log) {
      rounds += line.rfind("refinement round ", 0) == 0;
      size_t job = 0;
      char status[32] = {};
      if (std::sscanf(line.c_str(), "candidate %zu %31s", &job, status) == 2) {
        ASSERT_LT(job, run.jobs.size()) << line;
        EXPECT_FALSE(recorded_->count(run.jobs[job])) << line;  // the skipped one: not in the recording
      }
    }
    EXPECT_EQ(rounds, 3);
    std::vector<std::string> queuedMarks;
    for (const std::string& mark : run.marks)
      if (mark.rfind("refinement batch ", 0) == 0) queuedMarks.push_back(mark);
    EXPECT_EQ(queuedMarks, (std::vector<std::string>{"refinement batch 1 queued", "refinement batch 2 queued",
                                                     "refinement batch 3 queued"}));
  }
}

// A round that is due before anything is verified waits for the outcomes in flight, also on a
// device that has found every candidate handed out (it waits for the other device's outcome rather
// than ending its part of the search). Here no candidate of the sample but the default can be
// measured, and the default's measurement waits until the compiler has had nothing to hand out.
TEST_F(SearchReplay, ARoundDueBeforeAnyVerifiedOutcomeWaitsForTheOutcomesInFlight) {
  const Queued& q = queued(36);
  const std::string defaultLabel = q.jobs.front().label;
  std::map<std::string, double> recording;  // the default and the reserve
  recording[defaultLabel] = recorded_->at(defaultLabel);
  for (const Candidate& c : q.reserve)
    if (auto at = recorded_->find(c.text); at != recorded_->end()) recording.insert(*at);
  std::mutex m;
  std::condition_variable cv;
  bool handedOut = false, waited = false;
  auto before = [&](const std::string& label) {
    if (label != defaultLabel) return;
    std::unique_lock<std::mutex> lock(m);
    waited = cv.wait_for(lock, std::chrono::seconds(10), [&] { return handedOut; });
  };
  auto onHandedOut = [&] {
    std::lock_guard<std::mutex> lock(m);
    handedOut = true;
    cv.notify_all();
  };
  Run run = search(36, 0, false, 4, std::nullopt, /*devices=*/2, before, 1, &recording, onHandedOut);
  EXPECT_TRUE(waited);
  ASSERT_TRUE(run.result.defaultSchedule.has_value());
  EXPECT_EQ(run.result.defaultSchedule->status, CandidateStatus::Verified);
  ASSERT_FALSE(run.recordedBefore.empty());
  EXPECT_EQ(run.recordedBefore.front(), run.firstBatch.size());  // once the default's outcome was in
  EXPECT_EQ(run.result.refined, run.refineBudget);
  EXPECT_EQ(run.result.candidates.size(), run.firstBatch.size() + size_t(run.refineBudget));
  std::vector<std::string> all = labels(run.result);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

// The rounds pick the same candidates whatever order the first batch compiles in and with every
// time off by up to 1%, as the same search on another rank of an MPI run (its compiles sharing the
// host's cores, its GPU another of the model): each round ranks on the same jobs' outcomes, and
// times within kNearTie of each other rank in job order. Over several such runs, one device and
// two.
TEST_F(SearchReplay, RoundsPickTheSameCandidatesWhateverTheCompileOrderAndTimingNoise) {
  for (size_t devices : {1, 2}) {
    SCOPED_TRACE(fmt::format("{} devices", devices));
    Run plain = search(36, 0, false, 4, std::nullopt, devices);
    std::vector<std::string> refined(plain.jobs.begin() + long(plain.firstBatch.size()), plain.jobs.end());
    ASSERT_EQ(refined.size(), 12u);
    std::sort(refined.begin(), refined.end());
    for (unsigned seed : {1u, 2u, 3u, 4u, 5u}) {
      Run run = search(36, 0, false, 4, std::nullopt, devices, {}, 1, nullptr, {}, {}, seed);
      std::vector<std::string> got(run.jobs.begin() + long(run.firstBatch.size()), run.jobs.end());
      std::sort(got.begin(), got.end());
      EXPECT_EQ(got, refined) << "seed " << seed;
    }
  }
}

// A time limit reached during refinement: no round is queued after it, what was queued and not
// handed out yet is not measured, and the budget is never exceeded.
TEST_F(SearchReplay, TheTimeLimitStopsRefinementRoundsInFlight) {
  Run full = search(36);
  // One simulated second per measured candidate; the limit counts from after the default.
  Run run = search(36, /*timeLimit=*/double(full.sent.size()) - 4.5);
  EXPECT_TRUE(run.result.timeLimitReached);
  EXPECT_FALSE(run.rounds.empty());
  EXPECT_LE(run.result.refined, run.refineBudget);
  EXPECT_LT(run.sent.size(), full.sent.size());
  EXPECT_GE(run.result.notMeasured, 1);
  EXPECT_LE(int64_t(run.result.candidates.size()) + run.result.notMeasured, run.result.generated);
  std::vector<std::string> all = labels(run.result);
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), all.size());
}

// The ranking of one round on a hand-made record: nearest to the three fastest verified first,
// 0.75 added per rank of the one they are near; ties in reserve (model) order; failed, unknown
// (planted) and slower-than-third records not ranked against.
TEST(SearchPolicy, RefinementRanksTheReserveByDistanceToTheFastestVerified) {
  Queued q = queue(loadBound("matmul.rtcg", {{"n", 512}}), 30);
  ASSERT_GE(q.jobs.size(), 6u);
  ASSERT_GE(q.reserve.size(), 10u);
  std::map<std::string, Schedule> scheduleOf;
  std::vector<CandidateRecord> measured;
  for (size_t i = 0; i < 6; ++i) {
    scheduleOf[q.jobs[i].label] = q.jobs[i].schedule;
    CandidateRecord r;
    r.schedule = q.jobs[i].label;
    r.status = i == 1 ? CandidateStatus::WrongResult : CandidateStatus::Verified;
    r.medianMs = 1.0 + double(i);  // fastest first; job 1, the fastest, is wrong
    measured.push_back(r);
  }
  CandidateRecord planted;
  planted.schedule = "planted: not queued";
  planted.status = CandidateStatus::Verified;
  planted.medianMs = 0.1;
  measured.push_back(planted);

  RefinementRound r = rankRefinement(measured, scheduleOf, q.reserve, 5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0]->schedule, q.jobs[0].label);
  EXPECT_EQ(r.top[1]->schedule, q.jobs[2].label);
  EXPECT_EQ(r.top[2]->schedule, q.jobs[3].label);
  ASSERT_EQ(r.picked.size(), 5u);
  std::vector<double> all;
  for (const Candidate& c : q.reserve) {
    double d = std::numeric_limits<double>::infinity();
    for (size_t t = 0; t < 3; ++t)
      d = std::min(d, scheduleDistance(c.schedule, scheduleOf.at(r.top[t]->schedule)) + 0.75 * double(t));
    all.push_back(d);
  }
  for (size_t p = 0; p < r.picked.size(); ++p) {
    EXPECT_DOUBLE_EQ(r.picked[p].first, all[r.picked[p].second]);
    if (p > 0) EXPECT_TRUE(r.picked[p - 1] < r.picked[p]);  // by distance, then reserve position
  }
  std::set<size_t> picked;
  for (const auto& [d, at] : r.picked) picked.insert(at);
  for (size_t i = 0; i < all.size(); ++i)
    if (!picked.count(i)) EXPECT_GE(all[i], r.picked.back().first) << q.reserve[i].text;

  // Nothing verified among the queued: no round.
  for (CandidateRecord& m : measured) m.status = CandidateStatus::Faulted;
  EXPECT_TRUE(rankRefinement(measured, scheduleOf, q.reserve, 5).picked.empty());
}

// Times within kNearTie of the fastest left rank in the order the records are given (the jobs'),
// not by time: the fastest three here are jobs 0, 1 and 2 whatever their noise.
TEST(SearchPolicy, NearTiesRankInJobOrder) {
  Queued q = queue(loadBound("matmul.rtcg", {{"n", 512}}), 30);
  ASSERT_GE(q.jobs.size(), 5u);
  std::map<std::string, Schedule> scheduleOf;
  std::vector<CandidateRecord> measured;
  const std::vector<double> ms = {1.02, 1.0, 1.5, 1.49, 3.0};  // jobs 0-1 and 2-3 within 3%
  for (size_t i = 0; i < ms.size(); ++i) {
    scheduleOf[q.jobs[i].label] = q.jobs[i].schedule;
    CandidateRecord r;
    r.schedule = q.jobs[i].label;
    r.medianMs = ms[i];
    measured.push_back(r);
  }
  RefinementRound r = rankRefinement(measured, scheduleOf, q.reserve, 5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0]->schedule, q.jobs[0].label);
  EXPECT_EQ(r.top[1]->schedule, q.jobs[1].label);
  EXPECT_EQ(r.top[2]->schedule, q.jobs[2].label);
  // Beyond 3% time decides: job 1 at 0.9 leads.
  measured[1].medianMs = 0.9;
  r = rankRefinement(measured, scheduleOf, q.reserve, 5);
  ASSERT_EQ(r.top.size(), 3u);
  EXPECT_EQ(r.top[0]->schedule, q.jobs[1].label);
  EXPECT_EQ(r.top[1]->schedule, q.jobs[0].label);
}

// Refinement around a tensor-core form measures its siblings: the f64 DG differentiation at N = 5
// (K = 10^5, Np = 56), where the model ties some twenty forms at the memory bound and puts the
// fastest form measured on an H200 (64 x 64 tiles, four blocks a multiprocessor: 1.5x cublasDgemm)
// far behind the 128 x 64 form the sample measures (docs/bench.md, session 46). One tile dimension
// halved is one step from it, so a round of 16 takes it; when every two mma forms were as far
// apart as an mma form from a SIMT one, the round took the reserve in model order and missed it.
TEST(SearchPolicy, RefinementAroundAnMmaFormTakesItsSiblings) {
  Diagnostics diags;
  SourceText src{"dg64.rtcg",
                 "kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {\n"
                 "  for k in 0..K, m in 0..3 * Np {\n"
                 "    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);\n"
                 "  }\n"
                 "}\n"};
  std::optional<Kernel> bound = proveKernel(src, {{"K", 100000}, {"Np", 56}}, "", diags);
  ASSERT_TRUE(bound) << renderDiagnostics(diags, src);
  Queued q = queue(*bound, 48, rtcg::testing::spaceOptionsFor("sm_90"));  // an H200's limits: 132 multiprocessors
  auto parsed = [](const std::string& text) {
    ScheduleParseResult r = parseSchedule(text);
    EXPECT_TRUE(r.ok()) << text << ": " << r.error;
    return *r.schedule;
  };
  const std::string measuredForm = "mma: f64 m16n8k4 warps 2x2 tile 4x4 k 8 stages 4 persistent resident a fragments 2";
  const std::string sibling = "mma: f64 m16n8k4 warps 2x2 tile 2x4 k 8 stages 4 persistent resident a fragments 2";
  EXPECT_DOUBLE_EQ(scheduleDistance(parsed(measuredForm), parsed(sibling)), 1);
  auto inReserve = std::find_if(q.reserve.begin(), q.reserve.end(), [&](const Candidate& c) { return c.text == sibling; });
  ASSERT_NE(inReserve, q.reserve.end()) << "the sibling is not in the reserve (sampled, or no longer in the space)";
  std::map<std::string, Schedule> scheduleOf{{measuredForm, parsed(measuredForm)}};
  CandidateRecord r;
  r.schedule = measuredForm;
  r.medianMs = 0.07;
  RefinementRound round = rankRefinement({r}, scheduleOf, q.reserve, 16);
  ASSERT_EQ(round.picked.size(), 16u);
  bool taken = false;
  for (const auto& [d, at] : round.picked) {
    taken |= q.reserve[at].text == sibling;
    EXPECT_LE(d, 2) << q.reserve[at].text;  // mma forms a few steps away, not SIMT ones
  }
  EXPECT_TRUE(taken);
}

TEST(SearchPolicy, RaceLimitsAreMultiplesOfTheBestWithAOneMillisecondFloor) {
  RaceLimits none = raceLimits(0);
  EXPECT_EQ(none.raceMs, 0);
  EXPECT_EQ(none.raceTimedMs, 0);
  EXPECT_EQ(none.raceCloseMs, 0);
  RaceLimits fast = raceLimits(0.1);
  EXPECT_DOUBLE_EQ(fast.raceMs, 1.0);
  EXPECT_DOUBLE_EQ(fast.raceTimedMs, 0.15);
  EXPECT_DOUBLE_EQ(fast.raceCloseMs, 0.115);
  EXPECT_DOUBLE_EQ(raceLimits(2).raceMs, 8);

  CandidateRecord a, b;
  a.medianMs = 2;
  b.medianMs = 3;
  EXPECT_EQ(raceBest(std::nullopt, std::nullopt), 0);
  EXPECT_EQ(raceBest(a, std::nullopt), 2);
  EXPECT_EQ(raceBest(std::nullopt, b), 3);
  EXPECT_EQ(raceBest(b, a), 2);  // a resumed search's earlier best, when faster
  EXPECT_EQ(raceBest(a, b), 2);
}

}  // namespace

// Recombination: each nest's fastest measured schedule together (a kernel whose nests run as a
// launch each), never a fused schedule's nests, nothing when it is a measured one or only one
// schedule qualifies.
TEST(Recombination, TakesEachNestsFastestMeasuredSchedule) {
  auto parse = [](const char* text) { return *parseSchedule(text).schedule; };
  const Schedule a = parse("i: grid.x, thread.x 256 | j: grid.x, thread.x 64");
  const Schedule b = parse("i: grid.x, thread.x 128 | j: grid.x, thread.x 128");
  std::optional<Schedule> r = recombineNests({{a, {1.0, 5.0}}, {b, {3.0, 2.0}}});
  ASSERT_TRUE(r);
  EXPECT_EQ(printSchedule(*r), "i: grid.x, thread.x 256 | j: grid.x, thread.x 128");
  // The combination is a measured schedule: nothing new.
  EXPECT_FALSE(recombineNests({{a, {1.0, 2.0}}, {b, {3.0, 5.0}}}));
  // One schedule alone, launch times that do not match the nests, a fused schedule: not used.
  EXPECT_FALSE(recombineNests({{a, {1.0, 5.0}}}));
  EXPECT_FALSE(recombineNests({{a, {1.0, 5.0}}, {b, {3.0}}}));
  const Schedule fused = parse("fuse: 2; i: grid.x, thread.x 64 | -");
  EXPECT_FALSE(recombineNests({{a, {1.0, 5.0}}, {fused, {0.5, 0.0}}}));
}
