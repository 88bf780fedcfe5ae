// The sweep of every tensor-core family in the host emulation (issue 36, item 6): each arithmetic
// (tf32, tf32x3, bf16, f16, s8, f64 in each of its shapes) on mma.sync with and without stages,
// `fragments 2` and either epilogue, and on wgmma with 2 to 4 stages, `swizzle 128`, `tma`,
// `producer` and either epilogue, against the reference at output sizes no tile divides and at
// reduction lengths shorter than one step, equal to it and not a multiple of it. A schedule the
// plan refuses at a size (TMA's row alignment, a step longer than the reduction where that is
// refused) is skipped with its reason counted; every family must run somewhere.
//
// The default run keeps a sample that meets every pair of (arithmetic, one option value) in a
// deterministic order (a failure reproduces); RTCG_FULL_TESTS=1 runs every case.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "schedule/DeviceModels.h"
#include "schedule/Plan.h"
#include "FullTests.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// One kernel per operand layout and epilogue: `c` is the output, `a` holds M, `b` holds N.
const char* kSweepKernels = R"(
kernel s32(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel s32nt(m: int, n: int, kk: int, a: f32[m, kk], b: f32[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, a[i, k] * b[j, k]) - 1;
  }
}
kernel sbf16(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j]));
  }
}
kernel sf16t(m: int, n: int, kk: int, a: f16[kk, m], b: f16[n, kk], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = 2 * sum(k in 0..kk, f32(a[k, i]) * f32(b[j, k])) + 1;
  }
}
kernel s64(m: int, n: int, kk: int, a: f64[m, kk], b: f64[kk, n], out c: f64[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, a[i, k] * b[k, j]);
  }
}
kernel s8k(m: int, n: int, kk: int, a: i8[m, kk], b: i8[n, kk], out c: i32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = sum(k in 0..kk, i32(a[i, k]) * i32(b[j, k])) + i - 3 * j;
  }
}
kernel s64m(m: int, n: int, kk: int, a: f64[m, kk], b: f64[n, kk], inout c: f64[n, m]) {
  for j in 0..n, i in 0..m {
    c[j, i] = c[j, i] + 0.5 * sum(k in 0..kk, a[i, k] * b[j, k]);
  }
}
)";

const ScheduleLimits& sm90() {
  static const ScheduleLimits limits = [] {
    ScheduleLimits l = deviceScheduleLimits(227 * 1024, 1024);
    l.computeCapability = 90;
    return l;
  }();
  return limits;
}

struct SweepCase {
  std::string family;    // the options, without the geometry
  std::string schedule;  // "mma: ..."
  MmaArith arith{};
  int64_t blockM = 0, blockN = 0, blockK = 0, align = 1;  // align: elements per 16 bytes (TMA rows)
  bool tma = false;
  int64_t stages = 1;
  std::vector<std::string> features;                      // "arith=...", "stages=3", ...
};

const char* arithName(MmaArith a) {
  switch (a) {
    case MmaArith::Tf32: return "tf32";
    case MmaArith::Tf32x3: return "tf32x3";
    case MmaArith::Bf16: return "bf16";
    case MmaArith::F16: return "f16";
    case MmaArith::F64: return "f64";
    case MmaArith::S8: return "s8";
    default: return "?";
  }
}

int64_t elementBytes(MmaArith a) {
  return a == MmaArith::F64 ? 8 : a == MmaArith::Bf16 || a == MmaArith::F16 ? 2 : a == MmaArith::S8 ? 1 : 4;
}

// mma.sync: every arithmetic and shape, 1 to 4 stages, fragments 1 / 2 (f64 with stages), both
// epilogues; the warp and register tiles and the step cycle through a few geometries.
std::vector<SweepCase> syncCases() {
  struct Arith {
    MmaArith arith;
    MmaShape shape;
    const char* name;
    int64_t fragM, fragN, fragK;
  };
  const Arith ariths[] = {{MmaArith::Tf32, MmaShape::Native, "m16n8k8", 16, 8, 8},
                          {MmaArith::Tf32x3, MmaShape::Native, "m16n8k8", 16, 8, 8},
                          {MmaArith::Bf16, MmaShape::Native, "m16n8k16", 16, 8, 16},
                          {MmaArith::F16, MmaShape::Native, "m16n8k16", 16, 8, 16},
                          {MmaArith::S8, MmaShape::Native, "m16n8k32", 16, 8, 32},
                          {MmaArith::F64, MmaShape::Native, "m8n8k4", 8, 8, 4},
                          {MmaArith::F64, MmaShape::M16N8K4, "m16n8k4", 16, 8, 4},
                          {MmaArith::F64, MmaShape::M16N8K8, "m16n8k8", 16, 8, 8},
                          {MmaArith::F64, MmaShape::M16N8K16, "m16n8k16", 16, 8, 16}};
  struct Geometry {
    int64_t warpsM, warpsN, tileM, tileN, kFactor;
  };
  const Geometry geometries[] = {{1, 1, 1, 1, 2}, {2, 2, 1, 1, 4}, {2, 1, 2, 2, 1}, {1, 2, 3, 1, 2}, {2, 2, 2, 1, 3}};
  std::vector<SweepCase> out;
  int g = 0;
  for (const Arith& a : ariths)
    for (int64_t stages = 1; stages <= 4; ++stages)
      for (int64_t fragments = 1; fragments <= 2; ++fragments) {
        if (fragments == 2 && (a.arith != MmaArith::F64 || stages == 1)) continue;
        for (bool shared : {false, true}) {
          const Geometry& ge = geometries[size_t(g++) % std::size(geometries)];
          SweepCase c;
          c.arith = a.arith;
          c.stages = stages;
          c.blockM = ge.warpsM * ge.tileM * a.fragM;
          c.blockN = ge.warpsN * ge.tileN * a.fragN;
          c.blockK = ge.kFactor * a.fragK;
          c.align = 16 / elementBytes(a.arith);
          c.family = fmt::format("{} {}{}{}{}", arithName(a.arith), a.name, stages > 1 ? fmt::format(" stages {}", stages) : "",
                                 fragments == 2 ? " fragments 2" : "", shared ? " epilogue shared" : "");
          c.schedule = fmt::format("mma: {} {} warps {}x{} tile {}x{} k {}{}{}{}", arithName(a.arith), a.name, ge.warpsM,
                                   ge.warpsN, ge.tileM, ge.tileN, c.blockK,
                                   stages > 1 ? fmt::format(" stages {}", stages) : "", fragments == 2 ? " fragments 2" : "",
                                   shared ? " epilogue shared" : "");
          c.features = {fmt::format("shape={}", a.name), fmt::format("stages={}", stages),
                        fmt::format("fragments={}", fragments), fmt::format("epilogue={}", shared), "wgmma=0"};
          out.push_back(std::move(c));
        }
      }
  return out;
}

// wgmma: bf16, f16, tf32, tf32x3 and s8, 2 to 4 stages, canonical or 128-byte swizzled tiles, cp.async or
// TMA, the producer warpgroup, both epilogues (the producer's refuses the shared one: not swept).
std::vector<SweepCase> wgmmaCases() {
  const MmaArith ariths[] = {MmaArith::Bf16, MmaArith::F16, MmaArith::Tf32, MmaArith::Tf32x3, MmaArith::S8};
  struct Geometry {
    int64_t groupsM, groupsN, n, kAtoms;
  };
  const Geometry geometries[] = {{1, 1, 64, 1}, {2, 1, 32, 2}, {1, 2, 48, 1}, {1, 1, 128, 2}, {2, 1, 64, 1}};
  std::vector<SweepCase> out;
  int g = 0;
  for (MmaArith arith : ariths)
    for (int64_t stages = 2; stages <= 4; ++stages)
      for (int mode = 0; mode < 4; ++mode)  // 0 canonical, 1 swizzle 128, 2 + tma, 3 + producer
        for (bool shared : {false, true}) {
          if (mode == 3 && shared) continue;
          Geometry ge = geometries[size_t(g++) % std::size(geometries)];
          if (mode >= 1) ge.n = std::max<int64_t>(64, ge.n / 64 * 64);  // swizzled MN-major tiles: 128-byte rows
          const bool half = arith == MmaArith::Bf16 || arith == MmaArith::F16;
          const int64_t fragK = half ? 16 : arith == MmaArith::S8 ? 32 : 8, atom = 128 / elementBytes(arith);
          SweepCase c;
          c.arith = arith;
          c.stages = stages;
          c.blockM = 64 * ge.groupsM;
          c.blockN = ge.n * ge.groupsN;
          // Swizzled K-major tiles take whole 128-byte rows of k; without swizzle any multiple of the instruction's k.
          c.blockK = mode == 0 ? fragK * (ge.kAtoms + 1) : atom * ge.kAtoms;
          if (arith == MmaArith::S8) c.blockK = std::min<int64_t>(c.blockK, 128);  // s8's k: 32 to 128
          // Within the shared memory (tf32x3 adds a small tile per stage): halve the step, then N.
          const int64_t split = arith == MmaArith::Tf32x3 ? 2 : 1;
          while ((c.blockM + c.blockN) * c.blockK * stages * split * elementBytes(arith) > 200 * 1024) {
            if (c.blockK > (mode == 0 ? fragK : atom)) c.blockK /= 2;
            else ge.n /= 2, c.blockN = ge.n * ge.groupsN;
          }
          c.align = 16 / elementBytes(arith);
          c.tma = mode >= 2;
          const char* modeText[] = {"", " swizzle 128", " swizzle 128 tma", " swizzle 128 tma producer"};
          c.family = fmt::format("{} wgmma stages {}{}{}", arithName(arith), stages, modeText[mode],
                                 shared ? " epilogue shared" : "");
          c.schedule = fmt::format("mma: {} wgmma m64n{}k{} warpgroups {}x{} k {} stages {}{}{}", arithName(arith), ge.n,
                                   fragK, ge.groupsM, ge.groupsN, c.blockK, stages, modeText[mode],
                                   shared ? " epilogue shared" : "");
          c.features = {"shape=wgmma", fmt::format("stages={}", stages), fmt::format("swizzle={}", mode >= 1),
                        fmt::format("tma={}", mode >= 2), fmt::format("producer={}", mode == 3),
                        fmt::format("epilogue={}", shared), "wgmma=1"};
          out.push_back(std::move(c));
        }
  return out;
}

// The kernels an arithmetic runs on, in turn: f32 along N and along K (with an epilogue), the 16-bit
// types in their two layouts, f64 along N and along M (the output's contiguous direction; an
// epilogue reading the output).
const char* kernelFor(MmaArith a, size_t turn) {
  switch (a) {
    case MmaArith::Tf32:
    case MmaArith::Tf32x3: return turn % 2 ? "s32nt" : "s32";
    case MmaArith::Bf16: return "sbf16";
    case MmaArith::F16: return "sf16t";
    case MmaArith::S8: return "s8k";
    default: return turn % 2 ? "s64m" : "s64";
  }
}

double toleranceFor(MmaArith a) {
  switch (a) {
    case MmaArith::Tf32: return 2e-3;
    case MmaArith::Tf32x3: return 2e-5;
    case MmaArith::F64: return 1e-12;
    case MmaArith::S8: return 0;  // exact
    default: return 1e-5;  // bf16 / f16 operands are exact in f32 products
  }
}

struct SweepRun {
  const SweepCase* c;
  const char* kernel;
  const char* lengthClass;  // the reduction length against one step
  int64_t m, n, kk;
};

// Each case at the three reduction lengths, M and N one tile and a part more (no tile divides
// them). Odd sizes, except with TMA, whose rows must lie a multiple of 16 bytes apart (the plan
// refuses others): multiples of 16 bytes there.
std::vector<SweepRun> runsOf(const std::vector<SweepCase>& cases) {
  std::vector<SweepRun> runs;
  size_t turn = 0;
  for (const SweepCase& c : cases) {
    const int64_t part = c.tma ? c.align : 1;
    const std::pair<const char*, int64_t> lengths[] = {
        {"shorter", c.blockK - part},
        {"equal", c.blockK},
        // as many steps as stages at least (`fragments 2` refuses fewer), the last one partial
        {"not a multiple", std::max<int64_t>(2, c.stages) * c.blockK + (c.tma ? part : 3)}};
    const int64_t m = c.blockM + (c.tma ? c.align : 7), n = c.blockN + (c.tma ? c.align : 5);
    for (const auto& [name, kk] : lengths) runs.push_back({&c, kernelFor(c.arith, turn++), name, m, n, kk});
  }
  return runs;
}

// The default sample: in a fixed order, a run is kept where it meets, for its arithmetic, an option
// value, or a stage count at a reduction length class, that no kept run met.
std::vector<const SweepRun*> sample(const std::vector<SweepRun>& runs) {
  std::vector<const SweepRun*> kept;
  std::set<std::string> met;
  for (size_t i = 0; i < runs.size(); ++i) {
    const SweepRun& r = runs[(i * 7919) % runs.size()];  // a fixed stride through the list (prime to its size)
    bool adds = rtcgtest::fullTests();
    const char* arith = arithName(r.c->arith);
    for (const std::string& f : r.c->features) adds |= met.insert(fmt::format("{}/{}", arith, f)).second;
    // Each stage count at each length: the rings' prelude and tail (fewer steps than stages).
    adds |= met.insert(fmt::format("{}/{}/{}", arith, r.c->features[1], r.lengthClass)).second;
    if (adds) kept.push_back(&r);
  }
  return kept;
}

}  // namespace

TEST(HostEmulation, EveryMmaFamilyMatchesTheReferenceAtOddSizes) {
  std::vector<SweepCase> cases = syncCases();
  for (SweepCase& c : wgmmaCases()) cases.push_back(std::move(c));
  const std::vector<SweepRun> runs = runsOf(cases);
  ASSERT_NE(runs.size() % 7919, 0u);  // the sample's stride visits every run
  std::map<std::string, int> ranByFamily, refused;
  for (const SweepCase& c : cases) ranByFamily[c.family] = 0;
  int ran = 0;
  for (const SweepRun* r : sample(runs)) {
    const Kernel k = fromSource(kSweepKernels, r->kernel, {{"m", r->m}, {"n", r->n}, {"kk", r->kk}});
    auto parsed = parseSchedule(r->c->schedule);
    ASSERT_TRUE(parsed.schedule) << r->c->schedule << ": " << parsed.error;
    const std::vector<std::string> reasons = validateSchedule(k, *parsed.schedule, sm90());
    if (!reasons.empty()) {
      ++refused[reasons[0]];
      continue;
    }
    ++ran;
    ++ranByFamily[r->c->family];
    EXPECT_EQ(checkOnHost(k, r->c->schedule, toleranceFor(r->c->arith), sm90()), "")
        << r->kernel << " " << r->m << "x" << r->n << "x" << r->kk << " (" << r->lengthClass << " than one step) "
        << r->c->schedule;
  }
  for (const auto& [reason, count] : refused) std::printf("refused %d: %s\n", count, reason.c_str());
  std::printf("%d emulations of %zu families (%zu runs in the full sweep)\n", ran, cases.size(), runs.size());
  if (rtcgtest::fullTests())
    for (const auto& [family, count] : ranByFamily) EXPECT_GT(count, 0) << family << " never ran";
}
