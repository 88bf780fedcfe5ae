// Golden hashes of the whole schedule space of every example at its sizes (examples/sizes.txt),
// under each precision policy and on two device models, so that a refactor of the space's
// generators (schedule/Space.cpp and its families) is proven to generate the same candidates, in
// the same order, with the same estimates, pruned entries and counts. tests/golden hashes the
// emitted CUDA of a sample; this hashes everything the space holds:
//   every kept candidate (text, score, launch shape, tile, shared bytes, occupancy, balance, bytes,
//   flops), in order; every pruned entry with its reason; the counts and the families offered.
// Spaces: the default device (sm_90) under ieee, tf32x3 and tf32 (the mma and wgmma families), and
// the sm_80 device model under tf32x3 (no wgmma, no sm_90 f64 shapes); each also sampled down to
// 100 candidates (sampling, its families and the reserve).
// RTCG_UPDATE_GOLDEN=1 rewrites space-golden.txt; RTCG_SPACE_DUMP=DIR writes each space's full
// text to DIR/<example>.<kernel>.<config>.txt for a diff against an earlier build.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "runtime/Hash.h"
#include "schedule/DeviceModels.h"
#include "schedule/Space.h"
#include "support/Diagnostics.h"
#include "FullTests.h"
#include "SpaceOptionsFor.h"

using namespace rtcg;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(RTCG_SOURCE_DIR) / "tests/space/space-golden.txt";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, SizeBindings> exampleSizes() {
  std::map<std::string, SizeBindings> out;
  std::istringstream in(readFile(fs::path(RTCG_SOURCE_DIR) / "examples/sizes.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string file, binding;
    ls >> file;
    while (ls >> binding)
      if (auto eq = binding.find('='); eq != std::string::npos)
        out[file][binding.substr(0, eq)] = std::stoll(binding.substr(eq + 1));
  }
  return out;
}

void dumpCandidate(std::string& out, const Candidate& c) {
  out += fmt::format("{:a} {} | threads {} blocks {} tile {} shared {} occupancy {:a} balance {:a} bytes {:a} flops {:a}\n",
                     c.score, c.text, c.threadsPerBlock, c.blocks, c.registerTile, c.sharedBytes, c.occupancy,
                     c.balance, c.estimatedBytes, c.estimatedFlops);
}

// Everything the space holds, as text.
std::string dumpSpace(const Space& s) {
  std::string out = fmt::format("enumerated {} sampled-out {} shared {} split {} cross-block {}\n", s.enumerated,
                                s.sampledOut, s.sharedStaging, s.splitReductions, s.crossBlockReductions);
  out += fmt::format("candidates {}\n", s.candidates.size());
  for (const Candidate& c : s.candidates) dumpCandidate(out, c);
  out += fmt::format("reserve {}\n", s.reserve.size());
  for (const Candidate& c : s.reserve) dumpCandidate(out, c);
  out += fmt::format("pruned {}\n", s.pruned.size());
  for (const PrunedCandidate& p : s.pruned) out += p.text + "\t" + p.reason + "\n";
  return out;
}

struct Config {
  const char* name;
  const char* arch;
  Precision precision;
  int64_t maxCandidates;
};
// By default (tests/FullTests.h) every example is hashed under sm_90-ieee, sm_90-tf32x3 and
// sm_80-tf32x3, and under one of the other two in turn (sm_90-tf32, whose spaces differ from
// tf32x3's in the mma arithmetic only, and the sample of 100, whose sampling tests/golden's
// cuda-sample and dry-run hashes also cover): each of those two for every other example, the
// enumerations of whole spaces being most of the suite's time. RTCG_FULL_TESTS=1 (and
// RTCG_UPDATE_GOLDEN=1) hash every example under all five.
const Config kConfigs[] = {
    {"sm_90-ieee", "sm_90", Precision::Ieee, 0},         {"sm_90-tf32x3", "sm_90", Precision::Tf32x3, 0},
    {"sm_90-tf32", "sm_90", Precision::Tf32, 0},         {"sm_80-tf32x3", "sm_80", Precision::Tf32x3, 0},
    {"sm_90-tf32x3-sample100", "sm_90", Precision::Tf32x3, 100},
};

// "<file>/<kernel> <config>" -> "<hash> <candidates> <pruned>", computed now.
std::map<std::string, std::string> computeHashes() {
  std::map<std::string, std::string> out;
  const char* dumpDir = std::getenv("RTCG_SPACE_DUMP");
  if (dumpDir) fs::create_directories(dumpDir);
  const char* update = std::getenv("RTCG_UPDATE_GOLDEN");
  const bool all = rtcgtest::fullTests() || (update && std::string(update) == "1");
  size_t turn = 0;  // which of the two alternating configurations this kernel gets by default
  for (const auto& [file, sizes] : exampleSizes()) {
    const std::string src = readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / file);
    Diagnostics diags;
    auto prog = parseProgram(file, src, diags);
    EXPECT_TRUE(prog.has_value()) << file;
    if (!prog) continue;
    for (const Kernel& k : prog->kernels) {
      auto bound = bindSizes(k, sizes, diags);
      EXPECT_TRUE(bound.has_value()) << file << "/" << k.name;
      if (!bound) continue;
      ++turn;
      for (const Config& cfg : kConfigs) {
        const std::string name = cfg.name;
        if (!all && ((name == "sm_90-tf32" && turn % 2 == 0) || (name == "sm_90-tf32x3-sample100" && turn % 2 == 1)))
          continue;
        SpaceOptions o = rtcg::testing::spaceOptionsFor(cfg.arch, cfg.precision);
        o.maxCandidates = cfg.maxCandidates;
        const Space space = enumerateSchedules(*bound, o);
        const std::string text = dumpSpace(space);
        if (dumpDir)
          std::ofstream(fs::path(dumpDir) / (file + "." + k.name + "." + cfg.name + ".txt"), std::ios::binary) << text;
        out[file + "/" + k.name + " " + cfg.name] = fmt::format("{} {} {}", hash128(text).hex(),
                                                                space.candidates.size(), space.pruned.size());
      }
    }
  }
  return out;
}

}  // namespace

TEST(SpaceGolden, EverySpaceOfEveryExampleIsUnchanged) {
  const std::map<std::string, std::string> now = computeHashes();
  ASSERT_GE(now.size(), 100u);
  std::string text = "# Golden hashes of whole spaces (tests/space/SpaceGoldenTest.cpp): "
                     "<example>/<kernel> <config> <hash> <candidates> <pruned>\n";
  for (const auto& [key, hash] : now) text += key + " " + hash + "\n";
  if (const char* u = std::getenv("RTCG_UPDATE_GOLDEN"); u && std::string(u) == "1") {
    std::ofstream(kGolden, std::ios::binary) << text;
    GTEST_SKIP() << "rewrote " << kGolden;
  }
  std::map<std::string, std::string> golden;
  std::istringstream in(readFile(kGolden));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto a = line.find(' ');
    auto b = line.find(' ', a + 1);
    ASSERT_NE(b, std::string::npos) << line;
    golden[line.substr(0, b)] = line.substr(b + 1);
  }
  ASSERT_FALSE(golden.empty()) << "no golden hashes in " << kGolden;
  const bool all = rtcgtest::fullTests();
  size_t compared = 0;
  for (const auto& [key, hash] : golden) {
    auto it = now.find(key);
    if (it == now.end()) {
      if (all) ADD_FAILURE() << key << ": no longer produced";  // (the default run computes a part)
      continue;
    }
    ++compared;
    EXPECT_EQ(it->second, hash) << key << " changed: the space differs from " << kGolden.filename()
                                << " (RTCG_SPACE_DUMP=DIR writes the spaces for a diff; RTCG_UPDATE_GOLDEN=1 "
                                   "rewrites the file for a deliberate change)";
  }
  for (const auto& [key, hash] : now) EXPECT_TRUE(golden.count(key)) << key << ": not in " << kGolden.filename();
  // The default run's part: four of the five configurations of every kernel.
  if (!all) EXPECT_EQ(compared * 5, golden.size() * 4) << compared << " of " << golden.size();
}

// The space is the same whatever the number of threads that enumerate it (SpaceOptions::threads,
// NestSpace::runJobs): every candidate in the same order with the same estimates, every pruned
// entry in the same order, the same counts, sample and reserve. The nests' placements are jobs
// merged in generation order, which decides the model's ties: a merge in another order (that of
// the threads finishing, say) reorders tied candidates and pruned entries. Kernels of one nest
// with staging, mma and wgmma (matmul under tf32x3, sampled: the reserve is the rest of the
// space) and of several nests (softmax).
TEST(SpaceGolden, EveryThreadCountEnumeratesTheSameSpace) {
  const std::map<std::string, SizeBindings> sizes = exampleSizes();
  struct Case {
    const char* file;
    Precision precision;
    int64_t maxCandidates;
  };
  const Case cases[] = {{"matmul.rtcg", Precision::Tf32x3, 100}, {"softmax.rtcg", Precision::Ieee, 0}};
  for (const Case& c : cases) {
    const std::string src = readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / c.file);
    Diagnostics diags;
    auto prog = parseProgram(c.file, src, diags);
    ASSERT_TRUE(prog.has_value()) << c.file;
    auto bound = bindSizes(prog->kernels.front(), sizes.at(c.file), diags);
    ASSERT_TRUE(bound.has_value()) << c.file;
    SpaceOptions o;
    o.precision = c.precision;
    o.maxCandidates = c.maxCandidates;
    o.threads = 1;
    const std::string one = dumpSpace(enumerateSchedules(*bound, o));
    for (int threads : {3}) {
      o.threads = threads;
      const std::string several = dumpSpace(enumerateSchedules(*bound, o));
      if (several == one) continue;
      size_t at = 0;
      while (at < one.size() && at < several.size() && one[at] == several[at]) ++at;
      const size_t line = (size_t)std::count(one.begin(), one.begin() + (ptrdiff_t)at, '\n');
      ADD_FAILURE() << c.file << " (" << c.maxCandidates << " candidates): " << threads
                    << " threads enumerate another space than 1, from line " << line + 1 << " of its dump:\n  1: "
                    << one.substr(one.rfind('\n', at) + 1, 200) << "\n  " << threads << ": "
                    << several.substr(several.rfind('\n', at) + 1, 200);
    }
  }
}
