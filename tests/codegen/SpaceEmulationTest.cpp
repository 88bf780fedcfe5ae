// The candidates a search would measure, in the host emulation: the DG kernels, the batched and
// dense products and the integer and 16-bit ones, under each arithmetic the space offers them. The
// space is an sm_90 model's with 2 multiprocessors, so that modest sizes fill it and the forms of a
// large run appear (persistent, pingpong, resident, the producer warpgroup); the sizes are ones no
// tile divides and, for the f64 DG rows, ones the tiles divide (their copies without bounds). Every
// candidate the search's sample of 48 takes must match the reference: the tuner would discard a
// wrong one, but `--schedule`, the API and the database hand schedules to users.
//
// The default run checks a share of each space's sample: its best-predicted candidate and each
// candidate that carries a word of the schedule language no checked candidate carried yet (so
// every clause, placement and option in any sample runs somewhere). RTCG_FULL_TESTS=1 checks every
// candidate of every sample (about 700, 15-25 minutes on two cores).
#include <gtest/gtest.h>

#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/Space.h"
#include "FullTests.h"
#include "SpaceOptionsFor.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// DG differentiation in f64 on D stacked (bench/suite/Workloads.cpp's kDgDiffStacked64).
const char* kDgDiff64 = R"(kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
})";

struct SpaceCase {
  std::string label;
  std::string file;  // of examples/ (its first kernel); empty: kDgDiff64
  SizeBindings sizes;
  Precision precision;
  double tolerance;
  // The tiles divide the sizes (copies without bounds): its candidates' words are met apart.
  bool divides = false;
};

std::vector<SpaceCase> cases() {
  return {
      {"dg_diff tf32x3 Np 20", "dg_diff.rtcg", {{"K", 517}, {"Np", 20}}, Precision::Tf32x3, 2e-5},
      {"dg_diff tf32x3 Np 35", "dg_diff.rtcg", {{"K", 389}, {"Np", 35}}, Precision::Tf32x3, 2e-5},
      {"dg_diff ieee Np 20", "dg_diff.rtcg", {{"K", 389}, {"Np", 20}}, Precision::Ieee, 1e-5},
      {"dg_diff_stacked tf32x3 Np 56", "dg_diff_stacked.rtcg", {{"K", 259}, {"Np", 56}}, Precision::Tf32x3, 2e-5},
      {"dg_lift tf32x3 Np 20", "dg_lift.rtcg", {{"K", 517}, {"Np", 20}, {"Nfp", 10}}, Precision::Tf32x3, 2e-5},
      // K at least 64 times D's rows: the kept-D persistent forms (space/MmaFamily.cpp keptOperand).
      {"dg_diff f64 Np 20", "", {{"K", 3851}, {"Np", 20}}, Precision::Ieee, 1e-12},
      {"dg_diff f64 Np 20, K divides", "", {{"K", 3840}, {"Np", 20}}, Precision::Ieee, 1e-12, true},
      {"dg_diff f64 Np 56", "", {{"K", 10757}, {"Np", 56}}, Precision::Ieee, 1e-12},
      {"dg_diff f64 Np 56, K divides", "", {{"K", 10752}, {"Np", 56}}, Precision::Ieee, 1e-12, true},
      {"batched tf32x3", "batched_matmul.rtcg", {{"nb", 203}, {"n", 16}}, Precision::Tf32x3, 2e-5},
      {"sumfact tf32x3 p 5", "sumfact.rtcg", {{"E", 203}, {"p", 5}}, Precision::Tf32x3, 2e-5},
      {"matmul tf32x3", "matmul.rtcg", {{"n", 203}}, Precision::Tf32x3, 2e-5},
      {"dgemm", "dgemm.rtcg", {{"n", 136}}, Precision::Ieee, 1e-12},
      {"gemm_bf16", "gemm_bf16.rtcg", {{"n", 200}}, Precision::Ieee, 1e-5},
      {"gemm_i8", "gemm_i8.rtcg", {{"m", 100}, {"n", 72}, {"K", 200}}, Precision::Ieee, 0},
  };
}

// The words of a schedule's text (clause names, placements, options), without its numbers.
std::set<std::string> wordsOf(const std::string& text) {
  std::set<std::string> out;
  std::string word;
  for (char c : text + " ") {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::isalpha(u) || c == '_' || c == '.' || (!word.empty() && std::isdigit(u))) {
      word += c;
      continue;
    }
    if (!word.empty()) out.insert(word);
    word.clear();
  }
  return out;
}

}  // namespace

TEST(SpaceEmulation, TheSearchsCandidatesMatchTheReference) {
  std::set<std::string> met;  // words of the checked candidates
  int checked = 0;
  for (const SpaceCase& c : cases()) {
    const Kernel k = c.file.empty() ? fromSource(kDgDiff64, c.sizes) : exampleKernel(c.file, "", c.sizes);
    SpaceOptions o = spaceOptionsFor("sm_90", c.precision, 2);
    o.maxCandidates = 48;
    o.threads = 1;
    const Space space = enumerateSchedules(k, o);
    ASSERT_FALSE(space.candidates.empty()) << c.label;
    int here = 0;
    for (size_t i = 0; i < space.candidates.size(); ++i) {
      const std::string& text = space.candidates[i].text;
      bool check = rtcgtest::fullTests() || i == 0;
      for (const std::string& w : wordsOf(text)) check |= met.insert(c.divides ? "divides/" + w : w).second;
      if (!check) continue;
      EXPECT_EQ(checkOnHost(k, text, c.tolerance, o.limits), "") << c.label << ": " << text;
      ++here, ++checked;
    }
    std::printf("%s: %d of %zu candidates\n", c.label.c_str(), here, space.candidates.size());
  }
  // The forms of a large run and the mma options are among them (a space that stops offering one
  // here must say so by changing this test).
  for (const char* w : {"wgmma", "persistent", "pingpong", "resident", "producer", "tma", "swizzle", "fragments",
                        "streaming", "m16n8k4", "m16n8k8", "m16n8k16", "tf32x3", "f64", "bf16", "s8"})
    EXPECT_TRUE(met.count(w)) << w << ": in no candidate checked";
  EXPECT_GT(checked, 0);
}
