// The shared epilogue's 16-byte stores (schedule/Mma.h, epilogueVectorWidth): where they apply and
// where not, and the emitted stores against the reference in the host emulation at sizes no tile
// divides, along M (DG differentiation's output rows) and along N (a GEMM's), f64 and f32, mma.sync
// and wgmma, with streaming stores.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/Mma.h"
#include "WgmmaPlanHelpers.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

const char* kKernels = R"(
kernel dg64(K: int, M: int, Np: int, D: f64[M, Np], u: f64[K, Np], out w: f64[K, M]) {
  for k in 0..K, m in 0..M {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
kernel dg32(K: int, M: int, Np: int, D: f32[M, Np], u: f32[K, Np], out w: f32[K, M]) {
  for k in 0..K, m in 0..M {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
kernel gemm32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel wide64(K: int, M: int, Np: int, D: f64[M, Np], u: f64[K, Np], out w: f64[K, M + 3]) {
  for k in 0..K, m in 0..M {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
kernel scaled64(K: int, M: int, Np: int, D: f64[M, Np], u: f64[K, Np], out w: f64[K, M]) {
  for k in 0..K, m in 0..M {
    w[k, m] = 2 * sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
)";

struct Case {
  Kernel k;
  std::string schedule;
  int64_t width;      // epilogueVectorWidth's answer
  double tolerance;
};

std::vector<Case> cases() {
  auto dg = [](const char* name, int64_t K, int64_t M, int64_t np) {
    return fromSource(kKernels, name, {{"K", K}, {"M", M}, {"Np", np}});
  };
  const Kernel gemm = fromSource(kKernels, "gemm32", {{"m", 37}, {"n", 100}, {"kk", 45}});
  return {
      // Along M, one tile spans M (30 of 64 rows: 15 vectors a column), 301 elements in tiles of 128.
      {dg("dg64", 301, 30, 21), "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 fragments 2 epilogue shared", 2, 1e-12},
      {dg("dg64", 301, 30, 10), "stores: streaming; mma: f64 m16n8k8 warps 2x2 tile 1x2 k 8 stages 2 epilogue shared", 2, 1e-12},
      // Along M over two tiles (70 rows in tiles of 32), a reduction of 13 in steps of 4.
      {dg("dg64", 45, 70, 13), "mma: f64 m16n8k4 warps 2x2 tile 1x2 k 4 stages 2 epilogue shared", 2, 1e-12},
      {dg("dg32", 203, 36, 12), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 8 stages 3 epilogue shared", 4, 1e-5},
      {dg("dg32", 203, 36, 12), "mma: tf32x3 wgmma m64n16k8 warpgroups 1x1 k 8 stages 2 epilogue shared", 4, 1e-5},
      // Along N (c's rows), 100 columns in tiles of 32 and 64, 37 rows.
      {gemm, "mma: tf32 m16n8k8 warps 1x2 tile 2x2 k 16 stages 3 epilogue shared", 4, 2e-3},
      {gemm, "stores: streaming; mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 16 stages 3 epilogue shared", 4, 1e-5},
      // Scalar stores: rows of 33 (odd strides), 33 of a row's 36 (no whole vectors), an epilogue of
      // the statement's own arithmetic, 34 f32 rows.
      {dg("wide64", 301, 33, 10), "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 epilogue shared", 1, 1e-12},
      {dg("dg64", 301, 33, 10), "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 epilogue shared", 1, 1e-12},
      {dg("scaled64", 301, 30, 10), "mma: f64 m16n8k4 warps 2x4 tile 2x4 k 8 stages 3 epilogue shared", 1, 1e-12},
      {dg("dg32", 203, 34, 12), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 8 stages 3 epilogue shared", 1, 1e-5},
  };
}

}  // namespace

TEST(MmaEpilogueVector, AppliesWhereEveryVectorIsWholeAndAligned) {
  for (const Case& c : cases()) {
    std::vector<std::string> reasons;
    auto parsed = parseSchedule(c.schedule);
    ASSERT_TRUE(parsed.schedule) << c.schedule << ": " << parsed.error;
    auto p = planMma(c.k, 0, parsed.schedule->nests[0], sm90Limits(), reasons);
    ASSERT_TRUE(p) << c.schedule << ": " << joined(reasons);
    EXPECT_EQ(epilogueVectorWidth(c.k, 0, *p, 16), c.width) << c.k.name << " " << c.schedule;
    // Arrays aligned to less than 16 bytes take scalar stores.
    EXPECT_EQ(epilogueVectorWidth(c.k, 0, *p, 8), 1) << c.k.name << " " << c.schedule;
    const std::string src = emitCuda(c.k, *parsed.schedule, sm90Limits()).source;
    const std::string vector = c.width == 2 ? "(double2*)&rtcg_smem_f64" : "(float4*)&rtcg_smem_f32";
    EXPECT_EQ(src.find(vector) != std::string::npos, c.width > 1) << c.k.name << " " << c.schedule << "\n" << src;
    if (c.width > 1 && c.schedule.find("streaming") != std::string::npos)
      EXPECT_NE(src.find("__stcs((") , std::string::npos) << c.schedule;
  }
}

TEST(HostEmulation, MmaSharedEpilogueVectorsMatchTheReference) {
  for (const Case& c : cases())
    EXPECT_EQ(checkOnHost(c.k, c.schedule, c.tolerance, sm90Limits()), "") << c.k.name << " " << c.schedule;
}
