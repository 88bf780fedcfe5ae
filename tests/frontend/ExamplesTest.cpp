// Every example kernel parses without a diagnostic, and its IR has the expected shape.
#include <set>

#include "TestUtil.h"

namespace rtcg::test {
namespace {

Program parseExample(const std::string& name) {
  std::filesystem::path p = sourceDir() / "examples" / name;
  return parseClean(readFile(p), name);
}

bool isLoad(const Expr& e) { return e->kind == ExprKind::Load; }
bool isIndirectLoad(const Expr& e) {
  if (e->kind != ExprKind::Load) return false;
  bool inner = false;
  for (const Expr& i : e->operands)
    forEachExpr(i, [&](const Expr& x) { inner |= x->kind == ExprKind::Load; });
  return inner;
}

TEST(Examples, AllParseWithoutDiagnostics) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() / "examples")) {
    if (entry.path().extension() != ".rtcg") continue;
    SCOPED_TRACE(entry.path().filename().string());
    Diagnostics diags;
    std::string src = readFile(entry.path());
    std::optional<Program> p = parseProgram(entry.path().filename().string(), src, diags);
    ASSERT_TRUE(p.has_value()) << diags.render(entry.path().filename().string(), src);
    EXPECT_TRUE(diags.empty());
    EXPECT_FALSE(p->kernels.empty());
    EXPECT_EQ(p->source, src);
    ++count;
  }
  EXPECT_GE(count, 10);
}

TEST(Examples, Matmul) {
  Program p = parseExample("matmul.rtcg");
  ASSERT_EQ(p.kernels.size(), 1u);
  const Kernel& k = p.kernels[0];
  EXPECT_EQ(k.name, "matmul");
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].kind, ParamKind::Size);
  EXPECT_EQ(k.params[1].kind, ParamKind::Array);
  EXPECT_EQ(k.params[1].mode, ArrayMode::In);
  EXPECT_EQ(k.params[3].mode, ArrayMode::Out);
  EXPECT_EQ(k.params[3].shape.size(), 2u);
  ASSERT_EQ(k.nests.size(), 1u);
  const LoopNest& n = k.nests[0];
  ASSERT_EQ(n.loops.size(), 2u);
  EXPECT_EQ(n.loops[0].name, "i");
  EXPECT_EQ(n.loops[1].name, "j");
  ASSERT_EQ(n.body.size(), 1u);
  const Stmt& s = n.body[0];
  EXPECT_EQ(s.kind, StmtKind::Store);
  EXPECT_EQ(s.array, 3);
  ASSERT_EQ(s.value->kind, ExprKind::Reduce);
  EXPECT_EQ(s.value->reduceOp, ReduceOp::Sum);
  ASSERT_EQ(s.value->loops.size(), 1u);
  EXPECT_EQ(s.value->loops[0].name, "k");
  EXPECT_EQ(s.value->type, ScalarType::F32);
  // Unique ids for i, j, k.
  std::set<int> ids = {n.loops[0].id, n.loops[1].id, s.value->loops[0].id};
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(k.numVarIds, 3);
  for (int id : ids) EXPECT_LT(id, k.numVarIds);
  EXPECT_EQ(countExprs(k, isLoad), 2);
}

TEST(Examples, MatmulFlatIndicesAreSums) {
  Program p = parseExample("matmul_flat.rtcg");
  const Stmt& s = p.kernels[0].nests[0].body[0];
  ASSERT_EQ(s.indices.size(), 1u);
  EXPECT_EQ(s.indices[0]->kind, ExprKind::Binary);
  EXPECT_EQ(s.indices[0]->binaryOp, BinaryOp::Add);
  EXPECT_EQ(p.kernels[0].params[1].shape[0]->binaryOp, BinaryOp::Mul);
}

TEST(Examples, DotIsANestWithoutLoops) {
  Program p = parseExample("dot.rtcg");
  const Kernel& k = p.kernels[0];
  ASSERT_EQ(k.nests.size(), 1u);
  EXPECT_TRUE(k.nests[0].loops.empty());
  const Stmt& s = k.nests[0].body[0];
  ASSERT_EQ(s.indices.size(), 1u);
  EXPECT_EQ(s.indices[0]->kind, ExprKind::IntImm);
  EXPECT_EQ(s.indices[0]->type, ScalarType::I32);
  EXPECT_EQ(s.value->kind, ExprKind::Reduce);
}

TEST(Examples, DgFaceGatherIsIndirect) {
  Program p = parseExample("dg_face_gather.rtcg");
  const Kernel& k = p.kernels[0];
  EXPECT_EQ(countExprs(k, isIndirectLoad), 2);
  EXPECT_EQ(k.params[5].type, ScalarType::I32);
  const Stmt& s = k.nests[0].body[0];
  EXPECT_EQ(s.value->binaryOp, BinaryOp::Sub);
}

TEST(Examples, DgDiffHasThreeStores) {
  Program p = parseExample("dg_diff.rtcg");
  const LoopNest& n = p.kernels[0].nests[0];
  ASSERT_EQ(n.body.size(), 3u);
  std::set<int> arrays, reductionIds;
  for (const Stmt& s : n.body) {
    arrays.insert(s.array);
    ASSERT_EQ(s.value->kind, ExprKind::Reduce);
    reductionIds.insert(s.value->loops[0].id);
  }
  EXPECT_EQ(arrays.size(), 3u);
  EXPECT_EQ(reductionIds.size(), 3u);  // the three `j` loops are distinct loops
}

TEST(Examples, DgLiftReadsInout) {
  Program p = parseExample("dg_lift.rtcg");
  const Kernel& k = p.kernels[0];
  EXPECT_EQ(k.params.back().mode, ArrayMode::InOut);
  // 4*Nfp: the literal 4 is an i32 constant, no cast.
  const Expr& shape = k.params[3].shape[1];
  ASSERT_EQ(shape->kind, ExprKind::Binary);
  EXPECT_EQ(shape->operands[0]->kind, ExprKind::IntImm);
  EXPECT_EQ(shape->operands[0]->intValue, 4);
}

TEST(Examples, BatchedMatmulHasThreeLoops) {
  Program p = parseExample("batched_matmul.rtcg");
  EXPECT_EQ(p.kernels[0].nests[0].loops.size(), 3u);
  EXPECT_EQ(p.kernels[0].params[2].shape.size(), 3u);
}

TEST(Examples, AxpbyScalars) {
  Program p = parseExample("axpby.rtcg");
  const Kernel& k = p.kernels[0];
  EXPECT_EQ(k.params[1].kind, ParamKind::Scalar);
  EXPECT_EQ(k.params[1].type, ScalarType::F32);
  int scalars = countExprs(k, [](const Expr& e) { return e->kind == ExprKind::Var && e->varKind == VarKind::Scalar; });
  EXPECT_EQ(scalars, 2);
}

}  // namespace
}  // namespace rtcg::test
