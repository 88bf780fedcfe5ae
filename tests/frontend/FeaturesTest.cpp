// Language features, checked on the IR the frontend produces.
#include <sstream>

#include "TestUtil.h"
#include "ir/Printer.h"

namespace rtcg::test {
namespace {

const Stmt& onlyStmt(const Program& p, int nest = 0, int stmt = 0) {
  static const Stmt empty;
  if (p.kernels.empty() || (int)p.kernels[0].nests.size() <= nest ||
      (int)p.kernels[0].nests[nest].body.size() <= stmt) {
    ADD_FAILURE() << "missing statement";
    return empty;
  }
  return p.kernels[0].nests[nest].body[stmt];
}

TEST(Features, GoodProgramsParseWithoutDiagnostics) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(sourceDir() / "tests/frontend/good")) {
    SCOPED_TRACE(entry.path().filename().string());
    Program p = parseClean(readFile(entry.path()), entry.path().filename().string());
    EXPECT_FALSE(p.kernels.empty());
    ++count;
  }
  EXPECT_GE(count, 8);
}

// `local t: T[...]` (docs/language.md 4.1): an array after the signature's parameters, mode Local,
// printed as a declaration that parses back.
TEST(Features, LocalArraysFollowTheSignature) {
  Program p = parseClean(
      "kernel ln(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {\n"
      "  local mean: f32[m];\n"
      "  for i in 0..m { mean[i] = sum(j in 0..n, x[i, j]) / f32(n); }\n"
      "  local c: f64[m, n];\n"
      "  for i in 0..m, j in 0..n { c[i, j] = f64(x[i, j] - mean[i]); }\n"
      "  for i in 0..m, j in 0..n { y[i, j] = f32(c[i, j] * c[i, j]); }\n"
      "}\n");
  ASSERT_EQ(p.kernels.size(), 1u);
  const Kernel& k = p.kernels[0];
  ASSERT_EQ(k.params.size(), 6u);
  EXPECT_EQ(k.numSignatureParams(), 4u);
  EXPECT_EQ(k.params[4].name, "mean");
  EXPECT_TRUE(k.params[4].isLocal());
  EXPECT_TRUE(k.params[5].isLocal());
  EXPECT_EQ(k.params[5].type, ScalarType::F64);
  EXPECT_EQ(k.params[5].shape.size(), 2u);
  ASSERT_EQ(k.nests.size(), 3u);
  EXPECT_EQ(k.nests[1].body[0].array, 5);
  std::string printed = printKernel(k);
  EXPECT_NE(printed.find("kernel ln(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {\n  local mean: f32[m];\n"
                         "  local c: f64[m, n];\n"),
            std::string::npos)
      << printed;
  Program again = parseClean(printed);
  ASSERT_EQ(again.kernels.size(), 1u);
  EXPECT_EQ(printKernel(again.kernels[0]), printed);
}

TEST(Features, IntLiteralInFloatContextIsCast) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i] * 2; } }");
  const Expr& v = onlyStmt(p).value;
  ASSERT_EQ(v->kind, ExprKind::Binary);
  EXPECT_EQ(v->type, ScalarType::F32);
  const Expr& lit = v->operands[1];
  ASSERT_EQ(lit->kind, ExprKind::Cast);
  EXPECT_EQ(lit->type, ScalarType::F32);
  ASSERT_EQ(lit->operands[0]->kind, ExprKind::IntImm);
  EXPECT_EQ(lit->operands[0]->type, ScalarType::I32);
  EXPECT_EQ(lit->operands[0]->intValue, 2);
}

TEST(Features, FloatLiteralInF32ContextIsCastFromF64) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = 0.5 * x[i]; } }");
  const Expr& lit = onlyStmt(p).value->operands[0];
  ASSERT_EQ(lit->kind, ExprKind::Cast);
  EXPECT_EQ(lit->type, ScalarType::F32);
  ASSERT_EQ(lit->operands[0]->kind, ExprKind::FloatImm);
  EXPECT_EQ(lit->operands[0]->type, ScalarType::F64);
  EXPECT_DOUBLE_EQ(lit->operands[0]->floatValue, 0.5);
}

TEST(Features, FloatLiteralInF64ContextIsPlain) {
  Program p = parseClean("kernel k(n: int, x: f64[n], out y: f64[n]) { for i in 0..n { y[i] = 0.5 * x[i]; } }");
  const Expr& lit = onlyStmt(p).value->operands[0];
  ASSERT_EQ(lit->kind, ExprKind::FloatImm);
  EXPECT_EQ(lit->type, ScalarType::F64);
}

TEST(Features, IntLiteralTakesIntegerContextType) {
  Program p = parseClean("kernel k(n: int, x: i64[n], out y: i64[n]) { for i in 0..n { y[i] = x[i] + 3000000000; } }");
  const Expr& lit = onlyStmt(p).value->operands[1];
  ASSERT_EQ(lit->kind, ExprKind::IntImm);
  EXPECT_EQ(lit->type, ScalarType::I64);
  EXPECT_EQ(lit->intValue, 3000000000);
}

TEST(Features, LiteralArithmeticIsFolded) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i] * (2 * 3 - 7 / 2); } }");
  const Expr& lit = onlyStmt(p).value->operands[1];
  ASSERT_EQ(lit->kind, ExprKind::Cast);
  EXPECT_EQ(lit->operands[0]->intValue, 3);  // 6 - floor(3.5)
  Program q = parseClean("kernel k(out y: i32[1]) { y[0] = -7 / 2 + -7 % 2 * 10; }");
  const Expr& v = onlyStmt(q).value;
  ASSERT_EQ(v->kind, ExprKind::IntImm);
  EXPECT_EQ(v->intValue, -4 + 1 * 10);  // floor division and modulo
}

TEST(Features, TypedLiterals) {
  Program p = parseClean(
      "kernel k(out a: i64[1], out b: f32[1], out c: i32[1], out d: f64[1]) {\n"
      "  a[0] = 2i64; b[0] = 2.5f32; c[0] = 7i32; d[0] = 1e3f64 + 2f64;\n}");
  const Kernel& k = p.kernels[0];
  const auto& body = k.nests[0].body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0].value->kind, ExprKind::IntImm);
  EXPECT_EQ(body[0].value->type, ScalarType::I64);
  EXPECT_EQ(body[1].value->kind, ExprKind::FloatImm);
  EXPECT_EQ(body[1].value->type, ScalarType::F32);
  EXPECT_EQ(body[2].value->type, ScalarType::I32);
  EXPECT_EQ(body[3].value->operands[0]->floatValue, 1000.0);
  EXPECT_EQ(body[3].value->operands[1]->floatValue, 2.0);
}

TEST(Features, FloatLiteralsThatUnderflowAreZero) {
  // Out-of-range decimal literals below the smallest double read as 0 (the ones above it are
  // errors: tests/frontend/bad/float_literal_overflow).
  Program p = parseClean(
      "kernel k(out d: f64[4]) {\n  d[0] = 1e-999; d[1] = 0.000001e-400; d[2] = 0e999; d[3] = 123.5e-2;\n}");
  const auto& body = p.kernels[0].nests[0].body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0].value->floatValue, 0.0);
  EXPECT_EQ(body[1].value->floatValue, 0.0);
  EXPECT_EQ(body[2].value->floatValue, 0.0);
  EXPECT_EQ(body[3].value->floatValue, 1.235);
}

TEST(Features, LetsGetIdsAndDefaultTypes) {
  Program p = parseClean(
      "kernel k(n: int, x: f32[n], out y: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    let a = 2;\n"
      "    let b = 0.5;\n"
      "    let c: f32 = 1;\n"
      "    y[i] = x[i] * c + f32(b) + f32(a);\n"
      "  }\n"
      "}\n");
  const Kernel& k = p.kernels[0];
  const auto& body = k.nests[0].body;
  ASSERT_EQ(body.size(), 4u);
  EXPECT_EQ(body[0].kind, StmtKind::Let);
  EXPECT_EQ(body[0].value->type, ScalarType::I32);
  EXPECT_EQ(body[1].value->type, ScalarType::F64);
  EXPECT_EQ(body[2].value->type, ScalarType::F32);
  EXPECT_EQ(body[2].letName, "c");
  std::set<int> ids = {k.nests[0].loops[0].id, body[0].letId, body[1].letId, body[2].letId};
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(k.numVarIds, 4);
  int letRefs = countExprs(k, [](const Expr& e) { return e->kind == ExprKind::Var && e->varKind == VarKind::Let; });
  EXPECT_EQ(letRefs, 3);
}

TEST(Features, LetsInIndicesAreInlined) {
  Program p = parseClean(
      "kernel k(n: int, x: f32[2 * n], out y: f32[n]) {\n"
      "  for i in 0..n { let j = 2 * i + 1; y[i] = x[j]; }\n"
      "}\n");
  const Stmt& s = onlyStmt(p, 0, 1);
  const Expr& idx = s.value->operands[0];
  EXPECT_EQ(idx->kind, ExprKind::Binary);  // 2*i + 1, not the let variable
}

TEST(Features, TriangularBoundsReferToOuterIndex) {
  Program p = parseClean("kernel k(n: int, a: f32[n, n], out b: f32[n, n]) { for i in 0..n, j in 0..i+1 { b[i, j] = a[i, j]; } }");
  const LoopNest& n = p.kernels[0].nests[0];
  ASSERT_EQ(n.loops.size(), 2u);
  const Expr& hi = n.loops[1].hi;
  ASSERT_EQ(hi->kind, ExprKind::Binary);
  ASSERT_EQ(hi->operands[0]->kind, ExprKind::Var);
  EXPECT_EQ(hi->operands[0]->varKind, VarKind::Index);
  EXPECT_EQ(hi->operands[0]->varId, n.loops[0].id);
}

TEST(Features, NestedReductions) {
  Program p = parseClean(
      "kernel k(n: int, a: f32[n, n], out r: f32[1]) { r[0] = max(i in 0..n, sum(j in 0..i, k in j..n, a[j, k])); }");
  const Expr& v = onlyStmt(p).value;
  ASSERT_EQ(v->kind, ExprKind::Reduce);
  EXPECT_EQ(v->reduceOp, ReduceOp::Max);
  const Expr& inner = v->operands[0];
  ASSERT_EQ(inner->kind, ExprKind::Reduce);
  EXPECT_EQ(inner->reduceOp, ReduceOp::Sum);
  ASSERT_EQ(inner->loops.size(), 2u);
  EXPECT_EQ(inner->loops[0].hi->varId, v->loops[0].id);
  EXPECT_EQ(inner->loops[1].lo->varId, inner->loops[0].id);
  EXPECT_EQ(p.kernels[0].numVarIds, 3);
}

TEST(Features, MaxMinAreFunctionsWithoutRanges) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = max(x[i], 0) + min(j in 0..n, x[j]); } }");
  const Expr& v = onlyStmt(p).value;
  EXPECT_EQ(v->operands[0]->kind, ExprKind::Call);
  EXPECT_EQ(v->operands[0]->mathFn, MathFn::Max);
  EXPECT_EQ(v->operands[0]->operands[1]->kind, ExprKind::Cast);
  EXPECT_EQ(v->operands[1]->kind, ExprKind::Reduce);
  EXPECT_EQ(v->operands[1]->reduceOp, ReduceOp::Min);
}

TEST(Features, MathFunctionsMakeLiteralsFloat) {
  Program p = parseClean("kernel k(out y: f64[1]) { y[0] = sqrt(2); }");
  const Expr& v = onlyStmt(p).value;
  ASSERT_EQ(v->kind, ExprKind::Call);
  EXPECT_EQ(v->type, ScalarType::F64);
  EXPECT_EQ(v->operands[0]->type, ScalarType::F64);
}

TEST(Features, SelectAndComparisons) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = select(x[i] > 0 && i % 2 == 0, x[i], 0); } }");
  const Expr& v = onlyStmt(p).value;
  ASSERT_EQ(v->kind, ExprKind::Select);
  EXPECT_EQ(v->operands[0]->type, ScalarType::Bool);
  EXPECT_EQ(v->operands[0]->binaryOp, BinaryOp::And);
  EXPECT_EQ(v->operands[2]->kind, ExprKind::Cast);
}

TEST(Features, ExplicitCasts) {
  Program p = parseClean("kernel k(n: int, x: f64[n], out y: f32[n]) { for i in 0..n { y[i] = f32(x[i]) + f32(i) + f32(n); } }");
  int casts = countExprs(p.kernels[0], [](const Expr& e) { return e->kind == ExprKind::Cast && e->type == ScalarType::F32; });
  EXPECT_EQ(casts, 3);
}

TEST(Features, TopLevelStatementsGroupIntoNests) {
  Program p = parseClean(
      "kernel k(n: int, x: f32[n], out a: f32[1], out b: f32[n], out c: f32[2]) {\n"
      "  a[0] = sum(i in 0..n, x[i]);\n"
      "  c[0] = a[0];\n"
      "  for i in 0..n { b[i] = x[i] / a[0]; }\n"
      "  c[1] = b[0];\n"
      "}\n");
  const Kernel& k = p.kernels[0];
  ASSERT_EQ(k.nests.size(), 3u);
  EXPECT_TRUE(k.nests[0].loops.empty());
  EXPECT_EQ(k.nests[0].body.size(), 2u);
  EXPECT_EQ(k.nests[1].loops.size(), 1u);
  EXPECT_TRUE(k.nests[2].loops.empty());
}

TEST(Features, SourceLocationsHaveLengths) {
  Program p = parseClean("kernel k(n: int, x: f32[n], out y: f32[n]) {\n  for i in 0..n {\n    y[i] = x[i + 1];\n  }\n}\n");
  const Stmt& s = onlyStmt(p);
  EXPECT_EQ(s.loc, (SourceLoc{3, 5, 4}));          // y[i]
  EXPECT_EQ(s.value->loc, (SourceLoc{3, 12, 8}));  // x[i + 1]
  EXPECT_EQ(s.value->operands[0]->loc, (SourceLoc{3, 14, 5}));
  EXPECT_EQ(p.kernels[0].nests[0].loops[0].loc, (SourceLoc{2, 7, 9}));  // i in 0..n
  EXPECT_EQ(p.kernels[0].params[1].loc, (SourceLoc{1, 18, 1}));
  EXPECT_EQ(p.kernels[0].loc, (SourceLoc{1, 8, 1}));
}

TEST(Features, ShapesMayUseLaterSizeParams) {
  Program p = parseClean("kernel k(x: f32[n, 2 * m], n: int, m: int, out y: f32[n]) { for i in 0..n { y[i] = x[i, 0]; } }");
  const Param& x = p.kernels[0].params[0];
  ASSERT_EQ(x.shape.size(), 2u);
  EXPECT_EQ(x.shape[0]->varKind, VarKind::Size);
  EXPECT_EQ(x.shape[0]->varId, 1);
}

TEST(Features, CommentsAndWhitespace) {
  parseClean("/* header\n comment */ kernel k(/* none */) { // nothing\n}\n\t// trailing");
}

TEST(Features, EmptyInputIsAnEmptyProgram) {
  Program p = parseClean("");
  EXPECT_TRUE(p.kernels.empty());
}

TEST(Diagnostics, CrLfLineEndings) {
  std::string src = "kernel k(n: int, x: f32[n], out y: f32[n]) {\r\n  for i in 0..n {\r\n    y[i] = x[i] + q;\r\n  }\r\n}\r\n";
  EXPECT_EQ(parseErrors(src),
            "test.rtcg:3:19: error: unknown name 'q'\n"
            "      y[i] = x[i] + q;\n"
            "                    ^\n");
}

TEST(Diagnostics, ErrorsPastFiftyAreCountedButNotShown) {
  // Semantic errors were uncapped: every one echoed its line (55 KB of them rendered 328 MB).
  std::string src = "kernel k(n: int, x: f32[n], out y: f32[n]) {\n  for i in 0..n {\n";
  for (int i = 0; i < 3000; ++i) src += "    y[i] = x[i] + q;\n";
  src += "  }\n}\n";
  Diagnostics diags;
  EXPECT_FALSE(parseProgram("t.rtcg", src, diags).has_value());
  EXPECT_GT(diags.errorCount(), Diagnostics::kMaxStoredErrors);
  std::string out = diags.render("t.rtcg", src);
  size_t errors = 0;
  for (size_t at = out.find(": error: "); at != std::string::npos; at = out.find(": error: ", at + 1)) ++errors;
  EXPECT_EQ(errors, size_t(Diagnostics::kMaxStoredErrors));
  EXPECT_NE(out.find("t.rtcg: note: too many errors; only the first 50 are shown\n"), std::string::npos);
  EXPECT_LT(out.size(), 10000u);
}

TEST(Diagnostics, LongLinesAreClippedAroundTheCaret) {
  // One line of 300 000 characters with an error near its middle and one at its end.
  std::string pad(150000, ' ');
  std::string src = "kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n {" + pad + "y[i] = q;" + pad + "y[i] = w; } }\n";
  std::string out = parseErrors(src);
  std::istringstream lines(out);
  std::vector<std::string> l;
  for (std::string line; std::getline(lines, line);) l.push_back(line);
  ASSERT_EQ(l.size(), 6u) << out.substr(0, 2000);
  EXPECT_EQ(l[0], "test.rtcg:1:150068: error: unknown name 'q'");
  // "  ..." + 160 characters + "...": the caret under the 'q', a third of the window in.
  EXPECT_EQ(l[1].size(), 2 + 3 + kMaxEchoedLine + 3u);
  EXPECT_EQ(l[1].substr(0, 5), "  ...");
  EXPECT_EQ(l[1].substr(l[1].size() - 3), "...");
  ASSERT_EQ(l[2].back(), '^');
  EXPECT_EQ(l[1][l[2].size() - 1], 'q');
  // At the end of the line: no "..." after it, and the caret still under its name.
  EXPECT_EQ(l[4].substr(l[4].size() - 6), "w; } }");
  EXPECT_EQ(l[4].substr(0, 5), "  ...");
  ASSERT_EQ(l[5].back(), '^');
  EXPECT_EQ(l[4][l[5].size() - 1], 'w');
}

TEST(Diagnostics, ANulByteIsEchoedVisiblyAndLaterDiagnosticsFollow) {
  // The NUL went out in the echoed line and C-string output stopped there.
  std::string src = std::string("kernel k(n: int, x: f32[n], out y: f32[n]) {\n  for i in 0..n { y[i] = x[i] + ") + '\0' +
                    " q; }\n  for i in 0..n { y[i] = w; }\n}\n";
  std::string out = parseErrors(src);
  EXPECT_EQ(out.find('\0'), std::string::npos);
  EXPECT_EQ(out,
            "test.rtcg:2:33: error: unexpected byte 0x00\n"
            "    for i in 0..n { y[i] = x[i] + ? q; }\n"
            "                                  ^\n");
}

TEST(Diagnostics, ALoneCarriageReturnKeepsTheCaretInPlace) {
  // Echoed raw, it sent the terminal's cursor back to the start of the line.
  std::string src = "kernel k(n: int, x: f32[n], out y: f32[n]) {\r  for i in 0..n { y[i] = q; }\n}\n";
  EXPECT_EQ(parseErrors(src),
            "test.rtcg:1:71: error: unknown name 'q'\n"
            "  kernel k(n: int, x: f32[n], out y: f32[n]) {?  for i in 0..n { y[i] = q; }\n"
            "                                                                        ^\n");
}

TEST(Diagnostics, MoreThan1024ParametersAreRefused) {
  // 5 000 arrays passed check and failed in NVRTC (CUDA's 32 764 bytes of kernel parameters).
  std::string src = "kernel many(n: int";
  for (int i = 0; i < 5000; ++i) src += ",\n  a" + std::to_string(i) + ": f32[n]";
  src += ", out y: f32[n]) {\n  for i in 0..n { y[i] = a0[i]; }\n}\n";
  EXPECT_EQ(parseErrors(src), "test.rtcg:1025:3: error: kernel 'many' has 5002 parameters; the limit is 1024\n"
                              "    a1023: f32[n],\n"
                              "    ^~~~~\n");
}

TEST(Diagnostics, ErrorLimitStopsTheParse) {
  std::string src = "kernel k() {\n" + std::string(200, '@') + "\n}\n";
  Diagnostics diags;
  EXPECT_FALSE(parseProgram("t.rtcg", src, diags).has_value());
  EXPECT_EQ(diags.errorCount(), 25);
  ASSERT_FALSE(diags.all().empty());
  EXPECT_EQ(diags.all().back().severity, Severity::Note);
  EXPECT_EQ(diags.all().back().message, "too many errors; stopping here");
}

TEST(Diagnostics, BinaryInputGivesErrors) {
  std::string src("kernel\0k(\xff\xfe) { \0 }", 24);
  Diagnostics diags;
  EXPECT_FALSE(parseProgram("t.rtcg", src, diags).has_value());
  EXPECT_TRUE(diags.hasErrors());
  EXPECT_NE(diags.render("t.rtcg", src).find("unexpected byte 0x00"), std::string::npos);
}

TEST(Diagnostics, SyntaxErrorsSkipSemanticChecks) {
  // The unknown name would be an error too, but the semantic checks wait for valid syntax.
  std::string out = parseErrors("kernel k(out y: f32[1]) { y[0] = q }");
  EXPECT_EQ(out.find("unknown name"), std::string::npos);
  EXPECT_NE(out.find("expected ';' after statement, found '}'"), std::string::npos);
}

}  // namespace
}  // namespace rtcg::test
