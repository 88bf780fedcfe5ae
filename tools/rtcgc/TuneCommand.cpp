#include "TuneCommand.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "CommandLine.h"
#include "ExitCodes.h"
#include "ManifestTune.h"
#include "MpiTune.h"
#include "driver/Pipeline.h"
#include "ir/Counts.h"
#include "reference/HostArgs.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "schedule/DeviceModels.h"
#include "schedule/Mma.h"
#include "schedule/PolicyRewrite.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"
#include "tune/Report.h"
#include "tune/ResultJson.h"
#include "tune/Tuner.h"
#include "tune/TuningDb.h"

namespace fs = std::filesystem;
using namespace rtcg;
using namespace rtcgc;

namespace {

// The peak of an H100/H200 SXM (non-tensor FMA rates: FP32 67, FP64 34 TF/s) at the kernel's
// arithmetic, for "% of roofline" where the device's own peak is unknown (an architecture
// schedule/DeviceModels.h does not know; TuneResult::peakGflops 0).
double peakGflops(const TuneResult& r) {
  if (r.peakGflops > 0) return r.peakGflops;
  const DeviceModel h100;
  return arithmeticPeak(h100.peakFp32Flops, h100.peakFp64Flops, r.ops) * 1e-9;
}

// Progress on stderr: one updating line on a terminal, occasional plain lines otherwise. Log lines
// come from the compile pool's threads and progress from the measuring workers' (one per device):
// calls are serialized.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressPrinter() { clear(); }  // an error message then starts on a clean line

  void log(const std::string& line) {
    std::lock_guard<std::mutex> lock(mutex_);
    clear();
    fmt::print(stderr, "{}\n", line);
    if (tty_ && !last_.empty()) fmt::print(stderr, "{}", last_);
  }

  void update(const TuneProgress& p) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string best = p.best ? fmt::format("{:.4f} ms", p.best->medianMs) : "-";
    std::string line = fmt::format("[{:6.1f} s] compiled {}/{} ({} skipped or failed)  run {}  failed {}  best {}",
                                   p.elapsedSeconds, p.compiled, p.generated, p.compileFailed, p.measured, p.failed,
                                   best);
    bool improved = p.best && (!lastBest_ || p.best->medianMs < *lastBest_);
    if (p.best) lastBest_ = p.best->medianMs;
    if (tty_) {
      last_ = "\r\033[K" + line;
      fmt::print(stderr, "{}", last_);
      std::fflush(stderr);
    } else if (improved || p.measured % 25 == 0) {
      fmt::print(stderr, "{}\n", line);
    }
  }

  void done() {
    std::lock_guard<std::mutex> lock(mutex_);
    clear();
    last_.clear();
  }

 private:
  void clear() {
    if (tty_ && !last_.empty()) fmt::print(stderr, "\r\033[K");
  }
  bool tty_;
  std::mutex mutex_;
  std::string last_;
  std::optional<double> lastBest_;
};

std::string percent(std::optional<double> f) { return f ? fmt::format("{:.1f}%", *f * 100) : "-"; }

nlohmann::json recordJson(const CandidateRecord& c, const TuneResult& r) {
  nlohmann::json j = {{"schedule", c.schedule},   {"status", statusName(c.status)}, {"medianMs", c.medianMs},
                      {"gflops", c.gflops},       {"gbytes", c.gbytes},             {"registers", c.registers},
                      {"spillBytes", c.spillBytes}, {"sharedBytes", c.sharedBytes}, {"occupancy", c.occupancy},
                      {"relativeError", c.relativeError}, {"compileMs", c.compileMs}};
  if (!c.reason.empty()) j["reason"] = c.reason;
  if (auto f = rooflineFraction(c, peakGflops(r), r.peakBandwidthGBs)) j["roofline"] = *f;
  return j;
}

std::vector<const CandidateRecord*> topVerified(const TuneResult& r, size_t count) {
  std::vector<const CandidateRecord*> v;
  for (const CandidateRecord& c : r.candidates)
    if (c.status == CandidateStatus::Verified) v.push_back(&c);
  std::stable_sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->medianMs < b->medianMs; });
  if (v.size() > count) v.resize(count);
  return v;
}

// The device that measured the search, "2 x NAME" with --devices.
std::string measuredOn(const TuneResult& r) {
  return r.devices > 1 ? fmt::format("{} x {}", r.devices, r.key.device) : r.key.device;
}

void printTable(const TuneResult& r) {
  const TuningKey& k = r.key;
  fmt::print("{} ({}) on {} ({}): {} candidates in {:.1f} s\n", k.kernelName, k.sizes, measuredOn(r), k.arch,
             r.candidates.size(), r.wallSeconds);
  fmt::print("  {} enumerated, {} pruned, {} sampled out; {} compiled ({:.1f}/s on {} threads), {} failed to compile, "
             "{} skipped\n",
             r.enumerated, r.pruned, r.sampledOut, r.compiled, r.candidatesPerSecond, r.compileThreads, r.compileFailed,
             r.skipped);
  if (r.warmStarted > 0 || r.refined > 0)
    fmt::print("  {} from the database's winners at other sizes, {} from refinement\n", r.warmStarted, r.refined);
  if (r.resumedSkipped > 0) fmt::print("  {} measured by earlier searches, not measured again\n", r.resumedSkipped);
  fmt::print("  {} verified, {} wrong, {} faulted, {} timed out, {} failed to launch, {} not measured{}\n", r.verified,
             r.wrong, r.faulted, r.timedOut, r.launchFailed, r.notMeasured,
             r.timeLimitReached ? " (time limit reached)" : "");
  auto top = topVerified(r, 10);
  if (!top.empty()) {
    fmt::print("\n  {:>4} {:>10} {:>9} {:>9} {:>9} {:>5} {:>5}  {}\n", "rank", "ms", "GF/s", "GB/s", "roofline", "regs",
               "occ", "schedule");
    for (size_t i = 0; i < top.size(); ++i) {
      const CandidateRecord& c = *top[i];
      fmt::print("  {:>4} {:>10.4f} {:>9.1f} {:>9.1f} {:>9} {:>5} {:>4.0f}%  {}\n", i + 1, c.medianMs, c.gflops,
                 c.gbytes, percent(rooflineFraction(c, peakGflops(r), r.peakBandwidthGBs)), c.registers,
                 c.occupancy * 100, c.schedule);
    }
  }
  if (r.bestOfAllSearches)
    fmt::print("\n  best of this and the earlier searches of this key: {:.4f} ms ({}, search {})\n",
               r.bestOfAllSearches->medianMs, r.bestOfAllSearches->schedule, r.bestOfAllSearches->searchId);
  if (r.defaultSchedule) {
    const CandidateRecord& d = *r.defaultSchedule;
    if (d.status == CandidateStatus::Verified) {
      fmt::print("\n  default schedule: {:.4f} ms, {:.1f} GF/s, {:.1f} GB/s ({})", d.medianMs, d.gflops, d.gbytes,
                 d.schedule);
      if (r.best && r.best->medianMs > 0) fmt::print("; the best is {:.2f}x faster", d.medianMs / r.best->medianMs);
      fmt::print("\n");
    } else {
      fmt::print("\n  default schedule: {}: {}\n", statusName(d.status), d.reason);
    }
  }
  fmt::print("  roofline: the larger of GF/s over {:.0f} GF/s ({} peak{}) and GB/s over {:.0f} "
             "GB/s (this device's theoretical DRAM bandwidth, memory clock x bus width); rates count the kernel's "
             "ideal flops and bytes\n",
             peakGflops(r), r.arithmetic, r.peakGflops > 0 ? " of this device" : " of an H100/H200 SXM",
             r.peakBandwidthGBs);
  int shown = 0;
  for (const CandidateRecord& c : r.candidates) {
    if (c.status == CandidateStatus::Verified || c.status == CandidateStatus::Skipped) continue;
    if (shown++ == 0) fmt::print("\n  failures:\n");
    if (shown > 10) {
      fmt::print("  ... (see --report or the tuning database for all)\n");
      break;
    }
    fmt::print("  {}: {}: {}\n", statusName(c.status), c.schedule, c.reason);
  }
}

nlohmann::json summaryJson(const TuneResult& r) {
  nlohmann::json top = nlohmann::json::array();
  for (const CandidateRecord* c : topVerified(r, 10)) top.push_back(recordJson(*c, r));
  nlohmann::json j = {
      {"kernel", r.key.kernelName},
      {"kernelHash", r.key.kernelHash},
      {"sizes", r.key.sizes},
      {"device", r.key.device},
      {"arch", r.key.arch},
      {"searchId", r.searchId},
      {"wallSeconds", r.wallSeconds},
      {"referenceSeconds", r.referenceSeconds},
      {"reference", r.reference},
      {"devices", r.devices},
      {"compileThreads", r.compileThreads},
      {"compilesPerSecond", r.candidatesPerSecond},
      {"compiledOn", compiledOnJson(r.compiledOn)},
      {"counts",
       {{"enumerated", r.enumerated},
        {"pruned", r.pruned},
        {"sampledOut", r.sampledOut},
        {"generated", r.generated},
        {"refined", r.refined},
        {"warmStarted", r.warmStarted},
        {"resumedSkipped", r.resumedSkipped},
        {"compiled", r.compiled},
        {"compileFailed", r.compileFailed},
        {"skipped", r.skipped},
        {"verified", r.verified},
        {"wrong", r.wrong},
        {"faulted", r.faulted},
        {"timedOut", r.timedOut},
        {"launchFailed", r.launchFailed},
        {"notMeasured", r.notMeasured}}},
      {"timeLimitReached", r.timeLimitReached},
      {"workerRestarts", r.workerRestarts},
      {"peakGflops", peakGflops(r)},
      {"peakBandwidthGBs", r.peakBandwidthGBs},
      {"top", top},
      {"bestOverTime", r.bestOverTime},
  };
  nlohmann::json timeline = nlohmann::json::array();
  for (const auto& [event, seconds] : r.timeline) timeline.push_back({{"event", event}, {"seconds", seconds}});
  j["timeline"] = std::move(timeline);
  j["best"] = r.best ? recordJson(*r.best, r) : nlohmann::json(nullptr);
  if (r.bestOfAllSearches) j["bestOfAllSearches"] = recordJson(*r.bestOfAllSearches, r);
  j["default"] = r.defaultSchedule ? recordJson(*r.defaultSchedule, r) : nlohmann::json(nullptr);
  return j;
}

// Pruned candidates counted by the kind of their reason (`kindOf`), most frequent first.
std::vector<std::pair<std::string, int64_t>> countReasons(const std::vector<PrunedCandidate>& pruned,
                                                          const std::function<std::string(const std::string&)>& kindOf) {
  std::map<std::string, int64_t> counts;
  for (const PrunedCandidate& p : pruned) ++counts[kindOf(p.reason)];
  std::vector<std::pair<std::string, int64_t>> out(counts.begin(), counts.end());
  std::sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  return out;
}

// The report of a search of `bound`; its breakdown reads the candidates' plans, made under the
// limits of the searched architecture's device model (the opt-in shared memory of an H100 where the
// architecture has none).
ReportData reportData(const TuneResult& r, const TuneArgs& a, const Kernel& bound) {
  ReportData d;
  const std::optional<DeviceModel> model = archDeviceModel(r.key.arch);
  ScheduleLimits limits = model ? modelScheduleLimits(*model) : deviceScheduleLimits(227 * 1024, 1024);
  limits.computeCapability = computeCapabilityOf(r.key.arch);
  d.plans = planCandidates(policyKernel(bound, r.precision), r.candidates, limits);  // plans of what was scheduled
  d.kernelName = r.key.kernelName;
  d.kernelHash = r.key.kernelHash;
  d.sizes = r.key.sizes;
  d.device = measuredOn(r);
  d.arch = r.key.arch;
  d.settings = fmt::format("max-candidates={}, time-limit={}, min-threads={}, min-blocks={}, repeats={}, seed={}, "
                           "reference={}, precision={}",
                           a.maxCandidates ? std::to_string(a.maxCandidates) : "none",
                           a.timeLimit > 0 ? fmt::format("{:g}s", a.timeLimit) : "none", a.minThreads, a.minBlocks,
                           a.repeats, a.seed, r.reference, precisionName(r.precision));
  d.candidates = r.candidates;
  d.completedSeconds = r.completedSeconds;
  d.bestOverTime = r.bestOverTime;
  d.best = r.best;
  d.defaultSchedule = r.defaultSchedule;
  d.enumerated = r.enumerated;
  d.pruned = r.pruned;
  d.generated = r.generated;
  d.compiled = r.compiled;
  d.compileFailed = r.compileFailed + r.skipped;
  d.verified = r.verified;
  d.failed = r.wrong + r.faulted + r.timedOut + r.launchFailed;
  d.wallSeconds = r.wallSeconds;
  d.compileSeconds = r.compileSeconds;
  d.compilesPerSecond = r.candidatesPerSecond;
  d.prunedReasons = countReasons(r.prunedList, [](const std::string& reason) { return reason.substr(0, reason.find(" (")); });
  d.peakGflops = peakGflops(r);
  d.peakGbytesPerSecond = r.peakBandwidthGBs;
  return d;
}

// The search options of the command line; log lines start with `logPrefix`.
TuneOptions tuneOptions(const TuneArgs& a, ProgressPrinter& printer, const std::string& logPrefix) {
  TuneOptions o = searchOptions(a);
  o.deviceProperties = testDeviceFromEnv();  // a stand-in device for tests, if set
  o.log = [&printer, logPrefix](const std::string& s) { printer.log(logPrefix + s); };
  o.progress = [&printer](const TuneProgress& p) { printer.update(p); };
  if (a.timeline)
    o.timeline = [&printer, logPrefix](const std::string& event, double seconds) {
      if (event.rfind("busy: ", 0) == 0)
        printer.log(fmt::format("{}timeline: {} {:.3f} s", logPrefix, event, seconds));
      else
        printer.log(fmt::format("{}timeline: {:8.3f} s  {}", logPrefix, seconds, event));
    };
  return o;
}

// --dry-run: the space as the search would see it on an H100/H200 (the static model's device,
// its opt-in shared memory), and the candidates it would take, best predicted first. Needs no GPU.
int dryRun(const Kernel& bound, const TuneArgs& a) {
  SpaceOptions o = searchOptions(a).space;
  const std::string arch = a.arch.empty() ? "sm_90" : a.arch;
  o.device = *archDeviceModel(arch);  // checked by runTuneCommand
  o.limits = modelScheduleLimits(o.device);
  // As the search does: part of the budget waits for refinement rounds, which pick from what the
  // sample leaves out once they know the fastest measured candidates.
  const int64_t refine = refinementBudget(o.maxCandidates);
  o.maxCandidates -= refine;
  Space space = enumerateSchedules(policyKernel(bound, o.precision), o);
  const int64_t refinable = std::min<int64_t>(refine, int64_t(space.reserve.size()));  // what refinement can add
  // The reason's kind: before any detail in parentheses or after a colon, numbers as N.
  // (Each run of digits replaced by hand: a std::regex built per pruned candidate was a tenth of a
  // dry run's time.)
  const std::vector<std::pair<std::string, int64_t>> byCount = countReasons(space.pruned, [](const std::string& reason) {
    std::string r;
    bool digits = false;  // inside a run of digits
    for (char c : reason.substr(0, std::min(reason.find(" ("), reason.find(':')))) {
      const bool digit = c >= '0' && c <= '9';
      if (!digit) r += c;
      else if (!digits) r += 'N';
      digits = digit;
    }
    return r.size() > 70 ? r.substr(0, 70) + "..." : r;
  });
  // The arithmetic the model divides by: each precision at its own peak (an f64 kernel at FP64's).
  const FloatOpsByPrecision ops = floatOpsByPrecision(bound);
  const double devicePeak = arithmeticPeak(o.device.peakFp32Flops, o.device.peakFp64Flops, ops);
  const size_t kept = space.candidates.size() + space.reserve.size();
  if (a.json) {
    nlohmann::json j;
    j["arithmetic"] = arithmeticName(ops);
    j["peakGflops"] = devicePeak * 1e-9;
    j["enumerated"] = space.enumerated;
    j["kept"] = kept;
    j["pruned"] = space.pruned.size();
    j["refinementBudget"] = refinable;
    j["candidates"] = nlohmann::json::array();
    for (const Candidate& c : space.candidates)
      j["candidates"].push_back({{"schedule", c.text}, {"predictedUs", c.score}, {"threads", c.threadsPerBlock},
                                 {"blocks", c.blocks}, {"registerTile", c.registerTile},
                                 {"sharedBytes", c.sharedBytes}, {"occupancy", c.occupancy}});
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  // Several nests: the kept candidates combine the nests' schedules (and fused launches), so they
  // may outnumber the schedules enumerated nest by nest; the line says so.
  const std::string counts =
      bound.nests.size() > 1
          ? fmt::format("{} schedules of its {} nests enumerated, {} candidates kept (the nests' schedules combined, "
                        "and fused launches)", space.enumerated, bound.nests.size(), kept)
          : fmt::format("{} enumerated, {} kept", space.enumerated, kept);
  fmt::print("space of {} on an {} model ({} KiB shared per block at most): {}, {} pruned\n", bound.name, arch,
             o.limits.maxSharedBytes / 1024, counts, space.pruned.size());
  const std::string arithmetic = arithmeticName(ops);  // integer operations: a rate of ops, the SIMT one
  fmt::print("arithmetic: {}: the model's peak is {:.1f} {} (FP32 {:.1f}, FP64 {:.1f} TF/s on this device)\n",
             arithmetic, devicePeak * 1e-12, arithmetic == "integer" ? "TOPS (SIMT)" : "TF/s",
             o.device.peakFp32Flops * 1e-12, o.device.peakFp64Flops * 1e-12);
  for (size_t q = 0; q < byCount.size() && q < 6; ++q) fmt::print("  pruned {:6}  {}\n", byCount[q].second, byCount[q].first);
  fmt::print("the search would take {} candidates{}{}, best predicted first:\n", space.candidates.size(),
             a.maxCandidates ? fmt::format(" (--max-candidates {}, seed {})", a.maxCandidates, a.seed) : "",
             refinable > 0
                 ? fmt::format(", then up to {} more in refinement rounds around the fastest it measures", refinable)
                 : "");
  // Rows of unequal length (a triangle): a column for the model's work balance over the block slots
  // (SpaceModel.h), which ranks the distributions of the rows (cyclic rows against consecutive ones).
  const bool balanced = std::any_of(space.candidates.begin(), space.candidates.end(),
                                    [](const Candidate& c) { return c.balance != 1; });
  fmt::print("{:>5}  {:>10}  {:>7}  {:>8}  {:>4}  {:>7}  {:>5}  {}{}\n", "rank", "model us", "threads", "blocks", "tile",
             "shared", "occ", balanced ? "  bal  " : "", "schedule");
  for (size_t q = 0; q < space.candidates.size(); ++q) {
    const Candidate& c = space.candidates[q];
    fmt::print("{:>5}  {:>10.1f}  {:>7}  {:>8}  {:>4}  {:>7}  {:>4.0f}%  {}{}\n", q + 1, c.score, c.threadsPerBlock,
               c.blocks, c.registerTile, c.sharedBytes, 100 * c.occupancy,
               balanced ? fmt::format("{:>4.0f}%  ", 100 * c.balance) : "", c.text);
  }
  return 0;
}

// --input NAME=FILE: each an in/inout array of the kernel (else exit 2), its file read now so that
// a bad one fails before any GPU work (exit 1, naming the file), as an absolute path for the worker.
int checkInputFiles(const Kernel& bound, const std::vector<std::string>& specs, std::map<std::string, std::string>& out) {
  std::map<std::string, std::string> given;
  for (const std::string& spec : specs) {
    const auto [name, path] = parseInputSpec(bound, spec);
    if (!given.emplace(name, path).second) {
      fmt::print(stderr, "rtcgc: error: --input gives '{}' twice\n", name);
      return 2;
    }
  }
  out = checkArrayFiles(bound, given);  // throws rtcg::Error: exit 1
  return 0;
}

}  // namespace

int runSingle(const TuneArgs& a, const std::function<void(TuneOptions&)>& adjust) {
  SourceText src = readSource(a.file);
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, parseDefines(a.defines), a.kernel, diags);
  std::string rendered = renderDiagnostics(diags, src);
  if (!rendered.empty()) std::fputs(rendered.c_str(), stderr);
  if (!bound) return 1;
  // A kernel without statements has no loops to schedule (its space was an internal error).
  if (bound->nests.empty()) {
    fmt::print(stderr, "rtcgc: error: kernel '{}' has no statements: there is nothing to tune\n", bound->name);
    return 1;
  }

  if (std::string why = precisionObstacle(*bound, *parsePrecision(a.precision)); !why.empty()) {
    fmt::print(stderr, "rtcgc: error: {}\n", why);
    return 1;
  }
  if (a.dryRun) return dryRun(*bound, a);
  std::map<std::string, std::string> inputFiles;
  if (int rc = checkInputFiles(*bound, a.inputs, inputFiles); rc != 0) return rc;

  fmt::print(stderr, "{}\n", timeLimitLine(a));
  ProgressPrinter printer;
  TuneOptions options = tuneOptions(a, printer, "rtcgc tune: ");
  options.inputFiles = std::move(inputFiles);
  if (adjust) adjust(options);
  TuneResult r = tune(a.file, src.text, *bound, options);
  printer.done();

  if (!a.report.empty()) {
    writeFileAtomically(a.report, renderSearchReport(reportData(r, a, *bound)));
    fmt::print(stderr, "rtcgc tune: wrote the report to {}\n", a.report);
  }
  if (a.json)
    fmt::print("{}\n", summaryJson(r).dump(2));
  else
    printTable(r);
  if (!r.best) {
    fmt::print(stderr, "rtcgc: error: no candidate was verified (see the failures above)\n");
    return 5;
  }
  return 0;
}

// ---- --manifest ----------------------------------------------------------------------------------

namespace {

// What happened to one manifest entry.
struct ManifestOutcome {
  const manifest::Planned* planned = nullptr;
  std::string outcome;  // "tuned", "skipped", "duplicate", "failed"
  std::string detail;   // one line: the best time, or why it was skipped or failed
  int code = 0;         // for "failed": the exit status it stands for
  std::optional<TuneResult> result;
  std::string report;   // the HTML report written for it
  int rank = 0;         // the MPI rank that searched it, and when (KeyOutcome)
  double startedAt = 0, endedAt = 0;
};

// search.html -> search-matmul-0123abcd.html: one report per kernel, beside the name given.
std::string reportPathFor(const std::string& report, const manifest::Planned& p) {
  fs::path path(report);
  std::string name = fmt::format("{}-{}-{}{}", path.stem().string(), p.bound->name, p.kernelHash.substr(0, 8),
                                 path.extension().string());
  return (path.parent_path() / name).string();
}

std::string kernelLabel(const manifest::Entry& e) {
  if (e.kernel) return *e.kernel;
  if (e.kernels.empty()) return "?";
  std::string out;
  for (const std::string& k : e.kernels) out += (out.empty() ? "" : "|") + k;
  return out;
}

std::string tunedDetail(const TuneResult& r) {
  std::string detail = fmt::format("{:.4f} ms", r.best->medianMs);
  if (r.defaultSchedule && r.defaultSchedule->status == CandidateStatus::Verified && r.best->medianMs > 0)
    detail += fmt::format(" (default {:.4f} ms, {:.2f}x)", r.defaultSchedule->medianMs,
                          r.defaultSchedule->medianMs / r.best->medianMs);
  return detail + ": " + r.best->schedule;
}

void printManifestTable(const std::vector<ManifestOutcome>& outcomes, const std::string& db) {
  std::map<std::string, int> counts;
  for (const ManifestOutcome& o : outcomes) ++counts[o.outcome];
  fmt::print("\nmanifest: {} kernel{}: {} tuned, {} skipped, {} duplicate, {} failed; database: {}\n", outcomes.size(),
             outcomes.size() == 1 ? "" : "s", counts["tuned"], counts["skipped"], counts["duplicate"],
             counts["failed"], db);
  if (outcomes.empty()) return;
  size_t wk = 6, wl = 8, ws = 5;
  for (const ManifestOutcome& o : outcomes) {
    wk = std::max(wk, kernelLabel(o.planned->entry).size());
    wl = std::max(wl, o.planned->entry.location().size());
    ws = std::max(ws, o.planned->sizes.size());
  }
  fmt::print("  {:<{}}  {:<{}}  {:<{}}  {}\n", "kernel", wk, "location", wl, "sizes", ws, "outcome");
  for (const ManifestOutcome& o : outcomes)
    fmt::print("  {:<{}}  {:<{}}  {:<{}}  {}: {}\n", kernelLabel(o.planned->entry), wk, o.planned->entry.location(),
               wl, o.planned->sizes, ws, o.outcome, o.detail);
}

nlohmann::json manifestJson(const std::vector<ManifestOutcome>& outcomes, const std::string& db) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const ManifestOutcome& o : outcomes) {
    const manifest::Entry& e = o.planned->entry;
    nlohmann::json j = {{"manifest", e.manifestPath}, {"index", e.index},   {"file", e.file},
                        {"line", e.line},             {"column", e.column}, {"kernel", kernelLabel(e)},
                        {"sizes", o.planned->sizes},  {"outcome", o.outcome}};
    if (o.outcome != "tuned" || !o.result) j["reason"] = o.detail;  // a key tuned by an earlier run says so
    if (!o.planned->kernelHash.empty()) j["kernelHash"] = o.planned->kernelHash;
    if (o.result) j["result"] = summaryJson(*o.result);
    if (o.startedAt > 0) {
      j["rank"] = o.rank;
      j["startedAt"] = o.startedAt;
      j["endedAt"] = o.endedAt;
    }
    if (!o.report.empty()) j["report"] = o.report;
    kernels.push_back(std::move(j));
  }
  return {{"database", db}, {"kernels", kernels}};
}

// The report, table and one-line detail of a key's search that finished.
void finishTuned(const TuneArgs& a, ManifestOutcome& o) {
  const manifest::Planned& p = *o.planned;
  const TuneResult& r = *o.result;
  if (!a.report.empty()) {
    o.report = reportPathFor(a.report, p);
    writeFileAtomically(o.report, renderSearchReport(reportData(r, a, *p.bound)));
    fmt::print(stderr, "rtcgc tune: wrote the report of {} to {}\n", p.bound->name, o.report);
  }
  if (!a.json) {
    printTable(r);
    fmt::print("\n");
  }
  if (r.best) {
    o.detail = tunedDetail(r);
  } else {
    o.outcome = "failed", o.code = 5, o.detail = "no candidate was verified";
    fmt::print(stderr, "rtcgc: error: {}: {}: no candidate was verified (see the failures above)\n",
               p.entry.location(), p.bound->name);
  }
}

// Each key one after another, here, in tuningOrder.
void tuneHere(const TuneArgs& a, const std::vector<ManifestKey>& keys, const KeyDone& done) {
  std::vector<size_t> order = tuningOrder(a, keys);
  for (size_t i = 0; i < order.size(); ++i) {
    const size_t k = order[i];
    fmt::print(stderr, "rtcgc tune: [{}/{}] {}\n", i + 1, keys.size(), keys[k].label);
    std::string prefix = fmt::format("rtcgc tune: [{}/{} {}] ", i + 1, keys.size(), keys[k].bound.name);
    KeyOutcome o = tuneKey(a, keys[k], prefix, nullptr);
    if (o.code == 4) throw NoDeviceError(o.error);  // no kernel can be tuned: exit 4
    done(k, std::move(o));
  }
}

}  // namespace

std::vector<ManifestKey> manifestKeys(const std::vector<manifest::Planned>& plan) {
  std::vector<ManifestKey> keys;
  for (size_t i = 0; i < plan.size(); ++i) {
    const manifest::Planned& p = plan[i];
    if (p.outcome != manifest::Outcome::Tune) continue;
    keys.push_back({i, fmt::format("<kernel at {}>", p.entry.location()), p.entry.source, *p.bound,
                    fmt::format("{} ({}) at {}", p.bound->name, p.sizes, p.entry.location())});
  }
  return keys;
}

std::vector<size_t> tuningOrder(const TuneArgs& a, const std::vector<ManifestKey>& keys) {
  // A time-limited search without a candidate budget: about what one measures in its limit.
  constexpr int64_t kCandidatesWithoutBudget = 64;
  const int64_t candidates = a.maxCandidates > 0 ? a.maxCandidates : kCandidatesWithoutBudget;
  std::vector<double> work;
  for (const ManifestKey& key : keys) {
    double w = 0;  // a kernel the estimate cannot count: its own search says why, in its turn
    try {
      w = searchWorkEstimate(key.bound, candidates, a.referenceMaxFlops);
    } catch (const Error&) {
    }
    work.push_back(w);
  }
  std::vector<size_t> order(keys.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return work[x] > work[y]; });
  return order;
}

KeyOutcome tuneKey(const TuneArgs& a, const ManifestKey& key, const std::string& logPrefix,
                   const std::function<void(TuneOptions&)>& adjust) {
  KeyOutcome o;
  ProgressPrinter printer;
  o.startedAt = unixNow();
  try {
    TuneOptions options = tuneOptions(a, printer, logPrefix);
    if (adjust) adjust(options);
    o.recorded = options.writeDb && options.dbPath != "-";
    // The source, kernel and sizes Context::compile has: the key is the one it looks up.
    o.result = tune(key.fileName, key.source, key.bound, options);
  } catch (const NoDeviceError& e) {
    o.code = 4, o.error = e.what();
  } catch (const Error& e) {
    o.code = 1, o.error = e.what();
  } catch (const InternalError& e) {
    o.code = 70, o.error = e.what();
  }
  printer.done();
  o.endedAt = unixNow();
  return o;
}

int runManifestEntries(const TuneArgs& a, const std::vector<manifest::Entry>& entries, const ManifestDealer* dealer) {
  fmt::print(stderr, "{} (for each kernel)\n", timeLimitLine(a));
  std::vector<manifest::Planned> plan = manifest::plan(entries);
  std::vector<ManifestOutcome> outcomes;
  for (const manifest::Planned& p : plan) {
    ManifestOutcome o;
    o.planned = &p;
    switch (p.outcome) {
      case manifest::Outcome::Tune: o.outcome = "tuned"; break;  // until it fails
      case manifest::Outcome::Skipped: o.outcome = "skipped"; break;
      case manifest::Outcome::Duplicate: o.outcome = "duplicate"; break;
      case manifest::Outcome::Invalid: o.outcome = "failed"; o.code = 1; break;
    }
    if (p.outcome != manifest::Outcome::Tune) {
      o.detail = p.reason;
      fmt::print(stderr, "rtcgc tune: {}: {}: {}\n", p.entry.location(), o.outcome, p.reason);
      if (!p.diagnostics.empty()) std::fputs(p.diagnostics.c_str(), stderr);
    }
    outcomes.push_back(std::move(o));
  }
  std::vector<ManifestKey> keys = manifestKeys(plan);
  fmt::print(stderr, "rtcgc tune: {} kernel{} in the manifest{}, {} to tune\n", plan.size(),
             plan.size() == 1 ? "" : "s", a.manifests.size() == 1 ? "" : "s", keys.size());
  if (!keys.empty() && !dealer && !testDeviceFromEnv() && !cuda::cudaAvailable()) {
    fmt::print(stderr, "rtcgc: error: {}\n", cuda::unavailableReason());
    return 4;
  }

  KeyDone done = [&](size_t k, KeyOutcome ko) {
    ManifestOutcome& o = outcomes[keys[k].plan];
    const manifest::Planned& p = *o.planned;
    o.rank = ko.rank, o.startedAt = ko.startedAt, o.endedAt = ko.endedAt;
    if (!ko.earlier.empty()) {
      o.detail = ko.earlier;
      fmt::print(stderr, "rtcgc tune: {}: tuned {}\n", p.entry.location(), o.detail);
      return;
    }
    if (!ko.result) {
      o.outcome = ko.lost ? "lost" : "failed", o.code = ko.code, o.detail = ko.error;
      fmt::print(stderr, "rtcgc: error: {}: {}\n", p.entry.location(), o.detail);
      o.detail = o.detail.substr(0, o.detail.find('\n'));
      return;
    }
    o.result = std::move(ko.result);
    finishTuned(a, o);
  };
  if (dealer)
    (*dealer)(keys, done);
  else
    tuneHere(a, keys, done);

  std::string db = a.db == "-" ? "none" : a.db;
  if (db.empty()) {
    try {
      db = TuningDb::defaultPath();
    } catch (const Error&) {
      db = "the default (no cache directory)";
    }
  }
  if (a.json)
    fmt::print("{}\n", manifestJson(outcomes, db).dump(2));
  else
    printManifestTable(outcomes, db);
  for (const ManifestOutcome& o : outcomes)
    if (o.outcome == "failed" || o.outcome == "lost") return o.code;
  return 0;
}

namespace {

int runManifest(const TuneArgs& a) {
  // Every manifest is read and checked before anything runs: a malformed one changes nothing.
  std::vector<manifest::Entry> entries;
  for (const std::string& path : a.manifests) {
    try {
      std::vector<manifest::Entry> more = manifest::readManifest(path);
      entries.insert(entries.end(), more.begin(), more.end());
    } catch (const manifest::ManifestError& e) {
      fmt::print(stderr, "{}\n", e.what());
      return 1;
    }
  }
  return runManifestEntries(a, entries, nullptr);
}

}  // namespace

std::optional<std::vector<int>> parseDeviceList(const std::string& text) {
  if (text == "all") return std::vector<int>{};
  std::vector<int> ordinals;
  size_t at = 0;
  for (;;) {
    size_t comma = text.find(',', at);
    std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (item.empty() || item.size() > 4 || item.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    int ordinal = std::stoi(item);
    if (std::find(ordinals.begin(), ordinals.end(), ordinal) != ordinals.end()) return std::nullopt;
    ordinals.push_back(ordinal);
    if (comma == std::string::npos) return ordinals;
    at = comma + 1;
  }
}

std::string timeLimitLine(const TuneArgs& a) {
  if (a.timeLimit <= 0) return "rtcgc tune: no time limit (--time-limit 0): the whole space";
  return fmt::format("rtcgc tune: time limit {:g} s{} (--time-limit S to change it, 0 for the whole space; --resume "
                     "continues a search it cut)",
                     a.timeLimit, a.timeLimit == kDefaultTuneTimeLimit ? ", the default" : "");
}

TuneOptions searchOptions(const TuneArgs& a) {
  TuneOptions o;
  // Checked by the option's validator. "all" asks the driver; without one (the dry run needs
  // none) it stays device 0, and a search then fails as it would on device 0.
  o.deviceOrdinals = parseDeviceList(a.devices).value_or(std::vector<int>{0});
  if (o.deviceOrdinals.empty()) {
    int count = cuda::cudaAvailable() ? cuda::Device::count() : 0;
    for (int d = 0; d < count; ++d) o.deviceOrdinals.push_back(d);
    if (o.deviceOrdinals.empty()) o.deviceOrdinals.push_back(0);
  }
  o.space.maxCandidates = a.maxCandidates;
  o.space.minThreads = a.minThreads;
  o.space.minBlocks = a.minBlocks;
  o.space.seed = a.seed;
  o.space.precision = parsePrecision(a.precision).value_or(Precision::Ieee);  // checked by the option
  o.timeLimitSeconds = a.timeLimit;
  o.repeats = a.repeats;
  o.compileThreads = a.compileThreads;
  o.seed = a.seed;
  o.dbPath = a.db;
  o.resume = a.resume;
  o.workerPath = a.worker;
  o.referenceMaxFlops = a.fullReference ? 0 : a.referenceMaxFlops;
  return o;
}

TuneCommand addTuneCommand(CLI::App& app) {
  TuneCommand t;
  t.args = std::make_shared<TuneArgs>();
  TuneArgs& a = *t.args;
  CLI::App* cmd = app.add_subcommand("tune", "search the schedule space on the GPU: compile, verify and time candidates");
  t.command = cmd;
  cmd->add_option("file", a.file, "DSL source file (or --manifest)");
  cmd->add_option("--manifest", a.manifests,
                  "tune every kernel of rtcg-scan's manifest FILE ahead of time, under the key "
                  "rtcg::Context::compile looks up; instead of FILE and -D (repeat for several manifests)")
      ->allow_extra_args(false);
  cmd->add_option("-D,--define", a.defines, "bind a size parameter: -D n=4096")->allow_extra_args(false);
  cmd->add_option("-k,--kernel", a.kernel, "the kernel to tune when the file defines several");
  cmd->add_option("--max-candidates", a.maxCandidates, "try at most N candidates (a deterministic sample; default all)")
      ->check(nonNegative());
  cmd->add_option("--time-limit", a.timeLimit, "start no new candidate after S seconds of search (default 300; 0: the whole space)")
      ->check(nonNegative());
  cmd->add_option("--min-threads", a.minThreads, "threads per block at least T (default 32)")->check(positive());
  cmd->add_option("--min-blocks", a.minBlocks, "blocks per launch at least B (default 1)")->check(positive());
  cmd->add_option("--repeats", a.repeats, "timed runs per candidate, median (default 20)")->check(CLI::Range(1, 100000));
  cmd->add_option("--compile-threads", a.compileThreads, "parallel NVRTC compile processes (default: all cores, at most 16 per device of --devices; under MPI each rank's slots in rank 0's pool)")
      ->check(nonNegative());
  cmd->add_option("--report", a.report, "write an HTML report of the search to FILE");
  cmd->add_flag("--json", a.json, "print a JSON summary instead of the table");
  cmd->add_flag("--timeline", a.timeline,
                "print when each phase of the search ends (seconds since it began: enumeration, reference, "
                "workers, first and last result) and where its own time went");
  cmd->add_option("--db", a.db, "tuning database (default: in the cache directory; '-': none)");
  cmd->add_flag("--resume", a.resume,
                "skip the candidates the database measured for the same kernel, sizes and device before, so that "
                "a search cut by --time-limit goes on where it stopped (an exhaustive search over several runs)");
  cmd->add_option("--devices", a.devices,
                  "measure candidates on these devices, one worker each, sharing the search: 'all' or ordinals "
                  "separated by commas (default 0); they must be the same model, since their medians are compared")
      ->check(CLI::Validator(
          [](std::string& text) {
            return parseDeviceList(text) ? std::string()
                                         : "expected 'all' or device ordinals separated by commas (e.g. 0,1), "
                                           "each listed once";
          },
          "LIST"));
  cmd->add_option("--seed", a.seed, "random seed for inputs and sampling (default 1)")->check(nonNegative());
  cmd->add_option("--rank-timeout", a.rankTimeout,
                  "under MPI: a rank that sends nothing for S seconds is lost (default 120); its key is reported "
                  "and --resume tunes it")
      ->check(positive());
  cmd->add_option("--precision", a.precision,
                  "tensor-core arithmetic contractions may use: ieee (default: no TF32; f64 contractions may use "
                  "FP64 mma), tf32x3 (3xTF32, FP32-class accuracy), tf32 (TF32 accuracy), fp64x / fp32x (f64 / f32 "
                  "contractions on INT8 tensor cores by the Ozaki scheme II, FP64- / FP32-class accuracy)")
      ->check(CLI::IsMember({"ieee", "tf32x3", "tf32", "fp64x", "fp32x"}));
  cmd->add_option("--worker", a.worker, "the rtcg-worker executable (default: $RTCG_WORKER, next to rtcgc, PATH)");
  cmd->add_option("--input", a.inputs,
                  "search on an in or inout array's values from a file: --input rowptr=rowptr.txt (whitespace-"
                  "separated numbers, row-major, one per element; the other arrays random from --seed), so that "
                  "candidates are ranked on the data the kernel will see (a sparse matrix's rows)")
      ->allow_extra_args(false);
  CLI::Option* maxFlops =
      cmd->add_option("--reference-max-flops", a.referenceMaxFlops,
                      "verify kernels of more floating-point operations than F against a sampled CPU reference "
                      "costing about F (default 2e9; 0: always the full reference)")
          ->check(nonNegative());
  cmd->add_flag("--full-reference", a.fullReference,
                "verify against the full CPU reference whatever it costs (no sampling)")
      ->excludes(maxFlops);
  cmd->add_flag("--dry-run", a.dryRun,
                "print the schedule space and the candidates the search would take (with --max-candidates and "
                "--seed), ranked by the static model, for an sm_90 device (or --arch); needs no GPU and writes "
                "nothing");
  cmd->add_option("--arch", a.arch, "with --dry-run: model a device of this architecture: sm_80 (an A100), sm_89 (an "
                                    "L40S) or sm_90 (an H100, the default)");
  return t;
}

int runTuneCommand(const TuneCommand& cmd) {
  const TuneArgs& a = *cmd.args;
  if (!a.manifests.empty() && !a.file.empty()) {
    fmt::print(stderr, "rtcgc: error: tune takes either a DSL FILE or --manifest, not both\n");
    return 2;
  }
  if (!a.manifests.empty() && (!a.defines.empty() || !a.kernel.empty())) {
    fmt::print(stderr, "rtcgc: error: -D and --kernel do not apply to --manifest: the manifest gives each kernel "
                       "and its sizes\n");
    return 2;
  }
  if (a.manifests.empty() && a.file.empty()) {
    fmt::print(stderr, "rtcgc: error: tune needs a DSL FILE with -D sizes, or --manifest FILE\n");
    return 2;
  }
  if (a.dryRun && (!a.manifests.empty() || !a.report.empty())) {
    fmt::print(stderr, "rtcgc: error: --dry-run lists the space of one DSL FILE; it takes no --manifest or --report\n");
    return 2;
  }
  if (!a.arch.empty() && !a.dryRun) {
    fmt::print(stderr, "rtcgc: error: --arch picks the device model of a --dry-run; a search models the device it "
                       "measures on\n");
    return 2;
  }
  if (!a.arch.empty() && !archDeviceModel(a.arch)) {
    fmt::print(stderr, "rtcgc: error: no device model for architecture '{}': --arch takes {}\n", a.arch,
               fmt::join(modelArchitectures(), ", "));
    return 2;
  }
  if (!a.inputs.empty() && (a.dryRun || !a.manifests.empty())) {
    fmt::print(stderr, "rtcgc: error: --input gives the arrays a search of one DSL FILE measures on; a --dry-run "
                       "measures nothing and a --manifest's kernels have their own arrays\n");
    return 2;
  }
  if (a.resume && (a.db == "-" || a.dryRun)) {
    fmt::print(stderr, "rtcgc: error: --resume continues the searches a tuning database recorded; it takes no "
                       "--db - or --dry-run\n");
    return 2;
  }
  if (launcherRanks() > 1 && !a.dryRun) return runMpiTune(a);  // as one of several ranks
  return runCommand([&] { return a.manifests.empty() ? runSingle(a, nullptr) : runManifest(a); });
}
