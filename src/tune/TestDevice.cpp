#include "tune/TestDevice.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "schedule/DeviceModels.h"
#include "support/Error.h"

namespace rtcg {

std::shared_ptr<const cuda::DeviceProperties> testDeviceFromEnv() {
  const char* env = std::getenv("RTCG_TEST_DEVICE");
  if (!env || !*env) return nullptr;
  std::string text = env;
  size_t c1 = text.find(','), c2 = c1 == std::string::npos ? c1 : text.find(',', c1 + 1);
  std::optional<DeviceModel> model;
  int multiprocessors = 0;
  if (c2 != std::string::npos) {
    model = archDeviceModel(text.substr(c1 + 1, c2 - c1 - 1));
    std::string count = text.substr(c2 + 1);
    if (!count.empty() && count.size() < 5 && count.find_first_not_of("0123456789") == std::string::npos)
      multiprocessors = std::stoi(count);
  }
  if (c1 == 0 || !model || multiprocessors <= 0)
    throw Error(fmt::format("RTCG_TEST_DEVICE='{}': expected NAME,ARCH,MULTIPROCESSORS with ARCH one of {}", text,
                            fmt::join(modelArchitectures(), ", ")));
  auto p = std::make_shared<cuda::DeviceProperties>();
  p->name = text.substr(0, c1);
  p->computeMajor = model->computeCapability / 10;
  p->computeMinor = model->computeCapability % 10;
  p->multiprocessors = multiprocessors;
  p->warpSize = 32;
  p->maxThreadsPerBlock = model->maxThreadsPerBlock;
  p->maxThreadsPerMultiprocessor = model->maxThreadsPerMultiprocessor;
  p->maxBlocksPerMultiprocessor = model->maxBlocksPerMultiprocessor;
  p->sharedPerBlock = 48 * 1024;
  p->sharedPerBlockOptin = size_t(model->sharedPerBlockOptin);
  p->sharedPerMultiprocessor = size_t(model->sharedPerMultiprocessor);
  p->registersPerBlock = 65536;
  p->registersPerMultiprocessor = model->registersPerMultiprocessor;
  p->driverVersion = 13000;
  return p;
}

}  // namespace rtcg
