// MPI for rtcgc's MPI mode (MpiTune.h): messages of bytes between ranks, safe from several threads
// (every call under one lock, so MPI_THREAD_SERIALIZED suffices) and never blocking while it holds
// the lock (sends and receives poll), and what rank 0 knows of the other ranks (their last word,
// their state, which are lost). Only in a build with MPI.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace rtcgc::mpi {

enum Tag : int {
  kRequest = 1,  // rank -> 0: the next key, please (with the last key's result)
  kJob,          // 0 -> rank: a key to tune, or none left
  kState,        // rank -> 0: once a second, what it is doing
  kSetup,        // 0 -> rank: set up a measuring worker (setup frame)
  kSetupReply,   // rank -> 0: ready, or why not
  kCandidate,    // 0 -> rank: a candidate frame to measure
  kOutcome,      // rank -> 0: its outcome and result frame
  kEnd,          // 0 -> rank: the run is over
  kRelayDone,    // rank -> 0: after kEnd of a single search, its compile relay has stopped
  kReference,    // 0 -> rank: the reference outputs' bytes, before the first candidate
  // Compile slot s of a rank (MpiTune.cpp's CompileRelay): rank 0 sends it compile frames with tag
  // kCompileFrames + 2s, the rank answers with kCompileFrames + 2s + 1.
  kCompileFrames = 1000,
};
constexpr int kMaxCompileSlots = 4096;  // per rank, so that every tag stays below MPI's least bound (32767)

struct Received {
  int source = -1, tag = -1;
  std::string bytes;
};

class Comm {
 public:
  // MPI_Init_thread (wanting MPI_THREAD_MULTIPLE, needing SERIALIZED); errors return instead of
  // aborting the job. Throws rtcg::Error when MPI gives less.
  Comm();
  ~Comm();  // MPI_Finalize, unless finalize(false) said not to
  int rank() const { return rank_; }
  int size() const { return size_; }
  int localRank() const { return localRank_; }  // among the ranks of this node
  int localSize() const { return localSize_; }  // the ranks of this node
  const std::string& host() const { return host_; }

  // Returns true once the bytes are sent; false when `giveUp` (asked while waiting) says to stop
  // waiting (the destination is lost: a large message is never taken), the send then left to MPI.
  bool send(int dest, int tag, const std::string& bytes, const std::function<bool()>& giveUp = {});
  // A message from `source` (MPI_ANY_SOURCE) with `tag` (MPI_ANY_TAG), if one is waiting.
  std::optional<Received> tryReceive(int source, int tag);
  // Collectives, from the main thread only, before other threads use MPI.
  std::string broadcast(std::string bytes, int root = 0);
  std::vector<std::string> gather(const std::string& bytes);  // at rank 0; empty elsewhere
  // When a rank was lost, MPI_Finalize may wait for it forever: the process then ends without it.
  void skipFinalize() { finalize_ = false; }

 private:
  std::mutex mutex_;
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
  std::string host_;
  bool finalize_ = true;
};

// Several byte strings in one message (u64 length, bytes; repeated).
std::string pack(const std::vector<std::string>& parts);
// Throws rtcg::Error for bytes that are not such a message.
std::vector<std::string> unpack(const std::string& bytes);

// What rank 0 knows of every rank: when it last heard from it, its state, whether it is lost.
class Ranks {
 public:
  explicit Ranks(int size);
  void heard(int rank, const nlohmann::json& state = nullptr);
  // Ranks (not 0, not lost) silent for more than `seconds`.
  std::vector<int> silent(double seconds);
  void lose(int rank);
  bool lost(int rank);
  bool anyLost();
  // "0 matmul (n=512) 12/40 best 0.41 ms | 1 idle | 2 lost", from the states they sent.
  std::string summary();

 private:
  using Clock = std::chrono::steady_clock;
  std::mutex mutex_;
  std::vector<Clock::time_point> lastHeard_;
  std::vector<nlohmann::json> state_;
  std::vector<bool> lost_;
};

}  // namespace rtcgc::mpi
