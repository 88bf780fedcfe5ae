// Device memory (DeviceBuffer), page-locked host memory (PinnedBuffer) and existing host memory
// page-locked in place (HostRegistration), all RAII, sizes in bytes; copies are bounds-checked and
// throw rtcg::Error naming the sizes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "runtime/Device.h"
#include "runtime/Stream.h"
#include "support/Error.h"

namespace rtcg::cuda {

// A typed view of device memory: a device address and an element count. Does not own.
template <class T>
struct DeviceSpan {
  uint64_t ptr = 0;
  size_t count = 0;
  size_t bytes() const { return count * sizeof(T); }
  uint64_t at(size_t i) const { return ptr + i * sizeof(T); }
};

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // Allocates `bytes` of device memory (0 is allowed: no allocation, address 0). Throws CudaError
  // (CUDA_ERROR_OUT_OF_MEMORY names the size).
  DeviceBuffer(std::shared_ptr<Context> ctx, size_t bytes);
  ~DeviceBuffer();
  // Memory the caller allocated (cudaMalloc, another library): `bytes` at `address` in `ctx`,
  // used in place and never freed here. It must stay allocated while the buffer is used.
  static DeviceBuffer borrowed(std::shared_ptr<Context> ctx, uint64_t address, size_t bytes);
  bool owned() const { return owned_; }
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t devicePtr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  const std::shared_ptr<Context>& context() const { return ctx_; }

  // Synchronous copies of `bytes` at byte `offset` of this buffer.
  void copyFromHost(const void* src, size_t bytes, size_t offset = 0);
  void copyToHost(void* dst, size_t bytes, size_t offset = 0) const;
  void copyFromDevice(const DeviceBuffer& src, size_t bytes, size_t dstOffset = 0, size_t srcOffset = 0);
  // Asynchronous copies on `stream` (null: default stream). The host memory must stay valid until
  // the stream reaches the copy; it should be pinned (PinnedBuffer) for the copy to overlap.
  void copyFromHostAsync(const void* src, size_t bytes, const Stream* stream, size_t offset = 0);
  void copyToHostAsync(void* dst, size_t bytes, const Stream* stream, size_t offset = 0) const;
  void copyFromDeviceAsync(const DeviceBuffer& src, size_t bytes, const Stream* stream, size_t dstOffset = 0,
                           size_t srcOffset = 0);

  // Sets every byte / every 32-bit word of the buffer.
  void fill8(uint8_t value);
  void fill32(uint32_t value);  // bytes() must be a multiple of 4
  void fill8Async(uint8_t value, const Stream* stream);

  // Typed access. The buffer size must be a multiple of sizeof(T).
  template <class T>
  DeviceSpan<T> view() const {
    static_assert(std::is_trivially_copyable_v<T>);
    checkElementSize(sizeof(T));
    return {ptr_, bytes_ / sizeof(T)};
  }
  template <class T>
  void upload(std::span<const T> host) {
    static_assert(std::is_trivially_copyable_v<T>);
    copyFromHost(host.data(), host.size_bytes());
  }
  template <class T>
  void upload(const std::vector<T>& host) {
    upload(std::span<const T>(host));
  }
  template <class T>
  std::vector<T> download() const {
    static_assert(std::is_trivially_copyable_v<T>);
    checkElementSize(sizeof(T));
    std::vector<T> out(bytes_ / sizeof(T));
    copyToHost(out.data(), bytes_);
    return out;
  }

 private:
  void checkRange(const char* what, size_t bytes, size_t offset) const;
  void checkElementSize(size_t elementBytes) const;
  void release() noexcept;
  std::shared_ptr<Context> ctx_;
  uint64_t ptr_ = 0;
  size_t bytes_ = 0;
  bool owned_ = true;  // false: borrowed, not freed
};

// Allocates a buffer holding `host` (convenience for tests and tools).
template <class T>
DeviceBuffer uploadBuffer(std::shared_ptr<Context> ctx, const std::vector<T>& host) {
  DeviceBuffer b(std::move(ctx), host.size() * sizeof(T));
  b.upload(host);
  return b;
}

namespace detail {
// Host memory the driver page-locked, either allocated by it (cuMemAllocHost) or registered with it
// (cuMemHostRegister): freed or unregistered when this goes away. Move-only.
class PageLockedHost {
 public:
  PageLockedHost() = default;
  ~PageLockedHost();
  PageLockedHost(PageLockedHost&& other) noexcept;
  PageLockedHost& operator=(PageLockedHost&& other) noexcept;
  PageLockedHost(const PageLockedHost&) = delete;
  PageLockedHost& operator=(const PageLockedHost&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 protected:
  // Takes over `data`, already page-locked in `ctx` (registered: by cuMemHostRegister).
  PageLockedHost(std::shared_ptr<Context> ctx, void* data, size_t bytes, bool registered)
      : ctx_(std::move(ctx)), data_(data), bytes_(bytes), registered_(registered) {}

 private:
  void release() noexcept;
  std::shared_ptr<Context> ctx_;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool registered_ = false;
};
}  // namespace detail

// Page-locked host memory (cuMemAllocHost), for asynchronous copies.
class PinnedBuffer : public detail::PageLockedHost {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(std::shared_ptr<Context> ctx, size_t bytes);

  template <class T>
  std::span<T> as() const {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes() % sizeof(T) != 0)
      throw Error("PinnedBuffer of " + std::to_string(bytes()) + " bytes is not a whole number of " +
                  std::to_string(sizeof(T)) + "-byte elements");
    return {static_cast<T*>(data()), bytes() / sizeof(T)};
  }
};

// Existing host memory page-locked (cuMemHostRegister) for as long as this lives, so that copies
// between it and the device run at pinned speed instead of through the driver's staging buffer.
// The memory must outlive the registration and must not move while registered (a std::vector
// must not reallocate).
class HostRegistration : public detail::PageLockedHost {
 public:
  HostRegistration() = default;
  // Throws CudaError when the driver refuses (page-locked memory limit, a range that overlaps one
  // already registered, ...).
  HostRegistration(std::shared_ptr<Context> ctx, void* data, size_t bytes);
};

}  // namespace rtcg::cuda
