// The tuner's compile stage: emit CUDA C for each candidate schedule and compile it with NVRTC in
// parallel, handing out compiled candidates in completion order while later ones are still
// compiling (the tuner measures them meanwhile).
//
// Processes, not threads: NVRTC serializes much of its work inside one process, so on a 16-core
// host threads flatten at about 60 candidates/s while worker processes reach about 270/s
// (bench/nvrtc_throughput). The pool therefore starts N compile workers (`rtcg-worker
// --compile-worker`, spawned with posix_spawn as the pool starts; beside measuring workers that
// are starting, a few first and the others later: CompileWorkerStart) and keeps one feeding thread
// per worker in this process: it emits a job's CUDA C, sends it over the framed protocol below,
// waits for the cubin and checks that it can launch. The pool takes jobs a batch at a time (add());
// the current batch may grow (append(): a search starts the pool with its default schedule alone,
// before it enumerates the space, and appends the space's candidates, then each refinement round
// while the one before is still compiling or measured). Its workers and slots live as long as the
// pool, so a search starts each worker once, not once per round (each start costs a process and NVRTC's first
// compile, which a worker given an architecture does at once, on a tiny kernel, while it waits for
// its first job). A worker that dies or takes longer than the compile timeout fails
// only the candidate it held (CompileFailed, with the reason) and is restarted. Only when no
// worker can be started (no executable, or one that does not answer) does the pool compile on
// threads in this process, and says so through its log.
//
// Compile-worker protocol: the frames of tune/WorkerProtocol.h ("RTCG" | u32 jsonBytes | u64
// blobBytes | JSON | blob) on a socket on the worker's stdin and stdout, with its own messages (the
// worker compiles through compileGenerated, driver/Pipeline.h, like every other caller of NVRTC):
//   worker -> hello {pid}                                         once, at start (then, started
//                                                                 with --warm ARCH, it compiles a
//                                                                 tiny kernel for ARCH, unasked)
//   parent -> compile {id, kernel, arch, source}                  worker -> compiled {id, success,
//             log, resources: [{name, registers, shared, local, spillStores, spillLoads}]} + cubin blob
//   parent -> quit (or closes the socket)                         worker exits 0
// A compile slot hosted by another process (CompileSlotHost, relayed over MPI by another rank:
// tools/rtcgc/MpiTune.h) answers a compile frame with the worker's compiled frame, or with
//   failed {id, reason}   its worker died, timed out or sent garbage (it is restarted there)
//
// Slots: local ones (a worker process each, sized by CompilePoolOptions::parallel) and, with
// CompilePoolOptions::remoteSlots, slots other hosts serve (RemoteCompileSlot); jobs go to
// whichever slot is free. A remote host that is lost stops the pool: next() throws its error.
// A slot's "start the worker at first use, restart it after it died, else compile on the calling
// thread" is one piece (the worker link in CompilePool.cpp), shared by the pool's local slots and
// CompileSlotHost's.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "ir/IR.h"
#include "schedule/Schedule.h"
#include "tune/TuningDb.h"

namespace rtcg {

struct CompileJob {
  std::string label;  // shown and recorded as the candidate's schedule
  Schedule schedule;
  // Test hook: replaces the emitted CUDA C (e.g. a planted wrong or faulting kernel with the same
  // functions and launches). Empty: the emitted code as it is.
  std::function<std::string(const std::string& emitted)> rewrite;
  // The schedule's plan (a space candidate's: candidatePlan), which the emitter takes. Null for a
  // schedule known only as text (the default, the warm start's, planted ones): planned once, before
  // emission, and rejected with the plan's reasons when it has none.
  std::shared_ptr<const SchedulePlan> plan;
};

// What a launch must fit in, from the device's properties.
struct LaunchLimits {
  int maxThreadsPerBlock = 1024;
  int registersPerBlock = 65536;
  int64_t sharedPerBlockOptin = 227 * 1024;
  int64_t multiprocessors = 0, sharedPerMultiprocessor = 0;  // 0: unknown (`mma: ... persistent` refused)
};

struct CompiledCandidate {
  size_t job = 0;  // index into the job list
  std::string label;
  // Verified here means "compiled and launchable: measure it"; CompileFailed or Skipped with
  // `reason` otherwise.
  CandidateStatus status = CandidateStatus::Verified;
  std::string reason;
  // CompileFailed because the emitter failed on a plan it was given: a bug in rtcg, counted apart
  // from schedules without a plan and from NVRTC's failures (TuneResult::emitterErrors).
  bool emitterError = false;
  EmittedModule module;
  std::string cubin;
  // Max over the functions that ptxas reported; 0 with resourcesKnown false when it reported none
  // (NVRTC sometimes gives an empty log): such a candidate is still measured, and the measuring
  // worker reads the real attributes from the loaded functions.
  bool resourcesKnown = false;
  int registers = 0, spillBytes = 0, sharedBytes = 0, localBytes = 0;
  double emitMs = 0, compileMs = 0;
  bool measurable() const { return status == CandidateStatus::Verified; }
};

// Why the compiled module cannot run well or at all (empty if it can): too many threads per block,
// and, for a function whose resources are known, spilling, needing more registers than a block
// may have (allocated per warp in units of 256) or more shared memory than a block may use. A
// function without resources is not an obstacle (they are unknown, not bad).
std::string launchObstacle(const EmittedModule& module, const CudaCompileResult& binary, const LaunchLimits& limits);

// Emits and compiles one job in this process (the pool's fallback). Never throws for a bad
// candidate.
CompiledCandidate compileCandidate(const Kernel& bound, const CompileJob& job, const std::string& arch,
                                   const LaunchLimits& limits);

// The compile worker's side of the protocol above, on the socket `fd` (rtcg-worker
// --compile-worker [--warm ARCH]). With `warmArch`, NVRTC's first compile (loading it and its
// built-in headers) is done on a tiny kernel right after hello, while the pool has no job for it
// yet. Returns the process exit status: 0 after quit or end of input.
int serveCompileWorker(int fd, const std::string& warmArch = "");

// The compile worker's arguments: `--compile-worker [--warm ARCH]`; nullopt for others. (rtcg-worker
// and the test suite's fake worker parse their command lines with it.)
std::optional<std::string> compileWorkerArgs(int argc, char** argv);

// A compile slot served elsewhere (another MPI rank's compile worker, reached through that rank:
// tools/rtcgc/MpiTune.h). One pool thread uses it at a time, for every batch of the pool.
class RemoteCompileSlot {
 public:
  virtual ~RemoteCompileSlot() = default;
  // Has a "compile" frame (the protocol above, bytes as on the socket) compiled within
  // `timeoutSeconds` (the host enforces it) and returns the reply frame: "compiled" or "failed".
  // nullopt when no reply came within the timeout plus the host's own margin, or once `abandon`
  // is true (the pool is going away). Throws rtcg::Error when the host is lost (the search stops).
  virtual std::optional<std::string> exchange(const std::string& frame, double timeoutSeconds,
                                              const std::atomic<bool>& abandon) = 0;
  virtual std::string host() const = 0;  // "rank 2": slots of one host are counted together
};

// How many slots a host of compile slots had and how many candidates they compiled (failed ones
// included): "local" (this process's workers) first, then each remote host.
struct CompileHostCount {
  std::string host;
  int slots = 0;
  int64_t compiled = 0;
};

namespace compileworker {
class WorkerLink;  // a slot's compile worker (CompilePool.cpp)
}

// When the compile workers of one host start, beside that host's measuring worker: the one rule
// for a pool's local slots (CompilePoolOptions::deferWorkers) and a CompileSlotHost's. A
// measuring worker creates its CUDA context as a search starts, and every compile worker of the
// host starting NVRTC at once beside it delays that context by a second or more (docs/bench.md,
// sessions 40 and 41). Deferred, the slots numbered below kEarly start their workers at once (the
// default schedule and the first candidates need no more), the others once release() is called:
// the tuner calls it when its measuring workers are ready or the space's candidates are queued,
// whichever comes first; an MPI rank's relay when its measuring worker is ready. Not deferred,
// every slot starts at once. Any thread may ask or release.
class CompileWorkerStart {
 public:
  static constexpr int kEarly = 2;
  explicit CompileWorkerStart(bool deferred = false) : released_(!deferred) {}
  // Whether slot `slot` (0-based, among the host's) may start its worker now.
  bool mayStart(int slot) const { return slot < kEarly || released_.load(); }
  void release() { released_.store(true); }

 private:
  std::atomic<bool> released_;
};

// Compile slots this process serves for a pool elsewhere (an MPI rank's relay for rank 0's pool):
// a compile worker per slot, started at the slot's first frame and restarted after it died or
// timed out; where none starts (or `workerPath` is empty), the slot compiles on the calling
// thread. compile() is called by one thread per slot at a time, slots in parallel.
class CompileSlotHost {
 public:
  // `warmArch`: the architecture its workers warm NVRTC for (serveCompileWorker); "" none.
  // `deferWorkers`: the host serves beside a measuring worker (CompileWorkerStart).
  CompileSlotHost(std::string workerPath, int slots, std::function<void(const std::string&)> log = {},
                  std::string warmArch = "", bool deferWorkers = false);
  ~CompileSlotHost();  // ends the workers
  CompileSlotHost(const CompileSlotHost&) = delete;
  CompileSlotHost& operator=(const CompileSlotHost&) = delete;

  int slots() const { return int(slots_.size()); }
  // Starts `slot`'s worker now rather than at its first frame (from the slot's thread), where the
  // start order lets it (CompileWorkerStart); else does nothing (call it again later). A slot's
  // first frame starts its worker whatever the order.
  void prepare(int slot);
  // The deferred slots may start their workers (prepare() starts them).
  void startDeferredWorkers() { start_.release(); }
  // Compiles a "compile" frame on `slot`; returns the reply frame ("compiled", or "failed" with the
  // reason: the worker died, timed out, sent garbage, the host was abandoned, or the frame is not a
  // compile request).
  std::string compile(int slot, const std::string& frame, double timeoutSeconds);
  // From any thread: kills the workers (compiles in flight fail at once), starts no more.
  void abandon();
  int64_t compiled() const { return compiled_.load(); }
  // The slots' worker process ids, -1 for a slot without one (tests count them).
  std::vector<pid_t> workerPids() const;

 private:
  std::vector<std::unique_ptr<compileworker::WorkerLink>> slots_;
  std::atomic<int64_t> compiled_{0};
  CompileWorkerStart start_;
};

struct CompilePoolOptions {
  int parallel = 0;        // compilations at once; 0: hardware concurrency, at most 16 per measuring device
  // The devices measuring what the pool compiles: the pool runs up to 16 compiles per device, about
  // what one device measures in the same time (docs/bench.md, "Decisions and their measurements").
  int measuringDevices = 1;
  std::string workerPath;  // rtcg-worker (see findWorker); empty: compile on threads in this process
  // The pool compiles beside measuring workers that are starting: its local slots past the first
  // CompileWorkerStart::kEarly start their workers, and take jobs, only once
  // CompilePool::startDeferredWorkers() is called. false: every worker starts with the pool.
  bool deferWorkers = false;
  double compileTimeoutSeconds = 60;  // a worker still compiling after this is killed and restarted
  std::function<void(const std::string&)> log;  // worker starts, restarts, the fallback to threads
  // Slots served elsewhere, in addition to the `parallel` local ones (the hosts' slots interleaved,
  // so that a batch of few jobs is spread over them).
  std::vector<std::shared_ptr<RemoteCompileSlot>> remoteSlots;
  // How many jobs the first batch will have once appended to (append()): the pool has no more
  // slots than that (nor than `parallel`). nullopt: the jobs the constructor is given.
  std::optional<size_t> expectedJobs;
  // The pool's part of a search's timeline, called from the slots' threads: "compile workers
  // started" once every local slot's worker has started (or fell back to threads), "job 0
  // compiled" when the first batch's job 0 has finished.
  std::function<void(const std::string&)> timeline;
};

class CompilePool {
 public:
  // Starts compiling `jobs`, the first batch, `options.parallel` at a time. The pool has that many
  // slots for its whole life, but never more than this batch has jobs (or options.expectedJobs: a
  // search's refinement rounds, appended later, are at most that large).
  CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs,
              CompilePoolOptions options = {});
  ~CompilePool();  // stops; kills the workers (abandoning their compiles) and joins
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // Starts the next batch on the same slots and workers (its jobs numbered from 0 again). The
  // current batch must be handed out (next() said nullopt); throws InternalError otherwise.
  void add(std::vector<CompileJob> jobs);
  // Adds jobs to the current batch (numbered after its others): a search's candidates after the
  // default schedule it started the pool with, and its refinement rounds, even once next() has
  // said the batch is over (next() then waits for the new jobs). The batch must not be stopped
  // (but for a lost remote host: then nothing is added and next() throws its error).
  // Its wall time (seconds(), throughput()) counts from the first append (the jobs before it, a
  // search's default schedule, started early) and leaves out the time the batch sat with every
  // job finished before a later append.
  void append(std::vector<CompileJob> jobs);
  // The next finished candidate of the current batch (completion order), waiting for one; nullopt
  // once every started job of it has been handed out and no more will start. Throws a lost remote
  // host's error.
  std::optional<CompiledCandidate> next();
  // Starts no further jobs of the current batch (those compiling finish and are still handed out).
  void stop();
  // The deferred local slots (CompilePoolOptions::deferWorkers) start their workers and take jobs.
  void startDeferredWorkers();

  int parallel() const { return int(slots_.size()); }  // local and remote slots
  // Slots and finished candidates per host over every batch, "local" first.
  std::vector<CompileHostCount> hosts() const;
  // Whether any compile ran on a thread of this process (no worker could be started).
  bool usedFallback() const;
  int workerRestarts() const;
  // The compile workers' process ids, -1 for a slot without one (tests kill them). `busyOnly`: only
  // those holding a candidate now.
  std::vector<pid_t> workerPids(bool busyOnly = false) const;

  int64_t finished() const;  // of the current batch
  // Finished candidates per second of the current batch's wall time, from its start to its last
  // finish.
  double throughput() const;
  double seconds() const;  // that wall time (less its idle time between appends)

 private:
  struct Slot;
  using Batch = std::vector<CompileJob>;
  void runSlot(Slot& slot);
  CompiledCandidate compileLocally(Slot& slot, const CompileJob& job, size_t index);
  CompiledCandidate compileRemotely(Slot& slot, const CompileJob& job, size_t index);
  bool batchOver() const;  // under mutex_: no job of the batch compiling or left to start

  Kernel bound_;
  std::string arch_;
  LaunchLimits limits_;
  CompilePoolOptions options_;
  std::atomic<bool> shutdown_{false};   // the destructor: abandon compiles in flight
  mutable std::mutex mutex_;            // guards what follows
  std::condition_variable ready_;       // next(): a candidate finished, or the batch is over
  std::condition_variable work_;        // the slots: a job to start, or the shutdown
  std::shared_ptr<const Batch> batch_;  // the current batch
  size_t nextJob_ = 0;                  // its next job to start
  bool laterBatch_ = false;             // the current batch is not the first (add())
  bool stopped_ = false;                // its jobs: no more start
  int busy_ = 0;                        // slots compiling one of its jobs
  std::deque<CompiledCandidate> done_;
  int64_t finished_ = 0;                // of the current batch
  std::exception_ptr lost_;  // a remote host was lost: next() throws this
  std::vector<CompileHostCount> hosts_;
  std::chrono::steady_clock::time_point start_, lastFinish_;  // of the current batch
  bool appended_ = false;               // the current batch has been appended to
  double idleSeconds_ = 0;              // it sat with every job finished before an append
  std::vector<std::unique_ptr<Slot>> slots_;
  int localStarted_ = 0;                // local slots whose worker has started (workersStarted)
  CompileWorkerStart workerStart_;      // which local slots may start their worker (deferWorkers)
};

}  // namespace rtcg
