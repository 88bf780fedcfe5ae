// Kernels from DSL source for the codegen tests (unlike schedule/TestKernels.h, through the
// frontend): a source string or a file of examples/, parsed and bound under gtest expectations; a
// failure is a test failure and returns Kernel{}.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "frontend/Frontend.h"
#include "ir/Bind.h"

namespace rtcg::testing {

// Kernel `kernel` of `source` (empty: its first kernel), its sizes bound.
inline Kernel fromSource(const std::string& source, const std::string& kernel, const SizeBindings& sizes,
                         const std::string& file = "inline.rtcg") {
  Diagnostics diags;
  auto prog = parseProgram(file, source, diags);
  EXPECT_TRUE(prog.has_value()) << diags.render(file, source);
  const Kernel* k = !prog                ? nullptr
                    : !kernel.empty()    ? prog->find(kernel)
                    : prog->kernels.empty() ? nullptr
                                            : &prog->kernels[0];
  EXPECT_NE(k, nullptr) << kernel;
  auto bound = k ? bindSizes(*k, sizes, diags) : std::nullopt;
  EXPECT_TRUE(bound.has_value()) << kernel << "\n" << diags.render(file, source);
  return bound ? *bound : Kernel{};
}

// The first kernel of `source`, its sizes bound.
inline Kernel fromSource(const std::string& source, const SizeBindings& sizes) { return fromSource(source, "", sizes); }

// Kernel `kernel` of examples/`file` (empty: its first kernel), its sizes bound.
inline Kernel exampleKernel(const std::string& file, const std::string& kernel, const SizeBindings& sizes) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  return fromSource(ss.str(), kernel, sizes, file);
}

}  // namespace rtcg::testing
