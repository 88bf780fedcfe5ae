// The one traversal of IR expressions: where a node's subexpressions are (forEachChild), and the
// walks built on it. Analyses that only need to find or collect nodes use these instead of a
// recursion of their own over `operands` (which is how reduction loop bounds get forgotten).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "ir/IR.h"
#include "ir/IntOps.h"

namespace rtcg {

// Calls `f` on each direct subexpression of `e`, in evaluation order: a reduction's loop bounds
// (outer loop first, lo then hi), then the operands.
template <class F>
void forEachChild(const Expr& e, F&& f) {
  for (const Loop& l : e->loops) {
    f(l.lo);
    f(l.hi);
  }
  for (const Expr& o : e->operands) f(o);
}

// Calls `f` on `e` and every subexpression (pre-order), including reduction loop bounds.
template <class F>
void visitExprs(const Expr& e, F&& f) {
  f(e);
  forEachChild(e, [&](const Expr& c) { visitExprs(c, f); });
}

// Pre-order like visitExprs, but `f` returns whether to go into the node's children.
template <class F>
void visitExprsWhile(const Expr& e, F&& f) {
  if (f(e)) forEachChild(e, [&](const Expr& c) { visitExprsWhile(c, f); });
}

// Whether `pred` holds for `e` or a subexpression (including reduction loop bounds); stops at the
// first node it holds for.
template <class P>
bool anyExpr(const Expr& e, P&& pred) {
  bool found = false;
  visitExprsWhile(e, [&](const Expr& x) {
    found = found || pred(x);
    return !found;
  });
  return found;
}

// Calls `f` on every expression of the kernel's tree: array extents, loop bounds of the nests,
// and the indices and values of their statements (each one visited with visitExprs).
template <class F>
void visitKernelExprs(const Kernel& k, F&& f) {
  for (const Param& p : k.params)
    for (const Expr& d : p.shape) visitExprs(d, f);
  for (const LoopNest& n : k.nests) {
    for (const Loop& l : n.loops) {
      visitExprs(l.lo, f);
      visitExprs(l.hi, f);
    }
    for (const Stmt& s : n.body) {
      for (const Expr& i : s.indices) visitExprs(i, f);
      visitExprs(s.value, f);
    }
  }
}

// Rebuilds `e` bottom-up. After the children of a node are rewritten, `f` sees the node (with its
// new children) and returns a replacement, or nullptr to keep it. Unchanged subtrees are shared.
Expr rewriteExpr(const Expr& e, const std::function<Expr(const Expr&)>& f);

// True if `e` contains an array load anywhere (an indirect index, when `e` is an index).
bool containsLoad(const Expr& e);

// Replaces every Let variable by its definition (`lets`, by let id), recursively.
Expr inlineLets(const Expr& e, const std::map<int, Expr>& lets);

// Evaluates an integer expression in Index variables (values by loop id) with floor semantics;
// nullopt if it contains anything else (loads, floats, unbound variables) or divides by zero.
std::optional<int64_t> evalInt(const Expr& e, const std::map<int, int64_t>& env);

// Structural equality of two expressions (kinds, types, values, variables by id, operands);
// names and source locations are ignored.
bool sameExpr(const Expr& a, const Expr& b);

// The expression sum(coeff * index) + constant of an affine form (type i64), for rangeOf.
Expr affineToExpr(const struct AffineForm& f);

}  // namespace rtcg
