// The tuning-database key of a bound kernel on a device: what a measurement is valid for.
#pragma once

#include <string>

#include "ir/IR.h"
#include "runtime/Device.h"
#include "tune/TuningDb.h"

namespace rtcg {

// "n=500,m=3": the bound sizes sorted by name.
std::string sizesText(const Kernel& bound);

TuningKey tuningKeyFor(const Kernel& bound, const cuda::DeviceProperties& device);

}  // namespace rtcg
