// The schedule space's options for a device of an architecture's model (schedule/DeviceModels.h)
// with all of its limits: shared memory a block and a multiprocessor, threads a block and the
// multiprocessors, as the tuner sets them for a device it has queried. `multiprocessors` > 0: the
// model with that many instead (a small device that modest sizes fill, where a large run's
// persistent forms appear).
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "schedule/DeviceModels.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

namespace rtcg::testing {

inline SpaceOptions spaceOptionsFor(const std::string& arch, Precision precision = Precision::Ieee,
                                    int multiprocessors = 0) {
  SpaceOptions o;
  const auto model = archDeviceModel(arch);
  EXPECT_TRUE(model.has_value()) << "no device model for " << arch;
  if (model) o.device = *model;
  if (multiprocessors > 0) o.device.multiprocessors = multiprocessors;
  o.limits = modelScheduleLimits(o.device);
  o.precision = precision;
  return o;
}

}  // namespace rtcg::testing
