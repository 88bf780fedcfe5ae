// The static model's balance term (SpaceModel.h, "Work balance"): where a nest's rows are of unequal
// length (a triangle's reduction `j in 0..i + 1`, a triangular output domain), the blocks of a
// launch hold unequal work, and a multiprocessor left with a few long blocks at the end runs them
// at a fraction of its rate. The work of every block is counted from the domain's bounds, the
// blocks are run on the multiprocessors in the order the hardware dispatches them, and the term is
// the time of the same blocks with equal work over theirs (the wave quantization of equal blocks
// the model already counts).
#include "schedule/SpaceModel.h"

#include <algorithm>
#include <numeric>
#include <queue>

namespace rtcg {

namespace {

// An affine bound over the parallel indices: coefficients by their position in the nest.
struct Bound {
  std::vector<std::pair<size_t, int64_t>> terms;
  int64_t constant = 0;
  int64_t at(const std::vector<int64_t>& point) const {
    int64_t v = constant;
    for (const auto& [slot, c] : terms) v += c * point[slot];
    return v;
  }
};

// The affine form of `e` over the parallel loops (by loop id: their position); nullopt where it
// reads anything else (a reduction index, an array).
std::optional<Bound> boundOver(const Expr& e, const std::map<int, size_t>& slotOf) {
  std::optional<AffineForm> f = toAffine(e);
  if (!f) return std::nullopt;
  Bound b{{}, f->constant};
  for (const auto& [id, c] : f->coeffs) {
    auto it = slotOf.find(id);
    if (it == slotOf.end()) return std::nullopt;
    b.terms.push_back({it->second, c});
  }
  return b;
}

// How a parallel index's parts place its values: the grid parts fix the block's share, the
// serial and unroll parts are its positions, the thread and reg parts the values of one position
// ([lo, hi] around the position's base, `count` of them).
struct ParallelAxis {
  Bound lo, hi;  // the loop's bounds (hi exclusive)
  int64_t hullLo = 0;
  std::vector<std::pair<int, int64_t>> grid;           // (grid axis, stride)
  std::vector<std::pair<int64_t, int64_t>> positions;  // (extent, stride)
  int64_t spanLo = 0, spanHi = 0, count = 1;
};

// The time `works` take on `sms` multiprocessors of `perSm` block slots: the first blocks dealt in
// turn to the multiprocessors, each later one to the first slot that frees. A multiprocessor's
// blocks share its rate equally; k of them issue at min(1, k * share) of it (`share`: what one
// block's warps hide alone, the efficiency's latency hiding), so a multiprocessor left with a few
// long blocks slows down: the tail.
double runTime(const std::vector<double>& works, int64_t sms, int64_t perSm, double share) {
  struct Sm {
    std::priority_queue<double, std::vector<double>, std::greater<double>> finish;  // in progress per block
    double progress = 0, time = 0;
  };
  std::vector<Sm> sm(size_t(std::max<int64_t>(1, sms)));
  auto perBlock = [&](size_t k) { return std::min(1.0, double(k) * share) / double(k); };
  size_t next = 0;
  for (int64_t slot = 0; slot < perSm; ++slot)
    for (Sm& m : sm)
      if (next < works.size()) m.finish.push(works[next++]);
  using Event = std::pair<double, size_t>;  // (time of the multiprocessor's next completion, which)
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events;
  for (size_t s = 0; s < sm.size(); ++s)
    if (!sm[s].finish.empty()) events.push({sm[s].finish.top() / perBlock(sm[s].finish.size()), s});
  double end = 0;
  while (!events.empty()) {
    const auto [at, s] = events.top();
    events.pop();
    Sm& m = sm[s];
    m.progress += (at - m.time) * perBlock(m.finish.size());
    m.time = end = at;
    while (!m.finish.empty() && m.finish.top() <= m.progress * (1 + 1e-12)) {
      m.finish.pop();
      if (next < works.size()) m.finish.push(m.progress + works[next++]);
    }
    if (!m.finish.empty()) events.push({at + (m.finish.top() - m.progress) / perBlock(m.finish.size()), s});
  }
  return end;
}

}  // namespace

int64_t NestModel::stepValues(const NestPlan& plan) const {
  int64_t step = plan.launch.lanes;
  if (const NestIndex* r = innermostReduction())
    if (const IndexSchedule* is = plan.schedule.find(r->name))
      for (size_t p = 1; p < is->parts.size(); ++p)
        if (is->parts[p].place == Placement::Unroll) step *= is->parts[p].factor.value_or(1);
  return step;
}

namespace {

// What the work of a block depends on: how the parallel indices' parts place their values, and the
// trip counts of the reductions at a point (constant ones multiplied into one factor).
struct Rows {
  std::vector<ParallelAxis> axes;
  std::vector<std::vector<std::pair<Bound, Bound>>> trips;  // per varying reduction index, its loops
  double constantTrips = 1;
};

// The rows of nest indices `domain` under `plan`; nullopt where a bound is not affine in the
// parallel indices or a range is data-dependent.
std::optional<Rows> rowsOf(const std::vector<NestIndex>& domain, const NestPlan& plan) {
  std::map<int, size_t> slotOf;
  for (const NestIndex& ni : domain)
    if (ni.parallel) slotOf.emplace(ni.loops.front()->id, slotOf.size());
  Rows rows;
  for (const NestIndex& ni : domain) {
    if (!ni.parallel) continue;
    const IndexPlan* ip = plan.index(ni.name);
    auto lo = boundOver(ni.loops.front()->lo, slotOf), hi = boundOver(ni.loops.front()->hi, slotOf);
    if (!ip || !lo || !hi) return std::nullopt;
    ParallelAxis a;
    a.lo = *lo;
    a.hi = *hi;
    a.hullLo = ni.hull.lo;
    const IndexSchedule& is = plan.clauseOf(*ip);
    for (size_t p = 0; p < is.parts.size(); ++p) {
      const Placement pl = is.parts[p].place;
      if (isGridPlacement(pl)) a.grid.push_back({placementAxis(pl), ip->strides[p]});
      else if (isThreadPlacement(pl) || pl == Placement::Reg) {
        a.spanHi += (ip->extents[p] - 1) * ip->strides[p];
        a.count *= ip->extents[p];
      } else if (ip->extents[p] > 1) a.positions.push_back({ip->extents[p], ip->strides[p]});
    }
    rows.axes.push_back(std::move(a));
  }
  for (const NestIndex& ni : domain) {
    if (ni.parallel) continue;
    if (ni.dataDependent) return std::nullopt;
    if (ni.constantBounds) {
      rows.constantTrips *= double(std::max<int64_t>(1, ni.hull.extent()));
      continue;
    }
    rows.trips.emplace_back();
    for (const Loop* l : ni.loops) {
      auto lo = boundOver(l->lo, slotOf), hi = boundOver(l->hi, slotOf);
      if (!lo || !hi) return std::nullopt;
      rows.trips.back().push_back({*lo, *hi});
    }
  }
  return rows;
}

// The work of one position's box ([boxLo, boxHi] per index) at `point` (the values of the indices
// before `d`), walking the indices outermost first: up to 8 sampled rows of each but the innermost,
// whose points count at their middle's work. A point's work: the product of its reductions' trip
// counts, at least `step` (a row shorter than a step still takes the step).
double boxWork(const Rows& rows, double step, const std::vector<int64_t>& boxLo, const std::vector<int64_t>& boxHi,
               std::vector<int64_t>& point, size_t d) {
  const ParallelAxis& a = rows.axes[d];
  const int64_t lo = std::max(boxLo[d], a.lo.at(point)), hi = std::min(boxHi[d], a.hi.at(point) - 1);
  if (hi < lo) return 0;
  const double density = double(a.count) / double(a.spanHi - a.spanLo + 1);
  if (d + 1 == rows.axes.size()) {
    point[d] = lo + (hi - lo) / 2;
    double w = rows.constantTrips;
    for (const auto& loops : rows.trips) {
      int64_t t = 0;
      for (const auto& [tripLo, tripHi] : loops) t = std::max(t, tripHi.at(point) - tripLo.at(point));
      w *= double(t);
    }
    return double(hi - lo + 1) * density * std::max(w, step);
  }
  const int64_t n = hi - lo + 1, samples = std::min<int64_t>(n, 8);
  double sum = 0;
  for (int64_t t = 0; t < samples; ++t) {
    point[d] = lo + int64_t((double(t) + 0.5) * double(n) / double(samples));
    sum += boxWork(rows, step, boxLo, boxHi, point, d + 1);
  }
  return sum * double(n) / double(samples) * density;
}

// Every block's work in dispatch order (blockIdx.x fastest), each over its positions (up to 64
// sampled); a reduction split across blocks (split-K) gives each block of a tile its share.
std::vector<double> countWorks(const Rows& rows, const LaunchPlan& launch, double step) {
  std::vector<double> works;
  works.reserve(size_t(launch.blocks));
  const size_t n = rows.axes.size();
  std::vector<int64_t> point(n), boxLo(n), boxHi(n);
  int64_t positions = 1;
  for (const ParallelAxis& a : rows.axes)
    for (const auto& [extent, stride] : a.positions) positions *= extent;
  const int64_t samples = std::min<int64_t>(positions, 64);
  for (int64_t bz = 0; bz < launch.grid[2]; ++bz)
    for (int64_t by = 0; by < launch.grid[1]; ++by)
      for (int64_t bx = 0; bx < launch.grid[0]; ++bx) {
        const int64_t block[3] = {bx, by, bz};
        double w = 0;
        for (int64_t t = 0; t < samples; ++t) {
          int64_t pos = int64_t((double(t) + 0.5) * double(positions) / double(samples));
          for (size_t d = 0; d < n; ++d) {
            const ParallelAxis& a = rows.axes[d];
            int64_t base = a.hullLo;
            for (const auto& [axis, stride] : a.grid) base += block[axis] * stride;
            for (const auto& [extent, stride] : a.positions) {
              base += (pos % extent) * stride;
              pos /= extent;
            }
            boxLo[d] = base + a.spanLo;
            boxHi[d] = base + a.spanHi;
          }
          w += boxWork(rows, step, boxLo, boxHi, point, 0);
        }
        works.push_back(w * double(positions) / double(samples) / double(launch.crossBlocks));
      }
  return works;
}

}  // namespace

NestModel::BlockWork* NestModel::countBlockWork(const NestPlan& plan) const {
  // Past 65536 blocks the count would cost more than the rest of the estimate: such launches (one
  // block per short row) count as equal blocks.
  if ((!varying_ && !parallelVarying_) || plan.mma || plan.launch.blocks > 65536) return nullptr;
  const std::optional<Rows> rows = rowsOf(domain_, plan);
  if (!rows) return nullptr;
  const double step = double(stepValues(plan));
  // Candidates that differ only in unrolling, staging, layouts of their tiles or clauses share the
  // distribution of the rows (the blocks' boxes, their positions and the step, which only matters
  // where the trip counts vary): its blocks' work is counted once.
  const LaunchPlan& L = plan.launch;
  std::vector<int64_t> key{L.grid[0], L.grid[1], L.grid[2], L.crossBlocks, rows->trips.empty() ? 0 : int64_t(step)};
  for (const ParallelAxis& a : rows->axes) {
    key.insert(key.end(), {-1, a.spanLo, a.spanHi, a.count});
    for (const auto& [axis, stride] : a.grid) key.insert(key.end(), {axis, stride});
    key.push_back(-2);
    for (const auto& [extent, stride] : a.positions) key.insert(key.end(), {extent, stride});
  }
  auto [hit, fresh] = workCache_.try_emplace(std::move(key));
  if (fresh) hit->second.works = countWorks(*rows, L, step);
  return &hit->second;
}

const std::vector<double>* NestModel::blockWork(const NestPlan& plan) const {
  const BlockWork* w = countBlockWork(plan);
  return w ? &w->works : nullptr;
}

std::optional<double> NestModel::workBalance(const NestPlan& plan, int64_t sms, int64_t perSm, double share) const {
  if (sms <= 0 || perSm <= 0 || share <= 0) return std::nullopt;
  BlockWork* counted = countBlockWork(plan);
  if (!counted) return std::nullopt;
  auto [hit, fresh] = counted->balance.try_emplace({sms, perSm, share});
  if (!fresh) return hit->second;
  const std::vector<double>* works = &counted->works;
  double total = 0;
  int64_t busy = 0;
  for (double x : *works)
    if (x > 0) total += x, ++busy;
  if (busy == 0) return hit->second = std::nullopt;
  std::vector<double> equal = *works;
  for (double& x : equal)
    if (x > 0) x = total / double(busy);
  const double t = runTime(*works, sms, perSm, share);
  return hit->second = t > 0 ? std::min(1.0, runTime(equal, sms, perSm, share) / t) : 1.0;
}

}  // namespace rtcg
