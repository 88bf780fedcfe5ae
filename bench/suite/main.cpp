// bench_suite: rtcg's tuned kernels against their peers (cuBLAS, device-to-device copy) on one
// GPU, in one process run. See docs/bench.md.
//
// Phase 1 tunes every selected workload (or takes its best schedule from the tuning database);
// the tuner measures in its worker process, and this process holds no CUDA context meanwhile.
// Phase 2 creates the context, measures the copy bandwidth, then per workload compiles the
// winner, checks its output against the peer's and (for the smaller ones) the float64 CPU
// reference, and times both with the same helper (median of cold-L2 runs on one stream).
//
// Exit status: 0 all checks passed; 1 bad arguments or setup; 3 a workload failed or computed a
// wrong result (the table is still printed); 4 no CUDA device.
#include <CLI/CLI.hpp>
#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fstream>

#include "bench/suite/Peers.h"
#include "bench/suite/Results.h"
#include "bench/suite/Workloads.h"
#include "driver/Executable.h"
#include "driver/Pipeline.h"
#include "ir/Counts.h"
#include "reference/Compare.h"
#include "reference/Reference.h"
#include "schedule/Domain.h"
#include "runtime/Benchmark.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "schedule/Schedule.h"
#include "support/Error.h"
#include "tune/Tuner.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"
#include "tune/Verify.h"

namespace fs = std::filesystem;
using namespace rtcg;
using namespace rtcg::bench;

namespace {

// H100/H200 SXM non-tensor peaks; a row's roofline divides each precision's operations by its own.
constexpr double kPeakGflopsFp32 = 67000;
constexpr double kPeakGflopsFp64 = 34000;

// The arithmetic a measured schedule uses and its H100/H200 peak (issue 22's figures), for the
// roofline: FP32 67, FP64 34 TF/s on the pipes; TF32 mma 495, of which 3xTF32 gets a third (three
// products per product), FP64 mma 67, BF16/F16 mma 990, INT8 mma 1979 (TOPS).
struct Arithmetic {
  const char* name;
  double peakGflops;
};
// The mma arithmetic of a schedule, if it has one (the SIMT arithmetic is the kernel's: ir/Counts.h).
std::optional<Arithmetic> mmaArithmeticOf(const std::string& schedule) {
  if (ScheduleParseResult s = parseSchedule(schedule); s.ok())
    for (const NestSchedule& n : s.schedule->nests) {
      if (n.mma.arith == MmaArith::Tf32) return Arithmetic{"TF32 mma", 495000};
      if (n.mma.arith == MmaArith::Tf32x3) return Arithmetic{"3xTF32 mma", 495000.0 / 3};
      if (n.mma.arith == MmaArith::F64) return Arithmetic{"FP64 mma", 67000};
      if (n.mma.arith == MmaArith::Bf16) return Arithmetic{"BF16 mma", 990000};
      if (n.mma.arith == MmaArith::F16) return Arithmetic{"F16 mma", 990000};
      if (n.mma.arith == MmaArith::S8) return Arithmetic{"INT8 mma", 1979000};
    }
  return std::nullopt;
}

struct Options {
  bool list = false, useDb = false, defaultSchedule = false;
  std::string only, out = "bench-out", db, worker;
  int64_t maxCandidates = 48;
  double timeLimit = 15;
  int repeats = 20;
  uint64_t seed = 1;
  double referenceMaxFlops = 3e9;
  int64_t bandwidthMiB = 512;
  std::vector<std::string> schedulesFiles;            // --schedules (repeatable)
  std::string peerTimesFile;                           // --peer-times
  std::map<std::string, ExternalPeer> peerTimes;       // its peers, by workload
  // Their schedules, by workload: (file, schedule) in the files' order.
  std::map<std::string, std::vector<std::pair<std::string, EarlierSchedule>>> earlier;
};

struct Prepared {
  Workload workload;
  Kernel bound;
  Row row;
  // With several --schedules files, or one and --use-db, each distinct legal schedule among the
  // earlier runs' and the database's best: the fastest in this run is measured (row.schedule is
  // then set in phase 2).
  std::vector<Contender> contenders;
};

Kernel bindWorkload(const Workload& w) {
  SourceText src{w.name + ".rtcg", w.source};
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, w.sizes, w.kernelName, diags);
  if (!bound) throw Error(fmt::format("workload {}: {}", w.name, renderDiagnostics(diags, src)));
  return *bound;
}

void writeFile(const fs::path& path, const std::string& text) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) throw Error(fmt::format("cannot write {}", tmp.string()));
  }
  fs::rename(tmp, path);
}

// The relative L2 error of `out` against reference output `r` over the elements it computed (every
// element of a full reference).
double sampledError(const std::vector<double>& out, const ReferenceOutput& r) {
  double num = 0, den = 0;
  for (size_t i = 0; i < out.size() && i < r.values.size(); ++i) {
    if (!r.computed.empty() && !r.computed[i]) continue;
    // An element the reference left unwritten (NaN-poisoned, as is every output: a triangle's
    // other half) must be unwritten in `out` too; any other non-finite pair is an error.
    if (!std::isfinite(r.values[i]) || !std::isfinite(out[i])) {
      if (std::isnan(r.values[i]) && std::isnan(out[i])) continue;
      if (out[i] == r.values[i]) continue;
      return INFINITY;
    }
    const double d = out[i] - r.values[i];
    num += d * d, den += r.values[i] * r.values[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

// A CSR workload's rowptr and col as the tuner's input files (DIR/inputs/NAME.rowptr, .col), so
// that the search ranks schedules on the rows it is measured on (power-law rows favour other
// schedules than the uniform ones random offsets give).
std::map<std::string, std::string> writeMatrixFiles(const Workload& w, const std::string& where) {
  const CsrStructure csr = csrOf(w);
  const fs::path dir = fs::absolute(fs::path(where) / "inputs");
  fs::create_directories(dir);
  std::map<std::string, std::string> files;
  auto write = [&](const char* name, const std::vector<int32_t>& values) {
    std::string text = fmt::format("{}\n", fmt::join(values, "\n"));
    const fs::path path = dir / fmt::format("{}.{}", w.name, name);
    writeFile(path, text);
    files[name] = path.string();
  };
  write("rowptr", csr.rowptr);
  write("col", csr.col);
  return files;
}

// Phase 1: the schedule each workload is measured with.
void chooseSchedule(Prepared& p, const Options& o, const std::string& dbPath, const cuda::DeviceProperties& props) {
  Row& row = p.row;
  if (o.defaultSchedule) {
    row.scheduleSource = "default (--default-schedule)";
    return;
  }
  if (auto e = o.earlier.find(row.name); e != o.earlier.end()) {
    // The earlier runs' schedules that are still legal for this kernel on this device: for a
    // rewriting policy (fp64x, fp32x), the kernel of its steps, which the schedules are of.
    std::vector<std::string> rejected;
    p.contenders = legalEarlierSchedules(
        p.bound, p.workload.precision,
        deviceScheduleLimits(int64_t(props.sharedPerBlockOptin), props.maxThreadsPerBlock, props.multiprocessors,
                             int64_t(props.sharedPerMultiprocessor)),
        e->second, rejected);
    for (const std::string& r : rejected)
      fmt::print(stderr, "bench_suite: {}: a schedule of --schedules is not legal here: {}\n", row.name, r);
    if (!p.contenders.empty()) {
      row.schedule = p.contenders.front().schedule;
      row.scheduleSource = p.contenders.front().source;
      fmt::print(stderr, "bench_suite: {}: schedule from {}\n", row.name, row.scheduleSource);
      if (o.useDb) {
        TuningDb db(dbPath);
        if (std::optional<CandidateRecord> best = db.best(tuningKeyFor(p.bound, props, p.workload.precision)))
          addContender(p.contenders, {best->schedule, fmt::format("database ({:.4f} ms when tuned)", best->medianMs)});
      }
      if (p.contenders.size() > 1)
        fmt::print(stderr, "bench_suite: {}: {} schedules; the fastest in this run is measured\n", row.name,
                   p.contenders.size());
      else
        p.contenders.clear();
      return;
    }
    fmt::print(stderr, "bench_suite: {}: no schedule of --schedules is legal here; choosing another\n", row.name);
  }
  if (o.useDb) {
    TuningDb db(dbPath);
    if (std::optional<CandidateRecord> best = db.best(tuningKeyFor(p.bound, props, p.workload.precision))) {
      row.schedule = best->schedule;
      row.scheduleSource = fmt::format("database ({:.4f} ms when tuned)", best->medianMs);
      fmt::print(stderr, "bench_suite: {}: best schedule from the database\n", row.name);
      return;
    }
    fmt::print(stderr, "bench_suite: {}: not in the database {}, tuning\n", row.name, dbPath);
  }
  TuneOptions t;
  t.space.maxCandidates = o.maxCandidates;
  t.space.seed = o.seed;
  t.space.precision = p.workload.precision;
  t.timeLimitSeconds = o.timeLimit;
  t.seed = o.seed;
  t.dbPath = dbPath;
  t.workerPath = o.worker;
  t.log = [&](const std::string& s) { fmt::print(stderr, "bench_suite: {}: {}\n", row.name, s); };
  // Beside the database (scripts/bench.sh: BENCH_STATE), not among the results.
  if (p.workload.matrix != SparseMatrix::None)
    t.inputFiles = writeMatrixFiles(p.workload, fs::absolute(dbPath).parent_path().string());
  fmt::print(stderr, "bench_suite: {}: tuning (at most {} candidates, {:g} s)\n", row.name, o.maxCandidates,
             o.timeLimit);
  TuneResult r = tune(p.workload.name + ".rtcg", p.workload.source, p.bound, t);
  row.tuneSeconds = r.wallSeconds;
  if (r.best) {
    row.schedule = r.best->schedule;
    row.scheduleSource = fmt::format("tuned: best of {} verified ({} failed) in {:.0f} s", r.verified,
                                     r.wrong + r.faulted + r.timedOut + r.launchFailed, r.wallSeconds);
  } else {
    row.scheduleSource = "default (the tuner verified no candidate)";
  }
  fmt::print(stderr, "bench_suite: {}: {}\n", row.name, row.scheduleSource);
}

struct Gpu {
  std::shared_ptr<cuda::Context> ctx;
  std::unique_ptr<cuda::Stream> stream;
  std::unique_ptr<Blas> blas;
  cuda::DeviceProperties props;
  double copyGBs = 0;
};

// The workload's kernel compiled with `schedule` (the device's limits) and loaded.
std::unique_ptr<Executable> compileSchedule(const Prepared& p, const std::string& schedule, Gpu& gpu) {
  const Workload& w = p.workload;
  SourceText src{w.name + ".rtcg", w.source};
  PipelineOptions po;
  po.kernelName = w.kernelName;
  po.schedule = schedule;
  po.precision = w.precision;
  po.arch = gpu.props.arch();
  po.limits = deviceScheduleLimits(int64_t(gpu.props.sharedPerBlockOptin), gpu.props.maxThreadsPerBlock,
                                   gpu.props.multiprocessors, int64_t(gpu.props.sharedPerMultiprocessor));
  Diagnostics diags;
  std::optional<Compiled> c = compilePipeline(src, w.sizes, po, diags);
  if (!c) throw Error("compiling the schedule failed: " + renderDiagnostics(diags, src));
  return std::make_unique<Executable>(gpu.ctx, c->kernel, c->module,
                                      std::string_view(c->binary.cubin.data(), c->binary.cubin.size()));
}

cuda::BenchmarkOptions timing(const Options& o) {
  cuda::BenchmarkOptions bo;
  bo.warmup = 3;
  bo.repeats = o.repeats;
  bo.flushL2 = true;
  return bo;
}

// Several contenders: each is timed on the measurement's device arguments `dargs` (the same
// helper and L2 flush as the measurement), and the fastest becomes the row's schedule. The caller
// then resets the arguments and checks it.
void pickFastest(Prepared& p, const Options& o, Gpu& gpu, const DeviceArgs& dargs) {
  std::vector<std::string> times;
  double bestMs = INFINITY;
  const Contender* best = nullptr;
  for (const Contender& c : p.contenders) {
    std::unique_ptr<Executable> compiled;
    try {
      compiled = compileSchedule(p, c.schedule, gpu);
    } catch (const Error& e) {  // the other contender may still do
      times.push_back(fmt::format("{} not compiled ({})", c.source, e.what()));
      continue;
    }
    Executable& exe = *compiled;
    double ms = cuda::benchmark(*gpu.stream, [&](const cuda::Stream& s, int) { exe.launch(dargs.args(), &s); },
                                timing(o)).medianMs;
    times.push_back(fmt::format("{} {:.4f} ms", c.source, ms));
    if (ms < bestMs) bestMs = ms, best = &c;
  }
  if (!best) throw Error(fmt::format("no contender compiled: {}", fmt::join(times, "; ")));
  p.row.schedule = best->schedule;
  p.row.scheduleSource = fmt::format("{}; the faster here of: {}", best->source, fmt::join(times, ", "));
  fmt::print(stderr, "bench_suite: {}: {}\n", p.row.name, p.row.scheduleSource);
}

// A CSR workload's matrix in its rowptr and col (its val and x stay random), for rtcg's kernel,
// the reference and the peer alike.
void setMatrix(const Workload& w, HostArgs& host) {
  const CsrStructure csr = csrOf(w);
  HostArray& rowptr = host.array("rowptr");
  HostArray& col = host.array("col");
  RTCG_ASSERT(rowptr.size() == csr.rows() + 1 && col.size() == csr.nonzeros(), "the matrix of " + w.name);
  std::copy(csr.rowptr.begin(), csr.rowptr.end(), rowptr.as<int32_t>());
  std::copy(csr.col.begin(), csr.col.end(), col.as<int32_t>());
}

// Phase 2 for one workload: compile, check, time.
void measure(Prepared& p, const Options& o, Gpu& gpu) {
  const Workload& w = p.workload;
  const Kernel& bound = p.bound;
  Row& row = p.row;
  const cuda::Stream& stream = *gpu.stream;

  HostArgs host = tuningInputs(bound, o.seed, tuningScalars(bound, o.seed));
  if (w.matrix != SparseMatrix::None) setMatrix(w, host);
  DeviceArgs dargs(gpu.ctx, bound, host);  // outputs poisoned, so an unwritten element shows
  if (p.contenders.size() > 1) {
    pickFastest(p, o, gpu, dargs);
    dargs.reset(bound, host);  // the timed runs wrote the outputs (and inout arrays): fresh again
  }
  std::unique_ptr<Executable> compiled = compileSchedule(p, row.schedule, gpu);
  Executable& exe = *compiled;

  // Correctness of the measured kernel, from fresh inputs.
  exe.launch(dargs.args(), &stream);
  stream.synchronize();
  HostArgs out = host;
  dargs.download(bound, out);

  // A PyTorch peer was timed by its script before this process (and checked there against float64).
  std::optional<Peer> peer;
  if (w.peer != PeerKind::Torch) peer.emplace(w, bound, host, gpu.ctx, *gpu.blas);
  std::optional<std::map<int, std::vector<double>>> peerOut;
  if (peer) peerOut = peer->result(stream);
  bool pass = true;
  for (size_t q = 0; q < bound.numSignatureParams(); ++q) {  // the outputs (no local is one)
    if (!bound.params[q].isWritten()) continue;
    row.tolerance = std::max(row.tolerance, verificationTolerance(bound, int(q), w.precision));
  }
  if (peerOut) {
    row.relErrPeer = 0;
    for (const auto& [param, values] : *peerOut) {
      double e = relativeError(out.array(param), values);
      row.relErrPeer = std::isnan(e) ? INFINITY : std::max(row.relErrPeer, e);
      // Both sides round in f32, in different orders: allow both their errors.
      pass = pass && e <= 2 * verificationTolerance(bound, param, w.precision);
    }
  }
  {
    // The float64 reference: whole up to --reference-max-flops, else a sample of the outer loop's
    // values costing about that much (the tensor-core rows need rtcg's and the peer's error
    // against float64 at n=4096 too); both are compared on the elements it computed.
    HostArgs refArgs = host;
    ReferenceOptions ro;
    if (double(row.flops) > o.referenceMaxFlops && !bound.nests.empty() && !bound.nests[0].loops.empty()) {
      const Loop& outer = bound.nests[0].loops[0];
      const int64_t extent = *constIntValue(outer.hi, bound) - *constIntValue(outer.lo, bound);
      ro.sampleOuterValues = std::clamp<int64_t>(int64_t(double(extent) * o.referenceMaxFlops / double(row.flops)), 8,
                                                 std::max<int64_t>(8, extent));
      ro.sampleSeed = o.seed;
    }
    ReferenceResult ref = runReference(bound, refArgs, ro);
    row.relErrReference = 0;
    if (peerOut) row.relErrPeerReference = 0;
    for (const ReferenceOutput& r : ref.outputs) {
      const HostArray& mine = out.array(r.param);
      std::vector<double> values(size_t(mine.size()));
      for (size_t i = 0; i < values.size(); ++i) values[i] = mine.get(int64_t(i));
      double e = sampledError(values, r);
      row.relErrReference = std::isnan(e) ? INFINITY : std::max(row.relErrReference, e);
      pass = pass && e <= verificationTolerance(bound, r.param, w.precision);
      if (peerOut && peerOut->count(r.param)) {
        double pe = sampledError(peerOut->at(r.param), r);
        row.relErrPeerReference = std::isnan(pe) ? INFINITY : std::max(row.relErrPeerReference, pe);
      }
    }
  }
  row.pass = pass;

  // Timing: the same helper, stream and L2 flush for both.
  const cuda::BenchmarkOptions bo = timing(o);
  row.rtcgMs = cuda::benchmark(stream, [&](const cuda::Stream& s, int) { exe.launch(dargs.args(), &s); }, bo).medianMs;
  if (peer) {
    row.peerMs = cuda::benchmark(stream, [&](const cuda::Stream& s, int) { peer->enqueue(s); }, bo).medianMs;
  } else {
    const ExternalPeer& ext = o.peerTimes.at(w.name);  // run() checked it is there
    row.peerMs = ext.ms;
    row.peer = ext.label;
    row.relErrPeerReference = ext.relErr;
  }
  if (const std::optional<Arithmetic> mma = mmaArithmeticOf(row.schedule)) {
    row.arithmetic = mma->name;
    row.peakGflops = mma->peakGflops;
  }
  row.rooflineMs = std::max(double(row.flops) / (row.peakGflops * 1e9), double(row.bytes) / (gpu.copyGBs * 1e9)) * 1e3;
}

// Device-to-device copy bandwidth: bytes read + written per second, median of cold runs.
double copyBandwidth(Gpu& gpu, int64_t mib, int repeats) {
  size_t bytes = size_t(mib) << 20;
  cuda::DeviceBuffer a(gpu.ctx, bytes), b(gpu.ctx, bytes);
  a.fill8(1);
  cuda::BenchmarkOptions bo;
  bo.warmup = 3;
  bo.repeats = repeats;
  double ms = cuda::benchmark(*gpu.stream, [&](const cuda::Stream& s, int) { b.copyFromDeviceAsync(a, bytes, &s); },
                              bo)
                  .medianMs;
  return 2.0 * double(bytes) / (ms * 1e6);
}

int listWorkloads(const std::vector<Prepared>& all) {
  fmt::print("{:<22} {:<15} {:<32} {:>10} {:>10}  {}\n", "workload", "group", "sizes", "GFLOP", "MiB", "peer");
  for (const Prepared& p : all)
    fmt::print("{:<22} {:<15} {:<32} {:>10.3f} {:>10.1f}  {}\n", p.row.name, p.row.group, p.row.sizes,
               double(p.row.flops) * 1e-9, double(p.row.bytes) / (1 << 20), p.row.peer);
  return 0;
}

int run(const Options& o) {
  std::vector<Prepared> all;
  for (Workload& w : selectWorkloads(o.only)) {
    Prepared p{w, bindWorkload(w), {}};
    p.row.name = w.name;
    p.row.group = w.group;
    p.row.sizes = sizesLabel(w.sizes);
    p.row.peer = peerLabel(w.peer);
    const FloatOpsByPrecision ops = floatOpsByPrecision(p.bound);
    // An integer kernel (igemm): its integer operations, against the INT8 mma peak of its schedule.
    p.row.flops = int64_t(ops.total() > 0 ? ops.total() : ops.integer);
    p.row.arithmetic = arithmeticName(ops);
    p.row.peakGflops = arithmeticPeak(kPeakGflopsFp32, kPeakGflopsFp64, ops);
    p.row.bytes = minimalBytes(p.bound);
    all.push_back(std::move(p));
  }
  if (o.list) return listWorkloads(all);
  for (Prepared& p : all)
    if (p.workload.peer == PeerKind::Torch && !o.peerTimes.count(p.row.name))
      p.row.error = fmt::format("no peer time: run bench/peers/torch_peers.py for it and pass its output with "
                                "--peer-times (scripts/bench.sh does both){}",
                                o.peerTimesFile.empty() ? "" : fmt::format("; {} has none", o.peerTimesFile));

  if (!cuda::cudaAvailable()) {
    fmt::print(stderr, "bench_suite: error: no CUDA device to benchmark on: {}\n", cuda::unavailableReason());
    return 4;
  }
  if (const char* tf32 = std::getenv("NVIDIA_TF32_OVERRIDE"); tf32 && std::string(tf32) != "0") {
    fmt::print(stderr, "bench_suite: error: NVIDIA_TF32_OVERRIDE={} would let cuBLAS use TF32; unset it\n", tf32);
    return 1;
  }
  fs::create_directories(o.out);
  std::string dbPath = o.db.empty() ? (fs::path(o.out) / "tuning.sqlite").string() : o.db;

  Gpu gpu;
  gpu.props = cuda::Device(0).properties();
  SuiteInfo info;
  info.device = gpu.props.name;
  info.arch = gpu.props.arch();
  info.driver = cuda::formatCudaVersion(gpu.props.driverVersion);
  info.peakGflops = kPeakGflopsFp32;
  info.settings = fmt::format("{}; max-candidates={}, time-limit={:g}s, repeats={}, seed={}, database {}",
                              o.defaultSchedule         ? "default schedules"
                              : !o.schedulesFiles.empty() ? fmt::format("schedules of {}{}", fmt::join(o.schedulesFiles, ", "),
                                                                       o.useDb ? " and the database's best, the faster in this run"
                                                                               : ", else tuned")
                              : o.useDb                  ? "database first"
                                                         : "tuned now",
                              o.maxCandidates, o.timeLimit, o.repeats, o.seed, dbPath);

  // Phase 1: schedules (the tuner's worker owns the GPU meanwhile).
  for (Prepared& p : all) {
    if (!p.row.error.empty()) continue;  // no peer to compare with
    try {
      chooseSchedule(p, o, dbPath, gpu.props);
    } catch (const std::exception& e) {  // one workload's failure does not stop the suite
      p.row.error = fmt::format("tuning failed: {}", e.what());
      fmt::print(stderr, "bench_suite: {}: {}\n", p.row.name, p.row.error);
    }
  }

  // Phase 2: rtcg's primary context first, then the CUDA runtime (for cuBLAS) on the same one.
  gpu.ctx = cuda::Context::primary(0);
  if (cudaError_t e = cudaSetDevice(0); e != cudaSuccess)
    throw Error(fmt::format("cudaSetDevice(0) failed: {}", cudaGetErrorString(e)));
  if (cudaError_t e = cudaFree(nullptr); e != cudaSuccess)
    throw Error(fmt::format("initializing the CUDA runtime failed: {}", cudaGetErrorString(e)));
  gpu.stream = std::make_unique<cuda::Stream>(gpu.ctx);
  gpu.blas = std::make_unique<Blas>(*gpu.stream);
  info.cublasVersion = gpu.blas->version();
  gpu.copyGBs = info.copyGBs = copyBandwidth(gpu, o.bandwidthMiB, o.repeats);
  fmt::print(stderr, "bench_suite: {} ({}), device-to-device copy {:.0f} GB/s\n", info.device, info.arch,
             info.copyGBs);

  std::vector<Row> rows;
  auto writeOutputs = [&] {
    rows.clear();
    for (const Prepared& p : all) rows.push_back(p.row);
    writeFile(fs::path(o.out) / "bench.json", toJson(info, rows).dump(2) + "\n");
    writeFile(fs::path(o.out) / "bench.html", renderHtml(info, rows));
  };
  bool contextLost = false;
  for (Prepared& p : all) {
    if (contextLost) {
      p.row.error = "not measured: the CUDA context was lost at an earlier workload";
    } else if (p.row.error.empty()) {
      fmt::print(stderr, "bench_suite: {}: measuring\n", p.row.name);
      try {
        measure(p, o, gpu);
      } catch (const std::exception& e) {  // one workload's failure does not stop the suite
        p.row.error = e.what();
        fmt::print(stderr, "bench_suite: {}: {}\n", p.row.name, p.row.error);
        // A sticky error (an illegal address, say) leaves the context unusable until exit.
        contextLost = cuda::contextPoisoned();
      }
    }
    writeOutputs();  // after every workload, so an interrupted run leaves its results so far
  }
  writeOutputs();
  fmt::print("{}", renderTable(rows));
  fmt::print("device: {} ({}), copy bandwidth {:.0f} GB/s, peak {:.0f} GF/s; wrote {} and {}\n", info.device,
             info.arch, info.copyGBs, info.peakGflops, (fs::path(o.out) / "bench.json").string(),
             (fs::path(o.out) / "bench.html").string());
  bool ok = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.error.empty() && r.pass; });
  return ok ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"rtcg benchmark suite: tuned rtcg kernels against cuBLAS and device copies (docs/bench.md)"};
  Options o;
  app.add_flag("--list", o.list, "print the workloads and exit (needs no GPU)");
  app.add_option("--only", o.only, "comma-separated workload names or groups (sgemm, sgemv, transpose, dot, "
                                    "batched, dg_diff, dg_diff_stacked, dg_lift, spmv, sgemm_tc, dgemm, ozaki, batched_tc, "
                                    "dg_tc, gemm_bf16, trmv, trmm, syrk, softmax, layernorm, nearest, histogram, histogram_weighted, assemble); default: all");
  app.add_option("--peer-times", o.peerTimesFile,
                 "the PyTorch peers' times (bench/peers/torch_peers.py's JSON) for the rows whose peer is PyTorch");
  app.add_option("--out", o.out, "directory for bench.json, bench.html and the tuning database")->capture_default_str();
  app.add_option("--db", o.db, "tuning database (default: OUT/tuning.sqlite)");
  app.add_flag("--use-db", o.useDb, "take each workload's best schedule from the database; tune only those missing");
  app.add_flag("--default-schedule", o.defaultSchedule, "measure rtcg's default schedules, no tuning");
  app.add_option("--schedules", o.schedulesFiles,
                 "measure each workload with its schedule in FILE, the bench.json of an earlier run (those it "
                 "lacks, or whose schedule is no longer legal, as without this option); repeated, or with "
                 "--use-db, the fastest in this run of the files' schedules and the database's best")
      ->allow_extra_args(false);
  app.add_option("--max-candidates", o.maxCandidates, "candidates per tuning search")->capture_default_str()->check(
      CLI::PositiveNumber);
  app.add_option("--time-limit", o.timeLimit, "seconds per tuning search (0: none)")->capture_default_str()->check(
      CLI::NonNegativeNumber);
  app.add_option("--repeats", o.repeats, "timed runs per measurement (median)")->capture_default_str()->check(
      CLI::Range(3, 1000));
  app.add_option("--seed", o.seed, "inputs and candidate sampling")->capture_default_str();
  app.add_option("--reference-max-flops", o.referenceMaxFlops,
                 "also check against the float64 CPU reference up to this many flops")
      ->capture_default_str();
  app.add_option("--bandwidth-mib", o.bandwidthMiB, "size of the copy measuring the bandwidth")
      ->capture_default_str()
      ->check(CLI::Range(int64_t(16), int64_t(16384)));
  app.add_option("--worker", o.worker, "rtcg-worker executable (default: found next to the build tree or on PATH)");
  CLI11_PARSE(app, argc, argv);
  if (o.useDb && o.defaultSchedule) {
    fmt::print(stderr, "bench_suite: error: --use-db and --default-schedule exclude each other\n");
    return 1;
  }
  if (!o.schedulesFiles.empty()) {
    if (o.defaultSchedule) {
      fmt::print(stderr, "bench_suite: error: --schedules and --default-schedule exclude each other\n");
      return 1;
    }
    for (const std::string& file : o.schedulesFiles) {
      try {
        for (auto& [name, earlier] : loadEarlierSchedules(file)) o.earlier[name].push_back({file, earlier});
      } catch (const std::exception& e) {
        fmt::print(stderr, "bench_suite: error: --schedules {}: {}\n", file, e.what());
        return 1;
      }
    }
  }
  if (!o.peerTimesFile.empty()) {
    try {
      o.peerTimes = loadPeerTimes(o.peerTimesFile);
    } catch (const std::exception& e) {
      fmt::print(stderr, "bench_suite: error: --peer-times {}: {}\n", o.peerTimesFile, e.what());
      return 1;
    }
  }
  try {
    return run(o);
  } catch (const NoDeviceError& e) {
    fmt::print(stderr, "bench_suite: error: no CUDA device to benchmark on: {}\n", e.what());
    return 4;
  } catch (const std::exception& e) {
    fmt::print(stderr, "bench_suite: error: {}\n", e.what());
    return 1;
  }
}
