// Helpers shared by the frontend tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <sstream>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "frontend/Frontend.h"
#include "ir/IR.h"

namespace rtcg::test {

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::filesystem::path sourceDir() { return RTCG_SOURCE_DIR; }

// Parses `source` and fails the current test (showing the diagnostics) unless it is error- and
// warning-free.
inline Program parseClean(const std::string& source, const std::string& name = "test.rtcg") {
  Diagnostics diags;
  std::optional<Program> p = parseProgram(name, source, diags);
  EXPECT_TRUE(diags.empty()) << diags.render(name, source);
  if (!p) return Program{};
  return std::move(*p);
}

// The rendered diagnostics of a program expected to fail.
inline std::string parseErrors(const std::string& source, const std::string& name = "test.rtcg") {
  Diagnostics diags;
  std::optional<Program> p = parseProgram(name, source, diags);
  EXPECT_FALSE(p.has_value()) << "expected errors in:\n" << source;
  EXPECT_TRUE(diags.hasErrors());
  return diags.render(name, source);
}

// Calls `f` on every expression node under `e` (pre-order), including reduction loop bounds.
inline void forEachExpr(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (!e) return;
  f(e);
  for (const Loop& l : e->loops) {
    forEachExpr(l.lo, f);
    forEachExpr(l.hi, f);
  }
  for (const Expr& o : e->operands) forEachExpr(o, f);
}

inline void forEachExpr(const Kernel& k, const std::function<void(const Expr&)>& f) {
  for (const Param& p : k.params)
    for (const Expr& s : p.shape) forEachExpr(s, f);
  for (const LoopNest& n : k.nests) {
    for (const Loop& l : n.loops) {
      forEachExpr(l.lo, f);
      forEachExpr(l.hi, f);
    }
    for (const Stmt& s : n.body) {
      for (const Expr& i : s.indices) forEachExpr(i, f);
      forEachExpr(s.value, f);
    }
  }
}

inline int countExprs(const Kernel& k, const std::function<bool(const Expr&)>& pred) {
  int n = 0;
  forEachExpr(k, [&](const Expr& e) { n += pred(e) ? 1 : 0; });
  return n;
}

}  // namespace rtcg::test
