// A stand-in device for searches on machines without a GPU (tests): $RTCG_TEST_DEVICE set to
// "NAME,ARCH,MULTIPROCESSORS" (e.g. "Fake GPU,sm_90,132") gives the properties of the typical
// device of ARCH (schedule/DeviceModels.h) with that name and count, for TuneOptions::
// deviceProperties. `rtcgc tune` and rtcg.tune use it; the worker that measures must then be a
// stand-in too (the test suite's fake worker, tests/tuner/fake_worker.cpp).
#pragma once

#include <memory>

#include "runtime/Device.h"

namespace rtcg {

// Nullptr when the variable is unset or empty; throws rtcg::Error for a malformed value.
std::shared_ptr<const cuda::DeviceProperties> testDeviceFromEnv();

}  // namespace rtcg
