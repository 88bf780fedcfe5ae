// Contractions beyond one statement and one row index per operand (schedule/Contraction.h, issue
// 36 item 3): several statements stacked along the rows of the operand they do not share (DG
// differentiation's three matrices on one u), rows of several collapsed indices (a 1-D operator
// applied along one axis of each element's p x p x p nodes), batch indices anywhere in the nest;
// which nests qualify and why others do not, the plan and explain, and the emitted code against
// the reference in the host emulation for every tensor-core family at sizes no tile divides and
// reduction lengths shorter than one step and not a multiple of it.
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
#include "FullTests.h"
#include "SourceKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// dg_diff in each element type: three statements sharing u (the second operand), an epilogue on
// the second.
std::string dgDiff(const char* t, const char* operand) {
  return fmt::format(R"(
kernel dgd(K: int, Np: int, Dr: {0}[Np, Np], Ds: {0}[Np, Np], Dt: {0}[Np, Np], u: {0}[K, Np],
           out ur: {1}[K, Np], out us: {1}[K, Np], out ut: {1}[K, Np]) {{
  for k in 0..K, i in 0..Np {{
    ur[k, i] = sum(j in 0..Np, {2}(Dr[i, j]) * {2}(u[k, j]));
    us[k, i] = 2 * sum(j in 0..Np, {2}(Ds[i, j]) * {2}(u[k, j])) - 1;
    ut[k, i] = sum(j in 0..Np, {2}(Dt[i, j]) * {2}(u[k, j]));
  }}
}}
)", t, std::string(t) == "f64" ? "f64" : "f32", std::string(t) == "f64" ? "f64" : "f32");
}

// The shared operand first (stacked along N), the operator stored transposed.
const char* kSharedFirst = R"(
kernel sharedfirst(K: int, Np: int, Dr: f32[Np, Np], Ds: f32[Np, Np], u: f32[K, Np], out ur: f32[K, Np], out us: f32[K, Np]) {
  for i in 0..Np, k in 0..K {
    ur[k, i] = sum(j in 0..Np, u[k, j] * Dr[j, i]);
    us[k, i] = sum(j in 0..Np, u[k, j] * Ds[j, i]);
  }
}
)";

// A 1-D operator along the last axis of each element's p^3 nodes (N = (e, a, b), K contiguous),
// and along the middle one (N = (e, a, c), N contiguous), with an epilogue.
std::string sumFact(const char* t, const char* operand) {
  return fmt::format(R"(
kernel sflast(E: int, p: int, A: {0}[p, p], u: {0}[E, p, p, p], out v: {1}[E, p, p, p]) {{
  for e in 0..E, a in 0..p, b in 0..p, i in 0..p {{
    v[e, a, b, i] = sum(j in 0..p, {2}(A[i, j]) * {2}(u[e, a, b, j]));
  }}
}}
kernel sfmid(E: int, p: int, A: {0}[p, p], u: {0}[E, p, p, p], inout v: {1}[E, p, p, p]) {{
  for e in 0..E, a in 0..p, i in 0..p, c in 0..p {{
    v[e, a, i, c] = v[e, a, i, c] + 0.5 * sum(j in 0..p, {2}(A[i, j]) * {2}(u[e, a, j, c]));
  }}
}}
)", t, std::string(t) == "f64" ? "f64" : "f32", std::string(t) == "f64" ? "f64" : "f32");
}

Kernel second(const std::string& source, const SizeBindings& sizes) {
  Diagnostics diags;
  auto prog = parseProgram("rows.rtcg", source, diags);
  EXPECT_TRUE(prog && prog->kernels.size() == 2);
  auto k = prog ? bindSizes(prog->kernels[1], sizes, diags) : std::nullopt;
  EXPECT_TRUE(k.has_value());
  return k ? *k : Kernel{};
}

// The batch index between M and N.
const char* kBatchInside = R"(
kernel bin(nb: int, n: int, a: f32[nb, n, n], x: f32[nb, n, n], out c: f32[nb, n, n]) {
  for i in 0..n, b in 0..nb, j in 0..n {
    c[b, i, j] = sum(k in 0..n, a[b, i, k] * x[b, k, j]);
  }
}
)";

const ScheduleLimits kSm90 = deviceScheduleLimits(227 * 1024, 1024);

std::optional<MmaPlan> plan(const Kernel& k, const std::string& text, std::vector<std::string>& reasons) {
  auto parsed = parseSchedule(text);
  EXPECT_TRUE(parsed.schedule) << text << ": " << parsed.error;
  if (!parsed.schedule) return std::nullopt;
  return planMma(k, 0, parsed.schedule->nests[0], kSm90, reasons);
}

std::string firstReason(const ContractionMatch& m) { return m.reasons.empty() ? "" : m.reasons[0]; }

}  // namespace

TEST(MmaRows, StackedStatementsQualify) {
  Kernel k = fromSource(dgDiff("f32", "f32"), {{"K", 19}, {"Np", 7}});
  ContractionMatch m = matchContraction(k, 0);
  ASSERT_TRUE(m.contraction) << firstReason(m);
  const Contraction& c = *m.contraction;
  ASSERT_EQ(c.parts.size(), 3u);
  EXPECT_EQ(c.parts[2].statement, 2);
  ASSERT_EQ(c.mRows.size(), 2u);
  EXPECT_EQ(c.mRows[0].loop, -1);  // the statement, outermost
  EXPECT_EQ(c.mRows[0].extent, 3);
  EXPECT_EQ(c.mExtent, 21);
  EXPECT_EQ(c.nExtent, 19);
  EXPECT_EQ(c.kExtent, 7);
  EXPECT_TRUE(stackedRows(c, true));
  EXPECT_TRUE(plainRows(c, false));
  EXPECT_EQ(rowsText(k, c, true), "M = (statement, i): Dr[i, j] | Ds[i, j] | Dt[i, j]");

  Kernel shared = fromSource(kSharedFirst, {{"K", 19}, {"Np", 7}});
  ContractionMatch s = matchContraction(shared, 0);
  ASSERT_TRUE(s.contraction) << firstReason(s);
  EXPECT_TRUE(stackedRows(*s.contraction, false));  // the first operand is shared: N stacks
  EXPECT_EQ(s.contraction->nExtent, 14);

  // The example itself.
  Kernel example = fromSource(R"(
kernel dg_diff(K: int, Np: int, Dr: f32[Np, Np], Ds: f32[Np, Np], Dt: f32[Np, Np], u: f32[K, Np],
               out ur: f32[K, Np], out us: f32[K, Np], out ut: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, Dr[i, j] * u[k, j]);
    us[k, i] = sum(j in 0..Np, Ds[i, j] * u[k, j]);
    ut[k, i] = sum(j in 0..Np, Dt[i, j] * u[k, j]);
  }
})", {{"K", 5}, {"Np", 4}});
  EXPECT_TRUE(matchContraction(example, 0).contraction);
}

// The epilogue's loads (epilogueLoads), the one walk the model, the plan's L2 prefetches and the
// emitter's order of loads and stores share: beside each part's sum, outermost only (idx's load in
// rhs's index is rhs's), marked where a select or a logical operator may skip them; none inside
// the sum.
TEST(MmaRows, EpilogueLoadsAreTheOutermostBesideEachSum) {
  Kernel k = fromSource(R"(
kernel lift(K: int, Np: int, L: f32[Np, Np], f: f32[K, Np], s: f32[K], t: f32[K], idx: i32[K],
            inout rhs: f32[K, Np], out q: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    rhs[k, i] = rhs[idx[k], i] + select(t[k] > 0.0, s[k], 1.0) * sum(j in 0..Np, L[i, j] * f[k, j]);
    q[k, i] = sum(j in 0..Np, L[i, j] * f[k, j]);
  }
})", {{"K", 9}, {"Np", 5}});
  ContractionMatch m = matchContraction(k, 0);
  ASSERT_TRUE(m.contraction) << firstReason(m);
  ASSERT_EQ(m.contraction->parts.size(), 2u);
  std::vector<EpilogueLoad> loads = epilogueLoads(k.nests[0], *m.contraction);
  std::vector<std::string> seen;
  for (const EpilogueLoad& l : loads)
    seen.push_back(fmt::format("{} part {}{}", k.params[size_t(l.load->array)].name, l.part, l.conditional ? " conditional" : ""));
  EXPECT_EQ(seen, (std::vector<std::string>{"rhs part 0", "t part 0 conditional", "s part 0 conditional"}));
}

TEST(MmaRows, CollapsedRowsAndBatchesAnywhereQualify) {
  const std::string src = sumFact("f32", "f32");
  Kernel last = fromSource(src, {{"E", 5}, {"p", 3}});
  ContractionMatch m = matchContraction(last, 0);
  ASSERT_TRUE(m.contraction) << firstReason(m);
  EXPECT_EQ(m.contraction->nRows.size(), 3u);
  EXPECT_EQ(m.contraction->nExtent, 45);
  EXPECT_EQ(m.contraction->mExtent, 3);
  EXPECT_TRUE(m.contraction->bAlongK);
  EXPECT_EQ(rowsText(last, *m.contraction, false), "N = (e, a, b)");
  Kernel mid = second(src, {{"E", 5}, {"p", 3}});
  ContractionMatch mm = matchContraction(mid, 0);
  ASSERT_TRUE(mm.contraction) << firstReason(mm);
  EXPECT_EQ(rowsText(mid, *mm.contraction, false), "N = (e, a, c)");
  EXPECT_FALSE(mm.contraction->bAlongK);  // u's contiguous index is c, a row index
  Kernel inside = fromSource(kBatchInside, {{"nb", 3}, {"n", 5}});
  ContractionMatch b = matchContraction(inside, 0);
  ASSERT_TRUE(b.contraction) << firstReason(b);
  EXPECT_EQ(b.contraction->batch.size(), 1u);
}

TEST(MmaRows, WhyNestsDoNotStack) {
  struct Not {
    const char* source;
    const char* reason;
  };
  for (const Not& n : std::vector<Not>{
           {R"(kernel t(n: int, a: f32[n, n], b: f32[n, n], c: f32[n, n], out x: f32[n, n], out y: f32[n, n]) {
  for i in 0..n, j in 0..n {
    x[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
    y[i, j] = sum(k in 0..n, b[i, k] * c[k, j]);
  }
})", "do not share one operand"},
           {R"(kernel t(n: int, a: f32[n, n], b: f32[n, n], c: f32[n, n], out x: f32[n, n], out y: f32[n, n]) {
  for i in 0..n, j in 0..n {
    x[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
    y[i, j] = x[i, j] + sum(k in 0..n, c[i, k] * b[k, j]);
  }
})", "statement 2 reads 'x', which statement 1 writes"},
           {R"(kernel t(n: int, a: f32[n, n], b: f32[n, n], c: f32[n, n], out x: f32[n, n], out y: f32[n, n]) {
  for i in 0..n, j in 0..n {
    x[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
    y[i, j] = sum(k in 0..n - 1, c[i, k] * b[k, j]);
  }
})", "a stacked contraction needs the same M, N, K and batch"},
           {R"(kernel t(n: int, a: f32[n, n], b: f32[n, n], c: f32[n, n], out x: f32[n, n], out y: f32[n, n]) {
  for i in 0..n, j in 0..n {
    x[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
    y[i, j] = sum(k in 0..n, c[k, i] * b[k, j]);
  }
})", "do not share one operand"},
           {R"(kernel t(n: int, a: f32[n, n], b: f32[n, n], out x: f32[n, n], out y: f32[n, n]) {
  for i in 0..n, j in 0..n {
    x[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
    y[i, j] = a[i, j];
  }
})", "0 reductions; an mma schedule computes one (statement 2)"},
       }) {
    Kernel k = fromSource(n.source, {{"n", 9}});
    ContractionMatch r = matchContraction(k, 0);
    EXPECT_FALSE(r.contraction) << n.source;
    EXPECT_NE(firstReason(r).find(n.reason), std::string::npos) << firstReason(r);
  }
}

TEST(MmaRows, PlanAndExplain) {
  Kernel k = fromSource(dgDiff("f32", "f32"), {{"K", 19}, {"Np", 7}});
  std::vector<std::string> reasons;
  auto p = plan(k, "mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2", reasons);
  ASSERT_TRUE(p) << reasons[0];
  EXPECT_EQ(p->c.mExtent, 21);
  auto s = parseSchedule("mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2");
  NestPlanResult np = planNest(k, 0, s.schedule->nests[0], kSm90);
  ASSERT_TRUE(np.plan);
  std::string text = printPlan(k, *np.plan);
  EXPECT_NE(text.find("rows: M = (statement, i): Dr[i, j] | Ds[i, j] | Dt[i, j]"), std::string::npos) << text;
  // TMA copies 2-D boxes of one array: neither stacked nor collapsed rows.
  Kernel bf = fromSource(dgDiff("bf16", "f32"), {{"K", 64}, {"Np", 64}});
  reasons.clear();
  EXPECT_FALSE(plan(bf, "mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 2 swizzle 128 tma", reasons));
  ASSERT_FALSE(reasons.empty());
  EXPECT_NE(reasons[0].find("several indices or stacked statements"), std::string::npos) << reasons[0];
}

TEST(MmaRows, SpaceOffersMmaToStackedAndCollapsedRows) {
  SpaceOptions o;
  o.precision = Precision::Tf32x3;
  for (const Kernel& k : {fromSource(dgDiff("f32", "f32"), {{"K", 1000}, {"Np", 20}}),
                          fromSource(sumFact("f32", "f32"), {{"E", 300}, {"p", 7}})}) {
    Space space = enumerateSchedules(k, o);
    int mma = 0;
    for (const Candidate& c : space.candidates) mma += c.schedule.nests[0].mma.any();
    EXPECT_GT(mma, 0) << k.name;
  }
}

namespace {

// Schedules of every family for a contraction of type `t` (host emulation, sm_90 limits).
std::vector<std::pair<std::string, double>> families(const char* t) {
  const std::string s = t;
  if (s == "f64")
    return {{"mma: f64 m8n8k4 warps 2x1 tile 1x2 k 4", 1e-12},
            {"mma: f64 m8n8k4 warps 1x2 tile 2x1 k 8 stages 3", 1e-12},
            {"mma: f64 m16n8k8 warps 2x2 tile 1x1 k 8 stages 2", 1e-12},
            {"mma: f64 m16n8k4 warps 2x2 tile 1x1 k 4 stages 2 fragments 2", 1e-12},
            {"mma: f64 m16n8k16 warps 1x2 tile 2x1 k 16 stages 3 epilogue shared", 1e-12}};
  if (s == "bf16")
    return {{"mma: bf16 m16n8k16 warps 2x1 tile 1x2 k 16", 1e-5},
            {"mma: bf16 m16n8k16 warps 1x2 tile 2x3 k 32 stages 3 epilogue shared", 1e-5},
            {"mma: bf16 wgmma m64n24k16 warpgroups 1x1 k 16 stages 2", 1e-5},
            {"mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 64 stages 3 swizzle 128 epilogue shared", 1e-5}};
  return {{"mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8", 4e-5},
          {"mma: tf32 m16n8k8 warps 1x2 tile 2x1 k 16", 2e-3},
          {"mma: tf32x3 m16n8k8 warps 2x2 tile 1x3 k 8 stages 2", 4e-5},
          {"mma: tf32 m16n8k8 warps 1x1 tile 2x2 k 16 stages 4 epilogue shared", 2e-3},
          {"mma: tf32x3 wgmma m64n24k8 warpgroups 1x1 k 8 stages 2", 4e-5},
          {"mma: tf32 wgmma m64n16k8 warpgroups 2x1 k 16 stages 3 epilogue shared", 2e-3},
          {"mma: tf32x3 wgmma m64n32k8 warpgroups 1x1 k 32 stages 3 swizzle 128", 4e-5}};
}

// Each family's schedule on `k` where the plan takes it (`fragments 2` refuses a reduction of fewer
// steps than stages, `swizzle 128` an MN-major tile of fewer than 64 16-bit rows, with the reason); `ran` counts the runs of each schedule.
// The default run samples every second kernel of each schedule, its first included.
struct Runs {
  std::map<std::string, rtcgtest::CaseSample> sample;
  std::map<std::string, int> ran;
};

void expectFamilies(const Kernel& k, const char* t, Runs& runs) {
  for (const auto& [schedule, tolerance] : families(t)) {
    runs.ran.emplace(schedule, 0);
    if (!runs.sample.emplace(schedule, rtcgtest::CaseSample(2)).first->second.keep()) continue;
    std::vector<std::string> reasons;
    if (!plan(k, schedule, reasons)) {
      const std::string& why = reasons.at(0);
      EXPECT_TRUE(why.find("'fragments 2' needs at least as many reduction steps") != std::string::npos ||
                  why.find("'swizzle 128' needs 128-byte rows") != std::string::npos)
          << k.name << " " << schedule << ": " << why;
      continue;
    }
    ++runs.ran[schedule];
    EXPECT_EQ(checkOnHost(k, schedule, tolerance, kSm90), "") << k.name << " " << t << " " << schedule;
  }
}

void expectEveryFamilyRan(const Runs& runs) {
  for (const auto& [schedule, count] : runs.ran) EXPECT_GT(count, 0) << schedule << " never ran";
}

}  // namespace

// Np = 7 (M = 21 stacked rows, no tile divides them; K shorter than one step of 8, 16 or 32 and
// not a multiple of 4) and Np = 11; K = 19 elements.
TEST(HostEmulation, StackedStatementsOnEveryMmaFamily) {
  Runs runs;
  for (const char* t : {"f32", "f64", "bf16"})
    for (int64_t np : {7, 11}) expectFamilies(fromSource(dgDiff(t, "f32"), {{"K", 19}, {"Np", np}}), t, runs);
  expectEveryFamilyRan(runs);
  Kernel shared = fromSource(kSharedFirst, {{"K", 19}, {"Np", 9}});
  EXPECT_EQ(checkOnHost(shared, "mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2", 4e-5, kSm90), "");
  EXPECT_EQ(checkOnHost(shared, "mma: tf32x3 wgmma m64n16k8 warpgroups 1x1 k 8 stages 2", 4e-5, kSm90), "");
}

// p = 3, 5 and 9 (K shorter than one step, or 9: not a multiple of one; N = 5 p^2 rows), both axes.
TEST(HostEmulation, CollapsedRowsOnEveryMmaFamily) {
  Runs runs;
  for (const char* t : {"f32", "f64", "bf16"})
    for (int64_t p : {3, 5, 9}) {
      const std::string src = sumFact(t, "f32");
      expectFamilies(fromSource(src, {{"E", 5}, {"p", p}}), t, runs);
      expectFamilies(second(src, {{"E", 5}, {"p", p}}), t, runs);
    }
  expectEveryFamilyRan(runs);
  EXPECT_EQ(checkOnHost(fromSource(kBatchInside, {{"nb", 3}, {"n", 13}}), "mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2",
                        4e-5, kSm90), "");
}

TEST(MmaRows, NvrtcCompilesStackedAndCollapsedRows) {
  const std::vector<std::pair<Kernel, std::string>> cases{
      {fromSource(dgDiff("f32", "f32"), {{"K", 1000}, {"Np", 20}}), "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3"},
      {fromSource(dgDiff("f64", "f64"), {{"K", 1000}, {"Np", 20}}), "mma: f64 m16n8k8 warps 2x2 tile 1x1 k 16 stages 3"},
      {fromSource(sumFact("f32", "f32"), {{"E", 100}, {"p", 7}}), "mma: tf32x3 wgmma m64n64k8 warpgroups 1x1 k 8 stages 2"},
      {fromSource(sumFact("bf16", "f32"), {{"E", 100}, {"p", 8}}), "mma: bf16 m16n8k16 warps 2x2 tile 2x2 k 16 stages 2"}};
  for (const auto& [k, text] : cases) {
    EmittedModule m = emitCuda(k, *parseSchedule(text).schedule);
    CudaCompileResult r = compileCuda(m.source, k.name + ".cu", nvrtcArchFor(m.source, "sm_90"), nvrtcOptions());
    EXPECT_TRUE(r.success) << k.name << " " << text << "\n" << r.log;
  }
}

// The epilogue is the statement's own arithmetic around the sum (issue 36 item 2): a per-output
// scale and a bias array, max with a constant, and a conversion to a 16-bit output, on mma.sync,
// wgmma and either epilogue, at sizes no tile divides.
TEST(HostEmulation, MmaEpilogueArithmetic) {
  const char* source = R"(
kernel epi(m: int, n: int, kk: int, a: f32[m, kk], b: f32[kk, n], s: f32[m], bias: f32[n], out c: f32[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = max(s[i] * sum(k in 0..kk, a[i, k] * b[k, j]) + bias[j], 0.25);
  }
}
kernel epi16(m: int, n: int, kk: int, a: bf16[m, kk], b: bf16[kk, n], out c: bf16[m, n]) {
  for i in 0..m, j in 0..n {
    c[i, j] = bf16(min(sum(k in 0..kk, f32(a[i, k]) * f32(b[k, j])), 4.0));
  }
}
)";
  Kernel k = fromSource(source, {{"m", 37}, {"n", 29}, {"kk", 19}});
  for (const char* s : {"mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8", "mma: tf32x3 m16n8k8 warps 1x2 tile 2x1 k 8 stages 3 epilogue shared",
                        "mma: tf32x3 wgmma m64n16k8 warpgroups 1x1 k 8 stages 2 epilogue shared"}) {
    ContractionMatch m = matchContraction(k, 0);
    ASSERT_TRUE(m.contraction) << firstReason(m);
    EXPECT_EQ(checkOnHost(k, s, 4e-5, kSm90), "") << s;
  }
  // bf16 outputs: a tolerance of bf16's rounding.
  Kernel h = second(source, {{"m", 37}, {"n", 29}, {"kk", 19}});
  for (const char* s : {"mma: bf16 m16n8k16 warps 2x1 tile 1x2 k 16 stages 2", "mma: bf16 wgmma m64n16k16 warpgroups 1x1 k 16 stages 2 epilogue shared"})
    EXPECT_EQ(checkOnHost(h, s, 8e-3, kSm90), "") << s;
}
