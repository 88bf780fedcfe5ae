#include "support/Cores.h"

#include <sched.h>

#include <algorithm>
#include <thread>

namespace rtcg {

namespace {

int affinityCount() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  return CPU_COUNT(&set);
}

int machineCores() { return int(std::max(1u, std::thread::hardware_concurrency())); }

}  // namespace

int usableCores() {
  const int mask = affinityCount();
  return mask > 0 ? std::min(mask, machineCores()) : machineCores();
}

bool boundToSomeCores() {
  const int mask = affinityCount();
  return mask > 0 && mask < machineCores();
}

}  // namespace rtcg
