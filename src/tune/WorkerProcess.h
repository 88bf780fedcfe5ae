// The parent's side of the measuring worker: finding the executable, starting it with
// posix_spawn (the parent has compile threads, so no fork), the setup handshake, one candidate at
// a time with a deadline, and recovery: a worker that dies, hangs or talks garbage is killed (if
// needed), the candidate gets a failure outcome with the reason, and the next candidate starts a
// fresh worker (which re-does setup).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/TuningDb.h"
#include "tune/WorkerProtocol.h"

namespace rtcg {

// The worker executable: `explicitPath` when given (must be an executable file), else
// $RTCG_WORKER, else `rtcg-worker` next to the running executable (/proc/self/exe) or in the
// build tree's tools/rtcg-worker folder beside it, else on PATH. Throws rtcg::Error listing the
// places it looked.
std::string findWorker(const std::string& explicitPath = "");

// A helper process (the measuring worker, or a compile worker of tune/CompilePool.h) with one end
// of a socket on its stdin and stdout and its stderr in an unlinked temporary file.
struct ChildProcess {
  pid_t pid = -1;
  int fd = -1;        // the parent's end of the socket (close-on-exec)
  int stderrFd = -1;  // the child's stderr, readable with childStderrTail
};

// Starts `path` with `args` (argv[1...]) by posix_spawn: safe in a process with threads. Throws
// rtcg::Error when the socket, the stderr file or the process cannot be created.
ChildProcess spawnChild(const std::string& path, const std::vector<std::string>& args);

// Ends the child: SIGKILL first when `kill`; otherwise closing the socket lets a live child read
// end of input and exit (SIGKILL after 2 s if it does not). Reaps it, closes the socket (not the
// stderr file) and sets pid and fd to -1. Returns how it ended ("exited with status 3", "killed
// by signal 9 (Killed)").
std::string endChild(ChildProcess& child, bool kill);

// "; its stderr ends: ..." with the last few hundred bytes of the child's stderr, or "".
std::string childStderrTail(int stderrFd);

struct WorkerTimeouts {
  double setupSeconds = 300;     // spawn to `ready` (inputs upload; large problems take a while)
  double candidateSeconds = 10;  // to the verifying launch's progress message, and slack for timing
};

// What became of one candidate.
struct MeasureOutcome {
  CandidateStatus status = CandidateStatus::Verified;
  std::string reason;
  worker::ResultMessage result;  // meaningful for Verified (and for the counters of the others)
};

// An outcome as bytes, for a worker of another process (rtcgc tune under MPI, rtcg.tune under
// mpiexec): the status, reason and the worker's restarts as JSON, then the result frame.
std::string encodeOutcome(const MeasureOutcome& outcome, int restarts);
// Throws worker::ProtocolError for bytes that are not such an outcome.
MeasureOutcome decodeOutcome(const std::string& bytes, int* restarts = nullptr);

class WorkerProcess {
 public:
  using Log = std::function<void(const std::string&)>;

  // Starts the worker and completes setup. Throws NoDeviceError when the worker reports no
  // device, rtcg::Error when it cannot be started or fails setup (with its message, or its exit
  // status and the tail of its stderr).
  WorkerProcess(std::string path, worker::SetupMessage setup, WorkerTimeouts timeouts, Log log = {});
  // Starts the worker without its setup, on `deviceOrdinal`: it creates its CUDA context (the
  // slowest part of its setup) while the caller computes what the setup carries; setUp() completes
  // the start. Throws rtcg::Error when the process cannot be started.
  WorkerProcess(std::string path, int deviceOrdinal, WorkerTimeouts timeouts, Log log = {});
  ~WorkerProcess();  // asks the worker to quit; kills it if it does not within a second
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // The setup of a worker started without one (the constructor above), and the wait for `ready`;
  // throws as the first constructor does. Once only, before any candidate.
  void setUp(worker::SetupMessage setup);

  // Measures one candidate (its id, launches and cubin), restarting the worker first if the last
  // one died. Never throws for what a candidate does; throws rtcg::Error when a new worker cannot
  // be started (the search cannot go on).
  MeasureOutcome measure(const worker::CandidateMessage& candidate);

  const worker::ReadyMessage& ready() const { return ready_; }
  int restarts() const { return restarts_; }
  pid_t pid() const { return child_.pid; }

 private:
  void start();      // spawn() and handshake()
  void spawn();      // the process, with its device on the command line
  void handshake();  // the setup sent, `ready` received
  // Ends the current process: SIGKILL when `kill`, then reaps it. Returns how it ended
  // ("exited with status 3", "killed by signal 9 (Killed)").
  std::string stop(bool kill);
  std::string stderrTail() const { return childStderrTail(child_.stderrFd); }

  std::string path_;
  worker::SetupMessage setup_;
  WorkerTimeouts timeouts_;
  Log log_;
  ChildProcess child_;
  std::unique_ptr<worker::Channel> channel_;
  worker::ReadyMessage ready_;
  int restarts_ = 0;
  bool setUp_ = false;  // the setup was sent (setUp, or the constructor that has it)
};

}  // namespace rtcg
