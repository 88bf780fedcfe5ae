#include "tune/CompilePool.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "api/Pipeline.h"

namespace rtcg {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

// The first lines of an NVRTC log, enough to say why without flooding a report.
std::string logHead(const std::string& log, size_t lines = 6) {
  std::string out;
  size_t at = 0;
  for (size_t n = 0; n < lines && at < log.size(); ++n) {
    size_t nl = log.find('\n', at);
    out += log.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
    at = nl == std::string::npos ? log.size() : nl + 1;
  }
  if (at < log.size()) out += "...";
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::string launchObstacle(const EmittedModule& module, const CudaCompileResult& binary, const LaunchLimits& limits) {
  for (const LaunchSpec& l : module.launches) {
    const KernelResources* r = binary.find(l.function);
    if (!r) return fmt::format("ptxas reported no resources for '{}'", l.function);
    if (r->spillStoreBytes > 0 || r->spillLoadBytes > 0)
      return fmt::format("{} spills registers ({} bytes stored, {} loaded per thread)", l.function, r->spillStoreBytes,
                         r->spillLoadBytes);
    int64_t threads = int64_t(l.block[0]) * l.block[1] * l.block[2];
    if (threads > limits.maxThreadsPerBlock)
      return fmt::format("{}: {} threads per block exceed the device's {}", l.function, threads,
                         limits.maxThreadsPerBlock);
    // Registers are allocated per warp, in units of 256.
    int64_t perWarp = (int64_t(r->registers) * 32 + 255) / 256 * 256;
    int64_t needed = (threads + 31) / 32 * perWarp;
    if (needed > limits.registersPerBlock)
      return fmt::format("{}: {} threads x {} registers need {} registers per block, more than the {} available",
                         l.function, threads, r->registers, needed, limits.registersPerBlock);
    int64_t shared = int64_t(r->sharedBytes) + l.dynamicSharedBytes;
    if (shared > limits.sharedPerBlockOptin)
      return fmt::format("{}: {} bytes of shared memory per block exceed the device's {}", l.function, shared,
                         limits.sharedPerBlockOptin);
  }
  return "";
}

CompiledCandidate compileCandidate(const Kernel& bound, const CompileJob& job, const std::string& arch,
                                   const LaunchLimits& limits) {
  CompiledCandidate c;
  c.label = job.label;
  Clock::time_point t0 = Clock::now();
  try {
    c.module = emitCuda(bound, job.schedule);
    if (job.rewrite) c.module.source = job.rewrite(c.module.source);
  } catch (const std::exception& e) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = fmt::format("the emitter rejected the schedule: {}", e.what());
    return c;
  }
  c.emitMs = msSince(t0);
  Clock::time_point t1 = Clock::now();
  CudaCompileResult binary = compileCuda(c.module.source, bound.name + ".cu", arch, nvrtcOptions());
  c.compileMs = msSince(t1);
  if (!binary.success) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = "NVRTC failed: " + logHead(binary.log);
    return c;
  }
  for (const KernelResources& r : binary.resources) {
    c.registers = std::max(c.registers, r.registers);
    c.spillBytes = std::max(c.spillBytes, r.spillStoreBytes + r.spillLoadBytes);
    c.sharedBytes = std::max(c.sharedBytes, r.sharedBytes);
    c.localBytes = std::max(c.localBytes, r.localBytes);
  }
  c.reason = launchObstacle(c.module, binary, limits);
  if (!c.reason.empty()) {
    c.status = CandidateStatus::Skipped;
    return c;
  }
  c.cubin.assign(binary.cubin.begin(), binary.cubin.end());
  return c;
}

CompilePool::CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs,
                         int threads)
    : bound_(bound), arch_(std::move(arch)), limits_(limits), jobs_(std::move(jobs)) {
  if (threads <= 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::max(1, std::min<int>(threads, int(std::max<size_t>(jobs_.size(), 1))));
  start_ = lastFinish_ = Clock::now();
  running_ = threads;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

CompilePool::~CompilePool() {
  stop();
  for (std::thread& t : threads_) t.join();
}

void CompilePool::run() {
  for (;;) {
    if (stopped_.load()) break;
    size_t i = nextJob_.fetch_add(1);
    if (i >= jobs_.size()) break;
    CompiledCandidate c;
    try {
      c = compileCandidate(bound_, jobs_[i], arch_, limits_);
    } catch (const std::exception& e) {  // e.g. out of memory: the candidate fails, the pool goes on
      c.label = jobs_[i].label;
      c.status = CandidateStatus::CompileFailed;
      c.reason = e.what();
    }
    c.job = i;
    std::lock_guard<std::mutex> lock(mutex_);
    done_.push_back(std::move(c));
    ++finished_;
    lastFinish_ = Clock::now();
    ready_.notify_all();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  ready_.notify_all();
}

std::optional<CompiledCandidate> CompilePool::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return !done_.empty() || running_ == 0; });
  if (done_.empty()) return std::nullopt;
  CompiledCandidate c = std::move(done_.front());
  done_.pop_front();
  return c;
}

void CompilePool::stop() { stopped_.store(true); }

int64_t CompilePool::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

double CompilePool::seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::chrono::duration<double>(lastFinish_ - start_).count();
}

double CompilePool::throughput() const {
  double s = seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  return s > 0 ? double(finished_) / s : 0.0;
}

}  // namespace rtcg
