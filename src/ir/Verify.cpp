#include "ir/Verify.h"

#include <cmath>
#include <fmt/format.h>
#include <map>
#include <set>

#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg {

namespace {

const char* kindName(ExprKind k) {
  switch (k) {
    case ExprKind::IntImm: return "integer literal";
    case ExprKind::FloatImm: return "float literal";
    case ExprKind::Var: return "variable";
    case ExprKind::Load: return "load";
    case ExprKind::Unary: return "unary operator";
    case ExprKind::Binary: return "binary operator";
    case ExprKind::Call: return "call";
    case ExprKind::Cast: return "cast";
    case ExprKind::Select: return "select";
    case ExprKind::Reduce: return "reduction";
  }
  return "expression";
}

// One pass over a kernel, in program order, with the variables in scope at each point: the
// parallel indices of the nest, the lets of earlier statements, the loops of enclosing
// reductions.
class Verifier {
 public:
  explicit Verifier(const Kernel& k) : k_(k) {}

  std::vector<std::string> run() {
    checkParams();
    for (size_t n = 0; n < k_.nests.size(); ++n) checkNest(n);
    checkLocals();
    return std::move(out_);
  }

 private:
  const Kernel& k_;
  std::vector<std::string> out_;
  std::string where_;                  // the part being checked, for messages
  std::set<int> ids_;                  // loop and let ids defined so far (unique in the kernel)
  std::set<int> indices_;              // index ids in scope
  std::map<int, ScalarType> lets_;     // let ids in scope and their types
  std::set<const ExprNode*> reductions_;  // reductions seen (a shared subtree defines its ids once)
  bool inExtent_ = false;              // checking an array extent: size variables only

  void fail(const std::string& msg) { out_.push_back(fmt::format("{}: {}", where_, msg)); }
  void fail(const Expr& e, const std::string& msg) {
    std::string at = e->loc.valid() ? fmt::format(" (line {}, column {})", e->loc.line, e->loc.col) : "";
    out_.push_back(fmt::format("{}: {}{}: {}", where_, kindName(e->kind), at, msg));
  }

  bool validParam(int id) const { return id >= 0 && id < (int)k_.params.size(); }

  void defineId(int id, const std::string& name) {
    if (id < 0 || id >= k_.numVarIds)
      fail(fmt::format("id {} of '{}' is outside [0, numVarIds = {})", id, name, k_.numVarIds));
    if (!ids_.insert(id).second) fail(fmt::format("id {} of '{}' is defined twice", id, name));
  }

  // Parameters: shapes of arrays only, extents integer expressions in size parameters; once
  // bound, positive constants.
  void checkParams() {
    for (const Param& p : k_.params) {
      where_ = fmt::format("parameter '{}'", p.name);
      if (!p.isArray() && !p.shape.empty()) fail("a non-array parameter has a shape");
      if (p.kind == ParamKind::Size && !isInteger(p.type)) fail(fmt::format("size of type {}", typeName(p.type)));
      inExtent_ = true;
      for (const Expr& d : p.shape) {
        if (!checkExpr(d)) continue;
        if (!isInteger(d->type)) fail(d, fmt::format("extent of type {}", typeName(d->type)));
        if (k_.isBound() && (d->kind != ExprKind::IntImm || d->intValue <= 0))
          fail(d, "extent of a bound kernel is not a positive constant");
      }
      inExtent_ = false;
    }
  }

  // Locals (IR.h): after the signature's parameters; each written by one nest and read only by
  // later ones.
  void checkLocals() {
    where_ = "locals";
    for (size_t i = k_.numSignatureParams(); i < k_.params.size(); ++i)
      if (!k_.params[i].isLocal()) fail(fmt::format("parameter '{}' follows a local", k_.params[i].name));
    std::map<int, size_t> writer;
    for (size_t n = 0; n < k_.nests.size(); ++n) {
      for (const Stmt& s : k_.nests[n].body) {
        auto reads = [&](const Expr& e) {
          visitExprs(e, [&](const Expr& x) {
            if (x->kind != ExprKind::Load || !validParam(x->array) || !k_.params[x->array].isLocal()) return;
            auto w = writer.find(x->array);
            if (w == writer.end() || w->second >= n)
              fail(fmt::format("nest {} reads local '{}', which no earlier nest writes", n, k_.params[x->array].name));
          });
        };
        if (s.value) reads(s.value);
        for (const Expr& i : s.indices) reads(i);
      }
      for (const Stmt& s : k_.nests[n].body) {
        if (s.kind != StmtKind::Store || !validParam(s.array) || !k_.params[s.array].isLocal()) continue;
        auto [w, fresh] = writer.emplace(s.array, n);
        if (!fresh && w->second != n) fail(fmt::format("local '{}' is written by nests {} and {}", k_.params[s.array].name, w->second, n));
      }
    }
  }

  void checkNest(size_t n) {
    const LoopNest& nest = k_.nests[n];
    indices_.clear();
    lets_.clear();
    for (const Loop& l : nest.loops) {
      where_ = fmt::format("nest {}, loop '{}'", n, l.name);
      checkLoop(l);
    }
    for (size_t s = 0; s < nest.body.size(); ++s) {
      where_ = fmt::format("nest {}, statement {}", n, s);
      checkStmt(nest.body[s]);
    }
  }

  // A loop's bounds (in the current scope), then its index enters the scope.
  // A reduction loop's bound may also be a range read (IR.h): one load of an `in` (or local) i32 array.
  void checkLoop(const Loop& l, bool define = true, bool reduction = false) {
    auto readsOrReduces = [](const Expr& x) { return x->kind == ExprKind::Load || x->kind == ExprKind::Reduce; };
    for (const Expr* b : {&l.lo, &l.hi}) {
      if (!*b) {
        fail(fmt::format("loop '{}' lacks a bound", l.name));
        continue;
      }
      if (!checkExpr(*b)) continue;
      if (!isInteger((*b)->type)) fail(*b, fmt::format("bound of '{}' of type {}", l.name, typeName((*b)->type)));
      if (reduction && isRangeRead(*b)) {
        const Param& p = k_.params[(*b)->array];
        if ((p.isWritten() && !p.isLocal()) || p.type != ScalarType::I32)
          fail(*b, fmt::format("bound of '{}' reads '{}', which is not an in or local i32 array", l.name, p.name));
        for (const Expr& i : (*b)->operands)
          if (anyExpr(i, readsOrReduces)) fail(*b, fmt::format("bound of '{}' reads an array in an index", l.name));
        continue;
      }
      if (anyExpr(*b, readsOrReduces)) fail(*b, fmt::format("bound of '{}' reads an array or reduces", l.name));
    }
    if (define) defineId(l.id, l.name);
    indices_.insert(l.id);
  }

  void checkStmt(const Stmt& s) {
    if (!s.value) {
      fail("statement without a value");
      return;
    }
    if (s.kind == StmtKind::Let) {
      bool ok = checkExpr(s.value);
      defineId(s.letId, s.letName);
      if (ok) lets_[s.letId] = s.value->type;
      return;
    }
    if (!validParam(s.array) || !k_.params[s.array].isArray()) {
      fail(fmt::format("store to parameter {}, not an array", s.array));
      return;
    }
    const Param& p = k_.params[s.array];
    if (!p.isWritten()) fail(fmt::format("store to '{}', an input array", p.name));
    if (s.indices.size() != p.shape.size())
      fail(fmt::format("store to '{}' with {} indices; it has {} dimensions", p.name, s.indices.size(), p.shape.size()));
    for (const Expr& i : s.indices)
      if (checkExpr(i) && !isInteger(i->type)) fail(i, fmt::format("index of type {}", typeName(i->type)));
    if (checkExpr(s.value) && s.value->type != p.type)
      fail(s.value, fmt::format("stores {} into '{}' of {}", typeName(s.value->type), p.name, typeName(p.type)));
    std::string why;
    if (s.accumulate && !accumulationSupported(s.accumOp, p.type, &why))
      fail(fmt::format("accumulation into '{}': {}", p.name, why));
  }

  // Checks `e` and its subexpressions; false when `e` is null (nothing else can be checked).
  bool checkExpr(const Expr& e) {
    if (!e) {
      fail("missing expression");
      return false;
    }
    if (e->kind == ExprKind::Reduce) {
      checkReduce(e);
      return true;
    }
    if (!e->loops.empty()) fail(e, "loops on a node that is not a reduction");
    bool operandsOk = true;
    forEachChild(e, [&](const Expr& c) { operandsOk = checkExpr(c) && operandsOk; });
    if (operandsOk) checkNode(e);
    return true;
  }

  // A reduction: its loops enter the scope one by one (a bound sees the loops before it).
  void checkReduce(const Expr& e) {
    if (e->loops.empty()) fail(e, "reduction without loops");
    if (e->operands.size() != 1) {
      fail(e, fmt::format("reduction with {} operands", e->operands.size()));
      return;
    }
    const std::set<int> saved = indices_;
    const bool first = reductions_.insert(e.get()).second;
    for (const Loop& l : e->loops) checkLoop(l, first, true);
    if (checkExpr(e->operands[0])) {
      if (e->type != e->operands[0]->type)
        fail(e, fmt::format("of type {} over a body of {}", typeName(e->type), typeName(e->operands[0]->type)));
      if (e->type == ScalarType::Bool) fail(e, "over bool values");
    }
    indices_ = saved;
  }

  // The node itself, its operands being non-null and checked.
  void checkNode(const Expr& e) {
    const std::vector<Expr>& ops = e->operands;
    // f16, bf16, i8 and u8 are storage types: no arithmetic, comparison, function or reduction on them.
    if (e->kind == ExprKind::Unary || e->kind == ExprKind::Binary || e->kind == ExprKind::Call ||
        e->kind == ExprKind::Reduce)
      for (const Expr& o : ops)
        if (isStorage(o->type)) fail(e, fmt::format("on a value of the storage type {}", typeName(o->type)));
    auto arity = [&](size_t n) {
      if (ops.size() == n) return true;
      fail(e, fmt::format("with {} operands, not {}", ops.size(), n));
      return false;
    };
    auto sameType = [&](const Expr& o, ScalarType t, const char* what) {
      if (o->type != t) fail(e, fmt::format("{} of type {}, not {}", what, typeName(o->type), typeName(t)));
    };
    switch (e->kind) {
      case ExprKind::IntImm:
        if (arity(0) && isFloat(e->type)) fail(e, fmt::format("of type {}", typeName(e->type)));
        break;
      case ExprKind::FloatImm:
        if (arity(0) && !isFloat(e->type)) fail(e, fmt::format("of type {}", typeName(e->type)));
        if (isHalf(e->type) && !std::isnan(e->floatValue) && roundToFloat(e->floatValue, e->type) != e->floatValue)
          fail(e, fmt::format("{} not representable in {}", e->floatValue, typeName(e->type)));
        break;
      case ExprKind::Var:
        if (arity(0)) checkVar(e);
        break;
      case ExprKind::Load: checkLoad(e); break;
      case ExprKind::Unary:
        if (!arity(1)) break;
        if (e->unaryOp == UnaryOp::Not) sameType(ops[0], ScalarType::Bool, "operand");
        if (e->unaryOp == UnaryOp::Neg && (ops[0]->type != e->type || e->type == ScalarType::Bool))
          fail(e, fmt::format("negation of {} typed {}", typeName(ops[0]->type), typeName(e->type)));
        break;
      case ExprKind::Binary:
        if (arity(2)) checkBinary(e);
        break;
      case ExprKind::Call:
        if (!arity((size_t)fnArity(e->mathFn))) break;
        for (const Expr& o : ops) sameType(o, e->type, "argument");
        if (e->type == ScalarType::Bool) fail(e, "of bool values");
        break;
      case ExprKind::Cast: arity(1); break;
      case ExprKind::Select:
        if (!arity(3)) break;
        sameType(ops[0], ScalarType::Bool, "condition");
        sameType(ops[1], e->type, "value");
        sameType(ops[2], e->type, "value");
        break;
      case ExprKind::Reduce: break;  // checkReduce
    }
  }

  void checkBinary(const Expr& e) {
    const Expr &a = e->operands[0], &b = e->operands[1];
    const BinaryOp op = e->binaryOp;
    if (a->type != b->type) {
      fail(e, fmt::format("'{}' of {} and {}", opSymbol(op), typeName(a->type), typeName(b->type)));
      return;
    }
    if (isLogical(op) && a->type != ScalarType::Bool)
      fail(e, fmt::format("'{}' of {} values", opSymbol(op), typeName(a->type)));
    if ((isComparison(op) || isLogical(op)) && e->type != ScalarType::Bool)
      fail(e, fmt::format("'{}' typed {}, not bool", opSymbol(op), typeName(e->type)));
    if (!isComparison(op) && !isLogical(op) && (e->type != a->type || a->type == ScalarType::Bool))
      fail(e, fmt::format("'{}' of {} typed {}", opSymbol(op), typeName(a->type), typeName(e->type)));
  }

  void checkVar(const Expr& e) {
    switch (e->varKind) {
      case VarKind::Index:
        if (inExtent_ || !indices_.count(e->varId)) fail(e, fmt::format("index '{}' used outside its loop", e->name));
        if (!isInteger(e->type)) fail(e, fmt::format("index '{}' of type {}", e->name, typeName(e->type)));
        return;
      case VarKind::Let: {
        auto it = lets_.find(e->varId);
        if (inExtent_ || it == lets_.end()) fail(e, fmt::format("let '{}' used outside its scope", e->name));
        else if (it->second != e->type)
          fail(e, fmt::format("let '{}' read as {}, defined as {}", e->name, typeName(e->type), typeName(it->second)));
        return;
      }
      case VarKind::Size:
      case VarKind::Scalar: {
        const ParamKind want = e->varKind == VarKind::Size ? ParamKind::Size : ParamKind::Scalar;
        if (!validParam(e->varId) || k_.params[e->varId].kind != want) {
          fail(e, fmt::format("'{}' does not name a {} parameter", e->name, want == ParamKind::Size ? "size" : "scalar"));
          return;
        }
        const Param& p = k_.params[e->varId];
        if (e->type != p.type) fail(e, fmt::format("'{}' read as {}, declared {}", p.name, typeName(e->type), typeName(p.type)));
        if (want == ParamKind::Size && k_.isBound()) fail(e, fmt::format("size '{}' left in a bound kernel", p.name));
        if (want == ParamKind::Scalar && inExtent_) fail(e, fmt::format("scalar '{}' in an array extent", p.name));
        return;
      }
    }
  }

  void checkLoad(const Expr& e) {
    if (inExtent_) fail(e, "in an array extent");
    if (!validParam(e->array) || !k_.params[e->array].isArray()) {
      fail(e, fmt::format("of parameter {}, not an array", e->array));
      return;
    }
    const Param& p = k_.params[e->array];
    if (e->operands.size() != p.shape.size())
      fail(e, fmt::format("of '{}' with {} indices; it has {} dimensions", p.name, e->operands.size(), p.shape.size()));
    if (e->type != p.type) fail(e, fmt::format("of '{}' typed {}, its elements are {}", p.name, typeName(e->type), typeName(p.type)));
    for (const Expr& i : e->operands)
      if (!isInteger(i->type)) fail(e, fmt::format("of '{}' with an index of type {}", p.name, typeName(i->type)));
  }
};

}  // namespace

std::vector<std::string> verifyKernel(const Kernel& k) { return Verifier(k).run(); }

void checkKernel(const Kernel& k, const char* stage) {
#ifndef NDEBUG
  std::vector<std::string> violations = verifyKernel(k);
  RTCG_ASSERT(violations.empty(), fmt::format("kernel '{}' is not well formed after {}:\n  {}", k.name, stage,
                                              fmt::join(violations, "\n  ")));
#else
  (void)k;
  (void)stage;
#endif
}

}  // namespace rtcg
