// Lowering of IR expressions and array accesses to C expressions, in an environment that maps
// the IR's variables to C names and may serve loads from shared tiles or hoisted values.
#include <fmt/format.h>

#include <functional>
#include <utility>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// Whether integer `e` is never negative in the nest (C's / and % then have floor semantics).
bool nonNegative(const EmitContext& ctx, const Expr& e) {
  auto r = rangeOfInt(e, ctx.k, ctx.facts.ranges);
  return r && r->lo >= 0;
}

C::ExprP lowerReduction(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out);

// A binary operator on lowered operands: integer / and % with floor semantics (C's truncating
// operators where both sides are non-negative, else the floor helpers), float % as fmod.
C::ExprP lowerBinary(EmitContext& ctx, const Expr& e, const C::ExprP& a, const C::ExprP& b) {
  ScalarType t = e->operands[0]->type;
  if ((e->binaryOp == BinaryOp::Div || e->binaryOp == BinaryOp::Mod) && isInteger(t)) {
    // Floor semantics: C's truncating / and % agree when both sides are non-negative.
    if (nonNegative(ctx, e->operands[0]) && nonNegative(ctx, e->operands[1]))
      return C::binary(opSymbol(e->binaryOp), a, b);
    (t == ScalarType::I64 ? ctx.needs.floorLL : ctx.needs.floorInt) |= e->binaryOp == BinaryOp::Div ? 1 : 2;
    return C::call(e->binaryOp == BinaryOp::Div ? "rtcg_floordiv" : "rtcg_floormod", {a, b});
  }
  if (e->binaryOp == BinaryOp::Mod && isFloat(t)) return C::call(t == ScalarType::F32 ? "fmodf" : "fmod", {a, b});
  return C::binary(opSymbol(e->binaryOp), a, b);
}

// A math function on lowered arguments: the float function of the type; min, max and abs of
// integers natively; other functions of integers computed in double and converted back.
C::ExprP lowerCall(const Expr& e, std::vector<C::ExprP> args) {
  ScalarType t = e->operands[0]->type;
  if (isFloat(t)) return C::call(mathName(e->mathFn, t), args);
  if (e->mathFn == MathFn::Min || e->mathFn == MathFn::Max)
    return C::call(e->mathFn == MathFn::Min ? "min" : "max", args);
  if (e->mathFn == MathFn::Abs && isUnsigned(t)) return args[0];  // every u32 is its own absolute value
  if (e->mathFn == MathFn::Abs) return C::call(t == ScalarType::I64 ? "llabs" : "abs", args);
  for (auto& a : args) a = C::castTo("double", a);
  return C::castTo(cudaTypeName(e->type), C::call(mathName(e->mathFn, ScalarType::F64), args));
}

}  // namespace

const StageRef* findStaged(const EmitContext& ctx, const Env& env, int array, const std::vector<Expr>& indices) {
  // Tiles of the array sort together, the whole array's ("") first.
  auto it = env.staged.lower_bound({array, ""});
  if (it == env.staged.end() || it->first.first != array) return nullptr;
  if (it->first.second.empty()) return &it->second;
  auto own = env.staged.find({array, accessKey(ctx.k, indices)});
  return own == env.staged.end() ? nullptr : &own->second;
}

C::ExprP lowerAccess(EmitContext& ctx, int array, const std::vector<Expr>& indices, Env& env, std::vector<C::Stmt>& out) {
  const Param& p = ctx.k.params[array];
  RTCG_ASSERT(p.shape.size() == indices.size(), "access rank differs from the array's");
  if (C::ExprP kept = ctx.kept.empty() ? nullptr : keptRead(ctx, array, indices, env)) return kept;  // `keep:`
  if (const StageRef* staged = findStaged(ctx, env, array, indices)) {
    // Served from the shared tile: (index - origin) * pitch per dimension.
    const StageRef& ref = *staged;
    std::vector<C::ExprP> terms{ref.offset};
    for (size_t d = 0; d < indices.size(); ++d) {
      C::ExprP e = lower(ctx, indices[d], env, out);
      if (ref.clampTo[d] > 0) e = C::call("min", {C::call("max", {e, lit(0)}), lit(ref.clampTo[d] - 1)});
      const C::ExprP& o = ref.origins[d];
      bool zero = o->kind == C::ExprKind::IntLit && o->intValue == 0;
      terms.push_back(C::product(zero ? e : C::binary("-", e, o), lit(ref.pitch[d])));
    }
    return C::index(C::name(ref.storage), C::sum(terms));
  }
  if (auto rows = ctx.rowStorage.find(array); rows != ctx.rowStorage.end())  // the block's rows, in shared memory
    return C::index(C::name(rows->second), C::binary("-", lower(ctx, indices[0], env, out), ctx.rowBase));
  C::ExprP flat;
  for (size_t d = 0; d < indices.size(); ++d) {
    C::ExprP e = lower(ctx, indices[d], env, out);
    if (d == 0) {
      flat = ctx.idx == "long long" && indices.size() > 1 ? C::castTo("long long", e) : e;
      continue;
    }
    auto extent = constIntValue(p.shape[d], ctx.k);
    RTCG_ASSERT(extent.has_value(), "array extent of a bound kernel is not constant");
    flat = C::sum({C::product(flat, lit(*extent)), e});
  }
  if (!flat) flat = lit(0);  // a zero-dimensional array has one element
  return C::index(C::name(ctx.paramNames[array]), flat);
}

namespace {

// A comparison, a conversion to an integer or bool, or floor, of float operands: where a value one
// rounding apart may give another result (EmitContext::exactProducts).
bool reachesDiscontinuity(const Expr& e) {
  if (e->operands.empty() || !isFloat(e->operands[0]->type)) return false;
  return (e->kind == ExprKind::Binary && isComparison(e->binaryOp)) || (e->kind == ExprKind::Cast && !isFloat(e->type)) ||
         (e->kind == ExprKind::Call && e->mathFn == MathFn::Floor);
}

C::ExprP lowerNode(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out);

}  // namespace

std::set<int> lowerLetsExactly(const LoopNest& nest) {
  std::set<int> lets;
  std::function<void(const Expr&, bool)> walk = [&](const Expr& x, bool under) {
    under = under || reachesDiscontinuity(x);
    if (under && x->kind == ExprKind::Var && x->varKind == VarKind::Let) lets.insert(x->varId);
    forEachChild(x, [&](const Expr& c) { walk(c, under); });
  };
  for (size_t i = nest.body.size(); i-- > 0;) {  // a let's uses follow it: see them first
    const Stmt& s = nest.body[i];
    for (const Expr& x : s.indices) walk(x, false);
    walk(s.value, s.kind == StmtKind::Let && lets.count(s.letId));
  }
  return lets;
}

C::ExprP lower(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out) {
  if (!reachesDiscontinuity(e)) return lowerNode(ctx, e, env, out);
  struct Exact {
    int& depth;
    explicit Exact(int& d) : depth(++d) {}
    ~Exact() { --depth; }
  } exact(ctx.exactProducts);
  return lowerNode(ctx, e, env, out);
}

namespace {

C::ExprP lowerNode(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out) {
  auto op = [&](int i) { return lower(ctx, e->operands[i], env, out); };
  if (e->kind != ExprKind::Load && e->kind != ExprKind::Reduce && !env.hoisted.empty()) {
    auto it = env.hoisted.find(e.get());  // computed once ahead (a per-batch constant of the mma epilogue)
    if (it != env.hoisted.end()) return it->second;
  }
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return literalOf(e->type, e->intValue, e->floatValue);
    case ExprKind::Var:
      switch (e->varKind) {
        case VarKind::Size:
        case VarKind::Scalar:
          RTCG_ASSERT(e->varId >= 0 && e->varId < (int)ctx.paramNames.size(), "bad parameter id");
          return C::name(ctx.paramNames[e->varId]);
        case VarKind::Index:
        case VarKind::Let: {
          auto it = env.vars.find(e->varId);
          RTCG_ASSERT(it != env.vars.end(), "variable '" + e->name + "' used outside its scope");
          return it->second;
        }
      }
      RTCG_ASSERT(false, "bad VarKind");
    case ExprKind::Load: {
      auto it = env.hoisted.find(e.get());  // loaded ahead of the reductions (`loads: early`)
      if (it != env.hoisted.end()) return it->second;
      return lowerAccess(ctx, e->array, e->operands, env, out);
    }
    case ExprKind::Unary:
      // u32 negation is 2^32 - x modulo 2^32: written as the subtraction, which C defines so for unsigned int.
      if (e->unaryOp == UnaryOp::Neg && isUnsigned(e->type)) return C::binary("-", C::uintLit(0), op(0));
      return C::unary(e->unaryOp == UnaryOp::Neg ? "-" : "!", op(0));
    case ExprKind::Binary: {
      C::ExprP a = op(0), b = op(1);
      if (ctx.exactProducts > 0 && e->binaryOp == BinaryOp::Mul && isFloat(e->type) && !isHalf(e->type))
        return C::call(e->type == ScalarType::F32 ? "__fmul_rn" : "__dmul_rn", {a, b});
      if (e->binaryOp == BinaryOp::Mod && e->operands[0]->type == ScalarType::I32) {
        auto magic = env.divisorMagic.find(e->operands[1].get());  // a divisor computed once, with its multiplier
        if (magic != env.divisorMagic.end()) {
          ctx.needs.floorInt |= 4;  // with rtcg_floormod, its fallback
          return C::call("rtcg_floormod_by", {a, b, magic->second});
        }
      }
      return lowerBinary(ctx, e, a, b);
    }
    case ExprKind::Call: {
      std::vector<C::ExprP> args;
      for (size_t i = 0; i < e->operands.size(); ++i) args.push_back(op((int)i));
      return lowerCall(e, std::move(args));
    }
    case ExprKind::Cast: return convert(e->type, e->operands[0]->type, op(0));
    case ExprKind::Select: return C::ternary(op(0), op(1), op(2));
    case ExprKind::Reduce: {
      auto it = env.hoisted.find(e.get());
      if (it != env.hoisted.end()) return it->second;
      return lowerReduction(ctx, e, env, out);
    }
  }
  RTCG_ASSERT(false, "bad ExprKind");
}

// A reduction computed where it is used: an accumulator and its loops.
C::ExprP lowerReduction(EmitContext& ctx, const Expr& e, Env& env, std::vector<C::Stmt>& out) {
  std::string acc = ctx.names.fresh(fmt::format("{}_{}", reduceName(e->reduceOp), e->loops.front().name));
  out.push_back(C::decl(cudaTypeName(e->type), acc, reductionIdentity(e->reduceOp, e->type), false));
  // A reduction's terms contract as in any accumulation (the reference sums them exactly), even
  // where its result reaches a comparison.
  const int exact = std::exchange(ctx.exactProducts, 0);
  emitReductionLoops(ctx, e->loops, 0, env, out, [&](Env& inner, std::vector<C::Stmt>& body) {
    C::ExprP v = lower(ctx, e->operands[0], inner, body);
    body.push_back(combine(e->reduceOp, e->type, C::name(acc), v));
  });
  ctx.exactProducts = exact;
  return C::name(acc);
}

}  // namespace

}  // namespace rtcg::emit
