// Hand-built bound IR for the reference tests (sizes already replaced by IntImm), so the
// executor can be tested independently of the frontend.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg::test {

class IrBuilder {
 public:
  explicit IrBuilder(std::string name) { k.name = std::move(name); }

  // A size parameter bound to `value`; use size() for its constant in expressions.
  Expr size(const std::string& name, int64_t value) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Size;
    p.type = ScalarType::I32;
    k.params.push_back(p);
    k.sizes[name] = value;
    return intImm(value);
  }
  Expr scalar(const std::string& name, ScalarType t) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Scalar;
    p.type = t;
    k.params.push_back(p);
    return var(VarKind::Scalar, int(k.params.size()) - 1, name, t);
  }
  int array(const std::string& name, ScalarType t, std::vector<Expr> shape, ArrayMode mode = ArrayMode::In) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Array;
    p.type = t;
    p.shape = std::move(shape);
    p.mode = mode;
    k.params.push_back(p);
    return int(k.params.size()) - 1;
  }
  Loop loop(const std::string& name, Expr lo, Expr hi, int line = 0) {
    Loop l;
    l.id = k.numVarIds++;
    l.name = name;
    l.lo = std::move(lo);
    l.hi = std::move(hi);
    l.loc = SourceLoc{line, 1, 1};
    return l;
  }
  static Expr idx(const Loop& l) { return var(VarKind::Index, l.id, l.name, ScalarType::I32); }
  Expr ld(int array, std::vector<Expr> indices, int line = 0) {
    return load(array, k.params[array].type, std::move(indices), SourceLoc{line, 5, 3});
  }
  Stmt store(int array, std::vector<Expr> indices, Expr value, int line = 0) {
    Stmt s;
    s.kind = StmtKind::Store;
    s.array = array;
    s.indices = std::move(indices);
    s.value = std::move(value);
    s.loc = SourceLoc{line, 3, 1};
    return s;
  }
  // A let statement; `ref` receives the variable to use in later expressions.
  Stmt let(const std::string& name, Expr value, Expr& ref) {
    Stmt s;
    s.kind = StmtKind::Let;
    s.letId = k.numVarIds++;
    s.letName = name;
    ref = var(VarKind::Let, s.letId, name, value->type);
    s.value = std::move(value);
    return s;
  }
  void nest(std::vector<Loop> loops, std::vector<Stmt> body) {
    LoopNest n;
    n.loops = std::move(loops);
    n.body = std::move(body);
    k.nests.push_back(std::move(n));
  }

  Kernel k;
};

inline Expr i32(int64_t v) { return intImm(v, ScalarType::I32); }
inline Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
inline Expr sub(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
inline Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
inline Expr div(Expr a, Expr b) { return binary(BinaryOp::Div, std::move(a), std::move(b)); }
inline Expr mod(Expr a, Expr b) { return binary(BinaryOp::Mod, std::move(a), std::move(b)); }

}  // namespace rtcg::test
