// The suite's results: one row per workload, printed as a table, written as JSON and as a
// self-contained HTML page (inline CSS and SVG, no scripts).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ir/IR.h"
#include "schedule/Schedule.h"

namespace rtcg::bench {

struct Row {
  std::string name, group, sizes, peer;
  std::string schedule;        // the measured schedule's text ("" for the default)
  std::string scheduleSource;  // "tuned", "database", "default", "default (no verified candidate)"
  int64_t flops = 0, bytes = 0;  // ideal work of one run (rtcg's floatOps / minimalBytes)
  double rtcgMs = 0, peerMs = 0;
  std::string arithmetic = "fp32";  // ir/Counts.h arithmeticName, or the mma arithmetic of the schedule ("TF32 mma", "3xTF32 mma", "FP64 mma")
  double peakGflops = 0;         // that peak (an f64 workload's is FP64's)
  double rooflineMs = 0;         // max(flops / peak, bytes / copy bandwidth)
  double relErrPeer = -1;        // -1: not compared
  double relErrReference = -1;   // -1: not compared
  double relErrPeerReference = -1;  // the peer's error against the same reference; -1: not compared
  double tolerance = 0;
  bool pass = false;
  std::string error;             // non-empty: the workload did not run; says why
  double tuneSeconds = 0;

  double gflops() const { return rtcgMs > 0 ? flops / rtcgMs * 1e-6 : 0; }
  double gbytes() const { return rtcgMs > 0 ? bytes / rtcgMs * 1e-6 : 0; }
  double roofline() const { return rtcgMs > 0 ? rooflineMs / rtcgMs : 0; }          // fraction
  double peerRoofline() const { return peerMs > 0 ? rooflineMs / peerMs : 0; }      // fraction
  double speedRatio() const { return rtcgMs > 0 && peerMs > 0 ? peerMs / rtcgMs : 0; }  // > 1: rtcg faster
};

struct SuiteInfo {
  std::string device, arch, cublasVersion, driver, settings;
  double peakGflops = 0;
  double copyGBs = 0;  // measured device-to-device copy bandwidth, bytes read + written
};

// The table, one line per row (aligned columns), with a header.
std::string renderTable(const std::vector<Row>& rows);
// The schedule text, cut to at most `width` characters ("default" for the default schedule).
std::string shortSchedule(const std::string& schedule, size_t width = 48);

nlohmann::json toJson(const SuiteInfo& info, const std::vector<Row>& rows);

// A schedule measured in an earlier run (bench.json): its text and its time there.
struct EarlierSchedule {
  std::string schedule;
  double ms = 0;
};
// The schedules of an earlier run's bench.json, by workload name (rows without a schedule or that
// did not run are left out). Throws rtcg::Error naming the file and what is wrong with it.
std::map<std::string, EarlierSchedule> loadEarlierSchedules(const std::string& path);

// A peer timed outside bench_suite in the same GPU job (bench/peers/torch_peers.py: PyTorch calls and
// torch.compile), for the rows whose peer is PeerKind::Torch: the fastest form's label and median
// time, and that form's error against the script's float64 computation.
struct ExternalPeer {
  std::string label;
  double ms = 0;
  double relErr = -1;  // -1: not given
};
// The file's peers by workload name ({"workloads": {NAME: {"peer": LABEL, "ms": MS, "relErr": E}}}).
// Throws rtcg::Error naming the file, the workload and what is wrong with it.
std::map<std::string, ExternalPeer> loadPeerTimes(const std::string& path);

// A schedule a workload may be measured with, and where it came from.
struct Contender {
  std::string schedule, source;
};
// Appends `c` to `contenders` unless one with the same schedule is there; true when appended.
bool addContender(std::vector<Contender>& contenders, Contender c);
// The distinct schedules of `earlier` ((file, schedule) pairs, in the files' order) that parse and
// are legal for `bound` under `precision` (a rewriting policy's schedules are of its steps' kernel)
// within `limits`, each with its source ("FILE (0.1234 ms there)"); the others are described in
// `rejected` ("FILE: REASON").
std::vector<Contender> legalEarlierSchedules(const Kernel& bound, Precision precision, const ScheduleLimits& limits,
                                             const std::vector<std::pair<std::string, EarlierSchedule>>& earlier,
                                             std::vector<std::string>& rejected);
std::string renderHtml(const SuiteInfo& info, const std::vector<Row>& rows);

}  // namespace rtcg::bench
