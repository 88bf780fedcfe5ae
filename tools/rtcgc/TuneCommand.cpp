#include "TuneCommand.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "api/Pipeline.h"
#include "support/Error.h"
#include "tune/Report.h"
#include "tune/Tuner.h"

namespace fs = std::filesystem;
using namespace rtcg;

namespace {

// FP32 peak of an H100/H200 SXM (non-tensor FMA rate), for "% of roofline".
constexpr double kPeakGflopsFp32 = 67000;

struct Exit {
  int code;
};

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fmt::print(stderr, "rtcgc: error: cannot read '{}': {}\n", path, std::strerror(errno));
    throw Exit{1};
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

SizeBindings parseDefines(const std::vector<std::string>& defines) {
  static const std::regex form(R"(\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(-?[0-9]+)\s*)");
  SizeBindings sizes;
  for (const std::string& d : defines) {
    std::smatch m;
    if (!std::regex_match(d, m, form)) {
      fmt::print(stderr, "rtcgc: error: bad size binding '-D {}': expected NAME=INTEGER, e.g. -D n=500\n", d);
      throw Exit{2};
    }
    int64_t value = 0;
    try {
      value = std::stoll(m[2].str());
    } catch (const std::out_of_range&) {
      fmt::print(stderr, "rtcgc: error: size '{}' is out of range\n", d);
      throw Exit{1};
    }
    if (!sizes.emplace(m[1].str(), value).second) {
      fmt::print(stderr, "rtcgc: error: size '{}' is bound twice\n", m[1].str());
      throw Exit{2};
    }
  }
  return sizes;
}

// Written to a temporary file in the same folder and renamed into place.
void writeFileAtomically(const std::string& path, const std::string& data) {
  fs::path target(path);
  fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  std::string tmpl = (dir / ("." + target.filename().string() + ".XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  bool ok = fd >= 0;
  size_t done = 0;
  while (ok && done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n <= 0) ok = false;
    else done += size_t(n);
  }
  if (fd >= 0) ok = (::close(fd) == 0) && ok;
  if (ok) {
    std::error_code ec;
    fs::permissions(tmpl, fs::perms(0644), ec);
    ok = std::rename(tmpl.c_str(), path.c_str()) == 0;
  }
  if (!ok) {
    int err = errno;
    if (fd >= 0) std::remove(tmpl.c_str());
    fmt::print(stderr, "rtcgc: error: cannot write '{}': {}\n", path, std::strerror(err));
    throw Exit{1};
  }
}

// Progress on stderr: one updating line on a terminal, occasional plain lines otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}
  ~ProgressPrinter() { clear(); }  // an error message then starts on a clean line

  void log(const std::string& line) {
    clear();
    fmt::print(stderr, "{}\n", line);
    if (tty_ && !last_.empty()) fmt::print(stderr, "{}", last_);
  }

  void update(const TuneProgress& p) {
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

  void done() { clear(); last_.clear(); }

 private:
  void clear() {
    if (tty_ && !last_.empty()) fmt::print(stderr, "\r\033[K");
  }
  bool tty_;
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
  if (auto f = rooflineFraction(c, kPeakGflopsFp32, r.peakBandwidthGBs)) j["roofline"] = *f;
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

void printTable(const TuneResult& r) {
  const TuningKey& k = r.key;
  fmt::print("{} ({}) on {} ({}): {} candidates in {:.1f} s\n", k.kernelName, k.sizes, k.device, k.arch,
             r.candidates.size(), r.wallSeconds);
  fmt::print("  {} enumerated, {} pruned, {} sampled out; {} compiled ({:.1f}/s on {} threads), {} failed to compile, "
             "{} skipped\n",
             r.enumerated, r.pruned, r.sampledOut, r.compiled, r.candidatesPerSecond, r.compileThreads, r.compileFailed,
             r.skipped);
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
                 c.gbytes, percent(rooflineFraction(c, kPeakGflopsFp32, r.peakBandwidthGBs)), c.registers,
                 c.occupancy * 100, c.schedule);
    }
  }
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
  fmt::print("  roofline: the larger of GF/s over {:.0f} GF/s (FP32 peak of an H100/H200 SXM) and GB/s over {:.0f} "
             "GB/s (this device's theoretical DRAM bandwidth, memory clock x bus width); rates count the kernel's "
             "ideal flops and bytes\n",
             kPeakGflopsFp32, r.peakBandwidthGBs);
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
      {"compileThreads", r.compileThreads},
      {"compilesPerSecond", r.candidatesPerSecond},
      {"counts",
       {{"enumerated", r.enumerated},
        {"pruned", r.pruned},
        {"sampledOut", r.sampledOut},
        {"generated", r.generated},
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
      {"peakGflops", kPeakGflopsFp32},
      {"peakBandwidthGBs", r.peakBandwidthGBs},
      {"top", top},
      {"bestOverTime", r.bestOverTime},
  };
  j["best"] = r.best ? recordJson(*r.best, r) : nlohmann::json(nullptr);
  j["default"] = r.defaultSchedule ? recordJson(*r.defaultSchedule, r) : nlohmann::json(nullptr);
  return j;
}

ReportData reportData(const TuneResult& r, const TuneArgs& a) {
  ReportData d;
  d.kernelName = r.key.kernelName;
  d.kernelHash = r.key.kernelHash;
  d.sizes = r.key.sizes;
  d.device = r.key.device;
  d.arch = r.key.arch;
  d.settings = fmt::format("max-candidates={}, time-limit={}, min-threads={}, min-blocks={}, repeats={}, seed={}",
                           a.maxCandidates ? std::to_string(a.maxCandidates) : "none",
                           a.timeLimit > 0 ? fmt::format("{:g}s", a.timeLimit) : "none", a.minThreads, a.minBlocks,
                           a.repeats, a.seed);
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
  std::map<std::string, int64_t> reasons;
  for (const PrunedCandidate& p : r.prunedList) ++reasons[p.reason.substr(0, p.reason.find(" ("))];
  for (const auto& kv : reasons) d.prunedReasons.push_back(kv);
  std::sort(d.prunedReasons.begin(), d.prunedReasons.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  d.peakGflops = kPeakGflopsFp32;
  d.peakGbytesPerSecond = r.peakBandwidthGBs;
  return d;
}

int run(const TuneArgs& a) {
  std::string source = readFile(a.file);
  SourceText src{a.file, source};
  Diagnostics diags;
  std::optional<Kernel> k = frontKernel(src, a.kernel, diags);
  std::optional<Kernel> bound;
  if (k) bound = bindAndProve(*k, parseDefines(a.defines), diags);
  std::string rendered = renderDiagnostics(diags, src);
  if (!rendered.empty()) std::fputs(rendered.c_str(), stderr);
  if (!bound) return 1;

  ProgressPrinter printer;
  TuneOptions o;
  o.space.maxCandidates = a.maxCandidates;
  o.space.minThreads = a.minThreads;
  o.space.minBlocks = a.minBlocks;
  o.space.seed = a.seed;
  o.timeLimitSeconds = a.timeLimit;
  o.repeats = a.repeats;
  o.compileThreads = a.compileThreads;
  o.seed = a.seed;
  o.dbPath = a.db;
  o.workerPath = a.worker;
  o.log = [&](const std::string& s) { printer.log("rtcgc tune: " + s); };
  o.progress = [&](const TuneProgress& p) { printer.update(p); };
  TuneResult r = tune(a.file, source, *bound, o);
  printer.done();

  if (!a.report.empty()) {
    writeFileAtomically(a.report, renderSearchReport(reportData(r, a)));
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

}  // namespace

TuneCommand addTuneCommand(CLI::App& app) {
  TuneCommand t;
  t.args = std::make_shared<TuneArgs>();
  TuneArgs& a = *t.args;
  CLI::App* cmd = app.add_subcommand("tune", "search the schedule space on the GPU: compile, verify and time candidates");
  t.command = cmd;
  cmd->add_option("file", a.file, "DSL source file")->required();
  cmd->add_option("-D,--define", a.defines, "bind a size parameter: -D n=4096")->allow_extra_args(false);
  cmd->add_option("-k,--kernel", a.kernel, "the kernel to tune when the file defines several");
  cmd->add_option("--max-candidates", a.maxCandidates, "try at most N candidates (a deterministic sample; default all)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time-limit", a.timeLimit, "start no new candidate after S seconds of search (default none)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--min-threads", a.minThreads, "threads per block at least T (default 32)")->check(CLI::PositiveNumber);
  cmd->add_option("--min-blocks", a.minBlocks, "blocks per launch at least B (default 1)")->check(CLI::PositiveNumber);
  cmd->add_option("--repeats", a.repeats, "timed runs per candidate, median (default 20)")->check(CLI::Range(1, 100000));
  cmd->add_option("--compile-threads", a.compileThreads, "parallel NVRTC compile processes (default: all cores, at most 16)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--report", a.report, "write an HTML report of the search to FILE");
  cmd->add_flag("--json", a.json, "print a JSON summary instead of the table");
  cmd->add_option("--db", a.db, "tuning database (default: in the cache directory; '-': none)");
  cmd->add_option("--seed", a.seed, "random seed for inputs and sampling (default 1)");
  cmd->add_option("--worker", a.worker, "the rtcg-worker executable (default: $RTCG_WORKER, next to rtcgc, PATH)");
  return t;
}

int runTuneCommand(const TuneCommand& cmd) {
  try {
    return run(*cmd.args);
  } catch (const Exit& e) {
    return e.code;
  } catch (const NoDeviceError& e) {
    fmt::print(stderr, "rtcgc: error: {}\n", e.what());
    return 4;
  } catch (const InternalError& e) {
    fmt::print(stderr, "rtcgc: {}\n", e.what());
    return 70;
  } catch (const Error& e) {
    fmt::print(stderr, "rtcgc: error: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "rtcgc: internal error: {}\n", e.what());
    return 70;
  }
}
