// Analyses on IR built by hand (no frontend involved).
#include <gtest/gtest.h>

#include <functional>

#include "ir/Analysis.h"
#include "ir/Bind.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "ir/Builder.h"

namespace rtcg {
namespace {

using namespace rtcg::test;

Kernel bound(const Kernel& k, const SizeBindings& s) {
  Diagnostics d;
  auto r = bindSizes(k, s, d);
  EXPECT_TRUE(r) << d.render("t", "");
  return r ? *r : k;
}

// matmul(n, a[n, n], b[n, n], out c[n, n]) with c[i, j] = sum(k, a[i, k] * b[k, j]).
Kernel matmul() {
  KernelBuilder kb("matmul");
  Expr n = kb.size("n");
  int a = kb.array("a", {n, n}), b = kb.array("b", {n, n}), cc = kb.array("c", {n, n}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), n), j = kb.loop("j", c(0), n), k = kb.loop("k", c(0), n);
  Expr body = mul(kb.ld(a, {kb.idx(i), kb.idx(k)}), kb.ld(b, {kb.idx(k), kb.idx(j)}));
  kb.nest({i, j}, {KernelBuilder::store(cc, {kb.idx(i), kb.idx(j)}, reduce(ReduceOp::Sum, {k}, body))});
  return kb.kernel();
}

TEST(Simplify, FloorSemanticsAndIdentities) {
  EXPECT_EQ(simplify(div(c(-7), c(2)))->intValue, -4);
  EXPECT_EQ(simplify(mod(c(-7), c(2)))->intValue, 1);
  EXPECT_EQ(simplify(mod(c(7), c(-2)))->intValue, -1);
  Expr x = var(VarKind::Index, 0, "x", ScalarType::I32);
  EXPECT_EQ(simplify(add(x, c(0))), x);
  EXPECT_EQ(simplify(mul(c(1), x)), x);
  Expr zero = simplify(mul(x, c(0)));
  ASSERT_EQ(zero->kind, ExprKind::IntImm);
  EXPECT_EQ(zero->intValue, 0);
  // Division by zero is not folded (and does not crash).
  EXPECT_EQ(simplify(div(c(1), c(0)))->kind, ExprKind::Binary);
  // i32 overflow is not folded.
  EXPECT_EQ(simplify(mul(c(1 << 20), c(1 << 20)))->kind, ExprKind::Binary);
  Expr f = simplify(binary(BinaryOp::Mul, floatImm(1.5, ScalarType::F32), floatImm(2.0, ScalarType::F32)));
  ASSERT_EQ(f->kind, ExprKind::FloatImm);
  EXPECT_EQ(f->floatValue, 3.0);
  EXPECT_EQ(f->type, ScalarType::F32);
  EXPECT_EQ(simplify(select(boolImm(false), c(1), c(2)))->intValue, 2);
}

TEST(Bind, SubstitutesSizesAndRecordsThem) {
  Kernel k = bound(matmul(), {{"n", 500}});
  EXPECT_TRUE(k.isBound());
  EXPECT_EQ(k.sizes.at("n"), 500);
  EXPECT_EQ(arrayShape(k, 1), (std::vector<int64_t>{500, 500}));
  const Loop& j = k.nests[0].loops[1];
  ASSERT_EQ(j.hi->kind, ExprKind::IntImm);
  EXPECT_EQ(j.hi->intValue, 500);
  const Expr& red = k.nests[0].body[0].value;
  ASSERT_EQ(red->kind, ExprKind::Reduce);
  EXPECT_EQ(red->loops[0].hi->intValue, 500);
}

TEST(Bind, Errors) {
  Diagnostics d;
  EXPECT_FALSE(bindSizes(matmul(), {}, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].message, "size parameter 'n' is not bound; pass -D n=VALUE");

  Diagnostics d2;
  EXPECT_FALSE(bindSizes(matmul(), {{"n", 4}, {"q", 3}}, d2));
  ASSERT_EQ(d2.errorCount(), 1);
  EXPECT_EQ(d2.all()[0].message, "'q' is not a size parameter of kernel 'matmul' (its size parameters are: n)");

  Diagnostics d3;
  EXPECT_FALSE(bindSizes(matmul(), {{"n", 0}}, d3));
  EXPECT_NE(d3.all().at(0).message.find("array extents must be positive"), std::string::npos);

  Diagnostics d4;
  EXPECT_FALSE(bindSizes(matmul(), {{"n", int64_t(1) << 40}}, d4));
  EXPECT_NE(d4.all().at(0).message.find("does not fit in i32"), std::string::npos);
}

TEST(Affine, Forms) {
  Expr i = var(VarKind::Index, 0, "i", ScalarType::I32), j = var(VarKind::Index, 1, "j", ScalarType::I32);
  auto f = toAffine(sub(add(i, mul(c(2), j)), c(3)));
  ASSERT_TRUE(f);
  EXPECT_EQ(f->coeff(0), 1);
  EXPECT_EQ(f->coeff(1), 2);
  EXPECT_EQ(f->constant, -3);
  EXPECT_EQ(f->str({{0, "i"}, {1, "j"}}), "i + 2*j - 3");
  // i - i cancels: no zero coefficient is stored.
  auto g = toAffine(sub(i, i));
  ASSERT_TRUE(g);
  EXPECT_TRUE(g->isConstant());
  EXPECT_FALSE(toAffine(mul(i, j)));
  EXPECT_FALSE(toAffine(div(i, c(4))));
}

struct Domain {
  KernelBuilder kb{"d"};
  std::vector<Loop> loops;
  LoopScope scope() const {
    LoopScope s;
    for (const Loop& l : loops) s.push_back(&l);
    return s;
  }
};

TEST(Range, RectangularAndTriangular) {
  Domain d;
  d.loops.push_back(d.kb.loop("i", c(0), c(100)));
  Expr i = KernelBuilder::idx(d.loops[0]);
  d.loops.push_back(d.kb.loop("j", c(0), add(i, c(1))));  // j <= i
  Expr j = KernelBuilder::idx(d.loops[1]);
  LoopScope s = d.scope();
  EXPECT_EQ(rangeOf(j, s), (Interval{0, 99}));
  EXPECT_EQ(rangeOf(sub(i, j), s), (Interval{0, 99}));
  EXPECT_EQ(rangeOf(sub(j, i), s), (Interval{-99, 0}));
  // i + j reaches 2*99 only at the diagonal.
  EXPECT_EQ(rangeOf(add(i, j), s), (Interval{0, 198}));
  EXPECT_EQ(rangeOf(add(i, mul(c(100), j)), s), (Interval{0, 9999}));
  // A tile of i: [10, 19].
  EXPECT_EQ(rangeOf(j, s, {{d.loops[0].id, Interval{10, 19}}}), (Interval{0, 19}));
  EXPECT_EQ(rangeOf(i, s, {{d.loops[0].id, Interval{10, 19}}}), (Interval{10, 19}));
}

TEST(Range, EmptyDomain) {
  Domain d;
  d.loops.push_back(d.kb.loop("i", c(0), c(0)));
  EXPECT_TRUE(rangeOf(KernelBuilder::idx(d.loops[0]), d.scope())->empty());
}

TEST(Range, FloorDivMod) {
  Domain d;
  d.loops.push_back(d.kb.loop("i", c(-5), c(6)));  // -5..5
  Expr i = KernelBuilder::idx(d.loops[0]);
  LoopScope s = d.scope();
  EXPECT_EQ(rangeOf(div(i, c(2)), s), (Interval{-3, 2}));
  EXPECT_EQ(rangeOf(mod(i, c(4)), s), (Interval{0, 3}));
  EXPECT_EQ(rangeOf(div(i, c(-2)), s), (Interval{-3, 2}));
  EXPECT_EQ(rangeOf(mod(i, c(-4)), s), (Interval{-3, 0}));
  Domain e;
  e.loops.push_back(e.kb.loop("i", c(5), c(7)));  // 5, 6: within one period of 4
  EXPECT_EQ(rangeOf(mod(KernelBuilder::idx(e.loops[0]), c(4)), e.scope()), (Interval{1, 2}));
  Expr mn = call(MathFn::Min, {i, c(2)});
  EXPECT_EQ(rangeOf(mn, s), (Interval{-5, 2}));
  EXPECT_EQ(rangeOf(select(binary(BinaryOp::Lt, i, c(0)), c(7), i), s), (Interval{-5, 7}));
  EXPECT_FALSE(rangeOf(load(0, ScalarType::I32, {i}), s));
}

TEST(Access, StridesAndFootprints) {
  Kernel k = bound(matmul(), {{"n", 64}});
  auto acc = collectAccesses(k, 0);
  ASSERT_EQ(acc.size(), 3u);  // a, b, then the store to c
  const Access& a = acc[0];
  const Access& b = acc[1];
  const Access& cw = acc[2];
  EXPECT_FALSE(a.isWrite);
  EXPECT_TRUE(cw.isWrite);
  EXPECT_EQ(a.scope.size(), 3u);  // i, j, k
  int i = k.nests[0].loops[0].id, j = k.nests[0].loops[1].id;
  EXPECT_EQ(strideAlong(k, cw, j), 1);
  EXPECT_EQ(strideAlong(k, cw, i), 64);
  EXPECT_EQ(parallelLoops(k, 0), (std::vector<int>{i, j}));
  ASSERT_EQ(reductionLoops(k, 0).size(), 1u);
  std::map<int, Interval> tile{{i, {16, 31}}, {j, {32, 47}}};
  auto fa = footprint(k, a, tile);
  ASSERT_TRUE(fa);
  EXPECT_EQ(fa->dims, (std::vector<Interval>{{16, 31}, {0, 63}}));
  EXPECT_EQ(fa->elements(), 16 * 64);
  auto fb = footprint(k, b, tile);
  EXPECT_EQ(fb->dims, (std::vector<Interval>{{0, 63}, {32, 47}}));
  EXPECT_EQ(footprint(k, cw, tile)->elements(), 256);
}

TEST(Bounds, OffByOneIsReportedWithRange) {
  KernelBuilder kb("shift");
  Expr n = kb.size("n");
  int a = kb.array("a", {n}), o = kb.array("o", {n}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), n);
  kb.nest({i}, {KernelBuilder::store(o, {kb.idx(i)}, kb.ld(a, {add(kb.idx(i), c(1))}, {3, 10, 8}))});
  Kernel k = bound(kb.kernel(), {{"n", 500}});
  Diagnostics d;
  EXPECT_FALSE(checkBounds(k, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].loc.line, 3);
  EXPECT_EQ(d.all()[0].message,
            "access a[i + 1] may be out of bounds: dimension 0 reaches 500 but the extent is 500 (the index "
            "ranges over [1, 500])");
}

TEST(Races, SameElementEveryIteration) {
  KernelBuilder kb("bad");
  Expr n = kb.size("n");
  int a = kb.array("a", {n, n}), o = kb.array("o", {n}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), n), j = kb.loop("j", c(0), n);
  kb.nest({i, j}, {KernelBuilder::store(o, {kb.idx(i)}, kb.ld(a, {kb.idx(i), kb.idx(j)}))});
  Kernel k = bound(kb.kernel(), {{"n", 10}});
  Diagnostics d;
  EXPECT_FALSE(checkRaces(k, d));
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].message,
            "every iteration of 'j' writes the same element of o; make it a reduction (sum(j in ...))");
}


// One nest `for i in 0..n, j in 0..n { o[f(i, j)] = 1 }` over a 1-D array of `len` elements.
Kernel storeKernel(int64_t n, int64_t len, const std::function<std::vector<Stmt>(KernelBuilder&, int, Expr, Expr)>& body) {
  KernelBuilder kb("s");
  int o = kb.array("o", {c(len)}, ArrayMode::InOut);
  Loop i = kb.loop("i", c(0), c(n)), j = kb.loop("j", c(0), c(n));
  Expr ii = KernelBuilder::idx(i), jj = KernelBuilder::idx(j);
  kb.nest({i, j}, body(kb, o, ii, jj));
  return kb.kernel();
}

Diagnostics races(const Kernel& k) {
  Diagnostics d;
  checkRaces(k, d);
  return d;
}

TEST(Races, MixedRadixProof) {
  // o[i + 1000*j] over 1000 x 1000 is injective (and too large to enumerate quickly).
  auto k = storeKernel(1000, 1000000, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    return std::vector<Stmt>{KernelBuilder::store(o, {add(i, mul(c(1000), j))}, floatImm(1, ScalarType::F32))};
  });
  EXPECT_TRUE(races(k).empty());
}

TEST(Races, CollisionFoundByEnumeration) {
  auto k = storeKernel(4, 16, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    return std::vector<Stmt>{KernelBuilder::store(o, {add(i, j)}, floatImm(1, ScalarType::F32))};
  });
  Diagnostics d = races(k);
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].message,
            "iterations (i=0, j=1) and (i=1, j=0) of this loop nest both write o[1]; every iteration must "
            "write its own element");
}

TEST(Races, CollisionFoundOnLargeDomain) {
  // o[i + 2*j]: (i=2, j=0) and (i=0, j=1) collide; the domain is too large to enumerate.
  auto k = storeKernel(5000, 20000, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    return std::vector<Stmt>{KernelBuilder::store(o, {add(i, mul(c(2), j))}, floatImm(1, ScalarType::F32))};
  });
  Diagnostics d = races(k);
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_NE(d.all()[0].message.find("both write o["), std::string::npos) << d.all()[0].message;
}

TEST(Races, InterleavedStoresAreDisjoint) {
  auto k = storeKernel(3000, 2 * 3000 * 3000, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    Expr base = mul(c(2), add(j, mul(c(3000), i)));
    return std::vector<Stmt>{KernelBuilder::store(o, {base}, floatImm(1, ScalarType::F32)),
                             KernelBuilder::store(o, {add(base, c(1))}, floatImm(2, ScalarType::F32))};
  });
  EXPECT_TRUE(races(k).empty());
}

TEST(Races, QuasiAffineStoreByEnumeration) {
  KernelBuilder kb("q");
  int o = kb.array("o", {c(16), c(4)}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), c(64));
  Expr ii = KernelBuilder::idx(i);
  kb.nest({i}, {KernelBuilder::store(o, {div(ii, c(4)), mod(ii, c(4))}, floatImm(1, ScalarType::F32))});
  Diagnostics d;
  EXPECT_TRUE(checkRaces(kb.kernel(), d));
  EXPECT_TRUE(d.empty());
  EXPECT_TRUE(checkBounds(kb.kernel(), d));
}

TEST(Races, CrossIterationDependence) {
  auto k = storeKernel(8, 100, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    Expr at = add(i, mul(c(8), j));
    return std::vector<Stmt>{KernelBuilder::store(o, {at}, kb.ld(o, {add(at, c(1))}, {5, 9, 1}))};
  });
  Diagnostics d = races(k);
  ASSERT_EQ(d.errorCount(), 1);
  EXPECT_EQ(d.all()[0].loc.line, 5);
  EXPECT_EQ(d.all()[0].message.rfind("cross-iteration dependence: the read o[i + 8 * j + 1]", 0), 0u)
      << d.all()[0].message;
  // Reading the element this point writes is fine (rhs = rhs + ...).
  auto ok = storeKernel(8, 100, [](KernelBuilder& kb, int o, Expr i, Expr j) {
    Expr at = add(i, mul(c(8), j));
    return std::vector<Stmt>{KernelBuilder::store(o, {at}, kb.ld(o, {add(mul(j, c(8)), i)}))};
  });
  EXPECT_TRUE(races(ok).empty());
}

TEST(Races, TriangularStoreAndZeroLoopNest) {
  KernelBuilder kb("t");
  int o = kb.array("o", {c(50), c(50)}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), c(50));
  Loop j = kb.loop("j", c(0), add(KernelBuilder::idx(i), c(1)));
  kb.nest({i, j}, {KernelBuilder::store(o, {KernelBuilder::idx(i), KernelBuilder::idx(j)}, floatImm(1, ScalarType::F32))});
  kb.nest({}, {KernelBuilder::store(o, {c(0), c(0)}, floatImm(1, ScalarType::F32)),
               KernelBuilder::store(o, {c(0), c(0)}, kb.ld(o, {c(1), c(1)}))});
  Diagnostics d;
  EXPECT_TRUE(checkRaces(kb.kernel(), d));
  EXPECT_TRUE(checkBounds(kb.kernel(), d));
  EXPECT_TRUE(d.empty());
}

TEST(Bounds, TriangularOverflowAndNegative) {
  KernelBuilder kb("t");
  int o = kb.array("o", {c(50), c(50)}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), c(50));
  Loop j = kb.loop("j", c(0), add(KernelBuilder::idx(i), c(1)));
  Expr ii = KernelBuilder::idx(i), jj = KernelBuilder::idx(j);
  kb.nest({i, j}, {KernelBuilder::store(o, {ii, add(jj, c(1))}, floatImm(1, ScalarType::F32)),
                   KernelBuilder::store(o, {ii, sub(jj, c(1))}, floatImm(1, ScalarType::F32)),
                   KernelBuilder::store(o, {ii, sub(ii, jj)}, floatImm(1, ScalarType::F32))});
  Diagnostics d;
  EXPECT_FALSE(checkBounds(kb.kernel(), d));
  ASSERT_EQ(d.errorCount(), 2);
  EXPECT_NE(d.all()[0].message.find("dimension 1 reaches 50 but the extent is 50"), std::string::npos);
  EXPECT_NE(d.all()[1].message.find("dimension 1 reaches -1 but indices start at 0"), std::string::npos);
}

TEST(Bounds, IndirectWarnsAndChecksTheIndexLoad) {
  KernelBuilder kb("g");
  int u = kb.array("u", {c(100)});
  int map = kb.array("map", {c(10)}, ArrayMode::In, ScalarType::I32);
  int o = kb.array("o", {c(10)}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), c(10));
  Expr ii = KernelBuilder::idx(i);
  kb.nest({i}, {KernelBuilder::store(o, {ii}, kb.ld(u, {kb.ld(map, {add(ii, c(1))})}))});
  Diagnostics d;
  EXPECT_FALSE(checkBounds(kb.kernel(), d));
  ASSERT_EQ(d.all().size(), 2u);
  EXPECT_EQ(d.all()[0].message,
            "access map[i + 1] may be out of bounds: dimension 0 reaches 10 but the extent is 10 (the index "
            "ranges over [1, 10])");
  EXPECT_EQ(d.all()[1].severity, Severity::Warning);
  EXPECT_EQ(d.all()[1].message,
            "indirect index into u cannot be proved in bounds; it is checked at run time by the reference "
            "executor");
}

TEST(Hash, IgnoresNamesButNotSizes) {
  Kernel a = bound(matmul(), {{"n", 64}});
  Kernel b = a;
  b.name = "other";
  b.params[0].name = "m";
  b.nests[0].loops[0].name = "x";
  b.nests[0].loops[0].loc = {7, 7, 1};
  b.sizes = {{"m", 64}};
  EXPECT_EQ(structuralHash(a), structuralHash(b));
  Kernel c2 = bound(matmul(), {{"n", 65}});
  EXPECT_NE(structuralHash(a), structuralHash(c2));
}

TEST(Printer, Matmul) {
  Kernel k = bound(matmul(), {{"n", 8}});
  EXPECT_EQ(printKernel(k),
            "kernel matmul(n: int = 8, a: f32[8, 8], b: f32[8, 8], out c: f32[8, 8]) {\n"
            "  for i in 0..8, j in 0..8 {\n"
            "    c[i, j] = sum(k in 0..8, a[i, k] * b[k, j]);\n"
            "  }\n"
            "}\n");
  Expr i = var(VarKind::Index, 0, "i", ScalarType::I32);
  EXPECT_EQ(printExpr(mul(add(i, c(1)), sub(i, sub(c(2), i)))), "(i + 1) * (i - (2 - i))");
  EXPECT_EQ(printExpr(sub(sub(i, c(1)), c(2))), "i - 1 - 2");
  EXPECT_EQ(printExpr(unary(UnaryOp::Neg, c(-3))), "-(-3)");
}

}  // namespace
}  // namespace rtcg
