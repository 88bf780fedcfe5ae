// CUDA streams and events (RAII). Both keep their context alive.
#pragma once
#include <memory>

#include "runtime/Device.h"

struct CUstream_st;  // = CUstream
struct CUevent_st;   // = CUevent

namespace rtcg::cuda {

class Stream {
 public:
  // A new non-blocking stream: it does not synchronize with the legacy default stream.
  explicit Stream(std::shared_ptr<Context> ctx);
  // The application's stream (a CUstream or cudaStream_t of `ctx`; null: the legacy default
  // stream), used and never destroyed here.
  static Stream borrowed(std::shared_ptr<Context> ctx, CUstream_st* handle);
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  void synchronize() const;
  CUstream_st* handle() const { return stream_; }
  const std::shared_ptr<Context>& context() const { return ctx_; }

 private:
  void reset() noexcept;
  Stream() = default;
  std::shared_ptr<Context> ctx_;
  CUstream_st* stream_ = nullptr;
  bool owned_ = true;  // false: borrowed, not destroyed
};

// The CUstream for an optional Stream: null means the legacy default stream.
inline CUstream_st* streamHandle(const Stream* s) { return s ? s->handle() : nullptr; }

class Event {
 public:
  // A timing event (created with default flags, so elapsed times can be read).
  explicit Event(std::shared_ptr<Context> ctx);
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Records the event on `stream` (null: the default stream).
  void record(const Stream* stream = nullptr);
  void synchronize() const;
  CUevent_st* handle() const { return event_; }

  // Milliseconds between two recorded events; waits for `end` first.
  static float elapsedMs(const Event& start, const Event& end);

 private:
  void reset() noexcept;
  std::shared_ptr<Context> ctx_;
  CUevent_st* event_ = nullptr;
};

}  // namespace rtcg::cuda
