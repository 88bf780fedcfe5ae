// Golden hashes of the emitted CUDA and of the static model's view, per example at its sizes:
//   cuda-default   the module of the default schedule
//   cuda-sample    every candidate of a fixed sample of the space (dry-run limits, 64 candidates,
//                  seed 1): its schedule text and module, in order
//   dry-run        `rtcgc tune --dry-run --json --max-candidates 200` (the model's ranking, scores,
//                  launch shapes)
// A refactor keeps these byte-identical. A deliberate change of the emitted code or the model
// regenerates the file with RTCG_UPDATE_GOLDEN=1 and says so in its commit.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "codegen/Emitter.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "Shell.h"
#include "runtime/Hash.h"
#include "schedule/Space.h"
#include "support/Diagnostics.h"

using namespace rtcg;
namespace fs = std::filesystem;

namespace {

const fs::path kGolden = fs::path(RTCG_SOURCE_DIR) / "tests/golden/golden.txt";

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ExampleSizes {
  std::string file;
  SizeBindings sizes;
  std::string defines;  // " -D n=500 ..."
};

std::vector<ExampleSizes> exampleSizes() {
  std::vector<ExampleSizes> out;
  std::istringstream in(readFile(fs::path(RTCG_SOURCE_DIR) / "examples/sizes.txt"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    ExampleSizes e;
    ls >> e.file;
    std::string binding;
    while (ls >> binding) {
      auto eq = binding.find('=');
      if (eq == std::string::npos) continue;
      e.sizes[binding.substr(0, eq)] = std::stoll(binding.substr(eq + 1));
      e.defines += " -D " + binding;
    }
    out.push_back(e);
  }
  return out;
}


// Tensor-core schedules the sampled space (default device, ieee precision) never reaches: wgmma
// (sm_90), TF32 and tf32x3, FP64 mma; each module hashed on its own ("<file>/<kernel>
// tensor:<sizes>:<schedule, spaces as _>").
void hashTensorSchedules(std::map<std::string, std::string>& out) {
  struct Fixed {
    const char* file;
    SizeBindings sizes;
    const char* schedule;
  };
  const Fixed fixed[] = {
      {"gemm_bf16.rtcg", {{"n", 1000}}, "mma: bf16 wgmma m64n128k16 warpgroups 2x2 k 64 stages 4 swizzle 128 tma epilogue shared"},
      {"gemm_bf16.rtcg", {{"n", 1003}}, "mma: bf16 wgmma m64n256k16 warpgroups 2x1 k 64 stages 3"},
      {"gemm_bf16.rtcg", {{"n", 1003}}, "mma: bf16 m16n8k16 warps 2x2 tile 4x8 k 32 stages 3 epilogue shared"},
      {"matmul.rtcg", {{"n", 1000}}, "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma"},
      {"matmul.rtcg", {{"n", 1003}}, "mma: tf32 wgmma m64n128k8 warpgroups 2x2 k 32 stages 3 swizzle 128 epilogue shared"},
      {"matmul.rtcg", {{"n", 1003}}, "mma: tf32 wgmma m64n64k8 warpgroups 1x1 k 16 stages 2"},
      {"matmul.rtcg", {{"n", 1000}}, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma epilogue shared"},
      {"matmul.rtcg", {{"n", 1003}}, "mma: tf32x3 m16n8k8 warps 2x2 tile 4x8 k 8 stages 3"},
      {"matmul.rtcg", {{"n", 1003}}, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16"},
      {"dgemm.rtcg", {{"n", 1001}}, "mma: f64 m16n8k4 warps 2x4 tile 4x4 k 8 stages 4 fragments 2"},
      {"dgemm.rtcg", {{"n", 1001}}, "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 8"},
      {"matmul.rtcg", {{"n", 1000}}, "mma: tf32x3 wgmma m64n128k8 warpgroups 2x1 k 32 stages 4 swizzle 128 tma producer"},
      {"matmul.rtcg", {{"n", 1000}}, "mma: tf32 wgmma m64n256k8 warpgroups 2x1 k 32 stages 3 swizzle 128 tma producer"},
      {"gemm_bf16.rtcg", {{"n", 1000}}, "mma: bf16 wgmma m64n128k16 warpgroups 1x1 k 64 stages 4 swizzle 128 tma producer"},
  };
  const ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  for (const Fixed& f : fixed) {
    std::string what = "tensor:";
    for (const auto& [name, value] : f.sizes) what += name + "=" + std::to_string(value) + ":";
    for (const char* c = f.schedule; *c; ++c) what += *c == ' ' ? '_' : *c;
    Diagnostics diags;
    auto prog = parseProgram(f.file, readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / f.file), diags);
    EXPECT_TRUE(prog.has_value()) << f.file;
    if (!prog) continue;
    const std::string key = std::string(f.file) + "/" + prog->kernels[0].name + " " + what;
    auto bound = bindSizes(prog->kernels[0], f.sizes, diags);
    auto parsed = parseSchedule(f.schedule);
    EXPECT_TRUE(bound && parsed.schedule) << key << ": " << parsed.error;
    if (!bound || !parsed.schedule) continue;
    out[key] = hash128(emitCuda(*bound, *parsed.schedule, sm90).source).hex();
  }
}

// "<file>/<kernel> <what>" -> hash, computed now.
std::map<std::string, std::string> computeHashes() {
  std::map<std::string, std::string> out;
  for (const ExampleSizes& ex : exampleSizes()) {
    const fs::path path = fs::path(RTCG_SOURCE_DIR) / "examples" / ex.file;
    const std::string src = readFile(path);
    Diagnostics diags;
    auto prog = parseProgram(ex.file, src, diags);
    EXPECT_TRUE(prog.has_value()) << ex.file;
    if (!prog) continue;
    for (const Kernel& k : prog->kernels) {
      const std::string key = ex.file + "/" + k.name;
      auto bound = bindSizes(k, ex.sizes, diags);
      EXPECT_TRUE(bound.has_value()) << key;
      if (!bound) continue;
      out[key + " cuda-default"] = hash128(emitCuda(*bound, defaultSchedule(*bound)).source).hex();

      SpaceOptions o;
      o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock);
      o.maxCandidates = 64;
      o.seed = 1;
      Space space = enumerateSchedules(*bound, o);
      std::string all;
      for (const Candidate& c : space.candidates) {
        all += c.text;
        all += '\n';
        all += emitCuda(*bound, candidatePlan(c)).source;  // as the tuner emits it: from the candidate's plans
      }
      out[key + " cuda-sample"] = hash128(all).hex() + " " + std::to_string(space.candidates.size());

      const tests::ShellResult dry = tests::shell(std::string(RTCGC_PATH) + " tune " + path.string() +
                                                      ex.defines + " --kernel " + k.name +
                                                      " --dry-run --json --max-candidates 200");
      EXPECT_EQ(dry.code, 0) << key << ": " << dry.out;
      out[key + " dry-run"] = hash128(dry.out).hex();
    }
  }
  hashTensorSchedules(out);
  return out;
}

}  // namespace

TEST(Golden, EmittedCudaAndModelOfEveryExampleAreUnchanged) {
  const std::map<std::string, std::string> now = computeHashes();
  ASSERT_GE(now.size(), 30u);
  std::string text = "# Golden hashes (tests/golden/GoldenTest.cpp): <example>/<kernel> <what> <hash> [candidates]\n";
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
  for (const auto& [key, hash] : golden) {
    auto it = now.find(key);
    if (it == now.end()) {
      ADD_FAILURE() << key << ": no longer produced";
      continue;
    }
    EXPECT_EQ(it->second, hash) << key << " changed: the emitted CUDA or the model's output differs from "
                                << kGolden.filename() << " (RTCG_UPDATE_GOLDEN=1 rewrites it for a deliberate change)";
  }
  for (const auto& [key, hash] : now)
    EXPECT_TRUE(golden.count(key)) << key << ": not in " << kGolden.filename();
}
