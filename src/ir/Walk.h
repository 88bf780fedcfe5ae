// Small generic traversals over IR expressions, shared by the analyses of this folder.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>

#include "ir/IR.h"

namespace rtcg {

// Calls `f` on `e` and every subexpression (pre-order), including reduction loop bounds.
void visitExprs(const Expr& e, const std::function<void(const Expr&)>& f);

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

// Floor division and modulo (rounding toward -infinity); b must not be 0.
int64_t floorDiv(int64_t a, int64_t b);
int64_t floorMod(int64_t a, int64_t b);

}  // namespace rtcg
