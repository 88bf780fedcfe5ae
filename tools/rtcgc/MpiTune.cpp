// rtcgc tune as one rank of an MPI job (MpiTune.h): the ranks' device check, the manifest's keys
// dealt out by rank 0, and a single search measured by every rank's GPU.
#include "MpiTune.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "ExitCodes.h"
#include "MpiComm.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "support/Cores.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "tune/CompilePool.h"
#include "tune/ResultJson.h"
#include "tune/ServedWorker.h"
#include "tune/TuningKeyFor.h"
#include "tune/WorkerProcess.h"
#include "tune/WorkerProtocol.h"

using namespace rtcg;
using nlohmann::json;

namespace rtcgc::mpi {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kPoll = std::chrono::milliseconds(2);
constexpr double kStateEverySeconds = 1;
constexpr double kSummaryEverySeconds = 30;

double secondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- every rank's device ---------------------------------------------------------------------------

// This rank's device: the one of its local rank in --devices (default: every device), or the
// stand-in of $RTCG_TEST_DEVICE. `error` set when there is none.
struct Identity {
  int rank = 0, ordinal = 0;
  std::string host, error;
  std::shared_ptr<const cuda::DeviceProperties> props;

  json toJson() const {
    json j = {{"rank", rank}, {"ordinal", ordinal}, {"host", host}, {"error", error}};
    if (props)
      j["device"] = {{"name", props->name}, {"arch", props->arch()}, {"multiprocessors", props->multiprocessors}};
    return j;
  }
};

Identity identify(const TuneArgs& a, const Comm& comm) {
  Identity id;
  id.rank = comm.rank();
  id.host = comm.host();
  try {
    if (auto test = testDeviceFromEnv()) {
      id.ordinal = comm.localRank();
      id.props = test;
      return id;
    }
    if (!cuda::cudaAvailable()) throw NoDeviceError(cuda::unavailableReason());
    std::vector<int> ordinals = parseDeviceList(a.devices.empty() ? "all" : a.devices).value_or(std::vector<int>{});
    if (ordinals.empty())
      for (int d = 0; d < cuda::Device::count(); ++d) ordinals.push_back(d);
    id.ordinal = ordinals[size_t(comm.localRank()) % ordinals.size()];
    id.props = std::make_shared<cuda::DeviceProperties>(cuda::Device(id.ordinal).properties());
  } catch (const std::exception& e) {
    id.error = e.what();
  }
  return id;
}

std::string describe(const json& id) {
  std::string where = fmt::format("rank {} ({}, device {})", id["rank"].get<int>(), id["host"].get<std::string>(),
                                  id["ordinal"].get<int>());
  if (!id.contains("device")) return where;
  const json& d = id["device"];
  return fmt::format("{}: {} ({}, {} multiprocessors)", where, d["name"].get<std::string>(),
                     d["arch"].get<std::string>(), d["multiprocessors"].get<int>());
}

// Rank 0 gathers every rank's device and checks them: the same model everywhere (a search compares
// medians measured on all of them), each rank its own GPU on a node. "" when they pass, else the
// error, which every rank gets. `ids`: every rank's device, at rank 0.
std::string checkDevices(const Identity& mine, Comm& comm, bool stagedDevice, std::vector<json>& ids) {
  std::vector<std::string> all = comm.gather(mine.toJson().dump());
  std::string verdict;
  if (comm.rank() == 0) {
    for (const std::string& s : all) ids.push_back(json::parse(s));
    std::map<std::pair<std::string, int>, int> owner;  // (host, ordinal) -> rank
    for (const json& id : ids) {
      if (!id["error"].get<std::string>().empty()) {
        verdict = fmt::format("{} has no device: {}", describe(id), id["error"].get<std::string>());
        break;
      }
      const json &d = id["device"], &d0 = ids[0]["device"];
      if (d != d0) {
        verdict = fmt::format("{} differs from {}: a search compares medians measured on every rank, so every rank "
                              "must see the same GPU model (name, architecture and multiprocessors)",
                              describe(id), describe(ids[0]));
        break;
      }
      auto [it, fresh] = owner.emplace(std::make_pair(id["host"].get<std::string>(), id["ordinal"].get<int>()),
                                       id["rank"].get<int>());
      if (!fresh && !stagedDevice) {
        verdict = fmt::format("ranks {} and {} on {} would both measure on device {}: start one rank per GPU (or give "
                              "--devices one ordinal per local rank)",
                              it->second, id["rank"].get<int>(), id["host"].get<std::string>(),
                              id["ordinal"].get<int>());
        break;
      }
    }
  }
  return comm.broadcast(verdict);
}

// ---- state reports -----------------------------------------------------------------------------------

// A rank's state, sent to rank 0 once a second by a thread of its own (rank 0 keeps its own in
// `ranks` directly), so a rank busy in a long reference or candidate is still heard from.
class StateReporter {
 public:
  StateReporter(Comm& comm, Ranks* ranks) : comm_(comm), ranks_(ranks) {
    if (comm_.rank() != 0) thread_ = std::thread([this] { run(); });
  }
  ~StateReporter() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  void set(json state) {
    std::lock_guard<std::mutex> lock(mutex_);
    state_ = std::move(state);
    if (ranks_) ranks_->heard(comm_.rank(), state_);
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stop_) {
      std::string bytes = state_.dump();
      lock.unlock();
      comm_.send(0, kState, bytes);
      lock.lock();
      wake_.wait_for(lock, std::chrono::duration<double>(kStateEverySeconds), [this] { return stop_; });
    }
  }

  Comm& comm_;
  Ranks* ranks_;
  std::mutex mutex_;
  std::condition_variable wake_;
  json state_ = {{"what", "idle"}};
  bool stop_ = false;
  std::thread thread_;
};

// A search's progress into the state.
std::function<void(const TuneProgress&)> reportProgress(StateReporter& reporter, const std::string& what) {
  return [&reporter, what](const TuneProgress& p) {
    reporter.set({{"what", what},
                  {"generated", p.generated},
                  {"measured", p.measured},
                  {"bestMs", p.best ? p.best->medianMs : 0.0}});
  };
}

// The options every rank's searches share: its device; the stand-in device's (tests) as it is.
void useDevice(TuneOptions& o, const Identity& id) {
  o.deviceOrdinals = {id.ordinal};
  if (testDeviceFromEnv()) o.deviceProperties = id.props;
}

// ---- --manifest ---------------------------------------------------------------------------------------

// Rank 0's dealing: keys to ranks as they ask, its own thread tuning too; results recorded here.
class Dealer {
 public:
  Dealer(const TuneArgs& a, Comm& comm, Ranks& ranks, const Identity& mine)
      : a_(a), comm_(comm), ranks_(ranks), mine_(mine), reporter_(comm, &ranks) {}

  void run(const std::vector<ManifestKey>& keys, const KeyDone& done) {
    openDatabase();
    for (size_t k : tuningOrder(a_, keys)) {
      if (std::optional<CandidateRecord> earlier = doneEarlier(keys[k])) {
        KeyOutcome o;
        o.earlier = fmt::format("by an earlier run (--resume): {:.4f} ms: {}", earlier->medianMs, earlier->schedule);
        done(k, std::move(o));
      } else {
        queue_.push_back(k);
      }
    }
    fmt::print(stderr, "rtcgc tune: MPI: {} keys for {} ranks; rank 0 deals them out as ranks finish\n",
               queue_.size(), comm_.size());
    std::thread local([&] { tuneLocally(keys); });
    std::vector<bool> finished(size_t(comm_.size()), false);
    finished[0] = true;
    Clock::time_point lastSummary = Clock::now();
    for (;;) {
      bool busy = drainLocal(done) | serveRequests(keys, done, finished) | drainStates();
      for (int r : ranks_.silent(a_.rankTimeout)) loseRank(r, keys, done, finished);
      if (secondsSince(lastSummary) > kSummaryEverySeconds) {
        fmt::print(stderr, "rtcgc tune: ranks: {}\n", ranks_.summary());
        lastSummary = Clock::now();
      }
      if (allFinished(finished) && localDone_) break;
      if (!busy) std::this_thread::sleep_for(kPoll);
    }
    local.join();
    drainLocal(done);
    for (int r : waitingForEnd_) comm_.send(r, kEnd, json{{"lost", ranks_.anyLost()}}.dump());
  }

 private:
  void openDatabase() {
    if (a_.db == "-") return;
    db_ = std::make_unique<TuningDb>(a_.db.empty() ? TuningDb::defaultPath() : a_.db);
  }

  // With --resume: the key's best when the database has a search of it that ran to its end.
  std::optional<CandidateRecord> doneEarlier(const ManifestKey& key) {
    if (!a_.resume || !db_) return std::nullopt;
    TuningKey k = tuningKeyFor(key.bound, *mine_.props, *parsePrecision(a_.precision));
    if (db_->finishedSearches(k) == 0) return std::nullopt;
    return db_->best(k);
  }

  std::optional<size_t> take(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty() || ranks_.lost(rank)) return std::nullopt;
    size_t k = queue_.front();
    queue_.pop_front();
    inFlight_[rank] = k;
    return k;
  }

  // Rank 0's own share, on this thread: it writes its searches into the database itself.
  void tuneLocally(const std::vector<ManifestKey>& keys) {
    while (std::optional<size_t> k = take(0)) {
      const ManifestKey& key = keys[*k];
      fmt::print(stderr, "rtcgc tune: rank 0 tunes {}\n", key.label);
      KeyOutcome o = tuneKey(a_, key, fmt::format("rtcgc tune: [rank 0 {}] ", key.bound.name), [&](TuneOptions& opt) {
        useDevice(opt, mine_);
        opt.progress = reportProgress(reporter_, key.bound.name);
      });
      reporter_.set({{"what", "idle"}});
      std::lock_guard<std::mutex> lock(mutex_);
      inFlight_.erase(0);
      inbox_.emplace_back(*k, std::move(o));
    }
    localDone_ = true;
  }

  bool drainLocal(const KeyDone& done) {
    std::deque<std::pair<size_t, KeyOutcome>> ready;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      ready.swap(inbox_);
    }
    for (auto& [k, o] : ready) finish(k, std::move(o), done);
    return !ready.empty();
  }

  // A key's outcome, from any rank: recorded (other ranks' searches), reported.
  void finish(size_t k, KeyOutcome o, const KeyDone& done) {
    if (o.result && !o.recorded && db_) {
      try {
        o.result->searchId = recordSearch(*db_, *o.result);
      } catch (const Error& e) {
        o.error = fmt::format("its search ran on rank {} but could not be recorded: {}", o.rank, e.what());
        o.code = 1;
        o.result.reset();
      }
    }
    done(k, std::move(o));
    fmt::print(stderr, "rtcgc tune: ranks: {}\n", ranks_.summary());
  }

  // A rank's request for a key, with the outcome of its last one: the rank gets its next key
  // first, then rank 0 records the outcome (the database write is not the rank's wait).
  bool serveRequests(const std::vector<ManifestKey>& keys, const KeyDone& done, std::vector<bool>& finished) {
    std::optional<Received> m = comm_.tryReceive(MPI_ANY_SOURCE, kRequest);
    if (!m) return false;
    int r = m->source;
    ranks_.heard(r);
    json request = json::parse(m->bytes);
    std::optional<std::pair<size_t, KeyOutcome>> outcome;
    if (request.contains("key") && !ranks_.lost(r)) {
      KeyOutcome o;
      o.rank = r;
      o.code = request["code"].get<int>();
      o.error = request["error"].get<std::string>();
      o.startedAt = request.value("startedAt", 0.0);
      o.endedAt = request.value("endedAt", 0.0);
      if (request.contains("result")) {
        try {
          o.result = tuneResultFromJson(request["result"]);
        } catch (const Error& e) {
          o.code = 70, o.error = fmt::format("rank {} sent a result rank 0 cannot read: {}", r, e.what());
        }
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        inFlight_.erase(r);
      }
      outcome.emplace(request["key"].get<size_t>(), std::move(o));
    }
    std::optional<size_t> k = take(r);
    comm_.send(r, kJob, json{{"key", k ? int64_t(*k) : int64_t(-1)}}.dump());
    if (k) {
      fmt::print(stderr, "rtcgc tune: rank {} tunes {}\n", r, keys[*k].label);
    } else {
      finished[size_t(r)] = true;
      waitingForEnd_.push_back(r);  // alive now (a rank thought lost, too): it waits for kEnd
    }
    if (outcome) finish(outcome->first, std::move(outcome->second), done);
    return true;
  }

  bool drainStates() {
    bool any = false;
    while (std::optional<Received> m = comm_.tryReceive(MPI_ANY_SOURCE, kState)) {
      ranks_.heard(m->source, json::parse(m->bytes));
      any = true;
    }
    return any;
  }

  void loseRank(int r, const std::vector<ManifestKey>& keys, const KeyDone& done, std::vector<bool>& finished) {
    ranks_.lose(r);
    finished[size_t(r)] = true;
    std::optional<size_t> k;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (auto it = inFlight_.find(r); it != inFlight_.end()) k = it->second, inFlight_.erase(it);
    }
    fmt::print(stderr, "rtcgc tune: rank {} sent nothing for {:g} s: it is lost{}\n", r, a_.rankTimeout,
               k ? fmt::format(", and with it {}", keys[*k].label) : "");
    if (!k) return;
    KeyOutcome o;
    o.lost = true;
    o.rank = r;
    o.code = 1;
    o.error = fmt::format("lost: rank {} stopped answering while tuning it (the process or its node died); nothing of "
                          "its search was recorded: run again with --resume to tune it",
                          r);
    done(*k, std::move(o));
  }

  bool allFinished(const std::vector<bool>& finished) const {
    for (bool f : finished)
      if (!f) return false;
    return true;
  }

  const TuneArgs& a_;
  Comm& comm_;
  Ranks& ranks_;
  const Identity& mine_;
  StateReporter reporter_;
  std::unique_ptr<TuningDb> db_;
  std::mutex mutex_;  // guards queue_, inFlight_, inbox_
  std::deque<size_t> queue_;
  std::map<int, size_t> inFlight_;
  std::deque<std::pair<size_t, KeyOutcome>> inbox_;
  std::atomic<bool> localDone_{false};
  std::vector<int> waitingForEnd_;  // ranks told there is no key left
};

// Another rank's side: ask for a key, tune it (reading the database, writing nothing), send the
// result with the next request; until rank 0 has none left.
int followManifest(const TuneArgs& a, Comm& comm, const Identity& mine, const std::vector<ManifestKey>& keys) {
  StateReporter reporter(comm, nullptr);
  json request = json::object();
  for (;;) {
    comm.send(0, kRequest, request.dump());
    std::optional<Received> job;
    while (!(job = comm.tryReceive(0, kJob))) std::this_thread::sleep_for(kPoll);
    int64_t k = json::parse(job->bytes)["key"].get<int64_t>();
    if (k < 0 || size_t(k) >= keys.size()) {
      // None left: rank 0 says at the very end whether a rank was lost (the last may be lost after
      // this rank's last key).
      std::optional<Received> end;
      while (!(end = comm.tryReceive(0, kEnd))) std::this_thread::sleep_for(kPoll);
      return json::parse(end->bytes)["lost"].get<bool>() ? -1 : 0;
    }
    const ManifestKey& key = keys[size_t(k)];
    reporter.set({{"what", key.bound.name}});
    KeyOutcome o = tuneKey(a, key, fmt::format("rtcgc tune: [rank {} {}] ", comm.rank(), key.bound.name),
                           [&](TuneOptions& opt) {
                             useDevice(opt, mine);
                             opt.writeDb = false;  // rank 0 records it
                             opt.progress = reportProgress(reporter, key.bound.name);
                           });
    reporter.set({{"what", "idle"}});
    request = {{"key", k}, {"code", o.code}, {"error", o.error}, {"startedAt", o.startedAt}, {"endedAt", o.endedAt}};
    if (o.result) request["result"] = tuneResultToJson(*o.result);
  }
}

// Every rank reads the manifests rank 0 read (the same text on every node, shared file system or
// not); nullopt (after rank 0 printed why) when one cannot be used.
std::optional<std::vector<manifest::Entry>> shareManifests(const TuneArgs& a, Comm& comm) {
  json texts = json::array();
  std::string error;
  if (comm.rank() == 0) {
    try {
      for (const std::string& path : a.manifests) {
        std::string text;
        try {
          text = readInputFile(path, size_t(256) << 20);
        } catch (const InputFileError& e) {
          throw manifest::ManifestError(fmt::format("{}: error: cannot read the manifest: {}", path, e.reason()));
        }
        manifest::parseManifest(path, text);  // checked before anything runs
        texts.push_back({path, text});
      }
    } catch (const manifest::ManifestError& e) {
      error = e.what();
      fmt::print(stderr, "{}\n", error);
    }
  }
  json shared = json::parse(comm.broadcast(json{{"error", error}, {"texts", texts}}.dump()));
  if (!shared["error"].get<std::string>().empty()) return std::nullopt;
  std::vector<manifest::Entry> entries;
  for (const json& t : shared["texts"]) {
    std::vector<manifest::Entry> more = manifest::parseManifest(t[0].get<std::string>(), t[1].get<std::string>());
    entries.insert(entries.end(), more.begin(), more.end());
  }
  return entries;
}

// ---- a single search ----------------------------------------------------------------------------------

// Whether `rank` is lost: marked so, or silent past `timeout` (then marked).
bool isLost(Ranks& ranks, int rank, double timeout) {
  std::vector<int> silent = ranks.silent(timeout);
  if (!ranks.lost(rank) && std::find(silent.begin(), silent.end(), rank) == silent.end()) return false;
  ranks.lose(rank);
  return true;
}

Error lostError(const std::string& name, double timeout) {
  return Error(fmt::format("{} sent nothing for {:g} s: it is lost (the process or its node died); the search stops, "
                           "every candidate measured so far is in the database (--resume continues it)",
                           name, timeout));
}

// Sends rank 0's message to `rank` of a single search; throws lostError when the rank is lost
// before it takes it (a large message waits for the receiver).
void sendOrLose(Comm& comm, Ranks& ranks, int rank, int tag, const std::string& bytes, const std::string& name,
                double timeout, const std::atomic<bool>* abandon = nullptr) {
  if (!comm.send(rank, tag, bytes, [&] { return (abandon && *abandon) || isLost(ranks, rank, timeout); }) &&
      !(abandon && *abandon))
    throw lostError(name, timeout);
}

// How many compile slots a rank has in rank 0's pool (rank 0's own workers, the relay's elsewhere):
// its --compile-threads, or what one rank alone would use (the pool's rule for one measuring
// device: the cores, at most 16), of its share of the node's cores when ranks share a node: the
// cores it is bound to (mpirun --bind-to, srun), else the node's over the ranks on it.
int compileSlots(const TuneArgs& a, const Comm& comm) {
  const int cores = boundToSomeCores() ? usableCores() : usableCores() / std::max(1, comm.localSize());
  int n = a.compileThreads > 0 ? a.compileThreads : std::min(16, std::max(1, cores));
  return std::min(n, kMaxCompileSlots);
}

constexpr auto kCompilePoll = std::chrono::milliseconds(5);  // compiles take 0.1 s and more

// Rank 0's view of compile slot `slot` of another rank: the frame goes out with a sequence number,
// a reply with another number (to a request given up on) is dropped. The rank enforces the compile
// timeout; rank 0 waits --rank-timeout beyond it before it gives up on the reply.
class RankCompileSlot : public RemoteCompileSlot {
 public:
  RankCompileSlot(Comm& comm, Ranks& ranks, int rank, int slot, std::string name, double rankTimeout)
      : comm_(comm), ranks_(ranks), rank_(rank), slot_(slot), name_(std::move(name)), rankTimeout_(rankTimeout) {}

  std::optional<std::string> exchange(const std::string& frame, double timeoutSeconds,
                                      const std::atomic<bool>& abandon) override {
    std::string seq = std::to_string(++sent_);
    sendOrLose(comm_, ranks_, rank_, kCompileFrames + 2 * slot_, pack({seq, fmt::format("{}", timeoutSeconds), frame}),
               name_, rankTimeout_, &abandon);
    Clock::time_point t0 = Clock::now();
    while (!abandon) {
      if (std::optional<Received> m = comm_.tryReceive(rank_, kCompileFrames + 2 * slot_ + 1)) {
        ranks_.heard(rank_);
        std::vector<std::string> parts = unpack(m->bytes);
        if (parts.size() == 2 && parts[0] == seq) return parts[1];
        continue;
      }
      if (isLost(ranks_, rank_, rankTimeout_)) throw lostError(name_, rankTimeout_);
      if (secondsSince(t0) > timeoutSeconds + rankTimeout_) return std::nullopt;
      std::this_thread::sleep_for(kCompilePoll);
    }
    return std::nullopt;
  }
  std::string host() const override { return fmt::format("rank {}", rank_); }

 private:
  Comm& comm_;
  Ranks& ranks_;
  int rank_, slot_;
  std::string name_;
  double rankTimeout_;
  uint64_t sent_ = 0;
};

// Rank 0's pool's slots on the other ranks, `offers[r]` of rank r.
std::vector<std::shared_ptr<RemoteCompileSlot>> rankCompileSlots(const TuneArgs& a, Comm& comm, Ranks& ranks,
                                                                 const std::vector<json>& ids,
                                                                 const std::vector<int>& offers) {
  std::vector<std::shared_ptr<RemoteCompileSlot>> slots;
  for (int r = 1; r < comm.size(); ++r)
    for (int s = 0; s < offers[size_t(r)]; ++s)
      slots.push_back(std::make_shared<RankCompileSlot>(comm, ranks, r, s, describe(ids[size_t(r)]), a.rankTimeout));
  return slots;
}

// Another rank's compile slots for rank 0's pool: a thread per slot relays the compile frames rank 0
// sends to a compile worker of this node (CompileSlotHost: timeouts, restarts) and sends the reply
// frames back.
// The workers start (and warm NVRTC for the rank's architecture) before rank 0 has anything to
// compile: a few as the relay does, the others once the rank's measuring worker is ready
// (measuringWorkerReady: CompileWorkerStart) or at their slot's first frame.
class CompileRelay {
 public:
  CompileRelay(Comm& comm, int slots, const std::string& workerPath, std::function<void(const std::string&)> log,
               const std::string& arch)
      : comm_(comm), host_(workerPath, slots, log, arch, /*deferWorkers=*/true), log_(std::move(log)) {
    for (int s = 0; s < slots; ++s) threads_.emplace_back([this, s] { run(s); });
  }
  void measuringWorkerReady() { host_.startDeferredWorkers(); }
  ~CompileRelay() {
    stop_ = true;
    host_.abandon();  // compiles in flight end at once; their replies are not sent
    for (std::thread& t : threads_) t.join();
  }
  int64_t compiled() const { return host_.compiled(); }

 private:
  void run(int slot) {
    while (!stop_) {
      host_.prepare(slot);  // once the start order lets it (nothing once started)
      try {
        std::optional<Received> m = comm_.tryReceive(0, kCompileFrames + 2 * slot);
        if (!m) {
          std::this_thread::sleep_for(kCompilePoll);
          continue;
        }
        std::vector<std::string> parts = unpack(m->bytes);
        std::string reply = host_.compile(slot, parts.at(2), std::stod(parts.at(1)));
        if (!stop_) comm_.send(0, kCompileFrames + 2 * slot + 1, pack({parts.at(0), reply}), [this] { return stop_.load(); });
      } catch (const std::exception& e) {  // no reply: rank 0 gives up on it after the compile timeout
        log_(fmt::format("compile slot {} dropped a request: {}", slot, e.what()));
        std::this_thread::sleep_for(kCompilePoll);
      }
    }
  }

  Comm& comm_;
  CompileSlotHost host_;
  std::function<void(const std::string&)> log_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

// Rank 0's view of another rank's measuring worker: the reference outputs go out before the first
// candidate (the worker was set up before they were computed), candidates as worker frames,
// outcomes come back; a rank silent past --rank-timeout throws (the search stops).
class RemoteRank : public RemoteMeasurer {
 public:
  RemoteRank(Comm& comm, Ranks& ranks, int rank, std::string name, double timeout, std::string referencePath)
      : comm_(comm), ranks_(ranks), rank_(rank), name_(std::move(name)), timeout_(timeout),
        referencePath_(std::move(referencePath)) {}

  MeasureOutcome measure(const worker::CandidateMessage& candidate) override {
    send(candidate);
    return receive();
  }
  // The rank measures the candidates in the order they arrive, one while the next one waits there.
  size_t depth() const override { return 2; }
  void send(const worker::CandidateMessage& candidate) override {
    referenceWritten();
    sendOrLose(comm_, ranks_, rank_, kCandidate, worker::encode(candidate), name_, timeout_);
  }
  void referenceWritten() override {
    if (referenceSent_) return;
    sendOrLose(comm_, ranks_, rank_, kReference, readInputFile(referencePath_, size_t(1) << 40), name_, timeout_);
    referenceSent_ = true;
  }
  MeasureOutcome receive() override {
    int restarts = 0;
    MeasureOutcome o = decodeOutcome(await(kOutcome), &restarts);
    restarts_ = restarts;
    return o;
  }
  std::string name() const override { return name_; }
  int restarts() const override { return restarts_; }

  // Waits for the rank's message of `tag`; throws when the rank is lost meanwhile.
  std::string await(int tag) {
    for (;;) {
      if (std::optional<Received> m = comm_.tryReceive(rank_, tag)) {
        ranks_.heard(rank_);
        return m->bytes;
      }
      if (isLost(ranks_, rank_, timeout_)) throw lostError(name_, timeout_);
      std::this_thread::sleep_for(kPoll);
    }
  }

 private:
  Comm& comm_;
  Ranks& ranks_;
  int rank_;
  std::string name_;
  double timeout_;
  std::string referencePath_;
  bool referenceSent_ = false;
  std::atomic<int> restarts_{0};
};

// Sends every other rank the setup, then waits for each to be ready: the search calls this as it
// starts, before the reference is computed (RemoteRank sends that later). Throws the first rank's
// error.
std::vector<std::unique_ptr<RemoteMeasurer>> setUpRemotes(const TuneArgs& a, Comm& comm, Ranks& ranks,
                                                          const std::vector<json>& ids,
                                                          const worker::SetupMessage& setup) {
  std::vector<std::unique_ptr<RemoteRank>> remotes;
  for (int r = 1; r < comm.size(); ++r) {
    sendOrLose(comm, ranks, r, kSetup, pack({worker::encode(setup)}), describe(ids[size_t(r)]), a.rankTimeout);
    remotes.push_back(
        std::make_unique<RemoteRank>(comm, ranks, r, describe(ids[size_t(r)]), a.rankTimeout, setup.referencePath));
  }
  std::vector<std::unique_ptr<RemoteMeasurer>> out;
  for (std::unique_ptr<RemoteRank>& remote : remotes) {
    json reply = json::parse(remote->await(kSetupReply));
    if (!reply["error"].get<std::string>().empty())
      throw Error(fmt::format("{}: its measuring worker did not start: {}", remote->name(),
                              reply["error"].get<std::string>()));
    out.push_back(std::move(remote));
  }
  return out;
}

// After kEnd: waits until every rank that is not lost says its compile relay has stopped (so none
// is left sending a reply nobody receives), dropping what else comes meanwhile.
void awaitRelays(const TuneArgs& a, Comm& comm, Ranks& ranks) {
  for (int r = 1; r < comm.size(); ++r)
    while (!ranks.lost(r)) {
      if (std::optional<Received> m = comm.tryReceive(r, MPI_ANY_TAG)) {
        ranks.heard(r);
        if (m->tag == kRelayDone) break;
      } else if (!isLost(ranks, r, a.rankTimeout)) {
        std::this_thread::sleep_for(kPoll);
      }
    }
}

// Rank 0: the search, with the other ranks' workers as remote devices and their compile slots in
// its pool; their states drained on a thread meanwhile. Every other rank gets kEnd whatever happens.
int leadSearch(const TuneArgs& a, Comm& comm, Ranks& ranks, const Identity& mine, const std::vector<json>& ids,
               const std::vector<int>& offers) {
  std::atomic<bool> stop{false};
  std::thread states([&] {
    Clock::time_point lastSummary = Clock::now();
    while (!stop) {
      bool any = false;
      while (std::optional<Received> m = comm.tryReceive(MPI_ANY_SOURCE, kState)) {
        ranks.heard(m->source, json::parse(m->bytes));
        any = true;
      }
      if (secondsSince(lastSummary) > kSummaryEverySeconds) {
        fmt::print(stderr, "rtcgc tune: ranks: {}\n", ranks.summary());
        lastSummary = Clock::now();
      }
      if (!any) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  auto endAll = [&] {
    stop = true;
    states.join();
    for (int r = 1; r < comm.size(); ++r)
      if (!ranks.lost(r)) comm.send(r, kEnd, json{{"lost", ranks.anyLost()}}.dump());
    awaitRelays(a, comm, ranks);
  };
  int code = 0;
  try {
    code = runSingle(a, [&](TuneOptions& o) {
      useDevice(o, mine);
      o.remoteDeviceCount = comm.size() - 1;
      o.remoteDevices = [&](const worker::SetupMessage& setup) { return setUpRemotes(a, comm, ranks, ids, setup); };
      o.remoteDevicesBeforeReference = true;  // RemoteRank sends the reference before its first candidate
      o.compileThreads = offers[0];
      o.remoteCompileSlots = rankCompileSlots(a, comm, ranks, ids, offers);
    });
  } catch (...) {
    endAll();
    throw;
  }
  endAll();
  return code;
}

// The compile relay's worker: --worker's (or the one findWorker finds); "" (compile on the relay's
// threads) when there is none, which it says.
std::string relayWorker(const TuneArgs& a, const std::function<void(const std::string&)>& log) {
  try {
    return findWorker(a.worker);
  } catch (const Error& e) {
    log(fmt::format("no compile worker ({}): compiling on threads of this process", e.what()));
    return "";
  }
}

// Rank 0's next message for a following rank of `tags` (the compile slots' frames are the relay's).
Received awaitLead(Comm& comm, std::initializer_list<int> tags = {kEnd, kSetup, kReference, kCandidate}) {
  for (;;) {
    for (int tag : tags)
      if (std::optional<Received> m = comm.tryReceive(0, tag)) return *m;
    std::this_thread::sleep_for(kPoll);
  }
}

// Another rank: a measuring worker on its GPU, set up as rank 0 says, measuring what rank 0 sends;
// and `slots` compile slots for rank 0's pool (a relay), stopped at the end before it says so.
int followSearch(const TuneArgs& a, Comm& comm, const Identity& mine, int slots) {
  StateReporter reporter(comm, nullptr);
  auto log = [&](const std::string& line) { fmt::print(stderr, "rtcgc tune: [rank {}] {}\n", comm.rank(), line); };
  // The measuring worker starts first, before the compile relay's workers (most of which start
  // once it is ready): it creates its CUDA context while rank 0 computes the setup (ServedWorker
  // sets it up). Where it cannot be started here, ServedWorker starts one at the setup and says
  // why it cannot.
  std::unique_ptr<WorkerProcess> started;
  try {
    started = std::make_unique<WorkerProcess>(findWorker(a.worker), mine.ordinal, WorkerTimeouts{}, log);
  } catch (const Error&) {
  }
  auto relay = std::make_unique<CompileRelay>(comm, slots, relayWorker(a, log), log, mine.props->arch());
  std::unique_ptr<ServedWorker> worker;
  bool haveReference = false;  // rank 0 sends it before the first candidate
  int64_t measured = 0;
  for (;;) {
    Received m = awaitLead(comm);
    if (m.tag == kCandidate && worker && !haveReference) {  // sent before it, though under another tag
      worker->setReference(awaitLead(comm, {kReference}).bytes);
      haveReference = true;
    }
    if (m.tag == kEnd) {
      worker.reset();
      int64_t compiled = relay->compiled();
      relay.reset();
      log(fmt::format("compiled {} candidates in {} slot{}, measured {}", compiled, slots, slots == 1 ? "" : "s", measured));
      comm.send(0, kRelayDone, "");
      return json::parse(m.bytes)["lost"].get<bool>() ? -1 : 0;
    }
    if (m.tag == kSetup) {
      std::string error;
      try {
        std::vector<std::string> parts = unpack(m.bytes);
        reporter.set({{"what", "setting up"}});
        worker = std::make_unique<ServedWorker>(parts.at(0), "", mine.ordinal, a.worker,
                                                [&](const std::string& line) {
                                                  fmt::print(stderr, "rtcgc tune: [rank {}] {}\n", comm.rank(), line);
                                                },
                                                std::move(started));
        reporter.set({{"what", "measuring " + worker->setup().kernel}, {"measured", measured}});
      } catch (const std::exception& e) {
        error = e.what();
      }
      relay->measuringWorkerReady();  // (or failed to be)
      comm.send(0, kSetupReply, json{{"error", error}}.dump());
    } else if (m.tag == kReference && worker) {
      worker->setReference(m.bytes);
      haveReference = true;
    } else if (m.tag == kCandidate && worker) {
      comm.send(0, kOutcome, worker->measure(m.bytes));
      ++measured;
      reporter.set({{"what", "measuring " + worker->setup().kernel}, {"measured", measured}});
    }
  }
}

}  // namespace
}  // namespace rtcgc::mpi

int runMpiTune(const TuneArgs& a) {
  using namespace rtcgc::mpi;
  auto comm = std::make_unique<Comm>();
  Ranks ranks(comm->size());
  int code = 0;
  bool lost = false;
  try {
    std::optional<std::vector<manifest::Entry>> entries;
    if (!a.manifests.empty()) {
      entries = shareManifests(a, *comm);
      if (!entries) return 1;  // every rank returns
    }
    Identity mine = identify(a, *comm);
    std::vector<json> ids;  // every rank's, at rank 0
    std::string verdict = checkDevices(mine, *comm, testDeviceFromEnv() != nullptr, ids);
    if (!verdict.empty()) {
      if (comm->rank() == 0) fmt::print(stderr, "rtcgc: error: MPI: {}\n", verdict);
      return 1;
    }
    if (comm->rank() == 0)
      fmt::print(stderr, "rtcgc tune: MPI: {} ranks, each on a {} ({})\n", comm->size(), mine.props->name,
                 mine.props->arch());
    if (entries) {
      if (comm->rank() == 0) {
        Dealer dealer(a, *comm, ranks, mine);
        ManifestDealer deal = [&](const std::vector<ManifestKey>& keys, const KeyDone& done) { dealer.run(keys, done); };
        code = runManifestEntries(a, *entries, &deal);
        lost = ranks.anyLost();
      } else {
        code = followManifest(a, *comm, mine, manifestKeys(manifest::plan(*entries)));
        if (code < 0) lost = true, code = 0;
      }
    } else {
      // Every rank's compile slots for rank 0's pool.
      std::vector<int> offers;
      for (const std::string& o : comm->gather(std::to_string(compileSlots(a, *comm)))) offers.push_back(std::stoi(o));
      if (comm->rank() == 0) {
        code = leadSearch(a, *comm, ranks, mine, ids, offers);
        lost = ranks.anyLost();
      } else {
        code = followSearch(a, *comm, mine, compileSlots(a, *comm));
        if (code < 0) lost = true, code = 0;
      }
    }
  } catch (...) {
    code = rtcgc::exitCodeOf(std::current_exception());
    lost = lost || (comm->rank() == 0 && ranks.anyLost());  // a single search stopped by a lost rank
  }
  if (lost) {
    // A lost rank may never reach MPI_Finalize, which can then wait for it forever.
    std::fflush(stdout);
    std::fflush(stderr);
    comm->skipFinalize();
    std::_Exit(code);
  }
  return code;
}
