#include <gtest/gtest.h>

#include <fmt/format.h>
#include <fstream>
#include <sstream>
#include <thread>

#include "codegen/CAst.h"
#include "codegen/CPrinter.h"
#include "codegen/EmitContext.h"
#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/TestKernels.h"
#include "support/Error.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

Schedule sched(const std::string& text) {
  auto r = parseSchedule(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error;
  return r.ok() ? *r.schedule : Schedule{};
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Emits, compiles with NVRTC, and checks that every kernel's resources were read back.
EmittedModule emitAndCompile(const Kernel& k, const Schedule& s) {
  EmittedModule m = emitCuda(k, s);
  CudaCompileResult r = compileCuda(m.source, k.name + ".cu");
  EXPECT_TRUE(r.success) << printSchedule(s) << "\n" << r.log << "\n" << m.source;
  if (r.success) {
    EXPECT_FALSE(r.cubin.empty());
    for (const LaunchSpec& l : m.launches) {
      const KernelResources* res = r.find(l.function);
      EXPECT_NE(res, nullptr) << l.function << "\n" << r.log;
      if (res) EXPECT_GT(res->registers, 0) << l.function;
    }
  }
  if (const char* dump = std::getenv("RTCG_DUMP_CUDA")) std::ofstream(std::string(dump) + "/" + k.name + ".cu") << m.source;
  return m;
}

// An example of examples/ bound to `sizes`.
Kernel example(const std::string& name, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + name + ".rtcg");
  std::stringstream text;
  text << in.rdbuf();
  Diagnostics diags;
  auto prog = parseProgram(name + ".rtcg", text.str(), diags);
  if (!prog) throw Error(diags.render(name, text.str()));
  auto bound = bindSizes(prog->kernels[0], sizes, diags);
  if (!bound) throw Error(diags.render(name, text.str()));
  return *bound;
}

}  // namespace

TEST(Emitter, MatmulRegisterTile) {
  EmittedModule m = emitAndCompile(matmul(500), sched("i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4"));
  ASSERT_EQ(m.launches.size(), 1u);
  const LaunchSpec& l = m.launches[0];
  EXPECT_EQ(l.function, "matmul_0");
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{16, 8, 1}));
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{32, 16, 1}));
  EXPECT_EQ(l.params, (std::vector<int>{1, 2, 3}));
}

TEST(Emitter, CompilesEveryKernelUnderManySchedules) {
  for (int64_t n : {500, 17, 1}) {
    struct Case {
      Kernel k;
      std::vector<std::string> schedules;
    } cases[] = {
        {matmul(n),
         {"i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4",
          "j: grid.x, thread.x 16, reg 2; i: grid.y, thread.y 8, reg 2; k: unroll, serial 3",
          "i: grid.y, serial 3; j: grid.x, unroll 2, thread.x 64; k: unroll, serial 5",
          "i: serial, reg 2; j: thread.x; k: serial"}},
        {axpby(n * 1000 + 3), {"i: grid.x, thread.x 128, reg 4", "i: grid.x, serial 3, thread.x 64", "i: serial, thread.x 32"}},
        {dot(n), {"i: serial, unroll 8", "i: unroll, serial 7"}},
        {dgDiff(n * 10, 20), {"k: grid.x, thread.y 4; i: thread.x; j: serial, unroll 4",
                              "k: grid.x, thread.x 32, reg 2; i: serial; j: unroll"}},
        {triangular(n), {"i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 32; k: serial, unroll 3 | i: grid.x, thread.x 32, reg 3; k: unroll, serial 2",
                         "j: serial; i: grid.x, thread.x 64; k: serial | i: serial; k: serial"}},
        {batched(n * 3, 16), {"b: grid.z; i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 16; k: serial, unroll 4; l: unroll",
                              "b: grid.x, thread.z 2; i: thread.y; j: thread.x; k: serial; l: serial"}},
    };
    for (const Case& c : cases) {
      emitAndCompile(c.k, defaultSchedule(c.k));
      for (const std::string& s : c.schedules) {
        auto reasons = validateSchedule(c.k, sched(s));
        EXPECT_TRUE(reasons.empty()) << s << ": " << (reasons.empty() ? "" : reasons[0]);
        if (reasons.empty()) emitAndCompile(c.k, sched(s));
      }
    }
  }
}

TEST(Emitter, AlignedArraysVectorCopiesAndShuffles) {
  // Arrays are declared 16-byte aligned; a tile whose rows hold whole aligned runs of 4 floats is
  // copied with 16-byte loads, one whose rows do not (n = 37) element by element.
  const std::string staged = "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b";
  std::string aligned = emitAndCompile(matmul(32), sched(staged)).source;
  EXPECT_TRUE(contains(aligned, "const float* __restrict__ a = (const float*)__builtin_assume_aligned(a_arg, 16);")) << aligned;
  EXPECT_TRUE(contains(aligned, "float* __restrict__ c = (float*)__builtin_assume_aligned(c_arg, 16);")) << aligned;
  EXPECT_TRUE(contains(aligned, "__ldg((const float4*)&a[")) << aligned;
  EXPECT_TRUE(contains(aligned, "__ldg((const float4*)&b[")) << aligned;
  std::string odd = emitAndCompile(matmul(37), sched(staged)).source;
  EXPECT_FALSE(contains(odd, "float4")) << odd;
  // A k step of 2 floats is no whole run: a's tile is copied by elements, b's (rows of j) by runs.
  std::string step2 = emitAndCompile(matmul(32), sched("i: grid.y, thread.y 8; j: grid.x, thread.x 8, reg 4; k: serial, unroll 2; shared: a, b")).source;
  EXPECT_FALSE(contains(step2, "__ldg((const float4*)&a[")) << step2;
  EXPECT_TRUE(contains(step2, "__ldg((const float4*)&b[")) << step2;
  // f64 tiles use double2.
  std::string f64 = emitAndCompile(matmul(32, ScalarType::F64), sched(staged)).source;
  EXPECT_TRUE(contains(f64, "__ldg((const double2*)&b[")) << f64;
  // Lanes within one warp combine by shuffles, without barriers; other lane counts by the tree.
  std::string warp = emitAndCompile(dot(4096), sched("i: serial, thread.x 32")).source;
  EXPECT_TRUE(contains(warp, "__shfl_xor_sync(4294967295u, sum_i, 16)")) << warp;
  EXPECT_FALSE(contains(warp, "__syncthreads")) << warp;
  std::string tree = emitAndCompile(dot(4096), sched("i: serial, thread.x 96")).source;
  EXPECT_FALSE(contains(tree, "__shfl_xor_sync")) << tree;
}

TEST(Emitter, AsyncCopiesCompileForTheGpu) {
  // cp.async 16 bytes at a time for tiles stored row by row, 4 bytes per element for a transposed
  // one; N - 1 steps issued ahead of the loop, one commit group per step, waits that leave
  // N - 2 groups pending.
  for (int buffers : {2, 3, 4}) {
    std::string text = fmt::format("i: grid.y, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: serial, unroll 8; "
                                   "shared: a^T, b; buffers: {}; copy: async", buffers);
    std::string src = emitAndCompile(matmul(512), sched(text)).source;
    EXPECT_TRUE(contains(src, "asm volatile(\"cp.async.\" kind")) << src;
    EXPECT_TRUE(contains(src, "rtcg_cp_async16(&s_b[")) << src;
    EXPECT_TRUE(contains(src, "rtcg_cp_async4(&s_a[")) << src;
    EXPECT_TRUE(contains(src, fmt::format("rtcg_cp_async_wait{}();", buffers - 2))) << src;
    EXPECT_TRUE(contains(src, fmt::format("(k_0 + {}) % {}", buffers - 1, buffers))) << src;
    size_t commits = 0;
    for (size_t at = src.find("rtcg_cp_async_commit();"); at != std::string::npos; at = src.find("rtcg_cp_async_commit();", at + 1)) ++commits;
    EXPECT_EQ(commits, (size_t)buffers) << src;  // buffers - 1 ahead of the loop, one per step
  }
  // Without 'copy: async' no helpers are emitted.
  EXPECT_FALSE(contains(emitAndCompile(matmul(64), sched("i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial, unroll 8; shared: a, b; buffers: 2")).source, "cp.async"));
}

TEST(Emitter, GuardsAndHeader) {
  EmittedModule m = emitAndCompile(matmul(17), defaultSchedule(matmul(17)));
  const std::string& s = m.source;
  EXPECT_TRUE(contains(s, "// Kernel matmul, loop nest 0 of 1")) << s;
  EXPECT_TRUE(contains(s, "// Sizes: n = 17")) << s;
  EXPECT_TRUE(contains(s, "// Schedule: i: grid.y; j: grid.x, thread.x 32; k: serial")) << s;
  EXPECT_FALSE(contains(s, "constexpr int n")) << s;  // sizes are substituted; an unused constant warns
  EXPECT_TRUE(contains(s, "if (j >= 17) {")) << s;
  EXPECT_TRUE(contains(s, "extern \"C\" __global__ void __launch_bounds__(32) matmul_0(const float* __restrict__ a_arg, "
                          "const float* __restrict__ b_arg, float* __restrict__ c_arg)")) << s;
  EXPECT_TRUE(contains(s, "float sum_k = 0.0f;")) << s;
  EXPECT_TRUE(contains(s, "#pragma unroll 1")) << s;
  EXPECT_EQ(m.launches[0].grid, (std::array<uint32_t, 3>{1, 17, 1}));
  // Sizes that divide need no guard.
  EmittedModule exact = emitCuda(matmul(64), sched("i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 32; k: serial, unroll 4"));
  EXPECT_FALSE(contains(exact.source, "if (")) << exact.source;
  EXPECT_TRUE(contains(exact.source, "#pragma unroll\n")) << exact.source;
}

TEST(Emitter, OverrunWholeTilesAreClampedNotGuarded) {
  // 36 points for 35 nodes: Dr is staged whole and the block overruns it. The reads clamp into the
  // tile, so the register points accumulate without guards (their loads can merge and be shared).
  EmittedModule m = emitAndCompile(dgDiff(1000, 35), sched("k: grid.x, thread.y 16, reg 4; i: serial, reg 2, thread.x 18; "
                                                            "j: serial, unroll 16; shared: Dr, u^T, Ds, Dt"));
  EXPECT_TRUE(contains(m.source, "s_Dr[min(max(i, 0), 34) * 36 + j]")) << m.source;
  // Only the 8 register points' stores are guarded (with guards in the j loop: 24).
  size_t guards = 0;
  for (size_t at = m.source.find("i < 35"); at != std::string::npos; at = m.source.find("i < 35", at + 1)) ++guards;
  EXPECT_EQ(guards, 8u) << m.source;
}

TEST(Emitter, PositionsOfASerialPartArePipelined) {
  // Each block walks 4 positions of k and takes all of j in one step: u's tile of the next
  // position is loaded into registers while this one computes (2 buffers), so a position ends with
  // one barrier: 3 in all with the matrices' and the first position's.
  auto count = [](const std::string& s, const std::string& part) {
    size_t n = 0;
    for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) ++n;
    return n;
  };
  const std::string positions = "k: grid.x, serial 4, thread.y 4; i: serial, thread.x 20; ";
  EmittedModule m = emitAndCompile(dgDiff(1000, 20), sched(positions + "j: serial, unroll 20; shared: Dr, u^T; buffers: 2"));
  EXPECT_TRUE(contains(m.source, "Tiles of later positions of 'k' are copied ahead (2 buffers)")) << m.source;
  EXPECT_TRUE(contains(m.source, "if (k_1 + 1 < 4)")) << m.source;
  EXPECT_TRUE(contains(m.source, "(int)blockIdx.x * 16 + (k_1 + 1) * 4")) << m.source;
  EXPECT_TRUE(contains(m.source, "s_u[(k_1 & 1) * 80")) << m.source;
  EXPECT_EQ(count(m.source, "__syncthreads()"), 3u) << m.source;
  // cp.async: positions 0 and 1 ahead of the loop, position k_1 + 2 issued in position k_1.
  m = emitAndCompile(dgDiff(1000, 20), sched(positions + "j: serial, unroll 20; shared: Dr, u^T; buffers: 3; copy: async"));
  EXPECT_TRUE(contains(m.source, "if (k_1 + 2 < 4)")) << m.source;
  EXPECT_TRUE(contains(m.source, "s_u[(k_1 + 2) % 3 * 80")) << m.source;
  // Not pipelined: two steps of j per position (the steps are), one buffer, or one position.
  for (const char* rest : {"j: serial, unroll 10; shared: Dr, u^T; buffers: 2", "j: serial, unroll 20; shared: Dr, u^T"}) {
    m = emitAndCompile(dgDiff(1000, 20), sched(positions + rest));
    EXPECT_FALSE(contains(m.source, "copied ahead")) << rest;
  }
  m = emitAndCompile(dgDiff(1000, 20), sched("k: grid.x, thread.y 4; i: serial, thread.x 20; j: serial, unroll 20; shared: Dr, u^T; buffers: 2"));
  EXPECT_FALSE(contains(m.source, "copied ahead"));
}

TEST(Emitter, EarlyLoadsGoAheadOfTheReduction) {
  // DG lifting's old rhs, one load per register point ahead of the f loop, guarded like the
  // point's store, and read back by the statement.
  Kernel lift = example("dg_lift", {{"K", 1000}, {"Np", 20}, {"Nfp", 5}});
  const std::string tile = "k: grid.x, thread.y 4, reg 2; i: serial, thread.x 20; f: serial, unroll 4; shared: LIFT, flux";
  EmittedModule m = emitAndCompile(lift, sched(tile + "; loads: early"));
  const size_t early = m.source.find("rhs_early_r0 = rhs[k * 20 + i];");
  const size_t loop = m.source.find("for (int f_0 = 0;");
  ASSERT_NE(early, std::string::npos) << m.source;
  ASSERT_NE(loop, std::string::npos) << m.source;
  EXPECT_LT(early, loop);
  EXPECT_TRUE(contains(m.source, "rhs[k * 20 + i] = rhs_early_r1 + ")) << m.source;
  EXPECT_FALSE(contains(emitAndCompile(lift, sched(tile)).source, "_early")) ;
}

TEST(Emitter, FloorDivisionOnlyWhereNeeded) {
  EmittedModule m = emitAndCompile(triangular(40), defaultSchedule(triangular(40)));
  // (i - 3) / 4 may be negative: the helper; i / 4 and i % 4 are not.
  EXPECT_TRUE(contains(m.source, "rtcg_floordiv(i - 3, 4)")) << m.source;
  EXPECT_TRUE(contains(m.source, "rtcg_floormod(j - 5, 3)")) << m.source;
  EXPECT_TRUE(contains(m.source, "m[i / 4 * 4 + i % 4]")) << m.source;
  // The triangular domain is guarded by its bounds.
  EXPECT_TRUE(contains(m.source, "j >= i + 1")) << m.source;
  EXPECT_TRUE(contains(m.source, "k < j + 1")) << m.source;
  // The max reduction starts at -infinity.
  EXPECT_TRUE(contains(m.source, "__int_as_float(0xff800000)")) << m.source;
  ASSERT_EQ(m.launches.size(), 2u);
  EXPECT_EQ(m.launches[1].function, "tri_1");
}

TEST(Emitter, FusesReductionsOverTheSameLoops) {
  EmittedModule m = emitAndCompile(dgDiff(100, 20), defaultSchedule(dgDiff(100, 20)));
  // One loop over j feeds all three accumulators.
  size_t loops = 0;
  for (size_t p = m.source.find("for (int j"); p != std::string::npos; p = m.source.find("for (int j", p + 1)) ++loops;
  EXPECT_EQ(loops, 1u) << m.source;
}

TEST(Emitter, ZeroLoopNestRunsOnOneThread) {
  EmittedModule m = emitAndCompile(dot(1000), sched("i: serial, unroll 8"));
  EXPECT_EQ(m.launches[0].grid, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(m.launches[0].block, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_TRUE(contains(m.source, "r[0] = sum_i;")) << m.source;
  EXPECT_EQ(m.launches[0].params, (std::vector<int>{1, 2, 3}));
}

TEST(Emitter, RejectsIllegalSchedules) {
  EXPECT_THROW(emitCuda(matmul(10), sched("i: grid.y; j: grid.x")), Error);
  EXPECT_THROW(emitCuda(matmul(10), sched("i: grid.y; j: grid.x; k: serial; shared: c")), Error);
  EXPECT_THROW(emitCuda(triangular(16), sched("i: grid.y; j: grid.x; k: serial; shared: a | i: grid.x; k: serial")), Error);
}

// Triangles: a triangular output domain's blocks above the diagonal leave at once (rectangles
// have no such test), and a register tile over a triangle's rows runs the union of its rows,
// each point guarded by its own.
TEST(Emitter, TriangularDomains) {
  EmittedModule syrk = emitCuda(example("syrk", {{"n", 100}, {"K", 30}}),
                                sched("i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 32; k: serial, unroll 4"));
  EXPECT_TRUE(contains(syrk.source, "if ((int)blockIdx.x * 32 >= max((int)blockIdx.y * 16 + 1, (int)blockIdx.y * 16 + 15 + 1)) {"))
      << syrk.source;
  EmittedModule mm = emitCuda(matmul(100), sched("i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 32; k: serial"));
  EXPECT_FALSE(contains(mm.source, "leaves at once")) << mm.source;
  EmittedModule trmv = emitCuda(example("trmv", {{"n", 3001}}), sched("i: grid.x, thread.x 32, reg 2; j: serial, unroll 4"));
  EXPECT_TRUE(contains(trmv.source, "const int j_hi = min(max(i_base + 1, i_base + 1 + 1), 3001);")) << trmv.source;
  EXPECT_TRUE(contains(trmv.source, "if (i < 3001 && j < i + 1) {")) << trmv.source;
}

TEST(Emitter, ScalarParamsByValue) {
  EmittedModule m = emitAndCompile(axpby(1000), defaultSchedule(axpby(1000)));
  EXPECT_TRUE(contains(m.source, "(float a, const float* __restrict__ x_arg, float b, const float* __restrict__ y_arg, "
                                 "float* __restrict__ z_arg)")) << m.source;
  EXPECT_TRUE(contains(m.source, "float* __restrict__ z = (float*)__builtin_assume_aligned(z_arg, 16);")) << m.source;
  EXPECT_EQ(m.launches[0].params, (std::vector<int>{1, 2, 3, 4, 5}));
}

TEST(CPrinter, PrecedenceAndLiterals) {
  using namespace rtcg::c;
  auto a = name("a"), b = name("b"), c = name("c");
  EXPECT_EQ(printExpr(binary("*", binary("+", a, b), c)), "(a + b) * c");
  EXPECT_EQ(printExpr(binary("+", a, binary("*", b, c))), "a + b * c");
  EXPECT_EQ(printExpr(binary("-", a, binary("-", b, c))), "a - (b - c)");
  EXPECT_EQ(printExpr(binary("||", a, binary("&&", b, c))), "a || (b && c)");
  EXPECT_EQ(printExpr(unary("-", unary("-", a))), "-(-a)");
  EXPECT_EQ(printExpr(unary("-", intLit(-3))), "-(-3)");
  EXPECT_EQ(printExpr(castTo("float", binary("+", a, b))), "(float)(a + b)");
  EXPECT_EQ(printExpr(floatLit(1.0, true)), "1.0f");
  EXPECT_EQ(printExpr(floatLit(0.1, false)), "0.1");
  EXPECT_EQ(printExpr(intLit(-2147483648LL)), "(-2147483647 - 1)");
  EXPECT_EQ(printExpr(intLit(5, true)), "5LL");
  EXPECT_EQ(printExpr(ternary(binary("<", a, b), a, b)), "a < b ? a : b");
  EXPECT_THROW(printExpr(name("not an identifier")), InternalError);
  EXPECT_THROW(printExpr(castTo("string", a)), InternalError);
}

TEST(Nvrtc, ReportsErrorsWithTheLog) {
  CudaCompileResult r = compileCuda("extern \"C\" __global__ void f() { undeclared = 1; }", "bad.cu");
  EXPECT_FALSE(r.success);
  EXPECT_TRUE(contains(r.log, "undeclared")) << r.log;
  EXPECT_TRUE(contains(r.log, "bad.cu")) << r.log;
  EXPECT_TRUE(r.cubin.empty());
}

TEST(Nvrtc, VirtualArchitectureGivesPtx) {
  CudaCompileResult r = compileCuda("extern \"C\" __global__ void f(float* a) { a[0] = 1.0f; }", "v.cu", "compute_90");
  EXPECT_TRUE(r.success) << r.log;
  EXPECT_TRUE(r.cubin.empty());
  EXPECT_TRUE(contains(r.ptx, ".entry f")) << r.ptx;
  CudaCompileResult both = compileCuda("extern \"C\" __global__ void f(float* a) { a[0] = 1.0f; }", "v.cu", "sm_90", {}, true);
  EXPECT_TRUE(both.success && !both.cubin.empty() && contains(both.ptx, ".entry f"));
  EXPECT_FALSE(compileCuda("", "x.cu", "gfx90a").success);
}

TEST(Nvrtc, ReadsResourcesIncludingSharedAndSpills) {
  CudaCompileResult r = compileCuda(
      "extern \"C\" __global__ void f(float* a) { __shared__ float s[100]; s[threadIdx.x] = a[threadIdx.x];"
      " __syncthreads(); a[threadIdx.x] = s[99 - threadIdx.x]; }",
      "s.cu");
  ASSERT_TRUE(r.success) << r.log;
  const KernelResources* f = r.find("f");
  ASSERT_NE(f, nullptr);
  EXPECT_GT(f->registers, 0);
  EXPECT_EQ(f->sharedBytes, 400);
  auto parsed = parsePtxasInfo(
      "ptxas info    : Compiling entry function 'g' for 'sm_90'\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers, 1024 bytes smem\n");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].registers, 255);
  EXPECT_EQ(parsed[0].localBytes, 24);
  EXPECT_EQ(parsed[0].spillStoreBytes, 8);
  EXPECT_EQ(parsed[0].spillLoadBytes, 4);
  EXPECT_EQ(parsed[0].sharedBytes, 1024);
}

TEST(Nvrtc, CompilesFromSeveralThreads) {
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Kernel k = matmul(100 + t);
      EmittedModule m = emitCuda(k, defaultSchedule(k));
      CudaCompileResult r = compileCuda(m.source, "mt.cu");
      ok[t] = r.success && r.find("matmul_0") && r.find("matmul_0")->registers > 0;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok, (std::vector<int>{1, 1, 1, 1}));
}

TEST(Emitter, SplitKTileCombinesInGroupsWithoutSpilling) {
  // SGEMM n=3000's best-predicted tiles: 128 points a thread, k split across 3 blocks. The last
  // block reads the partials of 10 points (30 loads in flight), stores them, then reads the next
  // 10. Combining all 128 first left 384 loads for NVCC to hoist, and it spilled 192 bytes (so
  // the tuner skipped the model's top candidates); one point at a time made each point's reads
  // wait for the previous point's store (SGEMM n=500 split in two: 0.0174 -> 0.0233 ms).
  Kernel k = example("matmul", {{"n", 3000}});
  Schedule s = sched("i: grid.y, reg 2, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; "
                     "k: grid.z, serial 125, unroll 8; shared: a^T, b");
  EmittedModule m = emitCuda(k, s);
  size_t combine = m.source.find("if (last_block) {");
  ASSERT_NE(combine, std::string::npos) << m.source;
  size_t firstStore = m.source.find("c[", combine);
  size_t lastReadOfGroup = m.source.find("sum_k_r9 = 0.0f;", combine);
  size_t firstReadOfNextGroup = m.source.find("sum_k_r10 = 0.0f;", combine);
  ASSERT_NE(firstReadOfNextGroup, std::string::npos) << m.source.substr(combine, 2000);
  EXPECT_LT(lastReadOfGroup, firstStore) << m.source.substr(combine, 4000);
  EXPECT_LT(firstStore, firstReadOfNextGroup) << m.source.substr(combine, 4000);
  CudaCompileResult r = compileCuda(m.source, "matmul.cu");
  ASSERT_TRUE(r.success) << r.log;
  const KernelResources* res = r.find(m.launches.at(0).function);
  ASSERT_NE(res, nullptr);
  EXPECT_EQ(res->spillStoreBytes, 0) << res->registers << " registers";
  EXPECT_EQ(res->spillLoadBytes, 0);
}

TEST(Emitter, SyrkAccessTilesCompileWithoutSpilling) {
  // syrk's two reads of a (a[i, k], a[j, k]) staged as two tiles, under the space's top candidate
  // at n=4096, K=1024 (matmul's 128 x 128 tile of 128 threads: NVRTC gives it about 207 registers,
  // matmul's a^T, b 209) and the 64 x 64 tile copied by cp.async into three buffers; neither may
  // spill (the tuner skips candidates that do).
  Kernel k = example("syrk", {{"n", 4096}, {"K", 1024}});
  for (const char* text : {"i: grid.y, reg 2, thread.y 8, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: serial, unroll 8; "
                           "shared: a[i,k]^T, a[j,k]^T",
                           "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16, reg 4; k: serial, unroll 16; "
                           "shared: a[i,k]^T, a[j,k]^T; buffers: 3; copy: async"}) {
    SCOPED_TRACE(text);
    EmittedModule m = emitCuda(k, sched(text));
    EXPECT_TRUE(contains(m.source, "Copy a step's tile of a[i,k] into shared memory") ||
                contains(m.source, "Load a step's tile of a[i,k] into registers")) << m.source.substr(0, 4000);
    EXPECT_TRUE(contains(m.source, "s_a_2[")) << m.source.substr(0, 4000);  // the second tile of a
    CudaCompileResult r = compileCuda(m.source, "syrk.cu");
    ASSERT_TRUE(r.success) << r.log;
    const KernelResources* res = r.find(m.launches.at(0).function);
    ASSERT_NE(res, nullptr);
    EXPECT_EQ(res->spillStoreBytes, 0) << res->registers << " registers";
    EXPECT_EQ(res->spillLoadBytes, 0);
  }
}

TEST(Emitter, TileOfExactly48KiBBesideTheLastBlockFlagIsDynamic) {
  // A 48 KiB tile fits static shared memory alone, but not with the 1-byte flag of a reduction
  // split across blocks: NVRTC rejected such a candidate of an SGEMM n=1000 search (49153 bytes).
  Kernel k = example("matmul", {{"n", 1000}});
  EmittedModule m = emitAndCompile(k, sched("i: grid.x, reg 8, thread.x 64; j: grid.y, reg 4, thread.y 8; "
                                            "k: grid.z, serial 32, unroll 8; shared: a; buffers: 2"));
  ASSERT_EQ(m.launches.size(), 1u);
  EXPECT_EQ(m.launches[0].dynamicSharedBytes, 49152u) << m.source.substr(0, 3000);
  EXPECT_TRUE(contains(m.source, "extern __shared__")) << m.source.substr(0, 3000);
}

// Issue 40, 4: a product whose value reaches a comparison, a conversion to an integer or floor is
// written __fmul_rn, which NVRTC never fuses into an FMA (fused, 0.7f * 10.0f - 7.0f is -1.2e-7
// instead of 0, and the comparison flips against the reference's f32 arithmetic); through a let too.
// Products elsewhere, and a sum's terms, contract as before (matmul's code is unchanged).
TEST(Emitter, ProductsThatReachADiscontinuityAreNotContracted) {
  const std::string src = R"(kernel k(n: int, x: f32[n], w: f64[n], out a: i32[n], out b: i32[n], out y: f32[n],
                                       out z: i64[n]) {
    for i in 0..n {
      let t = x[i] * 10.0;
      a[i] = i32(x[i] * 10.0 - 7.0);
      b[i] = select(t - 7.0 >= 0.0, 1, 0);
      y[i] = x[i] * 10.0 + 1.0;
      z[i] = i64(floor(w[i] * 3.0 + 1.0));
    }
  })";
  Diagnostics diags;
  auto prog = parseProgram("k.rtcg", src, diags);
  ASSERT_TRUE(prog) << diags.render("k.rtcg", src);
  auto bound = bindSizes(prog->kernels[0], {{"n", 100}}, diags);
  ASSERT_TRUE(bound);
  EmittedModule m = emitAndCompile(*bound, defaultSchedule(*bound));
  EXPECT_TRUE(contains(m.source, "const float t = __fmul_rn(")) << m.source;
  EXPECT_TRUE(contains(m.source, "a[i] = (int)(__fmul_rn(")) << m.source;
  EXPECT_TRUE(contains(m.source, "__dmul_rn(w[i], 3.0)")) << m.source;
  EXPECT_TRUE(contains(m.source, "y[i] = x[i] * 10.0f + 1.0f;")) << m.source;
  EmittedModule mm = emitCuda(matmul(100), defaultSchedule(matmul(100)));
  EXPECT_FALSE(contains(mm.source, "_rn(")) << mm.source;
}

// The module's preludes (ModuleNeeds): each declared once, printed by rank whatever the order of
// the declarations; texts of one band in the order of their first use; two texts at one rank are
// an emitter bug.
TEST(Emitter, PreludesPrintOnceEachByRank) {
  emit::ModuleNeeds needs;
  needs.need({20, "b"});
  needs.needInOrder(100, 200, "y");
  needs.need({10, "a"});
  needs.needInOrder(100, 200, "x");
  needs.need({20, "b"});
  needs.needInOrder(100, 200, "y");
  std::vector<std::string> order;
  for (const auto& [rank, text] : needs.preludes) order.push_back(text);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "y", "x"}));
  EXPECT_THROW(needs.need({10, "another"}), InternalError);
  for (int i = 0; i < 98; ++i) needs.needInOrder(100, 200, std::to_string(i));
  EXPECT_THROW(needs.needInOrder(100, 200, "one past the band"), InternalError);
}
