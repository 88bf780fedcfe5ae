// A measuring worker for a search that runs in another process (another MPI rank's: rtcgc tune
// under MPI, rtcg.tune under mpiexec): set up from that search's setup frame and reference
// outputs' bytes (written to a temporary file here, on this node), measuring on this process's
// device the candidate frames it receives and answering with the outcome's bytes (encodeOutcome).
#pragma once

#include <memory>
#include <string>

#include "tune/WorkerProcess.h"

namespace rtcg {

class ServedWorker {
 public:
  // Throws NoDeviceError or rtcg::Error when the worker cannot be started or set up, and
  // worker::ProtocolError for a setup that is not a setup frame. `reference` may be empty when
  // setReference gives it before the first candidate (the worker reads it at its first).
  // `started`: a worker already started on `deviceOrdinal` without its setup (WorkerProcess's
  // second constructor: its CUDA context is made while the setup travels), set up here; else one
  // is started here.
  ServedWorker(const std::string& setupFrame, const std::string& reference, int deviceOrdinal,
               const std::string& workerPath, WorkerProcess::Log log = {},
               std::unique_ptr<WorkerProcess> started = nullptr);
  ~ServedWorker();  // ends the worker and removes the reference file
  ServedWorker(const ServedWorker&) = delete;
  ServedWorker& operator=(const ServedWorker&) = delete;

  // The outcome of the candidate frame (never throws for what a candidate does; throws
  // worker::ProtocolError for bytes that are no candidate frame, rtcg::Error when no worker can be
  // restarted).
  std::string measure(const std::string& candidateFrame);
  // The reference outputs' bytes, in place of those given to the constructor; before the first
  // candidate. Throws rtcg::Error when the file cannot be written.
  void setReference(const std::string& reference);
  const worker::SetupMessage& setup() const { return setup_; }
  const WorkerProcess& worker() const { return *worker_; }

 private:
  std::string referencePath_;
  worker::SetupMessage setup_;
  std::unique_ptr<WorkerProcess> worker_;
};

}  // namespace rtcg
