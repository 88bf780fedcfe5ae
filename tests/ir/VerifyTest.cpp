// The IR verifier: every kernel the frontend and bindSizes produce is well formed (the examples,
// the frontend's good programs, the language document's examples), and hand-built broken IR is
// caught with a message that says what is wrong. Node constructors refuse missing operands.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Verify.h"
#include "support/Error.h"

namespace rtcg {
namespace {

using namespace rtcg::test;
namespace fs = std::filesystem;

std::string slurp(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += x + "\n";
  return s;
}

// Every kernel of `source` verifies, unbound and bound to `sizes` (the kernel's own sizes; a
// kernel with a size missing from `sizes` gets `fallback` for it). Returns the kernels bound.
int verifyProgram(const std::string& name, const std::string& source, const SizeBindings& sizes, int64_t fallback) {
  Diagnostics d;
  auto prog = parseProgram(name, source, d);
  EXPECT_TRUE(prog.has_value()) << d.render(name, source);
  if (!prog) return 0;
  int bound = 0;
  for (const Kernel& k : prog->kernels) {
    SCOPED_TRACE(name + ": kernel " + k.name);
    EXPECT_EQ(joined(verifyKernel(k)), "");
    SizeBindings own;
    for (const Param& p : k.params)
      if (p.kind == ParamKind::Size) own[p.name] = sizes.count(p.name) ? sizes.at(p.name) : fallback;
    Diagnostics bd;
    auto b = bindSizes(k, own, bd);
    if (!b) continue;  // sizes that make an extent non-positive: nothing to verify
    EXPECT_EQ(joined(verifyKernel(*b)), "");
    ++bound;
  }
  return bound;
}

TEST(Verify, EveryExampleUnboundAndBound) {
  const fs::path dir = fs::path(RTCG_SOURCE_DIR) / "examples";
  std::istringstream lines(slurp(dir / "sizes.txt"));
  std::string line;
  int files = 0;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string file, binding;
    words >> file;
    SizeBindings sizes;
    while (words >> binding) {
      size_t eq = binding.find('=');
      sizes[binding.substr(0, eq)] = std::stoll(binding.substr(eq + 1));
    }
    EXPECT_GE(verifyProgram(file, slurp(dir / file), sizes, 1), 1) << file;
    ++files;
  }
  EXPECT_GE(files, 10);
}

TEST(Verify, TheFrontendsGoodPrograms) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(RTCG_SOURCE_DIR) / "tests/frontend/good")) {
    if (entry.path().extension() != ".rtcg") continue;
    verifyProgram(entry.path().filename().string(), slurp(entry.path()), {}, 7);
    ++files;
  }
  EXPECT_GE(files, 5);
}

TEST(Verify, TheLanguageDocumentsExamples) {
  std::istringstream doc(slurp(fs::path(RTCG_SOURCE_DIR) / "docs/language.md"));
  std::string line, block;
  bool open = false, valid = false;
  int blocks = 0;
  while (std::getline(doc, line)) {
    if (line.rfind("```", 0) != 0) {
      if (open) block += line + "\n";
      continue;
    }
    if (open && valid) {
      verifyProgram("language.md", block, {}, 5);
      ++blocks;
    }
    valid = !open && line == "```rtcg";
    open = !open;
    block.clear();
  }
  EXPECT_GE(blocks, 10);
}

// out[i] = a[i] (+ whatever a test puts in) over i in 0..n, and a sum over k.
struct Small {
  KernelBuilder kb{"small"};
  Expr n = kb.size("n");
  int a = kb.array("a", {n});
  int m = kb.array("m", {n, n});
  int out = kb.array("out", {n}, ArrayMode::Out);
  Loop i = kb.loop("i", c(0), n);
  Loop k = kb.loop("k", c(0), n);

  Kernel with(std::vector<Stmt> body) {
    kb.nest({i}, std::move(body));
    return kb.kernel();
  }
  Stmt storeOut(Expr v) { return KernelBuilder::store(out, {KernelBuilder::idx(i)}, std::move(v)); }
};

// The violations of `k`, joined; each test checks one message.
std::string violations(const Kernel& k) { return joined(verifyKernel(k)); }

TEST(Verify, AWellFormedHandBuiltKernelPasses) {
  Small s;
  Expr sum = reduce(ReduceOp::Sum, {s.k}, s.kb.ld(s.m, {KernelBuilder::idx(s.i), KernelBuilder::idx(s.k)}));
  EXPECT_EQ(violations(s.with({s.storeOut(sum)})), "");
}

TEST(Verify, IndexOutsideItsLoop) {
  Small s;
  // k is a reduction index, read outside the reduction.
  Kernel k = s.with({s.storeOut(s.kb.ld(s.a, {KernelBuilder::idx(s.k)}))});
  EXPECT_NE(violations(k).find("index 'k' used outside its loop"), std::string::npos) << violations(k);
}

TEST(Verify, LoadRankDiffersFromTheArrays) {
  Small s;
  Kernel k = s.with({s.storeOut(s.kb.ld(s.m, {KernelBuilder::idx(s.i)}))});
  EXPECT_NE(violations(k).find("of 'm' with 1 indices; it has 2 dimensions"), std::string::npos) << violations(k);
}

TEST(Verify, OperandsOfDifferentTypes) {
  Small s;
  Expr wide = intImm(1, ScalarType::I64);
  Kernel k = s.with({s.storeOut(s.kb.ld(s.a, {add(KernelBuilder::idx(s.i), wide)}))});
  EXPECT_NE(violations(k).find("'+' of i32 and i64"), std::string::npos) << violations(k);
}

TEST(Verify, StoresOfTheWrongTypeAndToInputs) {
  Small s;
  Kernel k = s.with({s.storeOut(floatImm(1.0, ScalarType::F64)),
                     KernelBuilder::store(s.a, {KernelBuilder::idx(s.i)}, floatImm(0.0, ScalarType::F32))});
  EXPECT_NE(violations(k).find("stores f64 into 'out' of f32"), std::string::npos) << violations(k);
  EXPECT_NE(violations(k).find("store to 'a', an input array"), std::string::npos) << violations(k);
}

TEST(Verify, SelectConditionMustBeBool) {
  Small s;
  Expr v = s.kb.ld(s.a, {KernelBuilder::idx(s.i)});
  Kernel k = s.with({s.storeOut(select(KernelBuilder::idx(s.i), v, v))});
  EXPECT_NE(violations(k).find("condition of type i32, not bool"), std::string::npos) << violations(k);
}

TEST(Verify, LetUsedBeforeItsDefinition) {
  Small s;
  Expr t;
  Stmt let = s.kb.let("t", s.kb.ld(s.a, {KernelBuilder::idx(s.i)}), &t);
  Kernel k = s.with({s.storeOut(t), let});
  EXPECT_NE(violations(k).find("let 't' used outside its scope"), std::string::npos) << violations(k);
}

TEST(Verify, IdsDefinedTwiceOrOutOfRange) {
  Small s;
  Loop again = s.k;
  again.id = s.i.id;
  Expr sum = reduce(ReduceOp::Sum, {again}, s.kb.ld(s.a, {KernelBuilder::idx(again)}));
  Kernel k = s.with({s.storeOut(sum)});
  EXPECT_NE(violations(k).find("is defined twice"), std::string::npos) << violations(k);
  k.numVarIds = 0;
  EXPECT_NE(violations(k).find("id 0 of 'i' is outside [0, numVarIds = 0)"), std::string::npos) << violations(k);
}

TEST(Verify, BoundKernelsHaveConstantExtentsAndNoSizes) {
  Small s;
  Kernel k = s.with({s.storeOut(s.kb.ld(s.a, {KernelBuilder::idx(s.i)}))});
  k.sizes["n"] = 10;  // claims to be bound, but nothing was substituted
  EXPECT_NE(violations(k).find("extent of a bound kernel is not a positive constant"), std::string::npos);
  EXPECT_NE(violations(k).find("size 'n' left in a bound kernel"), std::string::npos) << violations(k);
}

TEST(Verify, MalformedNodes) {
  Small s;
  // A reduction without loops and a binary operator with one operand, built around the
  // constructors (which refuse them).
  auto red = std::make_shared<ExprNode>(*reduce(ReduceOp::Sum, {s.k}, s.kb.ld(s.a, {KernelBuilder::idx(s.k)})));
  red->loops.clear();
  auto half = std::make_shared<ExprNode>(*add(KernelBuilder::idx(s.i), c(1)));
  half->operands.pop_back();
  Kernel k = s.with({s.storeOut(red), KernelBuilder::store(s.out, {half}, floatImm(0.0, ScalarType::F32))});
  EXPECT_NE(violations(k).find("reduction without loops"), std::string::npos) << violations(k);
  EXPECT_NE(violations(k).find("with 1 operands, not 2"), std::string::npos) << violations(k);
}

TEST(Verify, ConstructorsRefuseMissingOperands) {
  Expr x = c(1);
  EXPECT_THROW(binary(BinaryOp::Add, x, nullptr), InternalError);
  EXPECT_THROW(unary(UnaryOp::Neg, nullptr), InternalError);
  EXPECT_THROW(select(nullptr, x, x), InternalError);
  EXPECT_THROW(call(MathFn::Min, {x}), InternalError);  // min takes two arguments
  EXPECT_THROW(reduce(ReduceOp::Sum, {}, x), InternalError);
  EXPECT_THROW(load(0, ScalarType::F32, {nullptr}), InternalError);
  EXPECT_THROW(withOperands(add(x, x), {x}), InternalError);
}

}  // namespace
}  // namespace rtcg
