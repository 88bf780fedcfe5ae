// The schedule space's options for a device of an architecture's model (schedule/DeviceModels.h)
// with all of its limits: shared memory a block and a multiprocessor, threads a block and the
// multiprocessors, as the tuner sets them for a device it has queried.
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "schedule/DeviceModels.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

namespace rtcg::testing {

inline SpaceOptions spaceOptionsFor(const std::string& arch, Precision precision = Precision::Ieee) {
  SpaceOptions o;
  const auto model = archDeviceModel(arch);
  EXPECT_TRUE(model.has_value()) << "no device model for " << arch;
  if (model) o.device = *model;
  o.limits = deviceScheduleLimits(o.device.sharedPerBlockOptin, o.device.maxThreadsPerBlock, o.device.multiprocessors,
                                  o.device.sharedPerMultiprocessor);
  o.precision = precision;
  return o;
}

}  // namespace rtcg::testing
