// Driver loading and the parts of the runtime that need no GPU.
#include <gtest/gtest.h>

#include "runtime/Benchmark.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Launch.h"

namespace rtcg::cuda {
namespace {

TEST(CudaDriver, MissingLibraryGivesClearError) {
  try {
    probeDriverLibrary("/nonexistent/libcuda.so.1");
    FAIL() << "loading a missing library succeeded";
  } catch (const NoDeviceError& e) {
    std::string msg = e.what();
    EXPECT_EQ(msg.rfind("no CUDA driver found (/nonexistent/libcuda.so.1 could not be loaded: ", 0), 0u) << msg;
    EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;  // dlerror's reason is kept
  }
}

TEST(CudaDriver, LibraryWithoutDriverEntryPointsIsRejected) {
  // libm loads fine but is no CUDA driver.
  try {
    probeDriverLibrary("libm.so.6");
    FAIL() << "libm was accepted as a CUDA driver";
  } catch (const NoDeviceError& e) {
    EXPECT_NE(std::string(e.what()).find("does not provide cuInit"), std::string::npos) << e.what();
  }
}

TEST(CudaDriver, NoDeviceErrorIsAnRtcgError) {
  try {
    probeDriverLibrary("/nonexistent/libcuda.so.1");
  } catch (const Error& e) {  // the CLI catches rtcg::Error and then tells NoDeviceError apart
    EXPECT_NE(dynamic_cast<const NoDeviceError*>(&e), nullptr);
    return;
  }
  FAIL() << "no rtcg::Error thrown";
}

TEST(CudaDriver, AvailabilityIsConsistentAndNeverThrows) {
  bool available = false;
  EXPECT_NO_THROW(available = cudaAvailable());
  EXPECT_EQ(cudaAvailable(), available);  // remembered, not re-probed differently
  std::string reason = unavailableReason();
  if (available) {
    EXPECT_TRUE(reason.empty()) << reason;
    EXPECT_NO_THROW(initialize());
    EXPECT_GE(driverVersion(), 12000);
    return;
  }
  // Without a driver or device every entry point reports the same clear NoDeviceError.
  EXPECT_TRUE(reason.rfind("no CUDA driver found (libcuda.so.1 could not be loaded: ", 0) == 0 ||
              reason.rfind("no CUDA device", 0) == 0 || reason.rfind("no usable CUDA device", 0) == 0 ||
              reason.find("is not usable") != std::string::npos)
      << reason;
  try {
    initialize();
    FAIL() << "initialize() succeeded without CUDA";
  } catch (const NoDeviceError& e) {
    EXPECT_EQ(e.what(), reason);
  }
  EXPECT_THROW(Device::count(), NoDeviceError);
  EXPECT_THROW(Device(0), NoDeviceError);
  EXPECT_THROW(Context::primary(0), NoDeviceError);
  EXPECT_THROW(driverVersion(), NoDeviceError);
  EXPECT_FALSE(contextPoisoned());
}

TEST(CudaDriver, FormatsVersions) {
  EXPECT_EQ(formatCudaVersion(13000), "13.0");
  EXPECT_EQ(formatCudaVersion(12080), "12.8");
  EXPECT_EQ(formatCudaVersion(11040), "11.4");
}

TEST(KernelArgs, HoldValuesWithTheirSizes) {
  KernelArg a = KernelArg::f32(1.5f), b = KernelArg::f64(-2.25), c = KernelArg::i32(-7), d = KernelArg::i64(1ll << 40);
  KernelArg p = KernelArg::pointer(0x7f0012345600ull);
  EXPECT_EQ(a.size(), 4u);
  EXPECT_EQ(b.size(), 8u);
  EXPECT_EQ(c.size(), 4u);
  EXPECT_EQ(d.size(), 8u);
  EXPECT_EQ(p.size(), 8u);
  EXPECT_EQ(a.kind(), KernelArg::Kind::F32);
  EXPECT_EQ(p.kind(), KernelArg::Kind::Pointer);
  EXPECT_EQ(*static_cast<const float*>(a.data()), 1.5f);
  EXPECT_EQ(*static_cast<const double*>(b.data()), -2.25);
  EXPECT_EQ(*static_cast<const int32_t*>(c.data()), -7);
  EXPECT_EQ(*static_cast<const int64_t*>(d.data()), 1ll << 40);
  EXPECT_EQ(*static_cast<const uint64_t*>(p.data()), 0x7f0012345600ull);
  EXPECT_EQ(a.describe(), "f32 1.5");
  EXPECT_EQ(c.describe(), "i32 -7");
  EXPECT_EQ(p.describe(), "pointer 0x7f0012345600");
  EXPECT_EQ(KernelArg::span(DeviceSpan<float>{0x1000, 4}).describe(), "pointer 0x1000");
}

TEST(KernelArgs, Dim3) {
  Dim3 g{4, 3, 2};
  EXPECT_EQ(g.volume(), 24u);
  EXPECT_EQ(g.str(), "(4, 3, 2)");
  EXPECT_EQ(Dim3{}.volume(), 1u);
}

TEST(DeviceSpanTest, Addresses) {
  DeviceSpan<double> s{0x1000, 10};
  EXPECT_EQ(s.bytes(), 80u);
  EXPECT_EQ(s.at(3), 0x1018u);
}

TEST(Benchmark, SummarizesOddAndEvenSampleCounts) {
  BenchmarkResult r = summarize({3.0, 1.0, 2.0});
  EXPECT_EQ(r.minMs, 1.0);
  EXPECT_EQ(r.medianMs, 2.0);
  EXPECT_EQ(r.maxMs, 3.0);
  EXPECT_DOUBLE_EQ(r.meanMs, 2.0);
  EXPECT_EQ(r.samplesMs, (std::vector<double>{3.0, 1.0, 2.0}));  // kept in run order

  r = summarize({4.0, 1.0, 10.0, 2.0});
  EXPECT_EQ(r.medianMs, 3.0);
  EXPECT_DOUBLE_EQ(r.meanMs, 4.25);
  EXPECT_THROW(summarize({}), Error);
}

TEST(DeviceProperties, DerivedValues) {
  DeviceProperties p;
  p.computeMajor = 9;
  p.computeMinor = 0;
  p.memoryClockKHz = 2619000;
  p.memoryBusWidthBits = 5120;
  EXPECT_EQ(p.arch(), "sm_90");
  EXPECT_EQ(p.computeCapability(), 90);
  EXPECT_NEAR(p.peakBandwidthGBs(), 3352.3, 0.1);  // H100 SXM: 2 * 2.619 GHz * 640 B
}

}  // namespace
}  // namespace rtcg::cuda
