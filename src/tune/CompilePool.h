// The tuner's compile stage: emit CUDA C for each candidate schedule and compile it with NVRTC on a
// pool of threads, handing out compiled candidates in completion order while later ones are still
// compiling (the tuner measures them meanwhile).
//
// Threads, not processes: NVRTC is thread-safe (each compile owns its program) and a thread pool
// needs no serialization of the results. bench/nvrtc_throughput measures threads against worker
// processes on a given host; see its header for how to read it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
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
  EmittedModule module;
  std::string cubin;
  int registers = 0, spillBytes = 0, sharedBytes = 0, localBytes = 0;  // max over the functions
  double emitMs = 0, compileMs = 0;
  bool measurable() const { return status == CandidateStatus::Verified; }
};

// Why the compiled module cannot run well or at all (empty if it can): a function that spills, a
// block whose threads need more registers than a block may have (allocated per warp in units of
// 256), too many threads, or more shared memory than a block may use.
std::string launchObstacle(const EmittedModule& module, const CudaCompileResult& binary, const LaunchLimits& limits);

// Emits and compiles one job (what a pool thread does). Never throws for a bad candidate.
CompiledCandidate compileCandidate(const Kernel& bound, const CompileJob& job, const std::string& arch,
                                   const LaunchLimits& limits);

class CompilePool {
 public:
  // Starts `threads` threads (0: hardware concurrency) compiling `jobs` in order.
  CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs, int threads);
  ~CompilePool();  // stops and joins
  CompilePool(const CompilePool&) = delete;
  CompilePool& operator=(const CompilePool&) = delete;

  // The next finished candidate (completion order), waiting for one; nullopt once every started
  // job has been handed out and no more will start.
  std::optional<CompiledCandidate> next();
  // Starts no further jobs (those compiling finish and are still handed out).
  void stop();

  int threads() const { return int(threads_.size()); }
  int64_t started() const { return nextJob_.load() < jobs_.size() ? int64_t(nextJob_.load()) : int64_t(jobs_.size()); }
  int64_t finished() const;
  // Finished candidates per second of wall time from the pool's start to the last finish.
  double throughput() const;
  double seconds() const;  // that wall time

 private:
  void run();

  Kernel bound_;
  std::string arch_;
  LaunchLimits limits_;
  std::vector<CompileJob> jobs_;
  std::atomic<size_t> nextJob_{0};
  std::atomic<bool> stopped_{false};
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<CompiledCandidate> done_;
  int running_ = 0;  // threads still working
  int64_t finished_ = 0;
  std::chrono::steady_clock::time_point start_, lastFinish_;
  std::vector<std::thread> threads_;
};

}  // namespace rtcg
