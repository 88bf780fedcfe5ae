#include "tune/WarmStart.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace rtcg {

namespace {

// "n=500,m=3" -> {n: 500, m: 3}; nullopt for anything else (sizes are written by sizesText).
std::optional<std::map<std::string, double>> parseSizes(const std::string& text) {
  std::map<std::string, double> out;
  std::istringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    size_t eq = item.find('=');
    if (eq == 0 || eq == std::string::npos || eq + 1 == item.size()) return std::nullopt;
    try {
      size_t used = 0;
      double v = std::stod(item.substr(eq + 1), &used);
      if (used != item.size() - eq - 1 || !(v > 0)) return std::nullopt;
      out[item.substr(0, eq)] = v;
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> warmStartSchedules(const std::vector<TuningDb::Entry>& entries, const TuningKey& key,
                                            size_t limit) {
  std::optional<std::map<std::string, double>> ours = parseSizes(key.sizes);
  if (!ours || ours->empty()) return {};
  std::vector<std::pair<double, std::string>> near;  // (size distance, schedule)
  for (const TuningDb::Entry& e : entries) {
    if (!e.best || e.key.kernelName != key.kernelName || e.key.device != key.device || e.key.arch != key.arch ||
        e.key.sizes == key.sizes)
      continue;
    std::optional<std::map<std::string, double>> theirs = parseSizes(e.key.sizes);
    if (!theirs || theirs->size() != ours->size()) continue;
    double distance = 0;
    bool sameParameters = true;
    for (const auto& [name, value] : *ours) {
      auto t = theirs->find(name);
      if (t == theirs->end()) {
        sameParameters = false;
        break;
      }
      distance += std::fabs(std::log(value / t->second));
    }
    if (sameParameters) near.emplace_back(distance, e.best->schedule);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& [distance, schedule] : near) {
    if (out.size() >= limit) break;
    if (seen.insert(schedule).second) out.push_back(schedule);
  }
  return out;
}

std::vector<std::string> queueSearch(const Kernel& bound, const ScheduleLimits& limits, const Schedule& defaultSchedule,
                                     const std::vector<Candidate>& sample, std::vector<Candidate>& reserve,
                                     const std::vector<std::string>& warm, bool budgeted, std::vector<CompileJob>& jobs) {
  const std::string defaultText = printSchedule(defaultSchedule);
  jobs.push_back({defaultText, defaultSchedule, {}, nullptr});
  std::set<std::string> queued{defaultText};
  for (const Candidate& c : sample) queued.insert(c.text);
  std::vector<std::string> warmed;
  for (const std::string& text : warm) {
    if (queued.count(text)) continue;  // the sample measures it anyway
    std::optional<Schedule> schedule;
    std::shared_ptr<const SchedulePlan> plan;
    auto inReserve = std::find_if(reserve.begin(), reserve.end(), [&](const Candidate& c) { return c.text == text; });
    if (inReserve != reserve.end()) {
      schedule = inReserve->schedule;
      plan = std::make_shared<const SchedulePlan>(candidatePlan(*inReserve));
      reserve.erase(inReserve);
    } else if (ScheduleParseResult p = parseSchedule(text); p.ok() && validateSchedule(bound, *p.schedule, limits).empty()) {
      schedule = *p.schedule;
    }
    if (!schedule) continue;
    jobs.push_back({text, *schedule, {}, plan});
    queued.insert(text);
    warmed.push_back(text);
  }
  size_t kept = sample.size();
  if (budgeted) kept -= std::min(kept, warmed.size());
  for (size_t c = 0; c < kept; ++c)
    if (sample[c].text != defaultText)
      jobs.push_back({sample[c].text, sample[c].schedule, {}, std::make_shared<const SchedulePlan>(candidatePlan(sample[c]))});
  return warmed;
}

size_t dropMeasured(std::vector<CompileJob>& jobs, const std::vector<CandidateRecord>& earlier) {
  if (jobs.size() < 2) return 0;
  std::set<std::string> measured;
  for (const CandidateRecord& c : earlier) measured.insert(c.schedule);
  auto kept = std::remove_if(jobs.begin() + 1, jobs.end(), [&](const CompileJob& j) { return measured.count(j.label) > 0; });
  size_t dropped = size_t(jobs.end() - kept);
  jobs.erase(kept, jobs.end());
  return dropped;
}

}  // namespace rtcg
