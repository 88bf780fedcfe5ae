// Affine forms of index expressions and value ranges over loop domains.
#include <fmt/format.h>

#include <algorithm>

#include "ir/Analysis.h"
#include "ir/Walk.h"

namespace rtcg {

int64_t AffineForm::coeff(int id) const {
  auto it = coeffs.find(id);
  return it == coeffs.end() ? 0 : it->second;
}

std::string AffineForm::str(const std::map<int, std::string>& names) const {
  std::string out;
  auto term = [&](int64_t c, const std::string& body) {
    if (out.empty()) {
      if (c < 0) out += "-";
    } else {
      out += c < 0 ? " - " : " + ";
    }
    int64_t m = c < 0 ? -c : c;
    if (body.empty())
      out += fmt::format("{}", m);
    else if (m == 1)
      out += body;
    else
      out += fmt::format("{}*{}", m, body);
  };
  for (const auto& [id, c] : coeffs) {
    auto it = names.find(id);
    term(c, it != names.end() ? it->second : fmt::format("v{}", id));
  }
  if (constant != 0 || out.empty()) {
    if (out.empty())
      out = fmt::format("{}", constant);
    else
      term(constant, "");
  }
  return out;
}

namespace {

// f + c*g, or nullopt on overflow.
std::optional<AffineForm> addScaled(const AffineForm& f, const AffineForm& g, int64_t c) {
  AffineForm r = f;
  int64_t t = 0;
  if (__builtin_mul_overflow(g.constant, c, &t) || __builtin_add_overflow(r.constant, t, &r.constant))
    return std::nullopt;
  for (const auto& [id, gc] : g.coeffs) {
    int64_t& slot = r.coeffs[id];
    if (__builtin_mul_overflow(gc, c, &t) || __builtin_add_overflow(slot, t, &slot)) return std::nullopt;
    if (slot == 0) r.coeffs.erase(id);
  }
  return r;
}

AffineForm constantForm(int64_t v) {
  AffineForm f;
  f.constant = v;
  return f;
}

}  // namespace

std::optional<AffineForm> toAffine(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm:
      if (e->type == ScalarType::Bool) return std::nullopt;
      return constantForm(e->intValue);
    case ExprKind::Var:
      if (e->varKind != VarKind::Index) return std::nullopt;
      {
        AffineForm f;
        f.coeffs[e->varId] = 1;
        return f;
      }
    case ExprKind::Unary: {
      if (e->unaryOp != UnaryOp::Neg) return std::nullopt;
      auto a = toAffine(e->operands[0]);
      if (!a) return std::nullopt;
      return addScaled(AffineForm{}, *a, -1);
    }
    case ExprKind::Binary: {
      if (!isInteger(e->type)) return std::nullopt;
      auto op = e->binaryOp;
      if (op != BinaryOp::Add && op != BinaryOp::Sub && op != BinaryOp::Mul) return std::nullopt;
      auto a = toAffine(e->operands[0]);
      auto b = toAffine(e->operands[1]);
      if (!a || !b) return std::nullopt;
      if (op == BinaryOp::Add) return addScaled(*a, *b, 1);
      if (op == BinaryOp::Sub) return addScaled(*a, *b, -1);
      if (a->isConstant()) return addScaled(AffineForm{}, *b, a->constant);
      if (b->isConstant()) return addScaled(AffineForm{}, *a, b->constant);
      return std::nullopt;  // product of two indices
    }
    case ExprKind::Cast:
      // Widening (and, for in-range values, narrowing) integer casts keep the value.
      if (!isInteger(e->type) || !isInteger(e->operands[0]->type)) return std::nullopt;
      return toAffine(e->operands[0]);
    case ExprKind::FloatImm:
    case ExprKind::Load:
    case ExprKind::Call:
    case ExprKind::Select:
    case ExprKind::Reduce: return std::nullopt;
  }
  return std::nullopt;
}

namespace {

using Restrict = std::map<int, Interval>;

std::optional<Interval> rangeIn(const Expr& e, const LoopScope& scope, size_t depth, const Restrict& restrict);

// The minimum (wantMax = false) or maximum of `f` over the domain of scope[0, depth). Loops are
// eliminated innermost first: a loop with a positive coefficient reaches the maximum at its last
// value (hi - 1) and the minimum at lo (and the reverse for a negative coefficient); those bounds
// are affine in the outer loops, which are eliminated next. A tile restriction on a loop with
// non-constant bounds gives two candidate bounds; both are explored and the tighter result kept
// (each is a valid bound). nullopt when f mentions a variable outside the scope.
std::optional<int64_t> extreme(AffineForm f, const LoopScope& scope, size_t depth, bool wantMax,
                               const Restrict& restrict) {
  for (size_t idx = depth; idx-- > 0;) {
    const Loop& L = *scope[idx];
    int64_t c = f.coeff(L.id);
    if (c == 0) continue;
    f.coeffs.erase(L.id);
    bool upper = (c > 0) == wantMax;  // which end of the loop's range we need
    const Expr& boundExpr = upper ? L.hi : L.lo;
    std::vector<AffineForm> cands;
    if (auto b = toAffine(boundExpr)) {
      cands.push_back(upper ? *addScaled(*b, constantForm(-1), 1) : *b);
    } else {
      // Non-affine bound: fall back to its range over the outer loops.
      auto r = rangeIn(boundExpr, scope, idx, restrict);
      if (!r || r->empty()) return std::nullopt;
      cands.push_back(constantForm(upper ? r->hi - 1 : r->lo));
    }
    if (auto it = restrict.find(L.id); it != restrict.end())
      cands.push_back(constantForm(upper ? it->second.hi : it->second.lo));
    // Merge constant candidates (the loop's value is at most the smallest upper bound).
    std::vector<AffineForm> merged;
    std::optional<int64_t> constCand;
    for (const AffineForm& a : cands) {
      if (!a.isConstant()) {
        merged.push_back(a);
        continue;
      }
      if (!constCand)
        constCand = a.constant;
      else
        constCand = upper ? std::min(*constCand, a.constant) : std::max(*constCand, a.constant);
    }
    if (constCand) merged.push_back(constantForm(*constCand));
    if (merged.size() == 1) {
      auto g = addScaled(f, merged[0], c);
      if (!g) return std::nullopt;
      f = *g;
      continue;
    }
    std::optional<int64_t> best;
    for (const AffineForm& a : merged) {
      auto g = addScaled(f, a, c);
      if (!g) return std::nullopt;
      auto v = extreme(*g, scope, idx, wantMax, restrict);
      if (!v) return std::nullopt;
      // Each candidate bounds the value from one side: keep the tightest.
      best = !best ? *v : wantMax ? std::min(*best, *v) : std::max(*best, *v);
    }
    return best;
  }
  if (!f.isConstant()) return std::nullopt;
  return f.constant;
}

// True if the domain of scope[0, depth) is certainly empty: some loop has no iteration for any
// value of the loops outside it.
bool domainEmpty(const LoopScope& scope, size_t depth, const Restrict& restrict) {
  for (size_t idx = 0; idx < depth; ++idx) {
    const Loop& L = *scope[idx];
    auto lo = toAffine(L.lo), hi = toAffine(L.hi);
    if (!lo || !hi) continue;
    auto width = addScaled(*hi, *lo, -1);
    if (!width) continue;
    auto w = extreme(*width, scope, idx, /*wantMax=*/true, restrict);
    if (w && *w <= 0) return true;
    if (auto it = restrict.find(L.id); it != restrict.end()) {
      if (it->second.empty()) return true;
      auto loMin = extreme(*lo, scope, idx, false, restrict);
      auto hiMax = extreme(*hi, scope, idx, true, restrict);
      if ((hiMax && *hiMax - 1 < it->second.lo) || (loMin && *loMin > it->second.hi)) return true;
    }
  }
  return false;
}

std::optional<int64_t> mulChecked(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Interval of {a op b} from the four corner products/quotients.
std::optional<Interval> corners(const Interval& a, const Interval& b,
                                const std::function<std::optional<int64_t>(int64_t, int64_t)>& op) {
  std::optional<Interval> r;
  for (int64_t x : {a.lo, a.hi})
    for (int64_t y : {b.lo, b.hi}) {
      auto v = op(x, y);
      if (!v) return std::nullopt;
      if (!r)
        r = Interval{*v, *v};
      else
        r = Interval{std::min(r->lo, *v), std::max(r->hi, *v)};
    }
  return r;
}

std::optional<Interval> rangeIn(const Expr& e, const LoopScope& scope, size_t depth, const Restrict& restrict) {
  if (auto f = toAffine(e)) {
    auto lo = extreme(*f, scope, depth, false, restrict);
    auto hi = extreme(*f, scope, depth, true, restrict);
    if (!lo || !hi) return std::nullopt;
    return Interval{*lo, *hi};
  }
  auto sub = [&](size_t i) { return rangeIn(e->operands[i], scope, depth, restrict); };
  switch (e->kind) {
    case ExprKind::IntImm: return Interval{e->intValue, e->intValue};  // Bool constants
    case ExprKind::FloatImm:
    case ExprKind::Var:  // non-index variables: scalars, lets, unbound sizes
    case ExprKind::Load: return std::nullopt;
    case ExprKind::Unary: {
      if (e->unaryOp == UnaryOp::Not) return Interval{0, 1};
      if (!isInteger(e->type)) return std::nullopt;  // u32 negation wraps
      auto a = sub(0);
      if (!a || a->lo == INT64_MIN) return std::nullopt;
      return Interval{-a->hi, -a->lo};
    }
    case ExprKind::Binary: {
      if (isComparison(e->binaryOp) || isLogical(e->binaryOp)) return Interval{0, 1};
      if (!isInteger(e->type)) return std::nullopt;
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      int64_t t1, t2;
      switch (e->binaryOp) {
        case BinaryOp::Add:
          if (__builtin_add_overflow(a->lo, b->lo, &t1) || __builtin_add_overflow(a->hi, b->hi, &t2))
            return std::nullopt;
          return Interval{t1, t2};
        case BinaryOp::Sub:
          if (__builtin_sub_overflow(a->lo, b->hi, &t1) || __builtin_sub_overflow(a->hi, b->lo, &t2))
            return std::nullopt;
          return Interval{t1, t2};
        case BinaryOp::Mul: return corners(*a, *b, mulChecked);
        case BinaryOp::Div:
          // floor(a / b) is monotone in each argument while b keeps its sign.
          if (b->lo <= 0 && b->hi >= 0) return std::nullopt;
          return corners(*a, *b, [](int64_t x, int64_t y) -> std::optional<int64_t> {
            if (x == INT64_MIN && y == -1) return std::nullopt;
            return floorDiv(x, y);
          });
        case BinaryOp::Mod:
          if (b->lo > 0) {
            // Within one period of a constant divisor the result is a - k*b: exact.
            if (b->lo == b->hi && floorDiv(a->lo, b->lo) == floorDiv(a->hi, b->lo))
              return Interval{floorMod(a->lo, b->lo), floorMod(a->hi, b->lo)};
            Interval r{0, b->hi - 1};
            if (a->lo >= 0) r.hi = std::min(r.hi, a->hi);
            return r;
          }
          if (b->hi < 0) {
            if (b->lo == b->hi && floorDiv(a->lo, b->lo) == floorDiv(a->hi, b->lo))
              return Interval{floorMod(a->hi, b->lo), floorMod(a->lo, b->lo)};
            return Interval{b->lo + 1, 0};
          }
          return std::nullopt;
        default: return std::nullopt;
      }
    }
    case ExprKind::Call: {
      if (!isInteger(e->type)) return std::nullopt;
      auto a = sub(0);
      if (!a) return std::nullopt;
      switch (e->mathFn) {
        case MathFn::Abs:
          if (a->lo == INT64_MIN) return std::nullopt;
          if (a->lo >= 0) return a;
          if (a->hi <= 0) return Interval{-a->hi, -a->lo};
          return Interval{0, std::max(-a->lo, a->hi)};
        case MathFn::Min:
        case MathFn::Max: {
          auto b = sub(1);
          if (!b) return std::nullopt;
          if (e->mathFn == MathFn::Min) return Interval{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
          return Interval{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
        }
        default: return std::nullopt;
      }
    }
    case ExprKind::Cast:
      if (e->type == ScalarType::Bool) return Interval{0, 1};
      if (!isInteger(e->type) || isFloat(e->operands[0]->type)) return std::nullopt;
      if (isUnsigned(e->operands[0]->type)) {  // i32 of a u32 above 2^31 - 1 is negative
        auto a = sub(0);
        if (!a || a->lo < 0 || (e->type == ScalarType::I32 && a->hi > INT32_MAX)) return std::nullopt;
        return a;
      }
      return sub(0);
    case ExprKind::Select: {
      auto a = sub(1), b = sub(2);
      if (!a || !b) return std::nullopt;
      if (a->empty()) return b;
      if (b->empty()) return a;
      return Interval{std::min(a->lo, b->lo), std::max(a->hi, b->hi)};
    }
    case ExprKind::Reduce: {
      // An integer min/max reduction stays within its body's range (or is the identity if empty,
      // which we cannot bound).
      if (!isInteger(e->type) || (e->reduceOp != ReduceOp::Max && e->reduceOp != ReduceOp::Min))
        return std::nullopt;
      LoopScope inner(scope.begin(), scope.begin() + depth);
      for (const Loop& l : e->loops) inner.push_back(&l);
      if (domainEmpty(inner, inner.size(), restrict)) return std::nullopt;
      return rangeIn(e->operands[0], inner, inner.size(), restrict);
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<Interval> rangeOf(const Expr& e, const LoopScope& scope, const std::map<int, Interval>& restrict) {
  if (domainEmpty(scope, scope.size(), restrict)) return Interval{};  // no point: empty range
  return rangeIn(e, scope, scope.size(), restrict);
}

}  // namespace rtcg
