// Emitted CUDA checked for correctness without a GPU: each schedule's code is compiled for the host
// against cuda_host_emulation.h and its results compared with the reference executor.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/HostEmulation.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/TestKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

Kernel example(const std::string& file, const std::string& kernel, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  Diagnostics diags;
  auto prog = parseProgram(file, ss.str(), diags);
  EXPECT_TRUE(prog.has_value()) << file;
  const Kernel* k = prog ? prog->find(kernel) : nullptr;
  EXPECT_NE(k, nullptr) << kernel;
  auto bound = k ? bindSizes(*k, sizes, diags) : std::nullopt;
  EXPECT_TRUE(bound.has_value()) << kernel;
  return bound ? *bound : Kernel{};
}

}  // namespace

TEST(HostEmulation, PlainSchedulesMatchTheReference) {
  EXPECT_EQ(checkOnHost(matmul(37), "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(triangular(12), "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 3 | "
                                        "i: grid.x, thread.x 8, reg 3; k: unroll, serial 2"), "");
}

TEST(HostEmulation, MatmulStagedPerStep) {
  for (int64_t n : {37, 32}) {
    EXPECT_EQ(checkOnHost(matmul(n), "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b"), "") << n;
    EXPECT_EQ(checkOnHost(matmul(n), "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial; shared: b"), "") << n;
    EXPECT_EQ(checkOnHost(matmul(n), "j: grid.x, thread.x 16, reg 2; i: grid.y, serial 2, thread.y 4; k: unroll, serial 8; shared: a, b"), "") << n;
  }
}

TEST(HostEmulation, WholeArrayAndBlockTiles) {
  // Small n: the tile covers the whole array and is staged once per block.
  EXPECT_EQ(checkOnHost(matmul(10), "i: grid.y, thread.y 8; j: grid.x, thread.x 16; k: serial, unroll 2; shared: a, b"), "");
  // The derivative matrices are whole (Block level), u moves with k (per step of j).
  EXPECT_EQ(checkOnHost(dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 4; shared: Dr, Ds, Dt, u"), "");
  EXPECT_EQ(checkOnHost(dgDiff(13, 20), "k: grid.x, serial 2, thread.y 2; i: serial, thread.x 32; j: unroll, serial 5; shared: Dr, u"), "");
  // Elementwise operands: tiles over the block's indices.
  EXPECT_EQ(checkOnHost(axpby(1003), "i: grid.x, thread.x 64, reg 4; shared: x, y"), "");
  EXPECT_EQ(checkOnHost(axpby(1003), "i: grid.x, serial 3, thread.x 64; shared: x"), "");
  // A double reduction; w is small and whole.
  EXPECT_EQ(checkOnHost(batched(3, 9), "b: grid.z; i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 4; l: unroll; shared: a, x, w"), "");
}

TEST(HostEmulation, ExamplesStaged) {
  EXPECT_EQ(checkOnHost(example("transpose.rtcg", "transpose", {{"m", 45}, {"n", 37}}),
                        "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 32; shared: a"), "");
  EXPECT_EQ(checkOnHost(example("gemv.rtcg", "gemv", {{"m", 45}, {"n", 70}}),
                        "i: grid.x, thread.x 32, reg 2; j: serial, unroll 8; shared: a, x"), "");
  EXPECT_EQ(checkOnHost(example("dg_lift.rtcg", "dg_lift", {{"K", 7}, {"Np", 10}, {"Nfp", 4}}),
                        "k: grid.x, thread.y 2; i: serial, thread.x 16; f: serial, unroll 4; shared: LIFT, flux, invJ"), "");
}

TEST(HostEmulation, DynamicSharedMemory) {
  // Both operands whole: 2 x 120 x 121 floats, above 48 KiB, so dynamic shared memory.
  const std::string text = "i: grid.y, thread.y 16, reg 8; j: grid.x, thread.x 16, reg 8; k: serial; shared: a, b";
  ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  Kernel k = matmul(120);
  Schedule s = *parseSchedule(text).schedule;
  auto reasons = validateSchedule(k, s);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("staging needs 115200 bytes of shared memory (at most 49152)"), std::string::npos) << reasons[0];
  EXPECT_TRUE(validateSchedule(k, s, limits).empty());
  EmittedModule m = emitCuda(k, s, limits);
  EXPECT_EQ(m.launches[0].dynamicSharedBytes, 115200u);
  EXPECT_NE(m.source.find("extern __shared__ float rtcg_smem_f32[];"), std::string::npos) << m.source;
  EXPECT_EQ(checkOnHost(k, text, 1e-5, limits), "");
}

namespace {
Kernel fromSource(const std::string& source, const std::string& kernel, const SizeBindings& sizes) {
  Diagnostics diags;
  auto prog = parseProgram("inline.rtcg", source, diags);
  EXPECT_TRUE(prog.has_value()) << diags.render("inline.rtcg", source);
  const Kernel* k = prog ? prog->find(kernel) : nullptr;
  auto bound = k ? bindSizes(*k, sizes, diags) : std::nullopt;
  EXPECT_TRUE(bound.has_value()) << kernel;
  return bound ? *bound : Kernel{};
}
}  // namespace

TEST(HostEmulation, SplitReductions) {
  // dot: one output, the whole block reduces (power-of-two and other lane counts).
  EXPECT_EQ(checkOnHost(dot(1000), "i: serial, thread.x 128"), "");
  EXPECT_EQ(checkOnHost(dot(1000), "i: thread.x, serial 7"), "");
  EXPECT_EQ(checkOnHost(dot(1000), "i: serial, unroll 2, thread.x 96"), "");
  // gemv: rows on thread.y and the grid, the row's dot product across thread.x.
  Kernel gemv = example("gemv.rtcg", "gemv", {{"m", 45}, {"n", 70}});
  EXPECT_EQ(checkOnHost(gemv, "i: grid.x, thread.y 4; j: serial, thread.x 32"), "");
  EXPECT_EQ(checkOnHost(gemv, "i: grid.x, thread.x 4, reg 2; j: serial, thread.y 8, unroll 2; shared: x"), "");
  // max, min and product combine with their own operators.
  Kernel red = fromSource(
      "kernel red(n: int, x: f32[n, n], out y: f32[n], out z: f32[n], out w: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = max(j in 0..n, x[i, j]);\n"
      "    z[i] = min(j in 0..n, x[i, j]);\n"
      "    w[i] = product(j in 0..n, 1.0 + 0.01 * x[i, j]);\n"
      "  }\n"
      "}\n", "red", {{"n", 37}});
  EXPECT_EQ(checkOnHost(red, "i: grid.x, thread.y 2; j: serial, thread.x 12"), "");
  EXPECT_EQ(checkOnHost(red, "i: grid.x; j: thread.x, serial 3"), "");
  // Staged per step and split at once: matmul with k on thread.z.
  EXPECT_EQ(checkOnHost(matmul(21), "i: grid.y, thread.y 4; j: grid.x, thread.x 8; k: serial, thread.z 4; shared: a, b"), "");
}
