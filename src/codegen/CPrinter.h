// The strict printer of the C syntax tree (CAst.h). Every node kind has a case; identifiers,
// operators and type names are checked (an invalid one is an internal error, never silently
// printed); parentheses are inserted by precedence only where needed.
#pragma once

#include <string>

#include "codegen/CAst.h"

namespace rtcg::c {

std::string printExpr(const ExprP& e);
std::string printStmt(const Stmt& s, int indent = 0);
std::string printFunction(const Function& f);
std::string printModule(const Module& m);

}  // namespace rtcg::c
