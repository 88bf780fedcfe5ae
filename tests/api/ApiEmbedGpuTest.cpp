// rtcg inside an existing CUDA application, on a GPU (each test skips itself without a device):
// the application's memory wrapped at offsets 0, 4, 8 and 12 bytes into its allocation; rtcg
// launches on the application's stream between cuBLAS calls, captured into a CUDA graph and
// replayed; a cross-block reduction launched on two streams at once. Checked against host results.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Memory.h"

namespace rtcg {
namespace {

class ApiEmbedGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::cudaAvailable()) GTEST_SKIP() << "no CUDA: " << cuda::unavailableReason();
  }
};

const char* kMatmul = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";
const char* kAxpby = R"(kernel axpby(n: int, a: f32, x: f32[n], b: f32, y: f32[n], out z: f32[n]) {
  for i in 0..n { z[i] = a * x[i] + b * y[i]; }
}
)";
const char* kDot = R"(kernel dot(n: int, x: f32[n], y: f32[n], out r: f32[1]) {
  r[0] = sum(i in 0..n, x[i] * y[i]);
}
)";
// A dot product whose blocks combine their partials through module-global scratch.
const char* kCrossBlock = "i: serial, grid.x 16, thread.x 128";

std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = float(seed >> 8) / float(1 << 24) - 0.5f;
  }
  return v;
}

std::vector<double> hostMatmul(const std::vector<float>& a, const std::vector<float>& b, int n) {
  std::vector<double> c(size_t(n) * n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0;
      for (int k = 0; k < n; ++k) s += double(a[i * n + k]) * b[k * n + j];
      c[i * n + j] = s;
    }
  return c;
}

// The first element that differs by more than a relative 1e-4, or -1.
template <class A, class B>
long firstMismatch(const std::vector<A>& got, const std::vector<B>& want) {
  if (got.size() != want.size()) return 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::fabs(double(got[i]) - double(want[i])) <= 1e-4 * (1 + std::fabs(double(want[i]))))) return long(i);
  return -1;
}

// The application's memory: cuMemAlloc through rtcg's driver table (what cudaMalloc gives), at
// offsets of 0, 4, 8 and 12 bytes. Staged schedules that copy 16-byte runs (and with cp.async)
// run their variant without vector accesses for the offset arrays; Array::data() hands the
// address back.
TEST_F(ApiEmbedGpu, WrappedMemoryAtEveryAlignedOffsetMatchesTheReference) {
  Context ctx;
  const int n = 64;
  const size_t count = size_t(n) * n, region = count * sizeof(float) + 256;
  std::vector<float> a = values(count, 1), b = values(count, 2);
  std::vector<double> want = hostMatmul(a, b, n);
  cuda::DeviceBuffer pool(cuda::Context::primary(0), 3 * region);
  const std::string staged = "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b";
  for (const std::string& schedule : {staged, staged + "; buffers: 2; copy: async", std::string()}) {
    CompileOptions o;
    o.schedule = schedule;
    CompiledKernel mm = ctx.compile(kMatmul, {{"n", n}}, o);
    for (size_t offset : {0, 4, 8, 12}) {
      SCOPED_TRACE("schedule '" + schedule + "', offset " + std::to_string(offset));
      auto at = [&](int r) { return reinterpret_cast<float*>(pool.devicePtr() + r * region + offset); };
      Array<float> da = ctx.wrap(at(0), count), db = ctx.wrap(at(1), count), dc = ctx.wrap(at(2), count);
      EXPECT_EQ(da.data(), at(0));
      da.upload(a);
      db.upload(b);
      mm(da, db, dc);
      EXPECT_EQ(firstMismatch(dc.download(), want), -1);
      std::vector<float> hostC(count);
      mm(da, b, hostC);  // wrapped and host arguments together
      EXPECT_EQ(firstMismatch(hostC, want), -1);
    }
  }
  std::string misaligned;
  try {
    ctx.wrap(reinterpret_cast<double*>(pool.devicePtr() + 4), 4);
  } catch (const Error& e) {
    misaligned = e.what();
  }
  EXPECT_NE(misaligned.find("is not aligned for f64 (8 bytes)"), std::string::npos) << misaligned;
  EXPECT_THROW(ctx.wrap(static_cast<float*>(nullptr), 4), Error);
  EXPECT_EQ(ctx.wrap(static_cast<float*>(nullptr), 0).size(), 0u);
  Array<float> owned = ctx.upload(a);
  EXPECT_NE(owned.data(), nullptr);
}

// What an application links: the driver's stream and graph calls and cuBLAS, loaded with dlopen
// so that test_api needs neither at build time.
struct App {
  using Result = int;
  Result (*streamCreate)(CUstream_st**, unsigned) = nullptr;
  Result (*streamDestroy)(CUstream_st*) = nullptr;
  Result (*streamSynchronize)(CUstream_st*) = nullptr;
  Result (*beginCapture)(CUstream_st*, int) = nullptr;
  Result (*endCapture)(CUstream_st*, void**) = nullptr;
  Result (*graphInstantiate)(void**, void*, unsigned long long) = nullptr;
  Result (*graphLaunch)(void*, CUstream_st*) = nullptr;
  Result (*graphExecDestroy)(void*) = nullptr;
  Result (*graphDestroy)(void*) = nullptr;
  int (*blasCreate)(void**) = nullptr;
  int (*blasSetStream)(void*, CUstream_st*) = nullptr;
  int (*blasSgemm)(void*, int, int, int, int, int, const float*, const float*, int, const float*, int, const float*,
                   float*, int) = nullptr;
  int (*blasDestroy)(void*) = nullptr;

  // Empty on success, else what is missing.
  std::string load() {
    void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    void* blas = nullptr;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"})
      if ((blas = dlopen(name, RTLD_NOW | RTLD_GLOBAL))) break;
    if (!cu || !blas) return "libcuda.so.1 or libcublas.so not loadable";
    std::string missing;
    auto get = [&](void* lib, auto& fn, const char* name) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, name));
      if (!fn) missing += std::string(" ") + name;
    };
    get(cu, streamCreate, "cuStreamCreate");
    get(cu, streamDestroy, "cuStreamDestroy_v2");
    get(cu, streamSynchronize, "cuStreamSynchronize");
    get(cu, beginCapture, "cuStreamBeginCapture_v2");
    get(cu, endCapture, "cuStreamEndCapture");
    get(cu, graphInstantiate, "cuGraphInstantiateWithFlags");
    get(cu, graphLaunch, "cuGraphLaunch");
    get(cu, graphExecDestroy, "cuGraphExecDestroy");
    get(cu, graphDestroy, "cuGraphDestroy");
    get(blas, blasCreate, "cublasCreate_v2");
    get(blas, blasSetStream, "cublasSetStream_v2");
    get(blas, blasSgemm, "cublasSgemm_v2");
    get(blas, blasDestroy, "cublasDestroy_v2");
    return missing.empty() ? "" : "missing:" + missing;
  }
};

constexpr int kCaptureRelaxed = 2;  // CU_STREAM_CAPTURE_MODE_RELAXED

// One step of an application: cuBLAS computes c = a b into an rtcg::Array (through data()), rtcg
// computes z = 2 c + 0.5 a and r = z . b (a cross-block reduction) on the same stream; nothing
// waits until the end.
struct Step {
  App& app;
  void* blas;
  CUstream_st* stream;
  CompiledKernel axpby, dot;
  Array<float> a, b, c, z, r;
  int n;
  void enqueue() {
    const float one = 1, zero = 0;
    // Row-major c = a b is column-major c^T = b^T a^T.
    ASSERT_EQ(app.blasSgemm(blas, 0, 0, n, n, n, &one, b.data(), n, a.data(), n, &zero, c.data(), n), 0);
    axpby.launchAsync(stream, 2.0f, c, 0.5f, a, z);
    dot.launchAsync(stream, z, b, r);
  }
  void check(const std::vector<float>& ha, const std::vector<float>& hb) {
    std::vector<double> hc = hostMatmul(ha, hb, n), hz(hc.size());
    double hr = 0;
    for (size_t i = 0; i < hc.size(); ++i) hz[i] = 2 * hc[i] + 0.5 * ha[i], hr += hz[i] * hb[i];
    EXPECT_EQ(firstMismatch(c.download(), hc), -1);
    EXPECT_EQ(firstMismatch(z.download(), hz), -1);
    EXPECT_NEAR(r.download()[0], hr, 1e-3 * (1 + std::fabs(hr)));
  }
};

TEST_F(ApiEmbedGpu, LaunchesOnTheApplicationsStreamBetweenCublasCallsAndInAGraph) {
  App app;
  std::string why = app.load();
  if (!why.empty()) GTEST_SKIP() << why;
  Context ctx;
  const int n = 96;
  const size_t count = size_t(n) * n;
  CompileOptions cross;
  cross.schedule = kCrossBlock;
  CUstream_st* stream = nullptr;
  ASSERT_EQ(app.streamCreate(&stream, 1 /* CU_STREAM_NON_BLOCKING */), 0);
  void* blas = nullptr;
  ASSERT_EQ(app.blasCreate(&blas), 0);
  ASSERT_EQ(app.blasSetStream(blas, stream), 0);
  std::vector<float> ha = values(count, 3), hb = values(count, 4);
  Step step{app, blas, stream, ctx.compile(kAxpby, {{"n", int64_t(count)}}), ctx.compile(kDot, {{"n", int64_t(count)}}, cross),
            ctx.upload(ha), ctx.upload(hb), ctx.empty<float>(count), ctx.empty<float>(count), ctx.empty<float>(1), n};

  // Direct launches, in the stream's order after cuBLAS.
  step.enqueue();
  ASSERT_EQ(app.streamSynchronize(stream), 0);
  step.check(ha, hb);

  // The same step captured once and replayed on new inputs.
  void* graph = nullptr;
  void* exec = nullptr;
  ASSERT_EQ(app.beginCapture(stream, kCaptureRelaxed), 0);
  step.enqueue();
  ASSERT_EQ(app.endCapture(stream, &graph), 0);
  ASSERT_EQ(app.graphInstantiate(&exec, graph, 0), 0);
  for (uint32_t seed : {5u, 6u}) {
    ha = values(count, seed);
    step.a.upload(ha);
    ASSERT_EQ(app.graphLaunch(exec, stream), 0);
    ASSERT_EQ(app.streamSynchronize(stream), 0);
    step.check(ha, hb);
  }
  EXPECT_THROW(step.axpby.launchAsync(stream, 2.0f, ha, 0.5f, step.a, step.z), Error);  // a host vector
  app.graphExecDestroy(exec);
  app.graphDestroy(graph);
  app.blasDestroy(blas);
  app.streamDestroy(stream);
}

// A cross-block reduction launched on two streams at once: each stream's launches use their own
// scratch, so both results are right every time.
TEST_F(ApiEmbedGpu, CrossBlockReductionsOnTwoStreamsDoNotShareScratch) {
  App app;
  std::string why = app.load();
  if (!why.empty()) GTEST_SKIP() << why;
  Context ctx;
  const size_t n = 1 << 20;
  CompileOptions cross;
  cross.schedule = kCrossBlock;
  CompiledKernel dot = ctx.compile(kDot, {{"n", int64_t(n)}}, cross);
  std::vector<float> x = values(n, 7), y = values(n, 8), w = values(n, 9);
  double xy = 0, xw = 0;
  for (size_t i = 0; i < n; ++i) xy += double(x[i]) * y[i], xw += double(x[i]) * w[i];
  Array<float> dx = ctx.upload(x), dy = ctx.upload(y), dw = ctx.upload(w);
  CUstream_st* s[2] = {nullptr, nullptr};
  for (CUstream_st*& st : s) ASSERT_EQ(app.streamCreate(&st, 1), 0);
  std::vector<Array<float>> r1, r2;
  for (int i = 0; i < 16; ++i) {
    r1.push_back(ctx.empty<float>(1));
    r2.push_back(ctx.empty<float>(1));
    dot.launchAsync(s[0], dx, dy, r1.back());
    dot.launchAsync(s[1], dx, dw, r2.back());
  }
  for (CUstream_st* st : s) ASSERT_EQ(app.streamSynchronize(st), 0);
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(r1[i].download()[0], xy, 1e-3 * (1 + std::fabs(xy))) << i;
    EXPECT_NEAR(r2[i].download()[0], xw, 1e-3 * (1 + std::fabs(xw))) << i;
  }
  for (CUstream_st* st : s) app.streamDestroy(st);
}

}  // namespace
}  // namespace rtcg
