// A search's result as JSON and back (tune/ResultJson.h: how an MPI rank hands its search to rank
// 0): every field survives, and what recordSearch writes from the copy is what the database reads
// back; malformed JSON is an rtcg::Error naming what is wrong.
#include <gtest/gtest.h>

#include "TempDir.h"
#include "support/Error.h"
#include "tune/ResultJson.h"
#include "tune/TuningDb.h"

namespace rtcg {
namespace {

CandidateRecord record(const std::string& schedule, CandidateStatus status, double ms) {
  CandidateRecord c;
  c.schedule = schedule;
  c.status = status;
  c.reason = status == CandidateStatus::Verified ? "" : "faulted: illegal address";
  c.medianMs = ms;
  c.relativeError = 1.5e-7;
  c.registers = 40, c.spillBytes = 8, c.sharedBytes = 4096;
  c.occupancy = 0.75, c.gflops = 1234.5, c.gbytes = 321.25, c.compileMs = 88;
  c.recordedAt = 1.7e9;
  return c;
}

TuneResult sample() {
  TuneResult r;
  r.key = {"0123456789abcdef", "matmul", "n=512", "NVIDIA H200", "sm_90", 13000, "13.0", "0.1.0", 132};
  r.candidates = {record("i: grid.x, thread.x 256", CandidateStatus::Verified, 0.5),
                  record("i: grid.x, thread.x 64", CandidateStatus::Faulted, 0),
                  record("i: serial, reg 4, thread.x 250", CandidateStatus::Verified, 0.25)};
  r.completedSeconds = {0.5, 1.25, 2};
  r.best = r.candidates[2];
  r.defaultSchedule = r.candidates[0];
  r.precision = Precision::Tf32x3;
  r.enumerated = 100, r.generated = 3, r.pruned = 40, r.sampledOut = 57, r.verified = 2, r.faulted = 1;
  r.timeLimitReached = true;
  r.workerRestarts = 1, r.devices = 4, r.compileThreads = 16;
  r.compiledOn = {{"local", 8, 2}, {"rank 1", 8, 1}};
  r.wallSeconds = 12.5, r.compileSeconds = 3.25, r.referenceSeconds = 1.5;
  r.reference = "sampled: 64 of 512 outer loop values";
  r.referenceSampled = true;
  r.candidatesPerSecond = 42;
  r.bestOverTime = {{0.5, 0.5}, {2, 0.25}};
  r.floatOps = 268435456, r.minimalBytes = 3145728;
  r.ops = {268435456, 0};
  r.peakBandwidthGBs = 4800, r.peakGflops = 66908;
  r.arithmetic = "fp32";
  r.settings = R"({"maxCandidates":3})";
  return r;
}

TEST(ResultJson, EveryFieldRoundTrips) {
  TuneResult r = sample();
  TuneResult back = tuneResultFromJson(nlohmann::json::parse(tuneResultToJson(r).dump()));
  EXPECT_EQ(back.key, r.key);
  EXPECT_EQ(back.candidates, r.candidates);
  EXPECT_EQ(back.completedSeconds, r.completedSeconds);
  EXPECT_EQ(back.best, r.best);
  EXPECT_EQ(back.defaultSchedule, r.defaultSchedule);
  EXPECT_FALSE(back.bestOfAllSearches);
  EXPECT_EQ(back.precision, Precision::Tf32x3);
  EXPECT_EQ(back.enumerated, 100);
  EXPECT_EQ(back.sampledOut, 57);
  EXPECT_EQ(back.faulted, 1);
  EXPECT_TRUE(back.timeLimitReached);
  EXPECT_EQ(back.devices, 4);
  ASSERT_EQ(back.compiledOn.size(), 2u);
  EXPECT_EQ(back.compiledOn[1].host, "rank 1");
  EXPECT_EQ(back.compiledOn[1].slots, 8);
  EXPECT_EQ(back.compiledOn[1].compiled, 1);
  EXPECT_EQ(back.wallSeconds, 12.5);
  EXPECT_EQ(back.reference, r.reference);
  EXPECT_EQ(back.bestOverTime, r.bestOverTime);
  EXPECT_EQ(back.floatOps, r.floatOps);
  EXPECT_EQ(back.ops.fp32, r.ops.fp32);
  EXPECT_EQ(back.peakGflops, r.peakGflops);
  EXPECT_EQ(back.settings, r.settings);
}

TEST(ResultJson, RecordSearchWritesWhatWasSent) {
  testing::TempDir dir;
  TuningDb db(dir.file("t.sqlite"));
  TuneResult r = tuneResultFromJson(tuneResultToJson(sample()));
  int64_t id = recordSearch(db, r);
  EXPECT_GT(id, 0);
  std::vector<CandidateRecord> stored = db.candidates(r.key);
  ASSERT_EQ(stored.size(), r.candidates.size());
  for (size_t i = 0; i < stored.size(); ++i) {
    CandidateRecord want = r.candidates[i];
    want.searchId = id;
    EXPECT_EQ(stored[i], want) << i;
  }
  EXPECT_EQ(db.finishedSearches(r.key), 1);
  EXPECT_EQ(db.best(r.key)->schedule, "i: serial, reg 4, thread.x 250");
}

TEST(ResultJson, MalformedResultsAreErrors) {
  nlohmann::json j = tuneResultToJson(sample());
  j["candidates"][0]["status"] = "great";
  EXPECT_THROW(tuneResultFromJson(j), Error);
  j = tuneResultToJson(sample());
  j.erase("wallSeconds");
  try {
    tuneResultFromJson(j);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("wallSeconds"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rtcg
