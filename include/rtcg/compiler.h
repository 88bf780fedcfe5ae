// rtcg's compiler as functions, for tools and language bindings (the Python package is built on
// it): what `rtcgc check`, `emit`, `explain` and `tune` do, with results as data. Everything but
// tune() works without a GPU (cubin() and ptx() need NVRTC, not a device).
//
//   std::string cuda = rtcg::compiler::emit(source, {{"n", 500}});
//   rtcg::compiler::KernelInfo k = rtcg::compiler::check(source, {{"n", 500}});
//
// Bad source, sizes or schedules throw rtcg::CompileError (rtcg/Error.h): what() is the rendered
// diagnostics, diagnostics() the same as records. This header needs only the standard library.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "rtcg/Error.h"
#include "rtcg/rtcg.h"

namespace rtcg::compiler {

struct Options {
  std::string kernel;                 // which kernel of the source; empty: the only one
  std::string schedule;               // schedule text; empty: the default schedule
  std::string fileName = "<string>";  // used in diagnostics
  // For cubin() and ptx(), and what explain() names; an architecture NVRTC does not know (or a
  // path) is an rtcg::Error in all three.
  std::string arch = "sm_90";
  // Bytes of shared memory a block's staged tiles may use (rtcgc's --max-shared); 0: the default
  // (48 KiB), as rtcgc emit and explain. Negative: rtcg::Error. A source is at most 16 MiB, as
  // rtcgc reads (kMaxSourceBytes): a larger one is an rtcg::Error.
  int64_t maxSharedBytes = 0;
  // The tensor-core arithmetic f32 contractions may use (rtcgc's --precision): a schedule's `mma:`
  // clause must be allowed by it, and a policy that cannot apply to the kernel is an error.
  PrecisionPolicy precision = PrecisionPolicy::Ieee;
};

struct ParamInfo {
  std::string name;
  std::string kind;                 // "size", "scalar" or "array"
  std::string type;                 // "i32" for sizes; scalars and arrays: "f32", "f64", "i32", "i64"
  std::string mode;                 // arrays: "in", "out" or "inout"; else empty
  std::vector<std::string> shape;   // arrays: the extents as written ("K", "4*Nfp")
  std::vector<int64_t> boundShape;  // arrays of a bound kernel (check()): the extents' values
};

struct KernelInfo {
  std::string name;
  std::vector<ParamInfo> params;    // in declaration order
  Sizes sizes;                      // check() with sizes: the bound sizes; else empty
  std::string signature;            // check() with sizes: as CompiledKernel::signature(); else empty
  // The front end's and the proof's warnings and notes (an error throws instead).
  std::vector<DiagnosticRecord> diagnostics;
};

// Parses `source` and returns every kernel it defines, unbound. Throws CompileError.
std::vector<KernelInfo> parse(std::string_view source, const std::string& fileName = "<string>");

// The kernel options.kernel names, its sizes bound, every access proved in bounds and every nest
// race-free (as `rtcgc check -D`). Throws CompileError.
KernelInfo check(std::string_view source, const Sizes& sizes, const Options& options = {});

// The CUDA C of the kernel under options.schedule (or the default schedule), as `rtcgc emit`.
std::string emit(std::string_view source, const Sizes& sizes, const Options& options = {});

// What the schedule means, in words (launch, index parts, tiles, pipelines), as `rtcgc explain`.
std::string explain(std::string_view source, const Sizes& sizes, const Options& options = {});

// The cubin (bytes) or PTX that NVRTC makes of emit()'s CUDA C for options.arch. NVRTC failing on
// generated code (a bug in rtcg) throws rtcg::Error with its log.
std::string cubin(std::string_view source, const Sizes& sizes, const Options& options = {});
std::string ptx(std::string_view source, const Sizes& sizes, const Options& options = {});

// Binding size parameters from the shapes of the arguments a kernel is called with. `shapes` has
// one entry per non-size parameter in declaration order: an array argument's shape, or nullopt
// (scalars). A size is bound from the first extent that determines it: the extent is the size
// itself (`f32[n]`), or linear in it once the other sizes are known (`f32[n + 1]`, `f32[4*Nfp]`);
// `given` binds sizes no shape determines (or overrides them). Throws rtcg::Error when a size stays
// unbound, a shape has the wrong number of dimensions or no size fits; extents that contradict
// each other are left to the caller's check against the bound shapes (check()).
struct ShapeBinding {
  Sizes sizes;
  std::map<std::string, std::string> from;  // size -> "argument 2 (u), dimension 1"; given ones absent
};
ShapeBinding bindShapes(std::string_view source, const std::vector<std::optional<std::vector<int64_t>>>& shapes,
                        const Sizes& given, const Options& options = {});

// ---- tuning (needs a GPU and rtcg-worker) ----------------------------------------------------------

struct TuneCandidate {
  std::string schedule;
  std::string status;  // "verified", "wrong-result", "compile-failed", "launch-failed", "faulted", "timed-out", "skipped"
  std::string reason;  // failures: what went wrong
  double medianMs = 0;  // verified only
  double gflops = 0, gbytes = 0;
  double relativeError = 0;
  int registers = 0, spillBytes = 0, sharedBytes = 0;
  double occupancy = 0;
  double compileMs = 0;
  double completedSeconds = 0;  // when it completed, seconds since the search started
};

// A measuring device of another process: another MPI rank's GPU, for rtcg.tune under mpiexec
// (python/rtcg/_tune.py carries the bytes over mpi4py). `measure` takes a candidate as the worker
// protocol's frame and returns its outcome as MeasuringWorker::measure does on that rank; it
// throws rtcg::Error when the device is gone (the search stops).
struct RemoteDevice {
  std::string name;  // "rank 2 (node7, device 0)", for the log
  std::function<std::string(const std::string& candidate)> measure;
};

// The other side: a measuring worker process on this process's device `deviceOrdinal`, set up
// from a search's setup frame and reference outputs (the bytes TuneRequest::remoteDevices is
// given), measuring the candidates the searching process sends. Throws NoDeviceError or
// rtcg::Error when the worker cannot be started or set up.
class MeasuringWorker {
 public:
  MeasuringWorker(const std::string& setup, const std::string& reference, int deviceOrdinal,
                  const std::string& workerPath = "");
  ~MeasuringWorker();  // ends the worker, removes the reference file
  MeasuringWorker(const MeasuringWorker&) = delete;
  MeasuringWorker& operator=(const MeasuringWorker&) = delete;
  std::string measure(const std::string& candidate);  // the outcome's bytes (never throws for a candidate)
  std::string device() const;                         // "NVIDIA H200 (sm_90)", as the worker reported

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A compile slot of another process (another MPI rank's compile worker, served there by a
// CompileSlotServer), for rtcg.tune under mpiexec (python/rtcg/_tune.py carries the frames over
// mpi4py). `compile` takes a "compile" frame of the compile worker's protocol (src/tune/CompilePool.h)
// and the compile timeout, and returns the reply frame (CompileSlotServer::compile's on that rank),
// or nullopt when no reply came within the timeout and a margin for a slow host, or once
// `abandoned()` is true (the search is going away; poll it while waiting). It throws rtcg::Error
// when that process is lost (the search stops). Called from one thread at a time per slot.
struct CompileSlot {
  std::string host;  // "rank 2": the slots of one host are counted together (TuneReport::compiledOn)
  std::function<std::optional<std::string>(const std::string& frame, double timeoutSeconds,
                                           const std::function<bool()>& abandoned)>
      compile;
};

// The other side: compile slots this process serves for a search elsewhere, each a compile worker
// process (`rtcg-worker --compile-worker`: `workerPath`, or $RTCG_WORKER, next to the program, PATH)
// started at the slot's first frame and restarted after it died or timed out; where none can be
// found or started, the slot compiles on the calling thread. compile() is called by one thread per
// slot at a time, slots in parallel.
class CompileSlotServer {
 public:
  explicit CompileSlotServer(int slots, const std::string& workerPath = "");
  ~CompileSlotServer();  // ends the workers
  CompileSlotServer(const CompileSlotServer&) = delete;
  CompileSlotServer& operator=(const CompileSlotServer&) = delete;
  int slots() const;
  // The reply frame to a "compile" frame: "compiled", or "failed" with the reason (never throws).
  std::string compile(int slot, const std::string& frame, double timeoutSeconds);
  void abandon();  // from any thread: kills the workers (compiles in flight fail at once)
  int64_t compiled() const;  // frames compiled, failed ones included

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

struct TuneRequest {
  std::string kernel;
  std::string fileName = "<string>";
  int64_t maxCandidates = 0;       // 0: no limit
  double timeLimitSeconds = 300;   // 0: no limit (the whole space)
  std::vector<int> devices{0};     // measuring devices (ordinals)
  std::string dbPath;              // empty: the default tuning database (shared with rtcgc); "-": none
  std::string workerPath;          // empty: $RTCG_WORKER, next to the program, PATH
  uint64_t seed = 1;
  bool resume = false;             // skip what earlier searches of this key measured
  PrecisionPolicy precision = PrecisionPolicy::Ieee;  // searched under; part of the tuning key
  // In or inout arrays whose values come from files rather than the seed (rtcgc tune --input
  // NAME=FILE): whitespace-separated numbers, row-major, as many as the array's elements.
  std::map<std::string, std::string> inputFiles;
  std::function<void(const TuningProgress&)> progress;  // after each candidate
  std::function<void(const std::string&)> log;          // search events
  // Measuring devices of other processes beyond `devices` (an MPI job's other ranks), made once
  // this process's worker is set up, from the setup frame and the reference outputs' bytes that a
  // MeasuringWorker of theirs needs; `remoteDeviceCount` of them (the compile pool is sized for all).
  std::function<std::vector<RemoteDevice>(const std::string& setup, const std::string& reference)> remoteDevices;
  int remoteDeviceCount = 0;
  // Compile slots of other processes (the other ranks' CompileSlotServer) that the search's compile
  // pool uses besides this process's compile workers; given any, those are sized for `devices`
  // alone (the other hosts bring their own).
  std::vector<CompileSlot> compileSlots;
  int compileThreads = 0;  // this process's compile workers; 0: the cores, at most 16 per device
};

// How many candidates a host of compile slots compiled (failed ones included): "local" (this
// process's compile workers) first, then each host of TuneRequest::compileSlots ("rank 1").
struct CompileHost {
  std::string host;
  int slots = 0;
  int64_t compiled = 0;
};

struct TuneReport {
  std::string kernel, sizes, device, arch;  // the tuning key, for people ("n=500", "NVIDIA H100 80GB HBM3")
  int64_t searchId = 0;                     // in the database; 0: none
  std::optional<TuneCandidate> best;        // fastest verified
  std::optional<TuneCandidate> defaultSchedule;
  std::vector<TuneCandidate> candidates;    // every candidate measured or failed, in completion order
  int64_t enumerated = 0, generated = 0, pruned = 0;
  int64_t verified = 0, wrong = 0, faulted = 0, timedOut = 0, launchFailed = 0, compileFailed = 0, skipped = 0,
          notMeasured = 0;
  bool timeLimitReached = false;
  double wallSeconds = 0;
  std::string reference;                    // how candidates were verified
  int devices = 1;                          // measuring devices (remote ones included)
  std::vector<CompileHost> compiledOn;      // where the candidates compiled
};

// Searches the schedule space of the kernel on the GPU and records every candidate in the tuning
// database (as `rtcgc tune`), where Context::compile's lookup finds the winner. Throws
// CompileError for bad source or sizes, NoDeviceError without a GPU, rtcg::Error when the search
// cannot run (no rtcg-worker, an unwritable database).
TuneReport tune(std::string_view source, const Sizes& sizes, const TuneRequest& request = {});

}  // namespace rtcg::compiler
