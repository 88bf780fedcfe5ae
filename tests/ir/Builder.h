// Hand-built IR for the analysis tests, independent of the frontend.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg::test {

inline Expr c(int64_t v) { return intImm(v); }
inline Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, std::move(a), std::move(b)); }
inline Expr sub(Expr a, Expr b) { return binary(BinaryOp::Sub, std::move(a), std::move(b)); }
inline Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, std::move(a), std::move(b)); }
inline Expr div(Expr a, Expr b) { return binary(BinaryOp::Div, std::move(a), std::move(b)); }
inline Expr mod(Expr a, Expr b) { return binary(BinaryOp::Mod, std::move(a), std::move(b)); }

// Builds a Kernel step by step: parameters, loops (with fresh ids) and nests.
class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) { k_.name = std::move(name); }

  Expr size(const std::string& name) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Size;
    p.type = ScalarType::I32;
    k_.params.push_back(p);
    return var(VarKind::Size, (int)k_.params.size() - 1, name, ScalarType::I32);
  }
  Expr scalar(const std::string& name, ScalarType t = ScalarType::F32) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Scalar;
    p.type = t;
    k_.params.push_back(p);
    return var(VarKind::Scalar, (int)k_.params.size() - 1, name, t);
  }
  int array(const std::string& name, std::vector<Expr> shape, ArrayMode mode = ArrayMode::In,
            ScalarType t = ScalarType::F32) {
    Param p;
    p.name = name;
    p.kind = ParamKind::Array;
    p.type = t;
    p.shape = std::move(shape);
    p.mode = mode;
    k_.params.push_back(p);
    return (int)k_.params.size() - 1;
  }
  Loop loop(const std::string& name, Expr lo, Expr hi) {
    Loop l;
    l.id = k_.numVarIds++;
    l.name = name;
    l.lo = std::move(lo);
    l.hi = std::move(hi);
    return l;
  }
  static Expr idx(const Loop& l) { return var(VarKind::Index, l.id, l.name, ScalarType::I32); }
  Expr ld(int array, std::vector<Expr> indices, SourceLoc loc = {}) {
    return load(array, k_.params[array].type, std::move(indices), loc);
  }
  static Stmt store(int array, std::vector<Expr> indices, Expr value, SourceLoc loc = {}) {
    Stmt s;
    s.kind = StmtKind::Store;
    s.array = array;
    s.indices = std::move(indices);
    s.value = std::move(value);
    s.loc = loc;
    return s;
  }
  Stmt let(const std::string& name, Expr value, Expr* ref) {
    Stmt s;
    s.kind = StmtKind::Let;
    s.letId = k_.numVarIds++;
    s.letName = name;
    *ref = var(VarKind::Let, s.letId, name, value->type);
    s.value = std::move(value);
    return s;
  }
  void nest(std::vector<Loop> loops, std::vector<Stmt> body) {
    LoopNest n;
    n.loops = std::move(loops);
    n.body = std::move(body);
    k_.nests.push_back(std::move(n));
  }
  const Kernel& kernel() const { return k_; }

 private:
  Kernel k_;
};

}  // namespace rtcg::test
