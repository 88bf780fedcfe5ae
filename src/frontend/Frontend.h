// The DSL frontend: source text -> rtcg::Program, with compiler-style diagnostics.
#pragma once

#include <optional>
#include <string>

#include "ir/IR.h"
#include "support/Diagnostics.h"

namespace rtcg {

// Parses and checks `source` (the contents of `fileName`, which is used for messages only).
// Errors and warnings are added to `diags`; render them with diags.render(fileName, source).
// Returns the program, or nullopt iff diags.hasErrors() afterwards.
std::optional<Program> parseProgram(const std::string& fileName, const std::string& source, Diagnostics& diags);

}  // namespace rtcg
