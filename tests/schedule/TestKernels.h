// Hand-built, already bound IR kernels for the schedule and codegen tests (they do not depend on
// the frontend). Each mirrors a DSL kernel given in its comment.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg::testing {

class KernelBuilder {
 public:
  explicit KernelBuilder(std::string name) { k.name = std::move(name); }
  Kernel k;

  // A size parameter, bound to `value`; its uses are the returned literal (as after bindSizes).
  Expr size(const std::string& name, int64_t value) {
    k.params.push_back({name, ParamKind::Size, ScalarType::I32, {}, ArrayMode::In, {}});
    k.sizes[name] = value;
    return intImm(value);
  }
  int array(const std::string& name, ScalarType t, std::vector<int64_t> shape, ArrayMode mode = ArrayMode::In) {
    Param p{name, ParamKind::Array, t, {}, mode, {}};
    for (int64_t e : shape) p.shape.push_back(intImm(e));
    k.params.push_back(p);
    return (int)k.params.size() - 1;
  }
  Expr scalar(const std::string& name, ScalarType t) {
    k.params.push_back({name, ParamKind::Scalar, t, {}, ArrayMode::In, {}});
    return var(VarKind::Scalar, (int)k.params.size() - 1, name, t);
  }
  Loop loop(const std::string& name, Expr lo, Expr hi) { return Loop{k.numVarIds++, name, lo, hi, {}}; }
  Loop loop(const std::string& name, int64_t lo, int64_t hi) { return loop(name, intImm(lo), intImm(hi)); }
  static Expr idx(const Loop& l) { return var(VarKind::Index, l.id, l.name, ScalarType::I32); }
  Expr ld(int a, std::vector<Expr> indices) { return load(a, k.params[a].type, std::move(indices)); }
  static Stmt store(int a, std::vector<Expr> indices, Expr value) {
    Stmt s;
    s.kind = StmtKind::Store;
    s.array = a;
    s.indices = std::move(indices);
    s.value = std::move(value);
    return s;
  }
  Stmt let(const std::string& name, Expr value, int* id) {
    Stmt s;
    s.kind = StmtKind::Let;
    s.letId = *id = k.numVarIds++;
    s.letName = name;
    s.value = std::move(value);
    return s;
  }
  void nest(std::vector<Loop> loops, std::vector<Stmt> body) { k.nests.push_back({std::move(loops), std::move(body), {}}); }
};

inline Expr add(Expr a, Expr b) { return binary(BinaryOp::Add, a, b); }
inline Expr mul(Expr a, Expr b) { return binary(BinaryOp::Mul, a, b); }
inline Expr f32(double v) { return floatImm(v, ScalarType::F32); }

// for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }
inline Kernel matmul(int64_t n, ScalarType t = ScalarType::F32) {
  KernelBuilder b(t == ScalarType::F32 ? "matmul" : "matmul64");
  b.size("n", n);
  int A = b.array("a", t, {n, n}), B = b.array("b", t, {n, n});
  int Cc = b.array("c", t, {n, n}, ArrayMode::Out);
  Loop i = b.loop("i", 0, n), j = b.loop("j", 0, n), k = b.loop("k", 0, n);
  auto I = b.idx(i), J = b.idx(j), K = b.idx(k);
  b.nest({i, j}, {b.store(Cc, {I, J}, reduce(ReduceOp::Sum, {k}, mul(b.ld(A, {I, K}), b.ld(B, {K, J}))))});
  return b.k;
}

// for i in 0..n { z[i] = a * x[i] + b * y[i]; }
inline Kernel axpby(int64_t n) {
  KernelBuilder b("axpby");
  b.size("n", n);
  Expr a = b.scalar("a", ScalarType::F32);
  int X = b.array("x", ScalarType::F32, {n});
  Expr bb = b.scalar("b", ScalarType::F32);
  int Y = b.array("y", ScalarType::F32, {n}), Z = b.array("z", ScalarType::F32, {n}, ArrayMode::Out);
  Loop i = b.loop("i", 0, n);
  auto I = b.idx(i);
  b.nest({i}, {b.store(Z, {I}, add(mul(a, b.ld(X, {I})), mul(bb, b.ld(Y, {I}))))});
  return b.k;
}

// r[0] = sum(i in 0..n, x[i] * y[i]);   (a nest without loops)
inline Kernel dot(int64_t n) {
  KernelBuilder b("dot");
  b.size("n", n);
  int X = b.array("x", ScalarType::F32, {n}), Y = b.array("y", ScalarType::F32, {n});
  int R = b.array("r", ScalarType::F32, {1}, ArrayMode::Out);
  Loop i = b.loop("i", 0, n);
  auto I = b.idx(i);
  b.nest({}, {b.store(R, {intImm(0)}, reduce(ReduceOp::Sum, {i}, mul(b.ld(X, {I}), b.ld(Y, {I}))))});
  return b.k;
}

// Three reductions over the same loop in one nest (dg_diff):
// for k in 0..K, i in 0..Np { ur[k,i] = sum(j, Dr[i,j]*u[k,j]); us.. ; ut.. }
inline Kernel dgDiff(int64_t K, int64_t Np) {
  KernelBuilder b("dg_diff");
  b.size("K", K);
  b.size("Np", Np);
  int Dr = b.array("Dr", ScalarType::F32, {Np, Np}), Ds = b.array("Ds", ScalarType::F32, {Np, Np});
  int Dt = b.array("Dt", ScalarType::F32, {Np, Np}), U = b.array("u", ScalarType::F32, {K, Np});
  int ur = b.array("ur", ScalarType::F32, {K, Np}, ArrayMode::Out);
  int us = b.array("us", ScalarType::F32, {K, Np}, ArrayMode::Out);
  int ut = b.array("ut", ScalarType::F32, {K, Np}, ArrayMode::Out);
  Loop k = b.loop("k", 0, K), i = b.loop("i", 0, Np);
  std::vector<Stmt> body;
  for (auto [D, out] : {std::pair{Dr, ur}, {Ds, us}, {Dt, ut}}) {
    Loop j = b.loop("j", 0, Np);
    auto J = b.idx(j);
    body.push_back(b.store(out, {b.idx(k), b.idx(i)},
                           reduce(ReduceOp::Sum, {j}, mul(b.ld(D, {b.idx(i), J}), b.ld(U, {b.idx(k), J})))));
  }
  b.nest({k, i}, body);
  return b.k;
}

// A triangular domain with a triangular reduction, floor division and modulo, a let, a max
// reduction, select and math calls, and a second nest:
//   for i in 0..n, j in 0..i+1 {
//     let t = sqrt(abs(a[i, j])) + 1.0;
//     l[i, j] = select(j < i, t, 0.0) * sum(k in 0..j+1, a[i, k] * f32((i - 3) / 4 + (j - 5) % 3));
//   }
//   for i in 0..n { m[i / 4, i % 4] = max(k in i..n, a[k, i]) + f32(i); }   (n a multiple of 4)
inline Kernel triangular(int64_t n) {
  KernelBuilder b("tri");
  Expr N = b.size("n", n);
  int A = b.array("a", ScalarType::F32, {n, n});
  int L = b.array("l", ScalarType::F32, {n, n}, ArrayMode::Out);
  int M = b.array("m", ScalarType::F32, {(n + 3) / 4, 4}, ArrayMode::Out);
  Loop i = b.loop("i", 0, n);
  Loop j = b.loop("j", intImm(0), add(b.idx(i), intImm(1)));
  Loop k = b.loop("k", intImm(0), add(b.idx(j), intImm(1)));
  auto I = b.idx(i), J = b.idx(j), K = b.idx(k);
  int tId = 0;
  Stmt t = b.let("t", add(call(MathFn::Sqrt, {call(MathFn::Abs, {b.ld(A, {I, J})})}), f32(1.0)), &tId);
  Expr T = var(VarKind::Let, tId, "t", ScalarType::F32);
  Expr q = add(binary(BinaryOp::Div, binary(BinaryOp::Sub, I, intImm(3)), intImm(4)),
               binary(BinaryOp::Mod, binary(BinaryOp::Sub, J, intImm(5)), intImm(3)));
  Expr s = reduce(ReduceOp::Sum, {k}, mul(b.ld(A, {I, K}), cast(ScalarType::F32, q)));
  b.nest({i, j}, {t, b.store(L, {I, J}, mul(select(binary(BinaryOp::Lt, J, I), T, f32(0.0)), s))});

  Loop i2 = b.loop("i", 0, n);
  auto I2 = b.idx(i2);
  Loop k2 = b.loop("k", I2, N);
  Expr mx = reduce(ReduceOp::Max, {k2}, b.ld(A, {b.idx(k2), I2}));
  b.nest({i2}, {b.store(M, {binary(BinaryOp::Div, I2, intImm(4)), binary(BinaryOp::Mod, I2, intImm(4))},
                        add(mx, cast(ScalarType::F32, I2)))});
  return b.k;
}

// A batch of 3-D products with a double reduction (two loops):
// for b in 0..nb, i in 0..n, j in 0..n { c[b,i,j] = sum(k in 0..n, l in 0..2, a[b,i,k]*x[b,k,j]*w[l]); }
inline Kernel batched(int64_t nb, int64_t n) {
  KernelBuilder b("batched");
  b.size("nb", nb);
  b.size("n", n);
  int A = b.array("a", ScalarType::F32, {nb, n, n}), X = b.array("x", ScalarType::F32, {nb, n, n});
  int W = b.array("w", ScalarType::F32, {2});
  int Cc = b.array("c", ScalarType::F32, {nb, n, n}, ArrayMode::Out);
  Loop bl = b.loop("b", 0, nb), i = b.loop("i", 0, n), j = b.loop("j", 0, n);
  Loop k = b.loop("k", 0, n), l = b.loop("l", 0, 2);
  auto B = b.idx(bl), I = b.idx(i), J = b.idx(j), K = b.idx(k);
  b.nest({bl, i, j}, {b.store(Cc, {B, I, J}, reduce(ReduceOp::Sum, {k, l},
                                                   mul(mul(b.ld(A, {B, I, K}), b.ld(X, {B, K, J})), b.ld(W, {b.idx(l)}))))});
  return b.k;
}

}  // namespace rtcg::testing
