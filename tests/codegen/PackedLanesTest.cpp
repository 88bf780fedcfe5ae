// The packed-lanes family (schedule/space/PackedFamily.cpp): the innermost short parallel indices
// whole on thread.x, .y, .z. The space offers it where the innermost parallel index is shorter
// than a warp, the model sees a warp's stores as one run across the packed axes, and every
// candidate of the family computes the reference's numbers in the host emulation.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"

namespace rtcg {
namespace {

using testing::checkOnHost;
using testing::exampleKernel;

Kernel sumfact(int64_t elements, int64_t p) { return exampleKernel("sumfact.rtcg", "sumfact", {{"E", elements}, {"p", p}}); }

bool packed(const std::string& text) { return text.find("; b: thread.y; i: thread.x;") != std::string::npos; }

}  // namespace

// Sum factorisation at p = 5 (E for 256 MiB): the packed placements lead the SIMT candidates
// (measured on an H200: `e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial,
// unroll 5; shared: A` 0.098 ms against 0.2015 for the best of a search without them:
// docs/bench.md, session 41), and a reduction of 5 is also unrolled whole.
TEST(PackedLanes, SpaceOffersThemAndTheModelRanksThemFirst) {
  const Kernel k = sumfact(268435, 5);
  ASSERT_FALSE(k.nests.empty());
  SpaceOptions o;
  o.maxCandidates = 48;
  Space space = enumerateSchedules(k, o);
  const Candidate* firstSimt = nullptr;
  bool wholeUnroll = false;
  for (const Candidate& c : space.candidates) {
    if (!firstSimt && c.text.find("mma:") == std::string::npos) firstSimt = &c;
    wholeUnroll = wholeUnroll || (packed(c.text) && c.text.find("j: serial, unroll 5") != std::string::npos);
  }
  ASSERT_NE(firstSimt, nullptr);
  EXPECT_TRUE(packed(firstSimt->text)) << firstSimt->text;
  EXPECT_NE(firstSimt->text.find("a: thread.z"), std::string::npos) << firstSimt->text;
  Space all = enumerateSchedules(k, SpaceOptions{});
  for (const Candidate& c : all.candidates) wholeUnroll = wholeUnroll || (packed(c.text) && c.text.find("unroll 5") != std::string::npos);
  EXPECT_TRUE(wholeUnroll);

  // The model: i, b, a whole on x, y, z store runs of 32 neighbours; with a on thread.y and b on
  // thread.z the run ends after i's 5 (20-byte runs, each sector written by several warps).
  NestModel model(k, 0);
  auto estimate = [&](const std::string& text) { return model.estimate(parseSchedule(text).schedule->nests[0], o.device); };
  const NestEstimate runs = estimate("e: grid.x, serial 4; a: thread.z; b: thread.y; i: thread.x; j: serial, unroll 5");
  const NestEstimate broken = estimate("e: grid.x, serial 4; b: thread.z; a: thread.y; i: thread.x; j: serial, unroll 5");
  EXPECT_LT(runs.bytes, broken.bytes);
  EXPECT_LT(runs.seconds, broken.seconds);

  // Not offered where the innermost index fills a warp, or for fewer than three parallel indices.
  Space dg = enumerateSchedules(exampleKernel("dg_diff.rtcg", "dg_diff", {{"K", 1000}, {"Np", 35}}), o);
  for (const Candidate& c : dg.candidates) EXPECT_EQ(c.text.find("thread.z"), std::string::npos) << c.text;
}

// Every packed candidate against the reference: p = 5 (three packed, 125 threads) and 6 (two
// packed beside thread.z, 36 threads, the element's a serial or a register tile) with E = 7 and 5 (neither serial 4 nor thread.z 2 or 4
// divides them), reductions of 5 and 6 (unroll 4 divides neither), and batched products of
// 6 x 6 matrices (nb = 5).
TEST(HostEmulation, PackedLanesMatchTheReference) {
  struct Case {
    Kernel k;
    std::string pattern;
    bool registers;  // two packed beside a middle index, which also runs as a register tile
  };
  const Case cases[] = {
      {sumfact(7, 5), "; b: thread.y; i: thread.x;", false},
      {sumfact(5, 6), "; b: thread.y; i: thread.x;", true},
      {exampleKernel("batched_matmul.rtcg", "batched_matmul", {{"nb", 5}, {"n", 6}}), "; i: thread.y; j: thread.x;", false},
  };
  for (const Case& c : cases) {
    ASSERT_FALSE(c.k.nests.empty());
    SpaceOptions o;
    o.maxCandidates = 0;
    o.device.multiprocessors = 4;  // so that a few blocks are enough to be offered
    Space space = enumerateSchedules(c.k, o);
    int checked = 0, registers = 0;
    for (const Candidate& cand : space.candidates) {
      if (cand.text.find(c.pattern) == std::string::npos) continue;
      EXPECT_EQ(checkOnHost(c.k, cand.text, 1e-5), "") << c.k.name << ": " << cand.text;
      ++checked;
      registers += cand.text.find("a: reg;") != std::string::npos;
    }
    EXPECT_GE(checked, 4) << c.k.name;
    EXPECT_EQ(registers > 0, c.registers) << c.k.name;
    std::printf("%s: %d packed candidates checked\n", c.k.name.c_str(), checked);
  }
}

}  // namespace rtcg
