// Contractions on tensor cores (`mma:`, schedule/Mma.h): the clause's text, which statements
// qualify and why others do not, the precision policy, the space's mma candidates, the emitted code
// against the reference in the host emulation (its mma helpers follow the PTX fragment layouts and
// TF32 rounding) at sizes no tile divides, and NVRTC compiles for sm_80 and sm_90.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <map>

#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/Plan.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"
#include "schedule/TestKernels.h"
#include "FullTests.h"
#include "SourceKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// The qualifying examples at sizes that divide no tile (odd M, N and K).
struct Case {
  const char* file;
  SizeBindings sizes;
};
const std::vector<Case>& qualifying() {
  static const std::vector<Case> cases{
      {"matmul.rtcg", {{"n", 37}}},
      {"matmul_flat.rtcg", {{"n", 21}}},
      {"batched_matmul.rtcg", {{"nb", 3}, {"n", 13}}},
      {"dg_diff_stacked.rtcg", {{"K", 19}, {"Np", 7}}},
      {"dg_lift.rtcg", {{"K", 23}, {"Np", 10}, {"Nfp", 3}}},
  };
  return cases;
}

const char* kF64Rect = R"(
kernel dgemm_rect(m: int, n: int, kk: int, a: f64[m, kk], b: f64[kk, n], out c: f64[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
)";

const char* kF64Lift = R"(
kernel lift64(K: int, Np: int, F: int, LIFT: f64[Np, F], flux: f64[K, F], invJ: f64[K], inout rhs: f64[K, Np]) {
  for k in 0..K, i in 0..Np {
    rhs[k, i] = rhs[k, i] + invJ[k] * sum(f in 0..F, LIFT[i, f] * flux[k, f]);
  }
}
)";

// 16-bit operands: A stored along M (k-major tile, ldmatrix .trans), B along K, an epilogue
// around the sum; f16 and bf16 versions, rectangular sizes.
const char* kHalfT = R"(
kernel half_t(n: int, m: int, kk: int, a: f16[kk, n], b: f16[m, kk], out c: f32[n, m]) {
  for i in 0..n, j in 0..m {
    c[i, j] = 2 * sum(k in 0..kk, f32(a[k, i]) * f32(b[j, k])) + 1;
  }
}
)";
const char* kBatchedBf16 = R"(
kernel bbf16(nb: int, n: int, a: bf16[nb, n, n], x: bf16[nb, n, n], out c: f32[nb, n, n]) {
  for b in 0..nb, i in 0..n, j in 0..n {
    c[b, i, j] = sum(k in 0..n, f32(a[b, i, k]) * f32(x[b, k, j]));
  }
}
)";
const char* kMixed = R"(
kernel mixed(n: int, a: bf16[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, f32(a[i, k]) * b[k, j]);
  }
}
)";

}  // namespace

TEST(Mma, ClausePrintsAndParsesBack) {
  for (const char* text : {"mma: tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16", "mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8",
                           "mma: f64 m8n8k4 warps 2x4 tile 2x2 k 12", "mma: tf32x3 m16n8k8 warps 2x2 tile 4x2 k 16 stages 3"}) {
    ScheduleParseResult r = parseSchedule(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error;
    EXPECT_EQ(printSchedule(*r.schedule), text);
    EXPECT_EQ(parseSchedule(printSchedule(*r.schedule)).schedule, r.schedule);
  }
  struct Bad {
    const char* text;
    const char* error;
  };
  for (const Bad& b : std::vector<Bad>{
           {"mma: fp16 m16n8k8 warps 2x2 tile 1x1 k 8", "unknown mma arithmetic 'fp16'"},
           {"mma: f64 m16n8k32 warps 2x2 tile 1x1 k 32", "mma shape 'm16n8k32' does not fit 'f64'"},
           {"mma: tf32 m16n8k4 warps 2x2 tile 1x1 k 8", "mma shape 'm16n8k4' does not fit 'tf32'"},
           {"mma: tf32 m16n8k8 warps 2 tile 1x1 k 8", "expected the warps of a block as 'AxB'"},
           {"mma: tf32 m16n8k8 warps 8x8 tile 1x1 k 8", "at most 32"},
           {"mma: tf32 m16n8k8 warps 2x2 tile 1x1 k 12", "multiple of 8"},
           {"mma: tf32 m16n8k8 warps 2x2 tiles 1x1 k 8", "expected 'tile'"},
           {"mma: tf32 m16n8k8 warps 2x2 tile 1x1 k 8 stages 5", "between 2 and 4"},
           {"mma: tf32 m16n8k8 warps 2x2 tile 1x1 k 8 stages", "expected the number of stages"},
       }) {
    ScheduleParseResult r = parseSchedule(b.text);
    EXPECT_FALSE(r.ok()) << b.text;
    EXPECT_NE(r.error.find(b.error), std::string::npos) << b.text << ": " << r.error;
  }
}

TEST(Mma, QualifyingStatementsAndWhyOthersDoNot) {
  for (const Case& c : qualifying()) {
    Kernel k = exampleKernel(c.file, "", c.sizes);
    ContractionMatch m = matchContraction(k, 0);
    EXPECT_TRUE(m.contraction.has_value()) << c.file << ": " << (m.reasons.empty() ? "" : m.reasons[0]);
  }
  Kernel lift = exampleKernel("dg_lift.rtcg", "", {{"K", 23}, {"Np", 10}, {"Nfp", 3}});
  ContractionMatch m = matchContraction(lift, 0);
  ASSERT_TRUE(m.contraction);
  EXPECT_EQ(m.contraction->mExtent, 10);  // i, from LIFT
  EXPECT_EQ(m.contraction->nExtent, 23);  // k, from flux
  EXPECT_EQ(m.contraction->kExtent, 12);
  EXPECT_TRUE(m.contraction->batch.empty());
  Kernel batched = exampleKernel("batched_matmul.rtcg", "", {{"nb", 3}, {"n", 13}});
  EXPECT_EQ(matchContraction(batched, 0).contraction->batch.size(), 1u);

  struct Not {
    const char* file;
    SizeBindings sizes;
    const char* reason;
  };
  for (const Not& n : std::vector<Not>{
           {"gemv.rtcg", {{"m", 5}, {"n", 4}}, "one parallel index in each operand only"},
           {"dot.rtcg", {{"n", 5}}, "one parallel index in each operand only"},
           {"axpby.rtcg", {{"n", 5}}, "0 reductions"},
           {"dg_face_gather.rtcg", {{"K", 5}, {"Np", 4}, {"Nfaces", 4}, {"Nfp", 2}}, "0 reductions"},
       }) {
    Kernel k = exampleKernel(n.file, "", n.sizes);
    ContractionMatch r = matchContraction(k, 0);
    EXPECT_FALSE(r.contraction) << n.file;
    ASSERT_FALSE(r.reasons.empty()) << n.file;
    EXPECT_NE(r.reasons[0].find(n.reason), std::string::npos) << n.file << ": " << r.reasons[0];
  }
}

TEST(Mma, PlanReasons) {
  Kernel k = matmul(37);
  auto reasons = [&](const std::string& text) {
    return validateSchedule(k, *parseSchedule(text).schedule);
  };
  EXPECT_TRUE(reasons("mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16").empty());
  auto r = reasons("mma: f64 m8n8k4 warps 2x2 tile 2x2 k 16");
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].find("'f64' computes f64 contractions; this one is f32"), std::string::npos) << r[0];
  r = reasons("i: grid.y; mma: tf32 m16n8k8 warps 2x2 tile 2x2 k 16");
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].find("no index clause beside it"), std::string::npos) << r[0];
  r = reasons("shared: a; mma: tf32 m16n8k8 warps 2x2 tile 2x2 k 16");
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].find("'shared:' does not apply beside 'mma:'"), std::string::npos) << r[0];
  r = reasons("mma: tf32x3 m16n8k8 warps 4x4 tile 4x4 k 64");
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].find("shared memory"), std::string::npos) << r[0];
  // cp.async copies bytes: a converted operand cannot be pipelined.
  Kernel mixed = fromSource("kernel mixed(n: int, a: f64[n, n], b: f32[n, n], out c: f32[n, n]) {\n"
                            "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, f32(a[i, k]) * b[k, j]); }\n}\n",
                            {{"n", 20}});
  EXPECT_TRUE(validateSchedule(mixed, *parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8").schedule).empty());
  r = validateSchedule(mixed, *parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8 stages 2").schedule);
  ASSERT_FALSE(r.empty());
  EXPECT_NE(r[0].find("cp.async, which does not convert"), std::string::npos) << r[0];
  SchedulePlan plan = planSchedule(k, *parseSchedule("mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 16").schedule);
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(plan.nests[0].mma);
  EXPECT_EQ(plan.nests[0].mma->blockM, 32);
  EXPECT_EQ(plan.nests[0].mma->blockN, 16);
  EXPECT_EQ(plan.nests[0].mma->pitch % 8, 4);  // conflict-free fragment loads
  EXPECT_EQ(plan.nests[0].launch.grid[0], 3);
  EXPECT_EQ(plan.nests[0].launch.grid[1], 2);
  EXPECT_EQ(plan.nests[0].launch.threads, 64);
  EXPECT_NE(printPlan(k, plan.nests[0]).find("tf32x3 mma.sync m16n8k8"), std::string::npos);
  // A batch larger than grid.z holds rides on grid.x with the N and M tiles.
  SchedulePlan big = planSchedule(exampleKernel("batched_matmul.rtcg", "", {{"nb", 70000}, {"n", 16}}), *parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x2 k 8").schedule);
  ASSERT_TRUE(big.ok()) << big.reasons[0];
  EXPECT_EQ(big.nests[0].launch.grid[0], 70000);
  EXPECT_EQ(big.nests[0].launch.grid[2], 1);
}

TEST(Mma, PrecisionPolicy) {
  Schedule tf32 = *parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8").schedule;
  Schedule x3 = *parseSchedule("mma: tf32x3 m16n8k8 warps 1x1 tile 1x1 k 8").schedule;
  Schedule f64 = *parseSchedule("mma: f64 m8n8k4 warps 1x1 tile 1x1 k 8").schedule;
  EXPECT_FALSE(precisionReasons(tf32, Precision::Ieee).empty());
  EXPECT_FALSE(precisionReasons(tf32, Precision::Tf32x3).empty());
  EXPECT_TRUE(precisionReasons(tf32, Precision::Tf32).empty());
  EXPECT_FALSE(precisionReasons(x3, Precision::Ieee).empty());
  EXPECT_TRUE(precisionReasons(x3, Precision::Tf32x3).empty());
  EXPECT_TRUE(precisionReasons(f64, Precision::Ieee).empty());
  EXPECT_NE(precisionReasons(x3, Precision::Ieee)[0].find("use --precision tf32x3"), std::string::npos);
  // tf32 on a kernel that computes only in f64: an error with the reason; on f32, none.
  EXPECT_NE(precisionObstacle(matmul(8, ScalarType::F64), Precision::Tf32).find("computes in f64 only"),
            std::string::npos);
  EXPECT_EQ(precisionObstacle(matmul(8, ScalarType::F64), Precision::Ieee), "");
  EXPECT_EQ(precisionObstacle(matmul(8), Precision::Tf32), "");
  EXPECT_EQ(precisionObstacle(axpby(8), Precision::Tf32x3), "");  // no contraction: simply no mma candidates
}

TEST(Mma, SpaceOffersMmaWhereThePolicyAndTypesAllow) {
  auto mmaCandidates = [](const Kernel& k, Precision p) {
    SpaceOptions o;
    o.precision = p;
    Space s = enumerateSchedules(k, o);
    std::set<MmaArith> seen;
    for (const Candidate& c : s.candidates)
      for (const NestSchedule& n : c.schedule.nests)
        if (n.mma.any()) seen.insert(n.mma.arith);
    return seen;
  };
  EXPECT_TRUE(mmaCandidates(matmul(512), Precision::Ieee).empty());
  EXPECT_EQ(mmaCandidates(matmul(512), Precision::Tf32x3), std::set<MmaArith>{MmaArith::Tf32x3});
  EXPECT_EQ(mmaCandidates(matmul(512), Precision::Tf32), (std::set<MmaArith>{MmaArith::Tf32, MmaArith::Tf32x3}));
  EXPECT_EQ(mmaCandidates(matmul(64, ScalarType::F64), Precision::Ieee), std::set<MmaArith>{MmaArith::F64});
  EXPECT_TRUE(mmaCandidates(axpby(1000), Precision::Tf32).empty());
}

// Every qualifying example's mma schedules against the reference in the host emulation, at sizes
// no tile divides: tf32x3 within the FP32-class tolerance, tf32 within TF32's, and an f64 lifting
// with FP64 mma within f64's. Several warps and fragments per warp, steps longer than the reduction.
TEST(HostEmulation, MmaSchedulesMatchTheReference) {
  rtcgtest::CaseSample sample(3);
  const std::vector<std::string> shapes{"warps 2x1 tile 1x2 k 8", "warps 1x2 tile 2x1 k 16", "warps 1x1 tile 1x1 k 32"};
  for (const Case& c : qualifying()) {
    Kernel k = exampleKernel(c.file, "", c.sizes);
    for (const std::string& shape : shapes) {
      if (sample.keep())
        EXPECT_EQ(checkOnHost(k, "mma: tf32x3 m16n8k8 " + shape, 4e-5), "") << c.file << " tf32x3 " << shape;
      if (sample.keep())
        EXPECT_EQ(checkOnHost(k, "mma: tf32 m16n8k8 " + shape, 2e-3), "") << c.file << " tf32 " << shape;
    }
  }
  Kernel lift = fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 13}});
  EXPECT_EQ(checkOnHost(lift, "mma: f64 m8n8k4 warps 2x1 tile 1x2 k 8", 1e-12), "");
  EXPECT_EQ(checkOnHost(lift, "mma: f64 m8n8k4 warps 1x2 tile 2x1 k 4 stages 3", 1e-12), "");
  EXPECT_EQ(checkOnHost(matmul(21, ScalarType::F64), "mma: f64 m8n8k4 warps 1x2 tile 2x1 k 4", 1e-12), "");
}

// cp.async pipelines of 2 to 4 stages: steps copied ahead into a ring of buffers, converted as the
// fragments load; reductions of fewer, as many and more steps than stages, odd sizes.
TEST(HostEmulation, MmaStagesMatchTheReference) {
  rtcgtest::CaseSample sample(2);
  for (const Case& c : qualifying()) {
    Kernel k = exampleKernel(c.file, "", c.sizes);
    for (const char* shape : {"warps 2x1 tile 1x2 k 8 stages 2", "warps 1x2 tile 2x1 k 8 stages 3",
                              "warps 1x1 tile 1x1 k 16 stages 4"}) {
      if (sample.keep())
        EXPECT_EQ(checkOnHost(k, std::string("mma: tf32x3 m16n8k8 ") + shape, 4e-5), "") << c.file << " " << shape;
      if (sample.keep())
        EXPECT_EQ(checkOnHost(k, std::string("mma: tf32 m16n8k8 ") + shape, 2e-3), "") << c.file << " " << shape;
    }
  }
}

// TF32 with stages, tiles as loaded (MmaPlan::tiles: AsLoaded): 16-byte cp.async where the runs of
// four values are aligned (n = 36: partial tiles, zero-filled runs past the domain), ldmatrix for
// (rows x k) tiles (A of matmul; both operands of dg_lift, x2 for the last of three B fragments),
// value by value from (k x rows) tiles (B of matmul), batches; sizes no tile divides.
TEST(HostEmulation, MmaTf32TilesAsLoadedMatchTheReference) {
  const std::vector<std::string> shapes{"warps 2x1 tile 1x3 k 8 stages 2", "warps 1x2 tile 2x3 k 16 stages 3",
                                        "warps 2x2 tile 2x1 k 8 stages 4"};
  std::vector<Kernel> kernels{exampleKernel("matmul.rtcg", "", {{"n", 36}}),
                              exampleKernel("dg_lift.rtcg", "", {{"K", 23}, {"Np", 10}, {"Nfp", 3}}),
                              exampleKernel("batched_matmul.rtcg", "", {{"nb", 3}, {"n", 12}})};
  for (const Kernel& k : kernels)
    for (const std::string& shape : shapes) {
      EXPECT_EQ(checkOnHost(k, "mma: tf32x3 m16n8k8 " + shape, 4e-5), "") << k.name << " tf32x3 " << shape;
      EXPECT_EQ(checkOnHost(k, "mma: tf32 m16n8k8 " + shape, 2e-3), "") << k.name << " tf32 " << shape;
    }
  Schedule s = *parseSchedule("mma: tf32 m16n8k8 warps 1x2 tile 2x3 k 16 stages 3").schedule;
  const std::string mm = emitCuda(kernels[0], s).source, lift = emitCuda(kernels[1], s).source;
  EXPECT_NE(mm.find("rtcg_cp_async16(&"), std::string::npos);
  EXPECT_NE(mm.find("rtcg_ldmatrix_x4(a"), std::string::npos);
  EXPECT_EQ(mm.find("rtcg_ldmatrix_x4(b"), std::string::npos);  // B of matmul is (k x n): value by value
  EXPECT_NE(lift.find("rtcg_ldmatrix_x4(b"), std::string::npos);
  EXPECT_NE(lift.find("rtcg_ldmatrix_x2(b"), std::string::npos);
  EXPECT_EQ(emitCuda(exampleKernel("matmul.rtcg", "", {{"n", 37}}), s).source.find("rtcg_cp_async16(&"), std::string::npos);
  // Rows 8-byte aligned (n = 38): runs of two values, copied 8 bytes at a time.
  const Kernel even = exampleKernel("matmul.rtcg", "", {{"n", 38}});
  const std::string eight = emitCuda(even, s).source;
  EXPECT_NE(eight.find("rtcg_cp_async8(&"), std::string::npos);
  EXPECT_EQ(eight.find("rtcg_cp_async16(&"), std::string::npos);
  EXPECT_EQ(checkOnHost(even, "mma: tf32x3 m16n8k8 warps 1x2 tile 2x3 k 16 stages 3", 4e-5), "");
}

// The space's largest warp tiles (4x8, 8x4 fragments) in blocks of 8 warps (128 x 256, 256 x 128)
// against the reference, at sizes no tile divides (one partial block), every arithmetic that takes
// them; within sm_90's shared memory (dynamic).
TEST(HostEmulation, MmaLargeWarpTilesMatchTheReference) {
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  EXPECT_EQ(checkOnHost(exampleKernel("matmul.rtcg", "", {{"n", 36}}), "mma: tf32 m16n8k8 warps 2x4 tile 4x8 k 16 stages 3", 2e-3, sm90), "");
  EXPECT_EQ(checkOnHost(matmul(37), "mma: tf32x3 m16n8k8 warps 4x2 tile 8x4 k 8 stages 3 epilogue shared", 4e-5, sm90), "");
  EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}}), "mma: bf16 m16n8k16 warps 2x4 tile 4x8 k 32 stages 3 epilogue shared",
                        1e-5, sm90), "");
}

// Tiles over 48 KiB go to dynamic shared memory (the launch provides it), up to the device's limit.
TEST(HostEmulation, MmaTilesInDynamicSharedMemory) {
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  const std::string pipelined = "mma: tf32x3 m16n8k8 warps 2x2 tile 4x4 k 32 stages 3";
  EXPECT_FALSE(validateSchedule(matmul(37), *parseSchedule(pipelined).schedule).empty());  // 81 KiB > 48 KiB
  SchedulePlan plan = planSchedule(matmul(37), *parseSchedule(pipelined).schedule, sm90);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan.nests[0].dynamicShared);
  EXPECT_EQ(emitCuda(matmul(37), *parseSchedule(pipelined).schedule, sm90).launches[0].dynamicSharedBytes, 82944u);
  EXPECT_EQ(checkOnHost(matmul(37), pipelined, 4e-5, sm90), "");
  EXPECT_EQ(checkOnHost(matmul(37), "mma: tf32x3 m16n8k8 warps 2x2 tile 4x4 k 32", 4e-5, sm90), "");
  Kernel lift = fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 37}});
  EXPECT_EQ(checkOnHost(lift, "mma: f64 m8n8k4 warps 2x2 tile 4x4 k 32 stages 3", 1e-12, sm90), "");
  EmittedModule m = emitCuda(lift, *parseSchedule("mma: f64 m8n8k4 warps 2x2 tile 4x4 k 32 stages 3").schedule, sm90);
  for (const char* arch : {"sm_80", "sm_90"}) {
    CudaCompileResult r = compileCuda(m.source, "lift64.cu", arch);
    EXPECT_TRUE(r.success) << arch << "\n" << r.log;
  }
}

// TF32 alone is visibly less accurate than tf32x3 (the emulation rounds, it does not compute in
// FP32 and call it TF32): the same schedule fails the FP32-class tolerance with tf32.
TEST(HostEmulation, Tf32RoundsTheOperands) {
  Kernel k = matmul(24);
  EXPECT_EQ(checkOnHost(k, "mma: tf32x3 m16n8k8 warps 1x1 tile 1x1 k 8", 4e-5), "");
  EXPECT_NE(checkOnHost(k, "mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8", 4e-5), "");
}

// NVRTC compiles mma candidates to cubins for sm_80 and sm_90 (no GPU needed).
TEST(Mma, NvrtcCompilesForSm80AndSm90) {
  rtcgtest::CaseSample sample(2);
  std::vector<std::pair<Kernel, std::string>> cases;
  for (const Case& c : qualifying()) {
    cases.push_back({exampleKernel(c.file, "", c.sizes), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16"});
    cases.push_back({exampleKernel(c.file, "", c.sizes), "mma: tf32 m16n8k8 warps 2x1 tile 4x2 k 8"});
    cases.push_back({exampleKernel(c.file, "", c.sizes), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3"});
  }
  cases.push_back({fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 13}}), "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 8"});
  cases.push_back({fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 13}}), "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 8 stages 3"});
  for (const auto& [k, text] : cases) {
    if (!sample.keep()) continue;
    EmittedModule m = emitCuda(k, *parseSchedule(text).schedule);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileResult r = compileCuda(m.source, k.name + ".cu", arch);
      EXPECT_TRUE(r.success) << k.name << " " << text << " " << arch << "\n" << r.log << "\n" << m.source;
      EXPECT_FALSE(r.cubin.empty());
    }
  }
}

// 16-bit arithmetics (bf16 / f16 m16n8k16): the clause, which contractions qualify, the plan's
// tiles (16-bit, conflict-free pitch, k-major where k is not contiguous).
TEST(Mma, HalfClauseAndPlan) {
  for (const char* text : {"mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3", "mma: f16 m16n8k16 warps 1x1 tile 1x1 k 16"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.schedule) << text;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
  }
  EXPECT_NE(parseSchedule("mma: bf16 m16n8k16 warps 1x1 tile 1x1 k 8").error.find("multiple of 16"), std::string::npos);
  EXPECT_NE(parseSchedule("mma: bf16 m16n8k8 warps 1x1 tile 1x1 k 16").error.find("does not fit 'bf16'"), std::string::npos);
  Kernel g = exampleKernel("gemm_bf16.rtcg", "", {{"n", 100}});
  ContractionMatch m = matchContraction(g, 0);
  ASSERT_TRUE(m.contraction);
  EXPECT_EQ(m.contraction->narrowOperands, ScalarType::BF16);
  EXPECT_EQ(mmaAriths(Precision::Ieee, *m.contraction), std::vector<MmaArith>{MmaArith::Bf16});
  SchedulePlan plan = planSchedule(g, *parseSchedule("mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3").schedule);
  ASSERT_TRUE(plan.ok()) << plan.reasons[0];
  const MmaPlan& p = *plan.nests[0].mma;
  EXPECT_EQ(p.staged, ScalarType::BF16);
  EXPECT_FALSE(p.a.kMajor);  // a[i, k]: k contiguous
  EXPECT_TRUE(p.b.kMajor);   // b[k, j]: j contiguous, the tile is (k x N), read by ldmatrix .trans
  EXPECT_EQ((p.a.pitch / 8) % 2, 1);  // an odd number of 16-byte pieces per row
  EXPECT_EQ((p.b.pitch / 8) % 2, 1);
  EXPECT_EQ(p.tileBytes, 3 * (64 * p.a.pitch + 32 * p.b.pitch) * 2);
  // The wrong 16-bit type, an f32 contraction, operands of two types.
  std::vector<std::string> reasons;
  EXPECT_FALSE(planMma(g, 0, parseSchedule("mma: f16 m16n8k16 warps 1x1 tile 1x1 k 16").schedule->nests[0], {}, reasons));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("both operands must be f32(f16 load)"), std::string::npos) << reasons[0];
  reasons.clear();
  EXPECT_FALSE(planMma(matmul(64), 0, parseSchedule("mma: bf16 m16n8k16 warps 1x1 tile 1x1 k 16").schedule->nests[0], {}, reasons));
  Kernel mixed = fromSource(kMixed, {{"n", 40}});
  ASSERT_TRUE(matchContraction(mixed, 0).contraction);
  EXPECT_EQ(matchContraction(mixed, 0).contraction->narrowOperands, ScalarType::F32);
  EXPECT_TRUE(mmaAriths(Precision::Ieee, *matchContraction(mixed, 0).contraction).empty());
  EXPECT_NE(printPlan(g, plan.nests[0]).find("ldmatrix (.trans"), std::string::npos) << printPlan(g, plan.nests[0]);
}

// The space offers the 16-bit arithmetic under the default policy (exact products), and beside it
// the TF32 ones where the policy allows them.
TEST(Mma, SpaceOffersHalfMma) {
  auto arithsOf = [](const Kernel& k, Precision p) {
    SpaceOptions o;
    o.precision = p;
    std::set<MmaArith> seen;
    for (const Candidate& c : enumerateSchedules(k, o).candidates)
      for (const NestSchedule& n : c.schedule.nests)
        if (n.mma.any()) seen.insert(n.mma.arith);
    return seen;
  };
  Kernel g = exampleKernel("gemm_bf16.rtcg", "", {{"n", 512}});
  EXPECT_EQ(arithsOf(g, Precision::Ieee), std::set<MmaArith>{MmaArith::Bf16});
  EXPECT_EQ(arithsOf(fromSource(kHalfT, {{"n", 512}, {"m", 256}, {"kk", 384}}), Precision::Ieee),
            std::set<MmaArith>{MmaArith::F16});
}

// 16-bit schedules against the reference in the host emulation (ldmatrix and m16n8k16 layouts),
// at sizes no tile divides: element copies where runs are not 16-byte aligned (n = 100), 16-byte
// cp.async with partial runs zero-filled (n = 104, 136), k-major tiles (.trans) for either
// operand, x2 for an odd fragment count, stages, batches, an epilogue around the sum.
TEST(HostEmulation, HalfMmaMatchesTheReference) {
  rtcgtest::CaseSample sample(3);  // 4 shapes: every shape runs on some kernel
  const std::vector<std::string> shapes{"warps 2x1 tile 1x2 k 16", "warps 1x2 tile 2x3 k 32 stages 3",
                                        "warps 2x2 tile 1x1 k 16 stages 2", "warps 1x1 tile 2x1 k 64"};
  std::vector<std::pair<Kernel, std::string>> cases;
  for (int64_t n : {100, 104, 37})
    cases.push_back({exampleKernel("gemm_bf16.rtcg", "", {{"n", n}}), "bf16"});
  cases.push_back({fromSource(kHalfT, {{"n", 72}, {"m", 50}, {"kk", 88}}), "f16"});
  cases.push_back({fromSource(kHalfT, {{"n", 29}, {"m", 136}, {"kk", 45}}), "f16"});
  cases.push_back({fromSource(kBatchedBf16, {{"nb", 3}, {"n", 24}}), "bf16"});
  for (const auto& [k, arith] : cases)
    for (const std::string& shape : shapes) {
      if (!sample.keep()) continue;
      const std::string text = "mma: " + arith + " m16n8k16 " + shape;
      EXPECT_EQ(checkOnHost(k, text, 1e-5), "") << k.name << " " << text;
    }
  // The aligned case copies 16 bytes at a time; rows 8- or 4-byte aligned (n = 100, 102) 8 or 4;
  // odd rows (n = 101) element by element.
  Schedule s = *parseSchedule("mma: bf16 m16n8k16 warps 1x2 tile 2x3 k 32 stages 3").schedule;
  const std::string aligned = emitCuda(exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}}), s).source;
  EXPECT_NE(aligned.find("rtcg_cp_async16(&"), std::string::npos);
  EXPECT_NE(aligned.find("rtcg_ldmatrix_x4_trans(b"), std::string::npos);
  EXPECT_NE(aligned.find("rtcg_mma_bf16(acc"), std::string::npos);
  const std::string eight = emitCuda(exampleKernel("gemm_bf16.rtcg", "", {{"n", 100}}), s).source;
  EXPECT_EQ(eight.find("rtcg_cp_async16(&"), std::string::npos);
  EXPECT_NE(eight.find("rtcg_cp_async8(&"), std::string::npos);
  const std::string four = emitCuda(exampleKernel("gemm_bf16.rtcg", "", {{"n", 102}}), s).source;
  EXPECT_EQ(four.find("rtcg_cp_async8(&"), std::string::npos);
  EXPECT_NE(four.find("rtcg_cp_async4(&"), std::string::npos);
  const std::string odd = emitCuda(exampleKernel("gemm_bf16.rtcg", "", {{"n", 101}}), s).source;
  for (const char* call : {"rtcg_cp_async16(&", "rtcg_cp_async8(&", "rtcg_cp_async4(&"})
    EXPECT_EQ(odd.find(call), std::string::npos) << call;
  for (int64_t n : {100, 102})
    EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "", {{"n", n}}), "mma: bf16 m16n8k16 warps 1x2 tile 2x3 k 32 stages 3", 1e-5), "")
        << n;
}

// NVRTC compiles 16-bit mma candidates for sm_80 and sm_90 (ptxas checks the ldmatrix and mma
// operand lists).
TEST(Mma, NvrtcCompilesHalfMma) {
  std::vector<std::pair<Kernel, std::string>> cases{
      {exampleKernel("gemm_bf16.rtcg", "", {{"n", 256}}), "mma: bf16 m16n8k16 warps 2x2 tile 2x4 k 32 stages 3"},
      {exampleKernel("gemm_bf16.rtcg", "", {{"n", 100}}), "mma: bf16 m16n8k16 warps 2x1 tile 1x3 k 16"},
      {fromSource(kHalfT, {{"n", 72}, {"m", 50}, {"kk", 88}}), "mma: f16 m16n8k16 warps 1x2 tile 2x1 k 32 stages 2"},
  };
  for (const auto& [k, text] : cases) {
    EmittedModule m = emitCuda(k, *parseSchedule(text).schedule);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileResult r = compileCuda(m.source, k.name + ".cu", arch);
      EXPECT_TRUE(r.success) << k.name << " " << text << " " << arch << "\n" << r.log << "\n" << m.source;
    }
  }
}

// `epilogue shared`: accumulators through shared memory (the operand tiles' space, dynamic), the
// outputs stored in the output's memory order: along N for c[i, j], along M for dg_lift's
// rhs[k, i] (M = i); with an epilogue around the sum, at sizes no tile divides, every arithmetic.
TEST(HostEmulation, MmaSharedEpilogueMatchesTheReference) {
  const std::string text = "mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2 epilogue shared";
  auto parsed = parseSchedule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_EQ(printSchedule(*parsed.schedule), text);
  EXPECT_NE(parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8 epilogue local").error.find("expected 'shared'"),
            std::string::npos);
  Kernel lift = exampleKernel("dg_lift.rtcg", "", {{"K", 23}, {"Np", 10}, {"Nfp", 3}});
  SchedulePlan plan = planSchedule(lift, *parsed.schedule);
  ASSERT_TRUE(plan.ok()) << plan.reasons[0];
  EXPECT_TRUE(plan.nests[0].mma->epilogueAlongM());  // rhs[k, i]: i (M) contiguous
  EXPECT_EQ(plan.nests[0].mma->epiloguePitch % 32, 4);
  EXPECT_TRUE(plan.nests[0].dynamicShared);
  EXPECT_EQ(checkOnHost(lift, text, 4e-5), "");
  EXPECT_FALSE(planSchedule(matmul(37), *parsed.schedule).nests[0].mma->epilogueAlongM());
  // Along N: pairs of f32 accumulators as one float2 store, pitch 8 (mod 32): conflict-free.
  EXPECT_EQ(planSchedule(matmul(37), *parsed.schedule).nests[0].mma->epiloguePitch % 32, 8);
  EXPECT_NE(emitCuda(matmul(37), *parsed.schedule).source.find("make_float2(acc"), std::string::npos);
  EXPECT_EQ(emitCuda(lift, *parsed.schedule).source.find("make_float2("), std::string::npos);
  EXPECT_EQ(checkOnHost(matmul(37), text, 4e-5), "");
  EXPECT_EQ(checkOnHost(matmul(37), "mma: tf32 m16n8k8 warps 2x2 tile 2x1 k 16 epilogue shared", 2e-3), "");
  EXPECT_EQ(checkOnHost(exampleKernel("batched_matmul.rtcg", "", {{"nb", 3}, {"n", 13}}), text, 4e-5), "");
  EXPECT_EQ(checkOnHost(fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 13}}),
                        "mma: f64 m8n8k4 warps 1x2 tile 2x1 k 4 stages 3 epilogue shared", 1e-12), "");
  const std::string half = "mma: bf16 m16n8k16 warps 1x2 tile 2x3 k 32 stages 3 epilogue shared";
  EXPECT_EQ(checkOnHost(exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}}), half, 1e-5), "");
  EXPECT_EQ(checkOnHost(fromSource(kHalfT, {{"n", 29}, {"m", 50}, {"kk", 45}}),
                        "mma: f16 m16n8k16 warps 2x1 tile 1x2 k 16 epilogue shared", 1e-5), "");
  for (const auto& [k, s] : std::vector<std::pair<Kernel, std::string>>{{lift, text}, {exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}}), half}}) {
    EmittedModule m = emitCuda(k, *parseSchedule(s).schedule);
    for (const char* arch : {"sm_80", "sm_90"}) {
      CudaCompileResult r = compileCuda(m.source, k.name + ".cu", arch);
      EXPECT_TRUE(r.success) << k.name << " " << s << " " << arch << "\n" << r.log;
    }
  }
}

// `blocks_per_sm` beside `mma:`: __launch_bounds__(threads, N) caps the registers for N blocks
// per multiprocessor; the space offers it for large fragment tiles at the count the model's
// register estimate allows; more threads than a multiprocessor holds are refused.
TEST(Mma, BlocksPerSmBesideMma) {
  Kernel g = exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}});
  const std::string text = "mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3; blocks_per_sm: 2";
  auto parsed = parseSchedule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.error;
  EXPECT_TRUE(validateSchedule(g, *parsed.schedule).empty());
  EmittedModule m = emitCuda(g, *parsed.schedule);
  EXPECT_NE(m.source.find("__launch_bounds__(128, 2)"), std::string::npos);
  EXPECT_EQ(checkOnHost(g, text, 1e-5), "");
  CudaCompileResult r = compileCuda(m.source, "gemm_bf16.cu", "sm_90");
  EXPECT_TRUE(r.success) << r.log;
  auto reasons = validateSchedule(g, *parseSchedule("mma: bf16 m16n8k16 warps 2x4 tile 1x1 k 16; blocks_per_sm: 16").schedule);
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("exceeds 2048 threads"), std::string::npos) << reasons[0];
  SpaceOptions o;
  bool offered = false;
  for (const Candidate& c : enumerateSchedules(exampleKernel("gemm_bf16.rtcg", "", {{"n", 4096}}), o).candidates)
    offered |= c.schedule.nests[0].mma.any() && c.schedule.nests[0].blocksPerSM >= 2;
  EXPECT_TRUE(offered);
}

// `stores: streaming` beside `mma:`: the epilogue's stores are __stcs (the plan streams the
// statement), with the register epilogue and the shared one, at sizes no tile divides; the host
// emulation agrees with the reference; the space offers streaming siblings of mma candidates.
TEST(Mma, StreamingStoresBesideMma) {
  Kernel g = exampleKernel("gemm_bf16.rtcg", "", {{"n", 104}});
  for (const char* text : {"stores: streaming; mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3",
                           "stores: streaming; mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 32 stages 3 epilogue shared"}) {
    auto parsed = parseSchedule(text);
    ASSERT_TRUE(parsed.ok()) << parsed.error;
    EXPECT_EQ(printSchedule(*parsed.schedule), text);
    SchedulePlan plan = planSchedule(g, *parsed.schedule, {});
    ASSERT_TRUE(plan.ok()) << text << ": " << plan.reasons[0];
    EXPECT_EQ(plan.nests[0].streamedStores, std::vector<int>{0}) << text;
    EmittedModule m = emitCuda(g, plan);
    // The fragments' column pairs as one float2 (gemm_bf16's rows are even), the shared epilogue's
    // outputs four at a time (rows of 104: epilogueVectorWidth).
    const bool shared = std::string(text).find("epilogue shared") != std::string::npos;
    EXPECT_NE(m.source.find(shared ? "__stcs((float4*)&" : "__stcs((float2*)&"), std::string::npos) << text;
    EXPECT_EQ(checkOnHost(g, text, 1e-5), "") << text;
  }
  Kernel f = exampleKernel("matmul.rtcg", "", {{"n", 77}});
  const std::string tf = "stores: streaming; mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3";
  EXPECT_EQ(checkOnHost(f, tf, 1e-5), "");
  SpaceOptions o;
  bool offered = false;
  for (const Candidate& c : enumerateSchedules(exampleKernel("gemm_bf16.rtcg", "", {{"n", 4096}}), o).candidates)
    offered |= c.schedule.nests[0].mma.any() && c.schedule.nests[0].streamingStores;
  EXPECT_TRUE(offered);
}

// FP64's sm_90 shapes (m16n8k4, m16n8k8, m16n8k16, PTX ISA 7.8): the clause prints and parses back,
// bad shapes are refused at their column, a target below sm_90 refuses them with the reason, the
// plan's fragments, tiles and conflict-free pitch, and explain names the shape.
TEST(Mma, F64Sm90ShapesClauseTargetAndPlan) {
  for (const char* text : {"mma: f64 m16n8k4 warps 2x2 tile 2x2 k 8", "mma: f64 m16n8k8 warps 2x2 tile 4x4 k 16 stages 3",
                           "mma: f64 m16n8k16 warps 2x4 tile 2x2 k 32 stages 3 epilogue shared"}) {
    ScheduleParseResult r = parseSchedule(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error;
    EXPECT_EQ(printSchedule(*r.schedule), text);
    EXPECT_EQ(parseSchedule(printSchedule(*r.schedule)).schedule, r.schedule);
    EXPECT_NE(r.schedule->nests[0].mma.shape, MmaShape::Native);
  }
  ScheduleParseResult bad = parseSchedule("mma: f64 m16n8k2 warps 1x1 tile 1x1 k 4");
  EXPECT_EQ(bad.column, 10) << bad.error;
  EXPECT_NE(bad.error.find("'m8n8k4', or on sm_90 'm16n8k4', 'm16n8k8' or 'm16n8k16'"), std::string::npos) << bad.error;
  ScheduleParseResult k8 = parseSchedule("mma: f64 m16n8k16 warps 1x1 tile 1x1 k 8");
  EXPECT_EQ(k8.column, 40) << k8.error;
  EXPECT_NE(k8.error.find("multiple of 16"), std::string::npos) << k8.error;
  EXPECT_NE(parseSchedule("mma: bf16 m16n8k8 warps 1x1 tile 1x1 k 16").error.find("does not fit 'bf16'"), std::string::npos);

  Kernel k = matmul(37, ScalarType::F64);
  const Schedule s = *parseSchedule("mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3").schedule;
  ScheduleLimits sm80, sm90;
  sm80.computeCapability = 80, sm90.computeCapability = 90;
  std::vector<std::string> r = validateSchedule(k, s, sm80);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_NE(r[0].find("shape 'm16n8k8' of 'f64' needs sm_90 or later"), std::string::npos) << r[0];
  EXPECT_NE(r[0].find("the target is sm_80"), std::string::npos) << r[0];
  EXPECT_TRUE(validateSchedule(k, s, sm90).empty());
  EXPECT_TRUE(validateSchedule(k, s).empty());  // target unknown: the emitted #error guards
  EXPECT_TRUE(validateSchedule(k, *parseSchedule("mma: f64 m8n8k4 warps 2x2 tile 2x2 k 16").schedule, sm80).empty());
  // On f32 contractions the shape is refused (a schedule built in code; the parser refuses the text).
  Schedule tf = *parseSchedule("mma: tf32 m16n8k8 warps 1x1 tile 1x1 k 8").schedule;
  tf.nests[0].mma.shape = MmaShape::M16N8K8;
  std::vector<std::string> tr = validateSchedule(matmul(37), tf);
  ASSERT_FALSE(tr.empty());
  EXPECT_NE(tr[0].find("is an f64 shape"), std::string::npos) << tr[0];

  for (auto [shape, fragK] : std::vector<std::pair<std::string, int64_t>>{{"m16n8k4", 4}, {"m16n8k8", 8}, {"m16n8k16", 16}}) {
    SchedulePlan plan = planSchedule(k, *parseSchedule("mma: f64 " + shape + " warps 2x2 tile 2x2 k 32").schedule);
    ASSERT_TRUE(plan.ok()) << shape;
    const MmaPlan& p = *plan.nests[0].mma;
    EXPECT_EQ(p.fragM, 16);
    EXPECT_EQ(p.fragN, 8);
    EXPECT_EQ(p.fragK, fragK);
    EXPECT_EQ(p.blockM, 64);
    EXPECT_EQ(p.blockN, 32);
    EXPECT_EQ(p.pitch % 8, 4);  // 8-byte fragment loads without bank conflicts (Mma.h)
    EXPECT_EQ(p.mmaPerStep, 2 * 2 * (32 / fragK));
    const std::string text = printPlan(k, plan.nests[0]);
    EXPECT_NE(text.find("f64 mma.sync " + shape + " (sm_90"), std::string::npos) << text;
    EXPECT_EQ(p.tiles, TileForm::Padded);
  }
  // With stages the tiles follow each operand's contiguous direction (16-byte cp.async where
  // aligned): matmul's b[k, j] as a (k x n) tile, pitch = 4 (mod 16) doubles (conflict-free loads
  // at (k = t, n = g)); m8n8k4 keeps its (rows x k) tiles.
  const ScheduleLimits hopper = deviceScheduleLimits(227 * 1024, 1024);
  SchedulePlan staged = planSchedule(k, *parseSchedule("mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3").schedule, hopper);
  ASSERT_TRUE(staged.ok());
  const MmaPlan& sp = *staged.nests[0].mma;
  EXPECT_EQ(sp.tiles, TileForm::AsLoaded);
  EXPECT_FALSE(sp.a.kMajor);
  EXPECT_TRUE(sp.b.kMajor);
  EXPECT_EQ(sp.a.pitch % 8, 4);
  EXPECT_EQ(sp.b.pitch % 16, 4);
  EXPECT_EQ(sp.b.buffer, 16 * sp.b.pitch);
  EXPECT_NE(printPlan(k, staged.nests[0]).find("B K x N (pitch 36); fragments value by value"), std::string::npos)
      << printPlan(k, staged.nests[0]);
  SchedulePlan old = planSchedule(k, *parseSchedule("mma: f64 m8n8k4 warps 2x2 tile 2x2 k 16 stages 3").schedule, hopper);
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old.nests[0].mma->tiles, TileForm::Padded);
  const std::string aligned = emitCuda(matmul(1000, ScalarType::F64),
                                       *parseSchedule("mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3").schedule, hopper).source;
  EXPECT_NE(aligned.find("rtcg_cp_async16(&"), std::string::npos);
  EXPECT_EQ(aligned.find("rtcg_ldmatrix"), std::string::npos);
}

// The sm_90 FP64 shapes against the reference in the host emulation (IEEE products and sums, only
// the order differs: f64's tolerance), at sizes no tile divides: square, rectangular (M 100, N 72,
// K 36), an epilogue around the sum reading its output (lift), with and without stages, the
// shared epilogue, several warps and fragments; and the emitted call per shape. The full run
// checks every shape x kernel x schedule; the default run a Latin square of them (shape = kernel
// + schedule mod 3): every shape with every kernel, every shape with every schedule, every kernel
// with every schedule, once each.
TEST(HostEmulation, MmaF64Sm90ShapesMatchTheReference) {
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  sm90.computeCapability = 90;
  // 37 and the lift: odd rows, copied value by value; 36 and the rectangle: 16-byte copies with
  // runs cut at the domain's edge.
  const std::vector<Kernel> kernels{matmul(37, ScalarType::F64), matmul(36, ScalarType::F64),
                                    fromSource(kF64Rect, {{"m", 100}, {"n", 72}, {"kk", 36}}),
                                    fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 37}})};
  const std::vector<std::string> rest{"warps 2x1 tile 1x2 k 16", "warps 2x2 tile 2x2 k 32 stages 3",
                                      "warps 1x2 tile 3x1 k 16 stages 2 epilogue shared"};
  const std::vector<const char*> shapes{"m16n8k4", "m16n8k8", "m16n8k16"};
  for (size_t s = 0; s < shapes.size(); ++s) {
    const char* shape = shapes[s];
    for (size_t k = 0; k < kernels.size(); ++k)
      for (size_t r = 0; r < rest.size(); ++r)
        if (rtcgtest::fullTests() || (k + r) % shapes.size() == s)
          EXPECT_EQ(checkOnHost(kernels[k], fmt::format("mma: f64 {} {}", shape, rest[r]), 1e-12, sm90), "")
              << kernels[k].name << " " << shape << " " << rest[r];
    const std::string src = emitCuda(kernels[0], *parseSchedule(fmt::format("mma: f64 {} {}", shape, rest[0])).schedule).source;
    EXPECT_NE(src.find(fmt::format("rtcg_mma_f64_{}(acc", shape)), std::string::npos) << shape;
    EXPECT_NE(src.find(fmt::format("mma.sync.aligned.{}.row.col.f64.f64.f64.f64", shape)), std::string::npos) << shape;
  }
  // n = 1000 + 3, the size of the benchmark's smallest row: the full run only (minutes on the host).
  if (rtcgtest::fullTests())
    EXPECT_EQ(checkOnHost(matmul(1003, ScalarType::F64), "mma: f64 m16n8k8 warps 2x2 tile 4x4 k 16 stages 3", 1e-12, sm90), "");
}

// NVRTC compiles the sm_90 FP64 shapes to cubins for sm_90 without local memory (no spills) for the
// three candidates of each shape that the space offers with the most registers (the model's
// estimate; blocks_per_sm caps included), and refuses them for sm_80 (the prelude's #error: the
// pipeline refuses such a schedule before, with its reason); m8n8k4 modules carry no sm_90 helper.
TEST(Mma, F64Sm90ShapesCompileForSm90Only) {
  Kernel k = matmul(1003, ScalarType::F64);
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  SpaceOptions o;
  o.limits = sm90;
  std::map<MmaShape, std::multimap<int64_t, std::string>> largest;  // per shape: estimate -> schedule
  for (const Candidate& c : enumerateSchedules(k, o).candidates) {
    const MmaSchedule& ms = c.schedule.nests[0].mma;
    if (ms.shape == MmaShape::Native) continue;
    std::multimap<int64_t, std::string>& top = largest[ms.shape];
    top.emplace(mmaRegisters(ms, ScalarType::F64) + (c.schedule.nests[0].blocksPerSM > 0 ? 0 : 1), c.text);
    if (top.size() > 3) top.erase(top.begin());
  }
  ASSERT_EQ(largest.size(), 3u);
  std::vector<std::string> texts;
  for (const auto& shape : largest)
    for (const auto& entry : shape.second) texts.push_back(entry.second);
  for (const std::string& text : texts) {
    EmittedModule m = emitCuda(k, *parseSchedule(text).schedule, sm90);
    CudaCompileResult r = compileCuda(m.source, "matmul64.cu", "sm_90");
    ASSERT_TRUE(r.success) << text << "\n" << r.log;
    ASSERT_EQ(r.resources.size(), 1u) << text;
    EXPECT_EQ(r.resources[0].localBytes, 0) << text << ": " << r.resources[0].registers << " registers";
    EXPECT_EQ(r.resources[0].spillStoreBytes, 0) << text;
    CudaCompileResult old = compileCuda(m.source, "matmul64.cu", "sm_80");
    EXPECT_FALSE(old.success) << text;
    EXPECT_NE(old.log.find("need sm_90 or later"), std::string::npos) << old.log;
  }
  const std::string m8 = emitCuda(k, *parseSchedule("mma: f64 m8n8k4 warps 2x2 tile 4x4 k 16 stages 3").schedule, sm90).source;
  EXPECT_EQ(m8.find("rtcg_mma_f64_m16n8k"), std::string::npos);
}

// The space offers the sm_90 FP64 shapes beside m8n8k4 on sm_90 and ranks them first (the model
// counts m8n8k4 at half of Hopper's FP64 tensor rate); on sm_80 only m8n8k4.
TEST(Mma, SpaceOffersF64Sm90ShapesOnSm90) {
  Kernel k = matmul(1000, ScalarType::F64);
  auto shapes = [&](const DeviceModel& d) {
    SpaceOptions o;
    o.device = d;
    Space s = enumerateSchedules(k, o);
    std::set<std::string> seen;
    std::string firstMma;
    for (const Candidate& c : s.candidates)
      for (const NestSchedule& n : c.schedule.nests)
        if (n.mma.any()) {
          seen.insert(mmaShapeName(n.mma));
          if (firstMma.empty()) firstMma = mmaShapeName(n.mma);
        }
    return std::pair{seen, firstMma};
  };
  auto [sm90, first90] = shapes(DeviceModel{});
  EXPECT_EQ(sm90, (std::set<std::string>{"m8n8k4", "m16n8k4", "m16n8k8", "m16n8k16"}));
  EXPECT_NE(first90, "m8n8k4");
  DeviceModel a100 = *archDeviceModel("sm_80");
  auto [sm80, first80] = shapes(a100);
  EXPECT_EQ(sm80, std::set<std::string>{"m8n8k4"});
}

// `fragments 2` (double-buffered fragment registers, EmitMmaPrefetch.cpp): the clause prints and
// parses back, a count other than 2 and wgmma are refused at their column, the plan refuses it
// without stages and beside other arithmetics than f64 (with the reason), and explain says what it does.
TEST(Mma, FragmentsClauseAndPlan) {
  for (const char* text : {"mma: f64 m16n8k16 warps 2x2 tile 4x4 k 16 stages 3 fragments 2",
                           "blocks_per_sm: 2; mma: f64 m16n8k4 warps 2x4 tile 2x4 k 16 stages 4 fragments 2 epilogue shared",
                           "mma: f64 m8n8k4 warps 2x2 tile 2x2 k 8 fragments 2"}) {
    ScheduleParseResult r = parseSchedule(text);
    ASSERT_TRUE(r.ok()) << text << ": " << r.error;
    EXPECT_EQ(printSchedule(*r.schedule), text);
    EXPECT_EQ(parseSchedule(printSchedule(*r.schedule)).schedule, r.schedule);
    EXPECT_EQ(r.schedule->nests[0].mma.fragments, 2);
  }
  ScheduleParseResult three = parseSchedule("mma: f64 m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 fragments 3");
  EXPECT_EQ(three.column, 62) << three.error;
  EXPECT_NE(three.error.find("mma fragments must be 2"), std::string::npos) << three.error;
  ScheduleParseResult none = parseSchedule("mma: f64 m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 fragments");
  EXPECT_FALSE(none.ok());
  EXPECT_NE(none.error.find("after 'fragments'"), std::string::npos) << none.error;
  ScheduleParseResult wg = parseSchedule("mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 32 stages 3 fragments 2");
  EXPECT_EQ(wg.column, 57) << wg.error;
  EXPECT_NE(wg.error.find("wgmma reads its operands from shared memory"), std::string::npos) << wg.error;

  const Kernel k = matmul(37, ScalarType::F64);
  auto reasons = [&](const Kernel& kernel, const std::string& text) {
    return validateSchedule(kernel, *parseSchedule(text).schedule);
  };
  std::vector<std::string> unstaged = reasons(k, "mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 fragments 2");
  ASSERT_EQ(unstaged.size(), 1u);
  EXPECT_NE(unstaged[0].find("'fragments 2' loads the next step's fragments"), std::string::npos) << unstaged[0];
  std::vector<std::string> tf32 = reasons(matmul(37), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 fragments 2");
  ASSERT_EQ(tf32.size(), 1u);
  EXPECT_NE(tf32[0].find("emitted for 'f64' only, not 'tf32x3'"), std::string::npos) << tf32[0];

  SchedulePlan plan = planSchedule(k, *parseSchedule("mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3 fragments 2").schedule);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan.nests[0].mma->prefetchFragments());
  const std::string text = printPlan(k, plan.nests[0]);
  EXPECT_NE(text.find("3 buffers filled by cp.async, 3 steps ahead"), std::string::npos) << text;
  EXPECT_NE(text.find("fragments: two register sets"), std::string::npos) << text;
  SchedulePlan one = planSchedule(k, *parseSchedule("mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3").schedule);
  ASSERT_TRUE(one.ok());
  EXPECT_FALSE(one.nests[0].mma->prefetchFragments());
  EXPECT_EQ(printPlan(k, one.nests[0]).find("fragments: two"), std::string::npos);
}

// `fragments 2` against the reference in the host emulation at sizes no tile divides (the brief's
// 200 x 136 x 72 rectangle, 37, the lift's epilogue reading its output): one fragment-k per step
// (m16n8k16 k 16: the carried set is all a step loads), several, an odd number (m16n8k4 k 12), 2 to
// 4 stages, a reduction of one step (the ring's empty groups), m8n8k4, both epilogues, bounds.
// The full run checks every schedule on every kernel; the default run each schedule on two of the
// three kernels, in turn (each kernel meets five of the seven schedules).
TEST(HostEmulation, MmaF64FragmentsMatchTheReference) {
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  sm90.computeCapability = 90;
  const std::vector<Kernel> kernels{fromSource(kF64Rect, {{"m", 200}, {"n", 136}, {"kk", 72}}),
                                    matmul(37, ScalarType::F64),
                                    fromSource(kF64Lift, {{"K", 19}, {"Np", 11}, {"F", 37}})};
  const std::vector<std::string> schedules{
      "m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 fragments 2 epilogue shared",
      "m16n8k16 warps 2x2 tile 4x4 k 16 stages 4 fragments 2",
      "m16n8k8 warps 2x4 tile 2x2 k 32 stages 2 fragments 2 epilogue shared",
      "m16n8k4 warps 1x2 tile 3x1 k 12 stages 3 fragments 2",
      "m16n8k4 warps 2x2 tile 4x4 k 8 stages 4 fragments 2 epilogue shared; blocks_per_sm: 2",
      "m16n8k4 warps 4x2 tile 2x4 k 8 stages 4 fragments 2 epilogue shared; blocks_per_sm: 2",
      "m8n8k4 warps 2x1 tile 2x2 k 8 stages 3 fragments 2"};
  for (size_t k = 0; k < kernels.size(); ++k)
    for (size_t s = 0; s < schedules.size(); ++s)
      if (rtcgtest::fullTests() || (k + s) % kernels.size() != 2) {
        const std::string text = "mma: f64 " + schedules[s];
        const std::vector<std::string> refused = validateSchedule(kernels[k], *parseSchedule(text).schedule, sm90);
        if (!refused.empty()) {  // fewer reduction steps than stages (37 values in steps of 16, 4 stages)
          EXPECT_NE(refused[0].find("needs at least as many reduction steps as stages"), std::string::npos) << refused[0];
          continue;
        }
        EXPECT_EQ(checkOnHost(kernels[k], text, 1e-12, sm90), "") << kernels[k].name << " " << schedules[s];
      }
  // One step (K = 12 <= k 16) of 3 stages: refused with the reason.
  const std::vector<std::string> oneStep = validateSchedule(fromSource(kF64Rect, {{"m", 33}, {"n", 17}, {"kk", 12}}),
      *parseSchedule("mma: f64 m16n8k8 warps 2x1 tile 1x2 k 16 stages 3 fragments 2").schedule, sm90);
  ASSERT_EQ(oneStep.size(), 1u);
  EXPECT_NE(oneStep[0].find("'fragments 2' needs at least as many reduction steps as stages: 1 step of 16 over 12 "
                            "values, 3 stages"), std::string::npos) << oneStep[0];
  // The emitted loop: the barrier precedes the step's last mma, the copies run `stages` ahead.
  const std::string src = emitCuda(matmul(1003, ScalarType::F64),
                                   *parseSchedule("mma: f64 m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 fragments 2").schedule,
                                   sm90).source;
  const size_t loop = src.find("for (int step = 0;");
  ASSERT_NE(loop, std::string::npos) << src;
  EXPECT_NE(src.find("const int ahead = step + 3;", loop), std::string::npos) << src;
  EXPECT_LT(src.find("__syncthreads();", loop), src.find("rtcg_mma_f64_m16n8k16(acc", loop)) << src;
  if (rtcgtest::fullTests())
    EXPECT_EQ(checkOnHost(matmul(1003, ScalarType::F64), "mma: f64 m16n8k16 warps 2x2 tile 2x4 k 16 stages 3 fragments 2",
                          1e-12, sm90), "");
}

// The f64 DG differentiation of issue 36 (D of 3 Np rows, the output along M): reductions of
// fewer steps than stages, where the cp.async rings counted empty groups (complete at once on the
// GPU, so a wait passed before its stage landed: 4-27% wrong on an H200). The emulation lands a
// copy only when a wait retires its group and makes no group of an empty commit, as the GPU.
TEST(HostEmulation, MmaF64RingsOfFewerStepsThanStagesMatchTheReference) {
  ScheduleLimits sm90 = deviceScheduleLimits(227 * 1024, 1024);
  sm90.computeCapability = 90;
  const char* src = R"(
kernel dgd(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
)";
  struct Case {
    int64_t np;
    const char* schedule;
  };
  const Case cases[] = {{35, "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 16 stages 4 fragments 2 epilogue shared"},
                        {35, "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 16 stages 4 fragments 2"},
                        {32, "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 16 stages 4 fragments 2 epilogue shared"},
                        {35, "mma: f64 m16n8k8 warps 2x2 tile 1x1 k 32 stages 3 fragments 2 epilogue shared"},
                        {35, "mma: f64 m16n8k4 warps 4x1 tile 1x1 k 16 stages 4 fragments 2 epilogue shared"},
                        {35, "mma: f64 m16n8k4 warps 2x2 tile 1x1 k 16 stages 3 fragments 2 epilogue shared"},
                        {32, "mma: f64 m16n8k8 warps 2x2 tile 2x1 k 16 stages 4"}};
  // Each schedule as it is where the plan takes it (`fragments 2` needs as many steps as stages,
  // which these reductions of 2 and 3 steps do not have), and without `fragments 2`.
  for (const Case& c : cases) {
    const Kernel k = fromSource(src, {{"K", 37}, {"Np", c.np}});
    std::string text = c.schedule;
    if (!validateSchedule(k, *parseSchedule(text).schedule, sm90).empty()) {
      EXPECT_NE(text.find("fragments 2"), std::string::npos) << text;
      text.replace(text.find(" fragments 2"), 12, "");
    }
    EXPECT_EQ(checkOnHost(k, text, 1e-12, sm90), "") << "Np " << c.np << ": " << text;
  }
}

// The space offers `fragments 2` with FP64's sm_90 shapes and stages only (none on sm_80, none
// without stages), and NVRTC compiles the offered ones with the most registers (the model's
// estimate, two per shape, bounds included) for sm_90 without local memory.
TEST(Mma, SpaceOffersF64FragmentsThatCompileWithoutSpills) {
  Kernel k = matmul(1003, ScalarType::F64);
  SpaceOptions o;
  o.limits = deviceScheduleLimits(227 * 1024, 1024);
  std::map<MmaShape, std::multimap<int64_t, std::string>> largest;
  int offered = 0;
  for (const Candidate& c : enumerateSchedules(k, o).candidates) {
    const MmaSchedule& ms = c.schedule.nests[0].mma;
    if (ms.fragments < 2) continue;
    ++offered;
    EXPECT_NE(ms.shape, MmaShape::Native) << c.text;
    EXPECT_GT(ms.stages, 1) << c.text;
    EXPECT_LT(mmaRegisters(ms, ScalarType::F64), 255) << c.text;
    std::multimap<int64_t, std::string>& top = largest[ms.shape];
    top.emplace(mmaRegisters(ms, ScalarType::F64) + (c.schedule.nests[0].blocksPerSM > 0 ? 0 : 1), c.text);
    if (top.size() > 2) top.erase(top.begin());
  }
  EXPECT_GT(offered, 0);
  EXPECT_EQ(largest.size(), 3u);
  for (const auto& shape : largest)
    for (const auto& entry : shape.second) {
      const std::string& text = entry.second;
      CudaCompileResult r = compileCuda(emitCuda(k, *parseSchedule(text).schedule, o.limits).source, "dgemm.cu", "sm_90");
      ASSERT_TRUE(r.success) << text << "\n" << r.log;
      ASSERT_EQ(r.resources.size(), 1u) << text;
      EXPECT_EQ(r.resources[0].localBytes, 0) << text << ": " << r.resources[0].registers << " registers";
    }
  SpaceOptions a100;
  a100.device = *archDeviceModel("sm_80");
  for (const Candidate& c : enumerateSchedules(k, a100).candidates)
    EXPECT_EQ(c.schedule.nests[0].mma.fragments, 1) << c.text;
}

// The fragment epilogue's column pairs (accumulators r and r + 1 of one row) store as one float2
// where the output is f32, contiguous along N and its rows an even number of elements apart; a
// last column alone where N is odd; single floats where a row's length is odd. Host emulation at
// sizes no tile divides, with the statement's own arithmetic reading the output.
TEST(Mma, FragmentColumnPairsStoreAsFloat2) {
  const char* source = R"(
kernel pairs(m: int, n: int, w: int, kk: int, a: f32[m, kk], b: f32[n, kk], inout c: f32[m, w]) {
  for i in 0..m, j in 0..n {
    c[i, j] = c[i, j] * 0.5 + 2 * sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
)";
  struct Case {
    int64_t n, w;
    bool pairs, alone;
  };
  for (const Case c : {Case{136, 136, true, false}, Case{135, 136, true, true}, Case{135, 135, false, false}})
    for (const char* text : {"mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3",
                             "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 32 stages 3 swizzle 128"}) {
      const Kernel k = fromSource(source, "pairs", {{"m", 100}, {"n", c.n}, {"w", c.w}, {"kk", 52}});
      auto parsed = parseSchedule(text);
      ASSERT_TRUE(parsed.ok()) << parsed.error;
      const ScheduleLimits limits = deviceScheduleLimits(227 * 1024, 1024, 132, 228 * 1024);
      SchedulePlan plan = planSchedule(k, *parsed.schedule, limits);
      ASSERT_TRUE(plan.ok()) << text << ": " << plan.reasons[0];
      const std::string cuda = emitCuda(k, plan).source;
      EXPECT_EQ(cuda.find("make_float2(") != std::string::npos, c.pairs) << c.n << " " << c.w << " " << text;
      EXPECT_EQ(cuda.find(fmt::format(" + 1 < {}) {{", c.n)) != std::string::npos, c.alone) << cuda;
      EXPECT_EQ(checkOnHost(k, text, 1e-5, limits), "") << c.n << " " << c.w << " " << text;
    }
}
