#include "tune/Search.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <utility>

#include "support/Error.h"

namespace rtcg {

void SearchMeasurer::send(size_t, const std::string&, worker::CandidateMessage) {
  throw InternalError("a measuring device of depth 1 was sent a candidate to hold");
}

MeasureOutcome SearchMeasurer::receive(size_t) {
  throw InternalError("a measuring device of depth 1 was asked for a held candidate's outcome");
}

RaceLimits raceLimits(double bestMs) {
  RaceLimits r;
  if (bestMs <= 0) return r;
  // Racing: a verifying launch over 4x the best median (and over 1 ms: below, launch overhead
  // blurs the comparison and full timing is cheap anyway) is timed once.
  r.raceMs = std::max(1.0, 4.0 * bestMs);
  // And a first timed run over 1.5x the best median ends the timing there: it cannot win (a timed
  // run of a candidate as fast as the best would have to be 50% slow), and at SGEMM n=4096 most of
  // a search's candidates are such, each otherwise timed 22 times; so do three timed runs all over
  // 1.15x the best (timing noise under an L2 flush is about 1%).
  r.raceTimedMs = 1.5 * bestMs;
  r.raceCloseMs = 1.15 * bestMs;
  return r;
}

double raceBest(const std::optional<CandidateRecord>& best, const std::optional<CandidateRecord>& earlierBest) {
  double ms = best ? best->medianMs : 0;
  if (earlierBest && (ms == 0 || earlierBest->medianMs < ms)) ms = earlierBest->medianMs;
  return ms;
}

std::optional<Schedule> recombineNests(const std::vector<std::pair<Schedule, std::vector<double>>>& measured) {
  std::vector<const std::pair<Schedule, std::vector<double>>*> usable;
  for (const auto& m : measured) {
    bool fused = false;
    for (const NestSchedule& n : m.first.nests) fused |= n.fuse > 1;
    if (!fused && m.first.nests.size() > 1 && m.first.nests.size() == m.second.size()) usable.push_back(&m);
  }
  if (usable.size() < 2) return std::nullopt;
  Schedule out = usable[0]->first;
  for (size_t n = 0; n < out.nests.size(); ++n) {
    const std::pair<Schedule, std::vector<double>>* best = nullptr;
    for (const auto* u : usable)
      if (u->first.nests.size() == out.nests.size() && (!best || u->second[n] < best->second[n])) best = u;
    out.nests[n] = best->first.nests[n];
  }
  const std::string text = printSchedule(out);
  for (const auto* u : usable)
    if (printSchedule(u->first) == text) return std::nullopt;
  return out;
}

RefinementRound rankRefinement(const std::vector<CandidateRecord>& measured,
                               const std::map<std::string, Schedule>& scheduleOf,
                               const std::vector<Candidate>& reserve, size_t take) {
  RefinementRound round;
  std::vector<const CandidateRecord*> byTime;
  for (const CandidateRecord& r : measured)
    if (r.status == CandidateStatus::Verified && scheduleOf.count(r.schedule)) byTime.push_back(&r);
  if (byTime.empty() || reserve.empty() || take == 0) return round;
  // Fastest first; the records within kNearTie of the fastest left are taken together, in
  // `measured`'s order (pointers into it compare as their places).
  std::stable_sort(byTime.begin(), byTime.end(), [](auto* a, auto* b) { return a->medianMs < b->medianMs; });
  for (auto from = byTime.begin(); from != byTime.end() && round.top.size() < 3;) {
    const double tie = (*from)->medianMs * (1 + kNearTie);
    auto to = std::find_if(from, byTime.end(), [&](auto* r) { return r->medianMs > tie; });
    std::sort(from, to);
    round.top.insert(round.top.end(), from, to);
    from = to;
  }
  round.top.resize(std::min<size_t>(round.top.size(), 3));
  std::vector<std::pair<double, size_t>> ranked;  // (distance, reserve position): stable by model rank
  for (size_t i = 0; i < reserve.size(); ++i) {
    double d = std::numeric_limits<double>::infinity();
    for (size_t t = 0; t < round.top.size(); ++t)
      d = std::min(d, scheduleDistance(reserve[i].schedule, scheduleOf.at(round.top[t]->schedule)) + 0.75 * double(t));
    ranked.emplace_back(d, i);
  }
  take = std::min(take, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + long(take), ranked.end());
  ranked.resize(take);
  round.picked = std::move(ranked);
  return round;
}

namespace {

// The loop's state: what the tuner's search kept in one function's locals. With several devices,
// their threads measure in parallel: fetchMutex_ guards the compiler, held_, the reserve and the
// counts of candidates handed out and settled (refinement rounds are queued from fetch());
// resultMutex_ the result, the database and progress (finish). fetchMutex_ is taken first.
class SearchLoop {
 public:
  SearchLoop(SearchInputs in, SearchCompiler& compiler, SearchMeasurer& measurer, TuneResult& result)
      : in_(std::move(in)), compiler_(compiler), measurer_(measurer), result_(result) {
    scheduleOf_ = std::move(in_.queued);
    progress_.generated = result_.generated;
    queued_ = size_t(result_.generated);
    searchStart_ = in_.now();
    totals_.waitSeconds.assign(measurer_.devices(), 0);
    totals_.measureSeconds.assign(measurer_.devices(), 0);
    // A refinement round is queued once the candidates not yet handed to a device are no more
    // than the devices hold at once (each its depth): those, with the ones the devices are
    // measuring, keep them busy while the round's first jobs are ranked, emitted and compiled (its
    // jobs compile side by side, so its first candidates come after about one compile, not a
    // round's), rather than idle from the last outcome of the round before. A larger lookahead
    // (a round) leaves the devices no busier where one compile takes less than that, and ranks
    // each round before any outcome of the round before it is in. The price of this one: a round
    // is ranked on the outcomes known when it is queued, without those of the last few
    // candidates before it, so it may pick a candidate that they would not have; that is the
    // accepted trade.
    for (size_t d = 0; d < measurer_.devices(); ++d) lookahead_ += std::max<size_t>(1, measurer_.depth(d));
  }

  SearchTotals run() {
    measureAll();
    totals_.compiled = compiler_.finished();
    totals_.compileSeconds = compiler_.seconds();
    if (!result_.candidates.empty()) mark("last result");
    return totals_;
  }

 private:
  std::optional<CompiledCandidate> nextCandidate();
  std::optional<std::pair<CompiledCandidate, bool>> fetch(size_t holding, double& ranking);
  std::optional<std::pair<CompiledCandidate, bool>> fetchFor(size_t device, size_t holding);
  struct Sent;
  std::optional<std::pair<Sent, worker::CandidateMessage>> begin(CompiledCandidate c, bool isDefault);
  void end(size_t device, Sent sent, const MeasureOutcome& m, double waited);
  void settle(size_t job);
  void measureOn(size_t device);
  // `launches`: the candidate's launches, each timed alone ("function ms"), kept if it is the best.
  void finish(CandidateRecord rec, bool isDefault, std::vector<std::string> launches = {});
  void measureAll();
  void refineIfDue(std::unique_lock<std::mutex>& lock, double& ranking);
  void endRefinement();
  std::vector<CompileJob> takeRound(const RefinementRound& r, std::optional<CompileJob> recombined);
  std::optional<CompileJob> recombination(const std::vector<std::pair<Schedule, std::vector<double>>>& measured);
  // Under fetchMutex_. Not before the default schedule is measured (or, where it could not be, a
  // refinement round queued): the limit counts from then.
  bool overTime() const {
    return in_.timeLimitSeconds > 0 && (rounds_ > 0 || defaultMeasured_) && in_.now() - searchStart_ > in_.timeLimitSeconds;
  }
  void log(const std::string& s) {
    if (in_.log) in_.log(s);
  }
  void mark(const std::string& event) {
    if (in_.mark) in_.mark(event);
  }

  SearchInputs in_;
  SearchCompiler& compiler_;
  SearchMeasurer& measurer_;
  TuneResult& result_;
  std::map<std::string, Schedule> scheduleOf_;  // queued labels -> schedules, for refinement
  std::map<std::string, std::vector<double>> launchMsOf_;  // verified labels -> each launch's time
  TuneProgress progress_;
  SearchTotals totals_;
  double searchStart_ = 0;             // the time limit counts from here (reset after the default)
  std::deque<CompiledCandidate> held_;  // compiled before the default schedule
  bool defaultSeen_ = false;
  bool defaultMeasured_ = false;       // under fetchMutex_
  // Refinement's state, under fetchMutex_: jobs given to the compiler (a job's number is its place
  // among them: the log's and the worker's candidate ids), candidates handed to a device and those
  // of them not yet recorded, records of handed-out candidates so far (settle()), and rounds queued.
  size_t queued_ = 0, handedOut_ = 0, inFlight_ = 0, lookahead_ = 0;
  int64_t settled_ = 0;
  // By job number: handed-out labels' jobs, which jobs are settled, and the first one not settled.
  // A round ranks on the outcomes of the jobs before all but the last lookahead_ queued: the same
  // outcomes whatever order the compiles finish and the devices measure in (refineIfDue).
  std::map<std::string, size_t> jobOf_;
  std::vector<bool> jobSettled_;
  size_t firstUnsettled_ = 0;
  int64_t rankedEmptyAt_ = -1;         // settled_ when a due round found nothing to rank on
  int rounds_ = 0, refinementRounds_ = 0;
  bool ranking_ = false;               // a device's thread ranks a round (fetchMutex_ released)
  bool refinementOver_ = false;        // no round will be queued any more
  // With fetchMutex_: a candidate settled, a round was queued or ranked empty, refinement ended,
  // or a device failed.
  std::condition_variable settledCv_;
  std::mutex fetchMutex_, resultMutex_;
  std::atomic<bool> aborted_{false};   // a device could not go on: the others stop too
};

// The next candidate to measure: the default schedule (job 0) first, then completion order.
std::optional<CompiledCandidate> SearchLoop::nextCandidate() {
  if (defaultSeen_ && !held_.empty()) {
    CompiledCandidate c = std::move(held_.front());
    held_.pop_front();
    return c;
  }
  while (std::optional<CompiledCandidate> c = compiler_.next()) {
    if (defaultSeen_ || c->job == 0) {
      defaultSeen_ = true;
      return c;
    }
    held_.push_back(std::move(*c));
  }
  if (!held_.empty()) {  // cannot happen (job 0 always finishes), but never lose candidates
    defaultSeen_ = true;
    CompiledCandidate c = std::move(held_.front());
    held_.pop_front();
    return c;
  }
  return std::nullopt;
}

// The next candidate to measure and whether it is the default schedule, queueing a refinement
// round first where one is due; nullopt once every candidate is handed out and no round will
// follow. A round that is due but has nothing to rank on yet (no verified outcome) waits for the
// outcomes in flight: a device holding candidates (`holding`) is told nullopt, takes its
// outcomes and asks again; one holding none waits here for another device's. Once the time limit
// is reached, no new compiles start and what is still compiling is drained, counted as not
// measured. `ranking`: seconds this call spent ranking a round.
std::optional<std::pair<CompiledCandidate, bool>> SearchLoop::fetch(size_t holding, double& ranking) {
  std::unique_lock<std::mutex> lock(fetchMutex_);
  for (;;) {
    refineIfDue(lock, ranking);
    if (std::optional<CompiledCandidate> c = nextCandidate()) {
      ++handedOut_;
      jobOf_[c->label] = c->job;
      bool isDefault = c->job == 0;
      if (!isDefault && overTime()) {
        compiler_.stop();
        endRefinement();
        std::lock_guard<std::mutex> results(resultMutex_);
        if (!result_.timeLimitReached)
          log(fmt::format("time limit of {:g} s reached: no new candidates are started", in_.timeLimitSeconds));
        result_.timeLimitReached = true;
        ++result_.notMeasured;
        continue;
      }
      ++inFlight_;
      return std::make_pair(std::move(*c), isDefault);
    }
    if (refinementOver_ || aborted_ || holding > 0) return std::nullopt;
    const int64_t seen = settled_;
    const size_t queued = queued_;
    const bool ranking = ranking_;
    settledCv_.wait(lock, [&] {
      return settled_ != seen || queued_ != queued || ranking_ != ranking || refinementOver_ || aborted_;
    });
  }
}

// A candidate fetch() handed out (job `job`) is recorded (measured, or found unmeasurable): a
// round waiting for outcomes may be ranked now.
void SearchLoop::settle(size_t job) {
  {
    std::lock_guard<std::mutex> lock(fetchMutex_);
    --inFlight_;
    ++settled_;
    if (jobSettled_.size() <= job) jobSettled_.resize(job + 1, false);
    jobSettled_[job] = true;
    while (firstUnsettled_ < jobSettled_.size() && jobSettled_[firstUnsettled_]) ++firstUnsettled_;
  }
  settledCv_.notify_all();
}

// Counts a finished candidate, records it and reports progress (under resultMutex_).
void SearchLoop::finish(CandidateRecord rec, bool isDefault, std::vector<std::string> launches) {
  double at = in_.now();
  if (result_.candidates.empty()) mark("first result");
  rec.searchId = result_.searchId;
  if (in_.record) {
    in_.record(rec);
    totals_.recordSeconds += in_.now() - at;
  }
  switch (rec.status) {
    case CandidateStatus::Verified: ++result_.verified; break;
    case CandidateStatus::WrongResult: ++result_.wrong; break;
    case CandidateStatus::CompileFailed: ++result_.compileFailed; break;
    case CandidateStatus::LaunchFailed: ++result_.launchFailed; break;
    case CandidateStatus::Faulted: ++result_.faulted; break;
    case CandidateStatus::TimedOut: ++result_.timedOut; break;
    case CandidateStatus::Skipped: ++result_.skipped; break;
  }
  if (rec.status == CandidateStatus::Verified && (!result_.best || rec.medianMs < result_.best->medianMs)) {
    result_.best = rec;
    result_.bestOverTime.emplace_back(at, rec.medianMs);
    result_.bestLaunches = std::move(launches);
  }
  if (isDefault) result_.defaultSchedule = rec;
  result_.candidates.push_back(std::move(rec));
  result_.completedSeconds.push_back(at);

  progress_.compiled = compiler_.finished();
  progress_.compileFailed = result_.compileFailed + result_.skipped;
  progress_.measured = result_.verified + result_.wrong + result_.launchFailed + result_.faulted + result_.timedOut;
  progress_.verified = result_.verified;
  progress_.failed = progress_.measured - result_.verified;
  progress_.elapsedSeconds = at;
  progress_.best = result_.best;
  if (in_.progress) {
    const double before = in_.now();
    in_.progress(progress_);
    totals_.progressSeconds += in_.now() - before;
  }
}

// A candidate handed to a device, until its outcome is back.
struct SearchLoop::Sent {
  CandidateRecord rec;
  std::string label;
  size_t job = 0;
  std::vector<LaunchSpec> launches;
  bool isDefault = false;
  double at = 0;  // when it was handed over
};

// The candidate's record so far and its message for the device, with the race thresholds of the
// best so far; nullopt when it cannot be measured (then recorded, with why).
std::optional<std::pair<SearchLoop::Sent, worker::CandidateMessage>> SearchLoop::begin(CompiledCandidate c,
                                                                                        bool isDefault) {
  Sent sent;
  CandidateRecord& rec = sent.rec;
  rec.schedule = c.label;
  rec.compileMs = c.emitMs + c.compileMs;
  rec.registers = c.registers;
  rec.spillBytes = c.spillBytes;
  rec.sharedBytes = c.sharedBytes;
  std::lock_guard<std::mutex> lock(resultMutex_);
  totals_.emitSeconds += c.emitMs * 1e-3;
  if (!c.measurable()) {
    rec.status = c.status;
    rec.reason = c.reason;
    if (c.emitterError) ++result_.emitterErrors;
    log(fmt::format("candidate {} {}: {}", c.job, statusName(rec.status), rec.reason));
    finish(std::move(rec), isDefault);
    return std::nullopt;
  }
  worker::CandidateMessage msg{int64_t(c.job), c.module.launches, std::move(c.cubin)};
  RaceLimits race = raceLimits(raceBest(result_.best, in_.earlierBest));
  msg.raceMs = race.raceMs;
  msg.raceTimedMs = race.raceTimedMs;
  msg.raceCloseMs = race.raceCloseMs;
  sent.label = c.label;
  sent.job = c.job;
  sent.launches = std::move(c.module.launches);
  sent.isDefault = isDefault;
  sent.at = in_.now();
  return std::make_pair(std::move(sent), std::move(msg));
}

// Records the outcome of a candidate `device` was waited on for `waited` seconds.
void SearchLoop::end(size_t device, Sent sent, const MeasureOutcome& m, double waited) {
  CandidateRecord& rec = sent.rec;
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
      rec.gflops = double(result_.floatOps) / s * 1e-9;
      rec.gbytes = double(result_.minimalBytes) / s * 1e-9;
    }
  }
  {
    std::lock_guard<std::mutex> lock(resultMutex_);
    totals_.measureSeconds[device] += waited;
    if (m.status == CandidateStatus::Verified && m.result.repeats == 1 && in_.repeats > 1) ++result_.timedOnce;
    std::vector<std::string> launches;
    if (m.status == CandidateStatus::Verified && !m.result.launchMs.empty()) {
      launchMsOf_[sent.label] = m.result.launchMs;
      for (size_t n = 0; n < m.result.launchMs.size() && n < sent.launches.size(); ++n)
        launches.push_back(fmt::format("{} {:.4f}", sent.launches[n].function, m.result.launchMs[n]));
    }
    finish(std::move(rec), sent.isDefault, std::move(launches));
  }
  if (!sent.isDefault) return;
  // The baseline is measured: the time limit counts from here.
  std::lock_guard<std::mutex> lock(fetchMutex_);
  mark("default schedule measured");
  if (in_.timeLimitSeconds > 0)
    log(fmt::format("default schedule measured in {:.1f} s; the time limit counts from here", in_.now() - searchStart_));
  searchStart_ = in_.now();
  defaultMeasured_ = true;
}

// The next candidate for `device`, which holds `holding`, waiting for one (the wait counted, but
// not the time its thread spent ranking a round: counted as ranking); nullopt as fetch() says.
std::optional<std::pair<CompiledCandidate, bool>> SearchLoop::fetchFor(size_t device, size_t holding) {
  const double before = in_.now();
  double ranking = 0;
  std::optional<std::pair<CompiledCandidate, bool>> c = fetch(holding, ranking);
  std::lock_guard<std::mutex> lock(resultMutex_);
  totals_.waitSeconds[device] += std::max(0.0, in_.now() - before - ranking);
  return c;
}

// Measures candidates on `device` until every one is handed out: one at a time, or, on a device
// that holds two (SearchMeasurer::depth), the next one sent while the last one is measured, so
// that the device does not wait for this process between them (its race thresholds are then
// those of the best before the last one's outcome).
void SearchLoop::measureOn(size_t device) {
  const size_t depth = std::max<size_t>(1, measurer_.depth(device));
  std::deque<Sent> held;
  for (;;) {
    while (held.size() < depth && !aborted_) {
      std::optional<std::pair<CompiledCandidate, bool>> c = fetchFor(device, held.size());
      if (!c) break;
      const size_t job = c->first.job;
      std::optional<std::pair<Sent, worker::CandidateMessage>> b = begin(std::move(c->first), c->second);
      if (!b) {
        settle(job);
        continue;
      }
      if (depth == 1) {
        MeasureOutcome m = measurer_.measure(device, b->first.label, std::move(b->second));
        end(device, std::move(b->first), m, in_.now() - b->first.at);
        settle(job);
        continue;
      }
      measurer_.send(device, b->first.label, std::move(b->second));
      held.push_back(std::move(b->first));
      if (held.size() > 1) break;  // the oldest's outcome first, then the next one
    }
    if (held.empty() || (depth > 1 && aborted_)) return;
    const double before = in_.now();
    MeasureOutcome m = measurer_.receive(device);
    Sent sent = std::move(held.front());
    held.pop_front();
    const size_t job = sent.job;
    end(device, std::move(sent), m, in_.now() - before);
    settle(job);
  }
}

// Measures every candidate the compiler hands out, the refinement rounds' too, on every device.
void SearchLoop::measureAll() {
  // The default schedule comes first (fetch hands it out before any other): the baseline, measured
  // whatever it costs, and the time limit counts the search after it (end()). With several
  // devices the others go on measuring meanwhile: a slow default (a thread per point) would hold
  // every other device idle at the start of each search.
  size_t devices = measurer_.devices();
  std::vector<std::exception_ptr> errors(devices);
  auto measureDevice = [&](size_t d) {
    try {
      measureOn(d);
    } catch (...) {
      errors[d] = std::current_exception();
      aborted_ = true;
      { std::lock_guard<std::mutex> lock(fetchMutex_); }  // a device waiting in fetch() sees it
      settledCv_.notify_all();
    }
  };
  if (devices == 1) {
    measureDevice(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t d = 0; d < devices; ++d) threads.emplace_back(measureDevice, d);
    for (std::thread& t : threads) t.join();
  }
  for (std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

// The combination of `measured` (verified schedules with each launch's time: recombineNests), as
// a job, when it is not one queued already.
std::optional<CompileJob> SearchLoop::recombination(const std::vector<std::pair<Schedule, std::vector<double>>>& measured) {
  std::optional<Schedule> s = recombineNests(measured);
  if (!s) return std::nullopt;
  std::string text = printSchedule(*s);
  if (scheduleOf_.count(text)) return std::nullopt;
  return CompileJob{text, *s, {}, nullptr};  // planned (or refused) by the compiler
}

// Refinement: rounds of the unqueued candidates nearest (scheduleDistance) to the fastest
// verified ones, as many per round as compile in parallel, until the budget, the reserve or the
// time is spent; each round appended to the compiler's batch once it is due (lookahead_, the
// constructor says why), ranked on the outcomes recorded then. The ranking (the reserve against
// the best three, tens of thousands of schedules at SGEMM n=4096) runs with `lock` (fetchMutex_)
// released, so that the other devices go on fetching and recording meanwhile (ranking_ keeps the
// reserve and the queued schedules to this thread until it is done). A due round with nothing to
// rank on waits for the outcomes in flight; with none left to come, refinement is over (as when
// every outcome is in and none is verified).
void SearchLoop::refineIfDue(std::unique_lock<std::mutex>& lock, double& ranking) {
  if (refinementOver_ || ranking_) return;
  if (in_.refineBudget <= 0 || in_.reserve.empty() || aborted_ || overTime()) {
    endRefinement();
    return;
  }
  if (queued_ - handedOut_ > lookahead_ || rankedEmptyAt_ == settled_) return;
  // The round ranks on the jobs before `basis`, once all of them are settled: the same outcomes
  // whatever order compiles finish in (several ranks' compiles share one host's cores) and
  // whoever measures them; the last lookahead_ jobs are what the devices measure meanwhile. Where
  // none of those is verified, on every outcome in so far instead.
  const size_t basis = queued_ - std::min(queued_, lookahead_);
  if (firstUnsettled_ < basis) return;
  const int64_t settled = settled_;
  std::vector<CandidateRecord> verified;
  std::vector<std::pair<Schedule, std::vector<double>>> launches;
  {
    std::lock_guard<std::mutex> results(resultMutex_);
    std::vector<std::pair<size_t, const CandidateRecord*>> inJobOrder;
    for (const CandidateRecord& r : result_.candidates)
      if (auto job = jobOf_.find(r.schedule); r.status == CandidateStatus::Verified && job != jobOf_.end())
        inJobOrder.emplace_back(job->second, &r);
    std::sort(inJobOrder.begin(), inJobOrder.end());
    const bool anyBefore = !inJobOrder.empty() && inJobOrder.front().first < basis;
    for (const auto& [job, r] : inJobOrder)
      if (job < basis || !anyBefore) verified.push_back(*r);
    for (const auto& [label, ms] : launchMsOf_)
      if (auto it = scheduleOf_.find(label); it != scheduleOf_.end() && (!anyBefore || jobOf_.at(label) < basis))
        launches.emplace_back(it->second, ms);
  }
  size_t take = std::min<size_t>(size_t(in_.refineBudget), size_t(std::max(1, result_.compileThreads)));
  ranking_ = true;
  lock.unlock();
  const double before = in_.now();
  // Each nest's fastest measured schedule together, when that is new (recombineNests).
  std::optional<CompileJob> recombined = recombination(launches);
  if (recombined) --take;
  RefinementRound r = rankRefinement(verified, scheduleOf_, in_.reserve, take);
  const double ranked = in_.now() - before;
  ranking += ranked;
  lock.lock();
  ranking_ = false;
  {
    std::lock_guard<std::mutex> results(resultMutex_);
    totals_.rankSeconds += ranked;
  }
  if (refinementOver_ || aborted_) {  // the time limit was reached meanwhile (the compiler stopped)
    settledCv_.notify_all();
    return;
  }
  if (r.picked.empty() && !recombined) {  // nothing verified yet
    if (settled_ == settled && inFlight_ == 0 && queued_ == handedOut_) return endRefinement();
    rankedEmptyAt_ = settled;
    settledCv_.notify_all();  // a device waiting for this ranking waits for an outcome now
    return;
  }
  std::vector<CompileJob> next = takeRound(r, std::move(recombined));
  queued_ += next.size();
  compiler_.append(std::move(next));
  mark(fmt::format("refinement batch {} queued", ++rounds_));
  settledCv_.notify_all();
}

// No round will be queued any more. Under fetchMutex_.
void SearchLoop::endRefinement() {
  refinementOver_ = true;
  settledCv_.notify_all();
}

// A ranked round's jobs, taken from the reserve and the budget, and counted. Under fetchMutex_.
std::vector<CompileJob> SearchLoop::takeRound(const RefinementRound& r, std::optional<CompileJob> recombined) {
  const size_t take = r.picked.size() + (recombined ? 1 : 0);
  std::vector<CompileJob> next;
  if (recombined) {
    scheduleOf_[recombined->label] = recombined->schedule;
    log(fmt::format("refinement: each nest's fastest measured schedule together: {}", recombined->label));
    next.push_back(std::move(*recombined));
  }
  std::vector<bool> used(in_.reserve.size(), false);
  for (const auto& [distance, at] : r.picked) {
    const Candidate& c = in_.reserve[at];
    next.push_back({c.text, c.schedule, {}, std::make_shared<const SchedulePlan>(candidatePlan(c))});
    scheduleOf_[c.text] = c.schedule;
    used[at] = true;
  }
  std::vector<Candidate> rest;
  for (size_t i = 0; i < in_.reserve.size(); ++i)
    if (!used[i]) rest.push_back(std::move(in_.reserve[i]));
  in_.reserve = std::move(rest);
  in_.refineBudget -= int64_t(take);
  std::lock_guard<std::mutex> results(resultMutex_);
  result_.generated += int64_t(take);
  result_.refined += int64_t(take);
  progress_.generated = result_.generated;
  if (!r.picked.empty())
    log(fmt::format("refinement round {}: {} candidates nearest to the best {} (distance {:.2g} to {:.2g}); best so "
                    "far {:.4f} ms", ++refinementRounds_, r.picked.size(), r.top.size(), r.picked.front().first,
                    r.picked.back().first, r.top.front()->medianMs));
  return next;
}

}  // namespace

SearchTotals runSearch(SearchInputs inputs, SearchCompiler& compiler, SearchMeasurer& measurer, TuneResult& result) {
  return SearchLoop(std::move(inputs), compiler, measurer, result).run();
}

}  // namespace rtcg
