// Kernel launches: typed kernel arguments marshalled into cuLaunchKernel's parameter array.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "runtime/Memory.h"
#include "runtime/Module.h"
#include "runtime/Stream.h"

namespace rtcg::cuda {

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  uint64_t volume() const { return uint64_t(x) * y * z; }
  std::string str() const;  // "(x, y, z)"
};

// One kernel argument: a device pointer or a scalar of i32/i64/f32/f64, stored by value.
class KernelArg {
 public:
  enum class Kind : uint8_t { Pointer, I32, I64, F32, F64, TensorMap };

  static KernelArg pointer(uint64_t devicePtr);
  static KernelArg buffer(const DeviceBuffer& b) { return pointer(b.devicePtr()); }
  template <class T>
  static KernelArg span(const DeviceSpan<T>& s) {
    return pointer(s.ptr);
  }
  static KernelArg i32(int32_t v);
  static KernelArg i64(int64_t v);
  static KernelArg f32(float v);
  static KernelArg f64(double v);
  // A TMA tensor map (a `const __grid_constant__` 128-byte parameter): encodeTensorMap2d's bytes.
  static KernelArg tensorMap(const unsigned char (&bytes)[128]);

  Kind kind() const { return kind_; }
  size_t size() const { return kind_ == Kind::TensorMap ? 128 : kind_ == Kind::I32 || kind_ == Kind::F32 ? 4 : 8; }
  // The value's bytes, as cuLaunchKernel reads them; valid while this KernelArg lives.
  const void* data() const { return bytes_; }
  std::string describe() const;  // "f32 1.5", "pointer 0x7f..."

 private:
  KernelArg(Kind k, const void* value, size_t size);
  Kind kind_ = Kind::I32;
  alignas(64) unsigned char bytes_[128] = {};  // scalars and pointers: the first 8
};

// A 2-D tiled TMA tensor map (cuTensorMapEncodeTiled) of `inner` x `outer` elements at `address`
// (`elementBytes` 1: i8/u8, 2: bf16 or f16 as `bf16`, 4: f32/i32, 8: f64), rows `pitchBytes` apart, boxes of boxInner x
// boxOuter, 128-byte swizzle, zero fill out of bounds. Throws rtcg::Error naming `what` (the
// array) and the box when the driver lacks the entry point or refuses the encoding.
struct TensorMap2d {
  uint64_t address = 0;
  int elementBytes = 4;
  bool bf16 = false;  // 2-byte elements: bf16 (else f16)
  uint64_t inner = 0, outer = 0, pitchBytes = 0;
  uint32_t boxInner = 0, boxOuter = 0;
};
KernelArg encodeTensorMap2d(const TensorMap2d& map, const std::string& what);

// Launches `fn` on `grid` x `block` threads with `dynamicSharedBytes` of dynamic shared memory on
// `stream` (null: the default stream). Asynchronous: errors in the kernel itself show up at the
// next synchronizing call. When the driver reports the kernel's parameter sizes, the argument
// count and sizes are checked first (rtcg::Error); a launch the driver rejects throws CudaError
// naming cuLaunchKernel, the kernel and the configuration.
void launch(const Function& fn, Dim3 grid, Dim3 block, size_t dynamicSharedBytes, const Stream* stream,
            std::span<const KernelArg> args);

// The same with the parameters already marshalled (`params[i]` points at parameter i's bytes) and
// checked by the caller (a raw module's launch checks them against the function's parameters, by
// name): only the dynamic shared memory and the stream's context are checked here.
void launchPacked(const Function& fn, Dim3 grid, Dim3 block, size_t dynamicSharedBytes, const Stream* stream,
                  std::span<void* const> params);

}  // namespace rtcg::cuda
