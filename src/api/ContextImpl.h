// The state behind rtcg::Context (include/rtcg/rtcg.h) that the API's files share: the device's
// context, its compile caches and idle streams, and the device memory of rtcg::Array.
#pragma once

#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "driver/Executable.h"
#include "rtcg/rtcg.h"
#include "runtime/Device.h"
#include "runtime/KernelCache.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"

namespace rtcg::detail {

struct KernelData;  // Api.cpp: what a compile() produces

struct BufferImpl {
  cuda::DeviceBuffer memory;
  std::shared_ptr<ContextImpl> owner;  // for streams, and to check the device at launch
};

// A loaded module: the cubin as a module in this context, and where the cubin came from.
struct LoadedModule {
  std::shared_ptr<const Executable> executable;
  CacheSource source = CacheSource::Computed;
};

struct ContextImpl {
  std::shared_ptr<cuda::Context> cuda;
  DeviceInfo info;
  std::string arch;

  std::mutex mutex;  // guards everything below
  // compile() requests already served (requestKey) -> their kernel.
  std::unordered_map<std::string, std::shared_ptr<const KernelData>> requests;
  // Modules by cubinKey; a future so that concurrent compiles of one kernel load it once.
  std::unordered_map<std::string, std::shared_future<LoadedModule>> modules;
  // Streams not in use; a launch or copy takes one and gives it back.
  std::vector<std::unique_ptr<cuda::Stream>> idleStreams;
  Context::CacheStats stats;

  std::unique_ptr<cuda::Stream> takeStream() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!idleStreams.empty()) {
        std::unique_ptr<cuda::Stream> s = std::move(idleStreams.back());
        idleStreams.pop_back();
        return s;
      }
    }
    return std::make_unique<cuda::Stream>(cuda);
  }
  void giveBack(std::unique_ptr<cuda::Stream> s) {
    std::lock_guard<std::mutex> lock(mutex);
    idleStreams.push_back(std::move(s));
  }
};

// A stream borrowed from the context for one synchronous operation. A stream whose operation
// failed is dropped rather than reused.
class BorrowedStream {
 public:
  explicit BorrowedStream(ContextImpl& ctx) : ctx_(ctx), stream_(ctx.takeStream()) {}
  ~BorrowedStream() {
    if (ok_) ctx_.giveBack(std::move(stream_));
  }
  const cuda::Stream* get() const { return stream_.get(); }
  void synchronize() {
    stream_->synchronize();
    ok_ = true;
  }

 private:
  ContextImpl& ctx_;
  std::unique_ptr<cuda::Stream> stream_;
  bool ok_ = false;
};

}  // namespace rtcg::detail
