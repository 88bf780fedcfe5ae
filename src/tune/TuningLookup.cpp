#include "tune/TuningLookup.h"

#include <algorithm>
#include <cmath>
#include <optional>

namespace rtcg {

const char* rungOrigin(LookupRung r) {
  switch (r) {
    case LookupRung::Exact: return "tuning database";
    case LookupRung::SameDevice: return "tuning database (other versions or board)";
    case LookupRung::NearestSizes: return "tuning database (nearest sizes)";
  }
  return "tuning database";
}

std::vector<std::pair<std::string, double>> parseSizesText(const std::string& sizes) {
  std::vector<std::pair<std::string, double>> out;
  for (size_t start = 0; start < sizes.size();) {
    size_t end = sizes.find(',', start);
    if (end == std::string::npos) end = sizes.size();
    std::string part = sizes.substr(start, end - start);
    size_t eq = part.find('=');
    if (eq == std::string::npos || eq == 0) return {};
    try {
      out.emplace_back(part.substr(0, eq), std::stod(part.substr(eq + 1)));
    } catch (const std::exception&) {
      return {};
    }
    start = end + 1;
  }
  return out;
}

namespace {

// Sum of |log(a/b)| over the sizes; nullopt when the size names differ or a size is not positive.
std::optional<double> sizeDistance(const std::string& a, const std::string& b) {
  auto pa = parseSizesText(a), pb = parseSizesText(b);
  if (pa.size() != pb.size()) return std::nullopt;
  double d = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    if (pa[i].first != pb[i].first || pa[i].second <= 0 || pb[i].second <= 0) return std::nullopt;
    d += std::fabs(std::log(pa[i].second / pb[i].second));
  }
  return d;
}

// Rows of the same architecture with the same multiprocessor count; a row (or key) without the
// count is matched by its board name.
bool sameDeviceClass(const TuningKey& row, const TuningKey& key) {
  if (row.arch != key.arch) return false;
  if (row.multiprocessors != 0 && key.multiprocessors != 0) return row.multiprocessors == key.multiprocessors;
  return row.device == key.device;
}

bool sameKernelAndSizes(const TuningKey& row, const TuningKey& key) {
  return row.kernelHash == key.kernelHash && row.sizes == key.sizes && row.kernelName == key.kernelName;
}

void keepBest(std::vector<LookupOffer>& rung, const TuningKey& key, size_t perRung, std::vector<LookupOffer>& out) {
  std::stable_sort(rung.begin(), rung.end(), [&](const LookupOffer& a, const LookupOffer& b) {
    bool boardA = a.key.device == key.device, boardB = b.key.device == key.device;
    if (a.distance != b.distance) return a.distance < b.distance;
    if (boardA != boardB) return boardA;
    return a.best.medianMs < b.best.medianMs;
  });
  if (rung.size() > perRung) rung.resize(perRung);
  out.insert(out.end(), rung.begin(), rung.end());
}

}  // namespace

std::vector<LookupOffer> lookupLadder(TuningDb& db, const TuningKey& key, size_t perRung) {
  std::vector<LookupOffer> out;
  if (std::optional<CandidateRecord> best = db.best(key)) out.push_back({LookupRung::Exact, key, *best, 0});
  std::vector<LookupOffer> below = lookupBelowExact(db, key, perRung);
  out.insert(out.end(), below.begin(), below.end());
  return out;
}

std::vector<LookupOffer> lookupBelowExact(TuningDb& db, const TuningKey& key, size_t perRung) {
  std::vector<LookupOffer> out;
  std::vector<LookupOffer> sameDevice, nearest;
  for (TuningDb::Entry& e : db.list()) {
    if (!e.best || e.key == key) continue;
    if (sameKernelAndSizes(e.key, key)) {
      // The exact key with only the multiprocessor count learnt later is the exact key.
      TuningKey counted = e.key;
      counted.multiprocessors = key.multiprocessors;
      if (counted == key) continue;
      if (sameDeviceClass(e.key, key)) sameDevice.push_back({LookupRung::SameDevice, e.key, *e.best, 0});
    } else if (e.key.kernelName == key.kernelName && e.key.arch == key.arch && e.key.sizes != key.sizes) {
      if (std::optional<double> d = sizeDistance(e.key.sizes, key.sizes))
        nearest.push_back({LookupRung::NearestSizes, e.key, *e.best, *d});
    }
  }
  keepBest(sameDevice, key, perRung, out);
  keepBest(nearest, key, perRung, out);
  return out;
}

}  // namespace rtcg
