// Raw CUDA modules on a GPU (each test skips itself without a device): compile, look up, launch on
// the application's stream; wrong arguments rejected before anything runs; the cache across
// Context::module calls; tuning over macro values against a reference kernel and a check, with
// wrong and failing variants, and the tuning database serving the second search.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Stream.h"

namespace fs = std::filesystem;

namespace rtcg {
namespace {

class RawModuleGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no CUDA: " << cuda::unavailableReason();
    char tmpl[] = "/tmp/rtcg-raw-gpu-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path dir_;
};

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no rtcg::Error thrown>";
}

// TILE elements per thread; TILE == 8 skips the last element of each thread's tile (a wrong
// variant the verification must catch), TILE == 16 does not compile.
const char* kScale = R"(
#ifndef TILE
#define TILE 1
#endif
#if TILE == 16
#error sixteen is not supported
#endif
extern "C" __global__ void scale(int n, float a, const float* __restrict__ x, float* y) {
  int base = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;
  for (int t = 0; t < TILE - (TILE == 8 ? 1 : 0); ++t)
    if (base + t < n) y[base + t] = a * x[base + t];
}
extern "C" __global__ void scale_reference(int n, float a, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i];
}
)";

constexpr int kN = 100003;  // no tile divides it

std::vector<float> ramp(int n) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = float(i % 977) * 0.25f - 7.0f;
  return v;
}

TEST_F(RawModuleGpu, LaunchesOnTheApplicationsStreamAndChecksArgumentsFirst) {
  Context ctx;
  RawModule m = ctx.module(kScale, {{}, "scale.cu", {}});
  EXPECT_EQ(m.functionNames(), (std::vector<std::string>{"scale", "scale_reference"}));
  RawFunction f = m.function("scale_reference");
  std::vector<RawParameter> p = f.parameters();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[2].name, "x");
  EXPECT_EQ(p[2].size, 8u);
  EXPECT_TRUE(p[2].pointer);
  EXPECT_EQ(p[1].size, 4u);

  Array<float> x = ctx.upload(ramp(kN)), y = ctx.upload(std::vector<float>(kN, -1.0f));
  cuda::Stream stream(cuda::Context::primary(0));
  f.launch({{(kN + 255) / 256}, {256}, 0, stream.handle()}, kN, 2.0f, x, y);
  stream.synchronize();
  std::vector<float> got = y.download(), in = ramp(kN);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 2.0f * in[i]) << i;

  // Each wrong call throws before the launch: y keeps its values.
  Array<double> xd = ctx.empty<double>(kN);
  y.upload(std::vector<float>(kN, -1.0f));
  LaunchConfig c{{(kN + 255) / 256}, {256}};
  EXPECT_EQ(errorOf([&] { f.launch(c, kN, 2.0, x, y); }),
            "'scale_reference': argument 2 for parameter 2 'a' (float) is double 2 (8 bytes), but the parameter "
            "takes 4 bytes");
  EXPECT_EQ(errorOf([&] { f.launch(c, kN, 2.0f, x); }),
            "'scale_reference' takes 4 parameters (int n, float a, const float* x, float* y), but 3 arguments were given");
  EXPECT_EQ(errorOf([&] { f.launch(c, kN, 2.0f, xd, y); }),
            "'scale_reference': argument 3 for parameter 3 'x' (const float*) is rtcg::Array<f64> of 100003 elements, "
            "but the parameter points to f32 elements");
  EXPECT_EQ(errorOf([&] { f.launch(c, kN, 2.0f, 5, y); }),
            "'scale_reference': argument 3 for parameter 3 'x' (const float*) is int32_t 5, but the parameter is a "
            "pointer: pass a device array");
  EXPECT_EQ(errorOf([&] { f.launch({{0}, {256}}, kN, 2.0f, x, y); }), "'scale_reference': the grid (0, 1, 1) is empty");
  ctx.synchronize();
  for (float v : y.download()) ASSERT_EQ(v, -1.0f);
  // A bare device pointer is a pointer argument.
  f.launch(c, kN, 3.0f, x.data(), y.data());
  ctx.synchronize();
  EXPECT_EQ(y.download()[5], 3.0f * in[5]);

  EXPECT_NE(errorOf([&] { m.function("absent"); }).find("scale.cu has no __global__ function 'absent' (it defines: "
                                                       "scale, scale_reference)"),
            std::string::npos);
}

TEST_F(RawModuleGpu, SecondModuleOfTheSameTextComesFromTheCache) {
  Context ctx;
  const std::string src = std::string(kScale) + "// " + dir_.string() + "\n";  // a text no other test compiled
  Context::CacheStats before = ctx.cacheStats();
  ctx.module(src);
  ctx.module(src);
  Context::CacheStats after = ctx.cacheStats();
  EXPECT_EQ(after.nvrtc - before.nvrtc, 1);
  EXPECT_EQ(after.memory - before.memory, 1);
}

TEST_F(RawModuleGpu, CompileErrorsPointAtTheUsersLine) {
  Context ctx;
  try {
    ctx.module("extern \"C\" __global__ void k(float* x) {\n  x[0] = y;\n}\n", {{}, "user.cu", {}});
    FAIL();
  } catch (const CompileError& e) {
    ASSERT_EQ(e.diagnostics().size(), 1u);
    EXPECT_EQ(e.diagnostics()[0].file, "user.cu");
    EXPECT_EQ(e.diagnostics()[0].line, 2);
    EXPECT_EQ(e.diagnostics()[0].column, 10);
  }
}

TEST_F(RawModuleGpu, TunesOverMacroValuesAgainstAReferenceAndTheDatabaseServesTheNextSearch) {
  Context ctx;
  Array<float> x = ctx.upload(ramp(kN)), y = ctx.empty<float>(kN);
  RawModule refModule = ctx.module(kScale);
  RawTuneOptions o;
  o.function = "scale";
  o.space = {{"TILE", {"1", "2", "4", "8", "16"}}, {"BLOCK", {"128", "256"}}};
  o.restrict = [](const RawVariant& v) { return !(v.at("TILE") == "4" && v.at("BLOCK") == "128"); };
  o.geometry = [](const RawVariant& v) {
    unsigned tile = std::stoul(v.at("TILE")), block = std::stoul(v.at("BLOCK"));
    unsigned threads = (kN + tile - 1) / tile;
    return LaunchConfig{{(threads + block - 1) / block}, {block}};
  };
  o.reference = refModule.function("scale_reference");
  o.referenceConfig = {{(kN + 255) / 256}, {256}};
  o.outputs = {3};
  o.database = (dir_ / "tuning.sqlite").string();
  o.repeats = 5;
  RawTuneResult r = ctx.tuneModule(kScale, {{}, "scale.cu", {}}, o, kN, 1.5f, x, y);
  ASSERT_EQ(r.candidates.size(), 9u);  // 5 x 2 less the restricted one
  EXPECT_FALSE(r.fromDatabase);
  int verified = 0;
  for (const RawTuneCandidate& c : r.candidates) {
    const std::string& tile = c.variant.at("TILE");
    if (tile == "8") EXPECT_EQ(c.status, "wrong-result") << c.text << ": " << c.reason;
    else if (tile == "16") EXPECT_EQ(c.status, "compile-failed") << c.text;
    else EXPECT_EQ(c.status, "verified") << c.text << ": " << c.reason;
    if (c.status == "verified") {
      ++verified;
      EXPECT_GT(c.medianMs, 0);
    }
  }
  EXPECT_EQ(verified, 5);
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.bestOptions.size(), 2u);
  EXPECT_EQ(r.bestOptions[0], "-DTILE=" + r.best->variant.at("TILE"));

  // The same key: the database's best, without a search.
  RawTuneResult again = ctx.tuneModule(kScale, {{}, "scale.cu", {}}, o, kN, 1.5f, x, y);
  EXPECT_TRUE(again.fromDatabase);
  ASSERT_TRUE(again.best);
  EXPECT_EQ(again.best->text, r.best->text);
  EXPECT_EQ(again.kernelHash, r.kernelHash);
  // The winner builds and runs.
  RawFunction best = ctx.module(kScale, {r.bestOptions, "scale.cu", {}}).function("scale");
  best.launch(o.geometry(r.best->variant), kN, 1.5f, x, y);
  ctx.synchronize();
  std::vector<float> got = y.download(), in = ramp(kN);
  for (int i = 0; i < kN; ++i) ASSERT_EQ(got[i], 1.5f * in[i]) << i;
}

TEST_F(RawModuleGpu, TunesWithAUserCheck) {
  Context ctx;
  Array<float> x = ctx.upload(ramp(kN)), y = ctx.empty<float>(kN);
  RawTuneOptions o;
  o.function = "scale";
  o.space = {{"TILE", {"2", "8"}}};
  o.geometry = [](const RawVariant& v) {
    unsigned tile = std::stoul(v.at("TILE"));
    return LaunchConfig{{((kN + tile - 1) / tile + 127) / 128}, {128}};
  };
  o.outputs = {3};  // poisoned before each verifying launch
  o.check = [&](const RawVariant&) -> std::string {
    std::vector<float> got = y.download(), in = ramp(kN);
    for (int i = 0; i < kN; ++i)
      if (got[i] != -in[i]) return "y[" + std::to_string(i) + "] is wrong";
    return "";
  };
  o.database = "-";
  RawTuneResult r = ctx.tuneModule(kScale, {}, o, kN, -1.0f, x, y);
  ASSERT_EQ(r.candidates.size(), 2u);
  EXPECT_EQ(r.candidates[0].status, "verified") << r.candidates[0].reason;
  EXPECT_EQ(r.candidates[1].status, "wrong-result");
  EXPECT_EQ(r.candidates[1].reason.substr(0, 2), "y[");
  ASSERT_TRUE(r.best);
  EXPECT_EQ(r.best->text, "TILE=2");
}

TEST_F(RawModuleGpu, RefusesRequestsItCannotVerify) {
  Context ctx;
  Array<float> x = ctx.empty<float>(16), y = ctx.empty<float>(16);
  RawTuneOptions o;
  o.function = "scale";
  o.space = {{"TILE", {"1"}}};
  o.geometry = [](const RawVariant&) { return LaunchConfig{{1}, {16}}; };
  o.database = "-";
  EXPECT_NE(errorOf([&] { ctx.tuneModule(kScale, {}, o, 16, 1.0f, x, y); }).find("must be verified"), std::string::npos);
  o.reference = ctx.module(kScale).function("scale_reference");
  EXPECT_NE(errorOf([&] { ctx.tuneModule(kScale, {}, o, 16, 1.0f, x, y); }).find("needs the outputs"), std::string::npos);
  o.outputs = {1};
  EXPECT_NE(errorOf([&] { ctx.tuneModule(kScale, {}, o, 16, 1.0f, x, y); }).find("output 1 is not an rtcg::Array"),
            std::string::npos);
}

}  // namespace
}  // namespace rtcg
