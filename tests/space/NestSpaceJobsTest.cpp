// NestSpace::runJobs (schedule/space/NestSpace.h): jobs run on shards on several threads give the
// space that running them in order gives: the shards merged in job order, a variant that an
// earlier job generated dropped, and a job whose add answered otherwise than it would have in
// order (true for an earlier job's variant) run again in order.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/Space.h"
#include "schedule/space/NestSpace.h"
#include "support/Diagnostics.h"

using namespace rtcg;
using namespace rtcg::space;

namespace {

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
})";

Kernel boundMatmul() {
  Diagnostics diags;
  auto prog = parseProgram("matmul.rtcg", kMatmul, diags);
  EXPECT_TRUE(prog.has_value());
  auto bound = bindSizes(prog->kernels.front(), {{"n", 256}}, diags);
  EXPECT_TRUE(bound.has_value());
  return *bound;
}

NestSchedule nestOf(const std::string& text) {
  auto parsed = parseSchedule(text);
  EXPECT_TRUE(parsed.ok()) << text;
  return parsed.schedule->nests.at(0);
}

struct Outcome {
  std::vector<std::string> kept, pruned;
  int64_t enumerated = 0;
  bool operator==(const Outcome&) const = default;
};

Outcome runOn(int threads, const std::vector<std::function<void(NestSpace&)>>& jobs) {
  static const Kernel k = boundMatmul();
  SpaceOptions o;
  o.threads = threads;
  const Schedule defaults = defaultSchedule(k, o.limits);
  NestSpace s(k, 0, o, defaults);
  s.runJobs(jobs.size(), [&](NestSpace& shard, size_t i) { jobs[i](shard); });
  Outcome out;
  for (const NestCandidate& c : s.kept) out.kept.push_back(c.text);
  for (const PrunedCandidate& p : s.pruned) out.pruned.push_back(p.text + ": " + p.reason);
  out.enumerated = s.enumerated;
  return out;
}

}  // namespace

TEST(NestSpaceJobs, ShardsMergeInJobOrderAsIfRunInOrder) {
  // Legal schedules of the nest (the space's own), and one with too many threads per block.
  SpaceOptions o;
  o.threads = 1;
  const Space space = enumerateSchedules(boundMatmul(), o);
  ASSERT_GE(space.candidates.size(), 8u);
  std::vector<NestSchedule> legal;
  for (size_t i = 0; i < 8; ++i) legal.push_back(space.candidates[i].schedule.nests.at(0));
  const NestSchedule tooMany = nestOf("i: grid.y, thread.y 64; j: grid.x, thread.x 64; k: serial");

  const std::vector<std::function<void(NestSpace&)>> jobs = {
      [&](NestSpace& s) { s.add(legal[0], Group::Plain), s.add(legal[1], Group::Plain); },
      // Legal[1] is job 0's: in order, add answers false and legal[2] is not generated. Its
      // shard answers true: the job runs again in order.
      [&](NestSpace& s) {
        if (s.add(legal[1], Group::Plain)) s.add(legal[2], Group::Plain);
      },
      [&](NestSpace& s) { s.add(tooMany, Group::Plain), s.add(legal[3], Group::Plain); },
      // Legal[3] again (job 2's, dropped) between two of its own.
      [&](NestSpace& s) { s.add(legal[4], Group::Plain), s.add(legal[3], Group::Plain), s.add(legal[5], Group::Plain); },
      [&](NestSpace& s) { s.add(legal[7], Group::Plain), s.add(legal[6], Group::Plain); },
  };
  const Outcome inOrder = runOn(1, jobs);
  EXPECT_EQ(inOrder.kept, (std::vector<std::string>{space.candidates[0].text, space.candidates[1].text,
                                                    space.candidates[3].text, space.candidates[4].text,
                                                    space.candidates[5].text, space.candidates[7].text,
                                                    space.candidates[6].text}));
  ASSERT_EQ(inOrder.pruned.size(), 1u);
  EXPECT_EQ(inOrder.enumerated, 8);
  for (int threads : {2, 3, 5}) EXPECT_EQ(runOn(threads, jobs), inOrder) << threads << " threads";
}

TEST(NestSpaceJobs, AJobThatThrowsThrowsInOrder) {
  SpaceOptions o;
  o.threads = 1;
  const Space space = enumerateSchedules(boundMatmul(), o);
  ASSERT_GE(space.candidates.size(), 2u);
  const NestSchedule first = space.candidates[0].schedule.nests.at(0), second = space.candidates[1].schedule.nests.at(0);
  const std::vector<std::function<void(NestSpace&)>> jobs = {
      [&](NestSpace& s) { s.add(first, Group::Plain); },
      [&](NestSpace&) { throw std::runtime_error("job 1"); },
      [&](NestSpace& s) { s.add(second, Group::Plain); },
  };
  for (int threads : {1, 3}) EXPECT_THROW(runOn(threads, jobs), std::runtime_error) << threads << " threads";
}
