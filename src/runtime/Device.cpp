#include "runtime/Device.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "runtime/CudaDriver.h"
#include "runtime/DriverApi.h"

namespace rtcg::cuda {

using detail::check;
using detail::driver;

std::string DeviceProperties::arch() const { return fmt::format("sm_{}{}", computeMajor, computeMinor); }

double DeviceProperties::peakBandwidthGBs() const {
  // kHz * 1e3 cycles/s * 2 transfers/cycle * bus bytes.
  return 2.0 * memoryClockKHz * 1e3 * (memoryBusWidthBits / 8.0) / 1e9;
}

std::string DeviceProperties::describe() const {
  std::string s;
  s += fmt::format("device {}: {} ({}, compute capability {}.{})\n", ordinal, name, arch(), computeMajor,
                   computeMinor);
  s += fmt::format("  driver: CUDA {}\n", formatCudaVersion(driverVersion));
  s += fmt::format("  multiprocessors: {}, warp size {}, max threads/block {}, max threads/SM {}, max blocks/SM {}\n",
                   multiprocessors, warpSize, maxThreadsPerBlock, maxThreadsPerMultiprocessor,
                   maxBlocksPerMultiprocessor);
  s += fmt::format("  shared memory: {} B/block ({} B opt-in), {} B/SM, {} B reserved/block\n", sharedPerBlock,
                   sharedPerBlockOptin, sharedPerMultiprocessor, sharedReservedPerBlock);
  s += fmt::format("  registers: {}/block, {}/SM\n", registersPerBlock, registersPerMultiprocessor);
  s += fmt::format("  L2 cache: {} B, memory: {} B\n", l2Bytes, totalMemory);
  s += fmt::format("  clock: {} kHz, memory clock: {} kHz, bus width: {} bits (peak {:.0f} GB/s)\n", clockKHz,
                   memoryClockKHz, memoryBusWidthBits, peakBandwidthGBs());
  return s;
}

int Device::count() {
  int n = 0;
  check(driver().deviceGetCount(&n), "cuDeviceGetCount");
  return n;
}

Device::Device(int ordinal) {
  const detail::DriverTable& d = driver();
  int n = count();
  if (ordinal < 0 || ordinal >= n)
    throw Error(fmt::format("CUDA device {} does not exist: this machine has {} device{} (0..{})", ordinal, n,
                            n == 1 ? "" : "s", n - 1));
  CUdevice dev = 0;
  check(d.deviceGet(&dev, ordinal), "cuDeviceGet");
  handle_ = dev;
  props_.ordinal = ordinal;

  char name[256] = {};
  check(d.deviceGetName(name, sizeof name - 1, dev), "cuDeviceGetName");
  props_.name = name;

  auto attr = [&](CUdevice_attribute a, const char* what) {
    int v = 0;
    check(d.deviceGetAttribute(&v, a, dev), "cuDeviceGetAttribute", fmt::format("querying {}", what));
    return v;
  };
  // Attributes a driver may have dropped (clock rates are deprecated) read as 0 instead of failing.
  auto optionalAttr = [&](CUdevice_attribute a) {
    int v = 0;
    return d.deviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
  };
  props_.computeMajor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  props_.computeMinor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  props_.multiprocessors = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count");
  props_.warpSize = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size");
  props_.maxThreadsPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block");
  props_.maxThreadsPerMultiprocessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "max threads per multiprocessor");
  props_.maxBlocksPerMultiprocessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, "max blocks per multiprocessor");
  props_.maxBlockDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "max block dimension");
  props_.maxBlockDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, "max block dimension");
  props_.maxBlockDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "max block dimension");
  props_.maxGridDim[0] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid dimension");
  props_.maxGridDim[1] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "max grid dimension");
  props_.maxGridDim[2] = attr(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, "max grid dimension");
  props_.sharedPerBlock =
      static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared memory per block"));
  props_.sharedPerBlockOptin = static_cast<size_t>(
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, "opt-in shared memory per block"));
  props_.sharedPerMultiprocessor = static_cast<size_t>(
      attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, "shared memory per multiprocessor"));
  props_.sharedReservedPerBlock = static_cast<size_t>(optionalAttr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK));
  props_.registersPerBlock = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, "registers per block");
  props_.registersPerMultiprocessor =
      attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, "registers per multiprocessor");
  props_.l2Bytes = static_cast<size_t>(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 cache size"));
  props_.clockKHz = optionalAttr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  props_.memoryClockKHz = optionalAttr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  props_.memoryBusWidthBits = optionalAttr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  size_t total = 0;
  check(d.deviceTotalMem(&total, dev), "cuDeviceTotalMem");
  props_.totalMemory = total;
  props_.driverVersion = driverVersion();
}

std::shared_ptr<Context> Context::primary(int ordinal) {
  // One Context per device while anything holds it; a later call after all are gone retains the
  // primary context again.
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<Context>> live;
  std::lock_guard lock(mutex);
  if (auto existing = live[ordinal].lock()) return existing;
  std::shared_ptr<Context> ctx(new Context(ordinal));
  live[ordinal] = ctx;
  return ctx;
}

Context::Context(int ordinal) : device_(ordinal) {
  CUcontext ctx = nullptr;
  check(driver().primaryCtxRetain(&ctx, device_.handle()), "cuDevicePrimaryCtxRetain",
        fmt::format("for device {}", ordinal));
  ctx_ = ctx;
}

Context::~Context() {
  // Never throws: releasing can only fail when the driver is already broken.
  if (ctx_) driver().primaryCtxRelease(device_.handle());
}

void Context::makeCurrent() const { detail::makeCurrent(ctx_); }

void Context::synchronize() const {
  makeCurrent();
  check(driver().ctxSynchronize(), "cuCtxSynchronize");
}

Context::MemoryInfo Context::memoryInfo() const {
  makeCurrent();
  MemoryInfo info;
  check(driver().memGetInfo(&info.freeBytes, &info.totalBytes), "cuMemGetInfo");
  return info;
}

}  // namespace rtcg::cuda
