// Binding size parameters to constants, and constant folding.
#pragma once

#include <optional>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace rtcg {

// Substitutes every Size variable with its value and folds constants. Errors (no location, or the
// parameter's location): a size parameter without a binding, a binding for a name that is not a
// size parameter of the kernel, an array extent that is not positive, a value outside i32.
std::optional<Kernel> bindSizes(const Kernel& k, const SizeBindings& sizes, Diagnostics& diags);

// Constant folding and trivial algebraic simplification (x+0, x*1, x*0 for integers, ...),
// preserving types and floor semantics of integer / and %.
Expr simplify(const Expr& e);

}  // namespace rtcg
