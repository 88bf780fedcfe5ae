// The static model's devices: peaks computed from multiprocessors, clock and architecture (for the
// tuner's device), and typical devices of an architecture for dry runs without a GPU
// (`rtcgc tune --dry-run --arch sm_80|sm_89|sm_90`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "schedule/Space.h"

namespace rtcg {

// What one multiprocessor issues per clock on an architecture: fp32 and fp64 FMA lanes (an FMA is
// two operations) and dense tensor-core operations (fp16/bf16 inputs, fp32 accumulation).
struct ArchArithmetic {
  int fp32Lanes = 0, fp64Lanes = 0;
  int tensorOpsPerClock = 0;
  double typicalClockHz = 0;  // boost clock of its data-center part, where the driver reports none
};
std::optional<ArchArithmetic> archArithmetic(int computeMajor, int computeMinor);

struct DevicePeaks {
  double fp32 = 0, fp64 = 0, tensor = 0;  // operations per second; 0: unknown
};
// clockHz 0 (drivers that no longer report it): the architecture's typical clock. An unknown
// architecture: unknown peaks.
DevicePeaks devicePeaks(int computeMajor, int computeMinor, int multiprocessors, double clockHz);

// The share of the fp32 peak the model counts on (DeviceModel::peakFlops): an H100 SXM's 66.9
// TFLOP/s gives the model's 50.
constexpr double kSustainedFp32Fraction = 0.75;

// Sets the model's compute capability, and its peaks (and peakFlops) from the device; leaves the
// peaks when the architecture is unknown.
void setModelPeaks(DeviceModel& d, int computeMajor, int computeMinor, int multiprocessors, double clockHz);

// A typical device of `arch` for a dry run: sm_80 an A100 SXM, sm_89 an L40S, sm_90 an H100 SXM
// (DeviceModel's defaults, unchanged); nullopt for the others.
std::optional<DeviceModel> archDeviceModel(const std::string& arch);
const std::vector<std::string>& modelArchitectures();  // the archs archDeviceModel knows

// The plan limits of a modelled device (deviceScheduleLimits): its opt-in shared memory a block,
// threads a block, multiprocessors and shared memory a multiprocessor (its compute capability is
// the caller's to set).
ScheduleLimits modelScheduleLimits(const DeviceModel& d);

}  // namespace rtcg
