// How a search queues the database's winners at other sizes (tune/WarmStart.h) ahead of its sample.
#include "tune/WarmStart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "frontend/Frontend.h"
#include "ir/Bind.h"

using namespace rtcg;

namespace {

Kernel boundMatmul(int64_t n) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/matmul.rtcg");
  std::stringstream ss;
  ss << in.rdbuf();
  Diagnostics diags;
  std::optional<Program> prog = parseProgram("matmul.rtcg", ss.str(), diags);
  EXPECT_TRUE(prog.has_value());
  std::optional<Kernel> bound = bindSizes(prog->kernels.front(), {{"n", n}}, diags);
  EXPECT_TRUE(bound.has_value());
  return *bound;
}

std::vector<std::string> labels(const std::vector<CompileJob>& jobs) {
  std::vector<std::string> out;
  for (const CompileJob& j : jobs) out.push_back(j.label);
  return out;
}

}  // namespace

TEST(WarmStart, QueuesTheWinnersAfterTheBaselineAndShortensTheSample) {
  Kernel mm = boundMatmul(256);
  SpaceOptions o;
  o.maxCandidates = 20;
  o.limits = deviceScheduleLimits(227 * 1024, 1024);
  Space space = enumerateSchedules(mm, o);
  ASSERT_EQ(space.candidates.size(), 20u);
  ASSERT_GE(space.reserve.size(), 2u);
  std::vector<Candidate> reserve = space.reserve;
  const std::string fromReserve = reserve.back().text;
  const std::string inSample = space.candidates[3].text;
  // Legal for n=256 but not in this space (k unrolled by 2, which the space does not offer).
  const std::string outsideSpace = "i: grid.y, thread.y 2, reg 2; j: grid.x, thread.x 32; k: serial, unroll 2";
  ASSERT_EQ(std::count_if(space.candidates.begin(), space.candidates.end(), [&](const Candidate& c) { return c.text == outsideSpace; }) +
                std::count_if(reserve.begin(), reserve.end(), [&](const Candidate& c) { return c.text == outsideSpace; }),
            0);
  const std::string illegal = "i: grid.y, thread.y 64; j: grid.x, thread.x 64; k: serial";  // 4096 threads
  const std::string garbage = "i: nowhere";
  Schedule dflt = defaultSchedule(mm);

  std::vector<CompileJob> jobs;
  std::vector<std::string> warmed =
      queueSearch(mm, o.limits, dflt, space.candidates, reserve, {fromReserve, inSample, outsideSpace, illegal, garbage},
                  /*budgeted=*/true, jobs);
  EXPECT_EQ(warmed, (std::vector<std::string>{fromReserve, outsideSpace}));
  std::vector<std::string> got = labels(jobs);
  ASSERT_GE(got.size(), 3u);
  EXPECT_EQ(got[0], printSchedule(dflt));
  EXPECT_EQ(got[1], fromReserve);
  EXPECT_EQ(got[2], outsideSpace);
  // The sample follows in its order, less its last two (and less the default, queued first).
  std::vector<std::string> expected{got[0], fromReserve, outsideSpace};
  for (size_t c = 0; c < 18; ++c)
    if (space.candidates[c].text != got[0]) expected.push_back(space.candidates[c].text);
  EXPECT_EQ(got, expected);
  EXPECT_EQ(std::count(got.begin(), got.end(), inSample), 1);
  // Taken out of the reserve, so refinement does not measure it again.
  EXPECT_EQ(reserve.size(), space.reserve.size() - 1);
  EXPECT_TRUE(std::none_of(reserve.begin(), reserve.end(), [&](const Candidate& c) { return c.text == fromReserve; }));

  // Without a budget (the whole space is the sample) nothing is given up.
  std::vector<CompileJob> all;
  std::vector<Candidate> noReserve;
  queueSearch(mm, o.limits, dflt, space.candidates, noReserve, {outsideSpace}, /*budgeted=*/false, all);
  const auto sampleJobs = std::count_if(space.candidates.begin(), space.candidates.end(),
                                        [&](const Candidate& c) { return c.text != got[0]; });
  EXPECT_EQ(all.size(), size_t(2 + sampleJobs));
}

TEST(WarmStart, ResumedSearchQueuesOnlyWhatNoEarlierSearchMeasured) {
  // An exhaustive search cut by its time limit, resumed: the first run measured the default, two
  // candidates and failed on a third; the second run measures the default again (its baseline)
  // and then the rest of the space in the same order.
  Kernel mm = boundMatmul(256);
  SpaceOptions o;
  o.limits = deviceScheduleLimits(227 * 1024, 1024);
  Space space = enumerateSchedules(mm, o);
  ASSERT_GE(space.candidates.size(), 10u);
  Schedule dflt = defaultSchedule(mm);
  std::vector<Candidate> reserve;
  std::vector<CompileJob> jobs;
  queueSearch(mm, o.limits, dflt, space.candidates, reserve, {}, /*budgeted=*/false, jobs);
  const std::vector<std::string> all = labels(jobs);
  ASSERT_GE(all.size(), 6u);

  auto record = [](const std::string& schedule, CandidateStatus status) {
    CandidateRecord r;
    r.schedule = schedule;
    r.status = status;
    r.medianMs = status == CandidateStatus::Verified ? 1.0 : 0.0;
    return r;
  };
  std::vector<CandidateRecord> earlier{record(all[0], CandidateStatus::Verified), record(all[1], CandidateStatus::Verified),
                                       record(all[3], CandidateStatus::Verified), record(all[4], CandidateStatus::CompileFailed),
                                       record("i: grid.y; j: grid.x; k: serial, unroll 4", CandidateStatus::Verified)};
  EXPECT_EQ(dropMeasured(jobs, earlier), 3u);
  std::vector<std::string> expected{all[0], all[2]};
  for (size_t j = 5; j < all.size(); ++j) expected.push_back(all[j]);
  EXPECT_EQ(labels(jobs), expected);
  // Nothing measured before: nothing dropped; only the baseline left: nothing to drop.
  EXPECT_EQ(dropMeasured(jobs, {}), 0u);
  std::vector<CompileJob> baselineOnly{jobs.front()};
  EXPECT_EQ(dropMeasured(baselineOnly, earlier), 0u);
  EXPECT_EQ(baselineOnly.size(), 1u);
}
