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
#include <tuple>
#include <nlohmann/json.hpp>

#include "driver/Pipeline.h"
#include "support/Cores.h"
#include "support/Error.h"
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
  bool send(const json& body, std::string_view blob = {}) { return sendFrame(encodeFrame(body, blob)); }
  bool sendFrame(const std::string& frame) {
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
      if (takeFrame(buffer_, body, blob)) return Status::Frame;
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

  static std::string encodeFrame(const json& body, std::string_view blob = {}) {
    std::string text = body.dump(-1, ' ', false, json::error_handler_t::replace);
    if (text.size() > worker::kMaxJsonBytes) throw Error(fmt::format("compile message too large ({} bytes)", text.size()));
    std::string frame = "RTCG";
    putLe(frame, text.size(), 4);
    putLe(frame, blob.size(), 8);
    frame += text;
    frame += blob;
    return frame;
  }

  // Takes the first frame off `buffer` into `body` and `blob`; false when it is not complete yet.
  // Throws worker::ProtocolError for a malformed frame.
  static bool takeFrame(std::string& buffer, json& body, std::string& blob) {
    if (buffer.compare(0, std::min<size_t>(4, buffer.size()), std::string_view("RTCG").substr(0, std::min<size_t>(4, buffer.size()))) != 0)
      throw worker::ProtocolError("bad frame start (expected 'RTCG')");
    if (buffer.size() < worker::kHeaderBytes) return false;
    uint64_t jsonBytes = getLe(buffer, 4, 4), blobBytes = getLe(buffer, 8, 8);
    if (jsonBytes == 0 || jsonBytes > worker::kMaxJsonBytes || blobBytes > worker::kMaxBlobBytes)
      throw worker::ProtocolError(fmt::format("bad frame lengths ({} bytes of JSON, {} of binary data)", jsonBytes, blobBytes));
    if (buffer.size() < worker::kHeaderBytes + jsonBytes + blobBytes) return false;
    body = json::parse(buffer.begin() + worker::kHeaderBytes, buffer.begin() + worker::kHeaderBytes + jsonBytes,
                       nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded() || !body.is_object()) throw worker::ProtocolError("bad frame: the message is not a JSON object");
    blob.assign(buffer, worker::kHeaderBytes + jsonBytes, blobBytes);
    buffer.erase(0, worker::kHeaderBytes + jsonBytes + blobBytes);
    return true;
  }

  // One whole frame (a remote slot's); throws worker::ProtocolError unless it is exactly one.
  static void decodeFrame(std::string frame, json& body, std::string& blob) {
    if (!takeFrame(frame, body, blob)) throw worker::ProtocolError("a truncated frame");
    if (!frame.empty()) throw worker::ProtocolError(fmt::format("{} bytes after the frame", frame.size()));
  }

 private:
  static void putLe(std::string& out, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xff));
  }
  static uint64_t getLe(const std::string& buffer, size_t at, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(buffer[at + i])) << (8 * i);
    return v;
  }

  int fd_;
  std::string buffer_;
};

json resourcesToJson(const std::vector<KernelResources>& resources) {
  json out = json::array();
  for (const KernelResources& r : resources)
    out.push_back({{"name", r.name}, {"registers", r.registers}, {"shared", r.sharedBytes}, {"local", r.localBytes},
                   {"spillStores", r.spillStoreBytes}, {"spillLoads", r.spillLoadBytes}, {"spillsKnown", r.spillsKnown}});
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
    k.spillsKnown = r.value("spillsKnown", true);
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
        planSchedule(bound, job.schedule, deviceScheduleLimits(limits.sharedPerBlockOptin, limits.maxThreadsPerBlock,
                                                        limits.multiprocessors, limits.sharedPerMultiprocessor)));
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
    // No ptxas report (some NVRTC builds give none): the cubin's stack frame stands for spills, so
    // that a spilling candidate is treated alike whichever way its resources were read.
    if (!r->spillsKnown && r->localBytes > 0)
      return fmt::format("{} uses {} bytes of local memory per thread (spills; NVRTC gave no ptxas report)", l.function,
                         r->localBytes);
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

namespace {

// The "compile" request for job `job`, of CUDA C `source`.
json compileRequest(size_t job, const std::string& kernel, const std::string& arch, const std::string& source) {
  return {{"type", "compile"}, {"id", int64_t(job)}, {"kernel", kernel}, {"arch", arch}, {"source", source}};
}

// A "compile" request's reply, compiled on this thread: the "compiled" message and the cubin.
// Throws json::exception for a request without its members.
std::pair<json, std::string> compileHere(const json& request) {
  CudaCompileResult r;
  try {
    r = compileGenerated(request.at("kernel").get<std::string>(), request.at("source").get<std::string>(),
                         request.at("arch").get<std::string>());
  } catch (const json::exception&) {
    throw;
  } catch (const std::exception& e) {  // e.g. NVRTC cannot be loaded: the candidate fails, the worker goes on
    r = CudaCompileResult{};
    r.log = fmt::format("NVRTC could not run: {}", e.what());
  }
  json reply = {{"type", "compiled"},
                {"id", request.at("id").get<int64_t>()},
                {"success", r.success},
                {"log", r.log},
                {"resources", compileworker::resourcesToJson(r.resources)}};
  return {std::move(reply), std::string(r.cubin.data(), r.cubin.size())};
}

// The binary of a "compiled" reply; throws (json::exception, ProtocolError) for a malformed one.
CudaCompileResult binaryOfReply(const json& reply, const std::string& cubin, size_t job) {
  if (reply.value("type", "") != "compiled" || reply.at("id").get<int64_t>() != int64_t(job))
    throw worker::ProtocolError(fmt::format("a '{}' message for candidate {} instead of the result of candidate {}",
                                            reply.value("type", "?"), reply.value("id", int64_t(-1)), job));
  CudaCompileResult binary;
  binary.success = reply.at("success").get<bool>();
  binary.log = reply.at("log").get<std::string>();
  binary.resources = compileworker::resourcesFromJson(reply);
  binary.cubin.assign(cubin.begin(), cubin.end());
  return binary;
}

}  // namespace

namespace compileworker {

// A slot's compile worker process (a pool's local slot or a CompileSlotHost's): started at the
// slot's first request, sent one request at a time, ended when it dies, times out or sends garbage
// (the next request starts another). Where none can be started (or the path is empty) the slot
// compiles on the calling thread from then on. Used by one thread, except pid() and abandon(),
// which any thread may call.
class WorkerLink {
 public:
  // `warmArch`: the worker warms NVRTC for it as it starts (serveCompileWorker); "" not.
  WorkerLink(std::string path, std::function<void(const std::string&)> log, std::string warmArch = "")
      : path_(std::move(path)), warmArch_(std::move(warmArch)), log_(std::move(log)) {}
  ~WorkerLink() { quit(); }

  struct Reply {
    json body;  // the "compiled" message (id checked), with `cubin`
    std::string cubin;
    std::string failure;    // else why not; the worker has been ended
    bool noWorker = false;  // with `failure` from exchange(): no worker could be started
  };
  // Compiles a "compile" request in the worker, or on this thread where no worker starts (said
  // once through the log). A failure fails only this request. Throws json::exception for a request
  // without its members.
  Reply compile(const json& request, double timeoutSeconds);
  // Starts the worker ahead of the first request (compile() does where this was not called), so
  // that the first candidate's compile time is NVRTC's alone.
  void prepare();
  void quit();  // asks the worker to exit and reaps it (if there is one)
  void abandon();
  pid_t pid(bool busyOnly) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return !busyOnly || busy_ ? child_.pid : -1;
  }
  int restarts() const { return restarts_.load(); }
  bool fellBack() const { return fellBack_.load(); }  // a worker could not start: compiles here

 private:
  // Starts a worker: "" once it said hello, else why not (and it is ended).
  std::string start();
  // Sends the request to the worker (restarted when it died) and waits for the reply.
  Reply exchange(const json& request, double timeoutSeconds);
  void useThreads(const std::string& why) {
    inProcess_ = true;
    fellBack_ = true;
    say(fmt::format("cannot start a compile worker ({}): compiling on a thread of this process instead", why));
  }
  std::string end(bool kill);
  void setBusy(bool busy) {
    std::lock_guard<std::mutex> lock(mutex_);
    busy_ = busy;
  }
  void say(const std::string& line) {
    if (log_ && !abandoned()) log_(line);
  }
  bool abandoned() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return abandoned_;
  }

  std::string path_, warmArch_;
  std::function<void(const std::string&)> log_;
  mutable std::mutex mutex_;  // guards child_'s publication (abandon kills it), busy_, abandoned_
  ChildProcess child_;
  std::unique_ptr<FrameChannel> channel_;
  bool busy_ = false, abandoned_ = false;
  bool tried_ = false;     // the first request came (the worker was started, or not)
  bool inProcess_ = false; // no worker: compile on the calling thread
  std::atomic<bool> fellBack_{false};
  std::atomic<int> restarts_{0};
};

std::string WorkerLink::start() {
  std::string why;
  try {
    std::vector<std::string> args{"--compile-worker"};
    if (!warmArch_.empty()) args.insert(args.end(), {"--warm", warmArch_});
    ChildProcess child = spawnChild(path_, args);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      child_ = child;
      if (abandoned_) ::kill(child.pid, SIGKILL);  // abandon() has passed
    }
    channel_ = std::make_unique<FrameChannel>(child.fd);
    json hello;
    std::string blob;
    switch (channel_->receive(hello, blob, kHelloSeconds)) {
      case FrameChannel::Status::Frame:
        if (hello.value("type", "") == "hello") {
          say(fmt::format("compile worker {} started ({})", child.pid, path_));
          return "";
        }
        why = fmt::format("it sent a '{}' message instead of 'hello'", hello.value("type", "?"));
        break;
      case FrameChannel::Status::Eof: why = "it closed its connection"; break;
      case FrameChannel::Status::Timeout: why = fmt::format("it did not answer within {:g} s", kHelloSeconds); break;
    }
  } catch (const std::exception& e) {
    why = e.what();
  }
  if (child_.pid > 0) why += fmt::format(" and {}", end(true));
  return why;
}

std::string WorkerLink::end(bool kill) {
  ChildProcess child;
  {
    std::lock_guard<std::mutex> lock(mutex_);  // unpublished before it is reaped: its pid cannot be reused
    child = child_;
    child_ = ChildProcess{};
    busy_ = false;
  }
  channel_.reset();
  std::string how = endChild(child, kill) + childStderrTail(child.stderrFd);
  if (child.stderrFd >= 0) ::close(child.stderrFd);
  return how;
}

void WorkerLink::quit() {
  if (child_.pid <= 0) return;
  try {
    channel_->send({{"type", "quit"}});
  } catch (...) {  // it is ended below either way
  }
  end(false);
}

void WorkerLink::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
  if (child_.pid > 0) ::kill(child_.pid, SIGKILL);  // its thread sees end of input and reaps it
}

WorkerLink::Reply WorkerLink::exchange(const json& request, double timeoutSeconds) {
  Reply out;
  int64_t id = request.at("id").get<int64_t>();
  // A worker that died between candidates did not fail this one: start another and send it again.
  for (int attempt = 0;; ++attempt) {
    if (child_.pid <= 0) {
      ++restarts_;
      out.failure = start();
      if (!out.failure.empty()) {
        out.noWorker = true;
        return out;
      }
    }
    pid_t pid = child_.pid;
    if (channel_->send(request)) break;
    std::string how = end(false);
    say(fmt::format("compile worker {} ended before it got candidate {} ({})", pid, id, how));
    if (attempt == 1) {
      out.failure = fmt::format("the compile worker keeps dying before it gets the candidate ({})", how);
      return out;
    }
  }
  setBusy(true);
  pid_t pid = child_.pid;
  try {
    switch (channel_->receive(out.body, out.cubin, timeoutSeconds)) {
      case FrameChannel::Status::Eof:
        out.failure =
            fmt::format("the compile worker {} ended while compiling this candidate ({})", pid, end(false));
        break;
      case FrameChannel::Status::Timeout:
        end(true);
        out.failure =
            fmt::format("NVRTC did not finish within {:g} s; the compile worker {} was killed", timeoutSeconds, pid);
        break;
      case FrameChannel::Status::Frame:
        binaryOfReply(out.body, out.cubin, size_t(id));  // checked here: a malformed reply ends the worker
        break;
    }
  } catch (const std::exception& e) {  // a malformed frame or reply
    out.failure =
        fmt::format("the compile worker {} sent a malformed reply ({}) and was stopped ({})", pid, e.what(), end(true));
  }
  setBusy(false);
  return out;
}

void WorkerLink::prepare() {
  if (tried_) return;
  tried_ = true;
  if (path_.empty()) inProcess_ = true;
  else if (std::string why = start(); !why.empty()) useThreads(why);
}

WorkerLink::Reply WorkerLink::compile(const json& request, double timeoutSeconds) {
  if (abandoned()) {  // the pool or host is going away: start nothing, compile nothing
    Reply out;
    out.failure = "the compile slot was abandoned";
    return out;
  }
  prepare();
  if (!inProcess_) {
    Reply r = exchange(request, timeoutSeconds);
    if (!r.noWorker) return r;
    useThreads(r.failure);  // it died and no other starts: this slot compiles here from now on
  }
  Reply out;
  std::tie(out.body, out.cubin) = compileHere(request);
  return out;
}

}  // namespace compileworker

using compileworker::WorkerLink;

// A kernel for NVRTC's first compile in a new worker (loading the library and its built-in
// headers), done before the worker's first job arrives.
constexpr const char* kWarmKernel = "extern \"C\" __global__ void rtcg_warm(float* x) { x[threadIdx.x] = 0.0f; }\n";

int serveCompileWorker(int fd, const std::string& warmArch) {
  FrameChannel channel(fd);
  try {
    if (!channel.send({{"type", "hello"}, {"pid", int64_t(::getpid())}})) return 0;
    if (!warmArch.empty()) {
      try {
        compileGenerated("rtcg_warm", kWarmKernel, warmArch);
      } catch (const std::exception&) {  // a job's compile says what is wrong with NVRTC
      }
    }
    for (;;) {
      json request;
      std::string blob;
      if (channel.receive(request, blob, -1) == FrameChannel::Status::Eof) return 0;
      std::string type = request.value("type", "");
      if (type == "quit") return 0;
      if (type != "compile") throw worker::ProtocolError(fmt::format("unexpected '{}' message", type));
      auto [reply, cubin] = compileHere(request);
      if (!channel.send(reply, cubin)) return 0;
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "rtcg-worker --compile-worker: {}\n", e.what());
    return 1;
  }
}

std::optional<std::string> compileWorkerArgs(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--compile-worker") != 0) return std::nullopt;
  if (argc == 2) return std::string();
  if (argc == 4 && std::strcmp(argv[2], "--warm") == 0 && *argv[3]) return std::string(argv[3]);
  return std::nullopt;
}

// ---- compile slots served for a pool elsewhere -------------------------------------------------

CompileSlotHost::CompileSlotHost(std::string workerPath, int slots, std::function<void(const std::string&)> log,
                                 std::string warmArch, bool deferWorkers)
    : start_(deferWorkers) {
  for (int i = 0; i < slots; ++i) slots_.push_back(std::make_unique<WorkerLink>(workerPath, log, warmArch));
}

void CompileSlotHost::prepare(int slot) {
  if (start_.mayStart(slot)) slots_.at(size_t(slot))->prepare();
}

CompileSlotHost::~CompileSlotHost() = default;  // each link asks its worker to quit

void CompileSlotHost::abandon() {
  for (const std::unique_ptr<WorkerLink>& s : slots_) s->abandon();
}

std::vector<pid_t> CompileSlotHost::workerPids() const {
  std::vector<pid_t> out;
  for (const std::unique_ptr<WorkerLink>& s : slots_) out.push_back(s->pid(false));
  return out;
}

std::string CompileSlotHost::compile(int slot, const std::string& frame, double timeoutSeconds) {
  WorkerLink& link = *slots_.at(size_t(slot));
  json request;
  int64_t id = -1;
  auto failed = [&](const std::string& reason) {
    return FrameChannel::encodeFrame({{"type", "failed"}, {"id", id}, {"reason", reason}});
  };
  try {
    std::string blob;
    FrameChannel::decodeFrame(frame, request, blob);
    id = request.value("id", int64_t(-1));
    if (request.value("type", "") != "compile" || id < 0)
      return failed(fmt::format("a '{}' message instead of a compile request", request.value("type", "?")));
  } catch (const std::exception& e) {
    return failed(fmt::format("a malformed compile request: {}", e.what()));
  }
  ++compiled_;
  try {
    WorkerLink::Reply r = link.compile(request, timeoutSeconds);
    if (r.failure.empty()) return FrameChannel::encodeFrame(r.body, r.cubin);
    return failed(r.failure + " (a new worker takes the next candidate)");
  } catch (const std::exception& e) {  // a request without its members, or out of memory
    return failed(e.what());
  }
}

// ---- the pool ---------------------------------------------------------------------------------------

// A local compile worker and the thread in this process that feeds it, or a remote slot and the
// thread that waits for it. Both live as long as the pool, over its batches.
struct CompilePool::Slot {
  std::unique_ptr<WorkerLink> link;  // local
  int local = -1;                    // its number among the local slots (CompileWorkerStart)
  RemoteCompileSlot* remote = nullptr;
  size_t host = 0;  // index into hosts_
  std::thread thread;
};

CompilePool::CompilePool(const Kernel& bound, std::string arch, LaunchLimits limits, std::vector<CompileJob> jobs,
                         CompilePoolOptions options)
    : bound_(bound), arch_(std::move(arch)), limits_(limits), options_(std::move(options)),
      workerStart_(options_.deferWorkers) {
  int local = options_.parallel;
  if (local <= 0)
    local = std::min(16 * std::max(1, options_.measuringDevices), usableCores());
  // Each host's slots in a queue of its own; the slots taken one from each host in turn.
  hosts_.push_back({"local", 0, 0});
  std::vector<std::deque<std::unique_ptr<Slot>>> queues(1);
  for (int i = 0; i < local; ++i) {
    queues[0].push_back(std::make_unique<Slot>());
    queues[0].back()->link = std::make_unique<WorkerLink>(options_.workerPath, options_.log, arch_);
    queues[0].back()->local = i;
  }
  for (const std::shared_ptr<RemoteCompileSlot>& r : options_.remoteSlots) {
    size_t h = 0;
    while (h < hosts_.size() && hosts_[h].host != r->host()) ++h;
    if (h == hosts_.size()) hosts_.push_back({r->host(), 0, 0}), queues.emplace_back();
    queues[h].push_back(std::make_unique<Slot>());
    queues[h].back()->remote = r.get();
    queues[h].back()->host = h;
  }
  // Never more slots than jobs (those the first batch will have, once appended to).
  size_t n = std::max<size_t>({1, jobs.size(), options_.expectedJobs.value_or(0)});
  for (bool any = true; any && slots_.size() < n;) {
    any = false;
    for (std::deque<std::unique_ptr<Slot>>& q : queues)
      if (!q.empty() && slots_.size() < n) {
        ++hosts_[q.front()->host].slots;
        slots_.push_back(std::move(q.front()));
        q.pop_front();
        any = true;
      }
  }
  batch_ = std::make_shared<const Batch>(std::move(jobs));
  start_ = lastFinish_ = Clock::now();
  for (std::unique_ptr<Slot>& s : slots_) s->thread = std::thread([this, slot = s.get()] { runSlot(*slot); });
}

CompilePool::~CompilePool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
    shutdown_.store(true);
  }
  work_.notify_all();
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->link) s->link->abandon();  // its thread sees end of input and reaps the worker
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->thread.joinable()) s->thread.join();
}

void CompilePool::append(std::vector<CompileJob> jobs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (lost_) return;  // a remote host is lost: next() throws its error, nothing more starts
    RTCG_ASSERT(!stopped_, "a compile pool's stopped batch was appended to");
    const Clock::time_point now = Clock::now();
    if (!appended_) {
      start_ = now;  // the batch's throughput counts from its first append
      appended_ = true;
    } else if (batchOver()) {
      idleSeconds_ += std::chrono::duration<double>(now - std::max(lastFinish_, start_)).count();
    }
    auto grown = std::make_shared<Batch>(*batch_);  // slots keep the old one for the jobs they hold
    for (CompileJob& j : jobs) grown->push_back(std::move(j));
    batch_ = std::move(grown);
  }
  work_.notify_all();
}

void CompilePool::add(std::vector<CompileJob> jobs) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    RTCG_ASSERT(done_.empty() && batchOver(), "a compile pool was given a batch before the last one was handed out");
    batch_ = std::make_shared<const Batch>(std::move(jobs));
    laterBatch_ = true;
    nextJob_ = 0;
    stopped_ = false;
    finished_ = 0;
    start_ = lastFinish_ = Clock::now();
    appended_ = false;
    idleSeconds_ = 0;
  }
  work_.notify_all();
}

bool CompilePool::batchOver() const { return busy_ == 0 && (stopped_ || nextJob_ >= batch_->size()); }

// A local slot's job: emitted here, compiled by the slot's worker (or on this thread).
CompiledCandidate CompilePool::compileLocally(Slot& slot, const CompileJob& job, size_t index) {
  CompiledCandidate c;
  if (!emitJob(bound_, job, limits_, c)) return c;
  Clock::time_point t1 = Clock::now();
  WorkerLink::Reply r =
      slot.link->compile(compileRequest(index, bound_.name, arch_, c.module.source), options_.compileTimeoutSeconds);
  c.compileMs = msSince(t1);
  if (!r.failure.empty()) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = r.failure + " (a new worker takes the next candidate)";
    if (options_.log && !shutdown_.load()) options_.log(fmt::format("candidate {}: {}", index, c.reason));
    return c;
  }
  takeBinary(c, binaryOfReply(r.body, r.cubin, index), limits_);
  return c;
}

// Throws what the remote slot throws when its host is lost.
CompiledCandidate CompilePool::compileRemotely(Slot& slot, const CompileJob& job, size_t index) {
  CompiledCandidate c;
  if (!emitJob(bound_, job, limits_, c)) return c;
  Clock::time_point t1 = Clock::now();
  std::string host = slot.remote->host();
  std::optional<std::string> frame =
      slot.remote->exchange(FrameChannel::encodeFrame(compileRequest(index, bound_.name, arch_, c.module.source)),
                            options_.compileTimeoutSeconds, shutdown_);
  c.compileMs = msSince(t1);
  std::string failure;
  CudaCompileResult binary;
  if (!frame) {
    failure = fmt::format("no answer from {} (its compile timeout is {:g} s, and the margin for a slow host "
                          "passed too)", host, options_.compileTimeoutSeconds);
  } else {
    try {
      json reply;
      std::string cubin;
      FrameChannel::decodeFrame(*frame, reply, cubin);
      if (reply.value("type", "") == "failed" && reply.value("id", int64_t(-1)) == int64_t(index))
        failure = fmt::format("on {}: {}", host, reply.at("reason").get<std::string>());
      else
        binary = binaryOfReply(reply, cubin, index);
    } catch (const std::exception& e) {
      failure = fmt::format("{} sent a malformed reply: {}", host, e.what());
    }
  }
  if (!failure.empty()) {
    c.status = CandidateStatus::CompileFailed;
    c.reason = failure;
    if (options_.log && !shutdown_.load()) options_.log(fmt::format("candidate {}: {}", index, c.reason));
    return c;
  }
  takeBinary(c, binary, limits_);
  return c;
}

// A slot's thread: a local one first starts its worker (when CompileWorkerStart lets it; it takes
// no job before), then takes the current batch's next job whenever there is one, until the pool goes
// away (or, for a remote slot, its host is lost).
void CompilePool::runSlot(Slot& slot) {
  if (slot.link) {  // its worker starts as the pool does, or once the start order lets it
    std::unique_lock<std::mutex> lock(mutex_);
    work_.wait(lock, [&] { return shutdown_.load() || workerStart_.mayStart(slot.local); });
  }
  if (slot.link && !shutdown_.load()) {
    slot.link->prepare();
    bool all = false;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      all = ++localStarted_ == hosts_[0].slots;
    }
    if (all && options_.timeline) options_.timeline("compile workers started");
  }
  for (;;) {
    std::shared_ptr<const Batch> batch;
    size_t i = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [&] { return shutdown_.load() || (!stopped_ && nextJob_ < batch_->size()); });
      if (shutdown_.load()) break;
      batch = batch_;
      i = nextJob_++;
      ++busy_;
    }
    const CompileJob& job = (*batch)[i];
    CompiledCandidate c;
    bool lost = false, firstJob = false;
    try {
      c = slot.remote ? compileRemotely(slot, job, i) : compileLocally(slot, job, i);
    } catch (const std::exception& e) {
      if (slot.remote) {  // its host is lost: the pool stops, next() says why
        std::lock_guard<std::mutex> lock(mutex_);
        if (!lost_) lost_ = std::current_exception();
        stopped_ = true;
        lost = true;
      } else {  // e.g. out of memory: the candidate fails, the pool goes on
        c.status = CandidateStatus::CompileFailed;
        c.reason = e.what();
      }
    }
    c.job = i;
    c.label = job.label;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      --busy_;
      if (!lost && !shutdown_.load()) {  // else nobody takes results any more
        done_.push_back(std::move(c));
        ++finished_;
        ++hosts_[slot.host].compiled;
        lastFinish_ = Clock::now();
        firstJob = i == 0 && !laterBatch_;
      }
    }
    if (firstJob && options_.timeline) options_.timeline("job 0 compiled");
    ready_.notify_all();
    if (lost) break;
  }
  if (slot.link) slot.link->quit();
}

std::optional<CompiledCandidate> CompilePool::next() {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait(lock, [&] { return lost_ || !done_.empty() || batchOver(); });
  if (lost_) std::rethrow_exception(lost_);
  if (done_.empty()) return std::nullopt;
  CompiledCandidate c = std::move(done_.front());
  done_.pop_front();
  return c;
}

void CompilePool::startDeferredWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);  // a slot checks the start order under it, then waits
    workerStart_.release();
  }
  work_.notify_all();
}

void CompilePool::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  ready_.notify_all();  // a batch with nothing compiling is over now
}

bool CompilePool::usedFallback() const {
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->link && s->link->fellBack()) return true;
  return false;
}

int CompilePool::workerRestarts() const {
  int restarts = 0;
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->link) restarts += s->link->restarts();
  return restarts;
}

std::vector<pid_t> CompilePool::workerPids(bool busyOnly) const {
  std::vector<pid_t> out;
  for (const std::unique_ptr<Slot>& s : slots_) out.push_back(s->link ? s->link->pid(busyOnly) : -1);
  return out;
}

std::vector<CompileHostCount> CompilePool::hosts() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hosts_;
}

int64_t CompilePool::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

double CompilePool::seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::max(0.0, std::chrono::duration<double>(lastFinish_ - start_).count() - idleSeconds_);
}

double CompilePool::throughput() const {
  double s = seconds();
  std::lock_guard<std::mutex> lock(mutex_);
  return s > 0 ? double(finished_) / s : 0.0;
}

}  // namespace rtcg
