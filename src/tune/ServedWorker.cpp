#include "tune/ServedWorker.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "support/Error.h"

namespace rtcg {

namespace {

// Writes `bytes` to the open file `fd` and closes it; removes `path` and throws when it cannot.
void writeAll(int fd, const std::string& path, const std::string& bytes) {
  for (size_t at = 0; at < bytes.size();) {
    ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n <= 0) {
      std::string why = std::strerror(errno);
      ::close(fd);
      ::unlink(path.c_str());
      throw Error(fmt::format("cannot write the reference outputs to '{}': {}", path, why));
    }
    at += size_t(n);
  }
  ::close(fd);
}

// The reference outputs' bytes in a new temporary file; its path.
std::string writeTemporary(const std::string& bytes) {
  const char* tmpdir = std::getenv("TMPDIR");
  std::string path = fmt::format("{}/rtcg-served-reference-XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
  int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot create a temporary file for the reference outputs: {}", std::strerror(errno)));
  writeAll(fd, path, bytes);
  return path;
}

template <typename T>
T decodeAs(const std::string& frame, const char* what) {
  size_t consumed = 0;
  std::optional<worker::Message> m = worker::decode(frame, consumed);
  if (!m || !std::holds_alternative<T>(*m) || consumed != frame.size())
    throw worker::ProtocolError(fmt::format("expected one {} frame", what));
  return std::get<T>(*m);
}

}  // namespace

ServedWorker::ServedWorker(const std::string& setupFrame, const std::string& reference, int deviceOrdinal,
                           const std::string& workerPath, WorkerProcess::Log log,
                           std::unique_ptr<WorkerProcess> started) {
  setup_ = decodeAs<worker::SetupMessage>(setupFrame, "setup");
  referencePath_ = writeTemporary(reference);
  setup_.referencePath = referencePath_;
  setup_.deviceOrdinal = deviceOrdinal;
  try {
    if (started) {
      started->setUp(setup_);
      worker_ = std::move(started);
    } else {
      worker_ = std::make_unique<WorkerProcess>(findWorker(workerPath), setup_, WorkerTimeouts{}, std::move(log));
    }
  } catch (...) {
    ::unlink(referencePath_.c_str());
    throw;
  }
}

ServedWorker::~ServedWorker() {
  worker_.reset();
  ::unlink(referencePath_.c_str());
}

void ServedWorker::setReference(const std::string& reference) {
  int fd = ::open(referencePath_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
  if (fd < 0) throw Error(fmt::format("cannot write the reference outputs to '{}': {}", referencePath_, std::strerror(errno)));
  writeAll(fd, referencePath_, reference);
}

std::string ServedWorker::measure(const std::string& candidateFrame) {
  MeasureOutcome o = worker_->measure(decodeAs<worker::CandidateMessage>(candidateFrame, "candidate"));
  return encodeOutcome(o, worker_->restarts());
}

}  // namespace rtcg
