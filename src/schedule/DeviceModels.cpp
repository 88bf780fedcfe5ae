#include "schedule/DeviceModels.h"

namespace rtcg {

std::optional<ArchArithmetic> archArithmetic(int major, int minor) {
  // From NVIDIA's architecture whitepapers (per SM per clock).
  if (major == 7) return ArchArithmetic{64, minor == 5 ? 2 : 32, 1024, 1.53e9};                // V100, T4
  if (major == 8 && minor == 0) return ArchArithmetic{64, 32, 2048, 1.41e9};                   // A100
  if (major == 8) return ArchArithmetic{128, 2, minor == 9 ? 1024 : 512, minor == 9 ? 2.52e9 : 1.74e9};  // A10, L40S
  if (major == 9) return ArchArithmetic{128, 64, 4096, 1.98e9};                                // H100, H200
  if (major == 10) return ArchArithmetic{128, 64, 8192, 1.965e9};                              // B200
  if (major == 12) return ArchArithmetic{128, 2, 1024, 2.6e9};                                 // RTX Blackwell
  return std::nullopt;
}

DevicePeaks devicePeaks(int major, int minor, int multiprocessors, double clockHz) {
  std::optional<ArchArithmetic> a = archArithmetic(major, minor);
  if (!a) return {};
  double perClock = double(multiprocessors) * (clockHz > 0 ? clockHz : a->typicalClockHz);
  return {2.0 * a->fp32Lanes * perClock, 2.0 * a->fp64Lanes * perClock, double(a->tensorOpsPerClock) * perClock};
}

void setModelPeaks(DeviceModel& d, int major, int minor, int multiprocessors, double clockHz) {
  d.computeCapability = major * 10 + minor;
  DevicePeaks p = devicePeaks(major, minor, multiprocessors, clockHz);
  if (p.fp32 <= 0) return;
  d.peakFp32Flops = p.fp32;
  d.peakFp64Flops = p.fp64;
  d.peakTensorFlops = p.tensor;
  d.peakFlops = p.fp32 * kSustainedFp32Fraction;
}

namespace {

// A device of the data sheets: multiprocessors, boost clock, DRAM bandwidth (the model counts on
// 90% of it, as DeviceModel's 3.0 of an H100's 3.35 TB/s), shared memory and residency limits.
DeviceModel typical(int major, int minor, int sms, double clockHz, double peakBandwidth, int64_t sharedOptin,
                    int64_t sharedPerSm, int threadsPerSm, int blocksPerSm) {
  DeviceModel d;
  d.multiprocessors = sms;
  d.memoryBandwidth = 0.9 * peakBandwidth;
  d.sharedPerBlockOptin = sharedOptin;
  d.sharedPerMultiprocessor = sharedPerSm;
  d.maxThreadsPerMultiprocessor = threadsPerSm;
  d.maxBlocksPerMultiprocessor = blocksPerSm;
  setModelPeaks(d, major, minor, sms, clockHz);
  return d;
}

}  // namespace

std::optional<DeviceModel> archDeviceModel(const std::string& arch) {
  if (arch == "sm_90") return DeviceModel{};  // what every dry run used so far, byte for byte
  if (arch == "sm_80") return typical(8, 0, 108, 1.41e9, 2.039e12, 163 * 1024, 164 * 1024, 2048, 32);  // A100 SXM 80GB
  if (arch == "sm_89") return typical(8, 9, 142, 2.52e9, 864e9, 99 * 1024, 100 * 1024, 1536, 24);      // L40S
  return std::nullopt;
}

const std::vector<std::string>& modelArchitectures() {
  static const std::vector<std::string> archs{"sm_80", "sm_89", "sm_90"};
  return archs;
}

ScheduleLimits modelScheduleLimits(const DeviceModel& d) {
  return deviceScheduleLimits(d.sharedPerBlockOptin, d.maxThreadsPerBlock, d.multiprocessors, d.sharedPerMultiprocessor);
}

}  // namespace rtcg
