// The checks of embedded kernels, without clang: DSL diagnostics mapped into C++ coordinates and
// call-site checks against a kernel's signature.
#include "Check.h"

#include <gtest/gtest.h>

#include "LiteralDecode.h"
#include "frontend/Frontend.h"

namespace rtcg {
namespace {

Kernel parseOne(const std::string& text) {
  Diagnostics diags;
  std::optional<Program> p = parseProgram("t.rtcg", text, diags);
  EXPECT_TRUE(p && p->kernels.size() == 1) << diags.render("t.rtcg", text);
  return p->kernels.front();
}

CallArg arg(CallArg::Kind kind, std::optional<ScalarType> type, int col) {
  return CallArg{kind, type, type ? cppElementName(*type) : "short", {7, col}};
}

const std::string kSaxpy = "kernel saxpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {\n"
                           "  for i in 0..n { y[i] = a * x[i] + y[i]; }\n}\n";

TEST(CheckCalls, AcceptsMatchingArgumentsAndWidening) {
  Kernel k = parseOne(kSaxpy);
  Diagnostics d;
  using K = CallArg::Kind;
  checkCalls(k,
             {{{7, 3},
               {arg(K::Scalar, ScalarType::F32, 9), arg(K::DeviceArray, ScalarType::F32, 12),
                arg(K::HostVector, ScalarType::F32, 15)}}},
             d);
  EXPECT_TRUE(d.empty()) << d.render("a.cpp", "");
  Kernel k64 = parseOne("kernel s(a: f64, b: i64, out y: f64[1]) { y[0] = a + f64(b); }");
  checkCalls(k64, {{{7, 3}, {arg(K::Scalar, ScalarType::F32, 9), arg(K::Scalar, ScalarType::I32, 12),
                             arg(K::DeviceArray, ScalarType::F64, 15)}}},
             d);
  EXPECT_TRUE(d.empty()) << d.render("a.cpp", "");
}

TEST(CheckCalls, SixteenBitArraysTakeTheStorageStructs) {
  Kernel k = parseOne("kernel g(n: int, a: bf16[n], out h: f16[n]) { for i in 0..n { h[i] = f16(a[i]); } }");
  Diagnostics d;
  using K = CallArg::Kind;
  checkCalls(k, {{{7, 3}, {arg(K::HostVector, ScalarType::BF16, 9), arg(K::DeviceArray, ScalarType::F16, 12)}}}, d);
  EXPECT_TRUE(d.empty()) << d.render("a.cpp", "");
  checkCalls(k, {{{8, 3}, {arg(K::HostVector, ScalarType::F16, 9), arg(K::DeviceArray, ScalarType::F32, 12)}}}, d);
  ASSERT_EQ(d.errorCount(), 2);
  EXPECT_EQ(d.all()[0].message, "kernel 'g' argument 1 (a: bf16[n]): expected rtcg::Array<rtcg::bf16> or "
                                "std::vector<rtcg::bf16>, given std::vector<rtcg::f16>");
  EXPECT_NE(d.all()[1].message.find("expected rtcg::Array<rtcg::f16>"), std::string::npos) << d.all()[1].message;
}

TEST(CheckCalls, ReportsCountAndTypeMismatchesAtTheCall) {
  Kernel k = parseOne(kSaxpy);
  Diagnostics d;
  using K = CallArg::Kind;
  checkCalls(k,
             {{{7, 3}, {arg(K::Scalar, ScalarType::F32, 9)}},
              {{8, 3},
               {arg(K::DeviceArray, ScalarType::F32, 9), arg(K::HostVector, ScalarType::F64, 12),
                arg(K::ConstHostVector, ScalarType::F32, 15)}},
              {{9, 3}, {arg(K::Scalar, ScalarType::I64, 9), arg(K::Other, std::nullopt, 12),
                        arg(K::DeviceArray, std::nullopt, 15)}}},
             d);
  ASSERT_EQ(d.errorCount(), 6);
  const auto& all = d.all();
  EXPECT_EQ(all[0].loc, (SourceLoc{7, 3, 1}));
  EXPECT_EQ(all[0].message,
            "kernel 'saxpy' expects 3 arguments, given 1 (the signature is saxpy(a: f32, x: f32[n], inout y: f32[n]))");
  EXPECT_EQ(all[1].message, "kernel 'saxpy' argument 1 (a: f32): expected float, given rtcg::Array<float>");
  EXPECT_EQ(all[2].loc, (SourceLoc{7, 12, 1}));
  EXPECT_EQ(all[2].message, "kernel 'saxpy' argument 2 (x: f32[n]): expected rtcg::Array<float> or "
                            "std::vector<float>, given std::vector<double>");
  EXPECT_NE(all[3].message.find("the kernel writes 'y'"), std::string::npos);
  EXPECT_NE(all[4].message.find("given int64_t (pass a float"), std::string::npos);
  EXPECT_EQ(all[5].message, "kernel 'saxpy' argument 3 (inout y: f32[n]): expected rtcg::Array<float> or "
                            "std::vector<float>, given rtcg::Array<short>");  // Other (arg 2) is the runtime's to check
}

TEST(CheckKernel, MapsDslErrorsIntoTheLiteralAndProvesWithConstantSizes) {
  FoundKernel f;
  f.file = "/nonexistent/app.cpp";  // no echoed line: the location is what is tested
  f.callPos = {3, 7};
  std::string error;
  ASSERT_TRUE(appendLiteralToken("\"kernel k(n: int, x: f32[n], out y: f32[n]) {\\n\"", {4, 3}, f.source, &error));
  ASSERT_TRUE(appendLiteralToken("\"\\tfor i in 0..n { y[i] = x[i + 1]; }}\"", {5, 3}, f.source, &error));
  f.source.file = f.file;
  f.sizesConstant = true;
  f.sizes = {{"n", 8}};
  f.kernelName = "";
  CppFiles files;
  KernelCheck c = checkKernel(f, files);
  EXPECT_EQ(c.kernelNames, std::vector<std::string>{"k"});
  EXPECT_EQ(c.errors, 1);
  // DSL line 2 column 25 (x[i + 1], after the tab) is C++ line 5: the quote at column 3, the \t
  // escape at 4-5, `for` from 6, so column 29.
  ASSERT_EQ(c.rendered.size(), 1u);
  EXPECT_EQ(c.rendered[0].severity, Severity::Error);
  const std::string& text = c.rendered[0].text;
  EXPECT_EQ(text.substr(0, text.find(" may")), "/nonexistent/app.cpp:5:29: error: access x[i + 1]");

  f.sizesConstant = false;  // the same text with run-time sizes: parsed, not proved
  EXPECT_EQ(checkKernel(f, files).errors, 0);

  f.kernelName = "other";  // CompileOptions::kernel names a kernel the text lacks: at the call
  KernelCheck missing = checkKernel(f, files);
  ASSERT_EQ(missing.rendered.size(), 1u);
  EXPECT_EQ(missing.rendered[0].text,
            "/nonexistent/app.cpp:3:7: error: no kernel named 'other' in the DSL source (it defines: k)\n");
}

}  // namespace
}  // namespace rtcg
