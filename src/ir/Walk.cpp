#include "ir/Walk.h"

#include "ir/Analysis.h"
#include "support/Error.h"

namespace rtcg {

Expr rewriteExpr(const Expr& e, const std::function<Expr(const Expr&)>& f) {
  bool changed = false;
  std::vector<Expr> ops;
  ops.reserve(e->operands.size());
  for (const Expr& o : e->operands) {
    ops.push_back(rewriteExpr(o, f));
    changed |= ops.back() != o;
  }
  std::vector<Loop> loops = e->loops;
  for (Loop& l : loops) {
    Expr lo = rewriteExpr(l.lo, f), hi = rewriteExpr(l.hi, f);
    changed |= lo != l.lo || hi != l.hi;
    l.lo = lo;
    l.hi = hi;
  }
  Expr cur = changed ? withOperands(e, std::move(ops), std::move(loops)) : e;
  Expr repl = f(cur);
  return repl ? repl : cur;
}

bool containsLoad(const Expr& e) {
  return anyExpr(e, [](const Expr& x) { return x->kind == ExprKind::Load; });
}

Expr inlineLets(const Expr& e, const std::map<int, Expr>& lets) {
  return rewriteExpr(e, [&](const Expr& x) -> Expr {
    if (x->kind != ExprKind::Var || x->varKind != VarKind::Let) return nullptr;
    auto it = lets.find(x->varId);
    return it == lets.end() ? nullptr : it->second;  // definitions are already inlined
  });
}

bool sameExpr(const Expr& a, const Expr& b) {
  if (a == b) return true;
  if (a->kind != b->kind || a->type != b->type || a->operands.size() != b->operands.size() ||
      a->loops.size() != b->loops.size())
    return false;
  switch (a->kind) {
    case ExprKind::IntImm:
      if (a->intValue != b->intValue) return false;
      break;
    case ExprKind::FloatImm:
      if (a->floatValue != b->floatValue) return false;
      break;
    case ExprKind::Var:
      if (a->varKind != b->varKind || a->varId != b->varId) return false;
      break;
    case ExprKind::Load:
      if (a->array != b->array) return false;
      break;
    case ExprKind::Unary:
      if (a->unaryOp != b->unaryOp) return false;
      break;
    case ExprKind::Binary:
      if (a->binaryOp != b->binaryOp) return false;
      break;
    case ExprKind::Call:
      if (a->mathFn != b->mathFn) return false;
      break;
    case ExprKind::Cast:
    case ExprKind::Select: break;
    case ExprKind::Reduce:
      if (a->reduceOp != b->reduceOp) return false;
      for (size_t i = 0; i < a->loops.size(); ++i)
        if (a->loops[i].id != b->loops[i].id || !sameExpr(a->loops[i].lo, b->loops[i].lo) ||
            !sameExpr(a->loops[i].hi, b->loops[i].hi))
          return false;
      break;
  }
  for (size_t i = 0; i < a->operands.size(); ++i)
    if (!sameExpr(a->operands[i], b->operands[i])) return false;
  return true;
}

Expr affineToExpr(const AffineForm& f) {
  Expr e = intImm(f.constant, ScalarType::I64);
  for (const auto& [id, c] : f.coeffs)
    e = binary(BinaryOp::Add, e,
               binary(BinaryOp::Mul, intImm(c, ScalarType::I64),
                      var(VarKind::Index, id, "", ScalarType::I64)));
  return e;
}

std::optional<int64_t> evalInt(const Expr& e, const std::map<int, int64_t>& env) {
  auto arg = [&](size_t i) { return evalInt(e->operands[i], env); };
  switch (e->kind) {
    case ExprKind::IntImm: return e->intValue;
    case ExprKind::Var: {
      if (e->varKind != VarKind::Index) return std::nullopt;
      auto it = env.find(e->varId);
      if (it == env.end()) return std::nullopt;
      return it->second;
    }
    case ExprKind::Unary: {
      auto a = arg(0);
      if (!a) return std::nullopt;
      if (e->unaryOp == UnaryOp::Not) return (int64_t)(*a == 0);
      if (*a == INT64_MIN) return std::nullopt;
      return -*a;
    }
    case ExprKind::Binary: {
      auto a = arg(0), b = arg(1);
      if (!a || !b) return std::nullopt;
      return checkedIntBinary(e->binaryOp, *a, *b);
    }
    case ExprKind::Call: {
      if (e->mathFn != MathFn::Min && e->mathFn != MathFn::Max && e->mathFn != MathFn::Abs)
        return std::nullopt;
      if (isFloat(e->type)) return std::nullopt;
      auto a = arg(0);
      if (!a) return std::nullopt;
      if (e->mathFn == MathFn::Abs) return *a < 0 ? -*a : *a;
      auto b = arg(1);
      if (!b) return std::nullopt;
      return e->mathFn == MathFn::Min ? std::min(*a, *b) : std::max(*a, *b);
    }
    case ExprKind::Cast:
      if (isFloat(e->type) || isFloat(e->operands[0]->type)) return std::nullopt;
      return arg(0);
    case ExprKind::Select: {
      auto c = arg(0);
      if (!c) return std::nullopt;
      return arg(*c ? 1 : 2);
    }
    case ExprKind::FloatImm:
    case ExprKind::Load:
    case ExprKind::Reduce: return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace rtcg
