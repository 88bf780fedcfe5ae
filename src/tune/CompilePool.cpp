#include "tune/CompilePool.h"

#include <errno.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>

#include "driver/Pipeline.h"
#include "tune/WorkerProcess.h"
#include "tune/WorkerProtocol.h"

namespace rtcg {

namespace compileworker {

using nlohmann::json;

// Blocking I/O of the compile-worker protocol's frames (the framing of tune/WorkerProtocol.h,
// whose Channel decodes only the measuring worker's messages).
class FrameChannel {
 public:
  explicit FrameChannel(int fd) : fd_(fd) {}

  // Writes one frame; false when the peer is gone (never raises SIGPIPE on a socket).
  bool send(const json& body, std::string_view blob = {}) {
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > worker::kMaxJsonBytes) throw Error(fmt::format("compile message too large ({} bytes)", text.size()));
    std::string frame = "RTCG";
    putLe(frame, text.size(), 4);
    putLe(frame, blob.size(), 8);
    frame += text;
    frame += blob;
    for (size_t done = 0; done < frame.size();) {
      ssize_t n = ::send(fd_, frame.data() + done, frame.size() - done, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EPIPE || errno == ECONNRESET) return false;
        throw Error(fmt::format("cannot send a compile message: {}", std::strerror(errno)));
      }
      done += size_t(n);
    }
    return true;
  }

  enum class Status { Frame, Eof, Timeout };
  // Reads the next frame into `body` and `blob`, waiting at most `timeoutSeconds` (< 0: forever).
  // Throws worker::ProtocolError for a malformed frame.
  Status receive(json& body, std::string& blob, double timeoutSeconds) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, timeoutSeconds)));
    for (;;) {
      if (takeFrame(body, blob)) return Status::Frame;
      int waitMs = -1;
      if (timeoutSeconds >= 0) {
        int64_t left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
        if (left <= 0) return Status::Timeout;
        waitMs = int(std::min<int64_t>(left, 1 << 30));
      }
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, waitMs);
      if (r < 0 && errno != EINTR) throw Error(fmt::format("cannot wait for a compile message: {}", std::strerror(errno)));
      if (r <= 0) continue;
      char chunk[65536];
      ssize_t n = ::read(fd_, chunk, sizeof chunk);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        if (errno != ECONNRESET) throw Error(fmt::format("cannot read a compile message: {}", std::strerror(errno)));
        n = 0;
      }
      if (n == 0) {
        if (!buffer_.empty())
          throw worker::ProtocolError(
              fmt::format("the connection closed in the middle of a message ({} bytes of it read)", buffer_.size()));
        return Status::Eof;
      }
      buffer_.append(chunk, size_t(n));
    }
  }

 private:
  static void putLe(std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  }
  uint64_t getLe(size_t at, int bytes) const {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(buffer_[at + i])) << (8 * i);
    return v;
  }

  bool takeFrame(json& body, std::string& blob) {
    if (buffer_.compare(0, std::min<size_t>(4, buffer_.size()), std::string_view("RTCG").substr(0, std::min<size_t>(4, buffer_.size()))) != 0)
      throw worker::ProtocolError("bad frame start (expected 'RTCG')");
    if (buffer_.size() < worker::kHeaderBytes) return false;
    uint64_t jsonBytes = getLe(4, 4), blobBytes = getLe(8, 8);
    if (jsonBytes == 0 || jsonBytes > worker::kMaxJsonBytes || blobBytes > worker::kMaxBlobBytes)
      throw worker::ProtocolError(fmt::format("bad frame lengths ({} bytes of JSON, {} of binary data)", jsonBytes, blobBytes));
    if (buffer_.size() < worker::kHeaderBytes + jsonBytes + blobBytes) return false;
    body = json::parse(buffer_.begin() + worker::kHeaderBytes, buffer_.begin() + worker::kHeaderBytes + jsonBytes,
                       nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) throw worker::ProtocolError("bad frame: the message is not a JSON object");
    blob.assign(buffer_, worker::kHeaderBytes + jsonBytes, blobBytes);
    buffer_.erase(0, worker::kHeaderBytes + jsonBytes + blobBytes);
    return true;
  }

  int fd_;
  std::string buffer_;
};

json resourcesToJson(const std::vector<KernelResources>& resources) {
  json out = json::array();
  for (const KernelResources& r : resources)
    out.push_back({{"name", r.name}, {"registers", r.registers}, {"shared", r.sharedBytes}, {"local", r.localBytes},
                   {"spillStores", r.spillStoreBytes}, {"spillLoads", r.spillLoadBytes}});
  return out;
}

// Throws json::exception for a missing or mistyped member.
std::vector<KernelResources> resourcesFromJson(const json& j) {
  std::vector<KernelResources> out;
  for (const json& r : j.at("resources")) {
    KernelResources k;
    k.name = r.at("name").get<std::string>();
    k.registers = r.at("registers").get<int>();
    k.sharedBytes = r.at("shared").get<int>();
    k.localBytes = r.at("local").get<int>();
    k.spillStoreBytes = r.at("spillStores").get<int>();
    k.spillLoadBytes = r.at("spillLoads").get<int>();
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace compileworker

using compileworker::FrameChannel;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kHelloSeconds = 30;  // spawn to hello (a loaded host starts processes slowly)

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

// Emits the job's CUDA C into `c` from its plan (tiles up to the device's opt-in shared memory);
// false (with c failed) when the schedule has no plan or the emitter fails on it (a bug in rtcg).
bool emitJob(const Kernel& bound, const CompileJob& job, const LaunchLimits& limits, CompiledCandidate& c) {
  c.label = job.label;
  Clock::time_point t0 = Clock::now();
  std::shared_ptr<const SchedulePlan> plan = job.plan;
  if (!plan) {
    auto planned = std::make_shared<SchedulePlan>(
        planSchedule(bound, job.schedule, deviceScheduleLimits(limits.sharedPerBlockOptin, limits.maxThreadsPerBlock)));
    if (!planned->ok()) {
      c.status = CandidateStatus::CompileFailed;
      c.reason = fmt::format("the schedule has no plan: {}", fmt::join(planned->reasons, "; "));
      return false;
    }
    plan = std::move(planned);
  }
  try {
    c.module = emitCuda(bound, *plan);
    if (job.rewrite) c.module.source = job.rewrite(c.module.source);
  } catch (const std::exception& e) {
    c.status = CandidateStatus::CompileFailed;
    c.emitterError = true;
    c.reason = fmt::format("the emitter failed on the schedule's plan (a bug in rtcg): {}", e.what());
    return false;
  }
  c.emitMs = msSince(t0);
  return true;
}

// Fills `c` from NVRTC's result: the failure, the resources, the launch check and the cubin.
void takeBinary(CompiledCandidate& c, const CudaCompileResult& binary, const LaunchLimits& limits) {
  if (!binary.success) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = "NVRTC failed: " + logHead(binary.log);
    return;
  }
  c.resourcesKnown = !binary.resources.empty();
  for (const KernelResources& r : binary.resources) {
    c.registers = std::max(c.registers, r.registers);
    c.spillBytes = std::max(c.spillBytes, r.spillStoreBytes + r.spillLoadBytes);
    c.sharedBytes = std::max(c.sharedBytes, r.sharedBytes);
    c.localBytes = std::max(c.localBytes, r.localBytes);
  }
  c.reason = launchObstacle(c.module, binary, limits);
  if (!c.reason.empty()) {
    c.status = CandidateStatus::Skipped;
    return;
  }
  c.cubin.assign(binary.cubin.begin(), binary.cubin.end());
}

}  // namespace

std::string launchObstacle(const EmittedModule& module, const CudaCompileResult& binary, const LaunchLimits& limits) {
  for (const LaunchSpec& l : module.launches) {
    int64_t threads = int64_t(l.block[0]) * l.block[1] * l.block[2];
    if (threads > limits.maxThreadsPerBlock)
      return fmt::format("{}: {} threads per block exceed the device's {}", l.function, threads,
                         limits.maxThreadsPerBlock);
    const KernelResources* r = binary.find(l.function);
    if (!r) {  // unknown resources: only the dynamic shared memory can be checked
      if (int64_t(l.dynamicSharedBytes) > limits.sharedPerBlockOptin)
        return fmt::format("{}: {} bytes of shared memory per block exceed the device's {}", l.function,
                           l.dynamicSharedBytes, limits.sharedPerBlockOptin);
      continue;
    }
    if (r->spillStoreBytes > 0 || r->spillLoadBytes > 0)
      return fmt::format("{} spills registers ({} bytes stored, {} loaded per thread)", l.function, r->spillStoreBytes,
                         r->spillLoadBytes);
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
  if (!emitJob(bound, job, limits, c)) return c;
  Clock::time_point t1 = Clock::now();
  CudaCompileResult binary = compileGenerated(bound.name, c.module.source, arch);
  c.compileMs = msSince(t1);
  takeBinary(c, binary, limits);
  return c;
}

int serveCompileWorker(int fd) {
  FrameChannel channel(fd);
  try {
    if (!channel.send({{"type", "hello"}, {"pid", int64_t(::getpid())}})) return 0;
    for (;;) {
      json request;
      std::string blob;
      if (channel.receive(request, blob, -1) == FrameChannel::Status::Eof) return 0;
      std::string type = request.value("type", "");
      if (type == "quit") return 0;
      if (type != "compile") throw worker::ProtocolError(fmt::format("unexpected '{}' message", type));
      CudaCompileResult r;
      try {
        r = compileGenerated(request.at("kernel").get<std::string>(), request.at("source").get<std::string>(),
                             request.at("arch").get<std::string>());
      } catch (const json::exception&) {
        throw;
      } catch (const std::exception& e) {  // e.g. NVRTC cannot be loaded: the candidate fails, the worker goes on
        r = CudaCompileResult{};
        r.log = fmt::format("the compile worker could not run NVRTC: {}", e.what());
      }
      json reply = {{"type", "compiled"},
                    {"id", request.at("id").get<int64_t>()},
                    {"success", r.success},
                    {"log", r.log},
                    {"resources", compileworker::resourcesToJson(r.resources)}};
      if (!channel.send(reply, std::string_view(r.cubin.data(), r.cubin.size()))) return 0;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "rtcg-worker --compile-worker: {}\n", e.what());
    return 1;
  }
}

// One compile worker and the thread in this process that feeds it.
struct CompilePool::Slot {
  ChildProcess child;  // pid published under the pool's mutex (the destructor kills it)
  std::unique_ptr<FrameChannel> channel;
  bool busy = false;       // holds a candidate (under the pool's mutex)
  bool inProcess = false;  // no worker: compile on this thread
  std::thread thread;
};

CompilePool::CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs,
                         CompilePoolOptions options)
    : bound_(bound), arch_(std::move(arch)), limits_(limits), jobs_(std::move(jobs)), options_(std::move(options)) {
  int n = options_.parallel;
  if (n <= 0)
    n = std::min(16 * std::max(1, options_.measuringDevices), int(std::max(1u, std::thread::hardware_concurrency())));
  n = std::max(1, std::min<int>(n, int(std::max<size_t>(jobs_.size(), 1))));
  start_ = lastFinish_ = Clock::now();
  running_ = n;
  for (int i = 0; i < n; ++i) slots_.push_back(std::make_unique<Slot>());
  for (std::unique_ptr<Slot>& s : slots_) s->thread = std::thread([this, slot = s.get()] { runSlot(*slot); });
}

CompilePool::~CompilePool() {
  stop();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_.store(true);
    for (const std::unique_ptr<Slot>& s : slots_)
      if (s->child.pid > 0) ::kill(s->child.pid, SIGKILL);  // its thread sees end of input and reaps it
  }
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->thread.joinable()) s->thread.join();
}

bool CompilePool::startWorker(Slot& slot) {
  std::string why;
  try {
    ChildProcess child = spawnChild(options_.workerPath, {"--compile-worker"});
    {
      std::lock_guard<std::mutex> lock(mutex_);
      slot.child = child;
      if (shutdown_.load()) ::kill(child.pid, SIGKILL);  // the destructor's kill loop has passed
    }
    slot.channel = std::make_unique<FrameChannel>(child.fd);
    json hello;
    std::string blob;
    switch (slot.channel->receive(hello, blob, kHelloSeconds)) {
      case FrameChannel::Status::Frame:
        if (hello.value("type", "") == "hello") {
          if (options_.log) options_.log(fmt::format("compile worker {} started ({})", child.pid, options_.workerPath));
          return true;
        }
        why = fmt::format("it sent a '{}' message instead of 'hello'", hello.value("type", "?"));
        break;
      case FrameChannel::Status::Eof: why = "it closed its connection"; break;
      case FrameChannel::Status::Timeout: why = fmt::format("it did not answer within {:g} s", kHelloSeconds); break;
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (slot.child.pid > 0) why += fmt::format(" and {}", endWorker(slot, true));
  slot.inProcess = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fallback_ = true;
  }
  if (options_.log && !shutdown_.load())
    options_.log(fmt::format("cannot start a compile worker ({}): compiling on a thread of this process instead", why));
  return false;
}

std::string CompilePool::endWorker(Slot& slot, bool kill) {
  ChildProcess child;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // unpublished before it is reaped: its pid cannot be reused
    child = slot.child;
    slot.child = ChildProcess{};
    slot.busy = false;
  }
  slot.channel.reset();
  std::string how = endChild(child, kill) + childStderrTail(child.stderrFd);
  if (child.stderrFd >= 0) ::close(child.stderrFd);
  return how;
}

CompiledCandidate CompilePool::compileInWorker(Slot& slot, size_t job) {
  CompiledCandidate c;
  if (!emitJob(bound_, jobs_[job], limits_, c)) return c;
  json request = {{"type", "compile"}, {"id", int64_t(job)}, {"kernel", bound_.name}, {"arch", arch_},
                  {"source", c.module.source}};
  Clock::time_point t1 = Clock::now();
  // A worker that died between candidates did not fail this one: start another and send it again.
  for (int attempt = 0;; ++attempt) {
    if (slot.child.pid <= 0) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++restarts_;
      }
      if (!startWorker(slot)) {  // this slot compiles in process from now on
        CudaCompileResult binary = compileGenerated(bound_.name, c.module.source, arch_);
        c.compileMs = msSince(t1);
        takeBinary(c, binary, limits_);
        return c;
      }
    }
    pid_t pid = slot.child.pid;
    if (slot.channel->send(request)) break;
    std::string how = endWorker(slot, false);
    if (options_.log) options_.log(fmt::format("compile worker {} ended before it got candidate {} ({})", pid, job, how));
    if (attempt == 1) {
      c.status = CandidateStatus::CompileFailed;
      c.reason = fmt::format("the compile worker keeps dying before it gets the candidate ({})", how);
      return c;
    }
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.busy = true;
  }
  pid_t pid = slot.child.pid;
  std::string failure;
  CudaCompileResult binary;
  try {
    json reply;
    std::string cubin;
    switch (slot.channel->receive(reply, cubin, options_.compileTimeoutSeconds)) {
      case FrameChannel::Status::Eof:
        failure = fmt::format("the compile worker {} ended while compiling this candidate ({})", pid,
                              endWorker(slot, false));
        break;
      case FrameChannel::Status::Timeout:
        endWorker(slot, true);
        failure = fmt::format("NVRTC did not finish within {:g} s; the compile worker {} was killed",
                              options_.compileTimeoutSeconds, pid);
        break;
      case FrameChannel::Status::Frame:
        if (reply.value("type", "") != "compiled" || reply.at("id").get<int64_t>() != int64_t(job))
          throw worker::ProtocolError(fmt::format("a '{}' message for candidate {} instead of the result of candidate {}",
                                                  reply.value("type", "?"), reply.value("id", int64_t(-1)), job));
        binary.success = reply.at("success").get<bool>();
        binary.log = reply.at("log").get<std::string>();
        binary.resources = compileworker::resourcesFromJson(reply);
        binary.cubin.assign(cubin.begin(), cubin.end());
        break;
    }
  } catch (const std::exception& e) {  // a malformed frame or reply
    failure = fmt::format("the compile worker {} sent a malformed reply ({}) and was stopped ({})", pid, e.what(),
                          endWorker(slot, true));
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    slot.busy = false;
  }
  c.compileMs = msSince(t1);
  if (!failure.empty()) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = failure + " (a new worker takes the next candidate)";
    if (options_.log && !shutdown_.load()) options_.log(fmt::format("candidate {}: {}", job, c.reason));
    return c;
  }
  takeBinary(c, binary, limits_);
  return c;
}

void CompilePool::runSlot(Slot& slot) {
  if (options_.workerPath.empty()) slot.inProcess = true;
  else startWorker(slot);
  while (!stopped_.load()) {
    size_t i = nextJob_.fetch_add(1);
    if (i >= jobs_.size()) break;
    CompiledCandidate c;
    try {
      c = slot.inProcess ? compileCandidate(bound_, jobs_[i], arch_, limits_) : compileInWorker(slot, i);
    } catch (const std::exception& e) {  // e.g. out of memory: the candidate fails, the pool goes on
      c.status = CandidateStatus::CompileFailed;
      c.reason = e.what();
    }
    c.job = i;
    c.label = jobs_[i].label;
    if (shutdown_.load()) break;  // the pool is going away: nobody takes results any more
    finish(std::move(c));
  }
  if (slot.child.pid > 0) {
    try {
      slot.channel->send({{"type", "quit"}});
    } catch (...) {  // it is ended below either way
    }
    endWorker(slot, false);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  --running_;
  ready_.notify_all();
}

void CompilePool::finish(CompiledCandidate c) {
  std::lock_guard<std::mutex> lock(mutex_);
  done_.push_back(std::move(c));
  ++finished_;
  lastFinish_ = Clock::now();
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

bool CompilePool::usedFallback() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return fallback_;
}

int CompilePool::workerRestarts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return restarts_;
}

std::vector<pid_t> CompilePool::workerPids(bool busyOnly) const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<pid_t> out;
  for (const std::unique_ptr<Slot>& s : slots_) out.push_back(!busyOnly || s->busy ? s->child.pid : -1);
  return out;
}

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
