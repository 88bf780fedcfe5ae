// The tuner's compile stage: emit CUDA C for each candidate schedule and compile it with NVRTC in
// parallel, handing out compiled candidates in completion order while later ones are still
// compiling (the tuner measures them meanwhile).
//
// Processes, not threads: NVRTC serializes much of its work inside one process, so on a 16-core
// host threads flatten at about 60 candidates/s while worker processes reach about 270/s
// (bench/nvrtc_throughput). The pool therefore starts N compile workers (`rtcg-worker
// --compile-worker`, spawned once per search with posix_spawn) and keeps one feeding thread per
// worker in this process: it emits a job's CUDA C, sends it over the framed protocol below,
// waits for the cubin and checks that it can launch. A worker that dies or takes longer than the
// compile timeout fails only the candidate it held (CompileFailed, with the reason) and is
// restarted. Only when no worker can be started (no executable, or one that does not answer)
// does the pool compile on threads in this process, and says so through its log.
//
// Compile-worker protocol: the frames of tune/WorkerProtocol.h ("RTCG" | u32 jsonBytes | u64
// blobBytes | JSON | blob) on a socket on the worker's stdin and stdout, with its own messages (the
// worker compiles through compileGenerated, driver/Pipeline.h, like every other caller of NVRTC):
//   worker -> hello {pid}                                         once, at start
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
// --compile-worker). Returns the process exit status: 0 after quit or end of input.
int serveCompileWorker(int fd);

// A compile slot served elsewhere (another MPI rank's compile worker, reached through that rank:
// tools/rtcgc/MpiTune.h). One pool thread uses it at a time; pools of later batches reuse it.
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

// Compile slots this process serves for a pool elsewhere (an MPI rank's relay for rank 0's pool):
// a compile worker per slot, started at the slot's first frame and restarted after it died or
// timed out; where none starts (or `workerPath` is empty), the slot compiles on the calling
// thread. compile() is called by one thread per slot at a time, slots in parallel.
class CompileSlotHost {
 public:
  CompileSlotHost(std::string workerPath, int slots, std::function<void(const std::string&)> log = {});
  ~CompileSlotHost();  // ends the workers
  CompileSlotHost(const CompileSlotHost&) = delete;
  CompileSlotHost& operator=(const CompileSlotHost&) = delete;

  int slots() const { return int(slots_.size()); }
  // Compiles a "compile" frame on `slot`; returns the reply frame ("compiled", or "failed" with the
  // reason: the worker died, timed out, sent garbage, or the frame is not a compile request).
  std::string compile(int slot, const std::string& frame, double timeoutSeconds);
  // From any thread: kills the workers (compiles in flight fail at once), starts no more.
  void abandon();
  int64_t compiled() const { return compiled_.load(); }

 private:
  struct HostedSlot;
  std::string workerPath_;
  std::function<void(const std::string&)> log_;
  std::vector<std::unique_ptr<HostedSlot>> slots_;
  std::atomic<int64_t> compiled_{0};
};

struct CompilePoolOptions {
  int parallel = 0;        // compilations at once; 0: hardware concurrency, at most 16 per measuring device
  // The devices measuring what the pool compiles: the pool runs up to 16 compiles per device, about
  // what one device measures in the same time (docs/bench.md, "Decisions and their measurements").
  int measuringDevices = 1;
  std::string workerPath;  // rtcg-worker (see findWorker); empty: compile on threads in this process
  double compileTimeoutSeconds = 60;  // a worker still compiling after this is killed and restarted
  std::function<void(const std::string&)> log;  // worker starts, restarts, the fallback to threads
  // Slots served elsewhere, in addition to the `parallel` local ones (the hosts' slots interleaved,
  // so that a batch of few jobs is spread over them).
  std::vector<std::shared_ptr<RemoteCompileSlot>> remoteSlots;
};

class CompilePool {
 public:
  // Starts compiling `jobs` in order, `options.parallel` at a time (never more than there are jobs).
  CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs,
              CompilePoolOptions options = {});
  ~CompilePool();  // stops; kills the workers (abandoning their compiles) and joins
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // The next finished candidate (completion order), waiting for one; nullopt once every started
  // job has been handed out and no more will start.
  std::optional<CompiledCandidate> next();
  // Starts no further jobs (those compiling finish and are still handed out).
  void stop();

  int parallel() const { return int(slots_.size()); }  // local and remote slots
  // Slots and finished candidates per host, "local" first.
  std::vector<CompileHostCount> hosts() const;
  // Whether any compile ran on a thread of this process (no worker could be started).
  bool usedFallback() const;
  int workerRestarts() const;
  // The compile workers' process ids, -1 for a slot without one (tests kill them). `busyOnly`: only
  // those holding a candidate now.
  std::vector<pid_t> workerPids(bool busyOnly = false) const;

  int64_t started() const { return nextJob_.load() < jobs_.size() ? int64_t(nextJob_.load()) : int64_t(jobs_.size()); }
  int64_t finished() const;
  // Finished candidates per second of wall time from the pool's start to the last finish.
  double throughput() const;
  double seconds() const;  // that wall time

 private:
  struct Slot;
  void runSlot(Slot& slot);
  bool startWorker(Slot& slot);
  void useThreads(Slot& slot, const std::string& why);
  CompiledCandidate compileInWorker(Slot& slot, size_t job);
  CompiledCandidate compileRemotely(Slot& slot, size_t job);
  void finish(CompiledCandidate c, size_t host);

  Kernel bound_;
  std::string arch_;
  LaunchLimits limits_;
  std::vector<CompileJob> jobs_;
  CompilePoolOptions options_;
  std::atomic<size_t> nextJob_{0};
  std::atomic<bool> stopped_{false};    // no new jobs
  std::atomic<bool> shutdown_{false};   // the destructor: abandon compiles in flight
  mutable std::mutex mutex_;            // guards what follows
  std::condition_variable ready_;
  std::deque<CompiledCandidate> done_;
  int running_ = 0;  // slots still working
  int64_t finished_ = 0;
  bool fallback_ = false;
  std::exception_ptr lost_;  // a remote host was lost: next() throws this
  std::vector<CompileHostCount> hosts_;
  std::chrono::steady_clock::time_point start_, lastFinish_;
  std::vector<std::unique_ptr<Slot>> slots_;
};

}  // namespace rtcg
