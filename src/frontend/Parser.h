// The syntactic half of the frontend: source text -> ast::Program. Implemented in
// grammar/parser.yy (Bison) with the lexer of grammar/lexer.re (re2c).
#pragma once

#include <string>

#include "frontend/AST.h"
#include "frontend/LineMap.h"
#include "support/Diagnostics.h"

namespace rtcg::frontend {

// Expressions nested deeper than this are rejected (with an error) so that the recursive passes
// over the tree (Sema, destructors) run in bounded stack space whatever the input.
inline constexpr int kMaxExprDepth = 200;

// Parses `source` into `out`. Syntax errors are reported to `diags`; the parser recovers at
// statement and parameter boundaries to report several per run. Returns true if there were none.
bool parseSource(const std::string& source, const LineMap& lines, Diagnostics& diags, ast::Program& out);

}  // namespace rtcg::frontend
