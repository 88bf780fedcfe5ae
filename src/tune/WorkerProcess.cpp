#include "tune/WorkerProcess.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "support/Error.h"

extern char** environ;

namespace rtcg {

namespace fs = std::filesystem;
using namespace worker;

namespace {

bool isExecutableFile(const fs::path& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// Where an installed rtcg-worker lies seen from the rtcg library: librtcg.so's folder (or, linked
// statically, the application's) and the relative path from the install's lib folder to its bin
// folder; then the install prefix configured at build time (src/tune/CMakeLists.txt).
std::vector<fs::path> installedWorkerPaths() {
  std::vector<fs::path> out;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&findWorker), &info) && info.dli_fname && *info.dli_fname)
    out.push_back(fs::absolute(info.dli_fname).parent_path() / RTCG_LIB_TO_BIN / "rtcg-worker");
  out.push_back(fs::path(RTCG_INSTALL_BINDIR) / "rtcg-worker");
  return out;
}

std::string signalText(int sig) {
  const char* name = strsignal(sig);
  return name ? fmt::format("{} ({})", sig, name) : std::to_string(sig);
}

}  // namespace

std::string findWorker(const std::string& explicitPath) {
  if (!explicitPath.empty()) {
    if (isExecutableFile(explicitPath)) return explicitPath;
    throw Error(fmt::format("the worker '{}' is not an executable file", explicitPath));
  }
  if (const char* env = std::getenv("RTCG_WORKER"); env && *env) {
    if (isExecutableFile(env)) return env;
    throw Error(fmt::format("RTCG_WORKER='{}' is not an executable file", env));
  }
  std::vector<fs::path> looked;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path dir = self.parent_path();
    // Installed: next to rtcgc. Build tree: tools/rtcgc/ and tools/rtcg-worker/ are siblings, and
    // test binaries live in tests/<area>/.
    for (fs::path p : {dir / "rtcg-worker", dir / ".." / "rtcg-worker" / "rtcg-worker",
                       dir / ".." / ".." / "tools" / "rtcg-worker" / "rtcg-worker"}) {
      p = p.lexically_normal();
      if (isExecutableFile(p)) return p.string();
      looked.push_back(p);
    }
  }
  for (fs::path p : installedWorkerPaths()) {
    p = p.lexically_normal();
    if (isExecutableFile(p)) return p.string();
    looked.push_back(p);
  }
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::string_view rest(path);
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
      if (dir.empty()) continue;
      fs::path p = fs::path(dir) / "rtcg-worker";
      if (isExecutableFile(p)) return p.string();
    }
  }
  std::string where;
  for (const fs::path& p : looked) where += fmt::format("{}, ", p.string());
  throw Error(fmt::format("cannot find rtcg-worker, the tuner's measuring process: looked at {}and on PATH; build "
                          "the rtcg-worker target, or set RTCG_WORKER (TuneOptions::workerPath) to its path",
                          where));
}

ChildProcess spawnChild(const std::string& path, const std::vector<std::string>& args) {
  ChildProcess child;
  const char* tmpdir = std::getenv("TMPDIR");
  std::string tmpl = fmt::format("{}/rtcg-worker-stderr-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  child.stderrFd = ::mkostemp(tmpl.data(), O_CLOEXEC);
  if (child.stderrFd < 0)
    throw Error(fmt::format("cannot create a file for the stderr of '{}': {}", path, std::strerror(errno)));
  ::unlink(tmpl.c_str());

  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    int err = errno;
    ::close(child.stderrFd);
    throw Error(fmt::format("cannot create the socket for '{}': {}", path, std::strerror(err)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDIN_FILENO);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, sv[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, child.stderrFd, STDERR_FILENO);
  std::vector<std::string> argStore{path};
  argStore.insert(argStore.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argStore) argv.push_back(a.data());
  argv.push_back(nullptr);
  int rc = ::posix_spawn(&child.pid, path.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    ::close(child.stderrFd);
    throw Error(fmt::format("cannot start '{}': {}", path, std::strerror(rc)));
  }
  child.fd = sv[0];
  return child;
}

std::string endChild(ChildProcess& child, bool kill) {
  if (child.pid <= 0) return "not running";
  if (kill) ::kill(child.pid, SIGKILL);
  if (child.fd >= 0) ::close(child.fd);  // a live child reads end of input and exits
  child.fd = -1;
  int status = 0;
  pid_t r = 0;
  for (int i = 0; i < 200 && (r = ::waitpid(child.pid, &status, WNOHANG)) == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (r == 0) {
    ::kill(child.pid, SIGKILL);
    r = ::waitpid(child.pid, &status, 0);
  }
  pid_t pid = child.pid;
  child.pid = -1;
  if (r != pid) return "its exit status is unknown";
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by signal {}", signalText(WTERMSIG(status)));
  return "ended";
}

std::string childStderrTail(int stderrFd) {
  if (stderrFd < 0) return "";
  off_t size = ::lseek(stderrFd, 0, SEEK_END);
  if (size <= 0) return "";
  off_t from = std::max<off_t>(0, size - 800);
  std::string text(size_t(size - from), '\0');
  ssize_t n = ::pread(stderrFd, text.data(), text.size(), from);
  if (n <= 0) return "";
  text.resize(size_t(n));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  if (from > 0) {
    size_t nl = text.find('\n');
    text = "..." + (nl == std::string::npos ? text : text.substr(nl + 1));
  }
  std::replace(text.begin(), text.end(), '\n', ' ');
  return "; its stderr ends: " + text;
}

WorkerProcess::WorkerProcess(std::string path, SetupMessage setup, WorkerTimeouts timeouts, Log log)
    : path_(std::move(path)), setup_(std::move(setup)), timeouts_(timeouts), log_(std::move(log)) {
  start();
}

WorkerProcess::~WorkerProcess() {
  if (child_.pid > 0) {
    try {
      channel_->send(QuitMessage{});
    } catch (...) {
    }
    stop(false);
  }
  if (child_.stderrFd >= 0) ::close(child_.stderrFd);
}

WorkerProcess::WorkerProcess(std::string path, int deviceOrdinal, WorkerTimeouts timeouts, Log log)
    : path_(std::move(path)), timeouts_(timeouts), log_(std::move(log)) {
  setup_.deviceOrdinal = deviceOrdinal;
  spawn();
}

void WorkerProcess::setUp(SetupMessage setup) {
  if (setUp_) throw InternalError("a measuring worker was set up twice");
  setup_ = std::move(setup);
  if (child_.pid <= 0) return start();  // cannot happen: spawn() threw, or the process is there
  handshake();
}

void WorkerProcess::start() {
  spawn();
  handshake();
}

void WorkerProcess::spawn() {
  if (child_.stderrFd >= 0) ::close(child_.stderrFd);
  child_ = ChildProcess{};
  // Its device on the command line: the worker creates its context before the setup arrives.
  std::vector<std::string> args{"--serve"};
  if (setup_.deviceOrdinal >= 0) args.insert(args.end(), {"--device", std::to_string(setup_.deviceOrdinal)});
  child_ = spawnChild(path_, args);  // throws "cannot start '<path>': ..."
  channel_ = std::make_unique<Channel>(child_.fd);
  if (log_) log_(fmt::format("worker {} started ({})", child_.pid, path_));
}

void WorkerProcess::handshake() {
  setUp_ = true;
  auto failed = [&](const std::string& what, bool kill) {
    std::string how = stop(kill);
    return Error(fmt::format("the worker '{}' failed during setup: it {} ({}){}", path_, what, how, stderrTail()));
  };
  if (!channel_->send(setup_)) throw failed("closed its connection", false);
  Channel::Received in;
  try {
    in = channel_->receive(timeouts_.setupSeconds);
  } catch (const ProtocolError& e) {
    throw failed(fmt::format("sent a malformed reply: {}", e.what()), true);
  }
  if (in.status == Channel::Status::Eof) throw failed("closed its connection", false);
  if (in.status == Channel::Status::Timeout)
    throw failed(fmt::format("did not answer within {:g} s and was killed", timeouts_.setupSeconds), true);
  if (auto* e = std::get_if<ErrorMessage>(&*in.message)) {
    stop(false);
    if (e->noDevice) throw NoDeviceError(e->message);
    throw Error("the tuner's worker could not set up: " + e->message);
  }
  auto* ready = std::get_if<ReadyMessage>(&*in.message);
  if (!ready) throw failed(fmt::format("sent a '{}' message instead of 'ready'", messageType(*in.message)), true);
  ready_ = *ready;
  if (log_) log_(fmt::format("worker {} ready on {} ({}) after {:.2f} s of setup", child_.pid, ready_.device, ready_.arch,
                             ready_.setupSeconds));
}

std::string WorkerProcess::stop(bool kill) {
  channel_.reset();
  return endChild(child_, kill);
}

MeasureOutcome WorkerProcess::measure(const CandidateMessage& c) {
  if (!setUp_) throw InternalError("a measuring worker was given a candidate before its setup");
  for (int attempt = 0;; ++attempt) {
    if (child_.pid <= 0) {
      ++restarts_;
      start();  // throws when the worker cannot be started any more
    }
    if (channel_->send(c)) break;
    // The worker died between candidates (after its last reply): start another and retry once.
    std::string how = stop(false);
    if (log_) log_(fmt::format("the worker {} before candidate {} was sent{}", how, c.id, stderrTail()));
    if (attempt == 1) throw Error(fmt::format("the worker keeps dying before it gets a candidate ({})", how));
  }

  MeasureOutcome out;
  auto failure = [&](CandidateStatus s, std::string reason) {
    out.status = s;
    out.reason = std::move(reason);
    if (log_) log_(fmt::format("candidate {}: {}: {}", c.id, statusName(s), out.reason));
    return out;
  };
  double timeout = timeouts_.candidateSeconds;
  bool timing = false;
  for (;;) {
    Channel::Received in;
    try {
      in = channel_->receive(timeout);
    } catch (const ProtocolError& e) {
      std::string how = stop(true);
      return failure(CandidateStatus::Faulted, fmt::format("the worker sent a malformed reply ({}) and was stopped "
                                                           "({}){}", e.what(), how, stderrTail()));
    }
    if (in.status == Channel::Status::Eof) {
      std::string how = stop(false);
      return failure(CandidateStatus::Faulted,
                     fmt::format("the worker {} while running the candidate{}", how, stderrTail()));
    }
    if (in.status == Channel::Status::Timeout) {
      stop(true);
      return failure(CandidateStatus::TimedOut,
                     fmt::format("no {} within {:.1f} s (the kernel hangs or is far too slow); the worker was killed",
                                 timing ? "timing result" : "result of the verifying launch", timeout));
    }
    if (auto* p = std::get_if<ProgressMessage>(&*in.message); p && p->id == c.id) {
      // The timing runs take about (warm-up + repeats) times the verifying launch: allow 3x that.
      timing = true;
      timeout = timeouts_.candidateSeconds + 3.0 * (p->warmup + p->repeats) * std::max(p->firstLaunchMs, 0.01) / 1e3;
      continue;
    }
    auto* r = std::get_if<ResultMessage>(&*in.message);
    if (!r || r->id != c.id) {
      std::string what = r ? fmt::format("a result for candidate {}", r->id)
                           : fmt::format("a '{}' message", messageType(*in.message));
      std::string how = stop(true);
      return failure(CandidateStatus::Faulted,
                     fmt::format("the worker sent {} instead of the result of candidate {} and was stopped ({})", what,
                                 c.id, how));
    }
    out.result = *r;
    out.reason = r->reason;
    switch (r->outcome) {
      case Outcome::Verified: out.status = CandidateStatus::Verified; break;
      case Outcome::WrongResult: out.status = CandidateStatus::WrongResult; break;
      case Outcome::LaunchFailed: out.status = CandidateStatus::LaunchFailed; break;
      case Outcome::Faulted: out.status = CandidateStatus::Faulted; break;
    }
    if (r->fatal) {
      std::string how = stop(false);
      if (log_) log_(fmt::format("candidate {} faulted ({}); the worker {} and will be restarted", c.id, r->reason, how));
    }
    return out;
  }
}

std::string encodeOutcome(const MeasureOutcome& outcome, int restarts) {
  std::string head =
      nlohmann::json{{"status", statusName(outcome.status)}, {"reason", outcome.reason}, {"restarts", restarts}}.dump();
  uint32_t n = uint32_t(head.size());
  std::string out(reinterpret_cast<const char*>(&n), sizeof n);
  return out + head + worker::encode(outcome.result);
}

MeasureOutcome decodeOutcome(const std::string& bytes, int* restarts) {
  uint32_t n = 0;
  if (bytes.size() < sizeof n) throw worker::ProtocolError("a measurement's outcome: too short");
  std::memcpy(&n, bytes.data(), sizeof n);
  if (bytes.size() - sizeof n < n) throw worker::ProtocolError("a measurement's outcome: truncated");
  MeasureOutcome o;
  try {
    nlohmann::json head = nlohmann::json::parse(bytes.substr(sizeof n, n));
    std::optional<CandidateStatus> status = parseStatus(head.at("status").get<std::string>());
    if (!status) throw worker::ProtocolError("a measurement's outcome: unknown status " + head.at("status").dump());
    o.status = *status;
    o.reason = head.at("reason").get<std::string>();
    if (restarts) *restarts = head.at("restarts").get<int>();
  } catch (const nlohmann::json::exception& e) {
    throw worker::ProtocolError(std::string("a measurement's outcome: ") + e.what());
  }
  size_t consumed = 0;
  std::optional<worker::Message> frame = worker::decode(std::string_view(bytes).substr(sizeof n + n), consumed);
  if (!frame || !std::holds_alternative<worker::ResultMessage>(*frame))
    throw worker::ProtocolError("a measurement's outcome holds no result frame");
  o.result = std::get<worker::ResultMessage>(*frame);
  return o;
}

}  // namespace rtcg
