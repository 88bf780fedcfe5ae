// The precision policies fp64x and fp32x (schedule/PolicyRewrite.h): the moduli and the split they
// choose, the rewritten kernel's steps in the host emulation against the float64 reference at sizes
// no tile divides (default schedules and the s8 tensor-core schedule of the products), inputs with
// wide exponent ranges (the stated bound holds element by element), zeros, subnormals, infinities
// and NaN (IEEE's results), and the refusals with their reasons.
#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <numeric>
#include <random>

#include "codegen/HostEmulation.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "reference/HostArgs.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "schedule/Contraction.h"
#include "schedule/DeviceModels.h"
#include "schedule/PolicyRewrite.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"
#include "SourceKernels.h"
#include "SpaceOptionsFor.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// C = A B with A (m x K) and B (K x n), row-major, of element type `t`.
Kernel gemm(const char* t, int64_t m, int64_t n, int64_t K) {
  return fromSource(fmt::format(R"(kernel g(m: int, n: int, K: int, a: {0}[m, K], b: {0}[K, n], out c: {0}[m, n]) {{
    for i in 0..m, j in 0..n {{ c[i, j] = sum(k in 0..K, a[i, k] * b[k, j]); }}
  }})", t), {{"m", m}, {"n", n}, {"K", K}});
}

Kernel rewrite(const Kernel& k, Precision p) {
  Diagnostics diags;
  std::optional<Kernel> r = applyPolicy(k, p, diags, PolicyReach::Everywhere);
  EXPECT_TRUE(r.has_value()) << (diags.all().empty() ? "" : diags.all()[0].message);
  return r ? *r : Kernel{};
}

std::string refusal(const Kernel& k, Precision p) {
  Diagnostics diags;
  std::optional<Kernel> r = applyPolicy(k, p, diags);
  EXPECT_FALSE(r.has_value());
  return diags.all().empty() ? "" : diags.all()[0].message;
}

// The schedule of every nest at its default but nest `nest`'s.
std::string withNest(const Kernel& k, int nest, const std::string& text) {
  Schedule s = defaultSchedule(k);
  std::vector<std::string> parts;
  for (size_t i = 0; i < s.nests.size(); ++i)
    parts.push_back(int(i) == nest ? text : printNestSchedule(s.nests[i]));
  return fmt::format("{}", fmt::join(parts, " | "));
}

// The index of the products' nest (its first loop is `modulus`).
int productNest(const Kernel& k) {
  for (size_t n = 0; n < k.nests.size(); ++n)
    if (!k.nests[n].loops.empty() && k.nests[n].loops[0].name == "modulus") return int(n);
  return -1;
}

// Runs the rewrite of `k` under `schedule` on `args` in the host emulation; the reference of `k`
// too; returns both outputs of parameter `out`.
struct Outputs {
  std::vector<double> got, want;
};
Outputs runBoth(const Kernel& k, const Kernel& rewritten, const std::string& schedule, HostArgs args, int out,
                const ScheduleLimits& limits = deviceScheduleLimits(227 * 1024, 1024)) {
  HostArgs refArgs = args;
  ReferenceResult ref = runReference(k, refArgs);
  auto parsed = parseSchedule(schedule);
  EXPECT_TRUE(parsed.ok()) << parsed.error;
  // sm_90's limits: the wgmma schedules of the products stage more than 48 KiB.
  std::string err = runEmittedOnHost(rewritten, *parsed.schedule, args, limits);
  EXPECT_EQ(err, "");
  Outputs o;
  o.got = args.array(out).toDoubles();
  for (const ReferenceOutput& r : ref.outputs)
    if (r.param == out) o.want = r.values;
  return o;
}

double relativeError(const Outputs& o) {
  double num = 0, den = 0;
  for (size_t i = 0; i < o.want.size(); ++i) num += (o.got[i] - o.want[i]) * (o.got[i] - o.want[i]), den += o.want[i] * o.want[i];
  return std::sqrt(num / den);
}

// Row i of a (m x K) times column j of b (K x n), exactly (113-bit sums of exact products), and
// both vectors' squared 2-norms and 1-norms: what the scheme's error bound is stated in.
struct ExactDot {
  __float128 exact = 0;
  double a2 = 0, b2 = 0, a1 = 0, b1 = 0;
};

ExactDot exactDot(const std::vector<double>& a, const std::vector<double>& b, int64_t K, int64_t n, int64_t i,
                  int64_t j) {
  ExactDot d;
  for (int64_t q = 0; q < K; ++q) {
    const double x = a[size_t(i * K + q)], y = b[size_t(q * n + j)];
    d.exact += __float128(x) * __float128(y);
    d.a2 += x * x, d.b2 += y * y, d.a1 += std::abs(x), d.b1 += std::abs(y);
  }
  return d;
}

}  // namespace

TEST(Ozaki, ModuliArePairwiseCoprimeAndTheSplitHoldsTheProduct) {
  const std::vector<int>& p = ozakiModuli();
  for (size_t i = 0; i < p.size(); ++i)
    for (size_t j = i + 1; j < p.size(); ++j) EXPECT_EQ(std::gcd(p[i], p[j]), 1) << p[i] << " " << p[j];
  for (Precision pol : {Precision::Fp64x, Precision::Fp32x})
    for (int64_t K : {1, 2, 37, 56, 1000, 4096, 8192, 131071, 1000000}) {
      std::optional<OzakiSplit> s = ozakiSplit(pol, K);
      ASSERT_TRUE(s.has_value()) << K;
      EXPECT_GE(s->alpha, ozakiTargetBits(pol));
      EXPECT_LE(s->alpha, 57);  // |a'| < 2^58: the residues' halves (hi 2^27 + lo) stay exact in f64
      // ||a'||_2 ||b'||_2 < P / 2 with the norm's slack (K u of its sum, sqrt(K) / 2 of the
      // rounding), and one modulus fewer would not hold two norms of the target's bits.
      double bits = 0;
      for (int l = 0; l < s->moduli; ++l) bits += std::log2(double(p[size_t(l)]));
      const double slack = std::log2(1 + double(K) * 0x1p-52 + std::sqrt(double(K)) * std::exp2(-1 - s->alpha));
      EXPECT_LT(2.0 * s->alpha + 1 + 2 * slack, bits) << K;
      EXPECT_GE(2.0 * ozakiTargetBits(pol) + 1, bits - std::log2(double(p[size_t(s->moduli - 1)]))) << K;
      // The count does not grow with K (Cauchy-Schwarz bounds C' by the norms alone).
      EXPECT_EQ(s->moduli, pol == Precision::Fp64x ? 14 : 7) << K;
    }
  EXPECT_EQ(ozakiTargetBits(Precision::Fp64x), 54);
  EXPECT_EQ(ozakiTargetBits(Precision::Fp32x), 25);
  EXPECT_EQ(ozakiSplit(Precision::Fp64x, 4096)->alpha, 54);
  EXPECT_EQ(ozakiSplit(Precision::Fp32x, 4096)->alpha, 27);  // the spare bits of 7 moduli
  std::string why;
  EXPECT_FALSE(ozakiSplit(Precision::Fp64x, int64_t(1) << 31, &why).has_value());
  EXPECT_NE(why.find("indexes its residues in i32"), std::string::npos) << why;
}

// C' at the top of the range the 14 moduli represent: rows of A equal to columns of B (C' =
// ||a'||_2^2, Cauchy-Schwarz's equality), of a few equal entries whose 2-norm lies just below a
// power of two (so ||a'||_2 is just below 2^alpha), of both signs. Each result is the exact sum
// to a few ulps; a split whose moduli did not hold 2^(2 alpha + 1) would come out wrong by whole
// multiples of P 2^-(e_i + f_j).
TEST(Ozaki, TheLargestProductsTheNormsAllowAreExact) {
  for (int64_t K : {1, 3, 64, 1000}) {
    const int64_t m = 3, n = 3;
    Kernel k = gemm("f64", m, n, K);
    Kernel r = rewrite(k, Precision::Fp64x);
    HostArgs args(k);
    const double v = std::nextafter(2.0, 0.0) / std::sqrt(double(K));  // ||row||_2 just below 2
    for (int64_t i = 0; i < m; ++i)
      for (int64_t q = 0; q < K; ++q) {
        const double x = (i == 1 ? -v : v) * (i == 2 && q % 2 ? -1 : 1);
        args.array(3).set(i * K + q, x);
        args.array(4).set(q * n + i, x);
      }
    Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        __float128 exact = 0;
        for (int64_t q = 0; q < K; ++q)
          exact += __float128(args.array(3).get(i * K + q)) * __float128(args.array(4).get(q * n + j));
        const double e = double(exact), got = o.got[size_t(i * n + j)];
        // The rounding of each entry to its 2^-e grid (2^(1 - alpha) of the norm 2) plus the
        // reconstruction's few ulps: relative to the row's norms, not to the (cancelling) result.
        EXPECT_NEAR(got, e, 4.0 * std::sqrt(double(K)) * 0x1p-53 * 4 + 8 * DBL_EPSILON * std::abs(e))
            << "K " << K << " at " << i << "," << j;
      }
  }
}

TEST(Ozaki, RefusalsSayWhy) {
  EXPECT_NE(refusal(gemm("f32", 8, 8, 8), Precision::Fp64x).find("f64 contractions"), std::string::npos);
  EXPECT_NE(refusal(gemm("f64", 8, 8, 8), Precision::Fp32x).find("f32 contractions"), std::string::npos);
  Kernel norm = fromSource(R"(kernel nrm(n: int, x: f64[n, n], out y: f64[n]) {
    for i in 0..n { y[i] = sum(j in 0..n, x[i, j] * x[i, j] + 1.0); }
  })", {{"n", 8}});
  std::string why = refusal(norm, Precision::Fp64x);
  EXPECT_NE(why.find("has none: nest 1: mma:"), std::string::npos) << why;
  // 16-bit operands keep their exact bf16 / f16 tensor cores.
  Kernel bf16 = fromSource(R"(kernel h(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j])); }
  })", {{"n", 8}});
  why = refusal(bf16, Precision::Fp32x);
  EXPECT_NE(why.find("nest 1: its operands are bf16 values, which the bf16 tensor cores multiply exactly"), std::string::npos)
      << why;
  // The rewrite is applied once: a rewritten kernel is kept as it is.
  Kernel r = rewrite(gemm("f64", 5, 6, 7), Precision::Fp64x);
  EXPECT_EQ(r.policy, "fp64x");
  Diagnostics diags;
  EXPECT_EQ(applyPolicy(r, Precision::Fp64x, diags)->nests.size(), r.nests.size());
  EXPECT_FALSE(applyPolicy(r, Precision::Fp32x, diags).has_value());
}

// Where the scheme cannot be faster than the contraction as written (its memory traffic alone
// outlasts the contraction's roofline at sm_90's rates), the contraction stays as written, the
// kernel keeps the policy's name, and explain says why: square products from n = 1207 (fp64x) and
// 603 (fp32x) are rewritten, smaller ones and an f64 DG differentiation (N = 7: K = Np = 120, 3 Np
// rows of D, 10^5 elements) are not; PolicyReach::Everywhere rewrites them all.
TEST(Ozaki, AContractionTheSchemeCannotSpeedUpStaysAsWritten) {
  auto rewritten = [](const Kernel& k, Precision p) {
    Diagnostics diags;
    std::optional<Kernel> r = applyPolicy(k, p, diags);
    EXPECT_TRUE(r.has_value());
    EXPECT_EQ(r->policy, precisionName(p));
    return r->nests.size() > k.nests.size();
  };
  EXPECT_TRUE(rewritten(gemm("f64", 1207, 1207, 1207), Precision::Fp64x));
  EXPECT_FALSE(rewritten(gemm("f64", 1206, 1206, 1206), Precision::Fp64x));
  EXPECT_TRUE(rewritten(gemm("f32", 603, 603, 603), Precision::Fp32x));
  EXPECT_FALSE(rewritten(gemm("f32", 602, 602, 602), Precision::Fp32x));
  const Kernel dg = gemm("f64", 100000, 360, 120);
  EXPECT_FALSE(rewritten(dg, Precision::Fp64x));
  Diagnostics diags;
  const Kernel kept = *applyPolicy(dg, Precision::Fp64x, diags);
  EXPECT_EQ(printKernel(kept), printKernel(dg));
  const std::string text = printPolicyRewrite(kept);
  EXPECT_NE(text.find("precision fp64x: no f64 contraction is rewritten into the Ozaki scheme II; where the scheme "
                      "cannot be faster, a contraction stays as written:\n  nest 1: its 14 moduli's memory traffic alone"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(K = 120)"), std::string::npos) << text;
  EXPECT_GT(applyPolicy(dg, Precision::Fp64x, diags, PolicyReach::Everywhere)->nests.size(), dg.nests.size());
  // A rewritten kernel's explain names no contraction kept.
  const std::string whole = printPolicyRewrite(rewrite(gemm("f64", 1207, 1207, 1207), Precision::Fp64x));
  EXPECT_EQ(whole.find("stays as written"), std::string::npos) << whole;
  EXPECT_NE(whole.find("the f64 contractions are rewritten"), std::string::npos) << whole;
}

// The residue nests (those storing a side's i8 residues, `ozaki0_a8` / `ozaki0_b8`): a' taken once
// an entry as two halves (hi 2^27 + lo), then four f64 operations a residue (y by fma, the
// quotient rounded by an fma and a subtraction, the remainder by fma) and one conversion, with no
// range fix: the only select is the zero of a row that is not finite, and p_0 = 256 takes lo's low
// byte.
TEST(Ozaki, EachResidueTakesFourF64OperationsAndNoRangeFix) {
  for (Precision pol : {Precision::Fp64x, Precision::Fp32x}) {
    Kernel r = rewrite(gemm(pol == Precision::Fp64x ? "f64" : "f32", 7, 5, 9), pol);
    const int moduli = ozakiSplit(pol, 9)->moduli;
    int nests = 0;
    for (const LoopNest& nest : r.nests) {
      int residues = 0, selects = 0, floatOps = 0, toI8 = 0;
      for (const Stmt& s : nest.body) {
        if (s.kind == StmtKind::Store) {
          const std::string& name = r.params[size_t(s.array)].name;
          residues += name.size() > 3 && (name.substr(name.size() - 3) == "_a8" || name.substr(name.size() - 3) == "_b8");
        }
        visitExprs(s.value, [&](const Expr& e) {
          selects += e->kind == ExprKind::Select;
          toI8 += e->kind == ExprKind::Cast && e->type == ScalarType::I8;
          const bool arith = e->kind == ExprKind::Binary && (e->binaryOp == BinaryOp::Add || e->binaryOp == BinaryOp::Sub ||
                                                             e->binaryOp == BinaryOp::Mul || e->binaryOp == BinaryOp::Div);
          floatOps += isFloat(e->type) && (arith || (e->kind == ExprKind::Call && e->mathFn == MathFn::Fma));
        });
      }
      if (residues == 0) continue;
      ++nests;
      EXPECT_EQ(residues, moduli);
      EXPECT_EQ(toI8, moduli);
      EXPECT_EQ(selects, 1);
      // The entry (x 2^h 2^(e - h): two products; hi: an fma and a subtraction; lo: an fma and two
      // additions), then four per odd modulus.
      EXPECT_EQ(floatOps, 7 + 4 * (moduli - 1));
    }
    EXPECT_EQ(nests, 2) << precisionName(pol);
  }
}

// Entries whose scaled values a' = round(x 2^e) reach the ends of what the halves carry: rows and
// columns of 2-norm in [1, 2) (e = alpha - 1), with an entry near +-2^53 (hi near 2^26), exact ties
// (x 2^e = j + 1/2, rounded either way), entries that round to 0 and +-1, and values of both signs
// whose residues modulo 256 are 128 (the one tie of the quotient). Each result is the exact sum
// within the stated bound: a residue off by one in any modulus would put C' off by a multiple of
// P / p_l.
TEST(Ozaki, ResiduesFromTwoHalvesAreExactAtTheirEnds) {
  const int64_t m = 6, n = 5, K = 9;
  Kernel k = gemm("f64", m, n, K);
  Kernel r = rewrite(k, Precision::Fp64x);
  const int alpha = ozakiSplit(Precision::Fp64x, K)->alpha;
  const double grid = std::ldexp(1.0, 1 - alpha);  // 2^-e for a norm in [1, 2)
  HostArgs args(k);
  auto entry = [&](int64_t row, int64_t q) {
    const double s = row % 2 ? -1 : 1;
    switch (q) {
      case 0: return s * (1 - 0x1p-52 * double(row));            // a' near 2^53
      case 1: return -s * (2 * double(row) + 1) * grid / 2;       // a tie
      case 2: return s * (0.5 + 128 * grid + 256 * grid * double(row));  // a' = 128 modulo 256
      case 3: return -s * (128 * grid + 0x1p27 * grid * double(row + 1));  // -128 + hi 2^27
      case 4: return s * grid * 0.25;                              // rounds to 0
      case 5: return -s * grid * 0.75;                             // rounds to -+1
      case 6: return s * grid * (0x1p26 + 0.5);                    // lo's end, a tie
      default: return s * 0.1 * double(q - 6) + grid * double(row);
    }
  };
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < K; ++q) args.array(3).set(i * K + q, entry(i, q));
  for (int64_t j = 0; j < n; ++j)
    for (int64_t q = 0; q < K; ++q) args.array(4).set(q * n + j, entry(j + 1, (q + j) % K));
  const std::vector<double> a = args.array(3).toDoubles(), b = args.array(4).toDoubles();
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      const auto [exact, a2, b2, asum, bsum] = exactDot(a, b, K, n, i, j);
      ASSERT_GE(a2, 1.0);
      ASSERT_LT(a2, 4.0);
      const double bound = (std::exp2(-alpha) * (std::sqrt(a2) * bsum + std::sqrt(b2) * asum) +
                            double(K) * std::exp2(-2 * alpha) * std::sqrt(a2 * b2)) * (1 + 1e-12) +
                           8 * DBL_EPSILON * std::abs(double(exact));
      EXPECT_LE(std::abs(o.got[size_t(i * n + j)] - double(exact)), bound) << i << "," << j;
    }
}

// The pairs' digits (the reconstruction's lets `ozaki0_digitL`, one a pair of moduli): each takes
// its modulo of an argument lifted by a multiple of p_l to be non-negative, as u32 (a
// multiply-high and a multiply-add on the GPU), not the floor modulo of a signed value; so too with
// K in blocks (residues summed over blocks). Their values are checked by the tests of exact
// results above and below.
TEST(Ozaki, GarnersDigitsTakeTheUnsignedModuloOfALiftedArgument) {
  for (auto [pol, K] : {std::pair{Precision::Fp64x, int64_t(9)}, std::pair{Precision::Fp32x, int64_t(9)},
                        std::pair{Precision::Fp64x, int64_t(300000)}}) {
    Kernel r = rewrite(gemm(pol == Precision::Fp64x ? "f64" : "f32", 3, 2, K), pol);
    int digits = 0;
    for (const Stmt& s : r.nests.back().body) {
      if (s.kind != StmtKind::Let || s.letName.find("_digit") == std::string::npos) continue;
      ++digits;
      int unsignedMods = 0, signedMods = 0;
      visitExprs(s.value, [&](const Expr& e) {
        if (e->kind != ExprKind::Binary || e->binaryOp != BinaryOp::Mod) return;
        (e->type == ScalarType::U32 ? unsignedMods : signedMods) += 1;
      });
      EXPECT_EQ(unsignedMods, 1) << s.letName;
      EXPECT_EQ(signedMods, 0) << s.letName;
    }
    EXPECT_EQ(digits, ozakiSplit(pol, K)->moduli / 2) << K;
  }
}

// The reconstruction combines the residues of each pair of moduli in i32 (two multiplications a
// pair), one conversion to f64 a pair (7 for fp64x's 14 moduli, 4 for fp32x's 7: the last modulus
// alone), and takes the quadratic part of Garner's rule in f64 over the pairs' radices (an fma a
// term: N (N - 1) / 2 for N pairs), where every digit once took its i32 multiply-adds over every
// digit before it (91 at 14 moduli). The values are checked by the tests of exact results above
// and the error bounds below.
TEST(Ozaki, TheReconstructionTakesGarnersRuleInF64OverPairsOfModuli) {
  for (Precision pol : {Precision::Fp64x, Precision::Fp32x}) {
    Kernel r = rewrite(gemm(pol == Precision::Fp64x ? "f64" : "f32", 3, 2, 9), pol);
    int conversions = 0, pairs = 0, i32Products = 0, f64Fmas = 0;
    for (const Stmt& s : r.nests.back().body) {
      if (s.kind != StmtKind::Let || s.letName.rfind("ozaki0_", 0) != 0) continue;
      pairs += s.letName.find("_pair") != std::string::npos;
      visitExprs(s.value, [&](const Expr& e) {
        conversions += e->kind == ExprKind::Cast && e->type == ScalarType::F64 && e->operands[0]->type == ScalarType::I32;
        i32Products += e->kind == ExprKind::Binary && e->binaryOp == BinaryOp::Mul && e->type == ScalarType::I32;
        f64Fmas += e->kind == ExprKind::Call && e->mathFn == MathFn::Fma && s.letName.find("_garner") != std::string::npos;
      });
    }
    const int moduli = ozakiSplit(pol, 9)->moduli, N = (moduli + 1) / 2;
    EXPECT_EQ(pairs, moduli / 2);
    EXPECT_EQ(conversions, N);
    EXPECT_EQ(i32Products, 2 * (moduli / 2));
    EXPECT_EQ(f64Fmas, N * (N - 1) / 2);
  }
}

// The products' residues of one output point lie a row apart (c8[i, modulus, j]): the
// reconstruction's loads of a point take constant offsets from one address, each modulus's rows
// still whole for the products' epilogue. Their values: the tests of exact results.
TEST(Ozaki, TheProductsResiduesOfAPointLieARowApart) {
  Kernel r = rewrite(gemm("f64", 37, 29, 45), Precision::Fp64x);
  const int moduli = ozakiSplit(Precision::Fp64x, 45)->moduli;
  const int c8 = r.findParam("ozaki0_c8");
  ASSERT_GE(c8, 0);
  std::vector<int64_t> shape;
  for (const Expr& e : r.params[size_t(c8)].shape) shape.push_back(e->intValue);
  EXPECT_EQ(shape, (std::vector<int64_t>{37, moduli, 29}));
}

// Under the default schedule (the products on s8 tensor cores: defaultSchedule's rule for a
// rewriting policy's products; the other nests as any kernel's).
TEST(Ozaki, Fp64xMatchesTheReferenceAtOddSizes) {
  for (auto [m, n, K] : {std::tuple{37, 29, 45}, std::tuple{1, 17, 300}, std::tuple{33, 1, 5}}) {
    Kernel k = gemm("f64", m, n, K);
    Kernel r = rewrite(k, Precision::Fp64x);
    ASSERT_GE(productNest(r), 0);
    EXPECT_EQ(printNestSchedule(defaultSchedule(r).nests[size_t(productNest(r))]),
              "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3");
    HostArgs args(k);
    fillInputs(k, args, 7);
    Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
    EXPECT_LT(relativeError(o), 1e-15) << m << "x" << n << "x" << K;
  }
}

TEST(Ozaki, ProductsRunOnS8TensorCoresInTheEmulation) {
  Kernel k = gemm("f64", 37, 29, 45);
  Kernel r = rewrite(k, Precision::Fp64x);
  const int p = productNest(r);
  // The space offers the products' nest the s8 arithmetic.
  SpaceOptions so;
  so.maxCandidates = 400;
  Space space = enumerateSchedules(r, so);
  bool offered = false;
  for (const Candidate& c : space.candidates) offered |= c.schedule.nests[size_t(p)].mma.arith == MmaArith::S8;
  for (const Candidate& c : space.reserve) offered |= c.schedule.nests[size_t(p)].mma.arith == MmaArith::S8;
  EXPECT_TRUE(offered);
  // At K = 45 the cp.async forms; the TMA forms (boxes of the batched local residues, [modulus, rows,
  // K] read as one 2-D array of stacked rows) need K a multiple of 16 (TMA's 16-byte strides): at
  // K = 176, rows and K that no box divides.
  struct Case {
    int64_t K;
    uint64_t seed;
    std::vector<const char*> schedules;
  };
  for (const Case& t : {Case{45, 11, {"mma: s8 m16n8k32 warps 1x1 tile 1x1 k 32",
                                      "mma: s8 m16n8k32 warps 2x2 tile 2x1 k 64 stages 3",
                                      "mma: s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 3 swizzle 128",
                                      "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 64 stages 3 epilogue shared"}},
                        Case{176, 12, {"mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma",
                                       "mma: s8 wgmma m64n128k32 warpgroups 2x1 k 128 stages 4 swizzle 128 tma producer",
                                       "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma epilogue shared"}}}) {
    Kernel kt = gemm("f64", 37, 29, t.K);
    Kernel rt = rewrite(kt, Precision::Fp64x);
    for (const char* mma : t.schedules) {
      HostArgs args(kt);
      fillInputs(kt, args, t.seed);
      Outputs o = runBoth(kt, rt, withNest(rt, p, mma), args, 5);
      EXPECT_LT(relativeError(o), 1e-15) << "K " << t.K << ": " << mma;
    }
  }
  // The products persistent on one multiprocessor: each block loops over tiles of several moduli
  // (the batch index from the tile's), the producer's boxes at each one's stacked rows.
  Kernel kt = gemm("f64", 37, 29, 176);
  Kernel rt = rewrite(kt, Precision::Fp64x);
  HostArgs args(kt);
  fillInputs(kt, args, 13);
  Outputs o = runBoth(kt, rt,
                      withNest(rt, p, "mma: s8 wgmma m64n32k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma producer "
                                      "persistent"),
                      args, 5, deviceScheduleLimits(227 * 1024, 1024, 1, 228 * 1024));
  EXPECT_LT(relativeError(o), 1e-15);
}

// The space of a large product: the INT8 products hold most of the predicted time, so their nest
// keeps most of the capped product of the nests' spaces, and the best-predicted candidate puts
// them on wgmma (an equal share of the cap once left them 7 mma.sync schedules).
TEST(Ozaki, TheProductsNestKeepsMostOfTheSpace) {
  Kernel r = rewrite(gemm("f64", 4096, 4096, 4096), Precision::Fp64x);
  const size_t p = size_t(productNest(r));
  SpaceOptions so;
  so.limits.maxSharedBytes = 227 * 1024;
  so.limits.computeCapability = 90;
  Space space = enumerateSchedules(r, so);
  ASSERT_FALSE(space.candidates.empty());
  std::set<std::string> products;
  for (const Candidate& c : space.candidates)
    if (c.text.find("fuse:") == std::string::npos) products.insert(printNestSchedule(c.schedule.nests[p]));
  EXPECT_GE(products.size(), 20u);
  const MmaSchedule& best = space.candidates[0].schedule.nests[p].mma;
  EXPECT_EQ(best.arith, MmaArith::S8);
  EXPECT_GT(best.wgmmaN, 0) << space.candidates[0].text;
}

// The products' epilogue reads its modulus and offset (`select(modulus == 0, 256, ...)`, constant
// per modulus, which is a batch index) from values declared once before it, not per output point.
TEST(Ozaki, ProductsComputeTheirModulusOnceBeforeTheEpilogue) {
  Kernel r = rewrite(gemm("f64", 37, 29, 176), Precision::Fp64x);
  const int p = productNest(r);
  for (const char* mma : {"mma: s8 m16n8k32 warps 2x2 tile 2x1 k 64 stages 3",
                          "mma: s8 m16n8k32 warps 2x2 tile 2x1 k 64 stages 3 epilogue shared",
                          "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma"}) {
    SCOPED_TRACE(mma);
    std::optional<Schedule> s = parseSchedule(withNest(r, p, mma)).schedule;
    ASSERT_TRUE(s.has_value());
    ScheduleLimits limits;
    limits.maxSharedBytes = 227 * 1024;
    limits.computeCapability = 90;
    const std::string src = emitCuda(r, *s, limits).source;
    const std::string fn = fmt::format("{}_{}(", r.name, p);
    const size_t at = src.find(fn), end = src.find("\n}\n", at);
    ASSERT_NE(at, std::string::npos);
    const std::string body = src.substr(at, end - at);
    const size_t store = body.find("ozaki0_c8[");
    ASSERT_NE(store, std::string::npos);
    const std::string storeLine = body.substr(store, body.find('\n', store) - store);
    EXPECT_EQ(storeLine.find("=="), std::string::npos) << storeLine;
    EXPECT_NE(body.find("const int per_batch = "), std::string::npos);
    EXPECT_NE(storeLine.find("rtcg_floormod_by("), std::string::npos) << storeLine;
  }
}

// A % by a per-batch divisor in an mma epilogue goes through the divisor's reciprocal, computed
// once (rtcg_floormod_by): exact for every positive divisor, and through % for the others. In the
// host emulation, i8 sums of 70 products modulo 7, 256, -13 (floor semantics: the sign of the
// divisor) and 1000003, against the reference, with the fragment and the shared epilogue.
TEST(Ozaki, ModuloByAPerBatchDivisorMatchesTheReference) {
  Kernel k = fromSource(R"(kernel modp(nb: int, m: int, n: int, K: int, a: i8[nb, m, K], b: i8[nb, n, K], out c: i32[nb, m, n]) {
    for q in 0..nb, i in 0..m, j in 0..n {
      c[q, i, j] = sum(k in 0..K, i32(a[q, i, k]) * i32(b[q, j, k])) % select(q == 0, 7, select(q == 1, 256, select(q == 2, -13, 1000003)));
    }
  })", {{"nb", 4}, {"m", 37}, {"n", 29}, {"K", 70}});
  for (const char* s : {"mma: s8 m16n8k32 warps 2x2 tile 2x1 k 32", "mma: s8 m16n8k32 warps 1x2 tile 1x2 k 64 stages 2 epilogue shared"}) {
    const std::string src = emitCuda(k, *parseSchedule(s).schedule).source;
    EXPECT_NE(src.find("rtcg_floormod_by("), std::string::npos) << s;
    EXPECT_EQ(checkOnHost(k, s, 0.0), "") << s;
  }
  // Dividends over the whole i32 range (the sums plus x, up to 2^31 - 2^21 in magnitude, with
  // both ends) by 1, 3, 2^31 - 1, a power of two, -13 and 1000003.
  Kernel wide = fromSource(R"(kernel modw(nb: int, m: int, n: int, K: int, a: i8[nb, m, K], b: i8[nb, n, K], x: i32[nb, m, n], out c: i32[nb, m, n]) {
    for q in 0..nb, i in 0..m, j in 0..n {
      c[q, i, j] = (sum(k in 0..K, i32(a[q, i, k]) * i32(b[q, j, k])) + x[q, i, j]) % select(q == 0, 1, select(q == 1, 3, select(q == 2, 2147483647, select(q == 3, 65536, select(q == 4, -13, 1000003)))));
    }
  })", {{"nb", 6}, {"m", 37}, {"n", 29}, {"K", 70}});
  HostArgs args(wide);
  fillInputs(wide, args, 4);
  std::mt19937 rng(11);
  const int64_t far = (int64_t(1) << 31) - (int64_t(1) << 21);
  std::uniform_int_distribution<int64_t> spread(-far, far);
  HostArray& x = args.array("x");
  for (int64_t e = 0; e < int64_t(x.size()); ++e) x.setInt(e, e % 7 == 0 ? far : e % 7 == 1 ? -far : spread(rng));
  EXPECT_EQ(checkOnHostWith(wide, "mma: s8 m16n8k32 warps 2x2 tile 2x1 k 32", args, 0.0), "");
}

// The products' epilogue reduces its sums modulo the batch's modulus in integer arithmetic
// (rtcg_mod_magic's multiplier, computed once): no conversion to f64 and back per output, which
// the tensor cores wait for (1 block a multiprocessor: the epilogue is not overlapped).
TEST(Ozaki, ProductsReduceModuloWithoutFloatingPoint) {
  Kernel r = rewrite(gemm("f64", 37, 29, 176), Precision::Fp64x);
  const int p = productNest(r);
  std::optional<Schedule> s =
      parseSchedule(withNest(r, p, "mma: s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma epilogue shared")).schedule;
  ASSERT_TRUE(s.has_value());
  ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  limits.computeCapability = 90;
  const std::string src = emitCuda(r, *s, limits).source;
  const size_t helper = src.find("int rtcg_floormod_by(");
  ASSERT_NE(helper, std::string::npos);
  const std::string body = src.substr(helper, src.find("\n}\n", helper) - helper);
  EXPECT_EQ(body.find("double"), std::string::npos) << body;
  EXPECT_EQ(body.find("floor("), std::string::npos) << body;
  EXPECT_NE(src.find("= rtcg_mod_magic(per_batch"), std::string::npos);
}

// The products (a batch of moduli) with their tiles in groups of M tiles (`group`: at n = 8192 the
// blocks that run at once then share B's tiles in L2, where N fastest read all of a modulus's B per
// row of tiles): the same result at sizes no tile divides, the last group the M tiles left (3 M
// tiles in groups of 2), and in groups that divide them.
TEST(Ozaki, GroupedProductsMatchTheReference) {
  Kernel k = gemm("f64", 150, 70, 176);
  Kernel r = rewrite(k, Precision::Fp64x);
  const int p = productNest(r);
  HostArgs args(k);
  fillInputs(k, args, 9);
  for (const char* mma : {"mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma group 2 epilogue shared",
                          "mma: s8 wgmma m64n64k32 warpgroups 1x1 k 128 stages 3 swizzle 128 tma group 3 epilogue shared"}) {
    SCOPED_TRACE(mma);
    Outputs o = runBoth(k, r, withNest(r, p, mma), args, 5);
    EXPECT_LT(relativeError(o), 1e-15);
  }
}

namespace {

// The space's options for an sm_90 device, with its limits, sampling 4000 candidates.
SpaceOptions sm90Space() {
  SpaceOptions o = spaceOptionsFor("sm_90");
  o.maxCandidates = 4000;
  return o;
}

}  // namespace

// The space offers the products `group 8` on sm_90 where a modulus's B outgrows half an L2 (n =
// 8192: 64 MiB), and not where L2 holds it (n = 4096: 16 MiB; the order made no difference there).
TEST(Ozaki, TheSpaceGroupsTheProductsWhereAModulusOperandOutgrowsL2) {
  for (auto [n, grouped] : {std::pair{int64_t(8192), true}, std::pair{int64_t(4096), false}}) {
    Kernel r = rewrite(gemm("f64", n, n, n), Precision::Fp64x);
    const int p = productNest(r);
    const SpaceOptions o = sm90Space();
    const Space space = enumerateSchedules(r, o);
    bool offered = false;
    for (const Candidate& c : space.candidates) offered |= c.schedule.nests[size_t(p)].mma.group == 8;
    for (const Candidate& c : space.reserve) offered |= c.schedule.nests[size_t(p)].mma.group == 8;
    EXPECT_EQ(offered, grouped) << n;
  }
}

// The scale and residues of one operand share a launch: the space offers A's two nests fused
// (`fuse: 2`, with its rows kept in registers) apart from B's, whose columns one block shape with A's
// rows would read across (the four side nests may share one launch, and the space once offered
// only that: A's rows and B's columns on one mapping). The fused launch is the faster at n = 4096
// (docs/bench.md, session 44).
TEST(Ozaki, TheSpaceFusesEachOperandsScaleAndResidues) {
  Kernel r = rewrite(gemm("f64", 4096, 4096, 4096), Precision::Fp64x);
  const SpaceOptions o = sm90Space();
  const Space space = enumerateSchedules(r, o);
  bool fusedA = false, keptA = false;
  for (const std::vector<Candidate>* cs : {&space.candidates, &space.reserve})
    for (const Candidate& c : *cs)
      if (c.schedule.nests[0].fuse == 2 && c.schedule.nests[2].fuse <= 1) {
        fusedA = true;
        keptA |= c.schedule.nests[0].kept == std::vector<std::string>{"a"};
      }
  EXPECT_TRUE(fusedA);
  EXPECT_TRUE(keptA);
}

// A's scale and residues in one launch, its row kept in registers, at sizes no block divides
// (the rows' values past K never loaded): the host emulation against the reference.
TEST(Ozaki, FusedScaleAndResiduesMatchTheReference) {
  for (auto [m, n, K] : {std::tuple{37, 29, 45}, std::tuple{5, 3, 300}}) {
    Kernel k = gemm("f64", m, n, K);
    Kernel r = rewrite(k, Precision::Fp64x);
    Schedule s = defaultSchedule(r);
    std::vector<std::string> parts;
    for (size_t i = 0; i < s.nests.size(); ++i) parts.push_back(printNestSchedule(s.nests[i]));
    parts[0] = "i: grid.x; k: serial, unroll 4, thread.x 32; fuse: 2; keep: a";
    parts[1] = "i: grid.x; k: serial, unroll 4, thread.x 32";
    const std::string schedule = fmt::format("{}", fmt::join(parts, " | "));
    HostArgs args(k);
    fillInputs(k, args, 41);
    Outputs o = runBoth(k, r, schedule, args, 5);
    EXPECT_LT(relativeError(o), 1e-15) << m << "x" << n << "x" << K;
  }
}

// On an sm_90 target with its shared memory opted in, the products' default is wgmma with TMA
// where K is a multiple of 16 (an H200 at n = 4096: 1.69 ms against 9.27 under mma.sync), and
// mma.sync where not (wgmma by cp.async spilled 2248 bytes a thread at K = 500, and the tuner skips
// a spilling default). The host emulation runs both defaults against the reference.
TEST(Ozaki, TheProductsDefaultToWgmmaOnSm90) {
  ScheduleLimits sm90;
  sm90.maxSharedBytes = 227 * 1024;
  sm90.computeCapability = 90;
  struct Case {
    int64_t K;
    const char* products;
  };
  for (const Case& c : {Case{176, "mma: s8 wgmma m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma"},
                        Case{45, "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3"}}) {
    Kernel k = gemm("f64", 37, 29, c.K);
    Kernel r = rewrite(k, Precision::Fp64x);
    const Schedule s = defaultSchedule(r, sm90);
    EXPECT_EQ(printNestSchedule(s.nests[size_t(productNest(r))]), c.products);
    HostArgs args(k);
    fillInputs(k, args, 9);
    Outputs o = runBoth(k, r, printSchedule(s), args, 5);
    EXPECT_LT(relativeError(o), 1e-15) << c.K;
  }
  // An sm_80 target keeps mma.sync.
  ScheduleLimits sm80 = sm90;
  sm80.computeCapability = 80;
  Kernel r = rewrite(gemm("f64", 37, 29, 176), Precision::Fp64x);
  EXPECT_EQ(printNestSchedule(defaultSchedule(r, sm80).nests[size_t(productNest(r))]),
            "mma: s8 m16n8k32 warps 2x2 tile 2x2 k 64 stages 3");
}

TEST(Ozaki, Fp32xMatchesTheReference) {
  Kernel k = gemm("f32", 40, 23, 67);
  Kernel r = rewrite(k, Precision::Fp32x);
  HostArgs args(k);
  fillInputs(k, args, 3);
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
  EXPECT_LT(relativeError(o), 2e-7);
}

// The policies promise the accuracy of the plain GEMM of their type: within 2x of cuBLAS's error,
// whose one accumulator per output is off by about 0.3 sqrt(K) u (u = 2^-53, 2^-24; an H200's
// cublasDgemm and cublasSgemm at n = 4096 and 8192, and the fma sums here). The split keeps alpha
// = p + 1 bits of each row's 2-norm (ozakiTargetBits derives it: at most 1.46x such a sum's
// error). Checked against exact sums (113-bit) on rows that are uniform in (-1, 1), Gaussian (a
// larger largest entry for their norm: what a scale by the largest |value| would lose bits on),
// and both scaled so that every row's and column's 2-norm lies just above a power of two (the
// scheme's worst case: the grid of each row twice as coarse as at the top of its power of two).
TEST(Ozaki, Fp64xAndFp32xStayWithinTwiceAPlainSumsError) {
  for (Precision pol : {Precision::Fp32x, Precision::Fp64x})
    for (int64_t K : {64, 1000, 4096})
      for (int family = 0; family < 4; ++family) {
        const bool f64 = pol == Precision::Fp64x, gaussian = family % 2 == 1, worst = family >= 2;
        const int m = 24, n = 20;
        Kernel k = gemm(f64 ? "f64" : "f32", m, n, K);
        Kernel r = rewrite(k, pol);
        HostArgs args(k);
        std::mt19937_64 rng(uint64_t(21 + family));
        std::uniform_real_distribution<double> uni(-1, 1);
        std::normal_distribution<double> normal(0, 1);
        std::vector<double> a(size_t(m * K)), b(size_t(K * n));
        for (double& x : a) x = gaussian ? normal(rng) : uni(rng);
        for (double& x : b) x = gaussian ? normal(rng) : uni(rng);
        if (!f64)
          for (auto* v : {&a, &b})
            for (double& x : *v) x = double(float(x));
        if (worst) {  // row i of A and column j of B to a 2-norm of 2^(i % 2) (1 + 2^-10)
          auto rescale = [&](std::vector<double>& v, int64_t count, int64_t stride, int64_t step, int which) {
            double norm = 0;
            for (int64_t q = 0; q < count; ++q) norm += v[size_t(q * stride + which * step)] * v[size_t(q * stride + which * step)];
            const double f = std::exp2(which % 2) * (1 + 0x1p-10) / std::sqrt(norm);
            for (int64_t q = 0; q < count; ++q) {
              double& x = v[size_t(q * stride + which * step)];
              x = f64 ? x * f : double(float(x * f));
            }
          };
          for (int i = 0; i < m; ++i) rescale(a, K, 1, K, i);
          for (int j = 0; j < n; ++j) rescale(b, K, n, 1, j);
        }
        for (int64_t e = 0; e < int64_t(a.size()); ++e) args.array(3).set(e, a[size_t(e)]);
        for (int64_t e = 0; e < int64_t(b.size()); ++e) args.array(4).set(e, b[size_t(e)]);
        Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
        double numPolicy = 0, numPlain = 0, den = 0;
        for (int i = 0; i < m; ++i)
          for (int j = 0; j < n; ++j) {
            __float128 exact = 0;
            double plain64 = 0;
            float plain32 = 0;
            for (int64_t q = 0; q < K; ++q) {
              const double x = a[size_t(i * K + q)], y = b[size_t(q * n + j)];
              exact += (__float128)x * y;
              plain64 = std::fma(x, y, plain64);
              plain32 = std::fma(float(x), float(y), plain32);
            }
            const double e = double(exact), got = o.got[size_t(i * n + j)], plain = f64 ? plain64 : plain32;
            numPolicy += (got - e) * (got - e), numPlain += (plain - e) * (plain - e), den += e * e;
          }
        const double policy = std::sqrt(numPolicy / den), plain = std::sqrt(numPlain / den);
        const OzakiSplit split = *ozakiSplit(pol, K);
        EXPECT_LT(policy, 2 * plain) << (f64 ? "fp64x" : "fp32x") << " K " << K << " family " << family << ": " << policy
                                     << ", a plain sum " << plain << "; " << split.moduli << " moduli, alpha " << split.alpha;
        if (getenv("RTCG_OZAKI_RATIOS"))
          fmt::print("{} K {} family {}: {:.3g} / {:.3g} = {:.2f}\n", f64 ? "fp64x" : "fp32x", K, family, policy, plain,
                     policy / plain);
      }
}

// Entries spread over 2^-40 .. 2^40 in each row and column: every element is within the stated
// bound 2^-alpha (||a_i||_2 ||b_j||_1 + ||b_j||_2 ||a_i||_1) + K 4^-alpha ||a_i||_2 ||b_j||_2 plus a
// few roundings of the result (docs/language.md 6.2), even where the relative error is large
// (cancellation, or large entries of a row meeting small ones of a column).
TEST(Ozaki, WideExponentRangesStayWithinTheStatedBound) {
  const int64_t m = 19, n = 21, K = 50;
  Kernel k = gemm("f64", m, n, K);
  Kernel r = rewrite(k, Precision::Fp64x);
  HostArgs args(k);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> mant(-1, 1), ex(-40, 40);
  for (int q : {3, 4})
    for (int64_t i = 0; i < args.array(q).size(); ++i) args.array(q).set(i, mant(rng) * std::exp2(std::round(ex(rng))));
  const std::vector<double> a = args.array(3).toDoubles(), b = args.array(4).toDoubles();
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
  const double alpha = ozakiSplit(Precision::Fp64x, K)->alpha;
  int large = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double a2 = 0, b2 = 0, asum = 0, bsum = 0;
      for (int64_t q = 0; q < K; ++q) {
        a2 += a[size_t(i * K + q)] * a[size_t(i * K + q)], asum += std::abs(a[size_t(i * K + q)]);
        b2 += b[size_t(q * n + j)] * b[size_t(q * n + j)], bsum += std::abs(b[size_t(q * n + j)]);
      }
      const double anorm = std::sqrt(a2), bnorm = std::sqrt(b2);
      const double want = o.want[size_t(i * n + j)], got = o.got[size_t(i * n + j)];
      const double bound = (std::exp2(-alpha) * (anorm * bsum + bnorm * asum) + double(K) * std::exp2(-2 * alpha) * anorm * bnorm) *
                               (1 + 1e-12) +
                           32 * DBL_EPSILON * std::abs(want);
      EXPECT_LE(std::abs(got - want), bound) << i << "," << j;
      large += std::abs(got - want) > 1e-10 * std::abs(want);
    }
  // Such inputs do lose relative accuracy somewhere (what the docs say of them).
  EXPECT_GT(large, 0);
}

// Zeros, subnormals, infinities and NaN: finite rows and columns keep the scheme's accuracy
// (subnormal and zero rows included); an output whose row of A or column of B is not finite is
// IEEE's sum (inf, -inf or NaN as the reference says).
TEST(Ozaki, NonFiniteValuesComeOutAsIeeeSays) {
  const int64_t m = 9, n = 7, K = 11;
  Kernel k = gemm("f64", m, n, K);
  Kernel r = rewrite(k, Precision::Fp64x);
  HostArgs args(k);
  fillInputs(k, args, 9);
  HostArray& a = args.array(3);
  HostArray& b = args.array(4);
  for (int64_t q = 0; q < K; ++q) a.set(0 * K + q, 0.0);                   // a zero row
  for (int64_t q = 0; q < K; ++q) a.set(1 * K + q, 3e-310 * (q + 1));      // a subnormal row
  for (int64_t q = 0; q < K; ++q) a.set(5 * K + q, a.get(5 * K + q) * 1e300);  // a row near the top
  a.set(2 * K + 4, INFINITY);                                             // +inf
  a.set(3 * K + 1, NAN);                                                  // NaN
  a.set(4 * K + 2, INFINITY), a.set(4 * K + 3, -INFINITY);                // inf - inf
  b.set(5 * n + 3, -INFINITY);                                            // a column with -inf
  b.set(4 * n + 6, 0.0);                                                  // 0 * inf = NaN in row 2?
  b.set(2 * n + 6, DBL_MAX);                                              // overflowing products
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 5);
  int nonFinite = 0;
  for (size_t e = 0; e < o.want.size(); ++e) {
    const double want = o.want[e], got = o.got[e];
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << e << ": " << got;
      ++nonFinite;
    } else if (std::isinf(want)) {
      EXPECT_EQ(got, want) << e;
      ++nonFinite;
    } else {
      EXPECT_NEAR(got, want, 1e-14 * (1 + std::abs(want))) << e;  // entries O(1) (or smaller)
    }
  }
  EXPECT_GT(nonFinite, 10);
}

// DG differentiation in f64 (w[k, m] = sum(j, D[m, j] u[k, j]): the batch index outermost, D
// shared), and three statements sharing u (a stacked contraction: each statement its own steps).
TEST(Ozaki, DgDifferentiationInF64) {
  Kernel k = fromSource(R"(kernel d(K: int, Np: int, D: f64[Np, Np], u: f64[K, Np], out w: f64[K, Np]) {
    for e in 0..K, m in 0..Np { w[e, m] = 2.0 * sum(j in 0..Np, D[m, j] * u[e, j]) + u[e, m]; }
  })", {{"K", 13}, {"Np", 10}});
  Kernel r = rewrite(k, Precision::Fp64x);
  HostArgs args(k);
  fillInputs(k, args, 4);
  EXPECT_LT(relativeError(runBoth(k, r, printSchedule(defaultSchedule(r)), args, 4)), 1e-15);
  Kernel s = fromSource(R"(kernel s(K: int, Np: int, Dr: f64[Np, Np], Ds: f64[Np, Np], u: f64[K, Np],
                                   out ur: f64[K, Np], out us: f64[K, Np]) {
    for e in 0..K, m in 0..Np {
      ur[e, m] = sum(j in 0..Np, Dr[m, j] * u[e, j]);
      us[e, m] = sum(j in 0..Np, Ds[m, j] * u[e, j]);
    }
  })", {{"K", 9}, {"Np", 6}});
  Kernel sr = rewrite(s, Precision::Fp64x);
  // u is scaled and split into residues once for both statements: Dr's and u's scale and residue
  // nests, their products, Ds's two and its products, then the statements' nest (with both
  // reconstructions).
  EXPECT_EQ(sr.nests.size(), 9u);
  HostArgs sargs(s);
  fillInputs(s, sargs, 8);
  const std::string sched = printSchedule(defaultSchedule(sr));
  EXPECT_LT(relativeError(runBoth(s, sr, sched, sargs, 5)), 1e-15);
  EXPECT_LT(relativeError(runBoth(s, sr, sched, sargs, 6)), 1e-15);
}

// The space of a rewritten kernel: its best-predicted candidates (fused scale and residue nests,
// kept rows, s8 products) and the default all match the reference in the emulation.
TEST(Ozaki, BestPredictedCandidatesMatchTheReference) {
  Kernel k = gemm("f64", 35, 27, 41);
  Kernel r = rewrite(k, Precision::Fp64x);
  SpaceOptions so;
  so.maxCandidates = 300;
  Space space = enumerateSchedules(r, so);
  ASSERT_GE(space.candidates.size(), 6u);
  bool fused = false, s8 = false;
  for (size_t c = 0; c < 6; ++c) {
    const Schedule& s = space.candidates[c].schedule;
    for (const NestSchedule& n : s.nests) fused |= n.fuse > 1, s8 |= n.mma.arith == MmaArith::S8;
    HostArgs args(k);
    fillInputs(k, args, 20 + c);
    EXPECT_LT(relativeError(runBoth(k, r, printSchedule(s), args, 5)), 1e-15) << printSchedule(s);
  }
  EXPECT_TRUE(fused);
  EXPECT_TRUE(s8);
}

// Operands that index K inside an expression (column-major flat arrays, the fallback sum's range
// bounded by the residues it indexes) and a reduction that starts past 0, with non-finite values.
TEST(Ozaki, FlatOperandsAndOffsetReductions) {
  Kernel k = fromSource(R"(kernel f(n: int, a: f64[n * n], b: f64[n * n], inout c: f64[n * n]) {
    for i in 0..n, j in 1..n { c[i + n * j] = sum(k in 2..n, a[i + n * k] * b[k + n * j]); }
  })", {{"n", 23}});
  Kernel r = rewrite(k, Precision::Fp64x);
  HostArgs args(k);
  fillInputs(k, args, 12);
  args.array(1).set(3 + 23 * 5, INFINITY);  // a[3, 5]: row 3 of A
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 3);
  int inf = 0;
  for (size_t e = 0; e < o.want.size(); ++e) {
    if (std::isnan(o.want[e])) {
      EXPECT_TRUE(std::isnan(o.got[e])) << e;
    } else if (std::isinf(o.want[e])) {
      EXPECT_EQ(o.got[e], o.want[e]) << e;
      ++inf;
    } else {
      EXPECT_NEAR(o.got[e], o.want[e], 1e-14 * (1 + std::abs(o.want[e]))) << e;  // entries O(1): sums of O(1)
    }
  }
  EXPECT_EQ(inf, 22);
}

// A bound whose expression has one value over the nest (a triangle of one row: j in 0..i + 1 with
// i in 0..1) is a constant to the contraction: the rewrite sizes its steps by that value, not by the
// expression (once a local of extent 0 and an internal error; the differential fuzzer's finding).
TEST(Ozaki, BoundsOfOneValueThatAreExpressions) {
  Kernel k = fromSource(R"(kernel syrk(n: int, K: int, a: f32[n, K], inout c: f32[n, n]) {
    for i in 0..n, j in 0..i + 1 { c[i, j] = sum(k in 0..K, a[i, k] * a[j, k]); }
  })", {{"n", 1}, {"K", 23}});
  Kernel r = rewrite(k, Precision::Fp32x);
  HostArgs args(k);
  fillInputs(k, args, 5);
  Outputs o = runBoth(k, r, printSchedule(defaultSchedule(r)), args, 3);
  ASSERT_EQ(o.got.size(), 1u);
  EXPECT_NEAR(o.got[0], o.want[0], 1e-6 * std::abs(o.want[0]));
  Kernel wide = fromSource(R"(kernel syrk(n: int, K: int, a: f64[n, K], inout c: f64[n, n]) {
    for i in 0..n, j in 0..i + 1 { c[i, j] = sum(k in 0..K, a[i, k] * a[j, k]); }
  })", {{"n", 5}, {"K", 23}});
  EXPECT_NE(refusal(wide, Precision::Fp64x).find("bounds that are not constant"), std::string::npos);
}

// Reductions longer than the i32 sums of i8 products hold exactly (K > 131071): the products in
// blocks of 130944 values and the rest, their residues summed in the reconstruction. Compared with
// sums in 113-bit precision (__float128: each product exact): every element within the stated
// bound, and the relative L2 error within the promise, 2 x 0.28 sqrt(K) u (the policy 1.2e-14 and
// 2.8e-14 at these lengths; a plain f64 sum of the same six outputs 4.8e-15 and 1.8e-14: six
// outputs make a noisy measure of either).
TEST(Ozaki, LongReductionsInBlocks) {
  for (int64_t K : {int64_t(131072), int64_t(130944 * 2 + 77)}) {
    const int64_t m = 2, n = 3;
    Kernel k = gemm("f64", m, n, K);
    Kernel r = rewrite(k, Precision::Fp64x);
    int products = 0;
    for (const LoopNest& ln : r.nests) products += !ln.loops.empty() && ln.loops[0].name == "modulus";
    EXPECT_EQ(products, 2) << K;  // the blocks' and the rest's
    HostArgs args(k);
    fillInputs(k, args, 31);
    const std::vector<double> a = args.array(3).toDoubles(), b = args.array(4).toDoubles();
    // At the first length the blocks' products (batched over modulus and block) run on s8 tensor
    // cores (one length only: the emulation of 130944-long fragments' sums takes seconds; the
    // second takes every nest's default as a kernel without the policy's, a block per point).
    Kernel plain = r;
    plain.policy.clear();
    const std::string schedule = K == 131072 ? withNest(r, productNest(r), "mma: s8 m16n8k32 warps 1x1 tile 1x1 k 128 stages 3")
                                             : printSchedule(defaultSchedule(plain));
    ASSERT_TRUE(validateSchedule(r, *parseSchedule(schedule).schedule).empty()) << schedule;
    Outputs o = runBoth(k, r, schedule, args, 5);
    const double alpha = ozakiSplit(Precision::Fp64x, K)->alpha;
    double num = 0, den = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const auto [exact, a2, b2, a1, b1] = exactDot(a, b, K, n, i, j);
        const double d = double(__float128(o.got[size_t(i * n + j)]) - exact);
        const double bound = std::exp2(-alpha) * (std::sqrt(a2) * b1 + std::sqrt(b2) * a1) * (1 + 1e-9) +
                             double(K) * std::exp2(-2 * alpha) * std::sqrt(a2 * b2) + 32 * DBL_EPSILON * std::abs(double(exact));
        EXPECT_LE(std::abs(d), bound) << K << " at " << i << "," << j;
        num += d * d, den += double(exact) * double(exact);
      }
    EXPECT_LT(std::sqrt(num / den), 2 * 0.28 * std::sqrt(double(K)) * 0x1p-53) << K;
  }
}

// The reconstruction nest, as the model sees it: its non-finite fallback (a sum over
// `0..nonfinite[i]`, a range few points run) costs its share of the points, not a GEMM's reads,
// and a register tile of 8 x 8 points, whose 14 residues each spill far past 255 registers, costs
// its spilled registers' trips through local memory. On an H200 that tile took 3.36 ms at n = 8192,
// and `thread.x 256` 0.27 ms at 4096; the model once ranked the tile first (472 against 1623 us).
TEST(Ozaki, TheReconstructionIsNotRankedOnASpillingRegisterTile) {
  Kernel r = rewrite(gemm("f64", 4096, 4096, 4096), Precision::Fp64x);
  const int recon = int(r.nests.size()) - 1;
  ScheduleLimits limits;
  limits.maxSharedBytes = 227 * 1024;
  limits.computeCapability = 90;
  const DeviceModel d;
  NestModel model(r, recon);
  auto estimate = [&](const char* text) {
    NestPlanResult pr = planNest(r, recon, parseSchedule(text).schedule->nests[0], limits);
    EXPECT_TRUE(pr.plan) << text;
    return pr.plan ? model.estimate(*pr.plan, d) : NestEstimate{};
  };
  const NestEstimate plain = estimate("i: grid.y; j: grid.x, thread.x 256; k: serial");
  const NestEstimate tile = estimate("i: grid.y, thread.y 4, reg 8; j: grid.x, reg 8, thread.x 16; k: serial");
  // The plain form reads the 14 residues (1 byte each), the factors and writes c (8 bytes): the
  // fallback's a[i, k] and b[k, j] add next to nothing.
  const double points = 4096.0 * 4096.0;
  EXPECT_LT(plain.bytes / points, 80.0);
  EXPECT_LT(plain.flops / points, 400.0);
  EXPECT_LT(plain.seconds, tile.seconds);
}
