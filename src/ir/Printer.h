// Readable printing of IR, in a syntax close to the DSL. Printing is total: every node kind has a
// case (a strict visitor), so adding a kind without a printer does not compile cleanly.
#pragma once

#include <string>

#include "ir/IR.h"

namespace rtcg {

std::string printExpr(const Expr& e, const Kernel* k = nullptr);
std::string printKernel(const Kernel& k);

}  // namespace rtcg
