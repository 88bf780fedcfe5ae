// The protocol between the tuner (parent) and its measuring worker process (tools/rtcg-worker).
//
// Transport: one connected AF_UNIX stream socket; the worker has its end on both stdin (fd 0) and
// stdout (fd 1). A socket rather than two pipes so that the parent writes with MSG_NOSIGNAL and a
// dead worker shows up as EPIPE, never as a SIGPIPE in the user's process.
//
// Framing: every message is one frame
//
//     "RTCG" | u32 jsonBytes | u64 blobBytes | JSON object (jsonBytes of UTF-8) | blob (raw bytes)
//
// with little-endian integers. The JSON object has a "type" member naming the message; only the
// "candidate" message has a blob (the cubin). Limits (kMaxJsonBytes, kMaxBlobBytes) keep garbage
// from being read as a huge length. A malformed frame (bad magic, bad lengths, invalid JSON,
// missing or mistyped member) throws ProtocolError saying what was wrong; it never crashes.
//
// Conversation:
//   parent -> setup                 worker -> ready | error        (once per worker process)
//   parent -> candidate             worker -> progress? then result (per candidate, in turn)
//   parent -> quit                  worker exits 0
// The worker sends `progress` after the verifying launch, so the parent can extend its deadline
// for the timing runs of a slow (but not hung) kernel. A result with `fatal` set means the
// worker's CUDA context is unusable (a sticky error such as an illegal address): the worker exits
// right after sending it and the parent starts a new one.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "codegen/Emitter.h"
#include "support/Error.h"

namespace rtcg::worker {

constexpr uint32_t kMaxJsonBytes = 64u << 20;     // 64 MiB (DSL sources are small)
constexpr uint64_t kMaxBlobBytes = 1ull << 31;    // 2 GiB (cubins are far smaller)
constexpr size_t kHeaderBytes = 16;

class ProtocolError : public Error {
 public:
  using Error::Error;
};

struct InputChecksum {  // of one input array, so the worker can prove it filled the same inputs
  std::string name;
  double sum = 0, sumSquares = 0;
};

struct SetupMessage {
  std::string fileName, source, kernel;
  std::map<std::string, int64_t> sizes;
  std::map<std::string, double> scalars;  // runtime scalar arguments by name
  uint64_t seed = 1;                      // for fillInputs
  std::map<std::string, std::string> inputFiles;  // arrays loaded from files after it (TuneOptions)
  std::vector<InputChecksum> inputs;      // expected checksums of the in/inout arrays
  std::string referencePath;              // file with the reference outputs (writeReferenceFile)
  int deviceOrdinal = 0;
  int warmup = 2, repeats = 20;
  bool flushL2 = true;
  double timingBudgetSeconds = 2;  // the worker lowers repeats (to >= 3) so timing takes about this long
  std::string precision = "ieee";  // the policy the tolerances follow (verificationTolerance)
};

struct ReadyMessage {
  std::string device, arch;
  int driverVersion = 0;
  double setupSeconds = 0;
};

struct ErrorMessage {  // setup failed; the worker exits after sending it
  std::string message;
  bool noDevice = false;
};

struct CandidateMessage {
  int64_t id = 0;
  std::vector<LaunchSpec> launches;
  std::string cubin;  // the blob
  // Racing: a candidate whose verifying launch takes longer than this is timed once instead of
  // `repeats` times (it cannot win); 0: always timed in full. The tuner sends a multiple of the
  // best median so far.
  double raceMs = 0;
  // And one whose first timed run (after the warm-up, on a flushed L2) takes longer than this is
  // not timed further; 0: no such race. The tuner sends 1.5 times the best median so far.
  double raceTimedMs = 0;
  // And one whose first cuda::kCloseRaceRuns timed runs all take longer than this stops there
  // (cuda::BenchmarkOptions::closeRaceMs); 0: no such race. The tuner sends 1.15 times the best.
  double raceCloseMs = 0;
};

struct ProgressMessage {
  int64_t id = 0;
  double firstLaunchMs = 0;  // wall time of the verifying launch (module loading included)
  int warmup = 0, repeats = 0;  // the timing runs that follow
};

enum class Outcome { Verified, WrongResult, LaunchFailed, Faulted };
const char* outcomeName(Outcome o);  // "verified", "wrong", "launch_failed", "faulted"

struct ResultMessage {
  int64_t id = 0;
  Outcome outcome = Outcome::Verified;
  std::string reason;          // for failures; for wrong results the comparison per output
  double medianMs = 0, minMs = 0;
  int repeats = 0;
  double relativeError = 0;    // worst over outputs
  int registers = 0, localBytes = 0, sharedBytes = 0;  // max over the launches
  double occupancy = 0;        // min over the launches (0..1)
  // A module of several launches that did not lose the timed race: each launch timed alone, in
  // order (median, as medianMs): where its time goes. Empty otherwise.
  std::vector<double> launchMs;
  bool fatal = false;          // the worker exits after this reply
};

struct QuitMessage {};

using Message = std::variant<SetupMessage, ReadyMessage, ErrorMessage, CandidateMessage, ProgressMessage,
                             ResultMessage, QuitMessage>;

const char* messageType(const Message& m);  // "setup", "ready", ...

// One frame holding `m`.
std::string encode(const Message& m);

// Decodes the frame at the start of `buffer`. Returns nullopt when the buffer holds only part of a
// frame (read more); otherwise the message, with `consumed` set to the frame's size. Throws
// ProtocolError for a malformed frame.
std::optional<Message> decode(std::string_view buffer, size_t& consumed);

// Blocking I/O of whole frames on a file descriptor.
class Channel {
 public:
  explicit Channel(int fd) : fd_(fd) {}
  int fd() const { return fd_; }

  // Writes one frame. Returns false when the peer is gone (EPIPE, ECONNRESET); never raises
  // SIGPIPE on a socket. Throws rtcg::Error for other write errors.
  bool send(const Message& m);

  enum class Status { Message, Eof, Timeout };
  struct Received {
    Status status = Status::Eof;
    std::optional<Message> message;
  };
  // Reads the next frame, waiting at most `timeoutSeconds` (< 0: forever) in total. Eof when the
  // peer closed the connection (a partial frame before the close is a ProtocolError). Throws
  // ProtocolError for a malformed frame.
  Received receive(double timeoutSeconds = -1);

 private:
  int fd_;
  std::string buffer_;
};

// The reference outputs file: the float64 values of every written array, in parameter order.
// Layout: "RTCGREF1" | u32 outputs | per output: i32 param, u64 count, count x f64 (little endian).
// A sampled reference (some array with a `checked` mask) or one with exact integers (some array
// with `integers`) is written as "RTCGREF4": per output i32 param, u8 integer (0 or 1), u64 count,
// u8 masked (0 or 1), when masked u64 runs and that many (u64 start, u64 length) runs of checked
// elements (ascending, apart), then the values of the runs' elements (all count when not masked)
// as f64, or i64 exact integers. Only the sample travels: a sampled GEMM's reference is 1/64 of
// its outputs. Read back, an unchecked element is NaN (an integer output's 0).
struct ReferenceArray {
  int param = -1;
  std::vector<double> values;
  std::vector<uint8_t> checked;  // empty: every element has its reference value
  std::vector<int64_t> integers;  // an integer output's exact values (then `values` is empty)
};
void writeReferenceFile(const std::string& path, const std::vector<ReferenceArray>& outputs);
// Throws rtcg::Error naming the file for a missing, truncated or malformed file.
std::vector<ReferenceArray> readReferenceFile(const std::string& path);

}  // namespace rtcg::worker
