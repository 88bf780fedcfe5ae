#include "tune/ResultJson.h"

#include <fmt/format.h>

#include "support/Error.h"

namespace rtcg {

namespace {

using nlohmann::json;

json recordToJson(const CandidateRecord& c) {
  return {{"schedule", c.schedule},     {"status", statusName(c.status)}, {"reason", c.reason},
          {"medianMs", c.medianMs},     {"relativeError", c.relativeError}, {"registers", c.registers},
          {"spillBytes", c.spillBytes}, {"sharedBytes", c.sharedBytes},   {"occupancy", c.occupancy},
          {"gflops", c.gflops},         {"gbytes", c.gbytes},             {"compileMs", c.compileMs},
          {"searchId", c.searchId},     {"recordedAt", c.recordedAt}};
}

CandidateRecord recordFromJson(const json& j) {
  CandidateRecord c;
  c.schedule = j.at("schedule").get<std::string>();
  std::optional<CandidateStatus> status = parseStatus(j.at("status").get<std::string>());
  if (!status) throw Error(fmt::format("search result: unknown candidate status '{}'", j.at("status").dump()));
  c.status = *status;
  c.reason = j.at("reason").get<std::string>();
  c.medianMs = j.at("medianMs").get<double>();
  c.relativeError = j.at("relativeError").get<double>();
  c.registers = j.at("registers").get<int>();
  c.spillBytes = j.at("spillBytes").get<int>();
  c.sharedBytes = j.at("sharedBytes").get<int>();
  c.occupancy = j.at("occupancy").get<double>();
  c.gflops = j.at("gflops").get<double>();
  c.gbytes = j.at("gbytes").get<double>();
  c.compileMs = j.at("compileMs").get<double>();
  c.searchId = j.at("searchId").get<int64_t>();
  c.recordedAt = j.at("recordedAt").get<double>();
  return c;
}

json optionalRecord(const std::optional<CandidateRecord>& c) { return c ? recordToJson(*c) : json(nullptr); }

std::optional<CandidateRecord> optionalRecordFrom(const json& j) {
  if (j.is_null()) return std::nullopt;
  return recordFromJson(j);
}

// The integer counters of TuneResult, by name (one list for both directions).
template <typename Result, typename F>
void forEachCount(Result& r, F&& f) {
  f("enumerated", r.enumerated), f("generated", r.generated), f("pruned", r.pruned), f("sampledOut", r.sampledOut);
  f("refined", r.refined), f("warmStarted", r.warmStarted), f("resumedSkipped", r.resumedSkipped);
  f("compiled", r.compiled), f("compileFailed", r.compileFailed), f("emitterErrors", r.emitterErrors);
  f("skipped", r.skipped);
  f("verified", r.verified), f("wrong", r.wrong), f("faulted", r.faulted), f("timedOut", r.timedOut);
  f("launchFailed", r.launchFailed), f("notMeasured", r.notMeasured), f("timedOnce", r.timedOnce);
  f("floatOps", r.floatOps), f("minimalBytes", r.minimalBytes), f("searchId", r.searchId);
}

}  // namespace

json keyToJson(const TuningKey& k) {
  return {{"kernelHash", k.kernelHash}, {"kernelName", k.kernelName},         {"sizes", k.sizes},
          {"device", k.device},         {"arch", k.arch},                     {"driverVersion", k.driverVersion},
          {"nvrtcVersion", k.nvrtcVersion}, {"rtcgVersion", k.rtcgVersion}, {"multiprocessors", k.multiprocessors}};
}

TuningKey keyFromJson(const json& j) {
  TuningKey k;
  k.kernelHash = j.at("kernelHash").get<std::string>();
  k.kernelName = j.at("kernelName").get<std::string>();
  k.sizes = j.at("sizes").get<std::string>();
  k.device = j.at("device").get<std::string>();
  k.arch = j.at("arch").get<std::string>();
  k.driverVersion = j.at("driverVersion").get<int>();
  k.nvrtcVersion = j.at("nvrtcVersion").get<std::string>();
  k.rtcgVersion = j.at("rtcgVersion").get<std::string>();
  k.multiprocessors = j.at("multiprocessors").get<int>();
  return k;
}

json tuneResultToJson(const TuneResult& r) {
  json j;
  j["key"] = keyToJson(r.key);
  json candidates = json::array();
  for (const CandidateRecord& c : r.candidates) candidates.push_back(recordToJson(c));
  j["candidates"] = std::move(candidates);
  j["completedSeconds"] = r.completedSeconds;
  j["best"] = optionalRecord(r.best);
  j["default"] = optionalRecord(r.defaultSchedule);
  j["bestOfAllSearches"] = optionalRecord(r.bestOfAllSearches);
  j["precision"] = precisionName(r.precision);
  forEachCount(r, [&](const char* name, int64_t v) { j["counts"][name] = v; });
  j["timeLimitReached"] = r.timeLimitReached;
  j["workerRestarts"] = r.workerRestarts;
  j["devices"] = r.devices;
  j["compileThreads"] = r.compileThreads;
  j["compiledOn"] = compiledOnJson(r.compiledOn);
  j["wallSeconds"] = r.wallSeconds;
  j["compileSeconds"] = r.compileSeconds;
  j["referenceSeconds"] = r.referenceSeconds;
  j["reference"] = r.reference;
  j["referenceSampled"] = r.referenceSampled;
  j["candidatesPerSecond"] = r.candidatesPerSecond;
  j["bestOverTime"] = r.bestOverTime;
  j["ops"] = {r.ops.fp32, r.ops.fp64};
  j["peakBandwidthGBs"] = r.peakBandwidthGBs;
  j["peakGflops"] = r.peakGflops;
  j["arithmetic"] = r.arithmetic;
  j["settings"] = r.settings;
  return j;
}

json compiledOnJson(const std::vector<CompileHostCount>& hosts) {
  json out = json::array();
  for (const CompileHostCount& h : hosts) out.push_back({{"host", h.host}, {"slots", h.slots}, {"compiled", h.compiled}});
  return out;
}

TuneResult tuneResultFromJson(const json& j) {
  try {
    TuneResult r;
    r.key = keyFromJson(j.at("key"));
    for (const json& c : j.at("candidates")) r.candidates.push_back(recordFromJson(c));
    r.completedSeconds = j.at("completedSeconds").get<std::vector<double>>();
    r.best = optionalRecordFrom(j.at("best"));
    r.defaultSchedule = optionalRecordFrom(j.at("default"));
    r.bestOfAllSearches = optionalRecordFrom(j.at("bestOfAllSearches"));
    std::optional<Precision> precision = parsePrecision(j.at("precision").get<std::string>());
    if (!precision) throw Error(fmt::format("search result: unknown precision {}", j.at("precision").dump()));
    r.precision = *precision;
    forEachCount(r, [&](const char* name, int64_t& v) { v = j.at("counts").at(name).get<int64_t>(); });
    r.timeLimitReached = j.at("timeLimitReached").get<bool>();
    r.workerRestarts = j.at("workerRestarts").get<int>();
    r.devices = j.at("devices").get<int>();
    r.compileThreads = j.at("compileThreads").get<int>();
    if (j.contains("compiledOn"))
      for (const json& h : j["compiledOn"])
        r.compiledOn.push_back({h.at("host").get<std::string>(), h.at("slots").get<int>(), h.at("compiled").get<int64_t>()});
    r.wallSeconds = j.at("wallSeconds").get<double>();
    r.compileSeconds = j.at("compileSeconds").get<double>();
    r.referenceSeconds = j.at("referenceSeconds").get<double>();
    r.reference = j.at("reference").get<std::string>();
    r.referenceSampled = j.at("referenceSampled").get<bool>();
    r.candidatesPerSecond = j.at("candidatesPerSecond").get<double>();
    r.bestOverTime = j.at("bestOverTime").get<std::vector<std::pair<double, double>>>();
    r.ops.fp32 = j.at("ops").at(0).get<double>();
    r.ops.fp64 = j.at("ops").at(1).get<double>();
    r.peakBandwidthGBs = j.at("peakBandwidthGBs").get<double>();
    r.peakGflops = j.at("peakGflops").get<double>();
    r.arithmetic = j.at("arithmetic").get<std::string>();
    r.settings = j.at("settings").get<std::string>();
    return r;
  } catch (const json::exception& e) {
    throw Error(fmt::format("search result: malformed JSON: {}", e.what()));
  }
}

}  // namespace rtcg
