#include "runtime/Memory.h"

#include <fmt/format.h>

#include <utility>

#include "runtime/DriverApi.h"

namespace rtcg::cuda {

using detail::check;
using detail::driver;

static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "rtcg needs a 64-bit CUDA device address");

DeviceBuffer::DeviceBuffer(std::shared_ptr<Context> ctx, size_t bytes) : ctx_(std::move(ctx)), bytes_(bytes) {
  RTCG_ASSERT(ctx_, "DeviceBuffer needs a context");
  if (bytes == 0) return;  // cuMemAlloc rejects 0 bytes; an empty buffer needs no memory
  ctx_->makeCurrent();
  CUdeviceptr p = 0;
  check(driver().memAlloc(&p, bytes), "cuMemAlloc", fmt::format("allocating {} bytes", bytes));
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() { release(); }

DeviceBuffer DeviceBuffer::borrowed(std::shared_ptr<Context> ctx, uint64_t address, size_t bytes) {
  RTCG_ASSERT(ctx, "DeviceBuffer needs a context");
  DeviceBuffer b;
  b.ctx_ = std::move(ctx);
  b.ptr_ = address;
  b.bytes_ = bytes;
  b.owned_ = false;
  return b;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      ptr_(std::exchange(other.ptr_, 0)),
      bytes_(std::exchange(other.bytes_, 0)),
      owned_(std::exchange(other.owned_, true)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    ptr_ = std::exchange(other.ptr_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
    owned_ = std::exchange(other.owned_, true);
  }
  return *this;
}

void DeviceBuffer::release() noexcept {
  // Never throws: after a sticky error freeing fails, and the memory goes with the context.
  if (owned_ && ptr_ && driver().ctxSetCurrent(ctx_->handle()) == CUDA_SUCCESS) driver().memFree(ptr_);
  ptr_ = 0;
  bytes_ = 0;
}

void DeviceBuffer::checkRange(const char* what, size_t bytes, size_t offset) const {
  if (offset > bytes_ || bytes > bytes_ - offset)
    throw Error(fmt::format("{}: {} bytes at offset {} do not fit in a device buffer of {} bytes", what, bytes,
                            offset, bytes_));
}

void DeviceBuffer::checkElementSize(size_t elementBytes) const {
  if (bytes_ % elementBytes != 0)
    throw Error(fmt::format("a device buffer of {} bytes is not a whole number of {}-byte elements", bytes_,
                            elementBytes));
}

// The "synchronous" driver calls above return before the device has finished: cuMemsetD* is
// asynchronous with respect to the host, and cuMemcpyHtoD / cuMemcpyDtoD from pageable memory may
// return with the DMA still in flight. They run on the legacy default stream, which rtcg's
// non-blocking streams do not wait for, so a kernel launched next on such a stream could read stale
// inputs or have its results overwritten by a late poison fill. Waiting here makes these calls
// complete, as their names promise.
static void finishLegacyStream() { check(driver().streamSynchronize(nullptr), "cuStreamSynchronize"); }

void DeviceBuffer::copyFromHost(const void* src, size_t bytes, size_t offset) {
  checkRange("copy to device", bytes, offset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyHtoD(ptr_ + offset, src, bytes), "cuMemcpyHtoD");
  finishLegacyStream();
}

void DeviceBuffer::copyToHost(void* dst, size_t bytes, size_t offset) const {
  checkRange("copy to host", bytes, offset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyDtoH(dst, ptr_ + offset, bytes), "cuMemcpyDtoH");
}

void DeviceBuffer::copyFromDevice(const DeviceBuffer& src, size_t bytes, size_t dstOffset, size_t srcOffset) {
  checkRange("device-to-device copy (destination)", bytes, dstOffset);
  src.checkRange("device-to-device copy (source)", bytes, srcOffset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyDtoD(ptr_ + dstOffset, src.ptr_ + srcOffset, bytes), "cuMemcpyDtoD");
  finishLegacyStream();
}

void DeviceBuffer::copyFromHostAsync(const void* src, size_t bytes, const Stream* stream, size_t offset) {
  checkRange("asynchronous copy to device", bytes, offset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyHtoDAsync(ptr_ + offset, src, bytes, streamHandle(stream)), "cuMemcpyHtoDAsync");
}

void DeviceBuffer::copyToHostAsync(void* dst, size_t bytes, const Stream* stream, size_t offset) const {
  checkRange("asynchronous copy to host", bytes, offset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyDtoHAsync(dst, ptr_ + offset, bytes, streamHandle(stream)), "cuMemcpyDtoHAsync");
}

void DeviceBuffer::copyFromDeviceAsync(const DeviceBuffer& src, size_t bytes, const Stream* stream,
                                       size_t dstOffset, size_t srcOffset) {
  checkRange("asynchronous device-to-device copy (destination)", bytes, dstOffset);
  src.checkRange("asynchronous device-to-device copy (source)", bytes, srcOffset);
  if (bytes == 0) return;
  ctx_->makeCurrent();
  check(driver().memcpyDtoDAsync(ptr_ + dstOffset, src.ptr_ + srcOffset, bytes, streamHandle(stream)),
        "cuMemcpyDtoDAsync");
}

void DeviceBuffer::fill8(uint8_t value) {
  if (bytes_ == 0) return;
  ctx_->makeCurrent();
  check(driver().memsetD8(ptr_, value, bytes_), "cuMemsetD8");
  finishLegacyStream();
}

void DeviceBuffer::fill32(uint32_t value) {
  checkElementSize(4);
  if (bytes_ == 0) return;
  ctx_->makeCurrent();
  check(driver().memsetD32(ptr_, value, bytes_ / 4), "cuMemsetD32");
  finishLegacyStream();
}

void DeviceBuffer::fill8Async(uint8_t value, const Stream* stream) {
  if (bytes_ == 0) return;
  ctx_->makeCurrent();
  check(driver().memsetD8Async(ptr_, value, bytes_, streamHandle(stream)), "cuMemsetD8Async");
}

namespace detail {

PageLockedHost::~PageLockedHost() { release(); }

PageLockedHost::PageLockedHost(PageLockedHost&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)),
      registered_(other.registered_) {}

PageLockedHost& PageLockedHost::operator=(PageLockedHost&& other) noexcept {
  if (this != &other) {
    release();
    ctx_ = std::move(other.ctx_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
    registered_ = other.registered_;
  }
  return *this;
}

void PageLockedHost::release() noexcept {
  if (data_ && driver().ctxSetCurrent(ctx_->handle()) == CUDA_SUCCESS) {
    if (registered_)
      driver().memHostUnregister(data_);
    else
      driver().memFreeHost(data_);
  }
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace detail

namespace {
// Page-locks in `ctx`; nullptr for no bytes.
void* allocatePinned(const std::shared_ptr<Context>& ctx, size_t bytes) {
  RTCG_ASSERT(ctx, "PinnedBuffer needs a context");
  void* data = nullptr;
  if (bytes == 0) return data;
  ctx->makeCurrent();
  check(driver().memAllocHost(&data, bytes), "cuMemAllocHost", fmt::format("allocating {} bytes", bytes));
  return data;
}

void* registerHost(const std::shared_ptr<Context>& ctx, void* data, size_t bytes) {
  RTCG_ASSERT(ctx, "HostRegistration needs a context");
  if (bytes == 0) return nullptr;
  ctx->makeCurrent();
  check(driver().memHostRegister(data, bytes, 0), "cuMemHostRegister", fmt::format("page-locking {} bytes", bytes));
  return data;
}
}  // namespace

PinnedBuffer::PinnedBuffer(std::shared_ptr<Context> ctx, size_t bytes)
    : PageLockedHost(ctx, allocatePinned(ctx, bytes), bytes, /*registered=*/false) {}

HostRegistration::HostRegistration(std::shared_ptr<Context> ctx, void* data, size_t bytes)
    : PageLockedHost(ctx, registerHost(ctx, data, bytes), bytes, /*registered=*/true) {}

}  // namespace rtcg::cuda
