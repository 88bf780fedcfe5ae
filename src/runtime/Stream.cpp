#include "runtime/Stream.h"

#include <utility>

#include "runtime/DriverApi.h"
#include "support/Error.h"

namespace rtcg::cuda {

using detail::check;
using detail::driver;

Stream::Stream(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  RTCG_ASSERT(ctx_, "Stream needs a context");
  ctx_->makeCurrent();
  CUstream s = nullptr;
  check(driver().streamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  stream_ = s;
}

Stream Stream::borrowed(std::shared_ptr<Context> ctx, CUstream_st* handle) {
  RTCG_ASSERT(ctx, "Stream needs a context");
  Stream s;
  s.ctx_ = std::move(ctx);
  s.stream_ = handle;
  s.owned_ = false;
  return s;
}

Stream::~Stream() { reset(); }

Stream::Stream(Stream&& other) noexcept
    : ctx_(std::move(other.ctx_)),
      stream_(std::exchange(other.stream_, nullptr)),
      owned_(std::exchange(other.owned_, true)) {}

Stream& Stream::operator=(Stream&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    stream_ = std::exchange(other.stream_, nullptr);
    owned_ = std::exchange(other.owned_, true);
  }
  return *this;
}

void Stream::reset() noexcept {
  // Destruction never throws; a failure here means the context is already unusable.
  if (owned_ && stream_ && driver().ctxSetCurrent(ctx_->handle()) == CUDA_SUCCESS) driver().streamDestroy(stream_);
  stream_ = nullptr;
}

void Stream::synchronize() const {
  ctx_->makeCurrent();
  check(driver().streamSynchronize(stream_), "cuStreamSynchronize");
}

Event::Event(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {
  RTCG_ASSERT(ctx_, "Event needs a context");
  ctx_->makeCurrent();
  CUevent e = nullptr;
  check(driver().eventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  event_ = e;
}

Event::~Event() { reset(); }

Event::Event(Event&& other) noexcept : ctx_(std::move(other.ctx_)), event_(std::exchange(other.event_, nullptr)) {}

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    ctx_ = std::move(other.ctx_);
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::reset() noexcept {
  if (event_ && driver().ctxSetCurrent(ctx_->handle()) == CUDA_SUCCESS) driver().eventDestroy(event_);
  event_ = nullptr;
}

void Event::record(const Stream* stream) {
  ctx_->makeCurrent();
  check(driver().eventRecord(event_, streamHandle(stream)), "cuEventRecord");
}

void Event::synchronize() const {
  ctx_->makeCurrent();
  check(driver().eventSynchronize(event_), "cuEventSynchronize");
}

float Event::elapsedMs(const Event& start, const Event& end) {
  end.synchronize();
  float ms = 0;
  check(driver().eventElapsedTime(&ms, start.event_, end.event_), "cuEventElapsedTime");
  return ms;
}

}  // namespace rtcg::cuda
