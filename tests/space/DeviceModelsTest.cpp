// The static model's devices (schedule/DeviceModels.h): peaks from multiprocessors, clock and
// architecture, and the typical devices a dry run models per --arch.
#include <gtest/gtest.h>

#include "schedule/DeviceModels.h"

namespace rtcg {
namespace {

TEST(DeviceModels, PeaksFromMultiprocessorsClockAndArchitecture) {
  DevicePeaks h100 = devicePeaks(9, 0, 132, 1.98e9);  // H100 SXM
  EXPECT_NEAR(h100.fp32, 66.9e12, 0.1e12);
  EXPECT_NEAR(h100.fp64, 33.5e12, 0.1e12);
  EXPECT_NEAR(h100.tensor, 1070e12, 1e12);
  DevicePeaks a100 = devicePeaks(8, 0, 108, 1.41e9);  // A100 SXM: 19.5 fp32, 9.7 fp64, 312 fp16 tensor
  EXPECT_NEAR(a100.fp32, 19.5e12, 0.1e12);
  EXPECT_NEAR(a100.fp64, 9.7e12, 0.1e12);
  EXPECT_NEAR(a100.tensor, 312e12, 1e12);
  // A driver that reports no clock: the architecture's typical one, the multiprocessors still count
  // (an H100 PCIe has 114).
  EXPECT_EQ(devicePeaks(9, 0, 114, 0).fp32, devicePeaks(9, 0, 114, 1.98e9).fp32);
  DeviceModel pcie;
  setModelPeaks(pcie, 9, 0, 114, 0);
  EXPECT_NEAR(pcie.peakFlops, 0.75 * 114 * 256 * 1.98e9, 1e9);
  // An unknown architecture: unknown peaks, and the model keeps its own.
  EXPECT_EQ(devicePeaks(6, 0, 60, 1.4e9).fp32, 0);
  DeviceModel d;
  setModelPeaks(d, 6, 0, 60, 1.4e9);
  EXPECT_EQ(d.peakFlops, DeviceModel{}.peakFlops);
}

TEST(DeviceModels, TheDefaultModelIsAnH100AndItsPeaksAgree) {
  // The sm_90 dry run must stay as it was (test_golden hashes it): the default model itself.
  DeviceModel h100 = *archDeviceModel("sm_90");
  EXPECT_EQ(h100.peakFlops, DeviceModel{}.peakFlops);
  EXPECT_EQ(h100.multiprocessors, 132);
  // Its constants agree with the ones computed for the same device, within half a percent.
  DeviceModel computed;
  setModelPeaks(computed, 9, 0, 132, 1.98e9);
  EXPECT_NEAR(computed.peakFlops / h100.peakFlops, 1.0, 0.005);
  EXPECT_NEAR(computed.peakFp32Flops / h100.peakFp32Flops, 1.0, 0.005);
  EXPECT_NEAR(computed.peakFp64Flops / h100.peakFp64Flops, 1.0, 0.005);
  EXPECT_NEAR(computed.peakTensorFlops / h100.peakTensorFlops, 1.0, 0.005);
}

TEST(DeviceModels, EachArchitectureHasItsOwnDevice) {
  DeviceModel a100 = *archDeviceModel("sm_80"), l40s = *archDeviceModel("sm_89");
  EXPECT_EQ(a100.multiprocessors, 108);
  EXPECT_EQ(a100.sharedPerBlockOptin, 163 * 1024);
  EXPECT_NEAR(a100.peakFlops, 0.75 * 19.5e12, 0.1e12);
  EXPECT_EQ(l40s.multiprocessors, 142);
  EXPECT_EQ(l40s.maxThreadsPerMultiprocessor, 1536);
  EXPECT_EQ(l40s.sharedPerBlockOptin, 99 * 1024);
  EXPECT_LT(l40s.memoryBandwidth, a100.memoryBandwidth);
  EXPECT_FALSE(archDeviceModel("sm_75"));
  EXPECT_EQ(modelArchitectures(), (std::vector<std::string>{"sm_80", "sm_89", "sm_90"}));
}

}  // namespace
}  // namespace rtcg
