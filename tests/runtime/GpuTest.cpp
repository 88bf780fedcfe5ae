// Tests that need a CUDA GPU; each skips itself when there is none (cudaAvailable() false).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>

#include "runtime/Benchmark.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Launch.h"
#include "runtime/Memory.h"
#include "runtime/Module.h"
#include "runtime/Stream.h"
#include "TestKernels.h"

namespace rtcg::cuda {
namespace {

class Gpu : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cudaAvailable()) GTEST_SKIP() << "no CUDA: " << unavailableReason();
    ctx_ = Context::primary(0);
    module_ = Module(ctx_, test::kTestPtx);
  }

  // Random floats in [1, 2): never zero, so a copy or kernel that writes nothing is caught.
  static std::vector<float> randomFloats(size_t n, unsigned seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(1.0f, 2.0f);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  }

  // c = a + b on the GPU for n elements; returns c.
  std::vector<float> runAdd(const std::vector<float>& a, const std::vector<float>& b, const Stream* stream = nullptr) {
    int n = static_cast<int>(a.size());
    DeviceBuffer da = uploadBuffer(ctx_, a), db = uploadBuffer(ctx_, b), dc(ctx_, n * sizeof(float));
    dc.fill32(0);
    Function add = module_.function("add");
    KernelArg args[] = {KernelArg::buffer(da), KernelArg::buffer(db), KernelArg::buffer(dc), KernelArg::i32(n)};
    launch(add, Dim3{static_cast<unsigned>((n + 255) / 256)}, Dim3{256}, 0, stream, args);
    if (stream) stream->synchronize();
    return dc.download<float>();
  }

  std::shared_ptr<Context> ctx_;
  Module module_;
};

TEST_F(Gpu, DeviceQuery) {
  ASSERT_GE(Device::count(), 1);
  const DeviceProperties& p = ctx_->device().properties();
  EXPECT_FALSE(p.name.empty());
  EXPECT_GE(p.computeCapability(), 75);
  EXPECT_EQ(p.arch(), "sm_" + std::to_string(p.computeCapability()));
  EXPECT_GT(p.multiprocessors, 0);
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_EQ(p.maxThreadsPerBlock, 1024);
  EXPECT_EQ(p.sharedPerBlock, 48u * 1024);
  EXPECT_GE(p.sharedPerBlockOptin, p.sharedPerBlock);
  EXPECT_GE(p.sharedPerMultiprocessor, p.sharedPerBlockOptin);
  EXPECT_GT(p.registersPerBlock, 0);
  EXPECT_GE(p.registersPerMultiprocessor, p.registersPerBlock);
  EXPECT_GT(p.l2Bytes, 1u << 20);
  EXPECT_GT(p.totalMemory, size_t(1) << 30);
  EXPECT_GE(p.driverVersion, 12000);
  EXPECT_EQ(p.driverVersion, driverVersion());
  EXPECT_NE(p.describe().find(p.name), std::string::npos);
  Context::MemoryInfo mem = ctx_->memoryInfo();
  EXPECT_GT(mem.freeBytes, 0u);
  EXPECT_EQ(mem.totalBytes, p.totalMemory);
  if (p.computeCapability() == 90) {  // H100 / H200
    EXPECT_EQ(p.sharedPerBlockOptin, 227u * 1024);
    EXPECT_EQ(p.registersPerMultiprocessor, 65536);
  }
}

TEST_F(Gpu, PrimaryContextIsSharedAndBadOrdinalsAreRejected) {
  EXPECT_EQ(Context::primary(0).get(), ctx_.get());
  try {
    Device d(Device::count());
    FAIL() << "device " << d.ordinal() << " exists?";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST_F(Gpu, CopiesRoundTrip) {
  std::vector<float> host = randomFloats(100003, 1);
  DeviceBuffer a = uploadBuffer(ctx_, host);
  EXPECT_EQ(a.bytes(), host.size() * sizeof(float));
  EXPECT_EQ(a.download<float>(), host);

  DeviceBuffer b(ctx_, a.bytes());
  b.copyFromDevice(a, a.bytes());
  EXPECT_EQ(b.download<float>(), host);

  // Partial copies at offsets.
  std::vector<float> part(10);
  b.copyToHost(part.data(), 10 * sizeof(float), 500 * sizeof(float));
  EXPECT_TRUE(std::equal(part.begin(), part.end(), host.begin() + 500));

  b.fill32(0x3f800000u);  // 1.0f
  std::vector<float> ones = b.download<float>();
  EXPECT_TRUE(std::all_of(ones.begin(), ones.end(), [](float x) { return x == 1.0f; }));
  b.fill8(0);
  EXPECT_EQ(b.download<float>(), std::vector<float>(host.size(), 0.0f));

  EXPECT_EQ(a.view<float>().count, host.size());
  EXPECT_THROW(a.view<double>(), Error);  // 400012 bytes are not a whole number of doubles
}

TEST_F(Gpu, CopyBoundsAreChecked) {
  DeviceBuffer b(ctx_, 64);
  std::vector<char> host(128, 1);
  try {
    b.copyFromHost(host.data(), 65);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("65 bytes at offset 0 do not fit in a device buffer of 64 bytes"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(b.copyToHost(host.data(), 8, 60), Error);
  EXPECT_EQ(b.view<double>().count, 8u);
  EXPECT_THROW(DeviceBuffer(ctx_, 6).view<float>(), Error);
}

TEST_F(Gpu, EmptyBuffers) {
  DeviceBuffer e(ctx_, 0);
  EXPECT_EQ(e.devicePtr(), 0u);
  EXPECT_TRUE(e.download<float>().empty());
  e.fill8(1);
  DeviceBuffer moved = std::move(e);
  EXPECT_EQ(moved.bytes(), 0u);
}

TEST_F(Gpu, AsyncCopiesWithPinnedMemory) {
  Stream stream(ctx_);
  std::vector<float> src = randomFloats(1 << 20, 2);
  PinnedBuffer pinnedIn(ctx_, src.size() * sizeof(float)), pinnedOut(ctx_, src.size() * sizeof(float));
  std::copy(src.begin(), src.end(), pinnedIn.as<float>().begin());
  DeviceBuffer d1(ctx_, pinnedIn.bytes()), d2(ctx_, pinnedIn.bytes());
  d1.copyFromHostAsync(pinnedIn.data(), pinnedIn.bytes(), &stream);
  d2.copyFromDeviceAsync(d1, d1.bytes(), &stream);
  d2.copyToHostAsync(pinnedOut.data(), pinnedOut.bytes(), &stream);
  stream.synchronize();
  auto out = pinnedOut.as<float>();
  EXPECT_TRUE(std::equal(out.begin(), out.end(), src.begin()));
}

TEST_F(Gpu, LaunchesAddFromPtx) {
  for (int n : {1, 255, 256, 1000, 100001}) {
    std::vector<float> a = randomFloats(n, 3), b = randomFloats(n, 4);
    std::vector<float> c = runAdd(a, b);
    ASSERT_EQ(c.size(), a.size());
    for (int i = 0; i < n; ++i) ASSERT_EQ(c[i], a[i] + b[i]) << "n=" << n << " i=" << i;
  }
}

TEST_F(Gpu, LaunchOnStreamAndFromSeveralThreads) {
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Stream s(ctx_);
      std::vector<float> a = randomFloats(5000, 10 + t), b = randomFloats(5000, 20 + t);
      std::vector<float> c = runAdd(a, b, &s);
      bool good = true;
      for (size_t i = 0; i < c.size(); ++i) good &= c[i] == a[i] + b[i];
      if (good) ++ok;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(ok.load(), 4);
}

TEST_F(Gpu, MarshalsEveryScalarType) {
  const long long n = 3000;
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> dist(-3.0, 3.0);
  std::vector<double> x(n);
  for (double& v : x) v = dist(rng);
  DeviceBuffer dx = uploadBuffer(ctx_, x), dout(ctx_, n * sizeof(double));
  dout.fill8(0);
  const float alpha = 1.75f;
  const double beta = -0.3125;
  KernelArg args[] = {KernelArg::buffer(dout), KernelArg::span(dx.view<double>()), KernelArg::f32(alpha),
                      KernelArg::f64(beta), KernelArg::i64(n)};
  launch(module_.function("axpb"), Dim3{static_cast<unsigned>((n + 127) / 128)}, Dim3{128}, 0, nullptr, args);
  std::vector<double> out = dout.download<double>();
  for (long long i = 0; i < n; ++i) ASSERT_DOUBLE_EQ(out[i], std::fma(x[i], double(alpha), beta)) << i;
}

TEST_F(Gpu, ArgumentsAreCheckedAgainstTheKernel) {
  Function add = module_.function("add");
  if (!add.parameterSizes()) GTEST_SKIP() << "this driver has no cuFuncGetParamInfo";
  EXPECT_EQ(*add.parameterSizes(), (std::vector<size_t>{8, 8, 8, 4}));
  DeviceBuffer b(ctx_, 16);
  KernelArg three[] = {KernelArg::buffer(b), KernelArg::buffer(b), KernelArg::buffer(b)};
  try {
    launch(add, Dim3{1}, Dim3{1}, 0, nullptr, three);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "kernel 'add' takes 4 parameters, but 3 arguments were given");
  }
  KernelArg wrongSize[] = {KernelArg::buffer(b), KernelArg::buffer(b), KernelArg::buffer(b), KernelArg::i64(4)};
  try {
    launch(add, Dim3{1}, Dim3{1}, 0, nullptr, wrongSize);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("argument 3 of kernel 'add' is i64 4 (8 bytes)"), std::string::npos)
        << e.what();
  }
}

TEST_F(Gpu, MissingKernelAndBadPtx) {
  try {
    module_.function("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the GPU module has no kernel named 'nope'");
  }
  try {
    Module bad(ctx_, ".version 9.0\n.target sm_75\n.address_size 64\n.visible .entry k() { bogus; }\n");
    FAIL();
  } catch (const CudaError& e) {
    EXPECT_EQ(e.call(), "cuModuleLoadDataEx");
    EXPECT_NE(std::string(e.what()).find("cuModuleLoadDataEx failed: CUDA_ERROR_INVALID_PTX"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("JIT error log"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Module(ctx_, ""), Error);
}

TEST_F(Gpu, LoadsACubinFromNvrtc) {
  const DeviceProperties& p = ctx_->device().properties();
  const char* src = R"(extern "C" __global__ void twice(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= 2.0f; })";
  nvrtcProgram prog;
  ASSERT_EQ(nvrtcCreateProgram(&prog, src, "twice.cu", 0, nullptr, nullptr), NVRTC_SUCCESS);
  std::string arch = "--gpu-architecture=" + p.arch();
  const char* opts[] = {arch.c_str()};
  nvrtcResult r = nvrtcCompileProgram(prog, 1, opts);
  if (r != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    GTEST_SKIP() << "this NVRTC cannot compile for " << p.arch();
  }
  size_t size = 0;
  ASSERT_EQ(nvrtcGetCUBINSize(prog, &size), NVRTC_SUCCESS);
  std::string cubin(size, '\0');
  ASSERT_EQ(nvrtcGetCUBIN(prog, cubin.data()), NVRTC_SUCCESS);
  nvrtcDestroyProgram(&prog);
  ASSERT_EQ(cubin.substr(0, 4), "\x7f" "ELF");

  Module m(ctx_, cubin);
  Function twice = m.function("twice");
  EXPECT_EQ(twice.attributes().binaryVersion, p.computeCapability());
  std::vector<float> x = randomFloats(777, 6);
  DeviceBuffer dx = uploadBuffer(ctx_, x);
  KernelArg args[] = {KernelArg::buffer(dx), KernelArg::i32(777)};
  launch(twice, Dim3{4}, Dim3{256}, 0, nullptr, args);
  std::vector<float> y = dx.download<float>();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], 2 * x[i]);
}

TEST_F(Gpu, FunctionAttributesAndOccupancy) {
  Function add = module_.function("add");
  FunctionAttributes at = add.attributes();
  EXPECT_GT(at.registers, 0);
  EXPECT_LE(at.registers, 64);
  EXPECT_EQ(at.staticSharedBytes, 0u);
  EXPECT_EQ(at.localBytes, 0u);
  EXPECT_EQ(at.maxThreadsPerBlock, 1024);
  EXPECT_EQ(at.ptxVersion, 75);
  EXPECT_EQ(at.binaryVersion, ctx_->device().properties().computeCapability());
  EXPECT_EQ(at.maxDynamicSharedBytes, 48u * 1024);

  int blocks = add.maxActiveBlocksPerMultiprocessor(256, 0);
  const DeviceProperties& p = ctx_->device().properties();
  EXPECT_GE(blocks, 1);
  EXPECT_LE(blocks * 256, p.maxThreadsPerMultiprocessor);
  double occ = add.occupancy(256, 0);
  EXPECT_GT(occ, 0.0);
  EXPECT_LE(occ, 1.0);
  // More dynamic shared memory per block than the SM holds: nothing can be resident.
  Function rev = module_.function("reverse_smem");
  rev.setMaxDynamicSharedMemory(p.sharedPerBlockOptin);
  EXPECT_EQ(rev.maxActiveBlocksPerMultiprocessor(128, p.sharedPerBlockOptin), 1);
  EXPECT_THROW(add.maxActiveBlocksPerMultiprocessor(0, 0), Error);
}

TEST_F(Gpu, DynamicSharedMemoryAbove48KiB) {
  const DeviceProperties& p = ctx_->device().properties();
  const int n = 20000;  // 80000 bytes
  const size_t smem = n * sizeof(float);
  if (p.sharedPerBlockOptin < smem) GTEST_SKIP() << "device allows only " << p.sharedPerBlockOptin << " bytes";
  std::vector<float> host = randomFloats(n, 7);
  DeviceBuffer d = uploadBuffer(ctx_, host);
  Module fresh(ctx_, test::kTestPtx);  // its functions still have the default 48 KiB limit
  Function rev = fresh.function("reverse_smem");
  KernelArg args[] = {KernelArg::buffer(d), KernelArg::i32(n)};
  try {
    launch(rev, Dim3{1}, Dim3{256}, smem, nullptr, args);
    FAIL() << "a launch above 48 KiB without opting in succeeded";
  } catch (const CudaError& e) {
    EXPECT_EQ(e.call(), "cuLaunchKernel");
    EXPECT_FALSE(e.sticky());
  }
  rev.setMaxDynamicSharedMemory(smem);
  EXPECT_EQ(rev.attributes().maxDynamicSharedBytes, smem);
  launch(rev, Dim3{1}, Dim3{256}, smem, nullptr, args);
  std::vector<float> out = d.download<float>();
  for (int i = 0; i < n; ++i) ASSERT_EQ(out[i], host[n - 1 - i]) << i;

  try {
    rev.setMaxDynamicSharedMemory(p.sharedPerBlockOptin + 1);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than the"), std::string::npos) << e.what();
  }
}

TEST_F(Gpu, BadLaunchConfigurationNamesTheCall) {
  Function add = module_.function("add");
  DeviceBuffer b(ctx_, 4096);
  KernelArg args[] = {KernelArg::buffer(b), KernelArg::buffer(b), KernelArg::buffer(b), KernelArg::i32(1)};
  try {
    launch(add, Dim3{1}, Dim3{2048}, 0, nullptr, args);  // more threads than a block may have
    FAIL();
  } catch (const CudaError& e) {
    std::string msg = e.what();
    EXPECT_EQ(e.call(), "cuLaunchKernel");
    EXPECT_EQ(msg.rfind("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE (", 0), 0u) << msg;
    EXPECT_NE(msg.find("kernel 'add' with grid (1, 1, 1), block (2048, 1, 1)"), std::string::npos) << msg;
    EXPECT_FALSE(e.sticky());
  }
  EXPECT_THROW(launch(add, Dim3{0}, Dim3{32}, 0, nullptr, args), CudaError);
  // The context is still fine.
  EXPECT_FALSE(contextPoisoned());
  std::vector<float> a = randomFloats(100, 8), c = runAdd(a, a);
  EXPECT_EQ(c[99], a[99] + a[99]);
}

TEST_F(Gpu, EventsTimeALaunch) {
  const int n = 1 << 24;
  DeviceBuffer a(ctx_, n * sizeof(float)), c(ctx_, n * sizeof(float));
  a.fill32(0x3f800000u);
  Stream s(ctx_);
  Event start(ctx_), stop(ctx_);
  Function add = module_.function("add");
  KernelArg args[] = {KernelArg::buffer(a), KernelArg::buffer(a), KernelArg::buffer(c), KernelArg::i32(n)};
  start.record(&s);
  launch(add, Dim3{n / 256}, Dim3{256}, 0, &s, args);
  stop.record(&s);
  float ms = Event::elapsedMs(start, stop);
  EXPECT_GT(ms, 0.0f);
  EXPECT_LT(ms, 1000.0f);
}

TEST_F(Gpu, BenchmarkHelper) {
  const int n = 1 << 22;
  // Three input copies to rotate among (caller-side L2 defeat), plus the flush buffer.
  std::vector<DeviceBuffer> inputs;
  for (int i = 0; i < 3; ++i) {
    inputs.emplace_back(ctx_, n * sizeof(float));
    inputs.back().fill32(0x3f800000u);
  }
  DeviceBuffer out(ctx_, n * sizeof(float));
  Function add = module_.function("add");
  Stream s(ctx_);
  std::vector<int> seen;
  BenchmarkOptions opt;
  opt.warmup = 2;
  opt.repeats = 7;
  BenchmarkResult r = benchmark(
      s,
      [&](const Stream& stream, int iteration) {
        seen.push_back(iteration);
        const DeviceBuffer& in = inputs[iteration % inputs.size()];
        KernelArg args[] = {KernelArg::buffer(in), KernelArg::buffer(in), KernelArg::buffer(out), KernelArg::i32(n)};
        launch(add, Dim3{n / 256}, Dim3{256}, 0, &stream, args);
      },
      opt);
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_EQ(r.samplesMs.size(), 7u);
  for (double t : r.samplesMs) EXPECT_GT(t, 0.0);
  EXPECT_LE(r.minMs, r.medianMs);
  EXPECT_LE(r.medianMs, r.maxMs);
  EXPECT_EQ(out.download<float>()[12345], 2.0f);

  // Racing: a first timed run over raceMs is the only one; within it, every repeat runs.
  auto launchAdd = [&](const Stream& stream, int iteration) {
    const DeviceBuffer& in = inputs[iteration % inputs.size()];
    KernelArg args[] = {KernelArg::buffer(in), KernelArg::buffer(in), KernelArg::buffer(out), KernelArg::i32(n)};
    launch(add, Dim3{n / 256}, Dim3{256}, 0, &stream, args);
  };
  opt.raceMs = 1e-6;
  BenchmarkResult lost = benchmark(s, launchAdd, opt);
  ASSERT_EQ(lost.samplesMs.size(), 1u);
  EXPECT_EQ(lost.medianMs, lost.samplesMs[0]);
  EXPECT_GT(lost.medianMs, 1e-6);
  opt.raceMs = 1e6;
  EXPECT_EQ(benchmark(s, launchAdd, opt).samplesMs.size(), 7u);
  // The close race: after kCloseRaceRuns timed runs all slower than closeRaceMs, only those.
  opt.closeRaceMs = 1e-6;
  BenchmarkResult closeLost = benchmark(s, launchAdd, opt);
  ASSERT_EQ(closeLost.samplesMs.size(), size_t(kCloseRaceRuns));
  EXPECT_GT(closeLost.minMs, 1e-6);
  opt.closeRaceMs = 1e6;
  EXPECT_EQ(benchmark(s, launchAdd, opt).samplesMs.size(), 7u);
  opt.raceMs = 0;
  opt.closeRaceMs = 1e-6;  // alone, without the first run's race
  EXPECT_EQ(benchmark(s, launchAdd, opt).samplesMs.size(), size_t(kCloseRaceRuns));
  opt.closeRaceMs = 0;

  opt.flushL2 = false;
  opt.repeats = 0;
  EXPECT_THROW(benchmark(s, [](const Stream&, int) {}, opt), Error);
}

// Runs a kernel that stores to a non-device address, then synchronizes; exits 0 when the error
// is reported as sticky, naming the call.
[[noreturn]] void runFaultingKernelAndExit() {
  auto ctx = Context::primary(0);
  Module m(ctx, test::kTestPtx);
  KernelArg args[] = {KernelArg::pointer(0x10), KernelArg::i32(1)};
  launch(m.function("store_at"), Dim3{1}, Dim3{1}, 0, nullptr, args);
  try {
    ctx->synchronize();
    std::fprintf(stderr, "no error\n");
    std::exit(1);
  } catch (const CudaError& e) {
    bool ok = e.sticky() && contextPoisoned() && e.call() == "cuCtxSynchronize";
    std::fprintf(stderr, "%s\n", e.what());
    std::exit(ok ? 0 : 2);
  }
}

// An illegal address poisons the context for the rest of the process, so it runs in a child
// process (a threadsafe death test re-executes this binary for just this test).
TEST_F(Gpu, FaultingKernelIsReportedAsSticky) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(runFaultingKernelAndExit(), ::testing::ExitedWithCode(0),
              "cuCtxSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS.*context is now unusable");
}

}  // namespace
}  // namespace rtcg::cuda
