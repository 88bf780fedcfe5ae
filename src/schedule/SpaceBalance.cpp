// The static model's balance term (SpaceModel.h, "Work balance"): where a nest's rows are of unequal
// length (a triangle's reduction `j in 0..i + 1`, a triangular output domain), the blocks of a
// launch hold unequal work, and a multiprocessor left with a few long blocks at the end runs them
// at a fraction of its rate. The work of every block is counted from the domain's bounds, the
// blocks are run on the multiprocessors in the order the hardware dispatches them, and the term is
// the time of the same blocks with equal work over theirs (the wave quantization of equal blocks
// the model already counts).
#include "schedule/SpaceModel.h"

#include <algorithm>
#include <functional>
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

NestModel::BlockWork* NestModel::countBlockWork(const NestPlan& plan) const {
  // Past 65536 blocks the count would cost more than the rest of the estimate: such launches (one
  // block per short row) count as equal blocks.
  if ((!varying_ && !parallelVarying_) || plan.mma || plan.launch.blocks > 65536)
    return nullptr;
  std::map<int, size_t> slotOf;
  std::vector<const NestIndex*> par;
  for (const NestIndex& ni : domain_)
    if (ni.parallel) {
      slotOf[ni.loops.front()->id] = par.size();
      par.push_back(&ni);
    }
  std::vector<ParallelAxis> axes;
  for (const NestIndex* ni : par) {
    const IndexPlan* ip = plan.index(ni->name);
    if (!ip) return nullptr;
    auto lo = boundOver(ni->loops.front()->lo, slotOf), hi = boundOver(ni->loops.front()->hi, slotOf);
    if (!lo || !hi) return nullptr;
    ParallelAxis a;
    a.lo = *lo;
    a.hi = *hi;
    a.hullLo = ni->hull.lo;
    const IndexSchedule& is = plan.clauseOf(*ip);
    for (size_t p = 0; p < is.parts.size(); ++p) {
      const Placement pl = is.parts[p].place;
      if (isGridPlacement(pl)) a.grid.push_back({placementAxis(pl), ip->strides[p]});
      else if (isThreadPlacement(pl) || pl == Placement::Reg) {
        a.spanHi += (ip->extents[p] - 1) * ip->strides[p];
        a.count *= ip->extents[p];
      } else if (ip->extents[p] > 1) a.positions.push_back({ip->extents[p], ip->strides[p]});
    }
    axes.push_back(std::move(a));
  }
  // Each point's work: the product of its reductions' trip counts, at least one step of the lanes
  // that share it (a row shorter than a step still takes the step).
  std::vector<std::vector<std::pair<Bound, Bound>>> trips;
  double constantTrips = 1;
  for (const NestIndex& ni : domain_) {
    if (ni.parallel) continue;
    if (ni.dataDependent) return nullptr;
    if (ni.constantBounds) {
      constantTrips *= double(std::max<int64_t>(1, ni.hull.extent()));
      continue;
    }
    trips.emplace_back();
    for (const Loop* l : ni.loops) {
      auto lo = boundOver(l->lo, slotOf), hi = boundOver(l->hi, slotOf);
      if (!lo || !hi) return nullptr;
      trips.back().push_back({*lo, *hi});
    }
  }
  const double step = double(stepValues(plan));
  // Candidates that differ only in unrolling, staging, layouts of their tiles or clauses share the
  // distribution of the rows (the blocks' boxes, their positions and the step, which only matters
  // where the trip counts vary): its blocks' work is counted once.
  std::vector<int64_t> key{plan.launch.grid[0], plan.launch.grid[1], plan.launch.grid[2], plan.launch.crossBlocks,
                           trips.empty() ? 0 : int64_t(step)};
  for (const ParallelAxis& a : axes) {
    key.insert(key.end(), {-1, a.spanLo, a.spanHi, a.count});
    for (const auto& [axis, stride] : a.grid) key.insert(key.end(), {axis, stride});
    key.push_back(-2);
    for (const auto& [extent, stride] : a.positions) key.insert(key.end(), {extent, stride});
  }
  auto [hit, fresh] = workCache_.try_emplace(std::move(key));
  if (!fresh) return &hit->second;
  std::vector<double>& works = hit->second.works;
  auto pointWork = [&](const std::vector<int64_t>& point) {
    double w = constantTrips;
    for (const auto& loops : trips) {
      int64_t t = 0;
      for (const auto& [lo, hi] : loops) t = std::max(t, hi.at(point) - lo.at(point));
      w *= double(t);
    }
    return std::max(w, step);
  };

  // The work of one position's box ([lo, hi] per index), walking the indices outermost first (up
  // to 8 sampled rows of each but the innermost, whose points count at their middle's work).
  std::vector<int64_t> point(axes.size()), boxLo(axes.size()), boxHi(axes.size());
  std::function<double(size_t)> boxWork = [&](size_t d) -> double {
    const ParallelAxis& a = axes[d];
    const int64_t lo = std::max(boxLo[d], a.lo.at(point)), hi = std::min(boxHi[d], a.hi.at(point) - 1);
    if (hi < lo) return 0;
    const double density = double(a.count) / double(a.spanHi - a.spanLo + 1);
    if (d + 1 == axes.size()) {
      point[d] = lo + (hi - lo) / 2;
      return double(hi - lo + 1) * density * pointWork(point);
    }
    const int64_t rows = hi - lo + 1, samples = std::min<int64_t>(rows, 8);
    double sum = 0;
    for (int64_t t = 0; t < samples; ++t) {
      point[d] = lo + int64_t((double(t) + 0.5) * double(rows) / double(samples));
      sum += boxWork(d + 1);
    }
    return sum * double(rows) / double(samples) * density;
  };

  // Blocks in dispatch order (blockIdx.x fastest), each over its positions (up to 64 sampled).
  const LaunchPlan& L = plan.launch;
  works.reserve(size_t(L.blocks));
  int64_t positions = 1;
  for (const ParallelAxis& a : axes)
    for (const auto& [extent, stride] : a.positions) positions *= extent;
  const int64_t samples = std::min<int64_t>(positions, 64);
  for (int64_t bz = 0; bz < L.grid[2]; ++bz)
    for (int64_t by = 0; by < L.grid[1]; ++by)
      for (int64_t bx = 0; bx < L.grid[0]; ++bx) {
        const int64_t block[3] = {bx, by, bz};
        double w = 0;
        for (int64_t t = 0; t < samples; ++t) {
          int64_t pos = int64_t((double(t) + 0.5) * double(positions) / double(samples));
          for (size_t d = 0; d < axes.size(); ++d) {
            int64_t base = axes[d].hullLo;
            for (const auto& [axis, stride] : axes[d].grid) base += block[axis] * stride;
            for (const auto& [extent, stride] : axes[d].positions) {
              base += (pos % extent) * stride;
              pos /= extent;
            }
            boxLo[d] = base + axes[d].spanLo;
            boxHi[d] = base + axes[d].spanHi;
          }
          w += boxWork(0);
        }
        // A reduction split across blocks (split-K): each block of the tile takes a share.
        works.push_back(w * double(positions) / double(samples) / double(L.crossBlocks));
      }
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
