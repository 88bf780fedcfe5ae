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

#include "tune/TuningDb.h"
#include "tune/WorkerProtocol.h"

namespace rtcg {

// The worker executable: `explicitPath` when given (must be an executable file), else
// $RTCG_WORKER, else `rtcg-worker` next to the running executable (/proc/self/exe) or in the
// build tree's tools/rtcg-worker folder beside it, else on PATH. Throws rtcg::Error listing the
// places it looked.
std::string findWorker(const std::string& explicitPath = "");

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

class WorkerProcess {
 public:
  using Log = std::function<void(const std::string&)>;

  // Starts the worker and completes setup. Throws NoDeviceError when the worker reports no
  // device, rtcg::Error when it cannot be started or fails setup (with its message, or its exit
  // status and the tail of its stderr).
  WorkerProcess(std::string path, worker::SetupMessage setup, WorkerTimeouts timeouts, Log log = {});
  ~WorkerProcess();  // asks the worker to quit; kills it if it does not within a second
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Measures one candidate (its id, launches and cubin), restarting the worker first if the last
  // one died. Never throws for what a candidate does; throws rtcg::Error when a new worker cannot
  // be started (the search cannot go on).
  MeasureOutcome measure(const worker::CandidateMessage& candidate);

  const worker::ReadyMessage& ready() const { return ready_; }
  int restarts() const { return restarts_; }
  pid_t pid() const { return pid_; }

 private:
  void start();
  // Ends the current process: SIGKILL when `kill`, then reaps it. Returns how it ended
  // ("exited with status 3", "killed by signal 9 (Killed)").
  std::string stop(bool kill);
  std::string stderrTail() const;

  std::string path_;
  worker::SetupMessage setup_;
  WorkerTimeouts timeouts_;
  Log log_;
  pid_t pid_ = -1;
  int fd_ = -1;
  int stderrFd_ = -1;  // the worker's stderr, an unlinked temporary file
  std::unique_ptr<worker::Channel> channel_;
  worker::ReadyMessage ready_;
  int restarts_ = 0;
};

}  // namespace rtcg
