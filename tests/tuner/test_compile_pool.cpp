// The compile stage: launchability checks from ptxas resources, and the pool compiling a sample of
// matmul candidates with NVRTC in parallel (CPU only: NVRTC needs no GPU).
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "api/Pipeline.h"
#include "schedule/Space.h"
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
  EXPECT_NE(launchObstacle(oneLaunch(128), CudaCompileResult{}, limits).find("no resources for 'k_0'"),
            std::string::npos);
}

TEST(CompileCandidate, BadCudaIsACompileFailureNotAnException) {
  Kernel k = matmul(64);
  CompileJob job{"broken", defaultSchedule(k), [](const std::string& s) { return s + "\nthis is not CUDA;\n"; }};
  CompiledCandidate c = compileCandidate(k, job, "sm_90", {});
  EXPECT_EQ(c.status, CandidateStatus::CompileFailed);
  EXPECT_NE(c.reason.find("NVRTC failed"), std::string::npos) << c.reason;
}

TEST(CompilePool, CompilesASampleOfMatmulCandidatesInParallel) {
  Kernel k = matmul(128);
  SpaceOptions so;
  so.maxCandidates = 12;
  Space space = enumerateSchedules(k, so);
  ASSERT_FALSE(space.candidates.empty());
  std::vector<CompileJob> jobs;
  for (const Candidate& c : space.candidates) jobs.push_back({c.text, c.schedule, {}});
  size_t n = jobs.size();

  auto t0 = std::chrono::steady_clock::now();
  CompilePool pool(k, "sm_90", {}, std::move(jobs), 2);
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
  EXPECT_EQ(pool.threads(), 2);
  EXPECT_GT(pool.throughput(), 0);
  std::printf("compiled %zu matmul n=128 candidates on 2 threads in %.2f s: %.1f candidates/s\n", n, wall,
              pool.throughput());
}

TEST(CompilePool, StopStartsNoMoreJobs) {
  Kernel k = matmul(64);
  std::vector<CompileJob> jobs(40, CompileJob{"default", defaultSchedule(k), {}});
  CompilePool pool(k, "sm_90", {}, std::move(jobs), 1);
  std::optional<CompiledCandidate> first = pool.next();
  ASSERT_TRUE(first);
  pool.stop();
  int rest = 0;
  while (pool.next()) ++rest;
  EXPECT_LE(rest, 2);  // at most the one compiling when stop() was called
  EXPECT_LT(pool.finished(), 40);
}
