// The embedding API on a GPU (each test skips itself without a device): every example kernel at
// two sizes against the CPU reference, through host vectors and device arrays; argument errors with
// real arrays; In/Out/InOut semantics; the in-memory, disk and cross-process caches; concurrency.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <sys/wait.h>
#include <unistd.h>

#include "driver/KernelBuild.h"
#include "reference/Compare.h"
#include "reference/HostArgs.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "tune/Verify.h"

namespace fs = std::filesystem;

namespace rtcg {
namespace {

class ApiGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no CUDA: " << cuda::unavailableReason();
  }
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string errorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no rtcg::Error thrown>";
}

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

// ---- every example, two sizes (small, and ones that do not divide the default tiles) -------------

const std::map<std::string, std::array<Sizes, 2>> kExampleSizes = {
    {"matmul.rtcg", {{{{"n", 37}}, {{"n", 130}}}}},
    {"matmul_flat.rtcg", {{{{"n", 33}}, {{"n", 129}}}}},
    {"axpby.rtcg", {{{{"n", 1000}}, {{"n", 100003}}}}},
    {"dot.rtcg", {{{{"n", 1}}, {{"n", 100003}}}}},
    {"transpose.rtcg", {{{{"m", 17}, {"n", 33}}, {{"m", 1023}, {"n", 257}}}}},
    {"gemv.rtcg", {{{{"m", 37}, {"n", 41}}, {{"m", 200}, {"n", 1500}}}}},
    {"dg_diff.rtcg", {{{{"K", 37}, {"Np", 20}}, {{"K", 1000}, {"Np", 7}}}}},
    {"dg_diff_stacked.rtcg", {{{{"K", 37}, {"Np", 20}}, {{"K", 1000}, {"Np", 7}}}}},
    {"dg_lift.rtcg", {{{{"K", 33}, {"Np", 20}, {"Nfp", 10}}, {{"K", 100}, {"Np", 10}, {"Nfp", 6}}}}},
    {"dg_face_gather.rtcg",
     {{{{"K", 33}, {"Np", 20}, {"Nfaces", 4}, {"Nfp", 10}}, {{"K", 101}, {"Np", 4}, {"Nfaces", 4}, {"Nfp", 3}}}}},
    {"batched_matmul.rtcg", {{{{"nb", 5}, {"n", 16}}, {{"nb", 33}, {"n", 7}}}}},
    {"gemm_bf16.rtcg", {{{{"n", 37}}, {{"n", 130}}}}},
    {"gemm_i8.rtcg", {{{{"m", 37}, {"n", 21}, {"K", 45}}, {{"m", 301}, {"n", 203}, {"K", 1008}}}}},
    {"spmv.rtcg", {{{{"n", 37}, {"nnz", 200}}, {{"n", 1000}, {"nnz", 7001}}}}},
    {"nearest.rtcg", {{{{"n", 37}, {"m", 53}, {"D", 5}}, {{"n", 1001}, {"m", 777}, {"D", 13}}}}},
    {"max_inner_product.rtcg", {{{{"n", 37}, {"m", 53}, {"D", 5}}, {{"n", 1001}, {"m", 777}, {"D", 13}}}}},
    {"softmax.rtcg", {{{{"m", 37}, {"n", 41}}, {{"m", 3001}, {"n", 1000}}}}},
    {"layernorm.rtcg", {{{{"m", 37}, {"n", 41}}, {{"m", 3001}, {"n", 1000}}}}},
    {"trmv.rtcg", {{{{"n", 37}}, {{"n", 3001}}}}},
    {"trmm.rtcg", {{{{"n", 37}}, {{"n", 131}}}}},
    {"syrk.rtcg", {{{{"n", 37}, {"K", 13}}, {{"n", 1000}, {"K", 300}}}}},
    {"dgemm.rtcg", {{{{"n", 37}}, {{"n", 1003}}}}},
    {"histogram.rtcg", {{{{"n", 1003}, {"bins", 37}}, {{"n", 100003}, {"bins", 256}}}}},
    {"histogram_u32.rtcg", {{{{"n", 1003}, {"bins", 37}}, {{"n", 100003}, {"bins", 256}}}}},
    {"histogram_weighted.rtcg", {{{{"n", 1003}, {"bins", 37}}, {{"n", 100003}, {"bins", 1000}}}}},
    {"assemble.rtcg", {{{{"K", 37}, {"Np", 7}, {"N", 101}}, {{"K", 1001}, {"Np", 20}, {"N", 5003}}}}},
    {"cumsum.rtcg", {{{{"n", 37}}, {{"n", 100003}}}}},
    {"exclusive_scan.rtcg", {{{{"n", 37}}, {{"n", 100003}}}}},
    {"row_cumsum.rtcg", {{{{"m", 37}, {"n", 41}}, {{"m", 1001}, {"n", 3001}}}}},
    {"segmented_sum.rtcg", {{{{"n", 37}}, {{"n", 100003}}}}},
    {"sumfact.rtcg", {{{{"E", 37}, {"p", 7}}, {{"E", 20011}, {"p", 5}}}}},
};

// Every example has test sizes here (the GPU test below would fail on a GPU machine only: CI,
// which has none, checks the list).
TEST(ApiExamples, EveryExampleHasTestSizes) {
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(RTCG_SOURCE_DIR) / "examples"))
    if (e.path().extension() == ".rtcg")
      EXPECT_TRUE(kExampleSizes.count(e.path().filename().string()))
          << e.path().filename().string() << " has no test sizes in kExampleSizes (tests/api/ApiGpuTest.cpp)";
}

// Arguments for `bound` taken from `host`: host vectors (viewed in place) or device arrays (uploaded
// now, downloaded into `host` by the returned finisher).
struct ApiArgs {
  std::vector<detail::ArgRef> refs;
  std::vector<std::function<void()>> downloads;
};

// Calls f(T{}) with the C++ element type of an array of `t`; false for bool (no argument type).
template <class F>
bool withElementType(ScalarType t, F&& f) {
  switch (t) {
    case ScalarType::F32: return f(float{}), true;
    case ScalarType::F64: return f(double{}), true;
    case ScalarType::I32: return f(int32_t{}), true;
    case ScalarType::I64: return f(int64_t{}), true;
    case ScalarType::F16: return f(f16{}), true;
    case ScalarType::BF16: return f(bf16{}), true;
    case ScalarType::I8: return f(int8_t{}), true;
    case ScalarType::U8: return f(uint8_t{}), true;
    case ScalarType::U32: return f(uint32_t{}), true;
    case ScalarType::Bool: return false;
  }
  return false;
}

template <class T>
void addDeviceArray(Context& ctx, HostArray& h, bool written, ApiArgs& out) {
  T* p = h.as<T>();
  Array<T> a = ctx.upload(std::vector<T>(p, p + h.size()));
  out.refs.push_back(detail::argRef(a));
  if (written)
    out.downloads.push_back([a, p] {
      std::vector<T> v = a.download();
      std::copy(v.begin(), v.end(), p);
    });
}

ApiArgs apiArgs(Context& ctx, const Kernel& bound, HostArgs& host, bool deviceArrays) {
  ApiArgs out;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {  // kernel-local arrays are no arguments
    const Param& param = bound.params[p];
    if (param.kind == ParamKind::Size) continue;
    if (param.kind == ParamKind::Scalar) {
      const ScalarValue& v = host.scalar(int(p));
      switch (param.type) {
        case ScalarType::F32: out.refs.push_back(detail::argRef(float(v.f))); break;
        case ScalarType::F64: out.refs.push_back(detail::argRef(v.f)); break;
        case ScalarType::I32: out.refs.push_back(detail::argRef(int32_t(v.i))); break;
        case ScalarType::I64: out.refs.push_back(detail::argRef(int64_t(v.i))); break;
        default: ADD_FAILURE() << "bool or 16-bit scalar"; break;
      }
      continue;
    }
    HostArray& h = host.array(int(p));
    const bool typed = withElementType(param.type, [&](auto zero) {
      using T = decltype(zero);
      if (deviceArrays) return addDeviceArray<T>(ctx, h, param.isWritten(), out);
      detail::ArgRef r;
      r.kind = detail::ArgRef::Kind::HostArray;
      r.type = elementTypeOf<T>();
      r.count = size_t(h.size());
      r.host = h.data();
      out.refs.push_back(r);
    });
    if (!typed) ADD_FAILURE() << "bool array";
  }
  return out;
}

// Compiles `source` at `sizes` with `o`, launches it on random inputs (seed `seed`; scalars
// 0.75 + their position; outputs poisoned) passed as device arrays or host vectors, and expects
// every output within `tolerance` (default 1e-5) of the CPU reference.
void expectMatchesReference(Context& ctx, const std::string& source, const Sizes& sizes, const CompileOptions& o,
                            bool deviceArrays, uint64_t seed, double tolerance = 1e-5) {
  CompiledKernel k = ctx.compile(source, sizes, o);
  const DeviceInfo& d = ctx.device();
  Kernel bound = prepareKernel(source, sizes, o, deviceScheduleLimits(int64_t(d.sharedPerBlockOptin), 1024)).bound;
  HostArgs host(bound);
  fillInputs(bound, host, seed);
  for (size_t p = 0; p < bound.params.size(); ++p)
    if (bound.params[p].kind == ParamKind::Scalar) host.setScalar(int(p), isFloat(bound.params[p].type) ? 0.75 + double(p) : double(p + 1));
  HostArgs refArgs = host;
  ReferenceResult ref = runReference(bound, refArgs);

  ApiArgs args = apiArgs(ctx, bound, host, deviceArrays);
  k.launch(args.refs);
  for (auto& d : args.downloads) d();
  for (const ReferenceOutput& out : ref.outputs) {
    if (size_t(out.param) >= bound.numSignatureParams()) continue;  // a kernel-local array: no caller sees it
    Comparison c = compareWithReference(host.array(out.param), out);  // integers exactly
    EXPECT_EQ(c.nonFinite, 0) << out.name << ": " << c.str();
    EXPECT_TRUE(c.passes(tolerance)) << out.name << ": " << c.str();
  }
}

TEST_F(ApiGpu, EveryExampleMatchesTheReference) {
  Context ctx;
  int checked = 0;
  for (const fs::directory_entry& e : fs::directory_iterator(fs::path(RTCG_SOURCE_DIR) / "examples")) {
    if (e.path().extension() != ".rtcg") continue;
    std::string file = e.path().filename().string();
    auto sizes = kExampleSizes.find(file);
    ASSERT_NE(sizes, kExampleSizes.end()) << file << " has no test sizes here: add it to kExampleSizes";
    std::string source = readFile(e.path());
    for (int variant = 0; variant < 2; ++variant) {
      SCOPED_TRACE(file + (variant == 0 ? " (host vectors)" : " (device arrays)"));
      CompileOptions o;
      o.fileName = file;
      expectMatchesReference(ctx, source, sizes->second[variant], o, variant == 1, 42 + variant);
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * int(kExampleSizes.size()));
}

// Staged tiles copied as 16-byte runs and with cp.async several steps ahead ('copy: async'), at
// sizes whose edge tiles lie partly outside the arrays (zero-filled runs), transposed tiles
// (element-sized async copies), and split reductions reading runs of 4: against the reference,
// outputs poisoned first.
TEST_F(ApiGpu, VectorAndAsyncStagingMatchTheReference) {
  struct Case {
    std::string file;
    Sizes sizes;
    std::string schedule;
  };
  const std::string mm8 = "i: grid.y, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: serial, unroll 8; ";
  const std::vector<Case> cases = {
      {"matmul.rtcg", {{"n", 300}}, mm8 + "shared: a^T, b"},
      {"matmul.rtcg", {{"n", 300}}, mm8 + "shared: a^T, b; buffers: 4; copy: async"},
      {"matmul.rtcg", {{"n", 37}}, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8, reg 4; k: serial, unroll 4; shared: a, b; buffers: 3; copy: async"},
      {"matmul.rtcg", {{"n", 36}}, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8; k: serial, unroll 8; shared: a^T, b; buffers: 2; copy: async"},
      {"dg_diff.rtcg", {{"K", 1001}, {"Np", 35}}, "k: grid.x, thread.y 8, reg 8; i: serial, thread.x 35; j: serial, unroll 8; shared: Dr, u^T, Ds, Dt; buffers: 3; copy: async"},
      {"dg_diff.rtcg", {{"K", 999}, {"Np", 20}}, "k: grid.x, reg 8, thread.y 4; i: serial, thread.x 20; j: serial, unroll 20; shared: Dr, u, Ds, Dt; buffers: 2"},
      {"dg_lift.rtcg", {{"K", 999}, {"Np", 56}, {"Nfp", 21}}, "k: grid.x, thread.y 16, reg 4; i: serial, reg 4, thread.x 14; f: serial, unroll 16; shared: invJ, LIFT, flux; buffers: 4; copy: async"},
      {"gemv.rtcg", {{"m", 45}, {"n", 1000}}, "i: grid.x, thread.y 2; j: serial, unroll 2, thread.x 64, unroll 4"},
      // The stacked DG winners of an H100 search (N=8, N=6), at sizes with partial edge tiles.
      {"dg_diff_stacked.rtcg", {{"K", 1001}, {"Np", 35}}, "k: grid.y, thread.y 8, reg 8; m: grid.x, reg 2, thread.x 16, reg 4; j: serial, unroll 8; shared: D^T, u^T; buffers: 3; copy: async"},
      {"dg_diff_stacked.rtcg", {{"K", 999}, {"Np", 84}}, "k: grid.y, thread.y 8, reg 4; m: grid.x, reg 4, thread.x 32; j: serial, unroll 32; shared: D, u; buffers: 3; copy: async"},
      // 84 KiB of tiles: dynamic shared memory, allowed up to the device's opt-in limit.
      {"dg_diff.rtcg", {{"K", 1001}, {"Np", 84}}, "k: grid.x, thread.y 4; i: serial, thread.x 84; j: serial, unroll 4; shared: Dr, Ds, Dt, u"},
      {"gemv.rtcg", {{"m", 45}, {"n", 1002}}, "i: grid.x; j: serial, thread.x 32, unroll 4"},
  };
  Context ctx;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + ": " + c.schedule);
    std::string source = readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / c.file);
    CompileOptions o;
    o.fileName = c.file;
    o.schedule = c.schedule;
    expectMatchesReference(ctx, source, c.sizes, o, /*deviceArrays=*/true, 7);
  }
}

// Every conversion to and from f16 and bf16 on the device (rtcg's cuda_fp16.h/cuda_bf16.h for
// NVRTC) against the reference: the values rounded are the same in f32 and double here, so every
// output matches exactly; with f16 outputs of a product staged in shared memory, within the
// tolerance of one rounding.
TEST_F(ApiGpu, SixteenBitConversionsMatchTheReference) {
  const std::string conv = R"(kernel conv(n: int, x: f16[n], w: bf16[n], k: i32[n], big: i64[n], d: f64[n],
      out y: f16[n], out z: bf16[n], out e: f64[n], out m: i32[n], out v: f16[n]) {
    for i in 0..n {
      let h = x[i];
      y[i] = select(f32(h) > 0.0, h, f16(w[i]));
      z[i] = bf16(f32(h) * 3.0);
      e[i] = f64(w[i]) + f64(x[i]) + f64(bf16(d[i] / 7.0)) + f64(f16(k[i] * 1000)) + f64(bf16(big[i] * 100000000000))
           + f64(f16(d[i])) + f64(bf16(k[i]));
      m[i] = i32(f32(x[i]) * 100.0) + i32(w[i]);
      v[i] = select(i % 2 == 0, 0.1, f16(2049 + i));
    }
  })";
  Context ctx;
  for (bool deviceArrays : {false, true}) expectMatchesReference(ctx, conv, {{"n", 100003}}, {}, deviceArrays, 5);
  Kernel bound = prepareKernel(conv, {{"n", 1000}}, {}).bound;
  HostArgs host(bound);
  fillInputs(bound, host, 9);
  HostArgs refArgs = host;
  ReferenceResult ref = runReference(bound, refArgs);
  ApiArgs args = apiArgs(ctx, bound, host, true);
  ctx.compile(conv, {{"n", 1000}}).launch(args.refs);
  for (auto& d : args.downloads) d();
  for (const ReferenceOutput& out : ref.outputs)
    EXPECT_EQ(compareWithReference(host.array(out.param), out).maxAbsError, 0.0) << out.name;

  const std::string gemm = R"(kernel g(n: int, a: bf16[n, n], b: f16[n, n], out c: f16[n, n]) {
    for i in 0..n, j in 0..n { c[i, j] = f16(sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]))); }
  })";
  CompileOptions o;
  o.schedule = "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 16, reg 2; k: serial, unroll 8; shared: a^T, b; buffers: 2";
  Kernel g = prepareKernel(gemm, {{"n", 257}}, o).bound;
  HostArgs gh(g);
  fillInputs(g, gh, 3);
  HostArgs gref = gh;
  ReferenceResult gr = runReference(g, gref);
  ApiArgs gargs = apiArgs(ctx, g, gh, true);
  ctx.compile(gemm, {{"n", 257}}, o).launch(gargs.refs);
  for (auto& d : gargs.downloads) d();
  Comparison c = compare(gh.array("c"), gr.values("c"));
  EXPECT_EQ(c.nonFinite, 0) << c.str();
  EXPECT_LE(c.relativeError, verificationTolerance(g, g.findParam("c"))) << c.str();
}

// Tensor cores (`mma:`) under their precision policies, at sizes no tile divides: 3xTF32 and TF32
// on every qualifying example (with and without cp.async stages), FP64 mma on an f64 matmul.
TEST_F(ApiGpu, MmaSchedulesMatchTheReference) {
  Context ctx;
  if (ctx.device().computeMajor < 8) GTEST_SKIP() << "mma.sync with TF32 and FP64 needs sm_80";
  struct Case {
    std::string file;
    Sizes sizes;
    std::string schedule;
    PrecisionPolicy precision;
    double tolerance;
  };
  const auto x3 = PrecisionPolicy::Tf32x3, tf32 = PrecisionPolicy::Tf32;
  const std::vector<Case> cases = {
      {"matmul.rtcg", {{"n", 301}}, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x4 k 16", x3, 4e-5},
      {"matmul.rtcg", {{"n", 301}}, "mma: tf32x3 m16n8k8 warps 2x4 tile 4x4 k 8 stages 3", x3, 4e-5},
      {"matmul.rtcg", {{"n", 299}}, "mma: tf32 m16n8k8 warps 2x2 tile 4x4 k 8 stages 4", tf32, 2e-3},
      {"matmul_flat.rtcg", {{"n", 133}}, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16 stages 2", x3, 4e-5},
      {"batched_matmul.rtcg", {{"nb", 1001}, {"n", 20}}, "mma: tf32x3 m16n8k8 warps 1x2 tile 1x1 k 8 stages 2", x3, 4e-5},
      {"dg_diff_stacked.rtcg", {{"K", 1001}, {"Np", 35}}, "mma: tf32x3 m16n8k8 warps 2x2 tile 2x2 k 16", x3, 4e-5},
      {"dg_lift.rtcg", {{"K", 999}, {"Np", 56}, {"Nfp", 21}}, "mma: tf32x3 m16n8k8 warps 1x4 tile 2x2 k 8 stages 3", x3, 4e-5},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file + ": " + c.schedule);
    CompileOptions o;
    o.fileName = c.file;
    o.schedule = c.schedule;
    o.precision = c.precision;
    expectMatchesReference(ctx, readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / c.file), c.sizes, o, true, 7,
                           c.tolerance);
  }
  const std::string dgemm = "kernel dgemm(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {\n"
                            "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n}\n";
  for (const char* s : {"mma: f64 m8n8k4 warps 2x2 tile 2x2 k 16", "mma: f64 m8n8k4 warps 2x4 tile 4x2 k 8 stages 3"}) {
    SCOPED_TRACE(s);
    CompileOptions o;
    o.schedule = s;
    expectMatchesReference(ctx, dgemm, {{"n", 301}}, o, true, 7, 1e-11);
  }
}

// Split-K with staged steps: each block walks its share of k through shared memory, then the
// blocks of an output tile combine their partials. Shares that end mid-step, a last block with
// steps past the end, cp.async; each kernel runs twice from the context's cache (the arrival
// counters must be back at 0 for the second run to be right).
TEST_F(ApiGpu, SplitKStagedStepsMatchTheReference) {
  struct Case {
    Sizes sizes;
    std::string schedule;
  };
  const std::vector<Case> cases = {
      {{{"n", 1000}}, "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32, reg 4; k: grid.z, serial 32, unroll 16; shared: a^T, b"},
      {{{"n", 300}}, "i: grid.y, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: grid.z, serial 10, unroll 8; shared: a^T, b; buffers: 2"},
      {{{"n", 37}}, "i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 8; k: grid.z, serial 4, unroll 8; shared: a^T, b; buffers: 3; copy: async"},
  };
  Context ctx;
  std::string source = readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / "matmul.rtcg");
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schedule);
    CompileOptions o;
    o.fileName = "matmul.rtcg";
    o.schedule = c.schedule;
    for (uint64_t seed : {7, 8}) expectMatchesReference(ctx, source, c.sizes, o, /*deviceArrays=*/true, seed);
  }
}

// Positions pipelined: blocks that walk 4 or 16 positions of k copy the next positions' u tiles
// while computing one (registers, or cp.async two positions ahead); DG N=4 and N=5 sizes whose
// blocks run past the last element, DG lifting N=5 (84 face values in one step), and a batched
// product whose b positions are pipelined.
TEST_F(ApiGpu, PipelinedPositionsAndEarlyLoadsMatchTheReference) {
  struct Case {
    const char* file;
    Sizes sizes;
    std::string schedule;
  };
  const std::vector<Case> cases = {
      {"dg_diff.rtcg", {{"K", 4001}, {"Np", 35}},
       "k: grid.x, serial 4, thread.y 8, reg 8; i: serial, thread.x 35; j: serial, unroll 35; shared: Dr, u^T, Ds, Dt; buffers: 2"},
      {"dg_diff.rtcg", {{"K", 4001}, {"Np", 56}},
       "k: grid.x, serial 16, thread.y 4, reg 4; i: serial, reg 2, thread.x 28; j: serial, serial 56; shared: Dr, u^T, Ds, Dt; buffers: 3; copy: async"},
      {"dg_lift.rtcg", {{"K", 4001}, {"Np", 56}, {"Nfp", 21}},
       "k: grid.x, serial 16, thread.y 16; i: serial, thread.x 14, reg 4; f: serial, unroll 84; shared: invJ, LIFT, flux; buffers: 2"},
      // `loads: early` (the old rhs ahead of the reduction), alone and with positions pipelined.
      {"dg_lift.rtcg", {{"K", 4001}, {"Np", 56}, {"Nfp", 21}},
       "k: grid.x, thread.y 8, reg 8; i: serial, reg 2, thread.x 32; f: serial, unroll 32; shared: invJ, LIFT, flux^T; buffers: 2; loads: early"},
      {"dg_lift.rtcg", {{"K", 4001}, {"Np", 56}, {"Nfp", 21}},
       "k: grid.x, serial 4, thread.y 16; i: serial, thread.x 14, reg 4; f: serial, unroll 84; shared: invJ, LIFT, flux; buffers: 3; copy: async; loads: early"},
      {"batched_matmul.rtcg", {{"n", 16}, {"nb", 1001}},
       "b: grid.x, serial 4; i: serial, reg 4, thread.y 4; j: serial, thread.x 16; k: serial, unroll 16; shared: a, x; buffers: 2"},
  };
  Context ctx;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.schedule);
    std::string source = readFile(fs::path(RTCG_SOURCE_DIR) / "examples" / c.file);
    CompileOptions o;
    o.fileName = c.file;
    o.schedule = c.schedule;
    for (uint64_t seed : {7, 8}) expectMatchesReference(ctx, source, c.sizes, o, /*deviceArrays=*/true, seed);
  }
}

// ---- arguments ---------------------------------------------------------------------------------

TEST_F(ApiGpu, ArgumentMismatchesWithRealArrays) {
  Context ctx;
  CompiledKernel mm = ctx.compile(kMatmul, {{"n", 500}});
  Array<float> a = ctx.empty<float>(250000), b = ctx.empty<float>(250000);
  Array<double> wrongType = ctx.empty<double>(250000);
  Array<float> wrongSize = ctx.empty<float>(250001);
  EXPECT_NE(errorOf([&] { mm(a, b); }).find("matmul: expected 3 arguments, given 2"), std::string::npos);
  EXPECT_EQ(errorOf([&] { mm(a, b, wrongType); }),
            "matmul: argument 3 (out c): expected f32[500, 500] (250000 elements), given rtcg::Array<double> of "
            "250000 elements");
  EXPECT_EQ(errorOf([&] { mm(wrongSize, b, a); }),
            "matmul: argument 1 (a): expected f32[500, 500] (250000 elements), given rtcg::Array<float> of 250001 "
            "elements");
  const std::vector<float> constOut(250000);
  EXPECT_NE(errorOf([&] { mm(a, b, constOut); }).find("given const std::vector<float> of 250000 elements"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { mm(a, 2.0f, b); }).find("argument 2 (b): expected f32[500, 500] (250000 elements), "
                                                  "given float"),
            std::string::npos);
  EXPECT_NE(errorOf([&] { mm(a, b, a); }).find("are the same memory"), std::string::npos);
  EXPECT_EQ(mm.signature(), "matmul(a: f32[500, 500], b: f32[500, 500], out c: f32[500, 500]) with n = 500");
}

TEST_F(ApiGpu, HostVectorsAreInOutAndInOut) {
  Context ctx;
  // An out array the kernel does not write in full is refused when the sizes are bound (issue 40).
  EXPECT_THROW(ctx.compile(R"(kernel part(n: int, a: f32[n], out b: f32[2*n]) { for i in 0..n { b[i] = a[i]; } })",
                           {{"n", 1000}}),
               CompileError);
  CompiledKernel k = ctx.compile(R"(kernel io(n: int, a: f32[n], out b: f32[n], inout c: f32[n]) {
    for i in 0..n { b[i] = a[i] + c[i]; c[i] = c[i] * 2; }
  })", {{"n", 1000}});
  std::vector<float> a(1000), b(1000, 7.0f), c(1000);
  for (int i = 0; i < 1000; ++i) a[i] = float(i), c[i] = float(3 * i);
  const std::vector<float> aConst = a;
  k(aConst, b, c);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(a[i], float(i));            // in: untouched
    ASSERT_EQ(b[i], float(i + 3 * i));    // out: written
    ASSERT_EQ(c[i], float(6 * i));        // inout: read and written back
  }
  // Device arrays keep their contents between launches: inout accumulates.
  Array<float> da = ctx.upload(a), db = ctx.empty<float>(1000), dc = ctx.upload(c);
  k(da, db, dc);
  k(da, db, dc);
  std::vector<float> hc = dc.download();
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(hc[i], float(24 * i));
}

TEST_F(ApiGpu, ScalarArgumentsWiden) {
  Context ctx;
  CompiledKernel k = ctx.compile(R"(kernel s(n: int, alpha: f64, m: i64, out y: f64[n]) {
    for i in 0..n { y[i] = alpha * f64(m) + f64(i); }
  })", {{"n", 10}});
  std::vector<double> y(10);
  k(0.5f, int32_t(4), y);  // float -> f64, int32_t -> i64
  for (int i = 0; i < 10; ++i) EXPECT_EQ(y[i], 2.0 + i);
}

// ---- caches ------------------------------------------------------------------------------------

TEST_F(ApiGpu, SameRequestIsServedFromMemory) {
  Context ctx;
  Context::CacheStats before = ctx.cacheStats();
  CompiledKernel k1 = ctx.compile(kMatmul, {{"n", 77}});
  CompiledKernel k2 = ctx.compile(kMatmul, {{"n", 77}});
  CompileOptions named;
  named.kernel = "matmul";  // another request, the same emitted source: the loaded module is reused
  CompiledKernel k3 = ctx.compile(kMatmul, {{"n", 77}}, named);
  Context::CacheStats after = ctx.cacheStats();
  EXPECT_EQ(after.memory - before.memory, 2);
  EXPECT_EQ((after.nvrtc + after.disk) - (before.nvrtc + before.disk), 1);
  EXPECT_EQ(k1.cudaSource(), k3.cudaSource());
  EXPECT_EQ(k1.scheduleText(), k2.scheduleText());
  EXPECT_EQ(k1.name(), "matmul");
}

struct ProbeResult {
  int exitCode = -1;
  std::string output;
  std::map<std::string, double> values;
};

ProbeResult runProbe(const fs::path& cacheDir, int n) {
  std::string cmd = "env -u RTCG_CACHE RTCG_CACHE_DIR='" + cacheDir.string() + "' '" RTCG_API_PROBE "' " +
                    std::to_string(n) + " 2>&1";
  ProbeResult r;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return r;
  char buf[512];
  while (fgets(buf, sizeof buf, pipe)) r.output += buf;
  int status = pclose(pipe);
  r.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  static const std::regex kv(R"(([a-z_]+)=([-+0-9.eE]+))");
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), kv), end; it != end; ++it)
    r.values[(*it)[1]] = std::stod((*it)[2]);
  return r;
}

fs::path freshDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / ("rtcg-api-test-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST_F(ApiGpu, DiskCacheServesASecondProcess) {
  fs::path dir = freshDir("disk");
  ProbeResult cold = runProbe(dir, 200);
  ASSERT_EQ(cold.exitCode, 0) << cold.output;
  EXPECT_EQ(cold.values["from_disk"], 0) << cold.output;
  EXPECT_EQ(cold.values["nvrtc"], 1) << cold.output;
  ProbeResult warm = runProbe(dir, 200);
  ASSERT_EQ(warm.exitCode, 0) << warm.output;
  EXPECT_EQ(warm.values["from_disk"], 1) << warm.output;
  EXPECT_EQ(warm.values["disk"], 1) << warm.output;
  EXPECT_EQ(warm.values["nvrtc"], 0) << warm.output;  // served from disk, not timed: times flake under load
  fs::remove_all(dir);
}

TEST_F(ApiGpu, CorruptCacheEntryIsIgnoredAndRebuilt) {
  fs::path dir = freshDir("corrupt");
  ASSERT_EQ(runProbe(dir, 150).exitCode, 0);
  int corrupted = 0;
  for (const fs::directory_entry& e : fs::recursive_directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    std::string bytes = readFile(e.path());
    for (size_t i = bytes.size() / 2; i < bytes.size(); i += 7) bytes[i] = char(~bytes[i]);
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
    ++corrupted;
  }
  ASSERT_GT(corrupted, 0) << "the first run left no cache file in " << dir;
  ProbeResult rebuilt = runProbe(dir, 150);
  ASSERT_EQ(rebuilt.exitCode, 0) << rebuilt.output;
  EXPECT_EQ(rebuilt.values["from_disk"], 0) << rebuilt.output;
  ProbeResult again = runProbe(dir, 150);
  ASSERT_EQ(again.exitCode, 0) << again.output;
  EXPECT_EQ(again.values["from_disk"], 1) << again.output;
  fs::remove_all(dir);
}

// Prints the start-up cost of a kernel in a fresh process: cold (NVRTC) and warm (disk cache).
TEST_F(ApiGpu, ColdAndWarmStartTiming) {
  fs::path dir = freshDir("timing");
  ProbeResult cold = runProbe(dir, 500);
  ProbeResult warm = runProbe(dir, 500);
  ASSERT_EQ(cold.exitCode, 0) << cold.output;
  ASSERT_EQ(warm.exitCode, 0) << warm.output;
  std::printf("[ timing ] matmul n=500, DSL string -> launchable kernel in a fresh process:\n"
              "[ timing ]   cold (NVRTC):      %8.2f ms  (+ %.2f ms creating the Context)\n"
              "[ timing ]   warm (disk cache): %8.2f ms  (+ %.2f ms creating the Context)\n",
              cold.values["compile_ms"], cold.values["context_ms"], warm.values["compile_ms"],
              warm.values["context_ms"]);
  RecordProperty("cold_compile_ms", std::to_string(cold.values["compile_ms"]));
  RecordProperty("warm_compile_ms", std::to_string(warm.values["compile_ms"]));
  EXPECT_EQ(warm.values["from_disk"], 1);
  fs::remove_all(dir);
}

// ---- threads -----------------------------------------------------------------------------------

TEST_F(ApiGpu, ThreadsCompileAndLaunchConcurrently) {
  Context ctx;
  constexpr int kThreads = 8, kRounds = 3;
  const char* axpy = R"(kernel axpy(n: int, a: f32, x: f32[n], inout y: f32[n]) {
    for i in 0..n { y[i] = a * x[i] + y[i]; }
  })";
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int round = 0; round < kRounds; ++round) {
          // Even threads share one kernel; odd threads each compile their own size.
          int n = t % 2 == 0 ? 4096 : 1000 + 17 * t;
          CompiledKernel k = ctx.compile(axpy, {{"n", n}});
          std::vector<float> x(n), y(n);
          for (int i = 0; i < n; ++i) x[i] = float(i % 100), y[i] = float(t);
          k(2.0f, x, y);
          for (int i = 0; i < n; ++i)
            if (y[i] != 2.0f * float(i % 100) + float(t)) {
              failures[t] = "thread " + std::to_string(t) + ": wrong y[" + std::to_string(i) + "]";
              return;
            }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
  Context::CacheStats s = ctx.cacheStats();
  EXPECT_EQ(s.nvrtc + s.disk + s.memory, kThreads * kRounds);
  EXPECT_LE(s.nvrtc + s.disk, 1 + kThreads / 2);  // one module per distinct kernel
}

TEST_F(ApiGpu, CrossBlockReductionLaunchesFromThreadsAreSerialized) {
  // A dot product split across 264 blocks keeps its partials in module-global scratch; eight
  // threads launch the same compiled kernel on their own inputs at once, and each gets its own
  // sum (the launches run one at a time), every round.
  Context ctx;
  const char* dot = R"(kernel dot(n: int, x: f32[n], y: f32[n], out r: f32[1]) {
    r[0] = sum(i in 0..n, x[i] * y[i]);
  })";
  const int n = 1 << 22;
  CompileOptions o;
  o.schedule = "i: serial, unroll 4, grid.x 264, thread.x 256";
  CompiledKernel k = ctx.compile(dot, {{"n", n}}, o);
  EXPECT_EQ(k.scheduleOrigin(), "explicit");
  constexpr int kThreads = 8, kRounds = 4;
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        // Small integers: every partial sum is exact in f32, so the result is too.
        std::vector<float> x(n), y(n);
        double expect = 0;
        for (int i = 0; i < n; ++i) {
          x[i] = float((i * 7 + t) % 5 - 2);
          y[i] = float((i + 3 * t) % 3 - 1);
          expect += double(x[i]) * double(y[i]);
        }
        for (int round = 0; round < kRounds; ++round) {
          std::vector<float> r{std::nanf("")};
          k(x, y, r);
          if (double(r[0]) != expect) {
            failures[t] = "thread " + std::to_string(t) + " round " + std::to_string(round) + ": " +
                          std::to_string(r[0]) + " != " + std::to_string(expect);
            return;
          }
        }
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  for (std::thread& th : threads) th.join();
  for (const std::string& f : failures) EXPECT_EQ(f, "");
}

}  // namespace
}  // namespace rtcg

namespace rtcg {
namespace {

const char* kAxpby = R"(kernel axpby(n: int, a: f32, x: f32[n], b: f32, y: f32[n], out z: f32[n]) {
  for i in 0..n { z[i] = a * x[i] + b * y[i]; }
})";

// Sets an environment variable for one test and restores it after.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(std::string n, const std::string& value) : name(std::move(n)) {
    if (const char* v = std::getenv(name.c_str())) old = v;
    setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() { old ? (void)setenv(name.c_str(), old->c_str(), 1) : (void)unsetenv(name.c_str()); }
};

std::vector<float> runAxpby(const CompiledKernel& k, const std::vector<float>& x, const std::vector<float>& y) {
  std::vector<float> z(x.size(), std::nanf(""));
  k(2.0f, x, -0.5f, y, z);
  return z;
}

TEST(ApiTuning, PolicyTakesTheDatabasesBestOrTunesOnFirstUse) {
  if (!cuda::cudaAvailable()) GTEST_SKIP() << cuda::unavailableReason();
  fs::path dir = fs::temp_directory_path() / ("rtcg-api-tuning-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ScopedEnv cacheDir("RTCG_CACHE_DIR", dir.string());
  const int n = 1 << 20;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) x[i] = std::sin(0.37f * i), y[i] = std::cos(0.11f * i) + 0.25f;
  auto check = [&](const std::vector<float>& z) {
    double err = 0, norm = 0;
    for (int i = 0; i < n; ++i) {
      double ref = 2.0 * x[i] - 0.5 * y[i];
      err += (z[i] - ref) * (z[i] - ref);
      norm += ref * ref;
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-6);
  };

  Context ctx;
  CompileOptions cached;  // the default policy: use the database when it knows the kernel
  CompiledKernel plain = ctx.compile(kAxpby, {{"n", n}}, cached);
  EXPECT_EQ(plain.scheduleOrigin(), "default");
  check(runAxpby(plain, x, y));

  CompileOptions tuneNow;
  tuneNow.tuning = Tuning::TuneOnFirstUse;
  tuneNow.tuneMaxCandidates = 6;
  tuneNow.tuneTimeLimitSeconds = 20;
  tuneNow.fileName = "axpby-tuning.rtcg";
  std::vector<TuningProgress> progress;  // onTuneProgress: one call per candidate, in order
  tuneNow.onTuneProgress = [&](const TuningProgress& p) { progress.push_back(p); };
  CompiledKernel tuned = ctx.compile(kAxpby, {{"n", n}}, tuneNow);
  EXPECT_EQ(tuned.scheduleOrigin(), "tuned");
  ASSERT_FALSE(progress.empty());
  EXPECT_EQ(progress.back().timeLimitSeconds, 20);
  EXPECT_GT(progress.back().verified, 0);
  EXPECT_GT(progress.back().bestMs, 0);
  for (size_t i = 1; i < progress.size(); ++i) EXPECT_GE(progress[i].measured, progress[i - 1].measured);
  check(runAxpby(tuned, x, y));

  Context second;  // a fresh context (as a new process would) finds the winner in the database
  CompiledKernel fromDb = second.compile(kAxpby, {{"n", n}}, cached);
  EXPECT_EQ(fromDb.scheduleOrigin(), "tuning database");
  EXPECT_EQ(fromDb.scheduleText(), tuned.scheduleText());
  check(runAxpby(fromDb, x, y));

  CompileOptions off;
  off.tuning = Tuning::Off;
  EXPECT_EQ(second.compile(kAxpby, {{"n", n}}, off).scheduleOrigin(), "default");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace rtcg
