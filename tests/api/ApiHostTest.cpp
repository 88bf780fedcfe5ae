// The host side of the embedding API, with no device: compile errors as rtcg::Error with rendered
// diagnostics, argument checking against bound kernels, cache keys, NVRTC to a cubin, and the
// NoDeviceError a Context throws on a machine without CUDA.
#include <gtest/gtest.h>

#include "api/KernelArgs.h"
#include "codegen/Nvrtc.h"
#include "driver/KernelBuild.h"
#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"

namespace rtcg {
namespace {

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

const char* kScaled = R"(kernel scaled(n: int, alpha: f64, k: i64, x: f64[n], inout y: f64[n]) {
  for i in 0..n { y[i] = y[i] + alpha * x[i] * f64(k); }
}
)";

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no rtcg::Error thrown>";
}

detail::ArgRef deviceArray(ElementType t, size_t count) {
  detail::ArgRef r;
  r.kind = detail::ArgRef::Kind::DeviceArray;
  r.type = t;
  r.count = count;
  return r;
}

// ---- compile errors ------------------------------------------------------------------------------

TEST(ApiCompileErrors, UnknownNameIsRenderedWithCaret) {
  CompileOptions o;
  o.fileName = "user.rtcg";
  std::string msg = errorOf([&] {
    prepareKernel("kernel k(n: int, out a: f32[n]) {\n  for i in 0..n { a[i] = bogus[i]; }\n}\n", {{"n", 8}}, o);
  });
  EXPECT_NE(msg.find("user.rtcg:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bogus"), std::string::npos) << msg;
  EXPECT_NE(msg.find("^"), std::string::npos) << msg;
  EXPECT_NE(msg.find("  for i in 0..n { a[i] = bogus[i]; }"), std::string::npos) << msg;
}

TEST(ApiCompileErrors, AKernelNameOfThirtyThousandCharactersIsRefused) {
  // It crashed NVRTC's log parser (a recursive std::regex) in Context::compile.
  std::string name(30000, 'k');
  std::string msg = errorOf([&] {
    prepareKernel("kernel " + name + "(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } }", {{"n", 8}}, {});
  });
  EXPECT_NE(msg.find("identifier is 30000 characters long; the limit is 255"), std::string::npos) << msg.substr(0, 300);
}

TEST(ApiCompileErrors, OutOfBoundsAccessIsProvedWrongForTheseSizes) {
  std::string msg = errorOf([&] {
    prepareKernel("kernel k(n: int, a: f32[n], out b: f32[n]) {\n  for i in 0..n { b[i] = a[i + 1]; }\n}\n",
                  {{"n", 10}}, {});
  });
  EXPECT_NE(msg.find("<string>:2:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("^"), std::string::npos) << msg;
}

TEST(ApiCompileErrors, UnboundAndUnknownSizes) {
  EXPECT_NE(errorOf([&] { prepareKernel(kMatmul, {}, {}); }).find("n"), std::string::npos);
  std::string msg = errorOf([&] { prepareKernel(kMatmul, {{"n", 4}, {"m", 3}}, {}); });
  EXPECT_NE(msg.find("m"), std::string::npos) << msg;
}

TEST(ApiCompileErrors, SeveralKernelsNeedAName) {
  std::string two = std::string(kMatmul) + kScaled;
  std::string msg = errorOf([&] { prepareKernel(two, {{"n", 4}}, {}); });
  EXPECT_NE(msg.find("matmul"), std::string::npos) << msg;
  EXPECT_NE(msg.find("scaled"), std::string::npos) << msg;
  CompileOptions o;
  o.kernel = "scaled";
  EXPECT_EQ(prepareKernel(two, {{"n", 4}}, o).bound.name, "scaled");
  o.kernel = "nope";
  EXPECT_NE(errorOf([&] { prepareKernel(two, {{"n", 4}}, o); }).find("no kernel named 'nope'"), std::string::npos);
}

TEST(ApiCompileErrors, BadScheduleText) {
  CompileOptions o;
  o.schedule = "this is not a schedule ((";
  std::string msg = errorOf([&] { prepareKernel(kMatmul, {{"n", 16}}, o); });
  EXPECT_NE(msg.find("schedule"), std::string::npos) << msg;
}

// Context::compile proves the kernel once (proveKernel), looks its schedule up, then schedules and
// emits it (prepareProved): the same kernel, code and messages as the pipeline in one go, the
// front end's warnings included with a later step's errors.
TEST(ApiCompile, ProvedOnceThenPreparedIsThePipelineInOneGo) {
  const char* gather = "kernel gather(n: int, src: f32[n], idx: i32[n], out dst: f32[n]) {\n"
                       "  for i in 0..n { dst[i] = src[idx[i]]; }\n}\n";
  CompileOptions o;
  o.fileName = "gather.rtcg";
  ProvedKernel proved = proveKernel(gather, {{"n", 64}}, o);
  EXPECT_FALSE(proved.diagnostics.empty());  // the indirect index is checked at run time
  PreparedKernel twoSteps = prepareProved(gather, proved, o);
  PreparedKernel oneGo = prepareKernel(gather, {{"n", 64}}, o);
  EXPECT_EQ(twoSteps.module.source, oneGo.module.source);
  EXPECT_EQ(twoSteps.scheduleText, oneGo.scheduleText);
  EXPECT_EQ(tuningTarget(gather, {{"n", 64}}, o).name, "gather");

  o.schedule = "this is not a schedule ((";
  std::string msg = errorOf([&] { prepareProved(gather, proved, o); });
  EXPECT_EQ(msg, errorOf([&] { prepareKernel(gather, {{"n", 64}}, o); }));
  EXPECT_NE(msg.find("warning"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad schedule"), std::string::npos) << msg;
}

TEST(ApiCompile, ScheduleTextRoundTrips) {
  PreparedKernel def = prepareKernel(kMatmul, {{"n", 64}}, {});
  EXPECT_FALSE(def.scheduleText.empty());
  CompileOptions o;
  o.schedule = def.scheduleText;  // the printed default schedule is itself a valid schedule text
  PreparedKernel again = prepareKernel(kMatmul, {{"n", 64}}, o);
  EXPECT_EQ(again.scheduleText, def.scheduleText);
  EXPECT_EQ(again.module.source, def.module.source);
}

// ---- argument checking ---------------------------------------------------------------------------

TEST(ApiArguments, SignatureAndExpectedTypes) {
  Kernel k = prepareKernel(kMatmul, {{"n", 500}}, {}).bound;
  EXPECT_EQ(signatureOf(k), "matmul(a: f32[500, 500], b: f32[500, 500], out c: f32[500, 500]) with n = 500");
  EXPECT_EQ(describeParamType(k, 1), "f32[500, 500] (250000 elements)");
  Kernel s = prepareKernel(kScaled, {{"n", 3}}, {}).bound;
  EXPECT_EQ(describeParamType(s, 1), "f64 scalar");
}

TEST(ApiArguments, MatchingArgumentsMapToParameters) {
  Kernel k = prepareKernel(kMatmul, {{"n", 5}}, {}).bound;
  std::vector<float> a(25), b(25), c(25);
  const std::vector<float>& ca = a;
  std::vector<detail::ArgRef> args{detail::argRef(ca), detail::argRef(b), detail::argRef(c)};
  std::vector<std::optional<size_t>> m = matchArguments(k, args);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_FALSE(m[0]);  // n: a size parameter takes no argument
  EXPECT_EQ(m[1], 0u);
  EXPECT_EQ(m[3], 2u);
}

TEST(ApiArguments, WrongCountNamesTheSignatureAndTheSizeParameters) {
  Kernel k = prepareKernel(kMatmul, {{"n", 5}}, {}).bound;
  std::vector<float> a(25), b(25);
  std::vector<detail::ArgRef> args{detail::argRef(a), detail::argRef(b)};
  std::string msg = errorOf([&] { matchArguments(k, args); });
  EXPECT_NE(msg.find("matmul: expected 3 arguments, given 2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("size parameter n takes no argument"), std::string::npos) << msg;
  args.insert(args.begin(), detail::argRef(int32_t(5)));  // passing n as well
  args.push_back(detail::argRef(a));
  EXPECT_NE(errorOf([&] { matchArguments(k, args); }).find("expected 3 arguments, given 4"), std::string::npos);
}

TEST(ApiArguments, WrongElementType) {
  Kernel k = prepareKernel(kMatmul, {{"n", 500}}, {}).bound;
  std::vector<float> a(250000), b(250000);
  std::vector<detail::ArgRef> args{detail::argRef(a), detail::argRef(b), deviceArray(ElementType::F64, 250000)};
  EXPECT_EQ(errorOf([&] { matchArguments(k, args); }),
            "matmul: argument 3 (out c): expected f32[500, 500] (250000 elements), given rtcg::Array<double> of "
            "250000 elements");
}

TEST(ApiArguments, SixteenBitArraysTakeTheStorageStructs) {
  Kernel k = prepareKernel(R"(kernel g(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n], out h: f16[n, n]) {
    for i in 0..n, j in 0..n {
      c[i, j] = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]));
      h[i, j] = f16(c[i, j]);
    }
  })", {{"n", 3}}, {}).bound;
  EXPECT_EQ(signatureOf(k), "g(a: bf16[3, 3], b: bf16[3, 3], out c: f32[3, 3], out h: f16[3, 3]) with n = 3");
  std::vector<bf16> a(9, bf16(0.5f)), b(9);
  std::vector<float> c(9);
  std::vector<f16> h(9);
  std::vector<detail::ArgRef> args{detail::argRef(a), detail::argRef(b), detail::argRef(c), detail::argRef(h)};
  EXPECT_EQ(matchArguments(k, args).size(), 5u);
  std::vector<f16> wrong(9);
  args[1] = detail::argRef(wrong);
  EXPECT_EQ(errorOf([&] { matchArguments(k, args); }),
            "g: argument 2 (b): expected bf16[3, 3] (9 elements), given std::vector<rtcg::f16> of 9 elements");
  args[1] = deviceArray(ElementType::F32, 9);
  EXPECT_NE(errorOf([&] { matchArguments(k, args); }).find("given rtcg::Array<float>"), std::string::npos);
  EXPECT_STREQ(elementTypeName(ElementType::BF16), "bf16");
  EXPECT_EQ(float(a[0]), 0.5f);
  static_assert(elementTypeOf<f16>() == ElementType::F16 && sizeof(Array<bf16>) > 0);
}

TEST(ApiArguments, WrongElementCount) {
  Kernel k = prepareKernel(kMatmul, {{"n", 500}}, {}).bound;
  std::vector<float> small(500 * 499);
  std::vector<detail::ArgRef> args{detail::argRef(small), deviceArray(ElementType::F32, 250000),
                                   deviceArray(ElementType::F32, 250000)};
  EXPECT_EQ(errorOf([&] { matchArguments(k, args); }),
            "matmul: argument 1 (a): expected f32[500, 500] (250000 elements), given std::vector<float> of 249500 "
            "elements");
  // An ArgRef claiming device memory it does not have (only possible through launch()).
  args[0] = deviceArray(ElementType::F32, 250000);
  EXPECT_NE(errorOf([&] { matchArguments(k, args); }).find("has no memory"), std::string::npos);
}

TEST(ApiArguments, ConstVectorForAWrittenParameter) {
  Kernel k = prepareKernel(kMatmul, {{"n", 2}}, {}).bound;
  std::vector<float> a(4), b(4);
  const std::vector<float> c(4);
  std::vector<detail::ArgRef> args{detail::argRef(a), detail::argRef(b), detail::argRef(c)};
  std::string msg = errorOf([&] { matchArguments(k, args); });
  EXPECT_NE(msg.find("matmul: argument 3 (out c): expected f32[2, 2] (4 elements), given const std::vector<float>"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("non-const"), std::string::npos) << msg;
}

TEST(ApiArguments, ScalarWhereArrayExpectedAndViceVersa) {
  Kernel k = prepareKernel(kScaled, {{"n", 3}}, {}).bound;
  std::vector<double> x(3), y(3);
  std::vector<detail::ArgRef> args{detail::argRef(x), detail::argRef(int64_t(2)), detail::argRef(x),
                                   detail::argRef(y)};
  EXPECT_EQ(errorOf([&] { matchArguments(k, args); }),
            "scaled: argument 1 (alpha): expected f64 scalar, given std::vector<double> of 3 elements");
  args = {detail::argRef(1.5), detail::argRef(int64_t(2)), detail::argRef(2.0), detail::argRef(y)};
  EXPECT_EQ(errorOf([&] { matchArguments(k, args); }),
            "scaled: argument 3 (x): expected f64[3] (3 elements), given double");
}

TEST(ApiArguments, ScalarsConvertOnlyWithoutLoss) {
  Kernel k = prepareKernel(kScaled, {{"n", 3}}, {}).bound;
  std::vector<double> x(3), y(3);
  // float -> f64 and int32_t -> i64 are exact.
  std::vector<detail::ArgRef> args{detail::argRef(1.5f), detail::argRef(int32_t(2)), detail::argRef(x),
                                   detail::argRef(y)};
  EXPECT_NO_THROW(matchArguments(k, args));
  args[1] = detail::argRef(2.0);  // a double for an i64
  std::string msg = errorOf([&] { matchArguments(k, args); });
  EXPECT_NE(msg.find("scaled: argument 2 (k): expected i64 scalar, given double (pass a int64_t"), std::string::npos)
      << msg;
}

TEST(ApiArguments, WrittenArrayMustNotAliasAnotherArgument) {
  Kernel k = prepareKernel(kMatmul, {{"n", 2}}, {}).bound;
  std::vector<float> a(4), b(4);
  std::vector<detail::ArgRef> args{detail::argRef(a), detail::argRef(b), detail::argRef(a)};
  std::string msg = errorOf([&] { matchArguments(k, args); });
  EXPECT_NE(msg.find("argument 1 (a) and argument 3 (out c) are the same memory"), std::string::npos) << msg;
  // Reading one array twice is fine.
  std::vector<float> c(4);
  args = {detail::argRef(a), detail::argRef(a), detail::argRef(c)};
  EXPECT_NO_THROW(matchArguments(k, args));
}

// ---- keys and NVRTC -------------------------------------------------------------------------------

TEST(ApiKeys, RequestKeyCoversSourceSizesKernelAndSchedule) {
  std::string base = requestKey(kMatmul, {{"n", 8}}, {});
  EXPECT_EQ(base, requestKey(kMatmul, {{"n", 8}}, {}));
  EXPECT_NE(base, requestKey(kMatmul, {{"n", 9}}, {}));
  EXPECT_NE(base, requestKey(std::string(kMatmul) + " ", {{"n", 8}}, {}));
  CompileOptions o;
  o.kernel = "matmul";
  EXPECT_NE(base, requestKey(kMatmul, {{"n", 8}}, o));
  o = {};
  o.schedule = "x";
  EXPECT_NE(base, requestKey(kMatmul, {{"n", 8}}, o));
  o = {};
  o.fileName = "other.rtcg";  // only used in diagnostics
  EXPECT_EQ(base, requestKey(kMatmul, {{"n", 8}}, o));
}

TEST(ApiKeys, CubinKeyDependsOnTheEmittedSourceAndArch) {
  PreparedKernel k8 = prepareKernel(kMatmul, {{"n", 8}}, {});
  PreparedKernel k9 = prepareKernel(kMatmul, {{"n", 9}}, {});
  std::string key = cubinKey(k8.module.source, "sm_90");
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key, cubinKey(k8.module.source, "sm_90"));
  EXPECT_NE(key, cubinKey(k8.module.source, "sm_80"));
  EXPECT_NE(key, cubinKey(k9.module.source, "sm_90"));
  // The file name is for diagnostics only: it does not reach the emitted source or the key.
  CompileOptions o;
  o.fileName = "elsewhere.rtcg";
  EXPECT_EQ(key, cubinKey(prepareKernel(kMatmul, {{"n", 8}}, o).module.source, "sm_90"));
  EXPECT_NE(nvrtcVersionString(), "unknown");
}

TEST(ApiNvrtc, CompilesTheEmittedSourceToACubin) {
  PreparedKernel k = prepareKernel(kMatmul, {{"n", 33}}, {});
  std::string cubin = compileCubin(k, "sm_80");
  ASSERT_GE(cubin.size(), 4u);
  EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
}

// ---- no device ---------------------------------------------------------------------------------

TEST(ApiNoDevice, ContextThrowsNoDeviceErrorWithTheReason) {
  if (cuda::cudaAvailable()) GTEST_SKIP() << "a CUDA device is present";
  try {
    Context ctx;
    FAIL() << "Context constructed without a device";
  } catch (const NoDeviceError& e) {
    EXPECT_EQ(std::string(e.what()), cuda::unavailableReason());
  }
}

TEST(ApiKernel, EmptyKernelSaysSo) {
  CompiledKernel k;
  EXPECT_FALSE(k.valid());
  EXPECT_NE(errorOf([&] { k.name(); }).find("default-constructed"), std::string::npos);
  std::vector<float> v(3);
  EXPECT_NE(errorOf([&] { k(v); }).find("default-constructed"), std::string::npos);
}

}  // namespace
}  // namespace rtcg
