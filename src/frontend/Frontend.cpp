#include "frontend/Frontend.h"

#include "frontend/LineMap.h"
#include "frontend/Parser.h"
#include "frontend/Sema.h"
#include "ir/Verify.h"

namespace rtcg {

std::optional<Program> parseProgram(const std::string& fileName, const std::string& source, Diagnostics& diags) {
  frontend::LineMap lines(source);
  ast::Program tree;
  // Semantic checks on a tree with syntax errors would mostly report their consequences
  // (statements that were skipped), so they wait until the syntax is right.
  if (!frontend::parseSource(source, lines, diags, tree)) return std::nullopt;
  std::vector<Kernel> kernels = frontend::analyze(tree, lines, diags);
  if (diags.hasErrors()) return std::nullopt;
  for (const Kernel& k : kernels) checkKernel(k, "the frontend");
  Program program;
  program.fileName = fileName;
  program.source = source;
  program.kernels = std::move(kernels);
  return program;
}

}  // namespace rtcg
