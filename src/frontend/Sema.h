// The semantic half of the frontend: resolves names, checks types and the indexing rules, and
// lowers the syntax tree to IR (ir/IR.h).
//
// What the lowered IR looks like (what later stages can rely on):
//  - every Loop and Let of a kernel has an id unique in the kernel, in [0, Kernel::numVarIds);
//  - top-level statements outside any `for` form a LoopNest with zero loops;
//  - operands of arithmetic, comparisons, min/max/pow/fma and select branches have one type;
//  - untyped literals (`2`, `0.5`) become IntImm of the integer type the context needs, or
//    FloatImm of type f64; where the context needs another type than the literal can have, the
//    literal is wrapped in a Cast: `x * 2` with x: f32 is Mul(x, Cast(f32, IntImm(2, i32))),
//    `x * 0.5` is Mul(x, Cast(f32, FloatImm(0.5, f64))). Arithmetic on literals alone is folded
//    (`2 * 3` is IntImm 6, `-1` is IntImm -1);
//  - index expressions of loads and stores, loop bounds and array shapes are integer; indices
//    are affine or quasi-affine (floor / and % by positive integer literals) in loop indices and
//    size parameters, or indirect (contain a Load); bounds and shapes contain no Load, and
//    `let` variables used in them are replaced by their values;
//  - SourceLocs: a Load or any expression spans its source text; a Store's loc is its target
//    `a[i, j]`; a Let's loc is its name; a Loop's is `i in lo..hi`; a nest's is its `for` header
//    (or its first statement); a Param's is its name; a Kernel's is its name.
#pragma once

#include <vector>

#include "frontend/AST.h"
#include "frontend/LineMap.h"
#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace rtcg::frontend {

// Checks `program` and lowers its kernels. Errors go to `diags`; the result is only meaningful
// when no error was reported.
std::vector<Kernel> analyze(const ast::Program& program, const LineMap& lines, Diagnostics& diags);

}  // namespace rtcg::frontend
