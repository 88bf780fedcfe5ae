// The IR verifier: checks the invariants IR.h states, so that a pass that breaks them is caught
// where it runs instead of as a wrong kernel or a crash in a later stage. The frontend and
// bindSizes run it in builds without NDEBUG (checkKernel); the tests run it on every example.
#pragma once

#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

// Every violation of the IR's invariants in `k`, each a line saying where (nest, statement,
// expression) and what; empty when the kernel is well formed. Checked: node shapes (operand
// counts, non-null operands, reduction loops), types (operands of arithmetic and comparisons
// alike, conditions bool, loads and stores of the array's element type, integer indices and
// bounds), variables (indices and lets used in scope only, size and scalar variables naming such
// parameters with their types), accesses (as many indices as the array has dimensions, stores to
// arrays the kernel writes), ids (unique, below numVarIds), and for a bound kernel constant
// positive extents and no size variables left.
std::vector<std::string> verifyKernel(const Kernel& k);

// Where a stage's output is handed on: in builds without NDEBUG, an internal error listing the
// violations when `k` is not well formed (after `stage`, e.g. "bindSizes"); nothing otherwise.
void checkKernel(const Kernel& k, const char* stage);

}  // namespace rtcg
