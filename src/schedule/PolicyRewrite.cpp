#include "schedule/PolicyRewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>

#include "ir/Analysis.h"
#include "ir/Coverage.h"
#include "ir/Printer.h"
#include "ir/Verify.h"
#include "ir/Walk.h"
#include "schedule/Contraction.h"
#include "schedule/Space.h"
#include "support/Error.h"

namespace rtcg {

const std::vector<int>& ozakiModuli() {
  static const std::vector<int> m = {256, 255, 253, 251, 247, 241, 239, 233, 229, 227,
                                     223, 217, 211, 199, 197, 193, 191, 181, 179, 173};
  return m;
}

namespace {

constexpr int kMaxAlpha = 57;          // |a'| <= ||a'||_2 < 2^58: its halves' residues are exact in f64 (residueNest)
constexpr double kFastUnscale = 480;   // |e| up to this: 2^-e and C' 2^-e are normal and exact
constexpr int64_t kMaxK = 131071;      // K 128^2 < 2^31: the i32 sums of i8 products are exact
constexpr int64_t kKBlock = 130944;    // longer sums: blocks of this many (1023 steps of 128) values

int ceilLog2(int64_t v) {
  int b = 0;
  while ((int64_t(1) << b) < v) ++b;
  return b;
}

double log2Product(int n) {
  double bits = 0;
  for (int l = 0; l < n; ++l) bits += std::log2(double(ozakiModuli()[size_t(l)]));
  return bits;
}

// How far above 2^alpha the 2-norm of a scaled row of K entries, rounded to integers, may lie:
// its norm as summed in f64 is within (K + 2) u of the exact one, and rounding adds at most 1/2
// to each entry (sqrt(K) / 2 to the norm). As bits, twice (both operands).
double normSlackBits(int64_t K, int alpha) {
  const double eta = double(K) * 0x1p-52 + std::sqrt(double(K)) * std::ldexp(1.0, -1 - alpha);
  return 2 * std::log2(1 + eta);
}

}  // namespace

int ozakiTargetBits(Precision p) {
  // The scheme's error, for entries whose roundings are independent (any spread of magnitudes
  // within a row; docs/language.md 6.2): each entry of A' is off by at most 1/2 in units of
  // 2^-e <= 2^(1 - alpha) ||a_i||_2, so the relative L2 error of C is at most
  // sqrt(K / 12) sqrt(4^(1 - alpha_A) + 4^(1 - alpha_B)); an IEEE sum of K products (cuBLAS's GEMMs,
  // one accumulator per output, fma) is off by c sqrt(K) u, c = 0.28 to 0.32 measured (fma sums
  // in the host emulation, an H200's cublasDgemm and cublasSgemm at n = 4096 and 8192). Within 2x
  // of it with c = 0.28 for both alphas equal: 2^(p + 1 - alpha) <= 2 * 0.28 * sqrt(6) = 1.37, so
  // alpha = p + 1 (at most 1.46x the sum's error, 0.73x where the norms sit at the top of their
  // power of two). K drops out: both errors grow as sqrt(K).
  return (p == Precision::Fp64x ? 53 : 24) + 1;
}

std::optional<OzakiSplit> ozakiSplit(Precision p, int64_t K, std::string* why) {
  auto fail = [&](std::string w) -> std::optional<OzakiSplit> {
    if (why) *why = std::move(w);
    return std::nullopt;
  };
  if (K < 1) return fail("the sum has no terms");
  if (K > int64_t(INT32_MAX) / 2)
    return fail(fmt::format("its reduction has {} values; the rewrite indexes its residues in i32", K));
  const int target = ozakiTargetBits(p);
  // |C'| <= sum_k |a'_k b'_k| <= ||a'||_2 ||b'||_2 (Cauchy-Schwarz) < 2^(2 alpha) (1 + slack): the
  // balanced residues represent [-P / 2, P / 2), so 2^(2 alpha + 1 + slack) < P. The largest
  // alpha the fewest moduli allow (the spare bits go to accuracy).
  for (int n = 2; n <= int(ozakiModuli().size()); ++n) {
    const double bits = log2Product(n);
    int alpha = kMaxAlpha;
    while (alpha >= target && 2.0 * alpha + 1 + normSlackBits(K, alpha) >= bits) --alpha;
    if (alpha >= target) return OzakiSplit{n, alpha};
  }
  return fail(fmt::format("no set of up to {} moduli holds the product of rows of {}-bit 2-norm", ozakiModuli().size(), target));
}

std::string ozakiCannotPay(Precision p, const Contraction& c, int moduli) {
  const DeviceModel d;  // sm_90's rates, whatever the target (PolicyRewrite.h)
  const bool f64 = p == Precision::Fp64x;
  const double size = f64 ? 8 : 4, rate = f64 ? 2 * d.peakFp64Flops : d.peakFp32Flops;
  double batch = 1;
  for (int64_t e : c.batchExtent) batch *= double(e);
  const double M = double(c.mExtent), N = double(c.nExtent), K = double(c.kExtent), outputs = M * N * batch;
  const double operandElements = (M + N) * K;  // a batch's operands counted once: a lower bound
  const double asWritten = std::max(2 * outputs * K / rate, size * (operandElements + outputs) / d.memoryBandwidth);
  const double schemeBytes = (size + 2.0 * moduli) * operandElements + (2.0 * moduli + size) * outputs;
  const double scheme = schemeBytes / d.memoryBandwidth;
  if (scheme < asWritten) return "";
  return fmt::format("its {} moduli's memory traffic alone ({:.0f} MB: each output's residues written and read back, "
                     "each operand's written and read) takes {:.3g} ms at {:.1f} TB/s, longer than the {} contraction "
                     "as written at its roofline ({:.3g} ms: {:.3g} G operations at the {} peak of {:.3g} TF/s, or its "
                     "own bytes), so it stays as written (K = {})",
                     moduli, schemeBytes * 1e-6, scheme * 1e3, d.memoryBandwidth * 1e-12, f64 ? "f64" : "f32",
                     asWritten * 1e3, 2 * outputs * K * 1e-9, f64 ? "FP64 tensor cores'" : "FP32 cores'", rate * 1e-12,
                     c.kExtent);
}

namespace {

// Small integer helpers for the reconstruction's constants.
int64_t modOf(int64_t v, int64_t p) { return ((v % p) + p) % p; }
int64_t inverseMod(int64_t a, int64_t p) {
  for (int64_t x = 1; x < p; ++x)
    if (modOf(a * x, p) == 1) return x;
  RTCG_ASSERT(false, "moduli are not coprime");
}

// Expression builders for the rewritten nests (types as IR.h requires: operands alike).
constexpr ScalarType F64 = ScalarType::F64, I32 = ScalarType::I32, I64 = ScalarType::I64;
Expr i32c(int64_t v) { return intImm(v, I32); }
Expr f64c(double v) { return floatImm(v, F64); }
Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
Expr subE(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
Expr modE(Expr a, Expr b) { return binary(BinaryOp::Mod, std::move(a), std::move(b)); }
Expr cmp(BinaryOp op, Expr a, Expr b) { return binary(op, std::move(a), std::move(b)); }
Expr fn(MathFn f, std::vector<Expr> args) { return call(f, std::move(args)); }

// The state of one rewrite: the kernel being built and fresh ids and names.
class Rewriter {
 public:
  explicit Rewriter(const Kernel& k) : k_(k) { k_.nests.clear(); }

  Kernel& kernel() { return k_; }

  Loop freshLoop(const std::string& name, int64_t lo, int64_t hi) {
    return Loop{k_.numVarIds++, name, i32c(lo), i32c(hi), {}};
  }
  Expr use(const Loop& l) { return var(VarKind::Index, l.id, l.name, I32); }
  // A let in `body`; returns its variable.
  Expr let(std::vector<Stmt>& body, const std::string& name, Expr value) {
    Stmt s;
    s.kind = StmtKind::Let;
    s.letId = k_.numVarIds++;
    s.letName = name;
    ScalarType t = value->type;
    s.value = std::move(value);
    body.push_back(std::move(s));
    return var(VarKind::Let, body.back().letId, name, t);
  }
  void store(std::vector<Stmt>& body, int array, std::vector<Expr> indices, Expr value) {
    Stmt s;
    s.kind = StmtKind::Store;
    s.array = array;
    s.indices = std::move(indices);
    s.value = std::move(value);
    body.push_back(std::move(s));
  }
  // A new local array (a name no parameter has).
  int local(const std::string& base, ScalarType t, const std::vector<int64_t>& shape) {
    std::string name = base;
    for (int n = 2; k_.findParam(name) >= 0; ++n) name = fmt::format("{}_{}", base, n);
    Param p;
    p.name = name;
    p.kind = ParamKind::Array;
    p.type = t;
    p.mode = ArrayMode::Local;
    for (int64_t e : shape) p.shape.push_back(intImm(e, e > INT32_MAX ? I64 : I32));
    k_.params.push_back(std::move(p));
    return int(k_.params.size()) - 1;
  }
  Expr loadOf(int array, std::vector<Expr> indices) {
    return load(array, k_.params[size_t(array)].type, std::move(indices));
  }

 private:
  Kernel k_;
};

// `e` with the index variables `vars` names (by loop id) replaced by their expressions.
Expr substitute(const Expr& e, const std::map<int, Expr>& vars) {
  return rewriteExpr(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Var || x->varKind != VarKind::Index) return nullptr;
    auto it = vars.find(x->varId);
    return it == vars.end() ? nullptr : it->second;
  });
}

// One operand side of a contraction: its expression and the nest's loops it uses (its rows).
struct Side {
  Expr operand;                    // in the original nest's loop ids and the sum's loop
  std::vector<const Loop*> rows;   // parallel loops of the nest the operand uses, nest order
  int scale1 = -1, scale2 = -1, exponent = -1, unscale = -1, bad = -1, residues = -1;  // its locals
};

// The rewrite of one statement (a part) of a contraction nest: its steps as nests appended to
// `out`, and the local holding the reconstructed sum at each point of the nest.
// The operand sides a nest's parts have scaled already (a stacked contraction's shared operand,
// DG's u): each operand with its sum's loop standing for K, and its locals.
using KnownSides = std::vector<std::pair<Expr, Side>>;

class PartRewrite {
 public:
  PartRewrite(Rewriter& rw, const LoopNest& nest, const Contraction& c, const ContractionPart& part,
              const OzakiSplit& split, const std::string& prefix)
      : rw_(rw), nest_(nest), c_(c), part_(part), split_(split), prefix_(prefix) {
    kLo_ = c.kLo, kHi_ = c.kLo + c.kExtent;
    // The nest's loops' values: bounds that are expressions of outer loops with one value (a
    // triangle's j in 0..i + 1 with i in 0..1) are constants here, as the contraction found them.
    for (const auto* rows : {&c.mRows, &c.nRows})
      for (const ContractionRow& r : *rows) bounds_[r.loop] = {r.lo, r.extent};
    for (size_t i = 0; i < c.batch.size(); ++i) bounds_[c.batch[i]] = {c.batchLo[i], c.batchExtent[i]};
    a_ = side(part.a), b_ = side(part.b);
  }

  // Appends the steps before the nest (an operand `known` holds is scaled once) and the
  // reconstruction's lets to `lets` (statements of the nest itself, ahead of its own); returns the
  // variable holding the sum.
  Expr run(std::vector<LoopNest>& out, KnownSides& known, std::vector<Stmt>& lets) {
    for (auto [s, name] : {std::pair{&a_, "a"}, std::pair{&b_, "b"}}) {
      const Expr key = canonical(s->operand);
      auto it = std::find_if(known.begin(), known.end(), [&](const auto& k) { return sameExpr(k.first, key); });
      if (it != known.end()) {
        *s = it->second;
        continue;
      }
      declareSide(*s, name);
      out.push_back(scaleNest(*s));
      out.push_back(residueNest(*s));
      known.emplace_back(key, *s);
    }
    // K beyond kMaxK: blocks of kKBlock values (batched like the moduli), then the rest.
    const int64_t K = c_.kExtent;
    if (K <= kMaxK) {
      out.push_back(productNest(1, 0, K, false));
    } else {
      out.push_back(productNest(K / kKBlock, 0, kKBlock, true));
      if (K % kKBlock) out.push_back(productNest(1, K / kKBlock * kKBlock, K % kKBlock, false));
    }
    return reconstruct(lets);
  }

  // The indices of the nest's point into a local shaped by the nest's loops (loops' ids -> `vars`).
  std::vector<Expr> pointIndex(const std::vector<const Loop*>& loops, const std::map<int, Expr>& vars) const {
    std::vector<Expr> out;
    for (const Loop* l : loops) {
      Expr v = vars.at(l->id);
      const int64_t lo = loInt(*l);
      out.push_back(lo == 0 ? v : subE(v, i32c(lo)));
    }
    if (out.empty()) out.push_back(i32c(0));
    return out;
  }
  std::vector<const Loop*> nestLoops() const {
    std::vector<const Loop*> out;
    for (const Loop& l : nest_.loops) out.push_back(&l);
    return out;
  }

 private:
  int64_t loInt(const Loop& l) const { return bounds_.at(l.id).first; }
  int64_t extentOf(const Loop& l) const { return bounds_.at(l.id).second; }
  std::vector<int64_t> shapeOf(const std::vector<const Loop*>& loops) const {
    std::vector<int64_t> out;
    for (const Loop* l : loops) out.push_back(extentOf(*l));
    if (out.empty()) out.push_back(1);
    return out;
  }

  // The operand with its sum's loop replaced by one variable that stands for K in every part.
  Expr canonical(const Expr& operand) const {
    return substitute(operand, {{part_.kLoop->id, var(VarKind::Index, -2, "K", I32)}});
  }

  Side side(const Expr& operand) const {
    Side s;
    s.operand = operand;
    for (const Loop& l : nest_.loops)
      if (anyExpr(operand, [&](const Expr& x) { return x->kind == ExprKind::Var && x->varKind == VarKind::Index && x->varId == l.id; }))
        s.rows.push_back(&l);
    return s;
  }

  void declareSide(Side& s, const std::string& name) {
    const std::vector<int64_t> rows = shapeOf(s.rows);
    s.scale1 = rw_.local(fmt::format("{}_{}_scale1", prefix_, name), F64, rows);
    s.scale2 = rw_.local(fmt::format("{}_{}_scale2", prefix_, name), F64, rows);
    s.exponent = rw_.local(fmt::format("{}_{}_exponent", prefix_, name), F64, rows);
    s.unscale = rw_.local(fmt::format("{}_{}_unscale", prefix_, name), F64, rows);
    s.bad = rw_.local(fmt::format("{}_{}_nonfinite", prefix_, name), I32, rows);
    std::vector<int64_t> residues{split_.moduli};
    residues.insert(residues.end(), rows.begin(), rows.end());
    residues.push_back(c_.kExtent);
    s.residues = rw_.local(fmt::format("{}_{}8", prefix_, name), ScalarType::I8, residues);
  }

  // Fresh copies of `loops` (same names and bounds) as a new nest's loops, with the variables
  // that replace the originals' ids.
  std::vector<Loop> copyLoops(const std::vector<const Loop*>& loops, std::map<int, Expr>& vars) {
    std::vector<Loop> out;
    for (const Loop* l : loops) {
      out.push_back(rw_.freshLoop(l->name, loInt(*l), loInt(*l) + extentOf(*l)));
      vars[l->id] = rw_.use(out.back());
    }
    return out;
  }

  // The operand as f64 at the new nest's loops (`vars`) and reduction index `k`.
  Expr operandAt(const Side& s, std::map<int, Expr> vars, const Loop& k) {
    vars[part_.kLoop->id] = rw_.use(k);
    Expr x = substitute(s.operand, vars);
    return x->type == F64 ? x : cast(F64, x);
  }

  // The integer exponent e1 with 2^e1 <= v < 2^(e1 + 1) for v > 0 (a let named `name`): log and
  // pow may be an ulp off, so the first guess is corrected by exact comparisons.
  Expr floorLog2(std::vector<Stmt>& body, const std::string& name, const Expr& v) {
    Expr e0 = rw_.let(body, name + "0", fn(MathFn::Floor, {mul(fn(MathFn::Log, {v}), f64c(1.0 / std::log(2.0)))}));
    Expr p0 = rw_.let(body, name + "p", fn(MathFn::Pow, {f64c(2.0), e0}));
    return rw_.let(body, name, select(cmp(BinaryOp::Gt, p0, v), subE(e0, f64c(1)),
                                      select(cmp(BinaryOp::Le, mul(p0, f64c(2)), v), add(e0, f64c(1)), e0)));
  }

  // 1. Per row: the exponent e with ||x 2^e||_2 < 2^alpha (0 for a zero row), 2^e as two factors
  // (each representable where 2^e is not: subnormal rows), 2^-e where |e| <= kFastUnscale (else 0),
  // and whether the row holds a value that is not finite (its range for the fallback sum: K
  // values, else none). The largest |value| and the sum of squares are two reductions of one pass
  // over the row. Where the sum of squares is out of [2^-960, 2^1000] (f64 entries beyond about
  // 2^+-480: squares that overflow, or underflow enough to matter), the norm's bound is
  // sqrt(K) 2^(e1 + 1) from the largest value 2^e1 <= max < 2^(e1 + 1) instead: exact all the same,
  // up to log2(K) / 2 bits less accurate.
  LoopNest scaleNest(const Side& s) {
    LoopNest n;
    n.loc = nest_.loc;
    std::map<int, Expr> vars;
    n.loops = copyLoops(s.rows, vars);
    Loop k = rw_.freshLoop(part_.kLoop->name, kLo_, kHi_);
    Expr big = f64c(DBL_MAX);
    Expr mx = rw_.let(n.body, "rowmax", reduce(ReduceOp::Max, {k}, fn(MathFn::Abs, {operandAt(s, vars, k)})));
    Loop k2 = rw_.freshLoop(part_.kLoop->name, kLo_, kHi_);
    Expr x2 = operandAt(s, vars, k2);
    Expr ss = rw_.let(n.body, "rowsq", reduce(ReduceOp::Sum, {k2}, mul(x2, x2)));
    // Not finite: an infinity makes the largest value inf, a NaN the sum of squares NaN (whether
    // or not the maximum passes it on).
    Expr nonfinite = rw_.let(n.body, "nonfinite", binary(BinaryOp::Or, binary(BinaryOp::Or, cmp(BinaryOp::Ge, mx, big), cmp(BinaryOp::Ne, mx, mx)),
                                                         cmp(BinaryOp::Ne, ss, ss)));
    Expr finite = binary(BinaryOp::And, cmp(BinaryOp::Gt, mx, f64c(0)), unary(UnaryOp::Not, nonfinite));
    Expr normal = binary(BinaryOp::And, cmp(BinaryOp::Ge, ss, f64c(0x1p-960)), cmp(BinaryOp::Le, ss, f64c(0x1p1000)));
    const int halfLog2K = (ceilLog2(c_.kExtent) + 1) / 2;  // sqrt(K) <= 2^halfLog2K
    Expr fromMax = add(floorLog2(n.body, "rowmax_e", mx), f64c(1 + halfLog2K));
    Expr norm = rw_.let(n.body, "rownorm", fn(MathFn::Sqrt, {ss}));  // at least the largest |value|
    Expr e2 = rw_.let(n.body, "rowexp", select(normal, floorLog2(n.body, "rownorm_e", norm), fromMax));
    Expr e = rw_.let(n.body, "e", select(finite, subE(f64c(split_.alpha - 1), e2), f64c(0)));
    Expr h = rw_.let(n.body, "h", fn(MathFn::Floor, {mul(e, f64c(0.5))}));
    std::vector<Expr> at = pointIndex(s.rows, vars);
    rw_.store(n.body, s.scale1, at, fn(MathFn::Pow, {f64c(2.0), h}));
    rw_.store(n.body, s.scale2, at, fn(MathFn::Pow, {f64c(2.0), subE(e, h)}));
    rw_.store(n.body, s.exponent, at, e);
    rw_.store(n.body, s.unscale, at,
              select(cmp(BinaryOp::Le, fn(MathFn::Abs, {e}), f64c(kFastUnscale)), fn(MathFn::Pow, {f64c(2.0), unary(UnaryOp::Neg, e)}),
                     f64c(0)));
    rw_.store(n.body, s.bad, at, select(nonfinite, i32c(c_.kExtent), i32c(0)));
    return n;
  }

  // 2. Per entry: a' = round(x 2^e) (0 in a row that is not finite) and a residue of it modulo each
  // p_l in [-128, 127]. a' is taken as two integers in f64, exactly: hi, the integer nearest
  // x 2^e / 2^27 (|hi| <= 2^31 for |x 2^e| < 2^58), and lo = round(x 2^e - hi 2^27) (the
  // difference is exact, |lo| <= 2^26), so a' = hi 2^27 + lo. Per odd modulus, y = hi c_l + lo with
  // c_l = 2^27 mod p_l (balanced, |c_l| <= 127) is congruent to a' and below 2^38 in magnitude (one
  // exact fma); q, the integer nearest y / p_l, is taken in f64 (within 2^-22 of y / p_l, which p_l
  // odd keeps at least 1 / (2 p_l) from a tie), so r = y - q p_l (exact by fma) lies in
  // [-(p_l - 1) / 2, (p_l - 1) / 2]: four FP64 operations and one conversion a residue, no range
  // fix. p_0 = 256 divides 2^27: a' modulo 256 is lo's low byte (lo converted to i32 once).
  // Integers are rounded by adding and taking away 1.5 2^52 (additions on the FP64 pipe, where
  // floor() would be one more conversion-pipe instruction).
  LoopNest residueNest(const Side& s) {
    LoopNest n;
    n.loc = nest_.loc;
    std::map<int, Expr> vars;
    n.loops = copyLoops(s.rows, vars);
    n.loops.push_back(rw_.freshLoop(part_.kLoop->name, kLo_, kHi_));
    const Loop k = n.loops.back();
    std::vector<Expr> at = pointIndex(s.rows, vars);
    Expr x = operandAt(s, vars, k);
    Expr scaled = mul(mul(x, rw_.loadOf(s.scale1, at)), rw_.loadOf(s.scale2, at));
    Expr t = rw_.let(n.body, "t", select(cmp(BinaryOp::Gt, rw_.loadOf(s.bad, at), i32c(0)), f64c(0), scaled));
    constexpr double kHalf = 0x1p27, kRound = 0x1.8p52;
    // The integer nearest a b (one rounding, by fma; |a b| < 2^51).
    auto nearest = [&](Expr a, double b) { return subE(fn(MathFn::Fma, {std::move(a), f64c(b), f64c(kRound)}), f64c(kRound)); };
    Expr hi = rw_.let(n.body, "hi", nearest(t, 1 / kHalf));
    Expr w = fn(MathFn::Fma, {unary(UnaryOp::Neg, hi), f64c(kHalf), t});  // exact
    Expr lo = rw_.let(n.body, "lo", subE(add(w, f64c(kRound)), f64c(kRound)));
    Expr kAt = kLo_ == 0 ? rw_.use(k) : subE(rw_.use(k), i32c(kLo_));
    for (int l = 0; l < split_.moduli; ++l) {
      const int64_t p = ozakiModuli()[size_t(l)];
      std::vector<Expr> idx{i32c(l)};
      idx.insert(idx.end(), at.begin(), at.end());
      idx.push_back(kAt);
      Expr r;
      if (int64_t(kHalf) % p == 0) {
        r = cast(I32, lo);  // p = 256: the low byte
      } else {
        RTCG_ASSERT(p % 2 == 1, "the residues' quotients assume odd moduli but 256");
        int64_t c = modOf(int64_t(kHalf), p);
        if (c > p / 2) c -= p;
        Expr y = rw_.let(n.body, fmt::format("y{}", l), fn(MathFn::Fma, {hi, f64c(double(c)), lo}));
        Expr q = nearest(y, 1.0 / double(p));
        r = rw_.let(n.body, fmt::format("r{}", l), fn(MathFn::Fma, {unary(UnaryOp::Neg, q), f64c(double(p)), y}));
      }
      rw_.store(n.body, s.residues, std::move(idx), cast(ScalarType::I8, r));
    }
    return n;
  }

  // p_l (or h_l = floor(p_l / 2) with `half`) at the modulus index `l`: a chain of selects.
  Expr modulusAt(const Expr& l, bool half) const {
    auto value = [&](int i) { return i32c(half ? ozakiModuli()[size_t(i)] / 2 : ozakiModuli()[size_t(i)]); };
    Expr e = value(split_.moduli - 1);
    for (int i = split_.moduli - 2; i >= 0; --i) e = select(cmp(BinaryOp::Eq, l, i32c(i)), value(i), e);
    return e;
  }

  // The residue arrays' indices at modulus `l`, the side's rows (`vars`) and K position `k`.
  std::vector<Expr> residueIndex(const Side& s, const Expr& l, const std::map<int, Expr>& vars, const Expr& k) const {
    std::vector<Expr> idx{l};
    for (Expr& e : pointIndex(s.rows, vars)) idx.push_back(std::move(e));
    idx.push_back(k);
    return idx;
  }

  // 3. c8[point, l] = the balanced residue modulo p_l of sum_k a8[l, ., k] b8[l, ., k] (exact in
  // i32; the batch placed by productIndex): one contraction of i8 operands, batched over l. Over K
  // positions [start, start + length), or with `blockLoop` over `count` blocks of them
  // (c8[point, l, block], a batch index too).
  LoopNest productNest(int64_t count, int64_t start, int64_t length, bool blockLoop) {
    LoopNest n;
    n.loc = nest_.loc;
    n.loops.push_back(rw_.freshLoop("modulus", 0, split_.moduli));
    Expr l = rw_.use(n.loops[0]);
    if (blockLoop) n.loops.push_back(rw_.freshLoop("kblock", 0, count));
    std::map<int, Expr> vars;
    for (Loop& copy : copyLoops(nestLoops(), vars)) n.loops.push_back(std::move(copy));
    Loop k = rw_.freshLoop(part_.kLoop->name, 0, length);
    Expr at = rw_.use(k);
    if (start) at = add(at, i32c(start));
    if (blockLoop) at = add(mul(rw_.use(n.loops[1]), i32c(length)), at);
    Expr ka = cast(I32, rw_.loadOf(a_.residues, residueIndex(a_, l, vars, at)));
    Expr kb = cast(I32, rw_.loadOf(b_.residues, residueIndex(b_, l, vars, at)));
    Expr sum = reduce(ReduceOp::Sum, {k}, mul(ka, kb));
    Expr half = modulusAt(l, true);
    Expr r = subE(modE(add(sum, half), modulusAt(l, false)), half);
    std::vector<Expr> batch{l};
    std::vector<int64_t> batchShape{split_.moduli};
    if (blockLoop) batch.push_back(rw_.use(n.loops[1])), batchShape.push_back(count);
    std::vector<Expr> idx = productIndex(pointIndex(nestLoops(), vars), batch);
    std::vector<int64_t> shape = productIndex(shapeOf(nestLoops()), batchShape);
    const int local = rw_.local(fmt::format("{}_c8{}", prefix_, products_.empty() ? "" : "_rest"), ScalarType::I8, shape);
    products_.push_back({local, blockLoop ? count : 0});
    rw_.store(n.body, local, std::move(idx), cast(ScalarType::I8, r));
    return n;
  }

  // The products' local indexed at a point of the nest and the batch indices (modulus, K block):
  // the batch after the point's first index where it has two or more (c8[i, l, j]), so that the
  // residues of one point lie within a few KiB of each other (the reconstruction's loads take
  // constant offsets from one address) while each modulus's rows stay whole for the products.
  template <typename T>
  static std::vector<T> productIndex(std::vector<T> point, const std::vector<T>& batch) {
    point.insert(point.begin() + (point.size() >= 2 ? 1 : 0), batch.begin(), batch.end());
    return point;
  }

  // Residue l of C' at the point (`at`): the products' balanced residue, or (K in blocks) the sum
  // of every block's, reduced modulo p_l by the reconstruction.
  Expr residueAt(int l, const std::vector<Expr>& at) {
    Expr r;
    for (const auto& [local, blocks] : products_) {
      std::vector<Expr> batch{i32c(l)};
      Expr term;
      if (blocks > 0) {
        Loop kb = rw_.freshLoop("kblock", 0, blocks);
        batch.push_back(rw_.use(kb));
        term = reduce(ReduceOp::Sum, {kb}, cast(I32, rw_.loadOf(local, productIndex(at, batch))));
      } else {
        term = cast(I32, rw_.loadOf(local, productIndex(at, batch)));
      }
      r = r ? add(r, term) : term;
    }
    // A sum of several residues: r_0 reduced too (Garner's digits reduce the others).
    if (l == 0 && (products_.size() > 1 || products_[0].second > 0)) {
      const int64_t p = ozakiModuli()[0], half = p / 2;
      r = subE(modE(add(r, i32c(half)), i32c(p)), i32c(half));
    }
    return r;
  }

  // C' from its residues r_l (balanced, i32) by Garner's mixed-radix digits in the radices of
  // pairs of moduli, m_k = p_2k p_2k+1 (below 2^16; an odd count's last modulus alone):
  // 1. per pair, in i32: R_k = r_2k + p_2k e_k with e_k = ((r_2k+1 - r_2k) inv + h) mod p_2k+1 - h,
  //    congruent to both residues (the modulo of an argument lifted by a multiple of p_2k+1 to be
  //    non-negative, as u32: a multiply-high and a multiply-add where the floor modulo of a signed
  //    value adds a sign fix); R_0 is already the balanced residue modulo m_0;
  // 2. per pair k >= 1, in f64: the balanced digit D_k = x - m_k round(x / m_k) of
  //    x = R_k inv_k + sum_j<k D_j c_jk (c_jk = -(W_j mod m_k) inv_k mod m_k, W_j = m_0 ... m_j-1;
  //    every term an integer below 2^52, so exact; m_k odd keeps x / m_k off a tie);
  // 3. C' = D_0 + m_0 (D_1 + m_1 (D_2 + ...)) in f64 (the factors below 2^16).
  // The digits D_k are the balanced mixed-radix digits of C' in the radices m_k, whatever the
  // order of their arithmetic: Horner's rule takes the same values as on prime digits taken in
  // pairs (v_2k + p_2k v_2k+1 = D_k), a conversion to f64 a pair, and the quadratic part of
  // Garner's rule runs on the FP64 pipe over half as many digits instead of in i32 multiply-adds.
  Expr exactSum(std::vector<Stmt>& body, const std::vector<Expr>& residues) {
    const std::vector<int>& p = ozakiModuli();
    constexpr ScalarType U32 = ScalarType::U32;
    // |r_l|: the products' balanced residues (i8), one per K block and the rest; r_0 reduced.
    int64_t blocks = 0;
    for (const auto& product : products_) blocks += std::max<int64_t>(product.second, 1);
    const int64_t maxR = 128 * blocks;
    const int n = split_.moduli;
    std::vector<int64_t> radix, maxPair;  // m_k and a bound of |R_k|
    std::vector<Expr> pairs;
    for (int a = 0; a < n; a += 2) {
      const int64_t maxA = a == 0 ? 128 : maxR;
      if (a + 1 == n) {
        radix.push_back(p[size_t(a)]), maxPair.push_back(maxA), pairs.push_back(residues[size_t(a)]);
        continue;
      }
      const int64_t pa = p[size_t(a)], pb = p[size_t(a + 1)];
      const int64_t inv = inverseMod(modOf(pa, pb), pb), half = pb / 2;
      const int64_t span = (maxR + maxA) * inv, lift = (span + pb - 1) / pb * pb;
      Expr d = subE(residues[size_t(a + 1)], residues[size_t(a)]);
      Expr e;
      if (span + lift + half < int64_t(INT32_MAX)) {
        Expr x = add(mul(d, i32c(inv)), i32c(half + lift));  // in [0, 2^31)
        e = subE(cast(I32, modE(cast(U32, x), intImm(pb, U32))), i32c(half));
      } else {
        e = subE(modE(add(mul(d, i32c(inv)), i32c(half)), i32c(pb)), i32c(half));
      }
      e = rw_.let(body, fmt::format("{}_digit{}", prefix_, a + 1), e);
      radix.push_back(pa * pb), maxPair.push_back(maxA + pa * half);
      pairs.push_back(rw_.let(body, fmt::format("{}_pair{}", prefix_, a / 2), add(residues[size_t(a)], mul(e, i32c(pa)))));
    }
    const int N = int(radix.size());
    constexpr double kRound = 0x1.8p52;
    std::vector<Expr> digits{rw_.let(body, fmt::format("{}_radix0", prefix_), cast(F64, pairs[0]))};
    for (int k = 1; k < N; ++k) {
      const int64_t mk = radix[size_t(k)];
      int64_t w = 1;  // W_j mod m_k
      std::vector<int64_t> wj;
      for (int j = 0; j < k; ++j) wj.push_back(w), w = modOf(w * radix[size_t(j)], mk);
      const int64_t inv = inverseMod(w, mk);
      Expr x = mul(cast(F64, pairs[size_t(k)]), f64c(double(inv)));
      double bound = double(maxPair[size_t(k)]) * double(inv);
      for (int j = 0; j < k; ++j) {
        int64_t c = modOf(-wj[size_t(j)] * inv, mk);
        if (c > mk / 2) c -= mk;
        x = fn(MathFn::Fma, {digits[size_t(j)], f64c(double(c)), x});
        bound += double(radix[size_t(j)] / 2 + 1) * double(std::abs(c));
      }
      RTCG_ASSERT(bound < 0x1p51 && mk % 2 == 1, "the reconstruction's digit sums are exact in f64");
      x = rw_.let(body, fmt::format("{}_garner{}", prefix_, k), x);
      Expr q = subE(fn(MathFn::Fma, {x, f64c(1.0 / double(mk)), f64c(kRound)}), f64c(kRound));
      digits.push_back(rw_.let(body, fmt::format("{}_radix{}", prefix_, k),
                               fn(MathFn::Fma, {unary(UnaryOp::Neg, q), f64c(double(mk)), x})));
    }
    Expr x = digits.back();
    for (int k = N - 2; k >= 0; --k)
      x = rw_.let(body, fmt::format("{}_horner{}", prefix_, k), add(digits[size_t(k)], mul(f64c(double(radix[size_t(k)])), x)));
    return x;
  }

  // The plain sum of the statement over the range a row's non-finite flag gives (K values or none).
  // The range counts from 0 and indexes the side's residues alone (a8[0, row, k]): what bounds a
  // data-dependent range (ir/DataRanges.h) where the operands index K inside an expression
  // (a[i + n * k]); the term is the same either way.
  Expr fallbackSum(const Side& s, const std::map<int, Expr>& vars) {
    Loop k = rw_.freshLoop(part_.kLoop->name, 0, c_.kExtent);
    k.hi = rw_.loadOf(s.bad, pointIndex(s.rows, vars));
    std::map<int, Expr> withK = vars;
    withK[part_.kLoop->id] = kLo_ == 0 ? rw_.use(k) : add(rw_.use(k), i32c(kLo_));
    Expr term = substitute(part_.sum->operands[0], withK);
    Expr residue = cast(I32, rw_.loadOf(s.residues, residueIndex(s, i32c(0), vars, rw_.use(k))));
    return reduce(ReduceOp::Sum, {k}, select(cmp(BinaryOp::Le, residue, i32c(128)), term, term));
  }

  // 4. The sum at each point of the nest itself (lets in `body`): C' 2^-(e_i + f_j), or the plain
  // sum where a row or column is not finite.
  Expr reconstruct(std::vector<Stmt>& body) {
    std::map<int, Expr> vars;  // the nest's own loops
    for (const Loop& l : nest_.loops) vars[l.id] = rw_.use(l);
    std::vector<Expr> at = pointIndex(nestLoops(), vars), residues;
    for (int l = 0; l < split_.moduli; ++l)
      residues.push_back(rw_.let(body, fmt::format("{}_r{}", prefix_, l), residueAt(l, at)));
    Expr x = exactSum(body, residues);
    std::vector<Expr> ia = pointIndex(a_.rows, vars), ib = pointIndex(b_.rows, vars);
    // C' 2^-(e_i + f_j): where both exponents are within kFastUnscale, C' 2^-e_i is exact and in
    // range (|C'| < 2^127), so only the second product rounds (where the result is subnormal or
    // overflows); otherwise (rows near the ends of the exponent range) two factors 2^h, 2^(f - h)
    // of the total shift f, halves of one sign, so that an intermediate overflows only where the
    // result does. The select's other side is not evaluated on the GPU.
    Expr ua = rw_.loadOf(a_.unscale, ia), ub = rw_.loadOf(b_.unscale, ib);
    Expr fast = mul(mul(x, ua), ub);
    Expr f = unary(UnaryOp::Neg, add(rw_.loadOf(a_.exponent, ia), rw_.loadOf(b_.exponent, ib)));
    Expr h = fn(MathFn::Floor, {mul(f, f64c(0.5))});
    Expr slow = mul(mul(x, fn(MathFn::Pow, {f64c(2.0), h})), fn(MathFn::Pow, {f64c(2.0), subE(f, h)}));
    Expr value = select(binary(BinaryOp::And, cmp(BinaryOp::Ne, ua, f64c(0)), cmp(BinaryOp::Ne, ub, f64c(0))), fast, slow);
    const ScalarType t = part_.sum->type;
    if (t != F64) value = cast(t, value);
    Expr oz = rw_.let(body, prefix_ + "_scaled", value);
    Expr badA = cmp(BinaryOp::Gt, rw_.loadOf(a_.bad, ia), i32c(0));
    Expr badB = cmp(BinaryOp::Gt, rw_.loadOf(b_.bad, ib), i32c(0));
    return rw_.let(body, prefix_ + "_sum",
                   select(badA, fallbackSum(a_, vars), select(badB, fallbackSum(b_, vars), oz)));
  }

  Rewriter& rw_;
  const LoopNest& nest_;
  const Contraction& c_;
  const ContractionPart& part_;
  OzakiSplit split_;
  std::string prefix_;
  int64_t kLo_ = 0, kHi_ = 0;
  std::map<int, std::pair<int64_t, int64_t>> bounds_;  // the nest's loops (ids): lower bound, extent
  Side a_, b_;
  std::vector<std::pair<int, int64_t>> products_;  // the products' locals and their K blocks (0: none)
};

// The nest with the reconstruction's lets ahead of its statements and each part's sum replaced by
// the let holding its value.
LoopNest readSums(const LoopNest& nest, std::vector<Stmt> lets, const std::vector<std::pair<Expr, Expr>>& sums) {
  LoopNest out = nest;
  for (Stmt& s : out.body)
    s.value = rewriteExpr(s.value, [&](const Expr& x) -> Expr {
      for (const auto& [sum, value] : sums)
        if (x.get() == sum.get() || sameExpr(x, sum)) return value;
      return nullptr;
    });
  lets.insert(lets.end(), out.body.begin(), out.body.end());
  out.body = std::move(lets);
  return out;
}

// The rewritten kernel must pass what the proved one passed: an internal error otherwise.
void checkRewrite(const Kernel& k, Precision p) {
  std::vector<std::string> problems = verifyKernel(k);
  Diagnostics diags;
  if (problems.empty() && (!checkBounds(k, diags) || !checkRaces(k, diags) || !checkOutputsWritten(k, diags)))
    for (const Diagnostic& d : diags.all())  // (warnings: what the data-dependent ranges leave unproved)
      if (d.severity == Severity::Error) problems.push_back(d.message);
  RTCG_ASSERT(problems.empty(), fmt::format("the {} rewrite of kernel '{}' is not well formed: {}\n{}", precisionName(p),
                                            k.name, fmt::join(problems, "; "), printKernel(k)));
}

}  // namespace

Kernel policyKernel(const Kernel& proved, Precision p, PolicyReach reach) {
  Diagnostics diags;
  std::optional<Kernel> k = applyPolicy(proved, p, diags, reach);
  if (!k) throw Error(diags.all().empty() ? "the precision policy cannot apply" : diags.all()[0].message);
  return std::move(*k);
}

std::string printPolicyRewrite(const Kernel& k) {
  const Precision p = k.policy == "fp64x" ? Precision::Fp64x : Precision::Fp32x;
  const ScalarType type = p == Precision::Fp64x ? F64 : ScalarType::F32;
  // The contractions of the policy's type still in the kernel are those it left as written.
  std::string kept;
  for (int n = 0; n < int(k.nests.size()); ++n) {
    ContractionMatch m = matchContraction(k, n);
    if (!m.contraction || m.contraction->type != type || isHalf(m.contraction->narrowOperands)) continue;
    std::optional<OzakiSplit> split = ozakiSplit(p, m.contraction->kExtent);
    if (split) kept += fmt::format("  nest {}: {}\n", n + 1, ozakiCannotPay(p, *m.contraction, split->moduli));
  }
  const bool rewritten = std::any_of(k.params.begin(), k.params.end(),
                                     [](const Param& a) { return a.mode == ArrayMode::Local && a.type == ScalarType::I8; });
  std::string out = rewritten ? fmt::format("precision {}: the {} contractions are rewritten into the steps of the Ozaki "
                                            "scheme II on INT8 tensor cores (per contraction: scale and residues of each "
                                            "operand, the products, the reconstruction)",
                                            k.policy, typeName(type))
                              : fmt::format("precision {}: no {} contraction is rewritten into the Ozaki scheme II",
                                            k.policy, typeName(type));
  if (!kept.empty()) out += fmt::format("; where the scheme cannot be faster, a contraction stays as written:\n{}", kept);
  return out + fmt::format("{}the kernel scheduled:\n{}", kept.empty() ? "; " : "", printKernel(k));
}

std::optional<Kernel> applyPolicy(const Kernel& proved, Precision p, Diagnostics& diags, PolicyReach reach) {
  if (!precisionRewrites(p) || proved.policy == precisionName(p)) return proved;
  const std::string name = precisionName(p);
  if (!proved.policy.empty()) {
    diags.error(proved.loc, fmt::format("kernel '{}' is already rewritten for precision '{}'", proved.name, proved.policy));
    return std::nullopt;
  }
  const ScalarType type = p == Precision::Fp64x ? F64 : ScalarType::F32;
  Rewriter rw(proved);
  std::vector<std::string> notTaken;
  int rewritten = 0, kept = 0;
  for (int n = 0; n < int(proved.nests.size()); ++n) {
    const LoopNest& nest = proved.nests[size_t(n)];
    ContractionMatch m = matchContraction(proved, n);
    // A contraction of 16-bit operands keeps its own tensor cores (bf16 / f16 products are exact
    // in f32: already FP32-class, in one product instead of N).
    const bool halfOperands = m.contraction && isHalf(m.contraction->narrowOperands);
    if (!m.contraction || m.contraction->type != type || halfOperands) {
      if (!m.contraction && !m.reasons.empty()) notTaken.push_back(fmt::format("nest {}: {}", n + 1, m.reasons[0]));
      if (halfOperands && m.contraction->type == type)
        notTaken.push_back(fmt::format("nest {}: its operands are {} values, which the {} tensor cores multiply exactly "
                                       "(mma: {} under every policy)",
                                       n + 1, typeName(m.contraction->narrowOperands), typeName(m.contraction->narrowOperands),
                                       typeName(m.contraction->narrowOperands)));
      rw.kernel().nests.push_back(nest);
      continue;
    }
    const Contraction& c = *m.contraction;
    std::string why;
    std::optional<OzakiSplit> split = ozakiSplit(p, c.kExtent, &why);
    if (!split) {
      diags.error(nest.loc, fmt::format("precision '{}' cannot compute this contraction on INT8 tensor cores: {}", name, why));
      return std::nullopt;
    }
    if (reach == PolicyReach::WherePays && !ozakiCannotPay(p, c, split->moduli).empty()) {
      ++kept;
      rw.kernel().nests.push_back(nest);
      continue;
    }
    std::vector<std::pair<Expr, Expr>> sums;
    std::vector<Stmt> lets;
    KnownSides known;
    for (size_t i = 0; i < c.parts.size(); ++i) {
      PartRewrite part(rw, nest, c, c.parts[i], *split, fmt::format("ozaki{}", rewritten++));
      sums.emplace_back(c.parts[i].sum, part.run(rw.kernel().nests, known, lets));
    }
    rw.kernel().nests.push_back(readSums(nest, std::move(lets), sums));
  }
  if (rewritten == 0 && kept == 0) {
    diags.error(proved.loc, fmt::format("precision '{}' computes {} contractions on INT8 tensor cores, but kernel '{}' has "
                                        "none{}{}",
                                        name, typeName(type), proved.name, notTaken.empty() ? "" : ": ",
                                        fmt::format("{}", fmt::join(notTaken, "; "))));
    return std::nullopt;
  }
  Kernel out = std::move(rw.kernel());
  out.policy = name;
  checkRewrite(out, p);
  return out;
}

}  // namespace rtcg
