#include "tune/WorkerMain.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <optional>

#include "driver/Executable.h"
#include "driver/Pipeline.h"
#include "reference/Compare.h"
#include "runtime/Benchmark.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"
#include "tune/Verify.h"
#include "tune/WorkerProtocol.h"

namespace rtcg::worker {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// Everything set up once per worker process.
struct Session {
  SetupMessage setup;
  Kernel bound;
  HostArgs host;  // the inputs (outputs poisoned)
  HostArgs gpu;   // downloaded results: the same storage for every candidate (see pinOutputs)
  std::vector<ExpectedOutput> expected;
  std::shared_ptr<cuda::Context> ctx;
  std::optional<DeviceArgs> dargs;
  std::optional<cuda::Stream> stream;
  // Last, so that it is destroyed first: unregistered before `gpu` frees the memory.
  std::vector<cuda::HostRegistration> pinnedOutputs;
};

// Thrown by setup with the message the parent gets.
struct SetupFailure {
  std::string message;
  bool noDevice = false;
};

// Page-locks the host arrays every candidate's outputs are downloaded into, once: a pageable copy
// goes through the driver's staging buffer at a fraction of the bus speed (SGEMM n=4096 downloads
// 64 MiB per candidate). Best effort: an array the driver will not register is copied pageable,
// with the same result. `s.gpu` is never reassigned after this, so the arrays do not move.
void pinOutputs(Session& s) {
  // Below this a pageable copy costs little more than registering would.
  constexpr size_t kMinPinnedBytes = size_t(1) << 20;
  for (size_t p = 0; p < s.bound.numSignatureParams(); ++p) {
    if (!s.bound.params[p].isWritten()) continue;
    HostArray& a = s.gpu.array(int(p));
    if (a.bytes() < kMinPinnedBytes) continue;
    try {
      s.pinnedOutputs.emplace_back(s.ctx, a.data(), a.bytes());
    } catch (const cuda::CudaError& e) {
      if (e.sticky()) throw;
    }
  }
}

// The reference outputs, read at the first candidate: the parent starts this worker while it
// still computes them, and writes the file before it sends any candidate.
void readReference(Session& s) {
  for (ReferenceArray& r : readReferenceFile(s.setup.referencePath))
    s.expected.push_back({r.param, std::move(r.values), std::move(r.checked), std::move(r.integers)});
}

// The CUDA context on `ordinal`, begun on a thread of its own: created (the driver initialized,
// the primary context retained) while the caller does the rest of the setup.
using ContextFuture = std::future<std::shared_ptr<cuda::Context>>;
ContextFuture openContext(int ordinal) {
  return std::async(std::launch::async, [ordinal] {
    if (!cuda::cudaAvailable()) throw SetupFailure{cuda::unavailableReason(), true};
    return cuda::Context::primary(ordinal);
  });
}

// `early`: the context begun at the process's start on `earlyOrdinal` (-1: none), taken when the
// setup names that device; else it is begun here, beside the kernel's proof and the inputs.
void prepare(Session& s, ContextFuture& early, int earlyOrdinal) {
  const SetupMessage& m = s.setup;
  ContextFuture context = early.valid() && earlyOrdinal == m.deviceOrdinal ? std::move(early) : openContext(m.deviceOrdinal);
  SourceText src{m.fileName, m.source};
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, m.sizes, m.kernel, diags);
  if (!bound) throw SetupFailure{"the kernel does not bind in the worker:\n" + renderDiagnostics(diags, src)};
  s.bound = std::move(*bound);
  s.host = tuningInputs(s.bound, m.seed, m.scalars, m.inputFiles);

  // The parent computed the reference from inputs it filled the same way; prove they are equal.
  for (const InputChecksum& c : m.inputs) {
    Checksum mine = checksum(s.host.array(c.name));
    if (mine.sum != c.sum || mine.sumSquares != c.sumSquares)
      throw SetupFailure{fmt::format("input '{}' differs from the parent's (checksum {} here, sum={:.17g} "
                                     "sumsq={:.17g} there): input generation is not deterministic",
                                     c.name, mine.str(), c.sum, c.sumSquares)};
  }

  s.ctx = context.get();  // rethrows what creating it threw (no device: SetupFailure)
  s.dargs.emplace(s.ctx, s.bound, s.host);
  s.dargs->snapshotInputs(s.bound);  // restored on the device before every candidate
  s.stream.emplace(s.ctx);
  s.gpu = s.host;
  pinOutputs(s);
}

std::string describeCudaError(const cuda::CudaError& e) {
  return e.sticky() ? fmt::format("{} (sticky: the CUDA context is lost)", e.what()) : std::string(e.what());
}

ResultMessage measure(Session& s, const CandidateMessage& c, Channel& ch) {
  ResultMessage r;
  r.id = c.id;
  auto fail = [&](Outcome o, std::string reason, bool fatal = false) {
    r.outcome = o;
    r.reason = std::move(reason);
    r.fatal = fatal;
    return r;
  };

  EmittedModule module;
  module.launches = c.launches;
  std::optional<Executable> exe;
  try {
    exe.emplace(s.ctx, s.bound, module, std::string_view(c.cubin));
  } catch (const cuda::CudaError& e) {
    return fail(e.sticky() ? Outcome::Faulted : Outcome::LaunchFailed, "loading the cubin: " + describeCudaError(e),
                e.sticky());
  } catch (const std::exception& e) {
    return fail(Outcome::LaunchFailed, e.what());
  }

  // The verifying launch, on freshly poisoned outputs and restored inputs.
  double firstMs = 0;
  try {
    s.dargs->reset(s.bound, s.host);
    Clock::time_point t0 = Clock::now();
    exe->launch(s.dargs->args(), &*s.stream);
    s.stream->synchronize();
    firstMs = msSince(t0);
    s.dargs->download(s.bound, s.gpu);
  } catch (const cuda::CudaError& e) {
    return fail(e.sticky() ? Outcome::Faulted : Outcome::LaunchFailed, describeCudaError(e), e.sticky());
  } catch (const std::exception& e) {
    return fail(Outcome::LaunchFailed, e.what());
  }

  Verification v = verifyOutputs(s.bound, s.gpu, s.expected, *parsePrecision(s.setup.precision));
  r.relativeError = v.worstRelativeError;
  if (!v.pass) return fail(Outcome::WrongResult, v.failures());

  // Timing: fewer repeats (at least 3) for slow kernels, so one candidate takes about the budget;
  // a kernel whose verifying launch alone took the budget is timed once, without warm-up (the
  // verifying launch loaded it; it cannot win, and a search must not spend seconds on it: a
  // one-thread dot product of 2^26 takes 4 s per launch), and so is one that lost the race: its
  // verifying launch took longer than CandidateMessage::raceMs. One whose first timed run takes
  // longer than CandidateMessage::raceTimedMs stops there (cuda::BenchmarkOptions::raceMs), and one
  // whose first three all take longer than CandidateMessage::raceCloseMs stops after them.
  const SetupMessage& m = s.setup;
  int repeats = m.repeats, warmup = m.warmup;
  const double budgetMs = m.timingBudgetSeconds * 1e3;
  if (firstMs > 0 && firstMs * repeats > budgetMs) repeats = std::clamp(int(budgetMs / firstMs), 3, m.repeats);
  if (firstMs >= budgetMs || (c.raceMs > 0 && firstMs > c.raceMs)) repeats = 1, warmup = 0;
  if (!ch.send(ProgressMessage{c.id, firstMs, warmup, repeats})) return fail(Outcome::Faulted, "parent gone");
  try {
    cuda::BenchmarkOptions bo;
    bo.warmup = warmup;
    bo.repeats = repeats;
    bo.flushL2 = m.flushL2;
    if (repeats > 1) bo.raceMs = c.raceTimedMs;
    bo.closeRaceMs = c.raceCloseMs;
    cuda::BenchmarkResult t =
        cuda::benchmark(*s.stream, [&](const cuda::Stream& st, int) { exe->launch(s.dargs->args(), &st); }, bo);
    r.medianMs = t.medianMs;
    r.minMs = t.minMs;
    r.repeats = int(t.samplesMs.size());  // 1 when it lost the timed race
    // Several launches, still in the race: each alone as well (ResultMessage::launchMs). Only
    // information: what fails here without breaking the context leaves the candidate measured.
    if (exe->launches().size() > 1 && r.repeats > 1) {
      cuda::BenchmarkOptions alone = bo;
      alone.repeats = r.repeats;
      try {
        r.launchMs = exe->timeEachLaunch(s.dargs->args(), *s.stream, alone);
      } catch (const cuda::CudaError& e) {
        if (e.sticky()) throw;
        r.launchMs.clear();
      } catch (const std::exception&) {
        r.launchMs.clear();
      }
    }

    r.occupancy = 1.0;
    for (size_t i = 0; i < exe->functions().size(); ++i) {
      const cuda::Function& fn = exe->functions()[i];
      const LaunchSpec& l = exe->launches()[i];
      cuda::FunctionAttributes a = fn.attributes();
      int threads = int(l.block[0] * l.block[1] * l.block[2]);
      r.registers = std::max(r.registers, a.registers);
      r.localBytes = std::max(r.localBytes, int(a.localBytes));
      r.sharedBytes = std::max(r.sharedBytes, int(a.staticSharedBytes + l.dynamicSharedBytes));
      r.occupancy = std::min(r.occupancy, fn.occupancy(threads, l.dynamicSharedBytes));
    }
  } catch (const cuda::CudaError& e) {
    return fail(e.sticky() ? Outcome::Faulted : Outcome::LaunchFailed, "while timing: " + describeCudaError(e),
                e.sticky());
  } catch (const std::exception& e) {
    return fail(Outcome::LaunchFailed, std::string("while timing: ") + e.what());
  }
  r.outcome = Outcome::Verified;
  return r;
}

}  // namespace

std::optional<int> serveArgs(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--serve") != 0) return std::nullopt;
  if (argc == 2) return -1;
  if (argc != 4 || std::strcmp(argv[2], "--device") != 0 || !*argv[3]) return std::nullopt;
  char* end = nullptr;
  long n = std::strtol(argv[3], &end, 10);
  if (*end || n < 0 || n > 1 << 20) return std::nullopt;
  return int(n);
}

int serve(int fd, int deviceOrdinal) {
  ContextFuture early;
  if (deviceOrdinal >= 0) early = openContext(deviceOrdinal);
  Channel ch(fd);
  Session s;
  try {
    Channel::Received first = ch.receive();
    if (first.status == Channel::Status::Eof) return 0;
    // Started ahead of a setup that did not come (the parent's search stopped first).
    if (std::holds_alternative<QuitMessage>(*first.message)) return 0;
    auto* setup = std::get_if<SetupMessage>(&*first.message);
    if (!setup) {
      fmt::print(stderr, "rtcg-worker: expected a 'setup' message, got '{}'\n", messageType(*first.message));
      return 2;
    }
    s.setup = std::move(*setup);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rtcg-worker: protocol error: {}\n", e.what());
    return 2;
  }

  Clock::time_point t0 = Clock::now();
  try {
    prepare(s, early, deviceOrdinal);
  } catch (const SetupFailure& f) {
    fmt::print(stderr, "rtcg-worker: setup failed: {}\n", f.message);
    ch.send(ErrorMessage{f.message, f.noDevice});
    return f.noDevice ? 4 : 1;
  } catch (const NoDeviceError& e) {
    fmt::print(stderr, "rtcg-worker: setup failed: {}\n", e.what());
    ch.send(ErrorMessage{e.what(), true});
    return 4;
  } catch (const std::exception& e) {
    fmt::print(stderr, "rtcg-worker: setup failed: {}\n", e.what());
    ch.send(ErrorMessage{e.what(), false});
    return 1;
  }
  const cuda::DeviceProperties& dev = s.ctx->device().properties();
  if (!ch.send(ReadyMessage{dev.name, dev.arch(), dev.driverVersion, msSince(t0) / 1e3})) return 0;

  bool referenceRead = false;
  for (;;) {
    Channel::Received in;
    try {
      in = ch.receive();
    } catch (const std::exception& e) {
      fmt::print(stderr, "rtcg-worker: protocol error: {}\n", e.what());
      return 2;
    }
    if (in.status == Channel::Status::Eof || std::holds_alternative<QuitMessage>(*in.message)) return 0;
    auto* c = std::get_if<CandidateMessage>(&*in.message);
    if (!c) {
      fmt::print(stderr, "rtcg-worker: unexpected '{}' message\n", messageType(*in.message));
      return 2;
    }
    if (!referenceRead) {
      try {
        readReference(s);
        referenceRead = true;
      } catch (const std::exception& e) {
        fmt::print(stderr, "rtcg-worker: cannot read the reference outputs: {}\n", e.what());
        return 1;
      }
    }
    ResultMessage r = measure(s, *c, ch);
    if (r.fatal) fmt::print(stderr, "rtcg-worker: candidate {}: {}; exiting\n", c->id, r.reason);
    if (!ch.send(r)) return 0;
    if (r.fatal) {
      // The context is lost: exit without running destructors that would call into it.
      std::fflush(stderr);
      std::_Exit(3);
    }
  }
}

}  // namespace rtcg::worker
