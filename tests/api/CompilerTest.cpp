// rtcg/compiler.h: the compiler as functions (what the Python package binds), and the
// CompileError that Context::compile and it throw. No device needed.
#include <gtest/gtest.h>

#include "rtcg/compiler.h"

namespace {

namespace rc = rtcg::compiler;

const char* kAxpy = "kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {\n"
                    "  for i in 0..n { y[i] = a * x[i] + y[i]; }\n}\n";
const char* kPad = "kernel pad(n: int, m: int, x: f32[n + 2, 4*m], out y: f32[n, m]) {\n"
                   "  for i in 0..n, j in 0..m { y[i, j] = x[i + 2, 4*j + 3]; }\n}\n";

TEST(Compiler, ParseDescribesEveryParameter) {
  std::vector<rc::KernelInfo> ks = rc::parse(kPad);
  ASSERT_EQ(ks.size(), 1u);
  const rc::KernelInfo& k = ks[0];
  EXPECT_EQ(k.name, "pad");
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[0].kind, "size");
  EXPECT_EQ(k.params[2].kind, "array");
  EXPECT_EQ(k.params[2].mode, "in");
  EXPECT_EQ(k.params[3].mode, "out");
  EXPECT_EQ(k.params[2].shape.size(), 2u);
  EXPECT_TRUE(k.params[2].boundShape.empty());
}

TEST(Compiler, CheckBindsShapes) {
  rc::KernelInfo k = rc::check(kPad, {{"n", 10}, {"m", 5}});
  EXPECT_EQ(k.params[2].boundShape, (std::vector<int64_t>{12, 20}));
  EXPECT_EQ(k.params[3].boundShape, (std::vector<int64_t>{10, 5}));
  EXPECT_EQ(k.signature, "pad(x: f32[12, 20], out y: f32[10, 5]) with n = 10, m = 5");
}

// A kernel's local arrays (docs/language.md 4.1) are no part of its signature: parse, check and
// bindShapes see only the parameters, and the emitted module holds the locals itself.
TEST(Compiler, LocalArraysAreNotParameters) {
  const char* softmax =
      "kernel softmax(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {\n"
      "  local rowmax: f32[m];\n"
      "  for i in 0..m { rowmax[i] = max(j in 0..n, x[i, j]); }\n"
      "  for i in 0..m, j in 0..n { y[i, j] = exp(x[i, j] - rowmax[i]); }\n}\n";
  rc::KernelInfo k = rc::check(softmax, {{"m", 30}, {"n", 7}});
  ASSERT_EQ(k.params.size(), 4u);
  EXPECT_EQ(k.params[3].name, "y");
  EXPECT_EQ(k.signature, "softmax(x: f32[30, 7], out y: f32[30, 7]) with m = 30, n = 7");
  std::string cuda = rc::emit(softmax, {{"m", 30}, {"n", 7}});
  EXPECT_NE(cuda.find("__device__ __align__(16) float softmax_local_rowmax[30];"), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("rowmax_arg"), std::string::npos) << cuda;
}

TEST(Compiler, EmitExplainAndCubin) {
  std::string cuda = rc::emit(kAxpy, {{"n", 1000}});
  EXPECT_NE(cuda.find("__global__"), std::string::npos);
  EXPECT_EQ(rc::explain(kAxpy, {{"n", 1000}}).rfind("kernel axpy (n=1000) for sm_90, schedule:", 0), 0u);
  std::string cubin = rc::cubin(kAxpy, {{"n", 1000}});
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
  rc::Options o;
  o.arch = "compute_90";
  EXPECT_THROW(rc::cubin(kAxpy, {{"n", 1000}}, o), rtcg::Error);
}

// The precision policy reaches emit and explain (what Python's precision= passes): an mma
// schedule compiles under the policy that allows it and is refused, with the option to use,
// under another; a policy that cannot apply to the kernel is refused by tune() too.
TEST(Compiler, PrecisionPolicyAndTuneInputsAreChecked) {
  const char* matmul = "kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {\n"
                       "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n}\n";
  rc::Options o;
  o.schedule = "mma: tf32 m16n8k8 warps 2x2 tile 2x2 k 8";
  EXPECT_THROW(rc::emit(matmul, {{"n", 100}}, o), rtcg::CompileError);
  o.precision = rtcg::PrecisionPolicy::Tf32;
  EXPECT_NE(rc::emit(matmul, {{"n", 100}}, o).find("rtcg_mma_tf32"), std::string::npos);
  EXPECT_NE(rc::explain(matmul, {{"n", 100}}, o).find("mma"), std::string::npos);
  o.precision = rtcg::PrecisionPolicy::Tf32x3;
  try {
    rc::emit(matmul, {{"n", 100}}, o);
    ADD_FAILURE() << "tf32 mma under tf32x3 was accepted";
  } catch (const rtcg::CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("use --precision tf32"), std::string::npos) << e.what();
  }

  const char* dot = "kernel dot(n: int, x: f64[n], y: f64[n], out r: f64[1]) {\n"
                    "  for o in 0..1 { r[o] = sum(i in 0..n, x[i] * y[i]); }\n}\n";
  rc::TuneRequest r;
  r.dbPath = "-";
  r.precision = rtcg::PrecisionPolicy::Tf32;
  try {
    rc::tune(dot, {{"n", 100}}, r);
    ADD_FAILURE() << "tf32 on an f64 kernel was accepted";
  } catch (const rtcg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("computes in f64 only"), std::string::npos) << e.what();
  }
  // fp64x rewrites an f64 contraction (explain shows the steps); the dot product is none (a single
  // output point), so tune() refuses it with the reason before any GPU work.
  const char* dgemm = "kernel dgemm(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {\n"
                      "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n}\n";
  rc::Options oz;
  oz.precision = rtcg::PrecisionPolicy::Fp64x;
  EXPECT_NE(rc::explain(dgemm, {{"n", 1240}}, oz).find("precision fp64x: the f64 contractions are rewritten"), std::string::npos);
  EXPECT_NE(rc::emit(dgemm, {{"n", 1240}}, oz).find("dgemm_local_ozaki0_c8"), std::string::npos);
  // At n = 40 the scheme cannot be faster: the contraction stays as written, and explain says why.
  EXPECT_NE(rc::explain(dgemm, {{"n", 40}}, oz).find("nest 1: its 14 moduli's memory traffic alone"), std::string::npos);
  EXPECT_EQ(rc::emit(dgemm, {{"n", 40}}, oz).find("ozaki"), std::string::npos);
  oz.precision = rtcg::PrecisionPolicy::Fp32x;
  EXPECT_THROW(rc::emit(dgemm, {{"n", 40}}, oz), rtcg::CompileError);
  r.precision = rtcg::PrecisionPolicy::Fp64x;
  try {
    rc::tune(dot, {{"n", 100}}, r);
    ADD_FAILURE() << "fp64x on a dot product was accepted";
  } catch (const rtcg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("precision 'fp64x' computes f64 contractions"), std::string::npos) << e.what();
  }
  // Input files are checked before any GPU work: an output array, a missing file.
  r.precision = rtcg::PrecisionPolicy::Ieee;
  r.inputFiles = {{"r", "/nonexistent"}};
  EXPECT_THROW(rc::tune(dot, {{"n", 100}}, r), rtcg::Error);
  r.inputFiles = {{"x", "/nonexistent/x.txt"}};
  try {
    rc::tune(dot, {{"n", 100}}, r);
    ADD_FAILURE() << "a missing input file was accepted";
  } catch (const rtcg::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.txt"), std::string::npos) << e.what();
  }
}

TEST(Compiler, CompileErrorCarriesRecords) {
  std::string bad = std::string(kAxpy);
  bad.replace(bad.find("a * x[i]"), 8, "a * x[i + 1]");
  rc::Options o;
  o.fileName = "axpy.rtcg";
  try {
    rc::check(bad, {{"n", 100}}, o);
    FAIL() << "no error";
  } catch (const rtcg::CompileError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    const rtcg::DiagnosticRecord& d = e.diagnostics()[0];
    EXPECT_EQ(d.file, "axpy.rtcg");
    EXPECT_EQ(d.line, 2);
    EXPECT_GT(d.column, 0);
    EXPECT_EQ(d.severity, "error");
    EXPECT_NE(std::string(e.what()).find("axpy.rtcg:2:"), std::string::npos);
    EXPECT_NE(d.message.find("out of bounds"), std::string::npos);
  }
  EXPECT_THROW(rc::parse(""), rtcg::CompileError);
  EXPECT_THROW(rc::emit(kAxpy, {}), rtcg::CompileError);
}

TEST(Compiler, BindShapesSolvesLinearExtents) {
  rc::ShapeBinding b = rc::bindShapes(kPad, {std::vector<int64_t>{12, 20}, std::vector<int64_t>{10, 5}}, {});
  EXPECT_EQ(b.sizes, (rtcg::Sizes{{"n", 10}, {"m", 5}}));
  EXPECT_EQ(b.from.at("n"), "argument 1 (x), dimension 0");
  // Given sizes win; a size no extent determines must be given.
  const char* flat = "kernel sq(n: int, x: f32[n*n], out y: f32[n*n]) { for i in 0..n*n { y[i] = x[i]; } }";
  EXPECT_THROW(rc::bindShapes(flat, {std::vector<int64_t>{16}, std::vector<int64_t>{16}}, {}), rtcg::Error);
  EXPECT_EQ(rc::bindShapes(flat, {std::vector<int64_t>{16}, std::vector<int64_t>{16}}, {{"n", 4}}).sizes.at("n"), 4);
  // A wrong number of dimensions or arguments.
  EXPECT_THROW(rc::bindShapes(kAxpy, {std::nullopt, std::vector<int64_t>{4, 4}, std::vector<int64_t>{4}}, {}),
               rtcg::Error);
  EXPECT_THROW(rc::bindShapes(kAxpy, {std::nullopt}, {}), rtcg::Error);
  // 4*m = 21 has no integer solution: m stays unbound.
  EXPECT_THROW(rc::bindShapes(kPad, {std::vector<int64_t>{12, 21}, std::nullopt}, {}), rtcg::Error);
}

}  // namespace

namespace {

TEST(Compiler, BindShapesNeverOverflows) {
  const char* k = "kernel w(n: int, m: int, x: f32[4*m + n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } }";
  // A given m whose extent overflows: no value, so n stays unbound (an error, not undefined behaviour).
  EXPECT_THROW(rc::bindShapes(k, {std::vector<int64_t>{INT64_MAX}, std::nullopt}, {{"m", INT64_MAX / 2}}),
               rtcg::Error);
  // Extents no array has bind what they say; the proof then refuses the sizes.
  rc::ShapeBinding b = rc::bindShapes(k, {std::vector<int64_t>{INT64_MIN}, std::vector<int64_t>{INT64_MIN}}, {});
  EXPECT_EQ(b.sizes.at("n"), INT64_MIN);
  EXPECT_THROW(rc::check(k, b.sizes), rtcg::CompileError);
}

}  // namespace
