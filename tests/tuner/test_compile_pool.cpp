// The compile stage: launchability checks from ptxas resources, and the pool compiling a sample of
// matmul candidates with NVRTC in compile-worker processes (rtcg-worker --compile-worker) or, as
// a fallback, on threads; a worker killed or too slow mid-search fails only its candidate (CPU
// only: NVRTC needs no GPU).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <set>
#include <thread>

#include "driver/Pipeline.h"
#include "schedule/Space.h"
#include "support/Cores.h"
#include "support/Error.h"
#include "tune/CompilePool.h"

using namespace rtcg;

namespace {

Kernel matmul(int64_t n) {
  Diagnostics diags;
  SourceText src{"matmul.rtcg", R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }
})"};
  std::optional<Kernel> k = frontKernel(src, "", diags);
  std::optional<Kernel> b = k ? bindAndProve(*k, {{"n", n}}, diags) : std::nullopt;
  EXPECT_TRUE(b) << renderDiagnostics(diags, src);
  return *b;
}

EmittedModule oneLaunch(uint32_t threads, uint32_t dynamicShared = 0) {
  EmittedModule m;
  m.launches.push_back(LaunchSpec{"k_0", {1, 1, 1}, {threads, 1, 1}, dynamicShared, {}});
  return m;
}

CudaCompileResult resources(int registers, int shared = 0, int spillStores = 0) {
  CudaCompileResult r;
  r.success = true;
  KernelResources k;
  k.name = "k_0";
  k.registers = registers;
  k.sharedBytes = shared;
  k.spillStoreBytes = spillStores;
  r.resources.push_back(k);
  return r;
}

}  // namespace

TEST(LaunchObstacle, AcceptsWhatFitsAndSaysWhyNot) {
  LaunchLimits limits;
  EXPECT_EQ(launchObstacle(oneLaunch(256), resources(32), limits), "");
  EXPECT_EQ(launchObstacle(oneLaunch(1024), resources(64), limits), "");  // exactly 65536
  std::string regs = launchObstacle(oneLaunch(1024), resources(65), limits);
  EXPECT_NE(regs.find("1024 threads x 65 registers need 73728 registers per block"), std::string::npos) << regs;
  EXPECT_NE(launchObstacle(oneLaunch(256), resources(40, 0, 16), limits).find("spills registers (16 bytes stored"),
            std::string::npos);
  EXPECT_NE(launchObstacle(oneLaunch(2048), resources(16), limits).find("2048 threads per block exceed"),
            std::string::npos);
  EXPECT_NE(launchObstacle(oneLaunch(128, 200 * 1024), resources(16, 40 * 1024), limits).find("shared memory"),
            std::string::npos);
  // Missing resources (an NVRTC log without ptxas lines) are unknown, not an obstacle; what the
  // launch itself asks for is still checked.
  EXPECT_EQ(launchObstacle(oneLaunch(128), CudaCompileResult{}, limits), "");
  EXPECT_NE(launchObstacle(oneLaunch(2048), CudaCompileResult{}, limits).find("2048 threads per block exceed"),
            std::string::npos);
  EXPECT_NE(launchObstacle(oneLaunch(128, 300 * 1024), CudaCompileResult{}, limits).find("shared memory"),
            std::string::npos);
}

TEST(CompileCandidate, BadCudaIsACompileFailureNotAnException) {
  Kernel k = matmul(64);
  CompileJob job{"broken", defaultSchedule(k), [](const std::string& s) { return s + "\nthis is not CUDA;\n"; }, nullptr};
  CompiledCandidate c = compileCandidate(k, job, "sm_90", {});
  EXPECT_EQ(c.status, CandidateStatus::CompileFailed);
  EXPECT_NE(c.reason.find("NVRTC failed"), std::string::npos) << c.reason;
}

// A schedule without a plan is rejected with the plan's reasons; a plan the emitter fails on is an
// emitter error (a bug in rtcg), counted apart (TuneResult::emitterErrors). Neither reaches NVRTC.
TEST(CompileCandidate, NoPlanIsARejectionAndAnEmitterFailureIsABug) {
  Kernel k = matmul(64);
  auto parsed = parseSchedule("i: grid.y; j: grid.x, thread.x 4096; k: serial");
  ASSERT_TRUE(parsed.ok());
  CompiledCandidate rejected = compileCandidate(k, CompileJob{"no plan", *parsed.schedule, {}, nullptr}, "sm_90", {});
  EXPECT_EQ(rejected.status, CandidateStatus::CompileFailed);
  EXPECT_FALSE(rejected.emitterError);
  EXPECT_NE(rejected.reason.find("the schedule has no plan: "), std::string::npos) << rejected.reason;
  auto planless = std::make_shared<SchedulePlan>();
  planless->reasons.push_back("nothing planned");
  CompiledCandidate bug = compileCandidate(k, CompileJob{"bug", defaultSchedule(k), {}, planless}, "sm_90", {});
  EXPECT_EQ(bug.status, CandidateStatus::CompileFailed);
  EXPECT_TRUE(bug.emitterError);
  EXPECT_NE(bug.reason.find("a bug in rtcg"), std::string::npos) << bug.reason;
  // A candidate's own plans: the module the schedule's planning gives.
  SpaceOptions so;
  so.maxCandidates = 4;
  Space space = enumerateSchedules(k, so);
  ASSERT_FALSE(space.candidates.empty());
  const Candidate& c = space.candidates.front();
  CompileJob planned{c.text, c.schedule, [](const std::string& s) { return s + "\nthis is not CUDA;\n"; },
                     std::make_shared<const SchedulePlan>(candidatePlan(c))};
  CompiledCandidate fromPlan = compileCandidate(k, planned, "sm_90", {});
  EXPECT_FALSE(fromPlan.emitterError);
  EXPECT_EQ(fromPlan.module.source, emitCuda(k, c.schedule, so.limits).source + "\nthis is not CUDA;\n");
}

TEST(CompilePool, CompilesASampleOfMatmulCandidatesInParallel) {
  Kernel k = matmul(128);
  SpaceOptions so;
  so.maxCandidates = 12;
  Space space = enumerateSchedules(k, so);
  ASSERT_FALSE(space.candidates.empty());
  std::vector<CompileJob> jobs;
  for (const Candidate& c : space.candidates) jobs.push_back({c.text, c.schedule, {}, nullptr});
  size_t n = jobs.size();

  auto t0 = std::chrono::steady_clock::now();
  CompilePoolOptions options;
  options.parallel = 2;  // no workerPath: threads of this process
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);
  std::set<size_t> seen;
  int ok = 0;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(seen.insert(c->job).second) << "job handed out twice";
    EXPECT_NE(c->status, CandidateStatus::CompileFailed) << c->label << ": " << c->reason;
    if (c->measurable()) {
      ++ok;
      EXPECT_FALSE(c->cubin.empty());
      EXPECT_GT(c->registers, 0);
      EXPECT_EQ(c->module.launches.size(), 1u);
    }
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(seen.size(), n);
  EXPECT_EQ(pool.finished(), int64_t(n));
  EXPECT_GT(ok, 0);
  EXPECT_EQ(pool.parallel(), 2);
  EXPECT_FALSE(pool.usedFallback());
  EXPECT_GT(pool.throughput(), 0);
  std::printf("compiled %zu matmul n=128 candidates on 2 threads in %.2f s: %.1f candidates/s\n", n, wall,
              pool.throughput());
}

TEST(CompilePool, StopStartsNoMoreJobs) {
  Kernel k = matmul(64);
  std::vector<CompileJob> jobs(40, CompileJob{"default", defaultSchedule(k), {}, nullptr});
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);
  std::optional<CompiledCandidate> first = pool.next();
  ASSERT_TRUE(first);
  pool.stop();
  int rest = 0;
  while (pool.next()) ++rest;
  EXPECT_LE(rest, 2);  // at most the one compiling when stop() was called
  EXPECT_LT(pool.finished(), 40);
}

namespace {

std::vector<CompileJob> matmulJobs(const Kernel& k, int count) {
  SpaceOptions so;
  so.maxCandidates = count;
  Space space = enumerateSchedules(k, so);
  std::vector<CompileJob> jobs;
  for (const Candidate& c : space.candidates) jobs.push_back({c.text, c.schedule, {}, nullptr});
  return jobs;
}

// Collects the pool's log lines (it logs from its threads).
struct LogLines {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::function<void(const std::string&)> sink() {
    return [this](const std::string& s) {
      std::lock_guard<std::mutex> lock(mutex);
      lines.push_back(s);
    };
  }
  bool contains(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    for (const std::string& l : lines)
      if (l.find(text) != std::string::npos) return true;
    return false;
  }
  int count(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex);
    int n = 0;
    for (const std::string& l : lines) n += l.find(text) != std::string::npos;
    return n;
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string out;
    for (const std::string& l : lines) out += l + "\n";
    return out;
  }
};

}  // namespace

TEST(CompilePool, CompilesMatmulCandidatesInWorkerProcesses) {
  Kernel k = matmul(128);
  std::vector<CompileJob> jobs = matmulJobs(k, 12);
  ASSERT_EQ(jobs.size(), 12u);
  LogLines log;
  CompilePoolOptions options;
  options.parallel = 2;
  options.workerPath = RTCG_WORKER_EXE;
  options.log = log.sink();
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);
  EXPECT_EQ(pool.parallel(), 2);
  std::set<size_t> seen;
  std::set<pid_t> pids;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    for (pid_t p : pool.workerPids()) {
      EXPECT_NE(p, ::getpid());
      if (p > 0) pids.insert(p);
    }
    EXPECT_TRUE(seen.insert(c->job).second) << "job handed out twice";
    EXPECT_EQ(c->status, CandidateStatus::Verified) << c->label << ": " << c->reason;
    EXPECT_FALSE(c->cubin.empty()) << c->label;
    EXPECT_EQ(c->cubin.compare(0, 4, "\x7f" "ELF"), 0) << c->label << ": not an ELF cubin";
    EXPECT_EQ(c->module.launches.size(), 1u);
    EXPECT_GT(c->compileMs, 0);
    if (c->resourcesKnown) EXPECT_GT(c->registers, 0);
  }
  EXPECT_EQ(seen.size(), 12u);
  EXPECT_EQ(pool.finished(), 12);
  EXPECT_FALSE(pool.usedFallback()) << log.all();
  EXPECT_EQ(pool.workerRestarts(), 0);
  EXPECT_GE(pids.size(), 1u);  // the workers, seen while compiling
  EXPECT_TRUE(log.contains("compile worker")) << log.all();
  std::printf("compiled 12 matmul n=128 candidates in 2 compile workers: %.1f candidates/s\n", pool.throughput());
}

TEST(CompilePool, AKilledWorkerFailsOnlyItsCandidateAndIsRestarted) {
  Kernel k = matmul(128);
  std::vector<CompileJob> jobs = matmulJobs(k, 8);
  size_t n = jobs.size();
  LogLines log;
  CompilePoolOptions options;
  options.parallel = 2;
  options.workerPath = RTCG_WORKER_EXE;
  options.log = log.sink();
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);

  // Kill a worker while it holds a candidate (NVRTC takes tens of milliseconds per candidate).
  pid_t victim = -1;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (victim <= 0 && std::chrono::steady_clock::now() < deadline) {
    for (pid_t p : pool.workerPids(/*busyOnly=*/true))
      if (p > 0) victim = p;
    if (victim <= 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GT(victim, 0) << "no worker was ever seen compiling";
  ASSERT_EQ(::kill(victim, SIGKILL), 0);

  std::set<size_t> seen;
  int failed = 0, compiled = 0;
  std::string reason;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(seen.insert(c->job).second);
    if (c->status == CandidateStatus::CompileFailed) {
      ++failed;
      reason = c->reason;
    } else if (c->measurable()) {
      ++compiled;
      EXPECT_FALSE(c->cubin.empty());
    }
  }
  EXPECT_EQ(seen.size(), n);  // the search completed
  EXPECT_EQ(failed, 1) << log.all();
  EXPECT_NE(reason.find(fmt::format("the compile worker {} ended while compiling this candidate (killed by signal 9",
                                    victim)),
            std::string::npos)
      << reason;
  EXPECT_EQ(compiled, int(n) - 1);
  EXPECT_GE(pool.workerRestarts(), 1);
  EXPECT_FALSE(pool.usedFallback()) << log.all();
  for (pid_t p : pool.workerPids()) EXPECT_NE(p, victim);
}

TEST(CompilePool, ACompileOverTheTimeoutIsKilledAndFails) {
  Kernel k = matmul(64);
  std::vector<CompileJob> jobs(3, CompileJob{"default", defaultSchedule(k), {}, nullptr});
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  options.compileTimeoutSeconds = 0.001;  // no NVRTC compile is that fast
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);
  int failed = 0;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    ASSERT_EQ(c->status, CandidateStatus::CompileFailed);
    EXPECT_NE(c->reason.find("NVRTC did not finish within 0.001 s; the compile worker"), std::string::npos) << c->reason;
    ++failed;
  }
  EXPECT_EQ(failed, 3);
  EXPECT_EQ(pool.workerRestarts(), 2);  // one per candidate after the first
}

TEST(CompilePool, FallsBackToThreadsWhenNoWorkerStarts) {
  Kernel k = matmul(64);
  // A missing executable, one that exits without a word, one that talks garbage (echo prints
  // its argument on the socket).
  for (const char* path : {"/nonexistent/rtcg-worker", "/bin/true", "/bin/echo"}) {
    SCOPED_TRACE(path);
    LogLines log;
    CompilePoolOptions options;
    options.parallel = 2;
    options.workerPath = path;
    options.log = log.sink();
    CompilePool pool(k, "sm_90", {}, matmulJobs(k, 4), options);
    int compiled = 0;
    while (std::optional<CompiledCandidate> c = pool.next()) {
      EXPECT_TRUE(c->measurable()) << c->reason;
      EXPECT_FALSE(c->cubin.empty());
      ++compiled;
    }
    EXPECT_EQ(compiled, 4);
    EXPECT_TRUE(pool.usedFallback());
    EXPECT_TRUE(log.contains("compiling on a thread of this process instead")) << log.all();
    // A later batch compiles on the same threads: no slot tries to start a worker again.
    pool.add(matmulJobs(k, 3));
    while (std::optional<CompiledCandidate> c = pool.next()) {
      EXPECT_TRUE(c->measurable()) << c->reason;
      ++compiled;
    }
    EXPECT_EQ(compiled, 7);
    EXPECT_EQ(log.count("cannot start a compile worker"), 2) << log.all();  // once per slot
  }
}

TEST(CompilePool, DestroyingThePoolAbandonsCompilesInFlight) {
  Kernel k = matmul(64);
  std::vector<CompileJob> jobs(40, CompileJob{"default", defaultSchedule(k), {}, nullptr});
  CompilePoolOptions options;
  options.parallel = 2;
  options.workerPath = RTCG_WORKER_EXE;
  auto pool = std::make_unique<CompilePool>(k, "sm_90", LaunchLimits{}, std::move(jobs), options);
  ASSERT_TRUE(pool->next());
  std::vector<pid_t> pids = pool->workerPids();
  // Abandoned, not waited for: every worker is gone once the destructor returns (a pool that
  // waited for 40 compiles would still end; a time limit told them apart but flaked under load).
  pool.reset();
  for (pid_t p : pids)
    if (p > 0) EXPECT_NE(::kill(p, 0), 0) << "compile worker " << p << " outlived the pool";
}

namespace {

// A remote compile slot served by a CompileSlotHost of this process (what an MPI rank's relay does
// for rank 0: tools/rtcgc/MpiTune.cpp), or one whose host is lost at the first frame.
class LoopbackSlot : public RemoteCompileSlot {
 public:
  LoopbackSlot(CompileSlotHost* host, int slot, std::string name) : host_(host), slot_(slot), name_(std::move(name)) {}
  std::optional<std::string> exchange(const std::string& frame, double timeoutSeconds,
                                      const std::atomic<bool>&) override {
    if (!host_) throw Error(name_ + " is lost");
    return host_->compile(slot_, frame, timeoutSeconds);
  }
  std::string host() const override { return name_; }

 private:
  CompileSlotHost* host_;
  int slot_;
  std::string name_;
};

// `parallel` local workers and the two slots of `far` (host "far").
CompilePoolOptions withFarSlots(CompileSlotHost& far, int parallel) {
  CompilePoolOptions options;
  options.parallel = parallel;
  options.workerPath = RTCG_WORKER_EXE;
  options.remoteSlots = {std::make_shared<LoopbackSlot>(&far, 0, "far"), std::make_shared<LoopbackSlot>(&far, 1, "far")};
  return options;
}

}  // namespace

TEST(CompilePool, RemoteSlotsCompileBesideTheLocalOnes) {
  Kernel k = matmul(64);
  CompileSlotHost far(RTCG_WORKER_EXE, 2);
  CompilePoolOptions options = withFarSlots(far, 1);
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 9), options);
  EXPECT_EQ(pool.parallel(), 3);
  std::set<size_t> seen;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(c->measurable()) << c->reason;
    EXPECT_FALSE(c->cubin.empty());
    seen.insert(c->job);
  }
  EXPECT_EQ(seen.size(), 9u);  // each job handed out once
  std::vector<CompileHostCount> hosts = pool.hosts();
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].host, "local");
  EXPECT_EQ(hosts[0].slots, 1);
  EXPECT_EQ(hosts[1].host, "far");
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[0].compiled + hosts[1].compiled, 9);
  EXPECT_GE(hosts[1].compiled, 2);  // each slot took a job as the pool started
  EXPECT_EQ(far.compiled(), hosts[1].compiled);
}

TEST(CompilePool, FewJobsAreSpreadOverTheHosts) {
  Kernel k = matmul(64);
  CompileSlotHost far(RTCG_WORKER_EXE, 2);
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 2), withFarSlots(far, 4));
  EXPECT_EQ(pool.parallel(), 2);  // no more slots than jobs: one of each host
  std::vector<CompileHostCount> hosts = pool.hosts();
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].slots, 1);
  EXPECT_EQ(hosts[1].slots, 1);
  while (pool.next()) {
  }
}

TEST(CompilePool, ARemoteCompileOverTheTimeoutFailsWithTheHostsReason) {
  Kernel k = matmul(64);
  CompileSlotHost far(RTCG_WORKER_EXE, 1);
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = "/nonexistent/rtcg-worker";  // the local slot compiles on its thread, no timeout
  options.compileTimeoutSeconds = 0.001;             // no NVRTC compile is that fast
  options.remoteSlots = {std::make_shared<LoopbackSlot>(&far, 0, "far")};
  std::vector<CompileJob> jobs(4, CompileJob{"default", defaultSchedule(k), {}, nullptr});
  CompilePool pool(k, "sm_90", {}, std::move(jobs), options);
  int remoteFailures = 0;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    if (c->measurable()) continue;  // the local slot's
    EXPECT_NE(c->reason.find("on far: NVRTC did not finish within 0.001 s; the compile worker"), std::string::npos)
        << c->reason;
    EXPECT_NE(c->reason.find("(a new worker takes the next candidate)"), std::string::npos) << c->reason;
    ++remoteFailures;
  }
  EXPECT_EQ(remoteFailures, pool.hosts()[1].compiled);
  EXPECT_GE(remoteFailures, 1);
}

TEST(CompilePool, ALostRemoteHostStopsThePool) {
  Kernel k = matmul(64);
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  options.remoteSlots = {std::make_shared<LoopbackSlot>(nullptr, 0, "far")};
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 6), options);
  std::string error;
  try {
    while (pool.next()) {
    }
  } catch (const Error& e) {
    error = e.what();
  }
  EXPECT_EQ(error, "far is lost");
  EXPECT_THROW(pool.next(), Error);  // and stays stopped
}

TEST(CompileSlotHost, CompilesOnItsThreadWhereNoWorkerStarts) {
  Kernel k = matmul(64);
  CompileSlotHost far("/nonexistent/rtcg-worker", 1);
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  options.remoteSlots = {std::make_shared<LoopbackSlot>(&far, 0, "far")};
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 4), options);
  int compiled = 0;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(c->measurable()) << c->reason;
    ++compiled;
  }
  EXPECT_EQ(compiled, 4);
  EXPECT_GE(far.compiled(), 1);
}

namespace {

// The jobs a batch of the pool handed out (each once: EXPECTed).
std::set<size_t> drain(CompilePool& pool) {
  std::set<size_t> seen;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(seen.insert(c->job).second) << "job handed out twice";
    EXPECT_TRUE(c->measurable()) << c->label << ": " << c->reason;
  }
  return seen;
}

std::set<size_t> upTo(size_t n) {
  std::set<size_t> out;
  for (size_t i = 0; i < n; ++i) out.insert(i);
  return out;
}

// Whether process `pid` (a child not reaped yet) has exited: its state in /proc is Z.
bool exited(pid_t pid) {
  std::FILE* f = std::fopen(fmt::format("/proc/{}/stat", pid).c_str(), "r");
  if (!f) return true;
  char state = '?';
  int scanned = std::fscanf(f, "%*d (%*[^)]) %c", &state);
  std::fclose(f);
  return scanned == 1 && state == 'Z';
}

}  // namespace

// Later batches (add()) run on the workers, local and remote, that the first batch started (each
// start costs a process and NVRTC's first compile), with each batch's jobs numbered from 0, handed
// out once, and counted per batch; hosts() counts over every batch.
TEST(CompilePool, LaterBatchesRunOnTheWorkersTheFirstOneStarted) {
  Kernel k = matmul(64);
  LogLines log;
  CompileSlotHost far(RTCG_WORKER_EXE, 2, log.sink());
  CompilePoolOptions options = withFarSlots(far, 2);
  options.log = log.sink();
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 6), options);
  ASSERT_EQ(pool.parallel(), 4);
  EXPECT_EQ(drain(pool), upTo(6));
  EXPECT_EQ(pool.finished(), 6);
  std::vector<pid_t> local = pool.workerPids(), remote = far.workerPids();
  for (int batch : {3, 4, 2}) {
    SCOPED_TRACE(batch);
    pool.add(matmulJobs(k, batch));
    EXPECT_EQ(drain(pool), upTo(size_t(batch)));
    EXPECT_EQ(pool.finished(), batch);  // of this batch
    // The workers that were running still are, the same processes (a slot idle so far may start
    // its worker now).
    std::vector<pid_t> localNow = pool.workerPids(), remoteNow = far.workerPids();
    for (size_t i = 0; i < local.size(); ++i)
      if (local[i] > 0) EXPECT_EQ(localNow[i], local[i]) << "local slot " << i;
    for (size_t i = 0; i < remote.size(); ++i)
      if (remote[i] > 0) EXPECT_EQ(remoteNow[i], remote[i]) << "far's slot " << i;
    local = localNow, remote = remoteNow;
  }
  // At most one start per slot over the four batches (a pool per batch started up to 15).
  EXPECT_LE(log.count("compile worker "), 4) << log.all();
  EXPECT_GE(log.count("compile worker "), 2) << log.all();
  EXPECT_EQ(log.count(" started ("), log.count("compile worker ")) << log.all();
  EXPECT_EQ(pool.workerRestarts(), 0);
  std::vector<CompileHostCount> hosts = pool.hosts();
  ASSERT_EQ(hosts.size(), 2u);
  EXPECT_EQ(hosts[0].slots, 2);
  EXPECT_EQ(hosts[1].slots, 2);
  EXPECT_EQ(hosts[0].compiled + hosts[1].compiled, 6 + 3 + 4 + 2);
  EXPECT_EQ(far.compiled(), hosts[1].compiled);
}

// A worker that died between batches (the pool idles while a round is measured) is restarted for
// the next batch's first job, which it compiles (the job did not fail).
TEST(CompilePool, AWorkerThatDiedBetweenBatchesIsRestarted) {
  Kernel k = matmul(64);
  LogLines log;
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  options.log = log.sink();
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 2), options);
  EXPECT_EQ(drain(pool), upTo(2));
  pid_t victim = pool.workerPids().at(0);
  ASSERT_GT(victim, 0);
  ASSERT_EQ(::kill(victim, SIGKILL), 0);
  for (int i = 0; i < 5000 && !exited(victim); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(exited(victim));
  pool.add(matmulJobs(k, 2));
  EXPECT_EQ(drain(pool), upTo(2));  // every job compiled
  EXPECT_EQ(pool.workerRestarts(), 1);
  pid_t now = pool.workerPids().at(0);
  EXPECT_GT(now, 0);
  EXPECT_NE(now, victim);
  EXPECT_TRUE(log.contains(fmt::format("compile worker {} ended before it got candidate 0", victim))) << log.all();
}

// stop() ends the current batch only: the next one compiles every job; add() before a batch is
// handed out is a bug in the caller.
TEST(CompilePool, StopEndsTheBatchAndTheNextOneRunsWhole) {
  Kernel k = matmul(64);
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = RTCG_WORKER_EXE;
  CompilePool pool(k, "sm_90", {}, std::vector<CompileJob>(20, CompileJob{"default", defaultSchedule(k), {}, nullptr}),
                   options);
  ASSERT_TRUE(pool.next());
  EXPECT_THROW(pool.add(matmulJobs(k, 2)), InternalError);  // 19 jobs still to hand out
  pool.stop();
  while (pool.next()) {
  }
  EXPECT_LT(pool.finished(), 20);
  pool.add(matmulJobs(k, 3));
  EXPECT_EQ(drain(pool), upTo(3));
  EXPECT_EQ(pool.finished(), 3);
  EXPECT_GE(pool.seconds(), 0);
}

// A process bound to some cores (taskset, mpirun --bind-to, srun) sizes its pool by them, not by
// the machine's: this thread bound to one core makes a pool of one local slot.
TEST(CompilePool, ABoundProcessStartsAWorkerPerCoreItIsBoundTo) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "one core: nothing to bind to fewer";
  struct Restore {
    cpu_set_t set;
    ~Restore() { sched_setaffinity(0, sizeof set, &set); }
  } restore{saved};
  EXPECT_FALSE(boundToSomeCores());
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &one);
      break;
    }
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(usableCores(), 1);
  EXPECT_TRUE(boundToSomeCores());
  Kernel k = matmul(64);
  CompilePoolOptions options;  // parallel 0: the pool's own rule; no workerPath: threads
  CompilePool pool(k, "sm_90", {}, matmulJobs(k, 4), options);
  EXPECT_EQ(pool.parallel(), 1);
  int compiled = 0;
  while (pool.next()) ++compiled;
  EXPECT_EQ(compiled, 4);
}

// A search starts its pool with the default schedule alone, before the space is enumerated, and
// appends the space's candidates to that batch (tune/Tuner.h): the pool has the slots of the whole
// batch (expectedJobs) from the start, their workers start before the rest of the batch is known,
// and the appended jobs, numbered after the first, run on those workers.
TEST(CompilePool, AStartedBatchTakesAppendedJobsOnTheWorkersAlreadyStarted) {
  Kernel k = matmul(64);
  LogLines log;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> events;
  CompilePoolOptions options;
  options.parallel = 2;
  options.workerPath = RTCG_WORKER_EXE;
  options.log = log.sink();
  options.expectedJobs = 6;
  options.timeline = [&](const std::string& event) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(event);
    changed.notify_all();
  };
  std::vector<CompileJob> jobs = matmulJobs(k, 6);
  ASSERT_EQ(jobs.size(), 6u);
  CompilePool pool(k, "sm_90", {}, {jobs[0]}, options);
  EXPECT_EQ(pool.parallel(), 2);  // the batch's expected size, not its one job
  {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait_for(lock, std::chrono::seconds(120), [&] { return events.size() == 2; });
    std::set<std::string> seen(events.begin(), events.end());
    EXPECT_EQ(seen, (std::set<std::string>{"compile workers started", "job 0 compiled"}));
  }
  EXPECT_EQ(log.count(" started ("), 2) << log.all();  // both, with one job to compile
  pool.append(std::vector<CompileJob>(jobs.begin() + 1, jobs.end()));
  std::set<size_t> seen;
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(seen.insert(c->job).second) << "job handed out twice";
    ASSERT_LT(c->job, jobs.size());
    EXPECT_EQ(c->label, jobs[c->job].label);
    EXPECT_TRUE(c->measurable()) << c->label << ": " << c->reason;
  }
  EXPECT_EQ(seen, upTo(6));
  EXPECT_EQ(pool.finished(), 6);
  EXPECT_EQ(log.count(" started ("), 2) << log.all();
  EXPECT_EQ(pool.workerRestarts(), 0);
}

// A search appends each refinement round to the batch, also once next() has said that every job
// so far is handed out: next() then hands out the new jobs, numbered after the others, compiled
// on the same workers.
TEST(CompilePool, AHandedOutBatchTakesAppendedJobs) {
  Kernel k = matmul(64);
  LogLines log;
  CompilePoolOptions options;
  options.parallel = 2;
  options.workerPath = RTCG_WORKER_EXE;
  options.log = log.sink();
  std::vector<CompileJob> jobs = matmulJobs(k, 6);
  ASSERT_EQ(jobs.size(), 6u);
  CompilePool pool(k, "sm_90", {}, {jobs[0], jobs[1]}, options);
  pool.append({jobs[2]});
  EXPECT_EQ(drain(pool), upTo(3));
  pool.append(std::vector<CompileJob>(jobs.begin() + 3, jobs.end()));
  std::set<size_t> seen = upTo(3);
  while (std::optional<CompiledCandidate> c = pool.next()) {
    EXPECT_TRUE(seen.insert(c->job).second) << "job handed out twice";
    ASSERT_LT(c->job, jobs.size());
    EXPECT_EQ(c->label, jobs[c->job].label);
    EXPECT_TRUE(c->measurable()) << c->label << ": " << c->reason;
  }
  EXPECT_EQ(seen, upTo(6));
  EXPECT_EQ(pool.finished(), 6);
  EXPECT_GE(pool.seconds(), 0);
  EXPECT_EQ(log.count(" started ("), 2) << log.all();
}

namespace {

// How many of `pids` (workerPids()) are processes.
int running(const std::vector<pid_t>& pids) {
  return int(std::count_if(pids.begin(), pids.end(), [](pid_t p) { return p > 0; }));
}

}  // namespace

// Beside measuring workers that are starting (a search's: their CUDA contexts are made then), the
// pool starts CompileWorkerStart::kEarly of its local workers at once, which compile what comes
// first, and the others (which take no job before) only once startDeferredWorkers() is called.
TEST(CompilePool, DeferredWorkersStartOnlyOnceReleased) {
  Kernel k = matmul(64);
  LogLines log;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> events;
  auto event = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(e);
    changed.notify_all();
  };
  auto await = [&](const std::string& e) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(120),
                            [&] { return std::find(events.begin(), events.end(), e) != events.end(); });
  };
  CompilePoolOptions options;
  options.parallel = 5;
  options.workerPath = RTCG_FAKE_WORKER;  // its --compile-worker is the real one
  options.log = log.sink();
  options.expectedJobs = 8;
  options.deferWorkers = true;
  options.timeline = event;
  std::vector<CompileJob> jobs = matmulJobs(k, 8);
  ASSERT_EQ(jobs.size(), 8u);
  ASSERT_GT(5, CompileWorkerStart::kEarly);
  CompilePool pool(k, "sm_90", {}, {jobs[0]}, options);
  ASSERT_EQ(pool.parallel(), 5);
  ASSERT_TRUE(await("job 0 compiled"));
  for (int i = 0; i < 200 && log.count(" started (") < CompileWorkerStart::kEarly; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  // The early workers, the first local slots', and no other (without the order every worker had
  // started as the pool did, long before job 0 was compiled).
  std::vector<pid_t> pids = pool.workerPids();
  ASSERT_EQ(pids.size(), 5u);
  EXPECT_EQ(running(pids), CompileWorkerStart::kEarly) << log.all();
  for (int s = 0; s < CompileWorkerStart::kEarly; ++s) EXPECT_GT(pids[size_t(s)], 0) << "slot " << s;
  EXPECT_EQ(log.count(" started ("), CompileWorkerStart::kEarly) << log.all();
  event("released");
  pool.startDeferredWorkers();
  pool.append(std::vector<CompileJob>(jobs.begin() + 1, jobs.end()));
  std::set<size_t> seen = drain(pool);
  EXPECT_EQ(seen.count(0), 1u);
  EXPECT_EQ(seen, upTo(8));
  ASSERT_TRUE(await("compile workers started"));  // every local slot's, after the release
  {
    std::lock_guard<std::mutex> lock(mutex);
    EXPECT_LT(std::find(events.begin(), events.end(), "released"),
              std::find(events.begin(), events.end(), "compile workers started"));
  }
  EXPECT_EQ(running(pool.workerPids()), 5);
  EXPECT_EQ(log.count(" started ("), 5) << log.all();
  EXPECT_EQ(pool.workerRestarts(), 0);
}

// A host of compile slots beside a measuring worker (an MPI rank's relay) starts the early slots'
// workers when asked to (prepare), the others only once startDeferredWorkers() is called, or at
// their slot's first frame.
TEST(CompileSlotHost, DeferredWorkersStartOnceReleasedOrAtTheirFirstFrame) {
  const int n = CompileWorkerStart::kEarly + 2;
  CompileSlotHost far(RTCG_FAKE_WORKER, n, {}, "", /*deferWorkers=*/true);
  for (int s = 0; s < n; ++s) far.prepare(s);
  std::vector<pid_t> pids = far.workerPids();
  for (int s = 0; s < n; ++s) EXPECT_EQ(pids[size_t(s)] > 0, s < CompileWorkerStart::kEarly) << "slot " << s;
  // The last slot's first frame starts its worker whatever the order.
  Kernel k = matmul(64);
  CompilePoolOptions options;
  options.parallel = 1;
  options.workerPath = "/nonexistent/rtcg-worker";  // the local slot compiles on its thread
  options.remoteSlots = {std::make_shared<LoopbackSlot>(&far, n - 1, "far")};
  {
    CompilePool pool(k, "sm_90", {}, matmulJobs(k, 6), options);
    drain(pool);
    ASSERT_GE(pool.hosts().at(1).compiled, 1);
  }
  pids = far.workerPids();
  EXPECT_GT(pids[size_t(n - 1)], 0);
  EXPECT_EQ(pids[size_t(n - 2)], -1);
  far.startDeferredWorkers();
  far.prepare(n - 2);
  EXPECT_GT(far.workerPids()[size_t(n - 2)], 0);
  // A host that is not deferred starts every slot's worker when asked to.
  CompileSlotHost near(RTCG_FAKE_WORKER, n);
  for (int s = 0; s < n; ++s) near.prepare(s);
  EXPECT_EQ(running(near.workerPids()), n);
}

// The compile worker's command line: --compile-worker, with --warm ARCH to warm NVRTC at start.
TEST(CompileWorker, ArgumentsNameTheArchitectureToWarm) {
  auto parse = [](std::vector<std::string> args) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    return compileWorkerArgs(int(argv.size()), argv.data());
  };
  EXPECT_EQ(parse({"rtcg-worker", "--compile-worker"}), std::optional<std::string>(""));
  EXPECT_EQ(parse({"rtcg-worker", "--compile-worker", "--warm", "sm_90"}), std::optional<std::string>("sm_90"));
  EXPECT_EQ(parse({"rtcg-worker", "--serve"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker", "--compile-worker", "--warm"}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker", "--compile-worker", "--warm", ""}), std::nullopt);
  EXPECT_EQ(parse({"rtcg-worker"}), std::nullopt);
}
