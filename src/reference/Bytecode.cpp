// Compilation of a bound kernel to the reference register machine (Bytecode.h).
#include "reference/Bytecode.h"

#include <bit>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reference/HostArgs.h"
#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/IntOps.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::refvm {
namespace {

// The load and the store of an array's element type: floats in the reference's double arrays,
// integers at their own width (stores wrap to it).
Op loadOp(ScalarType t) {
  if (isFloat(t)) return Op::LoadF;
  switch (t) {
    case ScalarType::I32: return Op::LoadI32;
    case ScalarType::I8: return Op::LoadI8;
    case ScalarType::U8: return Op::LoadU8;
    case ScalarType::U32: return Op::LoadU32;
    default: return Op::LoadI64;
  }
}
Op storeOp(ScalarType t) {
  if (isFloat(t)) return Op::StoreF;
  switch (t) {
    case ScalarType::I32: return Op::StoreI32;
    case ScalarType::I8: return Op::StoreI8;
    case ScalarType::U8: return Op::StoreU8;
    case ScalarType::U32: return Op::StoreU32;
    default: return Op::StoreI64;
  }
}

class Compiler {
 public:
  Compiler(const Kernel& k, CompiledKernel& out) : k_(k), out_(out) {}

  void compile() {
    out_.kernelName = k_.name;
    out_.shapes.resize(k_.params.size());
    out_.signatureParams = int(k_.numSignatureParams());
    for (const Param& p : k_.params) {
      out_.paramNames.push_back(p.name);
      out_.types.push_back(p.type);
      out_.written.push_back(p.isWritten());
    }
    for (size_t p = 0; p < k_.params.size(); ++p)
      if (k_.params[p].isArray()) out_.shapes[p] = hostArrayShape(k_, int(p));
    for (const LoopNest& nest : k_.nests) out_.nests.push_back(compileNest(nest));
  }

 private:
  [[noreturn]] void fail(SourceLoc loc, const std::string& msg) const {
    if (loc.valid()) throw Error(fmt::format("kernel '{}', line {}:{}: {}", k_.name, loc.line, loc.col, msg));
    throw Error(fmt::format("kernel '{}': {}", k_.name, msg));
  }

  int32_t newReg() {
    out_.frameTemplate.push_back(Slot{.i = 0});
    return int32_t(out_.frameTemplate.size() - 1);
  }
  int32_t constInt(int64_t v) {
    auto [it, fresh] = intConsts_.try_emplace(v, -1);
    if (fresh) {
      it->second = newReg();
      out_.frameTemplate[it->second].i = v;
    }
    return it->second;
  }
  int32_t constFloat(double v) {
    auto [it, fresh] = floatConsts_.try_emplace(std::bit_cast<uint64_t>(v), -1);
    if (fresh) {
      it->second = newReg();
      out_.frameTemplate[it->second].f = v;
    }
    return it->second;
  }
  static void emit(Code& c, Op op, int32_t dst = 0, int32_t a = 0, int32_t b = 0, int32_t cc = 0) {
    c.instrs.push_back(Instr{op, dst, a, b, cc});
  }
  static int32_t here(const Code& c) { return int32_t(c.instrs.size()); }
  int32_t opLoc(SourceLoc loc) {
    out_.opLocs.push_back(loc.valid() ? loc : stmtLoc_);
    return int32_t(out_.opLocs.size() - 1);
  }

  int64_t sizeValue(const Expr& e) const {
    const std::string& name =
        e->varId >= 0 && e->varId < int(k_.params.size()) ? k_.params[e->varId].name : e->name;
    auto it = k_.sizes.find(name);
    if (it == k_.sizes.end()) fail(e->loc, fmt::format("size parameter '{}' is not bound", name));
    return it->second;
  }

  // The value of an integer subtree made of literals and size parameters only.
  std::optional<int64_t> constValue(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return e->intValue;
      case ExprKind::Var:
        if (e->varKind == VarKind::Size) return sizeValue(e);
        return std::nullopt;
      case ExprKind::Binary: {
        if (!isInteger(e->type)) return std::nullopt;
        auto a = constValue(e->operands[0]), b = constValue(e->operands[1]);
        if (!a || !b) return std::nullopt;
        return wrappingIntArith(e->binaryOp, *a, *b);
      }
      default: return std::nullopt;
    }
  }

  // Adds scale * e to `sum`, looking through + - * by constants and negation; any other subtree
  // becomes a term of its own register.
  void flatten(const Expr& e, int64_t scale, AffineSum& sum, Code& code) {
    if (auto c = constValue(e)) {
      sum.constant = wrapAdd(sum.constant, wrapMul(scale, *c));
      return;
    }
    if (e->kind == ExprKind::Binary && isInteger(e->type)) {
      const Expr &a = e->operands[0], &b = e->operands[1];
      switch (e->binaryOp) {
        case BinaryOp::Add: flatten(a, scale, sum, code); flatten(b, scale, sum, code); return;
        case BinaryOp::Sub: flatten(a, scale, sum, code); flatten(b, wrapSub(0, scale), sum, code); return;
        case BinaryOp::Mul:
          if (auto ca = constValue(a)) return flatten(b, wrapMul(scale, *ca), sum, code);
          if (auto cb = constValue(b)) return flatten(a, wrapMul(scale, *cb), sum, code);
          {
            // A product of two variables is a term of its own (expr() would come back here).
            int32_t ra = expr(a, code), rb = expr(b, code), dst = newReg();
            emit(code, Op::IMul, dst, ra, rb);
            return addTerm(scale, dst, sum);
          }
        default: break;
      }
    } else if (e->kind == ExprKind::Unary && e->unaryOp == UnaryOp::Neg && isInteger(e->type)) {
      return flatten(e->operands[0], wrapSub(0, scale), sum, code);
    } else if (e->kind == ExprKind::Cast && e->type == ScalarType::I64 && isInteger(e->operands[0]->type)) {
      return flatten(e->operands[0], scale, sum, code);  // widening: value unchanged
    }
    addTerm(scale, expr(e, code), sum);
  }

  void addTerm(int64_t scale, int32_t r, AffineSum& sum) {
    for (auto& [coeff, reg] : sum.terms)
      if (reg == r) {
        coeff = wrapAdd(coeff, scale);
        return;
      }
    sum.terms.push_back({scale, r});
  }

  int32_t affine(const Expr& e, Code& code) {
    AffineSum sum;
    flatten(e, 1, sum, code);
    return materialize(std::move(sum), code);
  }

  int32_t materialize(AffineSum sum, Code& code) {
    std::erase_if(sum.terms, [](const auto& t) { return t.first == 0; });
    if (sum.terms.empty()) return constInt(sum.constant);
    if (sum.terms.size() == 1 && sum.terms[0].first == 1 && sum.constant == 0) return sum.terms[0].second;
    out_.affines.push_back(std::move(sum));
    int32_t dst = newReg();
    emit(code, Op::Affine, dst, int32_t(out_.affines.size() - 1));
    return dst;
  }

  int32_t access(int array, const std::vector<Expr>& indices, bool isStore, SourceLoc loc, Code& code) {
    if (array < 0 || array >= int(k_.params.size()) || !k_.params[array].isArray())
      fail(loc, fmt::format("access to parameter #{}, which is not an array", array));
    const Param& p = k_.params[array];
    if (indices.size() != out_.shapes[array].size())
      fail(loc, fmt::format("array '{}' has {} dimensions, accessed with {} indices", p.name,
                            out_.shapes[array].size(), indices.size()));
    if (isStore && !p.isWritten()) fail(loc, fmt::format("store to array '{}', which is an `in` parameter", p.name));
    AccessSite site;
    site.array = array;
    site.extents = out_.shapes[array];
    site.loc = loc.valid() ? loc : stmtLoc_;
    site.isStore = isStore;
    site.loops = scope_;
    for (const Expr& idx : indices) {
      if (!isInteger(idx->type)) fail(idx->loc, fmt::format("index into array '{}' is not an integer", p.name));
      site.indexRegs.push_back(expr(idx, code));
    }
    out_.sites.push_back(std::move(site));
    return int32_t(out_.sites.size() - 1);
  }

  int32_t lookupVar(const Expr& e) {
    switch (e->varKind) {
      case VarKind::Index: {
        auto it = loopRegs_.find(e->varId);
        if (it == loopRegs_.end()) fail(e->loc, fmt::format("index '{}' used outside its loop", e->name));
        return it->second;
      }
      case VarKind::Let: {
        auto it = letRegs_.find(e->varId);
        if (it == letRegs_.end()) fail(e->loc, fmt::format("'{}' used before its let", e->name));
        return it->second;
      }
      case VarKind::Size: return constInt(sizeValue(e));
      case VarKind::Scalar: {
        if (e->varId < 0 || e->varId >= int(k_.params.size()) || k_.params[e->varId].kind != ParamKind::Scalar)
          fail(e->loc, fmt::format("'{}' is not a scalar parameter", e->name));
        auto [it, fresh] = scalarRegs_.try_emplace(e->varId, -1);
        if (fresh) {
          it->second = newReg();
          out_.scalarRegs.push_back({e->varId, it->second});
        }
        return it->second;
      }
    }
    RTCG_ASSERT(false, "bad VarKind");
  }

  // Evaluates the three-operand forms (select, && and ||) with branches, so a guarded load
  // (select(i < n, a[i], 0)) is never executed when its guard is false.
  int32_t select(const Expr& cond, const Expr& ifTrue, const Expr& ifFalse, Code& code) {
    int32_t dst = newReg();
    int32_t c = expr(cond, code);
    int32_t jElse = here(code);
    emit(code, Op::JumpIfZero, 0, c);
    emit(code, Op::Move, dst, expr(ifTrue, code));
    int32_t jEnd = here(code);
    emit(code, Op::Jump);
    code.instrs[jElse].c = here(code);
    emit(code, Op::Move, dst, expr(ifFalse, code));
    code.instrs[jEnd].c = here(code);
    return dst;
  }

  int32_t binary(const Expr& e, Code& code) {
    const Expr &a = e->operands[0], &b = e->operands[1];
    BinaryOp op = e->binaryOp;
    if (op == BinaryOp::And) return select(a, b, boolImm(false), code);
    if (op == BinaryOp::Or) return select(a, boolImm(true), b, code);
    bool fl = isFloat(a->type);
    const bool u32 = isUnsigned(e->type);
    if (!fl && !u32 && (op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul)) return affine(e, code);
    int32_t ra = expr(a, code), rb = expr(b, code);
    int32_t dst = newReg();
    Op o{};
    int32_t site = 0;
    switch (op) {
      case BinaryOp::Add: o = fl ? Op::FAdd : Op::IAdd; break;
      case BinaryOp::Sub: o = fl ? Op::FSub : Op::ISub; break;
      case BinaryOp::Mul: o = fl ? Op::FMul : Op::IMul; break;
      case BinaryOp::Div: o = fl ? Op::FDiv : Op::IDiv; site = fl ? 0 : opLoc(e->loc); break;
      case BinaryOp::Mod:
        if (fl) fail(e->loc, "% on floating-point values");
        o = Op::IMod;
        site = opLoc(e->loc);
        break;
      case BinaryOp::Lt: o = fl ? Op::FLt : Op::ILt; break;
      case BinaryOp::Le: o = fl ? Op::FLe : Op::ILe; break;
      case BinaryOp::Gt: o = fl ? Op::FGt : Op::IGt; break;
      case BinaryOp::Ge: o = fl ? Op::FGe : Op::IGe; break;
      case BinaryOp::Eq: o = fl ? Op::FEq : Op::IEq; break;
      case BinaryOp::Ne: o = fl ? Op::FNe : Op::INe; break;
      case BinaryOp::And:
      case BinaryOp::Or: RTCG_ASSERT(false, "logical ops handled above");
    }
    emit(code, o, dst, ra, rb, site);
    // u32 + - * wrap modulo 2^32 at every operation (/ and % of values in [0, 2^32) stay in it).
    if (u32) emit(code, Op::IWrap, dst, dst, int32_t(ScalarType::U32));
    // f32 arithmetic is IEEE f32 (docs/language.md 6.2), but for the product that forms a sum's
    // term: the device fuses it with the accumulation (FMA), and the sum is exact in double here.
    if (e->type == ScalarType::F32 && !isComparison(op) && e.get() != fusedProduct_) emit(code, Op::FToF32, dst, dst);
    return dst;
  }

  int32_t callFn(const Expr& e, Code& code) {
    MathFn fn = e->mathFn;
    if (int(e->operands.size()) != fnArity(fn))
      fail(e->loc, fmt::format("{} takes {} arguments, got {}", fnName(fn), fnArity(fn), e->operands.size()));
    std::vector<int32_t> r;
    for (const Expr& x : e->operands) r.push_back(expr(x, code));
    int32_t dst = newReg();
    bool fl = isFloat(e->operands[0]->type);
    auto one = [&](Op o) { emit(code, o, dst, r[0]); };
    auto two = [&](Op o) { emit(code, o, dst, r[0], r[1]); };
    if (fl) {
      switch (fn) {
        case MathFn::Sqrt: one(Op::FSqrt); break;
        case MathFn::Exp: one(Op::FExp); break;
        case MathFn::Log: one(Op::FLog); break;
        case MathFn::Sin: one(Op::FSin); break;
        case MathFn::Cos: one(Op::FCos); break;
        case MathFn::Abs: one(Op::FAbs); break;
        case MathFn::Floor: one(Op::FFloor); break;
        case MathFn::Min: two(Op::FMin); break;
        case MathFn::Max: two(Op::FMax); break;
        case MathFn::Pow: two(Op::FPow); break;
        case MathFn::Fma: emit(code, Op::FFma, dst, r[0], r[1], r[2]); break;
      }
      // f32 results are f32 values (min, max, abs and floor of one are already).
      if (e->type == ScalarType::F32 && fn != MathFn::Min && fn != MathFn::Max && fn != MathFn::Abs && fn != MathFn::Floor)
        emit(code, Op::FToF32, dst, dst);
      return dst;
    }
    switch (fn) {
      case MathFn::Abs: one(Op::IAbs); break;
      case MathFn::Min: two(Op::IMin); break;
      case MathFn::Max: two(Op::IMax); break;
      case MathFn::Floor: emit(code, Op::Move, dst, r[0]); break;
      case MathFn::Fma: emit(code, Op::IFma, dst, r[0], r[1], r[2]); break;
      default: fail(e->loc, fmt::format("{} of an integer value: cast it to a float type first", fnName(fn)));
    }
    if (isUnsigned(e->type) && fn == MathFn::Fma) emit(code, Op::IWrap, dst, dst, int32_t(ScalarType::U32));
    return dst;
  }

  int32_t castTo(const Expr& e, Code& code) {
    ScalarType to = e->type, from = e->operands[0]->type;
    int32_t r = expr(e->operands[0], code);
    if (to == from) return r;
    int32_t dst = newReg();
    if (isHalf(to)) {
      // Every conversion to f16 or bf16 rounds once, from the exact value (f16 <-> bf16 too).
      if (isFloat(from)) emit(code, Op::FToHalf, dst, r, int32_t(to));
      else emit(code, Op::IToHalf, dst, r, int32_t(to));
    } else if (isFloat(to)) {
      if (isFloat(from)) {
        // f32, f16 and bf16 values are carried in double; only narrowing to f32 changes the value.
        if (to == ScalarType::F64) return r;
        emit(code, Op::FToF32, dst, r);
      } else {
        emit(code, to == ScalarType::F32 ? Op::IToF32 : Op::IToF, dst, r);
      }
    } else if (to == ScalarType::Bool) {
      emit(code, isFloat(from) ? Op::FToBool : Op::ToBool, dst, r);
    } else if (isFloat(from)) {
      emit(code, Op::FToInt, dst, r, int32_t(to));
    } else if ((to == ScalarType::I32 && (from == ScalarType::I64 || from == ScalarType::U32)) ||
               ((isNarrowInt(to) || to == ScalarType::U32) && from != ScalarType::Bool)) {
      emit(code, Op::IWrap, dst, r, int32_t(to));  // the low bits, two's complement
    } else {
      return r;  // bool, i32 or u32 widened: same value
    }
    return dst;
  }

  int32_t reduction(const Expr& e, Code& code) {
    ScalarType t = e->type;
    bool fl = isFloat(t);
    double inf = std::numeric_limits<double>::infinity();
    int64_t tmin = t == ScalarType::I32 ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int64_t>::min();
    int64_t tmax = t == ScalarType::I32 ? std::numeric_limits<int32_t>::max() : std::numeric_limits<int64_t>::max();
    if (t == ScalarType::U32) tmin = 0, tmax = std::numeric_limits<uint32_t>::max();
    int32_t identity = 0;
    Op combine{};
    switch (e->reduceOp) {
      case ReduceOp::Sum: identity = fl ? constFloat(0.0) : constInt(0); combine = fl ? Op::FAdd : Op::IAdd; break;
      case ReduceOp::Product: identity = fl ? constFloat(1.0) : constInt(1); combine = fl ? Op::FMul : Op::IMul; break;
      case ReduceOp::Max: identity = fl ? constFloat(-inf) : constInt(tmin); combine = fl ? Op::FMax : Op::IMax; break;
      case ReduceOp::Min: identity = fl ? constFloat(inf) : constInt(tmax); combine = fl ? Op::FMin : Op::IMin; break;
    }
    if (t == ScalarType::Bool) fail(e->loc, fmt::format("{} over bool values", reduceName(e->reduceOp)));
    int32_t acc = newReg();
    int dot = tryDot(e, acc, code);
    emit(code, Op::Move, acc, identity);
    auto loops = openLoops(e->loops, code, e);
    // A float sum accumulates in double, in loop order: more exact than any order of the device's,
    // with which it is compared under a tolerance. Its term's top product is not rounded (binary).
    const ExprNode* outerFused = fusedProduct_;
    const Expr& term = e->operands[0];
    fusedProduct_ = e->reduceOp == ReduceOp::Sum && term->kind == ExprKind::Binary && term->binaryOp == BinaryOp::Mul
                        ? term.get()
                        : nullptr;
    int32_t v = expr(term, code);
    fusedProduct_ = outerFused;
    emit(code, combine, acc, acc, v);
    closeLoops(loops, code);
    if (dot >= 0) out_.dots[dot].skipPc = here(code);
    // A u32 sum or product is taken modulo 2^32 once, at the end (the same value as at every step).
    if (t == ScalarType::U32) emit(code, Op::IWrap, acc, acc, int32_t(ScalarType::U32));
    return acc;
  }

  // --- The fast path for sum(v in lo..hi, a[...] * b[...]) with indices linear in v --------------

  static bool mentions(const Expr& e, int loopId) {
    return anyExpr(e, [&](const Expr& x) {
      return x->kind == ExprKind::Var && x->varKind == VarKind::Index && x->varId == loopId;
    });
  }
  // Integer expressions that can be evaluated before the loop without any possible error.
  bool safeInvariant(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return isInteger(e->type);
      case ExprKind::Var: return isInteger(e->type);
      case ExprKind::Unary: return e->unaryOp == UnaryOp::Neg && safeInvariant(e->operands[0]);
      case ExprKind::Cast: return isInteger(e->type) && isInteger(e->operands[0]->type) && safeInvariant(e->operands[0]);
      case ExprKind::Binary:
        if (!isInteger(e->type)) return false;
        switch (e->binaryOp) {
          case BinaryOp::Add:
          case BinaryOp::Sub:
          case BinaryOp::Mul: return safeInvariant(e->operands[0]) && safeInvariant(e->operands[1]);
          case BinaryOp::Div:
          case BinaryOp::Mod: {
            auto c = constValue(e->operands[1]);
            return c && *c != 0 && safeInvariant(e->operands[0]);
          }
          default: return false;
        }
      default: return false;
    }
  }
  bool linearIn(const Expr& e, int loopId) const {
    if (!mentions(e, loopId)) return safeInvariant(e);
    switch (e->kind) {
      case ExprKind::Var: return true;  // the loop index itself
      case ExprKind::Unary: return e->unaryOp == UnaryOp::Neg && linearIn(e->operands[0], loopId);
      case ExprKind::Cast:
        return e->type == ScalarType::I64 && isInteger(e->operands[0]->type) && linearIn(e->operands[0], loopId);
      case ExprKind::Binary:
        if (!isInteger(e->type)) return false;
        if (e->binaryOp == BinaryOp::Add || e->binaryOp == BinaryOp::Sub)
          return linearIn(e->operands[0], loopId) && linearIn(e->operands[1], loopId);
        if (e->binaryOp == BinaryOp::Mul)
          return (constValue(e->operands[0]) && linearIn(e->operands[1], loopId)) ||
                 (constValue(e->operands[1]) && linearIn(e->operands[0], loopId));
        return false;
      default: return false;
    }
  }
  // Splits scale * e (linearIn) into coeff * v + sum, emitting the code of sum's terms.
  void splitLinear(const Expr& e, int64_t scale, int loopId, AffineSum& sum, int64_t& coeff, Code& code) {
    if (!mentions(e, loopId)) return flatten(e, scale, sum, code);
    switch (e->kind) {
      case ExprKind::Var: coeff = wrapAdd(coeff, scale); return;
      case ExprKind::Unary: return splitLinear(e->operands[0], wrapSub(0, scale), loopId, sum, coeff, code);
      case ExprKind::Cast: return splitLinear(e->operands[0], scale, loopId, sum, coeff, code);
      case ExprKind::Binary: {
        const Expr &a = e->operands[0], &b = e->operands[1];
        if (e->binaryOp == BinaryOp::Mul) {
          if (auto ca = constValue(a); ca && mentions(b, loopId)) return splitLinear(b, wrapMul(scale, *ca), loopId, sum, coeff, code);
          return splitLinear(a, wrapMul(scale, *constValue(b)), loopId, sum, coeff, code);
        }
        splitLinear(a, scale, loopId, sum, coeff, code);
        splitLinear(b, e->binaryOp == BinaryOp::Sub ? wrapSub(0, scale) : scale, loopId, sum, coeff, code);
        return;
      }
      default: RTCG_ASSERT(false, "splitLinear of a non-linear expression");
    }
  }

  // Emits a DotF for a float sum of one load or a product of two loads whose indices are linear
  // in the single reduction index; returns its index in out_.dots, or -1.
  int tryDot(const Expr& e, int32_t acc, Code& code) {
    if (e->reduceOp != ReduceOp::Sum || e->loops.size() != 1 || !isFloat(e->type)) return -1;
    const Expr& body = e->operands[0];
    std::vector<Expr> leaves;
    if (body->kind == ExprKind::Load) leaves = {body};
    else if (body->kind == ExprKind::Binary && body->binaryOp == BinaryOp::Mul &&
             body->operands[0]->kind == ExprKind::Load && body->operands[1]->kind == ExprKind::Load)
      leaves = {body->operands[0], body->operands[1]};
    else return -1;
    const Loop& l = e->loops[0];
    if (!safeInvariant(l.lo) || !safeInvariant(l.hi) || loopRegs_.count(l.id)) return -1;
    for (const Expr& leaf : leaves) {
      if (leaf->array < 0 || leaf->array >= int(k_.params.size()) || !k_.params[leaf->array].isArray() ||
          !isFloat(k_.params[leaf->array].type) || isHalf(k_.params[leaf->array].type) || leaf->operands.size() != out_.shapes[leaf->array].size())
        return -1;
      for (const Expr& idx : leaf->operands)
        if (!isInteger(idx->type) || !linearIn(idx, l.id)) return -1;
    }
    DotSum dot;
    dot.lo = expr(l.lo, code);
    dot.hi = expr(l.hi, code);
    for (const Expr& leaf : leaves) {
      DotOperand op;
      op.array = leaf->array;
      op.extents = out_.shapes[leaf->array];
      for (const Expr& idx : leaf->operands) {
        AffineSum sum;
        int64_t coeff = 0;
        splitLinear(idx, 1, l.id, sum, coeff, code);
        op.baseRegs.push_back(materialize(std::move(sum), code));
        op.coeffs.push_back(coeff);
      }
      dot.operands.push_back(std::move(op));
    }
    out_.dots.push_back(std::move(dot));
    int index = int(out_.dots.size() - 1);
    emit(code, Op::DotF, acc, index);
    return index;
  }

  struct OpenLoop {
    int id;
    int32_t var, hi, initPc, bodyPc;
  };
  // `reduce`: the reduction whose loops these are (null for a nest's), for its data-dependent ranges.
  std::vector<OpenLoop> openLoops(const std::vector<Loop>& loops, Code& code, const Expr& reduce = nullptr) {
    std::vector<OpenLoop> open;
    for (const Loop& l : loops) {
      if (!isInteger(l.lo->type) || !isInteger(l.hi->type)) fail(l.loc, fmt::format("bounds of loop '{}' are not integers", l.name));
      int32_t lo = expr(l.lo, code), hi = expr(l.hi, code);
      if (reduce && isDataDependent(l)) checkRange(reduce, l, lo, hi, code);
      int32_t v = enterLoop(l);
      int32_t init = here(code);
      emit(code, Op::ForInit, v, lo, hi);
      open.push_back({l.id, v, hi, init, here(code)});
    }
    return open;
  }
  // A data-dependent range is checked where it is known, before its loop runs: the run fails with
  // the range and the enclosing loops' values instead of reading past an array.
  void checkRange(const Expr& reduce, const Loop& l, int32_t lo, int32_t hi, Code& code) {
    const DataRange r = dataRangeOf(k_, reduce, l);
    if (!r.extent) fail(l.loc, fmt::format("the range of '{}' reads an array, and nothing bounds its values", l.name));
    RangeSite site{l.name, rangeText(k_, l), *r.extent, fmt::format("{}", fmt::join(r.limitingArrays, ", ")), l.loc,
                   scope_};
    out_.ranges.push_back(std::move(site));
    emit(code, Op::CheckRange, 0, lo, hi, int32_t(out_.ranges.size() - 1));
  }
  void closeLoops(const std::vector<OpenLoop>& open, Code& code) {
    for (auto it = open.rbegin(); it != open.rend(); ++it) {
      emit(code, Op::ForNext, it->var, 0, it->hi, it->bodyPc);
      code.instrs[it->initPc].c = here(code);
      leaveLoop(it->id);
    }
  }
  int32_t enterLoop(const Loop& l) {
    if (loopRegs_.count(l.id)) fail(l.loc, fmt::format("loop '{}' reuses the id of an enclosing loop", l.name));
    int32_t v = newReg();
    loopRegs_[l.id] = v;
    scope_.push_back({l.name, v});
    return v;
  }
  void leaveLoop(int id) {
    loopRegs_.erase(id);
    scope_.pop_back();
  }

  int32_t expr(const Expr& e, Code& code) {
    switch (e->kind) {
      case ExprKind::IntImm: return constInt(e->type == ScalarType::Bool ? (e->intValue != 0) : e->intValue);
      case ExprKind::FloatImm:
        // An f32 literal denotes the float nearest to it (what the GPU code holds).
        return constFloat(e->type == ScalarType::F32 ? double(float(e->floatValue)) : e->floatValue);
      case ExprKind::Var: return lookupVar(e);
      case ExprKind::Load: {
        int32_t site = access(e->array, e->operands, false, e->loc, code);
        int32_t dst = newReg();
        ScalarType t = k_.params[e->array].type;
        emit(code, loadOp(t), dst, site);
        return dst;
      }
      case ExprKind::Unary: {
        if (e->unaryOp == UnaryOp::Neg && isInteger(e->type)) return affine(e, code);
        int32_t a = expr(e->operands[0], code);
        int32_t dst = newReg();
        if (e->unaryOp == UnaryOp::Neg && isUnsigned(e->type)) {  // 2^32 - a, modulo 2^32
          emit(code, Op::INeg, dst, a);
          emit(code, Op::IWrap, dst, dst, int32_t(ScalarType::U32));
          return dst;
        }
        emit(code, e->unaryOp == UnaryOp::Not ? Op::Not : Op::FNeg, dst, a);
        return dst;
      }
      case ExprKind::Binary: return binary(e, code);
      case ExprKind::Call: return callFn(e, code);
      case ExprKind::Cast: return castTo(e, code);
      case ExprKind::Select: return select(e->operands[0], e->operands[1], e->operands[2], code);
      case ExprKind::Reduce: return reduction(e, code);
    }
    RTCG_ASSERT(false, "bad ExprKind");
  }

  void statements(const std::vector<Stmt>& body, Code& code) {
    for (const Stmt& s : body) {
      stmtLoc_ = s.loc;
      if (!s.value) fail(s.loc, "statement without a value");
      int32_t v = expr(s.value, code);
      if (s.kind == StmtKind::Let) {
        // Registers are written once per point, so the let can name the value's register.
        letRegs_[s.letId] = v;
        continue;
      }
      int32_t site = access(s.array, s.indices, true, s.loc, code);
      out_.sites[size_t(site)].claims = claimed_.count(s.array) > 0;
      ScalarType t = k_.params[s.array].type;
      if (isFloat(t) != isFloat(s.value->type))
        fail(s.loc, fmt::format("storing a {} value into {} array '{}'", typeName(s.value->type), typeName(t),
                                k_.params[s.array].name));
      if (s.accumulate) v = accumulated(s, t, site, v, code);
      emit(code, storeOp(t), 0, site, v);
    }
  }

  // An accumulation's new element: the old one (loaded through the store's own site) combined
  // with `v`. Floats combine in double, as the reference computes f32 arithmetic (the store keeps
  // the double); an i32 sum wraps when stored, as the device's atomicAdd does.
  int32_t accumulated(const Stmt& s, ScalarType t, int32_t site, int32_t v, Code& code) {
    const bool fl = isFloat(t);
    int32_t old = newReg(), dst = newReg();
    emit(code, loadOp(t), old, site);
    Op combine{};
    switch (s.accumOp) {
      case ReduceOp::Sum: combine = fl ? Op::FAdd : Op::IAdd; break;
      case ReduceOp::Max: combine = fl ? Op::FMax : Op::IMax; break;
      case ReduceOp::Min: combine = fl ? Op::FMin : Op::IMin; break;
      case ReduceOp::Product: fail(s.loc, "an accumulation with '*='");
    }
    emit(code, combine, dst, old, v);
    return dst;
  }

  CompiledNest compileNest(const LoopNest& nest) {
    CompiledNest cn;
    letRegs_.clear();
    stmtLoc_ = nest.loc;
    // Arrays stored through an indirect index by a nest of several points: every store to them
    // in the nest claims its element.
    claimed_.clear();
    // (collectAccesses inlines lets, so `let g = idx[i]; y[g] = ...` is indirect too.)
    if (!nest.loops.empty())
      for (const Access& a : collectAccesses(k_, int(&nest - k_.nests.data())))
        if (a.isWrite && a.indirect && !a.accumulate) claimed_.insert(a.array);
    cn.claimed.assign(claimed_.begin(), claimed_.end());
    // An accumulation's points update shared elements: they run on one thread, in domain order
    // (the order that defines the reference's result).
    for (const Stmt& s : nest.body) cn.accumulates |= s.kind == StmtKind::Store && s.accumulate;
    cn.pointWidth = int(nest.loops.size());
    std::vector<Loop> inner = nest.loops;
    if (!nest.loops.empty()) {
      const Loop& outer = nest.loops.front();
      cn.outerLo = expr(outer.lo, cn.prelude);
      cn.outerHi = expr(outer.hi, cn.prelude);
      cn.outerVar = enterLoop(outer);
      cn.outerName = outer.name;
      inner.erase(inner.begin());
    }
    auto open = openLoops(inner, cn.body);
    statements(nest.body, cn.body);
    closeLoops(open, cn.body);
    if (!nest.loops.empty()) leaveLoop(nest.loops.front().id);
    return cn;
  }

  const Kernel& k_;
  CompiledKernel& out_;
  std::map<int64_t, int32_t> intConsts_;
  std::map<uint64_t, int32_t> floatConsts_;
  std::unordered_map<int, int32_t> loopRegs_, letRegs_, scalarRegs_;
  std::vector<std::pair<std::string, int32_t>> scope_;
  std::set<int> claimed_;  // the nest being compiled's (CompiledNest::claimed)
  SourceLoc stmtLoc_;
  const ExprNode* fusedProduct_ = nullptr;  // the product that forms the term of the sum being compiled
};

}  // namespace

CompiledKernel compileKernel(const Kernel& k) {
  CompiledKernel out;
  Compiler(k, out).compile();
  return out;
}

}  // namespace rtcg::refvm
