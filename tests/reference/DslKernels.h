// Kernels for the reference executor's tests, from DSL text: an example's source, and a kernel
// parsed and bound (diagnostics rendered into the rtcg::Error thrown on failure).
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "support/Error.h"

namespace rtcg::testing {

inline std::string readExample(const std::string& name) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The kernel `kernel` of `source` (the first when empty), bound to `sizes`.
inline Kernel bindDsl(const std::string& source, const SizeBindings& sizes, const std::string& kernel = "") {
  Diagnostics diags;
  auto prog = parseProgram("test.rtcg", source, diags);
  if (!prog) throw Error(diags.render("test.rtcg", source));
  const Kernel* k = kernel.empty() ? &prog->kernels.at(0) : prog->find(kernel);
  if (!k) throw Error("no kernel " + kernel);
  auto bound = bindSizes(*k, sizes, diags);
  if (!bound) throw Error(diags.render("test.rtcg", source));
  return *bound;
}

}  // namespace rtcg::testing
