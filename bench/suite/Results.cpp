#include "bench/suite/Results.h"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <fstream>
#include <sstream>

#include "schedule/PolicyRewrite.h"
#include "support/Diagnostics.h"
#include "support/Error.h"
#include "tune/Report.h"

namespace rtcg::bench {

namespace {

std::string num(double v, const char* spec = "{:.3g}") { return v > 0 ? fmt::format(fmt::runtime(spec), v) : "-"; }
std::string err(double v) { return v >= 0 ? fmt::format("{:.1e}", v) : "-"; }
std::string pct(double fraction) { return fraction > 0 ? fmt::format("{:.0f}%", fraction * 100) : "-"; }

std::string check(const Row& r) {
  if (!r.error.empty()) return "ERROR";
  return r.pass ? "ok" : "WRONG";
}

}  // namespace

std::string shortSchedule(const std::string& schedule, size_t width) {
  if (schedule.empty()) return "default";
  std::string s = schedule;
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

std::string renderTable(const std::vector<Row>& rows) {
  std::string out = fmt::format("{:<22} {:<28} {:>9} {:>8} {:>8} {:>6} {:>9} {:>6} {:>7} {:>8} {:>8} {:<6} {}\n",
                                "workload", "sizes", "rtcg ms", "GF/s", "GB/s", "roof", "peer ms", "roof", "speed",
                                "err/peer", "err/ref", "check", "schedule");
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      out += fmt::format("{:<22} {:<28} ERROR: {}\n", r.name, r.sizes, r.error);
      continue;
    }
    out += fmt::format("{:<22} {:<28} {:>9} {:>8} {:>8} {:>6} {:>9} {:>6} {:>7} {:>8} {:>8} {:<6} {}\n", r.name,
                       r.sizes, num(r.rtcgMs, "{:.4f}"), num(r.gflops(), "{:.1f}"), num(r.gbytes(), "{:.1f}"),
                       pct(r.roofline()), num(r.peerMs, "{:.4f}"), pct(r.peerRoofline()),
                       r.speedRatio() > 0 ? fmt::format("{:.2f}x", r.speedRatio()) : "-", err(r.relErrPeer),
                       err(r.relErrReference), check(r), shortSchedule(r.schedule));
  }
  out += "roof: share of the roofline max(flops / peak of the arithmetic the schedule uses (FP32 67, FP64 34, "
         "TF32 mma 495, 3xTF32 mma 165, FP64 mma 67 TF/s, INT8 mma 1979 TOPS), bytes / measured copy bandwidth); speed: peer time / "
         "rtcg time (> 1: rtcg faster); err: relative L2 error of rtcg's output against the peer's and against "
         "the float64 CPU reference\n";
  return out;
}

bool addContender(std::vector<Contender>& contenders, Contender c) {
  if (std::any_of(contenders.begin(), contenders.end(), [&](const Contender& x) { return x.schedule == c.schedule; }))
    return false;
  contenders.push_back(std::move(c));
  return true;
}

std::vector<Contender> legalEarlierSchedules(const Kernel& bound, Precision precision, const ScheduleLimits& limits,
                                             const std::vector<std::pair<std::string, EarlierSchedule>>& earlier,
                                             std::vector<std::string>& rejected) {
  std::vector<Contender> out;
  Diagnostics diags;
  std::optional<Kernel> steps = applyPolicy(bound, precision, diags);
  if (!steps) {
    const std::string why = diags.all().empty() ? "the precision policy does not apply" : diags.all().front().message;
    for (const auto& [file, e] : earlier) rejected.push_back(fmt::format("{}: {}", file, why));
    return out;
  }
  for (const auto& [file, e] : earlier) {
    ScheduleParseResult parsed = parseSchedule(e.schedule);
    std::vector<std::string> reasons;
    if (!parsed.ok()) reasons.push_back(parsed.error);
    else reasons = validateSchedule(*steps, *parsed.schedule, limits);
    if (!reasons.empty()) {
      rejected.push_back(fmt::format("{}: {}", file, reasons.front()));
      continue;
    }
    addContender(out, {e.schedule, fmt::format("{} ({:.4f} ms there)", file, e.ms)});
  }
  return out;
}

namespace {
nlohmann::json readJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return nlohmann::json::parse(text.str());
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(fmt::format("{}: not JSON: {}", path, e.what()));
  }
}
}  // namespace

std::map<std::string, ExternalPeer> loadPeerTimes(const std::string& path) {
  const nlohmann::json doc = readJsonFile(path);
  if (!doc.is_object() || !doc.contains("workloads") || !doc["workloads"].is_object())
    throw Error(fmt::format("{}: no \"workloads\" object (expected the output of bench/peers/torch_peers.py)", path));
  std::map<std::string, ExternalPeer> out;
  for (const auto& [name, w] : doc["workloads"].items()) {
    if (!w.is_object() || !w.contains("peer") || !w["peer"].is_string() || !w.contains("ms") || !w["ms"].is_number())
      throw Error(fmt::format("{}: workload {}: needs a \"peer\" string and an \"ms\" number", path, name));
    ExternalPeer p{w["peer"].get<std::string>(), w["ms"].get<double>(), -1};
    if (!(p.ms > 0) || !std::isfinite(p.ms))
      throw Error(fmt::format("{}: workload {}: \"ms\" must be a positive time, not {}", path, name, w["ms"].dump()));
    if (w.contains("relErr")) {
      if (!w["relErr"].is_number()) throw Error(fmt::format("{}: workload {}: \"relErr\" is not a number", path, name));
      p.relErr = w["relErr"].get<double>();
    }
    out.emplace(name, std::move(p));
  }
  return out;
}

std::map<std::string, EarlierSchedule> loadEarlierSchedules(const std::string& path) {
  const nlohmann::json doc = readJsonFile(path);
  if (!doc.is_object() || !doc.contains("workloads") || !doc["workloads"].is_array())
    throw Error(fmt::format("{}: no \"workloads\" array (expected a bench.json of bench_suite)", path));
  std::map<std::string, EarlierSchedule> out;
  size_t n = 0;
  for (const nlohmann::json& w : doc["workloads"]) {
    ++n;
    if (!w.is_object() || !w.contains("name") || !w["name"].is_string())
      throw Error(fmt::format("{}: workload {} has no \"name\" string", path, n));
    const std::string name = w["name"].get<std::string>();
    if (w.contains("schedule") && !w["schedule"].is_string())
      throw Error(fmt::format("{}: workload {}: \"schedule\" is not a string", path, name));
    if (w.contains("error") && w["error"].is_string() && !w["error"].get<std::string>().empty()) continue;
    std::string schedule = w.value("schedule", std::string());
    if (schedule.empty()) continue;
    double ms = w.contains("rtcgMs") && w["rtcgMs"].is_number() ? w["rtcgMs"].get<double>() : 0;
    if (!out.emplace(name, EarlierSchedule{schedule, ms}).second)
      throw Error(fmt::format("{}: workload {} is listed twice", path, name));
  }
  return out;
}

nlohmann::json toJson(const SuiteInfo& info, const std::vector<Row>& rows) {
  nlohmann::json j;
  j["device"] = info.device;
  j["arch"] = info.arch;
  j["driver"] = info.driver;
  j["cublasVersion"] = info.cublasVersion;
  j["cublasMath"] = "CUBLAS_DEFAULT_MATH (FP32, no TF32)";
  j["settings"] = info.settings;
  j["peakGflops"] = info.peakGflops;
  j["copyBandwidthGBs"] = info.copyGBs;
  j["workloads"] = nlohmann::json::array();
  for (const Row& r : rows) {
    nlohmann::json w = {{"name", r.name},       {"group", r.group},          {"sizes", r.sizes},
                        {"peer", r.peer},       {"schedule", r.schedule},    {"scheduleSource", r.scheduleSource},
                        {"flops", r.flops},     {"bytes", r.bytes},          {"tuneSeconds", r.tuneSeconds}};
    if (!r.error.empty()) {
      w["error"] = r.error;
    } else {
      w["rtcgMs"] = r.rtcgMs;
      w["peerMs"] = r.peerMs;
      w["gflops"] = r.gflops();
      w["gbytes"] = r.gbytes();
      w["arithmetic"] = r.arithmetic;
      w["peakGflops"] = r.peakGflops;
      w["rooflineMs"] = r.rooflineMs;
      w["arithmetic"] = r.arithmetic;
      w["roofline"] = r.roofline();
      w["peerRoofline"] = r.peerRoofline();
      w["speedRatio"] = r.speedRatio();
      w["relErrPeer"] = r.relErrPeer >= 0 ? nlohmann::json(r.relErrPeer) : nlohmann::json(nullptr);
      w["relErrReference"] = r.relErrReference >= 0 ? nlohmann::json(r.relErrReference) : nlohmann::json(nullptr);
      w["relErrPeerReference"] =
          r.relErrPeerReference >= 0 ? nlohmann::json(r.relErrPeerReference) : nlohmann::json(nullptr);
      w["tolerance"] = r.tolerance;
      w["pass"] = r.pass;
    }
    j["workloads"].push_back(std::move(w));
  }
  return j;
}

namespace {

// Horizontal bars, one per row: `value(row)` on a linear axis from 0 to `maxValue`, with a
// reference line at `mark` (1x for ratios, 100% for rooflines).
template <class F>
std::string barChart(const std::vector<Row>& rows, const std::string& title, F value, double maxValue, double mark,
                     const char* unitSpec) {
  const int labelW = 190, plotW = 520, rowH = 20, top = 30;
  int height = top + rowH * int(rows.size()) + 30;
  std::string s = fmt::format("<h2>{}</h2>\n<svg xmlns='http://www.w3.org/2000/svg' width='{}' height='{}' "
                              "font-family='sans-serif' font-size='12'>\n",
                              htmlEscape(title), labelW + plotW + 90, height);
  auto x = [&](double v) { return labelW + plotW * std::min(v, maxValue) / maxValue; };
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    double y = top + rowH * double(i);
    double v = r.error.empty() ? value(r) : 0;
    const char* color = !r.error.empty() || !r.pass ? "#c0392b" : v >= mark ? "#2e86c1" : "#85929e";
    s += fmt::format("<text x='{}' y='{}' text-anchor='end'>{}</text>\n", labelW - 6, y + 14, htmlEscape(r.name));
    s += fmt::format("<rect x='{}' y='{}' width='{:.1f}' height='{}' fill='{}'/>\n", labelW, y + 3, x(v) - labelW,
                     rowH - 6, color);
    s += fmt::format("<text x='{:.1f}' y='{}'>{}</text>\n", x(v) + 4, y + 14,
                     r.error.empty() ? fmt::format(fmt::runtime(unitSpec), v) : std::string("error"));
  }
  s += fmt::format("<line x1='{0:.1f}' x2='{0:.1f}' y1='{1}' y2='{2}' stroke='black' stroke-dasharray='4 3'/>\n",
                   x(mark), top - 4, top + rowH * int(rows.size()));
  s += fmt::format("<text x='{:.1f}' y='{}' text-anchor='middle'>{}</text>\n", x(mark), top - 8,
                   fmt::format(fmt::runtime(unitSpec), mark));
  s += "</svg>\n";
  return s;
}

}  // namespace

std::string renderHtml(const SuiteInfo& info, const std::vector<Row>& rows) {
  std::string h =
      "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>rtcg benchmark suite</title>\n<style>"
      "body{font-family:sans-serif;margin:2em;max-width:1200px}table{border-collapse:collapse;font-size:13px}"
      "td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}td.l,th.l{text-align:left}"
      ".bad{color:#c0392b;font-weight:bold}</style></head><body>\n<h1>rtcg benchmark suite</h1>\n";
  h += fmt::format("<p>{} ({}), driver {}, cuBLAS {} in FP32 math (no TF32). Roofline: {:.0f} GF/s FP32 peak (FP64 workloads: "
                   "the FP64 peak, half of it) and "
                   "{:.0f} GB/s measured device-to-device copy bandwidth (bytes read + written), in this run.</p>\n"
                   "<p>Settings: {}</p>\n",
                   htmlEscape(info.device), htmlEscape(info.arch), htmlEscape(info.driver),
                   htmlEscape(info.cublasVersion), info.peakGflops, info.copyGBs, htmlEscape(info.settings));
  double maxRatio = 2;
  for (const Row& r : rows) maxRatio = std::max(maxRatio, r.speedRatio() * 1.1);
  h += barChart(rows, "Speed relative to the peer (peer time / rtcg time; right of the line: rtcg faster)",
                [](const Row& r) { return r.speedRatio(); }, maxRatio, 1.0, "{:.2f}x");
  h += barChart(rows, "rtcg: share of the roofline", [](const Row& r) { return r.roofline() * 100; }, 100, 100,
                "{:.0f}%");
  h += barChart(rows, "Peer: share of the roofline", [](const Row& r) { return r.peerRoofline() * 100; }, 100, 100,
                "{:.0f}%");
  h += "<h2>Results</h2>\n<table><tr><th class='l'>workload</th><th class='l'>sizes</th><th>rtcg ms</th><th>GF/s</th>"
       "<th>GB/s</th><th>roofline</th><th class='l'>peer</th><th>peer ms</th><th>peer roofline</th><th>speed</th>"
       "<th>err vs peer</th><th>err vs ref</th><th class='l'>check</th><th class='l'>schedule</th></tr>\n";
  for (const Row& r : rows) {
    if (!r.error.empty()) {
      h += fmt::format("<tr><td class='l'>{}</td><td class='l'>{}</td><td class='l bad' colspan='12'>{}</td></tr>\n",
                       htmlEscape(r.name), htmlEscape(r.sizes), htmlEscape(r.error));
      continue;
    }
    h += fmt::format(
        "<tr><td class='l'>{}</td><td class='l'>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
        "class='l'>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class='l{}'>{}</td><td "
        "class='l'><code>{}</code><br><small>{}</small></td></tr>\n",
        htmlEscape(r.name), htmlEscape(r.sizes), num(r.rtcgMs, "{:.4f}"), num(r.gflops(), "{:.1f}"),
        num(r.gbytes(), "{:.1f}"), pct(r.roofline()), htmlEscape(r.peer), num(r.peerMs, "{:.4f}"),
        pct(r.peerRoofline()), r.speedRatio() > 0 ? fmt::format("{:.2f}x", r.speedRatio()) : "-", err(r.relErrPeer),
        err(r.relErrReference), r.pass ? "" : " bad", check(r), htmlEscape(r.schedule.empty() ? "default" : r.schedule),
        htmlEscape(r.scheduleSource));
  }
  h += "</table>\n<p>Errors are relative L2 errors of rtcg's output against the peer's output and against the "
       "float64 CPU reference (computed for the smaller workloads and for every data-movement kernel).</p>\n"
       "</body></html>\n";
  return h;
}

}  // namespace rtcg::bench
