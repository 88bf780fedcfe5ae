#include "ir/Bind.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ir/Analysis.h"
#include "ir/IntOps.h"
#include "ir/Printer.h"
#include "ir/Verify.h"
#include "ir/Walk.h"

namespace rtcg {

namespace {

bool fitsType(int64_t v, ScalarType t) {
  if (isNarrowInt(t)) return false;  // i8 / u8 constants stay conversions of i32 ones (no 8-bit literals)
  if (t == ScalarType::I32) return v >= INT32_MIN && v <= INT32_MAX;
  if (t == ScalarType::U32) return v >= 0 && v <= int64_t(UINT32_MAX);
  if (t == ScalarType::Bool) return v == 0 || v == 1;
  return true;
}

bool isIntConst(const Expr& e, int64_t v) {
  return e->kind == ExprKind::IntImm && e->type != ScalarType::Bool && e->intValue == v;
}
bool isFloatConst(const Expr& e, double v) { return e->kind == ExprKind::FloatImm && e->floatValue == v; }

// Rounds a folded float result to the precision of its type, as the device would compute it.
double roundTo(double v, ScalarType t) { return roundToFloat(v, t); }

// Folds a Binary node whose operands are already simplified; nullptr if nothing applies.
Expr foldBinary(const Expr& e) {
  const Expr& a = e->operands[0];
  const Expr& b = e->operands[1];
  BinaryOp op = e->binaryOp;
  bool ia = a->kind == ExprKind::IntImm, ib = b->kind == ExprKind::IntImm;
  bool fa = a->kind == ExprKind::FloatImm, fb = b->kind == ExprKind::FloatImm;

  if (ia && ib && e->type == ScalarType::U32) {
    // u32 arithmetic is modulo 2^32 (its operands lie in [0, 2^32), where floor / and % are unsigned).
    std::optional<int64_t> r = wrappingIntArith(op, a->intValue, b->intValue);
    return r ? intImm(int64_t(uint32_t(uint64_t(*r))), e->type, e->loc) : nullptr;
  }
  if (ia && ib) {
    // An overflowing fold is left in place: the wrap-around is the program's own behavior.
    std::optional<int64_t> r = checkedIntBinary(op, a->intValue, b->intValue);
    if (r && fitsType(*r, e->type)) return intImm(*r, e->type, e->loc);
    return nullptr;
  }
  if (fa && fb) {
    double x = a->floatValue, y = b->floatValue;
    switch (op) {
      case BinaryOp::Add: return floatImm(roundTo(x + y, e->type), e->type, e->loc);
      case BinaryOp::Sub: return floatImm(roundTo(x - y, e->type), e->type, e->loc);
      case BinaryOp::Mul: return floatImm(roundTo(x * y, e->type), e->type, e->loc);
      case BinaryOp::Div: return floatImm(roundTo(x / y, e->type), e->type, e->loc);
      case BinaryOp::Mod: return nullptr;  // not defined on floats
      case BinaryOp::Lt: return boolImm(x < y, e->loc);
      case BinaryOp::Le: return boolImm(x <= y, e->loc);
      case BinaryOp::Gt: return boolImm(x > y, e->loc);
      case BinaryOp::Ge: return boolImm(x >= y, e->loc);
      case BinaryOp::Eq: return boolImm(x == y, e->loc);
      case BinaryOp::Ne: return boolImm(x != y, e->loc);
      case BinaryOp::And:
      case BinaryOp::Or: return nullptr;
    }
  }

  // Algebraic identities. For floats only the exact ones (x*1, x/1); x+0 is not exact for -0.
  if (isIntegral(e->type)) {
    switch (op) {
      case BinaryOp::Add:
        if (isIntConst(b, 0)) return a;
        if (isIntConst(a, 0)) return b;
        break;
      case BinaryOp::Sub:
        if (isIntConst(b, 0)) return a;
        break;
      case BinaryOp::Mul:
        if (isIntConst(b, 1)) return a;
        if (isIntConst(a, 1)) return b;
        if (isIntConst(a, 0) || isIntConst(b, 0)) return intImm(0, e->type, e->loc);
        break;
      case BinaryOp::Div:
        if (isIntConst(b, 1)) return a;
        break;
      case BinaryOp::Mod:
        if (isIntConst(b, 1)) return intImm(0, e->type, e->loc);
        break;
      default: break;
    }
  } else if (isFloat(e->type)) {
    if (op == BinaryOp::Mul && isFloatConst(b, 1.0)) return a;
    if (op == BinaryOp::Mul && isFloatConst(a, 1.0)) return b;
    if (op == BinaryOp::Div && isFloatConst(b, 1.0)) return a;
  } else if (op == BinaryOp::And || op == BinaryOp::Or) {
    bool isAnd = op == BinaryOp::And;
    // true && x = x, false && x = false; false || x = x, true || x = true.
    for (int side = 0; side < 2; ++side) {
      const Expr& c = e->operands[side];
      const Expr& other = e->operands[1 - side];
      if (c->kind != ExprKind::IntImm) continue;
      bool v = c->intValue != 0;
      if (v == isAnd) return other;
      return boolImm(v, e->loc);
    }
  }
  return nullptr;
}

Expr foldNode(const Expr& e) {
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var:
    case ExprKind::Load:
    case ExprKind::Reduce: return nullptr;
    case ExprKind::Unary: {
      const Expr& a = e->operands[0];
      if (e->unaryOp == UnaryOp::Not) {
        if (a->kind == ExprKind::IntImm) return boolImm(a->intValue == 0, e->loc);
        return nullptr;
      }
      if (a->kind == ExprKind::IntImm && e->type == ScalarType::U32)  // 2^32 - a, modulo 2^32
        return intImm(int64_t(uint32_t(0) - uint32_t(a->intValue)), e->type, e->loc);
      if (a->kind == ExprKind::IntImm && a->intValue != std::numeric_limits<int64_t>::min() &&
          fitsType(-a->intValue, e->type))
        return intImm(-a->intValue, e->type, e->loc);
      if (a->kind == ExprKind::FloatImm) return floatImm(-a->floatValue, e->type, e->loc);
      return nullptr;
    }
    case ExprKind::Binary: return foldBinary(e);
    case ExprKind::Call: {
      // Only exact integer functions are folded; float math is left to the device's libm.
      if (!isInteger(e->type)) return nullptr;
      for (const Expr& o : e->operands)
        if (o->kind != ExprKind::IntImm) return nullptr;
      int64_t x = e->operands[0]->intValue;
      switch (e->mathFn) {
        case MathFn::Abs:
          if (x == std::numeric_limits<int64_t>::min() || !fitsType(-x, e->type)) return nullptr;
          return intImm(x < 0 ? -x : x, e->type, e->loc);
        case MathFn::Min: return intImm(std::min(x, e->operands[1]->intValue), e->type, e->loc);
        case MathFn::Max: return intImm(std::max(x, e->operands[1]->intValue), e->type, e->loc);
        default: return nullptr;
      }
    }
    case ExprKind::Cast: {
      const Expr& a = e->operands[0];
      if (a->type == e->type) return a;
      if (a->kind == ExprKind::IntImm) {
        if (isFloat(e->type)) return floatImm(intToFloat(a->intValue, e->type), e->type, e->loc);
        if (e->type == ScalarType::Bool) return boolImm(a->intValue != 0, e->loc);
        if (e->type == ScalarType::U32) return intImm(int64_t(uint32_t(uint64_t(a->intValue))), e->type, e->loc);  // low 32 bits
        if (fitsType(a->intValue, e->type)) return intImm(a->intValue, e->type, e->loc);
        return nullptr;
      }
      if (a->kind == ExprKind::FloatImm && isFloat(e->type))
        return floatImm(roundTo(a->floatValue, e->type), e->type, e->loc);
      return nullptr;  // float -> int conversion is left to the device
    }
    case ExprKind::Select: {
      const Expr& c = e->operands[0];
      if (c->kind == ExprKind::IntImm) return e->operands[c->intValue != 0 ? 1 : 2];
      return nullptr;
    }
  }
  return nullptr;
}

Expr substituteSizes(const Expr& e, const std::vector<std::optional<int64_t>>& values) {
  Expr r = rewriteExpr(e, [&](const Expr& x) -> Expr {
    if (x->kind == ExprKind::Var && x->varKind == VarKind::Size && x->varId >= 0 &&
        x->varId < (int)values.size() && values[x->varId])
      return intImm(*values[x->varId], x->type, x->loc);
    return nullptr;
  });
  return simplify(r);
}

Loop bindLoop(const Loop& l, const std::vector<std::optional<int64_t>>& values) {
  Loop r = l;
  r.lo = substituteSizes(l.lo, values);
  r.hi = substituteSizes(l.hi, values);
  return r;
}

}  // namespace

Expr simplify(const Expr& e) { return rewriteExpr(e, foldNode); }

// The most bytes one array may span (128 TiB, far beyond any device's memory): its linear
// offsets, and the index arithmetic the emitter builds from them, then stay far from 64-bit
// overflow. f32[n, n, n] at n = 2^31 - 1 was proved in bounds with offsets past 2^93.
constexpr double kMaxArrayBytes = double(int64_t(1) << 47);

static void checkArrayBytes(const Param& p, Diagnostics& diags) {
  double bytes = typeBytes(p.type);  // in double: the product may not fit 64 bits
  for (const Expr& s : p.shape) {
    if (s->kind != ExprKind::IntImm || s->intValue <= 0) return;  // reported above
    bytes *= double(s->intValue);
  }
  if (bytes > kMaxArrayBytes)
    diags.error(p.loc, fmt::format("array '{}' spans {:.3g} bytes with these sizes; the limit is 2^47 (128 TiB)",
                                   p.name, bytes));
}

// Divisions whose divisor became the constant 0 once the sizes were bound (`i / (n - m)` with
// n = m): the frontend refuses literal zero divisors, these passed check -D.
static void checkDivisors(const Expr& e, Diagnostics& diags) {
  visitExprs(e, [&](const Expr& x) {
    if (x->kind != ExprKind::Binary || (x->binaryOp != BinaryOp::Div && x->binaryOp != BinaryOp::Mod)) return;
    const Expr& d = x->operands[1];
    if ((d->kind == ExprKind::IntImm && d->intValue == 0) || (d->kind == ExprKind::FloatImm && d->floatValue == 0.0))
      diags.error(x->loc, fmt::format("division by zero with these sizes: the divisor of '{}' is 0",
                                      x->binaryOp == BinaryOp::Div ? "/" : "%"));
  });
}

// i32 arithmetic on sizes and literals alone that left the type once the sizes were bound
// (`0..n * m` at n = m = 46341): the fold refuses it (foldBinary), and the device would compute it
// in 32 bits (undefined in C; NVRTC folded it negative) while the reference computed it in 64.
// Such an expression is an error at its operator; only the innermost one is reported.
static std::string decimal(__int128 v) {
  if (v < 0) return "-" + decimal(-v);
  std::string s;
  do s.insert(s.begin(), char('0' + int(v % 10))); while ((v /= 10) != 0);
  return s;
}

static void checkConstantOverflow(const Expr& e, Diagnostics& diags) {
  visitExprs(e, [&](const Expr& x) {
    if (!isInteger(x->type) || x->type == ScalarType::Bool) return;
    auto isConst = [&](int i) { return x->operands[i]->kind == ExprKind::IntImm; };
    __int128 value = 0;
    if (x->kind == ExprKind::Binary && !isComparison(x->binaryOp) && !isLogical(x->binaryOp) && isConst(0) &&
        isConst(1)) {
      const __int128 a = x->operands[0]->intValue, b = x->operands[1]->intValue;
      switch (x->binaryOp) {
        case BinaryOp::Add: value = a + b; break;
        case BinaryOp::Sub: value = a - b; break;
        case BinaryOp::Mul: value = a * b; break;
        default:  // floor / and %: only INT64_MIN / -1 leaves 64 bits; a zero divisor is checkDivisors'
          if (b == 0) return;
          value = -a;
      }
    } else if ((x->kind == ExprKind::Unary && x->unaryOp == UnaryOp::Neg) ||
               (x->kind == ExprKind::Call && x->mathFn == MathFn::Abs)) {
      if (!isConst(0)) return;
      value = -__int128(x->operands[0]->intValue);
    } else {
      return;
    }
    diags.error(x->loc, fmt::format("'{}' is {} with these sizes, which does not fit in {} (sizes, loop indices and "
                                    "the integer arithmetic on them are {}: a bound or an index must not overflow)",
                                    printExpr(x, nullptr), decimal(value), typeName(x->type), typeName(x->type)));
  });
}

// Loop indices are i32: each loop's bounds, over the values of the loops around it, must stay in
// i32 (`j in 0..i + n` at n = 2^31 - 1 would run j past it). Reduction loops are checked with
// the nest's loops and the enclosing reductions' in scope; ranges that read arrays are data.
static void checkLoopRanges(const std::vector<Loop>& loops, LoopScope& scope, Diagnostics& diags);

static void checkReductionRanges(const Expr& e, LoopScope& scope, Diagnostics& diags) {
  if (!e) return;
  if (e->kind == ExprKind::Reduce) {
    const size_t depth = scope.size();
    checkLoopRanges(e->loops, scope, diags);
    for (const Expr& o : e->operands) checkReductionRanges(o, scope, diags);
    scope.resize(depth);
    return;
  }
  for (const Expr& o : e->operands) checkReductionRanges(o, scope, diags);
}

static void checkLoopRanges(const std::vector<Loop>& loops, LoopScope& scope, Diagnostics& diags) {
  for (const Loop& l : loops) {
    for (const Expr& bound : {l.lo, l.hi}) {
      checkReductionRanges(bound, scope, diags);
      if (isRangeRead(bound)) continue;
      std::optional<Interval> r = rangeOf(bound, scope);
      if (r && !r->empty() && (r->lo < INT32_MIN || r->hi > INT32_MAX))
        diags.error(bound->loc, fmt::format("the bound '{}' of '{}' reaches {} with these sizes, beyond i32 (loop "
                                            "indices are i32)",
                                            printExpr(bound, nullptr), l.name, r->hi > INT32_MAX ? r->hi : r->lo));
    }
    scope.push_back(&l);
  }
}

std::optional<Kernel> bindSizes(const Kernel& k, const SizeBindings& sizes, Diagnostics& diags) {
  int errorsBefore = diags.errorCount();
  std::vector<std::string> sizeNames;
  for (const Param& p : k.params)
    if (p.kind == ParamKind::Size) sizeNames.push_back(p.name);

  for (const auto& [name, value] : sizes) {
    int idx = k.findParam(name);
    if (idx >= 0 && k.params[idx].kind == ParamKind::Size) continue;
    std::string known = sizeNames.empty()
                            ? "it has no size parameters"
                            : fmt::format("its size parameters are: {}", fmt::join(sizeNames, ", "));
    if (idx >= 0)
      diags.error({}, fmt::format("'{}' is not a size parameter of kernel '{}' but a {} parameter ({})",
                                  name, k.name, k.params[idx].isArray() ? "array" : "scalar", known));
    else
      diags.error({}, fmt::format("'{}' is not a size parameter of kernel '{}' ({})", name, k.name, known));
  }

  std::vector<std::optional<int64_t>> values(k.params.size());
  for (size_t i = 0; i < k.params.size(); ++i) {
    const Param& p = k.params[i];
    if (p.kind != ParamKind::Size) continue;
    auto it = sizes.find(p.name);
    if (it == sizes.end()) {
      diags.error(p.loc, fmt::format("size parameter '{}' is not bound; pass -D {}=VALUE", p.name, p.name));
      continue;
    }
    if (it->second < INT32_MIN || it->second > INT32_MAX) {
      diags.error(p.loc, fmt::format("size parameter '{}' = {} does not fit in i32 (size parameters "
                                     "are 32-bit integers)",
                                     p.name, it->second));
      continue;
    }
    values[i] = it->second;
  }
  if (diags.errorCount() != errorsBefore) return std::nullopt;

  Kernel r = k;
  for (Param& p : r.params) {
    if (p.kind == ParamKind::Size) r.sizes[p.name] = sizes.at(p.name);
    if (!p.isArray()) continue;
    for (size_t d = 0; d < p.shape.size(); ++d) {
      Expr orig = p.shape[d];
      p.shape[d] = substituteSizes(orig, values);
      const Expr& s = p.shape[d];
      if (s->kind != ExprKind::IntImm)
        diags.error(p.loc, fmt::format("extent {} of array '{}' ({}) is not a constant in i32 once the "
                                       "sizes are bound",
                                       d, p.name, printExpr(orig, &k)));
      else if (s->intValue <= 0)
        diags.error(p.loc, fmt::format("extent {} of array '{}' ({}) is {}; array extents must be positive",
                                       d, p.name, printExpr(orig, &k), s->intValue));
    }
    checkArrayBytes(p, diags);
  }
  for (LoopNest& n : r.nests) {
    for (Loop& l : n.loops) {
      l = bindLoop(l, values);
      checkDivisors(l.lo, diags);
      checkDivisors(l.hi, diags);
    }
    for (Stmt& s : n.body) {
      for (Expr& i : s.indices) checkDivisors(i = substituteSizes(i, values), diags);
      checkDivisors(s.value = substituteSizes(s.value, values), diags);
    }
  }
  if (diags.errorCount() != errorsBefore) return std::nullopt;
  for (const LoopNest& n : r.nests) {
    for (const Loop& l : n.loops) checkConstantOverflow(l.lo, diags), checkConstantOverflow(l.hi, diags);
    for (const Stmt& s : n.body) {
      for (const Expr& i : s.indices) checkConstantOverflow(i, diags);
      checkConstantOverflow(s.value, diags);
    }
  }
  if (diags.errorCount() != errorsBefore) return std::nullopt;
  for (const LoopNest& n : r.nests) {
    LoopScope scope;
    checkLoopRanges(n.loops, scope, diags);
    for (const Stmt& s : n.body) {
      for (const Expr& i : s.indices) checkReductionRanges(i, scope, diags);
      checkReductionRanges(s.value, scope, diags);
    }
  }
  if (diags.errorCount() != errorsBefore) return std::nullopt;
  checkKernel(r, "bindSizes");
  return r;
}

}  // namespace rtcg
