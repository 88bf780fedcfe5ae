// scheduleDistance (Space.h): how far apart two schedules of one kernel are, for the tuner's
// local search.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "schedule/Space.h"

namespace rtcg {

namespace {

// The placements of one index as a comparable profile: the first part's placement, whether a
// serial part follows a grid first part (blocks that walk several positions of a parallel index,
// or each block's share of a reduction split across blocks), and, per placement of the other
// parts, the product of their factors.
struct IndexProfile {
  Placement first{};
  bool walks = false;
  std::map<Placement, int64_t> factors;
};

IndexProfile profileOf(const IndexSchedule& is) {
  IndexProfile p;
  p.first = is.parts.front().place;
  size_t from = 1;
  if (isGridPlacement(p.first) && is.parts.size() > 1 && is.parts[1].place == Placement::Serial) {
    p.walks = true;
    from = 2;
  }
  for (size_t i = from; i < is.parts.size(); ++i) {
    int64_t& f = p.factors.emplace(is.parts[i].place, 1).first->second;
    f *= is.parts[i].factor.value_or(1);
  }
  return p;
}

// How far apart two profiles' outer placements are: the same tile, only distributed differently,
// is 1 -- a block that walks positions against one that does not, or a reduction split across
// blocks against the same steps in one block ('k: grid.z, serial 94, unroll 16' against 'k:
// serial, unroll 16'); any other change of the outer placement is 2.
double outerDistance(const IndexProfile& x, const IndexProfile& y) {
  if (x.first == y.first) return x.walks == y.walks ? 0 : 1;
  // (A profile walks only behind a grid part, so a serial one never does.)
  const bool splitAgainstSerial = (x.walks && y.first == Placement::Serial) || (y.walks && x.first == Placement::Serial);
  return splitAgainstSerial ? 1 : 2;
}

// How far apart two tensor-core schedules are, by their parts, so that the tuner's refinement
// measures the fastest mma form's siblings (one tile dimension halved, a stage more, one flag
// changed) before forms that share only the arithmetic: each count (warps, tiles, k, stages,
// the wgmma N, fragments, group) as log2 of its ratio, capped at 2; a changed instruction shape
// or flag 1; mma.sync against wgmma 2. The clause's own distance caps the sum, as for any other
// change of the clause (and is the distance to a schedule without mma or of another arithmetic).
double mmaDistance(const MmaSchedule& x, const MmaSchedule& y, double cap) {
  if (x == y) return 0;
  if (!x.any() || !y.any() || x.arith != y.arith) return cap;
  auto ratio = [](int64_t a, int64_t b) {
    return std::min(2.0, std::fabs(std::log2(double(std::max<int64_t>(1, a)) / double(std::max<int64_t>(1, b)))));
  };
  auto differs = [](auto a, auto b) { return a != b ? 1.0 : 0.0; };
  double d = (x.wgmmaN > 0) != (y.wgmmaN > 0) ? 2 : ratio(x.wgmmaN, y.wgmmaN);
  d += ratio(x.warpsM, y.warpsM) + ratio(x.warpsN, y.warpsN) + ratio(x.tileM, y.tileM) + ratio(x.tileN, y.tileN);
  d += ratio(x.k, y.k) + ratio(x.stages, y.stages) + ratio(x.fragments, y.fragments);
  d += (x.group == 0) != (y.group == 0) ? 1 : ratio(x.group, y.group);
  d += differs(x.shape, y.shape) + differs(x.sharedEpilogue, y.sharedEpilogue) + differs(x.swizzle, y.swizzle) +
       differs(x.tma, y.tma) + differs(x.producer, y.producer) + differs(x.persistent, y.persistent) +
       differs(x.pingpong, y.pingpong) + differs(x.resident, y.resident) + differs(x.hoistCopies, y.hoistCopies);
  return std::min(cap, d);
}

// How far apart two nest schedules' values of one clause are (see scheduleDistance).
double clauseDistance(const ClauseRow& row, const NestSchedule& x, const NestSchedule& y) {
  switch (row.kind) {
    case ClauseKind::Number: return x.*row.number != y.*row.number ? row.distance : 0;
    case ClauseKind::Keyword: return x.*row.flag != y.*row.flag ? row.distance : 0;
    case ClauseKind::Mma: return mmaDistance(x.*row.mma, y.*row.mma, row.distance);
    case ClauseKind::Scan: return x.*row.scan != y.*row.scan ? row.distance : 0;
    case ClauseKind::Accumulate: return x.*row.accumulate != y.*row.accumulate ? row.distance : 0;
    case ClauseKind::Arrays: {
      std::set<std::string> sx((x.*row.arrays).begin(), (x.*row.arrays).end());
      std::set<std::string> sy((y.*row.arrays).begin(), (y.*row.arrays).end());
      double d = 0;
      for (const std::string& a : sx) d += sy.count(a) ? 0 : row.distance;
      for (const std::string& a : sy) d += sx.count(a) ? 0 : row.distance;
      return d;
    }
    case ClauseKind::ArrayFlag: {
      // Arrays both stage, marked in one only: the same tile, stored the other way.
      double d = 0;
      for (const std::string& a : std::set<std::string>(x.shared.begin(), x.shared.end()))
        if (std::find(y.shared.begin(), y.shared.end(), a) != y.shared.end()) {
          const auto& fx = x.*row.arrays;
          const auto& fy = y.*row.arrays;
          const bool inX = std::find(fx.begin(), fx.end(), a) != fx.end();
          const bool inY = std::find(fy.begin(), fy.end(), a) != fy.end();
          if (inX != inY) d += row.distance;
        }
      return d;
    }
  }
  return 0;
}

}  // namespace

double scheduleDistance(const Schedule& a, const Schedule& b) {
  if (a.nests.size() != b.nests.size()) return std::numeric_limits<double>::infinity();
  double d = 0;
  for (size_t n = 0; n < a.nests.size(); ++n) {
    const NestSchedule& x = a.nests[n];
    const NestSchedule& y = b.nests[n];
    std::set<std::string> names;
    for (const IndexSchedule& is : x.indices) names.insert(is.index);
    for (const IndexSchedule& is : y.indices) names.insert(is.index);
    for (const std::string& name : names) {
      const IndexSchedule* xi = x.find(name);
      const IndexSchedule* yi = y.find(name);
      if (!xi || !yi) {
        d += 3;
        continue;
      }
      IndexProfile px = profileOf(*xi), py = profileOf(*yi);
      d += outerDistance(px, py);
      std::set<Placement> places;
      for (const auto& [pl, f] : px.factors) places.insert(pl);
      for (const auto& [pl, f] : py.factors) places.insert(pl);
      for (Placement pl : places) {
        double fx = double(px.factors.count(pl) ? px.factors.at(pl) : 1);
        double fy = double(py.factors.count(pl) ? py.factors.at(pl) : 1);
        d += std::min(2.0, std::fabs(std::log2(fx / fy)));
      }
    }
    for (const ClauseRow& row : clauseTable()) d += clauseDistance(row, x, y);
  }
  return d;
}

}  // namespace rtcg
