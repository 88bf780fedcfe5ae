// The tuning-database key of a bound kernel on a device: what a measurement is valid for.
#pragma once

#include <string>

#include "ir/IR.h"
#include "runtime/Device.h"
#include "schedule/Schedule.h"
#include "tune/TuningDb.h"

namespace rtcg {

// "n=500,m=3": the bound sizes sorted by name.
std::string sizesText(const Kernel& bound);

// The key's kernel hash: the structural hash of the bound kernel (its sizes included), 16 hex digits.
// Two bound kernels with the same hash share their tuning-database entries on a device. A precision
// policy other than ieee is mixed into the hash: its searches measure other schedules (mma with
// TF32) under other tolerances, so their winners must not serve ieee compiles (nor the reverse);
// ieee keeps the plain structural hash, so existing databases stay valid.
std::string kernelHashOf(const Kernel& bound, Precision precision = Precision::Ieee);

TuningKey tuningKeyFor(const Kernel& bound, const cuda::DeviceProperties& device,
                       Precision precision = Precision::Ieee);

}  // namespace rtcg
