// rtcg::tune end to end. Without a device it must fail cleanly with NoDeviceError; with one (the
// GPU host), it tunes axpby and matmul to a verified winner, and survives planted candidates that
// are wrong, fault (illegal address) or hang.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "driver/Pipeline.h"
#include "ir/Counts.h"
#include "reference/Reference.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "schedule/Space.h"
#include "support/Error.h"
#include "tune/CompilePool.h"
#include "tune/TestDevice.h"
#include "tune/Tuner.h"

using namespace rtcg;

namespace {

struct Loaded {
  std::string file, source;
  Kernel bound;
};

Loaded load(const std::string& example, const SizeBindings& sizes) {
  Loaded l;
  l.file = std::string(RTCG_SOURCE_DIR) + "/examples/" + example;
  std::ifstream in(l.file);
  std::stringstream ss;
  ss << in.rdbuf();
  l.source = ss.str();
  Diagnostics diags;
  SourceText src{l.file, l.source};
  std::optional<Kernel> k = frontKernel(src, "", diags);
  std::optional<Kernel> b = k ? bindAndProve(*k, sizes, diags) : std::nullopt;
  EXPECT_TRUE(b) << renderDiagnostics(diags, src);
  l.bound = *b;
  return l;
}

TuneOptions quickOptions(int maxCandidates) {
  TuneOptions o;
  o.space.maxCandidates = maxCandidates;
  o.repeats = 5;
  o.dbPath = "-";
  o.workerPath = RTCG_WORKER_EXE;
  o.log = [](const std::string& s) { std::printf("  [tune] %s\n", s.c_str()); };
  return o;
}

// Inserts `code` before the last '}' of the emitted translation unit (the end of the last
// function; emitted functions return early for out-of-range threads, so only real points run it).
std::function<std::string(const std::string&)> appendToKernel(const std::string& code) {
  return [code](const std::string& src) {
    size_t brace = src.rfind('}');
    return src.substr(0, brace) + code + "\n" + src.substr(brace);
  };
}

const CandidateRecord* find(const TuneResult& r, const std::string& label) {
  for (const CandidateRecord& c : r.candidates)
    if (c.schedule == label) return &c;
  return nullptr;
}

void expectVerifiedWinner(const TuneResult& r) {
  ASSERT_TRUE(r.defaultSchedule);
  EXPECT_EQ(r.defaultSchedule->status, CandidateStatus::Verified) << r.defaultSchedule->reason;
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->status, CandidateStatus::Verified);
  EXPECT_LE(r.best->medianMs, r.defaultSchedule->medianMs);
  EXPECT_GT(r.best->gflops + r.best->gbytes, 0);
  for (const CandidateRecord& c : r.candidates)
    if (c.status == CandidateStatus::Verified) EXPECT_GE(c.medianMs, r.best->medianMs);
  EXPECT_EQ(r.wrong, 0) << "the emitter produced a wrong candidate";
  EXPECT_EQ(r.faulted, 0);
  EXPECT_GT(r.candidatesPerSecond, 0);
  std::printf("best %s: %.4f ms (default %.4f ms), %lld verified of %zu\n", r.best->schedule.c_str(), r.best->medianMs,
              r.defaultSchedule->medianMs, (long long)r.verified, r.candidates.size());
}

}  // namespace

// An environment variable set for a scope.
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const char* value) : name(n) { ::setenv(n, value, 1); }
  ~ScopedEnv() { ::unsetenv(name.c_str()); }
};

// A search on a stand-in device (the fake worker measures; NVRTC compiles): the compile pool, with
// the default schedule, starts before the space is enumerated (the enumeration runs beside the
// reference and the workers' start), and the timeline says when each phase ended, in order.
TEST(Tune, CompilingStartsBeforeTheSpaceIsEnumeratedAndTheTimelineSaysWhen) {
  ScopedEnv device("RTCG_TEST_DEVICE", "Fake GPU,sm_90,132"), mode("RTCG_FAKE_WORKER_MODE", "verified");
  Loaded l = load("matmul.rtcg", {{"n", 64}});
  TuneOptions o = quickOptions(12);
  o.workerPath = RTCG_FAKE_WORKER;
  o.compileThreads = CompileWorkerStart::kEarly + 1;
  o.deviceProperties = testDeviceFromEnv();
  std::vector<std::pair<std::string, double>> told;
  o.timeline = [&](const std::string& event, double seconds) { told.emplace_back(event, seconds); };
  TuneResult r = tune(l.file, l.source, l.bound, o);
  EXPECT_EQ(told, r.timeline);
  auto at = [&](const std::string& event) {
    auto it = std::find_if(r.timeline.begin(), r.timeline.end(), [&](const auto& e) { return e.first == event; });
    EXPECT_NE(it, r.timeline.end()) << event;
    return it - r.timeline.begin();
  };
  EXPECT_LT(at("compile pool started"), at("enumeration done"));
  EXPECT_LT(at("enumeration done"), at("candidates queued"));
  EXPECT_LT(at("reference done"), at("first result"));
  EXPECT_LT(at("measuring workers ready"), at("first result"));
  // The measuring worker's process starts before anything else (its CUDA context is made while
  // the inputs it is set up with are computed).
  EXPECT_EQ(at("measuring workers started"), 0);
  EXPECT_LT(at("measuring workers started"), at("inputs generated"));
  EXPECT_LT(at("inputs generated"), at("measuring workers ready"));
  EXPECT_LT(at("default schedule compiled"), at("default schedule measured"));
  EXPECT_LT(at("compile workers started"), at("last result"));
  // A few compile workers start with the pool, the last once the measuring workers are ready or the
  // candidates are queued (CompileWorkerStart).
  EXPECT_GT(at("compile workers started"), std::min(at("measuring workers ready"), at("candidates queued")));
  EXPECT_LT(at("first result"), at("last result"));
  EXPECT_LT(at("last result"), at("busy: emitting CUDA C"));
  double last = 0;
  for (const auto& [event, seconds] : r.timeline) {
    if (event.rfind("busy: ", 0) == 0) continue;  // durations, not times
    EXPECT_GE(seconds, last) << event;
    last = seconds;
  }
  at("busy: device 0 waiting for an outcome");
  // The search itself is as before: every candidate once, the default first.
  EXPECT_EQ(int64_t(r.candidates.size()), r.generated);
  EXPECT_GT(r.verified, 0);
  EXPECT_EQ(r.wrong + r.faulted + r.timedOut + r.launchFailed, 0);
  ASSERT_TRUE(r.defaultSchedule);
  EXPECT_EQ(r.candidates.front().schedule, r.defaultSchedule->schedule);
}

TEST(Tune, WithoutADeviceThrowsNoDeviceError) {
  if (cuda::cudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  Loaded l = load("axpby.rtcg", {{"n", 1000}});
  try {
    tune(l.file, l.source, l.bound, quickOptions(4));
    FAIL() << "expected NoDeviceError";
  } catch (const NoDeviceError& e) {
    EXPECT_FALSE(std::string(e.what()).empty());
  }
}

TEST(Tune, ReferenceSampleSizeCostsAboutTheLimit) {
  const int64_t sgemm4096 = 2 * int64_t(4096) * 4096 * 4096;  // 1.4e11: 2e9 of it is 60 rows: at least 64
  EXPECT_EQ(referenceSampleSize(sgemm4096, kDefaultReferenceMaxFlops, {4096}), kMinReferenceSample);
  EXPECT_EQ(referenceSampleSize(sgemm4096, 2e10, {4096}), 597);  // ceil(4096 * 2e10 / 1.37e11)
  EXPECT_EQ(referenceSampleSize(sgemm4096, 2e10, {16, 4096}), 597);  // the largest outer loop
  EXPECT_EQ(referenceSampleSize(sgemm4096, 0, {4096}), 0);  // --full-reference
  EXPECT_EQ(referenceSampleSize(int64_t(2e9), kDefaultReferenceMaxFlops, {1000}), 0);  // within the limit
  EXPECT_EQ(referenceSampleSize(int64_t(4e9), kDefaultReferenceMaxFlops, {1000}), 500);  // half the rows
  EXPECT_EQ(referenceSampleSize(int64_t(1e12), kDefaultReferenceMaxFlops, {20}), kMinReferenceSample);
}

// The manifest deals its largest searches first (rtcgc's tuningOrder): what the estimate ranks by.
TEST(Tune, SearchWorkEstimateRanksByOutputsComparedAndReferenceRun) {
  // Outputs: every candidate's are read back and compared, so the larger output ranks higher, and
  // more candidates weigh more.
  Loaded small = load("axpby.rtcg", {{"n", 1000}}), large = load("axpby.rtcg", {{"n", 1 << 24}});
  EXPECT_GT(searchWorkEstimate(large.bound, 32, kDefaultReferenceMaxFlops),
            searchWorkEstimate(small.bound, 32, kDefaultReferenceMaxFlops));
  EXPECT_GT(searchWorkEstimate(large.bound, 64, kDefaultReferenceMaxFlops),
            searchWorkEstimate(large.bound, 32, kDefaultReferenceMaxFlops));
  // The reference: a sampled one costs about the limit whatever the kernel's size; one that cannot
  // be sampled (matmul_flat: c not provably written everywhere) runs whole, and ranks above the
  // sampled product of the same size and outputs.
  Loaded product = load("matmul.rtcg", {{"n", 2048}}), flat = load("matmul_flat.rtcg", {{"n", 2048}});
  EXPECT_EQ(writtenElements(product.bound), writtenElements(flat.bound));
  ASSERT_TRUE(samplingObstacle(product.bound).empty());
  ASSERT_FALSE(samplingObstacle(flat.bound).empty());
  EXPECT_GT(searchWorkEstimate(flat.bound, 32, kDefaultReferenceMaxFlops),
            2 * searchWorkEstimate(product.bound, 32, kDefaultReferenceMaxFlops));
  // Apart from the outputs (what grows with the candidates), a sampled reference weighs the same
  // at n = 2048 and 4096; without the limit, the whole reference weighs by its operations.
  Loaded bigger = load("matmul.rtcg", {{"n", 4096}});
  auto fixedPart = [](const Kernel& k, double limit) {
    return 2 * searchWorkEstimate(k, 1, limit) - searchWorkEstimate(k, 2, limit);
  };
  EXPECT_NEAR(fixedPart(bigger.bound, kDefaultReferenceMaxFlops), fixedPart(product.bound, kDefaultReferenceMaxFlops),
              1e-9);
  // The whole reference over the sampled one: in proportion to the operations beyond the limit.
  const double lim = kDefaultReferenceMaxFlops;
  const double opsP = double(arithmeticOps(product.bound)), opsB = double(arithmeticOps(bigger.bound));
  EXPECT_NEAR((fixedPart(bigger.bound, 0) - fixedPart(bigger.bound, lim)) /
                  (fixedPart(product.bound, 0) - fixedPart(product.bound, lim)),
              (opsB - lim) / (opsP - lim), 1e-6);
}

TEST(Tune, UnboundKernelIsAnError) {
  Loaded l = load("axpby.rtcg", {{"n", 1000}});
  Diagnostics diags;
  std::optional<Kernel> unbound = frontKernel({l.file, l.source}, "", diags);
  ASSERT_TRUE(unbound);
  EXPECT_THROW(tune(l.file, l.source, *unbound, quickOptions(4)), Error);
}

TEST(TuneGpu, AxpbyFindsAVerifiedWinner) {
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("axpby.rtcg", {{"n", 1000000}});
  int progressCalls = 0;
  TuneOptions o = quickOptions(20);
  o.progress = [&](const TuneProgress& p) {
    ++progressCalls;
    EXPECT_LE(p.measured, p.generated);
  };
  TuneResult r = tune(l.file, l.source, l.bound, o);
  expectVerifiedWinner(r);
  EXPECT_EQ(progressCalls, int(r.candidates.size()));
  EXPECT_FALSE(r.bestOverTime.empty());
}

TEST(TuneGpu, ResumedSearchMeasuresOnlyWhatTheFirstLeft) {
  // An exhaustive search over two runs: the first measures a budgeted sample, the second
  // (resumed, no budget) the rest of the space and the baseline again, nothing twice.
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("axpby.rtcg", {{"n", 1000000}});
  const std::string db = ::testing::TempDir() + "rtcg-resume-test.sqlite";
  std::remove(db.c_str());
  TuneOptions first = quickOptions(12);
  first.dbPath = db;
  TuneResult a = tune(l.file, l.source, l.bound, first);
  expectVerifiedWinner(a);
  TuneOptions rest = quickOptions(0);
  rest.dbPath = db;
  rest.resume = true;
  TuneResult b = tune(l.file, l.source, l.bound, rest);
  expectVerifiedWinner(b);
  EXPECT_EQ(b.resumedSkipped, int64_t(a.candidates.size()) - 1);
  std::set<std::string> firstRun;
  for (const CandidateRecord& c : a.candidates) firstRun.insert(c.schedule);
  ASSERT_FALSE(b.candidates.empty());
  EXPECT_EQ(b.candidates.front().schedule, a.candidates.front().schedule);  // the baseline, again
  for (size_t c = 1; c < b.candidates.size(); ++c)
    EXPECT_EQ(firstRun.count(b.candidates[c].schedule), 0u) << b.candidates[c].schedule;
  // Together they measured the whole space.
  SpaceOptions all;
  setSpaceDevice(all, cuda::Device(0).properties());
  Space space = enumerateSchedules(l.bound, all);
  for (const CandidateRecord& c : b.candidates) firstRun.insert(c.schedule);
  for (const Candidate& c : space.candidates) EXPECT_EQ(firstRun.count(c.text), 1u) << c.text;
  ASSERT_TRUE(b.bestOfAllSearches.has_value());
  EXPECT_LE(b.bestOfAllSearches->medianMs, std::min(a.best->medianMs, b.best->medianMs));
  std::remove(db.c_str());
}

TEST(TuneGpu, DevicesMustExistBeListedOnceAndMatch) {
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("axpby.rtcg", {{"n", 1000}});
  TuneOptions o = quickOptions(4);
  o.deviceOrdinals = {};
  EXPECT_THROW(tune(l.file, l.source, l.bound, o), Error);
  o.deviceOrdinals = {0, 0};
  EXPECT_THROW(tune(l.file, l.source, l.bound, o), Error);
  o.deviceOrdinals = {0, cuda::Device::count()};
  EXPECT_THROW(tune(l.file, l.source, l.bound, o), Error);
}

TEST(TuneGpu, SearchSharedByEveryDeviceMeasuresEachCandidateOnce) {
  // Both devices' workers take candidates as they come; every candidate is measured once, the
  // default schedule first, and the search's counts add up as on one device.
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  if (cuda::Device::count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  Loaded l = load("matmul.rtcg", {{"n", 256}});
  TuneOptions o = quickOptions(36);
  o.deviceOrdinals = {0, 1};
  int progressCalls = 0;
  o.progress = [&](const TuneProgress&) { ++progressCalls; };
  TuneResult r = tune(l.file, l.source, l.bound, o);
  expectVerifiedWinner(r);
  EXPECT_EQ(r.devices, 2);
  EXPECT_EQ(int64_t(r.candidates.size()), r.generated);
  EXPECT_EQ(progressCalls, int(r.candidates.size()));
  EXPECT_EQ(r.candidates.front().schedule, r.defaultSchedule->schedule);
  std::set<std::string> distinct;
  for (const CandidateRecord& c : r.candidates) EXPECT_TRUE(distinct.insert(c.schedule).second) << c.schedule;
  EXPECT_EQ(r.verified + r.skipped + r.compileFailed, int64_t(r.candidates.size()));
}

TEST(TuneGpu, MatmulFindsAVerifiedWinner) {
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("matmul.rtcg", {{"n", 128}});
  TuneResult r = tune(l.file, l.source, l.bound, quickOptions(24));
  expectVerifiedWinner(r);
  // A third of the budget goes to refinement rounds around the fastest measured candidates.
  EXPECT_EQ(r.refined, 8);
  EXPECT_EQ(r.generated, 24);
  EXPECT_EQ(int64_t(r.candidates.size()), r.generated);
  std::set<std::string> distinct;
  for (const CandidateRecord& c : r.candidates) EXPECT_TRUE(distinct.insert(c.schedule).second) << c.schedule;
}

TEST(TuneGpu, DotOfTwoToTheTwentySixVerifiesAWinnerSplitAcrossBlocks) {
  // A dot product of 2^26 (512 MiB read): the default schedule (measured first, the baseline the
  // time limit counts after) and the winner both split the reduction across blocks (a grid part
  // on i, partials in global scratch). What is asserted is behaviour: the split forms verify and
  // the winner is the fastest verified candidate; how much faster is a benchmark's business.
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("dot.rtcg", {{"n", int64_t(1) << 26}});
  TuneOptions o = quickOptions(12);
  o.timeLimitSeconds = 5;
  TuneResult r = tune(l.file, l.source, l.bound, o);
  expectVerifiedWinner(r);
  EXPECT_GE(r.verified, 6);
  EXPECT_NE(r.defaultSchedule->schedule.find("grid.x"), std::string::npos) << r.defaultSchedule->schedule;
  EXPECT_NE(r.best->schedule.find("grid.x"), std::string::npos) << r.best->schedule;
}

TEST(TuneGpu, PlantedWrongFaultingAndHangingCandidatesAreSurvived) {
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  Loaded l = load("axpby.rtcg", {{"n", 100000}});
  TuneOptions o = quickOptions(4);
  o.candidateTimeoutSeconds = 3;
  o.compileThreads = 1;  // planted candidates then complete in order: fault, hang, wrong, copy
  o.extraCandidates = {
      {"planted: faults", "", appendToKernel("if (threadIdx.x == 0) { *(volatile float*)(0x10) = 1.0f; }")},
      {"planted: hangs", "", appendToKernel("for (;;) { __nanosleep(1000); }")},
      {"planted: wrong z[0]", "", appendToKernel("if (blockIdx.x == 0 && threadIdx.x == 0) { z[0] = 0.0f; }")},
      {"planted: correct", "", appendToKernel("")},
  };
  TuneResult r = tune(l.file, l.source, l.bound, o);
  const CandidateRecord* fault = find(r, "planted: faults");
  const CandidateRecord* hang = find(r, "planted: hangs");
  const CandidateRecord* wrong = find(r, "planted: wrong z[0]");
  const CandidateRecord* correct = find(r, "planted: correct");
  ASSERT_TRUE(fault && hang && wrong && correct);
  EXPECT_EQ(fault->status, CandidateStatus::Faulted) << fault->reason;
  EXPECT_NE(fault->reason.find("ILLEGAL_ADDRESS"), std::string::npos) << fault->reason;
  EXPECT_EQ(hang->status, CandidateStatus::TimedOut) << hang->reason;
  EXPECT_EQ(wrong->status, CandidateStatus::WrongResult) << wrong->reason;
  EXPECT_NE(wrong->reason.find("z: rel"), std::string::npos) << wrong->reason;
  EXPECT_EQ(correct->status, CandidateStatus::Verified) << correct->reason;  // the search went on
  EXPECT_GE(r.workerRestarts, 2);
  ASSERT_TRUE(r.best);
  EXPECT_NE(r.best->schedule, "planted: wrong z[0]");
  EXPECT_EQ(r.faulted, 1);
  EXPECT_EQ(r.timedOut, 1);
  EXPECT_EQ(r.wrong, 1);
}

TEST(TuneGpu, SampledReferenceCatchesWrongAndUnwrittenOutputs) {
  // Over the (lowered) reference limit, candidates are checked on 64 of 512 rows; a candidate that
  // leaves an element of an unchecked row unwritten still fails. Every thread writes the planted
  // value after its own stores, so the element ends with it whichever thread owns it.
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  const int64_t n = 512;
  Loaded l = load("matmul.rtcg", {{"n", n}});
  TuneOptions o = quickOptions(4);
  o.referenceMaxFlops = 1e7;  // matmul 512 is 2.7e8
  std::vector<int64_t> rows = sampleOuterValues(0, n, kMinReferenceSample, o.seed);  // the tuner's sample
  int64_t unchecked = 1;
  while (std::binary_search(rows.begin(), rows.end(), unchecked)) ++unchecked;
  o.extraCandidates = {
      {"planted: wrong c[0]", "", appendToKernel("c[0] = 0.0f;")},
      {"planted: unwritten unchecked element", "",
       appendToKernel(fmt::format("c[{}] = __int_as_float(0x7fc00000);", unchecked * n + 3))},
      {"planted: correct", "", appendToKernel("")},
  };
  TuneResult r = tune(l.file, l.source, l.bound, o);
  EXPECT_TRUE(r.referenceSampled) << r.reference;
  EXPECT_EQ(r.reference, fmt::format("sampled: 64 of {} outer loop values, {} of {} output elements", n, 64 * n, n * n));
  EXPECT_NE(r.settings.find("\"reference\":\"sampled: 64 of 512"), std::string::npos) << r.settings;
  const CandidateRecord* wrong = find(r, "planted: wrong c[0]");
  const CandidateRecord* unwritten = find(r, "planted: unwritten unchecked element");
  const CandidateRecord* correct = find(r, "planted: correct");
  ASSERT_TRUE(wrong && unwritten && correct);
  EXPECT_EQ(wrong->status, CandidateStatus::WrongResult) << wrong->reason;
  EXPECT_EQ(unwritten->status, CandidateStatus::WrongResult) << unwritten->reason;
  EXPECT_NE(unwritten->reason.find("unwritten 1 of"), std::string::npos) << unwritten->reason;
  EXPECT_EQ(correct->status, CandidateStatus::Verified) << correct->reason;
  EXPECT_EQ(r.wrong, 2) << "an emitted candidate failed on the sampled reference";
  EXPECT_EQ(r.faulted, 0);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->reason, "");
  EXPECT_EQ(r.best->status, CandidateStatus::Verified);
}
