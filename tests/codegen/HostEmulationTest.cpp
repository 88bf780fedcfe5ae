// Emitted CUDA checked for correctness without a GPU: each schedule's code is compiled for the host
// against cuda_host_emulation.h and its results compared with the reference executor.
#include <gtest/gtest.h>

#include <cstring>
#include <fmt/format.h>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "reference/RandomFill.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "schedule/TestKernels.h"
#include "FullTests.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// checkOnHost for the cases the sample keeps; "" (a pass) for those the default run leaves out.
// Every g++ compile of an emitted module costs seconds, so the long tests below run every other
// case by default and all of them under RTCG_FULL_TESTS=1 (tests/FullTests.h).
std::string sampledCheck(rtcgtest::CaseSample& sample, const Kernel& k, const std::string& schedule,
                         double tolerance = 1e-5, const ScheduleLimits& limits = {},
                         const EmulationOptions& options = {}) {
  return sample.keep() ? checkOnHost(k, schedule, tolerance, limits, options) : "";
}

}  // namespace

TEST(HostEmulation, PlainSchedulesMatchTheReference) {
  EXPECT_EQ(checkOnHost(matmul(37), "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(triangular(12), "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 3 | "
                                        "i: grid.x, thread.x 8, reg 3; k: unroll, serial 2"), "");
}

TEST(HostEmulation, MatmulStagedPerStep) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {37, 32}) {
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b"), "") << n;
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial; shared: b"), "") << n;
    EXPECT_EQ(sampledCheck(sample, matmul(n), "j: grid.x, thread.x 16, reg 2; i: grid.y, serial 2, thread.y 4; k: unroll, serial 8; shared: a, b"), "") << n;
    // Vector-friendly tiles (4 neighbouring j per thread, cyclic i), the last step peeled, the
    // steps prefetched into registers, and points outside the domain computed unguarded.
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, reg 2, thread.y 4; j: grid.x, reg 2, thread.x 4, reg 4; k: serial, unroll 4; shared: a, b; blocks_per_sm: 2"), "") << n;
  }
}

TEST(HostEmulation, TransposedAndDoubleBufferedTiles) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {37, 32}) {
    // a's tile stored k-major (a^T), both tiles double-buffered, steps prefetched into registers.
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 4, reg 4; j: grid.x, reg 2, thread.x 4, reg 4; k: serial, unroll 4; shared: a^T, b; buffers: 2"), "") << n;
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, reg 2, thread.y 4, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a^T, b"), "") << n;
    // Steps too large to prefetch (direct copies into the other buffer), and steps of one value.
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 2; j: grid.x, thread.x 4; k: serial, unroll 16; shared: a^T, b; buffers: 2"), "") << n;
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial; shared: a, b^T; buffers: 2"), "") << n;
  }
  // DG: the matrices whole (once per block), u per step of j in two buffers; odd step counts.
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 3; shared: Dr, Ds, Dt, u; buffers: 2"), "");
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, reg 2, thread.y 2; i: serial, thread.x 20; j: serial, unroll 7; shared: Dr^T, u^T; buffers: 2"), "");
  EXPECT_EQ(sampledCheck(sample, exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", 7}, {"Np", 10}, {"Nfp", 4}}),
                        "k: grid.x, thread.y 2; i: serial, thread.x 16; f: serial; shared: LIFT^T, flux, invJ; buffers: 2"), "");
}

TEST(HostEmulation, StackedDgDifferentiation) {
  // The three matrices stacked (3 Np = 105 outputs per element, 300 elements): tiles cut from the
  // 105 outputs (a block of 128 of them, a register tile of 8 spaced by the 16 threads), steps of
  // 8 over 35 nodes, the last one partial; and three cp.async buffers. The searches' winners at
  // N=6..8 on an H100.
  Kernel k = exampleKernel("dg_diff_stacked.rtcg", "dg_diff_stacked", {{"K", 300}, {"Np", 35}});
  EXPECT_EQ(checkOnHost(k, "k: grid.y, thread.y 8, reg 8; m: grid.x, reg 8, thread.x 16; j: serial, unroll 8; shared: D, u^T; blocks_per_sm: 2"), "");
  EXPECT_EQ(checkOnHost(k, "k: grid.y, reg 2, thread.y 8, reg 8; m: grid.x, reg 2, thread.x 16, reg 4; j: serial, unroll 8; "
                           "shared: D^T, u^T; buffers: 3; copy: async"), "");
}

TEST(HostEmulation, WholeArrayAndBlockTiles) {
  rtcgtest::CaseSample sample(2);
  // Small n: the tile covers the whole array and is staged once per block.
  EXPECT_EQ(sampledCheck(sample, matmul(10), "i: grid.y, thread.y 8; j: grid.x, thread.x 16; k: serial, unroll 2; shared: a, b"), "");
  // The derivative matrices are whole (Block level), u moves with k (per step of j).
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 4; shared: Dr, Ds, Dt, u"), "");
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, serial 2, thread.y 2; i: serial, thread.x 32; j: unroll, serial 5; shared: Dr, u"), "");
  // Whole matrices that the block's points overrun (36 points for 35 nodes, 64 for 35): reads
  // clamped into the tile, the out-of-domain points accumulate unguarded and store nothing.
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 35), "k: grid.x, thread.y 4, reg 2; i: serial, reg 2, thread.x 18; j: serial, unroll 8; shared: Dr, u^T, Ds, Dt"), "");
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 35), "k: grid.x, thread.y 2; i: serial, thread.x 16, reg 4; j: serial, unroll 4; shared: Dr^T, u, Ds^T, Dt^T; buffers: 2"), "");
  // Elementwise operands: tiles over the block's indices.
  EXPECT_EQ(sampledCheck(sample, axpby(1003), "i: grid.x, thread.x 64, reg 4; shared: x, y"), "");
  EXPECT_EQ(sampledCheck(sample, axpby(1003), "i: grid.x, serial 3, thread.x 64; shared: x"), "");
  // A double reduction; w is small and whole.
  EXPECT_EQ(sampledCheck(sample, batched(3, 9), "b: grid.z; i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 4; l: unroll; shared: a, x, w"), "");
}

TEST(HostEmulation, ExamplesStaged) {
  EXPECT_EQ(checkOnHost(exampleKernel("transpose.rtcg", "transpose", {{"m", 45}, {"n", 37}}),
                        "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 32; shared: a"), "");
  EXPECT_EQ(checkOnHost(exampleKernel("gemv.rtcg", "gemv", {{"m", 45}, {"n", 70}}),
                        "i: grid.x, thread.x 32, reg 2; j: serial, unroll 8; shared: a, x"), "");
  EXPECT_EQ(checkOnHost(exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", 7}, {"Np", 10}, {"Nfp", 4}}),
                        "k: grid.x, thread.y 2; i: serial, thread.x 16; f: serial, unroll 4; shared: LIFT, flux, invJ"), "");
}

// `stores: streaming`: the outputs stored with __stcs (the emulation's checks its address and
// that the value has the element's type); plain, staged and transposed tiles, DG differentiation,
// and a reduction split across blocks whose output the last block stores.
TEST(HostEmulation, StreamingStores) {
  EXPECT_EQ(checkOnHost(axpby(1003), "i: grid.x, thread.x 64, reg 4; stores: streaming"), "");
  EXPECT_EQ(checkOnHost(exampleKernel("transpose.rtcg", "transpose", {{"m", 45}, {"n", 37}}),
                        "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 32; shared: a; stores: streaming"), "");
  EXPECT_EQ(checkOnHost(dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 4; "
                                        "shared: Dr, Ds, Dt, u; stores: streaming"), "");
  EXPECT_EQ(checkOnHost(dot(5000), "i: serial, grid.x 8, thread.x 64; stores: streaming"), "");
  const std::string cuda = emitCuda(axpby(1003), *parseSchedule("i: grid.x, thread.x 64; stores: streaming").schedule).source;
  EXPECT_NE(cuda.find("__stcs(&z[i], "), std::string::npos) << cuda;
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
  EXPECT_NE(m.source.find("extern __shared__ __align__(16) float rtcg_smem_f32[];"), std::string::npos) << m.source;
  EXPECT_EQ(checkOnHost(k, text, 1e-5, limits), "");
}

namespace {

// Row-wise max, min and product of an n x n matrix: reductions with their own operators.
Kernel maxMinProduct(int64_t n) {
  return fromSource(
      "kernel red(n: int, x: f32[n, n], out y: f32[n], out z: f32[n], out w: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = max(j in 0..n, x[i, j]);\n"
      "    z[i] = min(j in 0..n, x[i, j]);\n"
      "    w[i] = product(j in 0..n, 1.0 + 0.01 * x[i, j]);\n"
      "  }\n"
      "}\n", "red", {{"n", n}});
}
}  // namespace

TEST(HostEmulation, SplitReductions) {
  rtcgtest::CaseSample sample(2);
  // dot: one output, the whole block reduces (power-of-two and other lane counts).
  EXPECT_EQ(sampledCheck(sample, dot(1000), "i: serial, thread.x 128"), "");
  EXPECT_EQ(sampledCheck(sample, dot(1000), "i: thread.x, serial 7"), "");
  EXPECT_EQ(sampledCheck(sample, dot(1000), "i: serial, unroll 2, thread.x 96"), "");
  // gemv: rows on thread.y and the grid, the row's dot product across thread.x.
  Kernel gemv = exampleKernel("gemv.rtcg", "gemv", {{"m", 45}, {"n", 70}});
  EXPECT_EQ(sampledCheck(sample, gemv, "i: grid.x, thread.y 4; j: serial, thread.x 32"), "");
  EXPECT_EQ(sampledCheck(sample, gemv, "i: grid.x, thread.x 4, reg 2; j: serial, thread.y 8, unroll 2; shared: x"), "");
  // max, min and product combine with their own operators.
  Kernel red = maxMinProduct(37);
  EXPECT_EQ(sampledCheck(sample, red, "i: grid.x, thread.y 2; j: serial, thread.x 12"), "");
  EXPECT_EQ(sampledCheck(sample, red, "i: grid.x; j: thread.x, serial 3"), "");
  // Staged per step and split at once: matmul with k on thread.z.
  EXPECT_EQ(sampledCheck(sample, matmul(21), "i: grid.y, thread.y 4; j: grid.x, thread.x 8; k: serial, thread.z 4; shared: a, b"), "");
}

// Tiles copied as 16-byte runs (the emulated __ldg aborts on a misaligned run) and lanes combined by
// warp shuffles, against the reference.
// Streaming stores of every element type that has one: double, int and long long (the emulation's
// __stcs takes a value of the pointer's type only, as the GPU's overloads need).
TEST(HostEmulation, StreamingStoresOfEveryType) {
  EXPECT_EQ(checkOnHost(matmul(17, ScalarType::F64), "i: grid.y, thread.y 4; j: grid.x, thread.x 8, reg 2; k: serial; stores: streaming"), "");
  Kernel ints = fromSource(
      "kernel ints(n: int, k: i32[n], big: i64[n], out y: i32[n], out z: i64[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = k[i] * 3 + 1;\n"
      "    z[i] = big[i] * 3000000000 + 7i64;\n"
      "  }\n"
      "}\n",
      "ints", {{"n", 301}});
  EXPECT_EQ(checkOnHost(ints, "i: grid.x, thread.x 32, reg 2; stores: streaming"), "");
}

TEST(HostEmulation, VectorCopiesAndWarpCombines) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {32, 36}) {
    // 36 = 2 x 16 + 4: the edge blocks' runs lie wholly outside the array (zeros) or inside.
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 4, reg 4; k: serial, unroll 4; shared: a^T, b"), "") << n;
    EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, unroll 8; shared: a, b; buffers: 2"), "") << n;
  }
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 20; j: serial, unroll 4; shared: Dr, u; buffers: 2"), "");
  EXPECT_EQ(sampledCheck(sample, axpby(1004), "i: grid.x, thread.x 64, reg 4; shared: x, y"), "");
  // Sub-warp lanes (16 per row, two rows a warp), several warps a row, runs of 4 per thread.
  Kernel gemv = exampleKernel("gemv.rtcg", "gemv", {{"m", 45}, {"n", 72}});
  EXPECT_EQ(sampledCheck(sample, gemv, "i: grid.x, thread.y 8; j: serial, thread.x 16, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, gemv, "i: grid.x; j: serial, unroll 2, thread.x 64, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, gemv, "i: grid.x, thread.y 2; j: serial, thread.x 128"), "");
  Kernel red = maxMinProduct(37);
  EXPECT_EQ(sampledCheck(sample, red, "i: grid.x, thread.y 4; j: serial, thread.x 8"), "");
}

// Tiles copied with cp.async one to three steps ahead ('copy: async'; the emulated copies abort
// when misaligned), against the reference: 16-byte runs, element copies of transposed tiles,
// partial edge tiles, steps that do not divide the reduction, and f64.
TEST(HostEmulation, AsyncCopiesStepsAhead) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {32, 37}) {
    for (int buffers : {2, 3, 4}) {
      std::string b = fmt::format("; buffers: {}; copy: async", buffers);
      EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 4, reg 4; k: serial, unroll 4; shared: a, b" + b), "") << n << b;
      EXPECT_EQ(sampledCheck(sample, matmul(n), "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8; k: serial, unroll 8; shared: a^T, b" + b), "") << n << b;
    }
  }
  EXPECT_EQ(sampledCheck(sample, matmul(20), "i: grid.y, thread.y 4; j: grid.x, thread.x 8; k: serial, serial 3; shared: a, b; buffers: 3; copy: async"), "");
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 20; j: serial, unroll 4; shared: Dr, u; buffers: 3; copy: async"), "");
  EXPECT_EQ(sampledCheck(sample, dgDiff(13, 20), "k: grid.x, thread.y 4; i: serial, thread.x 20; j: serial; shared: Dr, u^T; buffers: 2; copy: async"), "");
  EXPECT_EQ(sampledCheck(sample, matmul(20, ScalarType::F64), "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 4, reg 2; k: serial, unroll 4; shared: a, b^T; buffers: 3; copy: async"), "");
}

// A block that takes the whole reduction in one step at each position of a serial part of a
// parallel index copies the tiles of the next positions while it computes this one (positions
// pipelined): registers two buffers, cp.async two to four; positions past the domain's end (37
// elements in blocks of 3 x 4 or 4 x 4), steps too large to prefetch into registers, and a
// matrix product whose a moves with i's positions while b stays.
TEST(HostEmulation, PositionsOfASerialPartPipelined) {
  rtcgtest::CaseSample sample(2);
  const char* schedules[] = {
      "k: grid.x, serial 3, thread.y 4; i: serial, thread.x 20; j: serial, unroll 20; shared: Dr, u^T, Ds, Dt; buffers: 2",
      "k: grid.x, serial 4, thread.y 2, reg 2; i: serial, thread.x 20; j: serial, unroll 20; shared: Dr, u; buffers: 3; copy: async",
      // Two steps per position: the steps are pipelined within each position, as before.
      "k: grid.x, serial 3, thread.y 4; i: serial, thread.x 20; j: serial, unroll 10; shared: u^T, Dt; buffers: 2; copy: async",
      "k: grid.x, serial 2, reg 4, thread.y 4; i: serial, thread.x 10, reg 2; j: serial, unroll 20; shared: Dr, u^T, Ds, Dt; buffers: 4; copy: async",
      // One step of 32 for 20 values: the step's tail guarded.
      "k: grid.x, serial 3, thread.y 4; i: serial, thread.x 20; j: serial, unroll 32; shared: Dr, u^T; buffers: 2",
      // j split across two threads (combined in shared memory after each position's step).
      "k: grid.x, serial 3, thread.y 4; i: serial, thread.x 20; j: serial, thread.z 2, unroll 10; shared: Dr, u^T; buffers: 2",
      // 16 x 20 values of u per position for 16 threads: too many to prefetch, copied directly.
      "k: grid.x, serial 3, thread.y 16; i: serial; j: serial, unroll 20; shared: u; buffers: 2"};
  for (const char* text : schedules) EXPECT_EQ(sampledCheck(sample, dgDiff(37, 20), text), "") << text;
  EXPECT_EQ(sampledCheck(sample, matmul(37), "i: grid.y, serial 3, thread.y 4; j: grid.x, thread.x 8, reg 2; k: serial, unroll 37; shared: a, b; buffers: 2"), "");
  // Serial parts on both i and j: j's positions are pipelined inside each of i's (a restaged at
  // each i position with the first j one, b moving with j).
  for (const char* text : {"i: grid.y, serial 2, thread.y 4; j: grid.x, serial 3, thread.x 8; k: serial, unroll 37; shared: a, b; buffers: 2",
                           "i: grid.y, serial 2, thread.y 4; j: grid.x, serial 3, thread.x 8; k: serial, unroll 37; shared: a^T, b; buffers: 3; copy: async"})
    EXPECT_EQ(sampledCheck(sample, matmul(37), text), "") << text;
  EXPECT_EQ(sampledCheck(sample, matmul(37, ScalarType::F64), "i: grid.y, serial 2, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 37; shared: a^T; buffers: 3; copy: async"), "");
  // DG lifting: 68 face values in one step, flux pipelined, invJ (one value per element, no
  // reduction) staged per position as before, rhs read and written in place.
  for (const char* text : {"k: grid.x, serial 4, thread.y 4; i: serial, thread.x 20; f: serial, serial 68; shared: invJ, LIFT, flux; buffers: 2",
                           "k: grid.x, serial 3, reg 2, thread.y 2; i: serial, reg 2, thread.x 10; f: serial, unroll 68; shared: LIFT, flux; buffers: 3; copy: async"})
    EXPECT_EQ(sampledCheck(sample, exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", 37}, {"Np", 20}, {"Nfp", 17}}), text), "") << text;
  EXPECT_EQ(sampledCheck(sample, exampleKernel("batched_matmul.rtcg", "batched_matmul", {{"nb", 37}, {"n", 16}}),
                        "b: grid.x, serial 4; i: serial, reg 4, thread.y 4; j: serial, thread.x 16; k: serial, unroll 16; shared: a, x; buffers: 2"), "");
}

// `loads: early`: the old rhs of DG lifting's in-place update is loaded ahead of the reduction,
// per register point, guarded where a block runs past the last element (K = 37), with the steps
// staged, positions pipelined, and unstaged.
TEST(HostEmulation, StatementLoadsAheadOfTheReductions) {
  Kernel lift = exampleKernel("dg_lift.rtcg", "dg_lift", {{"K", 37}, {"Np", 20}, {"Nfp", 5}});
  for (const char* text : {"k: grid.x, thread.y 4, reg 2; i: serial, reg 2, thread.x 10; f: serial, unroll 4; shared: invJ, LIFT, flux; buffers: 2; loads: early",
                           "k: grid.x, serial 3, thread.y 4; i: serial, thread.x 20; f: serial, unroll 20; shared: LIFT, flux; buffers: 2; loads: early",
                           "k: grid.x, thread.y 4; i: serial, thread.x 32; f: serial, unroll 4; loads: early"})
    EXPECT_EQ(checkOnHost(lift, text), "") << text;
}

TEST(HostEmulation, GroupsSplitOnDifferentThreadAxes) {
  // Two reductions of one point split on different thread axes: each combines only the lanes of
  // its own axes (the threads that differ on the other axis hold the same partial).
  Kernel two = fromSource(
      "kernel two(m: int, n: int, a: f32[m, n], b: f32[m, n], out y: f32[m]) {\n"
      "  for i in 0..m {\n"
      "    y[i] = sum(j in 0..n, a[i, j]) + max(k in 0..n, b[i, k]);\n"
      "  }\n"
      "}\n", "two", {{"m", 5}, {"n", 77}});
  EXPECT_EQ(checkOnHost(two, "i: grid.x; j: serial, thread.x 8; k: serial, thread.y 4"), "");
  EXPECT_EQ(checkOnHost(two, "i: grid.x, thread.z 2; j: serial, thread.x 8; k: serial"), "");
}

// Reductions split across blocks: every block stores its partials in global scratch, the last one
// combines them. Each kernel runs twice in the same module (outputs poisoned in between, arrival
// counters checked to be back at 0 after each run), with the blocks in grid order and shuffled.
TEST(HostEmulation, ReductionsSplitAcrossBlocks) {
  EmulationOptions twice;
  twice.runs = 2;
  // Both block orders for every case in the full run; by default one per case, alternating
  // (grid order, shuffled), so each order still meets every kind of split.
  int cases = 0;
  auto check = [&](const Kernel& k, const std::string& schedule, double tolerance = 1e-5) {
    int sampledOrder = cases++ % 2 == 0 ? 0 : 2;
    for (int order : {0, 2}) {
      if (!rtcgtest::fullTests() && order != sampledOrder) continue;
      EmulationOptions o = twice;
      o.blockOrder = order;
      EXPECT_EQ(checkOnHost(k, schedule, tolerance, {}, o), "") << schedule << " (block order " << order << ")";
    }
  };
  // dot: sizes that do not divide and a power of two; a grid-stride loop, with an unrolled inner
  // loop, one thread per block, and the grid part first (one value per thread).
  check(dot(1000003), "i: serial, grid.x 8, thread.x 64");
  check(dot(1 << 20), "i: serial, unroll 4, grid.x 16, thread.x 128");
  check(dot(1 << 20), "i: serial, grid.x 32, thread.x 256");
  check(dot(100003), "i: serial, grid.x 7");
  check(dot(1000), "i: grid.x, thread.x 96");
  check(dot(1000), "i: grid.x, unroll 3, thread.x 32");

  // gemv with 3 long rows: rows on the grid (one tile each), several rows per block on thread.y
  // (a slot per row, one out of the domain), rows in a serial loop (one combine per row) and in a
  // register tile (three partials per block).
  Kernel gemv = exampleKernel("gemv.rtcg", "gemv", {{"m", 3}, {"n", 100003}});
  check(gemv, "i: grid.x; j: serial, grid.y 5, thread.x 64");
  check(gemv, "i: serial, thread.y 4; j: serial, grid.x 6, thread.x 32");
  check(gemv, "i: serial; j: serial, grid.x 5, thread.x 32");
  check(gemv, "i: serial, reg 3; j: serial, grid.z 4, thread.x 32, thread.y 2");
  check(gemv, "i: grid.x; j: serial, grid.y 9");

  // max, min and product (values near 1) over long rows, with a non-split reduction next to them.
  Kernel red = fromSource(
      "kernel red(m: int, n: int, x: f32[m, n], out y: f32[m], out z: f32[m], out w: f32[m], out v: f32[m]) {\n"
      "  for i in 0..m {\n"
      "    y[i] = max(j in 0..n, x[i, j]);\n"
      "    z[i] = min(j in 0..n, x[i, j]);\n"
      "    w[i] = product(j in 0..n, 1.0 + 0.001 * x[i, j]);\n"
      "    v[i] = sum(k in 0..50, x[i, k]) + max(j in 0..n, x[i, j] * x[i, j]);\n"
      "  }\n"
      "}\n", "red", {{"m", 3}, {"n", 30011}});
  check(red, "i: grid.y; j: serial, grid.x 6, thread.x 64; k: serial", 1e-4);
  check(red, "i: serial; j: serial, grid.x 3, thread.x 32, unroll 2; k: serial, thread.y 2", 1e-4);

  // Integer sums, i32 and i64 (exact), and a double one, in one scratch of three types.
  Kernel isum = fromSource(
      "kernel isum(n: int, a: i32[n], b: i64[n], c: f64[n], out r: i32[1], out s: i64[1], out t: f64[1]) {\n"
      "  r[0] = sum(i in 0..n, a[i]);\n"
      "  s[0] = sum(i in 0..n, b[i] * b[i]);\n"
      "  t[0] = sum(i in 0..n, c[i]);\n"
      "}\n", "isum", {{"n", 1000003}});
  check(isum, "i: serial, grid.x 10, thread.x 64", 1e-12);  // the integers exact

  // A reduction over two indices, split across blocks along the inner one.
  Kernel both = fromSource(
      "kernel both(m: int, n: int, a: f32[m, n], out s: f32[1]) {\n"
      "  s[0] = sum(i in 0..m, j in 0..n, a[i, j]);\n"
      "}\n", "both", {{"m", 7}, {"n", 5003}});
  check(both, "i: serial; j: serial, grid.x 4, thread.x 32");
  check(both, "i: thread.y, serial 2; j: serial, grid.x 3, thread.x 32");
  // At most one reduction index per nest is split across blocks.
  auto reasons = validateSchedule(both, *parseSchedule("i: serial, grid.y 2; j: serial, grid.x 4, thread.x 32").schedule);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find("reduction indices 'i' and 'j' both have grid parts"), std::string::npos) << reasons[0];
}

// Split-K with staged steps: the grid parts ahead of the step part give each block its share of
// k, which it walks in staged steps; the blocks of an output tile then combine their partials.
// Sizes whose shares end mid-step, and a last block whose share starts past the last full step.
TEST(HostEmulation, StagedStepsOfReductionsSplitAcrossBlocks) {
  rtcgtest::CaseSample sample(2);
  EmulationOptions o;
  o.runs = 2;
  o.blockOrder = 2;  // shuffled
  const char* schedules[] = {
      "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8, reg 2; k: grid.z, serial 2, unroll 4; shared: a, b",
      "i: grid.y, thread.y 4, reg 4; j: grid.x, reg 2, thread.x 4, reg 4; k: grid.z, serial 3, unroll 4; shared: a^T, b",
      "i: grid.y, thread.y 4; j: grid.x, thread.x 8; k: grid.z, serial 2, serial 8; shared: a, b; buffers: 2",
      // n = 37: the second block's share starts in the last step and has three more past the end.
      "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8; k: grid.z, serial 4, unroll 8; shared: a^T, b; buffers: 3; copy: async",
      "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: grid.z, serial 5; shared: a, b",
      // Two grid parts ahead of the step part.
      "i: serial, thread.y 4; j: grid.x, thread.x 8; k: grid.z, grid.y 2, serial 2, unroll 4; shared: a, b"};
  for (const char* text : schedules) EXPECT_EQ(sampledCheck(sample, matmul(37), text, 1e-5, {}, o), "") << text;
  EXPECT_EQ(sampledCheck(sample, matmul(64), schedules[1], 1e-5, {}, o), "");
  EXPECT_EQ(sampledCheck(sample, matmul(30, ScalarType::F64), "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 4, reg 2; "
                                                     "k: grid.z, serial 2, unroll 4; shared: a, b^T; buffers: 2", 1e-12, {}, o), "");
}

TEST(HostEmulation, CrossBlockResultDoesNotDependOnBlockOrder) {
  // The last block reads the partials in block order: the same bits whichever block arrives last.
  Kernel k = dot(1 << 18);
  Schedule s = *parseSchedule("i: serial, grid.x 24, thread.x 64").schedule;
  HostArgs args(k);
  fillInputs(k, args, 7);
  std::vector<float> results;
  for (int order : {0, 1, 2}) {
    HostArgs a = args;
    EmulationOptions o;
    o.blockOrder = order;
    ASSERT_EQ(runEmittedOnHost(k, s, a, {}, o), "");
    results.push_back(a.array(2).as<float>()[0]);
  }
  EXPECT_EQ(std::memcmp(&results[0], &results[1], sizeof(float)), 0) << results[0] << " " << results[1];
  EXPECT_EQ(std::memcmp(&results[0], &results[2], sizeof(float)), 0) << results[0] << " " << results[2];
  // Split-K: the last block to arrive combines every partial from the scratch in block order:
  // every element the same bits in any block order.
  Kernel mm = matmul(45);
  Schedule split = *parseSchedule("i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8, reg 2; k: grid.z, serial 2, unroll 4; shared: a, b").schedule;
  HostArgs mmArgs(mm);
  fillInputs(mm, mmArgs, 9);
  std::vector<std::vector<float>> outs;
  for (int order : {0, 1, 2}) {
    HostArgs a = mmArgs;
    EmulationOptions o;
    o.blockOrder = order;
    ASSERT_EQ(runEmittedOnHost(mm, split, a, {}, o), "");
    const float* c = a.array(2).as<float>();
    outs.emplace_back(c, c + 45 * 45);
  }
  ASSERT_EQ(outs[0].size(), 45u * 45u);
  for (int order : {1, 2}) EXPECT_EQ(std::memcmp(outs[0].data(), outs[order].data(), outs[0].size() * sizeof(float)), 0) << order;
}

// Found by tests/fuzz/schedule_fuzz: a thread part of extent 1 on the reduction index made the
// emitter combine lanes it had not declared (std::out_of_range from the combine buffers).
TEST(HostEmulation, ThreadPartOfOneLaneOnAReduction) {
  EXPECT_EQ(checkOnHost(matmul(37), "i: serial; j: serial, grid.x 3, thread.x 32, unroll 2; k: serial, thread.y 1"), "");
  EXPECT_EQ(checkOnHost(dot(1000), "i: serial, thread.x 1"), "");
}

// Data-dependent ranges (CSR rows) against the reference, at sizes no tile divides: a thread per
// row, a group of lanes per row combined by shuffles (and through shared memory past a warp), rows
// on the grid with several per block, and a serial part split in two around an unrolled one.
// Kernel-local arrays (module memory, docs/language.md 4.1) passed from nest to nest, at sizes no
// tile divides, under schedules that split the rows' reductions across threads; twice in one
// loaded module (the second run overwrites the first's locals).
TEST(HostEmulation, KernelLocalArrays) {
  EmulationOptions twice;
  twice.runs = 2;
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 53}});
  EXPECT_EQ(checkOnHost(softmax, printSchedule(defaultSchedule(softmax)), 1e-5, {}, twice), "");
  EXPECT_EQ(checkOnHost(softmax, "i: grid.x, thread.y 4; j: serial, thread.x 8 | "
                                 "i: grid.x, thread.y 2; j: serial, thread.x 32 | "
                                 "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 16"),
            "");
  Kernel layernorm = fromSource(
    "kernel layernorm(m: int, n: int, x: f32[m, n], gamma: f32[n], beta: f32[n], out y: f32[m, n]) {\n"
    "  local mean: f32[m];\n"
    "  local rstd: f32[m];\n"
    "  for i in 0..m { mean[i] = sum(j in 0..n, x[i, j]) / f32(n); }\n"
    "  for i in 0..m { rstd[i] = 1.0 / sqrt(sum(j in 0..n, (x[i, j] - mean[i]) * (x[i, j] - mean[i])) / f32(n) + 1e-5); }\n"
    "  for i in 0..m, j in 0..n { y[i, j] = (x[i, j] - mean[i]) * rstd[i] * gamma[j] + beta[j]; }\n"
    "}\n",
    "layernorm", {{"m", 29}, {"n", 41}});
  EXPECT_EQ(checkOnHost(layernorm, "i: grid.x, thread.x 32; j: serial, unroll 4 | i: grid.x, thread.y 8; j: serial, "
                                   "thread.x 4 | j: grid.x, thread.x 32; i: grid.y, thread.y 2, reg 2; shared: gamma",
                        1e-5, {}, twice),
            "");
}

TEST(HostEmulation, RowsOfDataDependentLength) {
  rtcgtest::CaseSample sample(2);
  Kernel spmv = exampleKernel("spmv.rtcg", "spmv", {{"n", 301}, {"nnz", 2003}});
  EXPECT_EQ(checkOnHost(spmv, "i: grid.x, thread.x 64; p: serial"), "");
  EXPECT_EQ(checkOnHost(spmv, "i: grid.x, thread.y 8; p: serial, thread.x 32"), "");
  EXPECT_EQ(sampledCheck(sample, spmv, "i: grid.x, thread.y 32; p: serial, thread.x 4"), "");
  EXPECT_EQ(sampledCheck(sample, spmv, "i: grid.x, thread.y 2; p: serial, thread.x 64"), "");
  EXPECT_EQ(sampledCheck(sample, spmv, "i: grid.x, thread.x 32, reg 2; p: serial, unroll 2"), "");
  EXPECT_EQ(sampledCheck(sample, spmv, "i: grid.x, serial 3, thread.y 4; p: serial, thread.x 8"), "");
}

// Ranges with one data-dependent bound (0..len[i]) and a data-dependent reduction nested in
// another (computed inside the statement), against the reference.
TEST(HostEmulation, RangesOfOtherDataDependentShapes) {
  Kernel ragged = fromSource(
      "kernel ragged(n: int, m: int, len: i32[n], a: f32[n, m], out s: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    s[i] = sum(j in 0..len[i], a[i, j]);\n"
      "  }\n"
      "}\n",
      "ragged", {{"n", 45}, {"m", 37}});
  EXPECT_EQ(checkOnHost(ragged, "i: grid.x, thread.x 32; j: serial"), "");
  EXPECT_EQ(checkOnHost(ragged, "i: grid.x, thread.y 4; j: serial, thread.x 8"), "");
  Kernel nested = fromSource(
      "kernel nested(n: int, nnz: int, rowptr: i32[n + 1], val: f32[nnz], out y: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = max(j in 0..i + 1, sum(p in rowptr[j]..rowptr[j + 1], val[p]));\n"
      "  }\n"
      "}\n",
      "nested", {{"n", 33}, {"nnz", 101}});
  EXPECT_EQ(checkOnHost(nested, "i: grid.x, thread.x 32; j: serial; p: serial"), "");
  // A range whose bounds read at the index of another one (rows of rows).
  Kernel rowsOfRows = fromSource(
      "kernel rows2(n: int, m: int, r: i32[n + 1], q: i32[m + 1], v: f32[m], w: f32[n], out y: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = sum(p in r[i]..r[i + 1], s in q[p]..q[p + 1], v[s] * w[p]);\n"
      "  }\n"
      "}\n",
      "rows2", {{"n", 37}, {"m", 53}});
  EXPECT_EQ(checkOnHost(rowsOfRows, "i: grid.x, thread.x 32; p: serial; s: serial"), "");
  EXPECT_EQ(checkOnHost(rowsOfRows, "i: grid.x, thread.y 8; p: serial; s: serial, thread.x 4"), "");
}

namespace {

// A kernel of one nest `for i in 0..n { d[i] = <value>; }` over q: T[n, D] and r: T[m, D].
Kernel nestedKernel(const std::string& value, const std::string& type, int64_t n, int64_t m, int64_t D) {
  std::string src = fmt::format(
      "kernel nested(n: int, m: int, D: int, q: {0}[n, D], r: {0}[m, D], out d: {0}[n]) {{\n"
      "  for i in 0..n {{\n    d[i] = {1};\n  }}\n}}\n", type, value);
  Diagnostics diags;
  auto prog = parseProgram("nested.rtcg", src, diags);
  EXPECT_TRUE(prog.has_value()) << src;
  auto bound = prog ? bindSizes(*prog->find("nested"), {{"n", n}, {"m", m}, {"D", D}}, diags) : std::nullopt;
  EXPECT_TRUE(bound.has_value()) << src;
  return bound ? *bound : Kernel{};
}

const char* kDistance = "min(j in 0..m, sum(e in 0..D, (q[i, e] - r[j, e]) * (q[i, e] - r[j, e])))";

}  // namespace

// A reg part on the index of an outer reduction (`min(j, sum(e, ...))`): the inner sums of R
// values of j per step, then folded; sizes no tile divides (values of j past m are left out).
TEST(HostEmulation, OuterRegisterTilesOfNestedReductions) {
  const Kernel k = nestedKernel(kDistance, "f32", 101, 77, 13);
  EXPECT_EQ(checkOnHost(k, "i: grid.x, reg 2, thread.x 16; j: serial, thread.y 2, reg 4; e: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(k, "i: grid.x, thread.x 32; j: serial, reg 8; e: serial"), "");
  // Every outer operator, with inner reductions of other shapes; f64 too.
  EXPECT_EQ(checkOnHost(nestedKernel("max(j in 0..m, sum(e in 0..D, q[i, e] * r[j, e]))", "f32", 53, 29, 7),
                        "i: grid.x, reg 4, thread.x 4; j: serial, reg 3; e: serial"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("sum(j in 0..m, max(e in 0..D, q[i, e] * r[j, e]) + r[j, 0])", "f64", 53, 29, 7),
                        "i: grid.x, thread.x 8; j: serial, unroll 2, reg 4; e: serial, unroll 3"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("product(j in 0..m, 1.0 + 0.125 * sum(e in 0..D, q[i, e] * r[j, e]))", "f64", 41, 23, 5),
                        "i: grid.x, reg 2, thread.x 8; j: serial, reg 4; e: serial"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("min(j in 0..m, sum(e in 0..D, abs(q[i, e] - r[j, e])) + min(e in 0..D, q[i, e] * r[j, e]))", "f32", 37, 31, 6),
                        "i: grid.x, thread.x 8, reg 2; j: serial, reg 5; e: serial"), "");
}

// The outer tile with its operands staged (r per step of j, q once per block), double-buffered,
// split across the threads of a block and across blocks (the last block folds the partials).
TEST(HostEmulation, OuterRegisterTilesStagedAndSplit) {
  const Kernel k = nestedKernel(kDistance, "f32", 101, 77, 13);
  EXPECT_EQ(checkOnHost(k, "i: grid.x, reg 2, thread.x 16; j: serial, thread.y 2, reg 4; e: serial; shared: q, r"), "");
  EXPECT_EQ(checkOnHost(k, "i: grid.x, reg 2, thread.x 16; j: grid.y, serial 3, thread.y 2, reg 4; e: serial, unroll 4; shared: q, r; buffers: 2"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("max(j in 0..m, sum(e in 0..D, q[i, e] * r[j, e]))", "f64", 53, 29, 7),
                        "i: grid.x, thread.x 8, reg 2; j: grid.y, serial 2, serial 2, reg 3; e: serial; shared: r"), "");
  // The space's vector layout: x's points neighbours in the thread, both tiles transposed.
  EXPECT_EQ(checkOnHost(k, "i: grid.x, thread.x 8, reg 4; j: grid.y, serial 3, thread.y 4, reg 4; e: serial, unroll 13; shared: q^T, r^T; buffers: 2"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("product(j in 0..m, 1.0 + 0.125 * sum(e in 0..D, q[i, e] * r[j, e]))", "f32", 41, 23, 5),
                        "i: grid.x, thread.x 4; j: serial, thread.y 8, reg 2; e: serial; shared: q, r"), "");
}

// Rows that may be empty (row 0 of `j in 0..i`, the last row of `k in i + 1..n`) and rows that
// start past 0 (`j in i..n`), at a size no tile divides.
Kernel strictTriangles() {
  return fromSource(
      "kernel strict(n: int, a: f32[n, n], x: f32[n], out y: f32[n], out z: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = sum(j in 0..i, a[i, j] * x[j]);\n"
      "    z[i] = max(j in i..n, a[j, i]) + sum(k in i + 1..n, a[i, k] * x[k]);\n"
      "  }\n"
      "}\n",
      "strict", {{"n", 45}});
}

// Triangular reduction ranges (`j in 0..i + 1`: each row its own length) split across the threads
// of a block, at a size no tile divides: a warp or a group of lanes per row striding from the row's
// start, several rows per block, runs of 4 per thread, lanes past a warp, and the reduction also
// split across blocks (each block's share of the hull, clamped to the row's range).
TEST(HostEmulation, TriangularRowsSplitAcrossThreads) {
  rtcgtest::CaseSample sample(2);
  Kernel trmv = exampleKernel("trmv.rtcg", "trmv", {{"n", 301}});
  EXPECT_EQ(checkOnHost(trmv, "i: grid.x, thread.y 8; j: serial, thread.x 32"), "");
  EXPECT_EQ(checkOnHost(trmv, "i: grid.x, thread.y 4; j: serial, unroll 2, thread.x 64, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.y 32; j: serial, thread.x 4"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x; j: serial, thread.x 256"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, serial 3, thread.y 2; j: serial, thread.x 16, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.y 2; j: serial, grid.y 3, thread.x 32"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.y 2; j: grid.y, serial 2, thread.x 32"), "");
  Kernel strict = strictTriangles();
  EXPECT_EQ(checkOnHost(strict, "i: grid.x, thread.y 4; j: serial, thread.x 8; k: serial, thread.z 2"), "");
  EXPECT_EQ(sampledCheck(sample, strict, "i: grid.x, thread.y 2; j: serial, thread.x 32, unroll 2; k: serial"), "");
}

// Cyclic rows (`i: serial, grid.x G, ...`: row i = (s * G + blockIdx.x) * T + threadIdx.y, each
// block's rows spread over the whole triangle) at sizes no tile or grid divides (37, 1003): a warp
// or a group of lanes per row, a block a row with runs of 4, the reduction also split across blocks;
// and on a triangular output domain, block rows walked cyclically with the columns on the grid
// (blocks past the diagonal skip that position) or in the block.
TEST(HostEmulation, CyclicRowsOfATriangle) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {37, 1003}) {
    SCOPED_TRACE(n);
    Kernel trmv = exampleKernel("trmv.rtcg", "trmv", {{"n", n}});
    EXPECT_EQ(checkOnHost(trmv, "i: serial, grid.x 3, thread.y 4; j: serial, thread.x 8"), "");
    EXPECT_EQ(checkOnHost(trmv, "i: serial, grid.x 5; j: serial, unroll 2, thread.x 64, unroll 4"), "");
    EXPECT_EQ(sampledCheck(sample, trmv, "i: serial, grid.x 7, thread.y 2; j: serial, thread.x 32, unroll 2"), "");
    EXPECT_EQ(sampledCheck(sample, trmv, "i: serial, grid.x 2, thread.y 2; j: serial, grid.y 3, thread.x 32"), "");
  }
  Kernel syrk = exampleKernel("syrk.rtcg", "syrk", {{"n", 45}, {"K", 13}});
  EXPECT_EQ(checkOnHost(syrk, "i: serial, grid.y 3, thread.y 4, reg 2; j: grid.x, thread.x 8; k: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(syrk, "i: serial, grid.x 4, thread.y 4; j: serial, thread.x 16; k: serial, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "i: serial, grid.y 2, thread.y 4, reg 2; j: grid.x, thread.x 4, reg 2; k: serial; "
                                       "shared: a[i,k]^T, a[j,k]^T"), "");
  // A triangular matrix product (the reduction's range follows the output's row: a block row near
  // the bottom takes every step, one at the top a few), its register-tiled block rows walked
  // cyclically (as the space offers them, G about the resident block rows), at odd sizes.
  Kernel trmm = fromSource(
      "kernel trmm(n: int, m: int, a: f32[n, n], b: f32[n, m], out c: f32[n, m]) {\n"
      "  for i in 0..n, j in 0..m { c[i, j] = sum(k in 0..i + 1, a[i, k] * b[k, j]); }\n"
      "}\n",
      "trmm", {{"n", 37}, {"m", 29}});
  EXPECT_EQ(checkOnHost(trmm, "i: serial, grid.y 3, thread.y 4, reg 2; j: grid.x, reg 2, thread.x 8; k: serial, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, trmm, "i: serial, grid.y 2, thread.y 2, reg 4; j: grid.x, thread.x 4, reg 4; k: serial, unroll 8"), "");
}

// Tiles staged per step along a triangular reduction range: the block's steps run over the hull of
// its threads' ranges (the same steps and barriers for all), steps inside every thread's range run
// unguarded and the others check each thread's (or register point's) own range; at sizes no tile
// or step divides, with one buffer, two, and three filled by cp.async. trmm (`k in 0..i + 1`, hi
// varying with a register-tiled i), trmv (hi varying with a thread index) and rows that start past
// 0 (`j in i..n`, lo varying) or are empty (`j in 0..i`).
TEST(HostEmulation, StagedStepsOverTheBlockHullOfTriangularRows) {
  rtcgtest::CaseSample sample(2);
  for (int64_t n : {37, 131}) {
    Kernel trmm = exampleKernel("trmm.rtcg", "trmm", {{"n", n}});
    EXPECT_EQ(checkOnHost(trmm, "i: grid.y, thread.y 4, reg 2; j: grid.x, reg 2, thread.x 4; k: serial, unroll 4; "
                                "shared: a^T, b"), "") << n;
    EXPECT_EQ(checkOnHost(trmm, "i: grid.y, thread.y 8, reg 4; j: grid.x, reg 4, thread.x 8; k: serial, unroll 8; "
                                "shared: a^T, b; buffers: 2"), "") << n;
    EXPECT_EQ(sampledCheck(sample, trmm, "i: grid.y, thread.y 4, reg 4; j: grid.x, reg 4, thread.x 8; k: serial, "
                                         "unroll 16; shared: a^T, b; buffers: 3; copy: async"), "") << n;
    EXPECT_EQ(sampledCheck(sample, trmm, "i: grid.y, thread.y 8; j: grid.x, thread.x 16; k: serial, unroll 4; shared: a, b"),
              "") << n;
    Kernel trmv = exampleKernel("trmv.rtcg", "trmv", {{"n", n}});
    EXPECT_EQ(checkOnHost(trmv, "i: grid.x, thread.y 8; j: serial, thread.x 32; shared: a"), "") << n;
    EXPECT_EQ(checkOnHost(trmv, "i: grid.x, thread.y 4; j: serial, unroll 2, thread.x 16; shared: a; buffers: 2"), "") << n;
    EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.x 16, reg 2; j: serial, unroll 4; shared: a"), "") << n;
    // One value a step (a one-part serial loop), and rows that move with a serial part of i.
    EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.x 8; j: serial; shared: a"), "") << n;
    EXPECT_EQ(checkOnHost(trmv, "i: grid.x, serial 3, thread.y 2; j: serial, thread.x 16, unroll 2; shared: a"), "") << n;
  }
  // Cyclic rows (a serial part of i outside its grid part): the hull is the block's at each
  // position of that serial loop, computed inside it.
  Kernel trmm = exampleKernel("trmm.rtcg", "trmm", {{"n", 131}});
  EXPECT_EQ(checkOnHost(trmm, "i: serial, grid.y 3, thread.y 8, reg 2; j: grid.x, thread.x 16, reg 2; k: serial, unroll 4; "
                              "shared: a^T, b"), "");
  EXPECT_EQ(sampledCheck(sample, trmm, "i: serial, grid.y 2, thread.y 4, reg 4; j: grid.x, thread.x 8, reg 4; k: serial, "
                                       "unroll 8; shared: a^T, b; buffers: 2"), "");
  Kernel strict = strictTriangles();
  EXPECT_EQ(checkOnHost(strict, "i: grid.x, thread.y 4; j: serial, thread.x 8; k: serial, thread.z 2; shared: a[j,i]"), "");
  EXPECT_EQ(checkOnHost(strict, "i: grid.x, thread.x 8, reg 2; j: serial, unroll 4; k: serial, unroll 2; shared: a[i,j], a[i,k]"),
            "");
}

// Register tiles over the rows of a triangle: the points' loop runs over the union of their rows
// (clamped to the hull), each point's updates guarded by its own row; with the reduction split
// across threads too, and with x staged whole per block (points outside the domain read the tile
// unguarded, but never outside their own row).
TEST(HostEmulation, RegisterTilesOverTriangularRows) {
  rtcgtest::CaseSample sample(2);
  Kernel trmv = exampleKernel("trmv.rtcg", "trmv", {{"n", 301}});
  EXPECT_EQ(checkOnHost(trmv, "i: grid.x, thread.x 32, reg 4; j: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(trmv, "i: grid.x, reg 2, thread.y 4; j: serial, thread.x 32, unroll 2"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, thread.x 64, reg 2; j: serial; shared: x"), "");
  EXPECT_EQ(sampledCheck(sample, trmv, "i: grid.x, serial 2, thread.x 16, reg 3; j: serial, grid.y 2, unroll 2"), "");
  Kernel strict = strictTriangles();
  EXPECT_EQ(checkOnHost(strict, "i: grid.x, thread.x 8, reg 3; j: serial, unroll 2; k: serial"), "");
  EXPECT_EQ(sampledCheck(sample, strict, "i: grid.x, reg 2, thread.y 2; j: serial, thread.x 16; k: serial, unroll 4"), "");
}

// A triangular output domain (syrk: the lower triangle of a a^T) at sizes no tile divides: the
// blocks above the diagonal leave at once, also in cooperative code (a reduction split across
// threads, or across blocks, where every block of an empty tile leaves together).
TEST(HostEmulation, TriangularOutputDomainSkipsEmptyBlocks) {
  rtcgtest::CaseSample sample(2);
  Kernel syrk = exampleKernel("syrk.rtcg", "syrk", {{"n", 45}, {"K", 13}});
  EXPECT_EQ(checkOnHost(syrk, "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(syrk, "i: grid.y, thread.y 4; j: grid.x, thread.x 4; k: serial, grid.z 2, thread.z 4"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "i: grid.x, thread.x 16; j: grid.y, thread.y 8, reg 2; k: serial, unroll 4"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "j: grid.x, serial 2, thread.x 8; i: grid.y, thread.y 4; k: serial"), "");
}

// Two tiles of one array (`shared: a[i,k], a[j,k]`): syrk's a[i, k] and a[j, k] staged per step
// of k as tiles that move with i and with j, at sizes no tile or step divides (n = 45, K = 13), so
// that the diagonal blocks guard their points above the diagonal and the last step is partial:
// one buffer, two (prefetched through registers), three filled by cp.async, transposed or not,
// and one access staged while the other is read from global memory.
TEST(HostEmulation, TwoTilesOfOneArrayOnATriangle) {
  rtcgtest::CaseSample sample(2);
  Kernel syrk = exampleKernel("syrk.rtcg", "syrk", {{"n", 45}, {"K", 13}});
  EXPECT_EQ(checkOnHost(syrk, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 4, reg 4; k: serial, unroll 4; "
                              "shared: a[i,k]^T, a[j,k]^T; buffers: 3; copy: async"), "");
  EXPECT_EQ(checkOnHost(syrk, "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 8; "
                              "shared: a[i,k], a[j,k]; buffers: 2"), "");
  // Split-K as the space offers it at 2048 x 2048: each block stages its share's steps of both tiles.
  EXPECT_EQ(checkOnHost(syrk, "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 4, reg 2; k: grid.z, serial 2, unroll 2; "
                              "shared: a[i,k]^T, a[j,k]^T; buffers: 2"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, unroll 4; "
                                       "shared: a[j,k], a[i,k]"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8, reg 2; k: serial, unroll 2; "
                                       "shared: a[j,k]^T; buffers: 2"), "");
  EXPECT_EQ(sampledCheck(sample, syrk, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 4, reg 4; k: serial, unroll 8; "
                                       "shared: a[i,k]^T, a[j,k]^T; buffers: 4; copy: async"), "");
}

// Two accesses of one array in a triangular reduction (`j in 0..i + 1` over a[i, k] * a[j, k]):
// a[i, k] does not move with the reduction and is staged once per block (its own tile), a[j, k]
// is read from global memory, or staged per step over the block's hull of its rows; with a grid
// part on j (a block's share of the rows' hull) that staging is refused.
TEST(HostEmulation, TwoAccessesOfOneArrayInATriangularReduction) {
  Kernel tri = fromSource(
      "kernel trisyrk(n: int, K: int, a: f32[n, K], out y: f32[n, K]) {\n"
      "  for i in 0..n, k in 0..K { y[i, k] = sum(j in 0..i + 1, a[i, k] * a[j, k]); }\n"
      "}\n",
      "trisyrk", {{"n", 37}, {"K", 29}});
  EXPECT_EQ(checkOnHost(tri, "i: grid.y, thread.y 4, reg 2; k: grid.x, thread.x 16; j: serial, unroll 4; shared: a[i,k]"), "");
  EXPECT_EQ(checkOnHost(tri, "i: grid.y, thread.y 8; k: grid.x, thread.x 8, reg 2; j: serial, thread.z 2; shared: a[i,k]^T"), "");
  EXPECT_EQ(checkOnHost(tri, "i: grid.y, thread.y 8; k: grid.x, thread.x 8; j: serial; shared: a[j,k]"), "");
  EXPECT_EQ(checkOnHost(tri, "i: grid.y, thread.y 4, reg 2; k: grid.x, thread.x 16; j: serial, unroll 4; "
                             "shared: a[i,k], a[j,k]; buffers: 2"), "");
  auto refused = validateSchedule(
      tri, *parseSchedule("i: grid.y, thread.y 8; k: grid.x, thread.x 8; j: grid.z, serial 2; shared: a[j,k]").schedule);
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_NE(refused[0].find("access 'a[j,k]' cannot be staged in shared memory: the reduction index 'j' it would be "
                            "staged along has bounds that vary with other indices, and 'j' has a grid.z part"),
            std::string::npos) << refused[0];
}

// Two tiles of one array in an outer reduction (the nearest other point of one set: x[i, e] and
// x[j, e] under min over j of a sum over e): x[i, e] staged once per block, x[j, e] per step of
// j, also split across blocks (grid parts on j) and with j's register values, at sizes no tile
// divides.
TEST(HostEmulation, TwoTilesOfOneArrayInAnOuterReduction) {
  Kernel near = fromSource(
      "kernel selfnear(n: int, D: int, x: f32[n, D], out d: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    d[i] = min(j in 0..n, sum(e in 0..D, (x[i, e] - x[j, e]) * (x[i, e] - x[j, e])));\n"
      "  }\n"
      "}\n",
      "selfnear", {{"n", 45}, {"D", 7}});
  EXPECT_EQ(checkOnHost(near, "i: grid.x, thread.x 8, reg 2; j: grid.y, serial 2, thread.y 4, reg 2; e: serial, unroll 7; "
                              "shared: x[i,e]^T, x[j,e]^T"), "");
  EXPECT_EQ(checkOnHost(near, "i: grid.x, thread.x 8; j: serial, thread.y 4, reg 2; e: serial; shared: x[i,e], x[j,e]; "
                              "buffers: 2"), "");
}

// The outer reduction split across threads without a register tile, each operator combined with
// its own identity-free tree: min by warp shuffles (j on thread.x 32), product and sum by the
// shared-memory tree over a lane count that is not a power of two, max across blocks.
TEST(HostEmulation, OuterReductionsSplitAcrossThreadsAndBlocks) {
  EXPECT_EQ(checkOnHost(nestedKernel(kDistance, "f32", 19, 77, 13), "i: grid.x; j: serial, thread.x 32; e: serial, unroll 4"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("product(j in 0..m, 1.0 + 0.125 * sum(e in 0..D, q[i, e] * r[j, e]))", "f64", 23, 41, 5),
                        "i: grid.x, thread.x 4; j: serial, thread.y 3, reg 2; e: serial"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("sum(j in 0..m, max(e in 0..D, q[i, e] * r[j, e]))", "f32", 23, 41, 5),
                        "i: grid.x, thread.x 4; j: serial, thread.y 5; e: serial"), "");
  EXPECT_EQ(checkOnHost(nestedKernel("max(j in 0..m, sum(e in 0..D, q[i, e] * r[j, e]))", "f32", 7, 101, 9),
                        "i: grid.x, thread.x 8; j: grid.y, serial 4, thread.y 4, reg 2; e: serial; shared: q^T, r"), "");
}

namespace {

// A skewed CSR matrix of n rows (a power law in miniature): many empty rows and rows of 1 to 4
// values, and a few rows of hundreds to thousands (the first row, the last, rows at the edges of
// blocks of 4, 8 and 32 rows, one just past the threshold 32), with columns spread over 0..n-1.
std::vector<int64_t> skewedRowLengths(int64_t n) {
  std::vector<int64_t> len(size_t(n), 0);
  for (int64_t r = 0; r < n; ++r) len[size_t(r)] = r % 7 == 3 ? 0 : r % 5;
  for (auto [r, l] : std::vector<std::pair<int64_t, int64_t>>{{0, 1500}, {7, 33}, {31, 700}, {32, 64}, {255, 999}, {256, 1200}, {n - 1, 2001}})
    len[size_t(r)] = l;
  return len;
}

// The kernel `src` with sizes n and nnz (the sum of the lengths), its rowptr and col set to the
// skewed matrix, the other inputs random.
std::pair<Kernel, HostArgs> skewedCsr(const std::string& src, const std::string& name, int64_t n) {
  const std::vector<int64_t> len = skewedRowLengths(n);
  int64_t nnz = 0;
  for (int64_t l : len) nnz += l;
  Kernel k = fromSource(src, name, {{"n", n}, {"nnz", nnz}});
  HostArgs args(k);
  fillInputs(k, args, 7);
  HostArray& rowptr = args.array("rowptr");
  HostArray& col = args.array("col");
  int64_t at = 0;
  for (int64_t r = 0; r < n; ++r) {
    rowptr.setInt(r, at);
    for (int64_t q = 0; q < len[size_t(r)]; ++q, ++at) col.setInt(at, (at * 7919 + r) % n);
  }
  rowptr.setInt(n, at);
  return {k, std::move(args)};
}

const char* const kSpmvF32 =
    "kernel spmv(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f32[nnz], x: f32[n], out y: f32[n]) {\n"
    "  for i in 0..n { y[i] = sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]); }\n"
    "}\n";

}  // namespace

// `long_rows:` where a block has more threads than the domain has points along an index (16 values
// of j on 128 threads): only points inside the domain hand a long range over. The differential
// fuzzer found threads past the edge handing over ranges of their own, whose points the block then
// computed and stored past the rows (heap corruption in the emulation, wrong rows on a GPU).
TEST(HostEmulation, LongRowsOnlyOfPointsInsideTheDomain) {
  const char* src = R"(kernel g(n: int, m: int, head: i32[n, m], t: f32[n, m], out c: f32[n, m]) {
  for i in 0..n, j in 0..m { c[i, j] = max(q in head[i, j]..i + 1, t[q, j]); }
})";
  Diagnostics diags;
  auto prog = parseProgram("g.rtcg", src, diags);
  ASSERT_TRUE(prog) << diags.render("g.rtcg", src);
  for (int64_t m : {16, 5}) {
    auto k = bindSizes(prog->kernels[0], {{"n", 37}, {"m", m}}, diags);
    ASSERT_TRUE(k);
    for (const char* s : {"i: grid.x; j: serial, thread.x 128; q: serial; stores: streaming; long_rows: 32",
                          "i: grid.x; j: serial, thread.x 32; q: serial; long_rows: 8"})
      EXPECT_EQ(checkOnHost(*k, s, 0.0), "") << m << " " << s;
  }
}

// `long_rows: N`: ranges longer than N go from their lanes to the whole block, on a skewed matrix at
// a size no tile divides (613 rows: blocks of 5, 8, 16, 96 rows leave a partial last block), long rows
// at the edges of blocks and the last row. Run twice with the output poisoned in between (every
// element written, by its lanes or by the block) and in reversed and shuffled block order.
TEST(HostEmulation, LongRowsGoToTheWholeBlock) {
  EmulationOptions twice;
  twice.runs = 2;
  {
    auto [k, args] = skewedCsr(kSpmvF32, "spmv", 613);
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.y 8; p: serial, thread.x 4; long_rows: 32", args, 1e-5, {}, twice), "");
    // A block of 20 threads (not whole warps): the block combines by a tree in shared memory.
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.y 5; p: serial, thread.x 4; long_rows: 20", args), "");
    EmulationOptions shuffled;
    shuffled.blockOrder = 2;
    // Lanes on thread.y (combined through shared memory), rows on thread.x and a serial part.
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, serial 3, thread.x 32; p: serial, thread.y 3; long_rows: 100", args, 1e-5, {},
                              shuffled),
              "");
  }
  {
    // f64, a statement around the sum, more lanes than a warp.
    auto [k, args] = skewedCsr(
        "kernel axpy(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f64[nnz], x: f64[n], out y: f64[n]) {\n"
        "  for i in 0..n { y[i] = 0.5 * x[i] + 2.0 * sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]); }\n"
        "}\n",
        "axpy", 613);
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.y 2; p: serial, thread.x 64; long_rows: 256", args, 1e-12, {}, twice), "");
  }
  {
    // max (no atomics needed: the block combines by a tree; an empty row's -inf is clamped).
    auto [k, args] = skewedCsr(
        "kernel rowstats(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f32[nnz], x: f32[n], out y: f32[n]) {\n"
        "  for i in 0..n {\n"
        "    y[i] = max(-1.0, max(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]));\n"
        "  }\n"
        "}\n",
        "rowstats", 613);
    EmulationOptions reversed;
    reversed.blockOrder = 1;
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.y 16; p: serial, thread.x 8; long_rows: 16", args, 1e-5, {}, reversed), "");
  }
}

// `long_rows: N` with one thread per row (the reduction serial, no lanes): a long row's thread hands
// it to the block, which combines through the combine buffer the pass declares itself. Skewed rows at
// sizes no block divides (613, 1003), blocks of whole warps (shuffles) and not (a tree), p unrolled
// by 4 (rows of 1 to 3 shorter than a step), f32 and f64 sums, max, product; output poisoned between
// two runs, blocks in reversed and shuffled order.
TEST(HostEmulation, LongRowsOnARowAThread) {
  EmulationOptions twice;
  twice.runs = 2;
  EmulationOptions shuffled;
  shuffled.blockOrder = 2;
  for (int64_t n : {613, 1003}) {
    auto [k, args] = skewedCsr(kSpmvF32, "spmv", n);
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 128; p: serial; long_rows: 32", args, 1e-5, {}, twice), "") << n;
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 256; p: serial, unroll 4; long_rows: 16", args, 1e-5, {}, shuffled),
              "")
        << n;
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 40; p: serial, unroll 4; long_rows: 64", args), "") << n;
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, serial 3, thread.x 64; p: serial; long_rows: 32", args, 1e-5, {}, twice), "")
        << n;
  }
  {
    auto [k, args] = skewedCsr(
        "kernel axpy(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f64[nnz], x: f64[n], out y: f64[n]) {\n"
        "  for i in 0..n { y[i] = 0.5 * x[i] + 2.0 * sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]); }\n"
        "}\n",
        "axpy", 1003);
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 128; p: serial, unroll 4; long_rows: 32", args, 1e-12, {}, twice), "");
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 24; p: serial; long_rows: 8", args, 1e-12, {}, shuffled), "");
  }
  for (const char* op : {"max", "min"}) {
    auto [k, args] = skewedCsr(fmt::format("kernel rowstats(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], "
                                           "val: f64[nnz], x: f64[n], out y: f64[n]) {{\n"
                                           "  for i in 0..n {{ y[i] = {0}(0.0, {0}(p in rowptr[i]..rowptr[i + 1], "
                                           "val[p] * x[col[p]])); }}\n"
                                           "}}\n",
                                           op),
                               "rowstats", 613);
    EmulationOptions reversed;
    reversed.blockOrder = 1;
    EXPECT_EQ(checkOnHostWith(k, "i: grid.x, thread.x 96; p: serial; long_rows: 16", args, 1e-12, {}, reversed), "") << op;
  }
}

// The `long_rows` candidates the space offers for spmv on 1003 rows (lanes per row and a row a
// thread, both thresholds, unrolled or not) runs correctly on the skewed matrix; the space offers
// the row-a-thread shape at all. (A device model of 4 multiprocessors: 1003 rows make too few
// blocks of 128 rows to keep for a whole H100.)
TEST(HostEmulation, LongRowsCandidatesOfTheSpace) {
  auto [k, args] = skewedCsr(kSpmvF32, "spmv", 1003);
  SpaceOptions o;
  o.device.multiprocessors = 4;
  Space space = enumerateSchedules(k, o);
  rtcgtest::CaseSample sample(3);  // every third by default, all under RTCG_FULL_TESTS=1
  int rowAThread = 0, checked = 0;
  for (const Candidate& c : space.candidates) {
    if (c.schedule.nests.empty() || c.schedule.nests[0].longRows == 0) continue;
    if (c.text.find("thread.x", c.text.find("p:")) == std::string::npos) ++rowAThread;
    ++checked;
    if (sample.keep()) EXPECT_EQ(checkOnHostWith(k, c.text, args), "") << c.text;
  }
  EXPECT_EQ(rowAThread, 8);  // 128 and 256 threads, p serial or unrolled by 4, N 16 or 32
  EXPECT_GE(checked, rowAThread + 4);
}

// `long_rows` in nests fused into one launch (`fuse: 2`, after merging both): each nest keeps its
// own list of long rows and its own block pass, the local row statistic lives in shared memory, and
// the second nest reads it for rows the block passed to its whole threads in the first.
TEST(HostEmulation, LongRowsInFusedNests) {
  auto [k, args] = skewedCsr(
      "kernel two(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f32[nnz], x: f32[n], out y: f32[n]) {\n"
      "  local t: f32[n];\n"
      "  for i in 0..n { t[i] = sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]); }\n"
      "  for i in 0..n { y[i] = sum(p in rowptr[i]..rowptr[i + 1], val[p] * t[i]) + t[i]; }\n"
      "}\n",
      "two", 613);
  EmulationOptions o;
  o.runs = 2;
  o.blockOrder = 2;
  const std::string nest = "i: grid.x, thread.y 8; p: serial, thread.x 4; long_rows: 32";
  EXPECT_EQ(checkOnHostWith(k, nest + "; fuse: 2 | " + nest, args, 1e-5, {}, o), "");
  EXPECT_EQ(checkOnHostWith(k, nest + "; fuse: 2 | i: grid.x, thread.y 8; p: serial, thread.x 4", args, 1e-5, {}, o), "");
  // A row a thread in both: 32 threads of 32 rows each, the block passes through the pass's own buffers.
  const std::string row = "i: grid.x, thread.x 32; p: serial; long_rows: 32";
  EXPECT_EQ(checkOnHostWith(k, row + "; fuse: 2 | " + row, args, 1e-5, {}, o), "");
}

// Where the block path cannot stand in for a point's lanes, the schedule is refused with the reason.
TEST(HostEmulation, LongRowsRefusedWhereTheyCannotApply) {
  Kernel spmv = exampleKernel("spmv.rtcg", "spmv", {{"n", 301}, {"nnz", 2003}});
  auto reasons = [&](const Kernel& k, const std::string& text) {
    auto parsed = parseSchedule(text);
    EXPECT_TRUE(parsed.ok()) << text << ": " << parsed.error;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);  // prints as it parses
    std::string all;
    for (const std::string& r : validateSchedule(k, *parsed.schedule)) all += r + "\n";
    return all;
  };
  EXPECT_EQ(reasons(spmv, "i: grid.x, thread.y 8; p: serial, thread.x 4; long_rows: 32"), "");
  // One thread per row (no lanes) hands its long rows to the block too.
  EXPECT_EQ(reasons(spmv, "i: grid.x, thread.x 64; p: serial; long_rows: 32"), "");
  EXPECT_EQ(reasons(spmv, "i: grid.x, thread.x 64; p: serial, unroll 4; long_rows: 32"), "");
  EXPECT_NE(reasons(spmv, "i: grid.x, reg 2, thread.x 64; p: serial; long_rows: 32").find("long_rows: 32"),
            std::string::npos);
  EXPECT_NE(reasons(spmv, "i: grid.x, thread.x 64; p: serial, grid.y 4, thread.y 2; long_rows: 32").find("split across blocks"),
            std::string::npos);
  EXPECT_NE(reasons(spmv, "i: grid.x, thread.x 32, reg 2; p: serial, thread.y 4; long_rows: 32").find("long_rows: 32"),
            std::string::npos);
  EXPECT_NE(reasons(matmul(37), "i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial; long_rows: 8")
                .find("one data-dependent range"),
            std::string::npos);
  EXPECT_FALSE(parseSchedule("i: grid.x; p: serial; long_rows: 0").ok());
}

// The default schedules of few output points with long sums (schedule/Schedule.h): a block per
// point (gemv), the transposed product's 32 points a block with 8 threads a sum, a dot product over
// 128 blocks; at sizes no block divides, against the reference.
TEST(HostEmulation, FewPointsDefaultSchedulesMatchTheReference) {
  const Kernel gemv = exampleKernel("gemv.rtcg", "", {{"m", 301}, {"n", 700}});
  const Kernel gemvT = fromSource(R"(kernel t(m: int, n: int, a: f32[m, n], x: f32[m], out y: f32[n]) {
    for j in 0..n { y[j] = sum(i in 0..m, a[i, j] * x[i]); }
  })", {{"m", 333}, {"n", 45}});
  const Kernel dot = exampleKernel("dot.rtcg", "", {{"n", 140001}});
  // Below a hundred points or so the sum is split across blocks too: 4 rows of 100003 over
  // ceil(256 / 4) = 64 blocks each; a layernorm of 7 rows of 9001 over 8 (9001 / 1024) blocks.
  const Kernel gemv4 = exampleKernel("gemv.rtcg", "", {{"m", 4}, {"n", 100003}});
  const Kernel layernorm = exampleKernel("layernorm.rtcg", "", {{"m", 7}, {"n", 9001}});
  const std::pair<const Kernel*, const char*> cases[] = {
      {&gemv, "i: grid.x; j: serial, thread.x 256"},
      {&gemvT, "j: grid.x, thread.x 32; i: serial, unroll 8, thread.y 8"},
      {&dot, "i: serial, grid.x 128, thread.x 256"},
      {&gemv4, "i: grid.y; j: serial, grid.x 64, thread.x 256"},
      {&layernorm, "i: grid.y; j: serial, grid.x 8, thread.x 256 | i: grid.y; j: serial, grid.x 8, thread.x 256 | "
                   "i: grid.y; j: grid.x, thread.x 256"}};
  for (const auto& [k, expected] : cases) {
    const std::string text = printSchedule(defaultSchedule(*k));
    EXPECT_EQ(text, expected);
    EXPECT_EQ(checkOnHost(*k, text, 1e-5), "") << k->name << " " << text;
  }
}
