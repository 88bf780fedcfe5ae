// CUDA devices and their primary contexts.
//
// rtcg uses each device's *primary* context (the one the CUDA runtime also uses), retained by a
// Context object and shared (std::shared_ptr) by every buffer, stream, event and module made in it,
// so the context outlives everything allocated in it. Each call path makes the context current on
// the calling thread first, so objects may be used from any thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

struct CUctx_st;  // = CUcontext, from cuda.h (not included here)

namespace rtcg::cuda {

struct DeviceProperties {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  int warpSize = 0;
  int maxThreadsPerBlock = 0;
  int maxThreadsPerMultiprocessor = 0;
  int maxBlocksPerMultiprocessor = 0;
  int maxBlockDim[3] = {0, 0, 0};
  int maxGridDim[3] = {0, 0, 0};
  size_t sharedPerBlock = 0;           // without opting in (48 KiB)
  size_t sharedPerBlockOptin = 0;      // with cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)
  size_t sharedPerMultiprocessor = 0;
  size_t sharedReservedPerBlock = 0;   // taken by the driver from each block's share of the SM
  int registersPerBlock = 0, registersPerMultiprocessor = 0;
  size_t l2Bytes = 0;
  size_t totalMemory = 0;
  int clockKHz = 0;                    // 0 where the driver no longer reports it
  int memoryClockKHz = 0;
  int memoryBusWidthBits = 0;
  int driverVersion = 0;               // 13000 for CUDA 13.0

  int computeCapability() const { return computeMajor * 10 + computeMinor; }  // 90
  std::string arch() const;                                                  // "sm_90"
  // Theoretical DRAM bandwidth in GB/s from memory clock and bus width (double data rate); 0 when
  // the driver does not report them.
  double peakBandwidthGBs() const;
  // A multi-line human-readable summary (for `rtcgc --device-info`).
  std::string describe() const;
};

class Device {
 public:
  // Number of CUDA devices. Throws NoDeviceError without a driver or device.
  static int count();

  // Device `ordinal`; its properties are queried once, here. Throws rtcg::Error for an ordinal
  // out of range.
  explicit Device(int ordinal = 0);

  int ordinal() const { return props_.ordinal; }
  int handle() const { return handle_; }  // the CUdevice
  const DeviceProperties& properties() const { return props_; }

 private:
  int handle_ = 0;
  DeviceProperties props_;
};

// The retained primary context of one device. Get it with Context::primary(ordinal): one object
// per device and process while anything holds it.
class Context {
 public:
  static std::shared_ptr<Context> primary(int ordinal = 0);

  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  const Device& device() const { return device_; }
  CUctx_st* handle() const { return ctx_; }

  // Makes this context current on the calling thread (cheap; done by every call path).
  void makeCurrent() const;
  // Waits for all work in the context; reports errors of earlier asynchronous work.
  void synchronize() const;
  // Free and total device memory in bytes.
  struct MemoryInfo { size_t freeBytes = 0, totalBytes = 0; };
  MemoryInfo memoryInfo() const;

 private:
  explicit Context(int ordinal);
  Device device_;
  CUctx_st* ctx_ = nullptr;
};

}  // namespace rtcg::cuda
