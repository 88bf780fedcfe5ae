#include "MpiComm.h"

#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <cstring>
#include <thread>

#include "support/Error.h"

namespace rtcgc::mpi {

namespace {

constexpr auto kPoll = std::chrono::milliseconds(1);

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw rtcg::Error(fmt::format("MPI: {} failed: {}", what, std::string(text, size_t(length))));
}

}  // namespace

Comm::Comm() {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    throw rtcg::Error("MPI: this MPI library offers no thread support (MPI_THREAD_SERIALIZED is needed)");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  MPI_Comm node;
  check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  MPI_Comm_rank(node, &localRank_);
  MPI_Comm_size(node, &localSize_);
  MPI_Comm_free(&node);
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  host_ = name;
}

Comm::~Comm() {
  if (finalize_) MPI_Finalize();
}

bool Comm::send(int dest, int tag, const std::string& bytes, const std::function<bool()>& giveUp) {
  MPI_Request request;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    check(MPI_Isend(bytes.data(), int(bytes.size()), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &request), "MPI_Isend");
  }
  for (;;) {
    int done = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      check(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    }
    if (done) return true;
    if (giveUp && giveUp()) {
      std::lock_guard<std::mutex> lock(mutex_);
      MPI_Request_free(&request);
      return false;
    }
    std::this_thread::sleep_for(kPoll);
  }
}

std::optional<Received> Comm::tryReceive(int source, int tag) {
  std::lock_guard<std::mutex> lock(mutex_);
  int flag = 0;
  MPI_Status status;
  check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
  if (!flag) return std::nullopt;
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  Received r;
  r.source = status.MPI_SOURCE;
  r.tag = status.MPI_TAG;
  r.bytes.resize(size_t(count));
  check(MPI_Recv(r.bytes.data(), count, MPI_BYTE, r.source, r.tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
  return r;
}

std::string Comm::broadcast(std::string bytes, int root) {
  uint64_t size = bytes.size();
  check(MPI_Bcast(&size, 1, MPI_UINT64_T, root, MPI_COMM_WORLD), "MPI_Bcast");
  bytes.resize(size);
  check(MPI_Bcast(bytes.data(), int(size), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  return bytes;
}

std::vector<std::string> Comm::gather(const std::string& bytes) {
  int mine = int(bytes.size());
  std::vector<int> sizes(static_cast<size_t>(size_), 0), offsets(static_cast<size_t>(size_), 0);
  check(MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather");
  std::string all;
  if (rank_ == 0) {
    int total = 0;
    for (int r = 0; r < size_; ++r) offsets[size_t(r)] = total, total += sizes[size_t(r)];
    all.resize(size_t(total));
  }
  check(MPI_Gatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE, 0,
                    MPI_COMM_WORLD),
        "MPI_Gatherv");
  std::vector<std::string> out;
  if (rank_ == 0)
    for (int r = 0; r < size_; ++r) out.push_back(all.substr(size_t(offsets[size_t(r)]), size_t(sizes[size_t(r)])));
  return out;
}

std::string pack(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) {
    uint64_t n = p.size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += p;
  }
  return out;
}

std::vector<std::string> unpack(const std::string& bytes) {
  std::vector<std::string> parts;
  for (size_t at = 0; at < bytes.size();) {
    uint64_t n = 0;
    if (bytes.size() - at < sizeof n) throw rtcg::Error("MPI: a truncated message");
    std::memcpy(&n, bytes.data() + at, sizeof n);
    at += sizeof n;
    if (bytes.size() - at < n) throw rtcg::Error("MPI: a truncated message");
    parts.push_back(bytes.substr(at, n));
    at += n;
  }
  return parts;
}

Ranks::Ranks(int size) : lastHeard_(size_t(size), Clock::now()), state_(size_t(size)), lost_(size_t(size), false) {}

void Ranks::heard(int rank, const nlohmann::json& state) {
  std::lock_guard<std::mutex> lock(mutex_);
  lastHeard_[size_t(rank)] = Clock::now();
  if (!state.is_null()) state_[size_t(rank)] = state;
}

std::vector<int> Ranks::silent(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int> out;
  for (size_t r = 1; r < lastHeard_.size(); ++r)
    if (!lost_[r] && std::chrono::duration<double>(Clock::now() - lastHeard_[r]).count() > seconds)
      out.push_back(int(r));
  return out;
}

void Ranks::lose(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  lost_[size_t(rank)] = true;
}

bool Ranks::lost(int rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  return lost_[size_t(rank)];
}

bool Ranks::anyLost() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (bool l : lost_)
    if (l) return true;
  return false;
}

std::string Ranks::summary() {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (size_t r = 0; r < state_.size(); ++r) {
    const nlohmann::json& s = state_[r];
    std::string what = "starting";
    if (lost_[r]) {
      what = "lost";
    } else if (s.is_object()) {
      what = s.value("what", "idle");
      if (s.value("generated", int64_t(0)) > 0)
        what += fmt::format(" {}/{}", s.value("measured", int64_t(0)), s.value("generated", int64_t(0)));
      if (s.value("bestMs", 0.0) > 0) what += fmt::format(" best {:.4f} ms", s.value("bestMs", 0.0));
    }
    out += fmt::format("{}{} {}", out.empty() ? "" : " | ", r, what);
  }
  return out;
}

}  // namespace rtcgc::mpi
