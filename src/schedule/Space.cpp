#include "schedule/Space.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <map>
#include <random>
#include <set>

#include "schedule/SpaceModel.h"
#include "schedule/space/NestSpace.h"
#include "support/Error.h"

namespace rtcg {

namespace {

using space::NestCandidate;
using space::NestSpace;

Candidate makeCandidate(const std::vector<const NestCandidate*>& parts) {
  Candidate c;
  const NestEstimate* dominant = nullptr;
  double seconds = 0;
  for (const NestCandidate* p : parts) {
    // The text is printSchedule's (the nests' texts joined by " | "), from the nests' printed once.
    if (!c.schedule.nests.empty()) c.text += " | ";
    c.text += p->text;
    c.schedule.nests.push_back(p->plan->schedule);
    c.plans.push_back(p->plan);
    c.estimatedBytes += p->est.bytes;
    c.estimatedFlops += p->est.flops;
    seconds += p->est.seconds;
    if (!dominant || p->est.seconds > dominant->seconds) dominant = &p->est;
  }
  c.score = seconds * 1e6;
  if (dominant) {
    c.threadsPerBlock = dominant->threads;
    c.blocks = dominant->blocks;
    c.registerTile = dominant->registerTile;
    c.sharedBytes = dominant->sharedBytes;
    c.occupancy = dominant->occupancy;
    c.balance = dominant->balance;
  }
  return c;
}

// Deterministic sample of `count` distinct indices of [0, n): a partial Fisher-Yates shuffle
// driven by mt19937_64, whose output sequence the standard fixes.
std::vector<size_t> sampleIndices(size_t n, size_t count, uint64_t seed) {
  std::vector<size_t> idx(n);
  for (size_t i = 0; i < n; ++i) idx[i] = i;
  std::mt19937_64 rng(seed);
  count = std::min(count, n);
  for (size_t i = 0; i < count; ++i) std::swap(idx[i], idx[i + rng() % (n - i)]);
  idx.resize(count);
  return idx;
}

// Families of the emitter's choices whose worth the static model does not see (it gives them no
// credit, so they rank behind their plain siblings): sampling measures a few of each.
std::vector<std::string> familiesOf(const Candidate& c, const std::set<std::string>& parallelNames) {
  std::vector<std::string> out;
  for (size_t i = 0; i < c.schedule.nests.size(); ++i) {
    const NestSchedule& n = c.schedule.nests[i];
    for (const ClauseRow& row : clauseTable())
      if (*row.family && !clauseAtDefault(row, n)) out.push_back(row.family);
    // The wgmma producer ring and its persistent grid: the model's shares for them are fitted on
    // a few GEMMs, and the DG rows' order among them and the staged epilogues is not the model's
    // (docs/bench.md, session 37: persistent 0.176 ms against the search's 0.190 at N5; slower at
    // N6 and N7), so each is measured.
    if (n.mma.producer) out.push_back(n.mma.persistent ? "wgmma persistent" : "wgmma producer");
    // A kept operand (`resident`): one family per operand kept.
    if (n.mma.resident != MmaOperand::None)
      out.push_back(n.mma.resident == MmaOperand::A ? "wgmma resident a" : "wgmma resident b");
    // FP64 mma.sync where memory bounds the contraction (the f64 DG rows), which the model ranks
    // by the tensor rate; the forms that ran fastest there (docs/bench.md, sessions 56-57) are
    // measured: the reduction in one step of its own length (N = 3 ran fastest so; the model
    // ranks these by the waves of blocks, and its order of their block tiles is not the measured
    // one: one family per block tile), and the persistent grids of one fragment row a warp
    // (space/MmaFamily.cpp keptFitVariants; N = 5 and 7), one family per instruction shape, and
    // one more each for their `pingpong` forms (a ring a warp row: MmaPlan::rowGroups), which the
    // model credits by a share fitted at N = 7 alone (docs/bench.md, session 59).
    const bool f64Sync = n.mma.arith == MmaArith::F64 && !n.mma.wgmmaN;
    const MmaPlan* mma = f64Sync && c.plans.size() > i && c.plans[i] && c.plans[i]->mma ? &*c.plans[i]->mma : nullptr;
    if (mma && mma->steps == 1 && n.mma.stages <= 1)
      out.push_back(fmt::format("f64 mma, the reduction in one step, {} x {} blocks", mma->blockM, mma->blockN));
    if (mma && n.mma.persistent && n.mma.resident != MmaOperand::None && n.mma.warpsM == 4 && n.mma.tileM == 1)
      out.push_back(fmt::format("f64 mma m{}n8k{}, persistent, a fragment row a warp{}", mmaDims(n.mma).m,
                                mmaDims(n.mma).k, n.mma.pingpong ? ", a ring a warp row" : ""));
    // `long_rows:` on one thread per row and on lanes per row are two shapes (SpMV's power-law
    // rows: one thread per row, or 2 lanes; the model values neither's rebalancing): one of each.
    if (n.longRows > 0 && std::none_of(n.indices.begin(), n.indices.end(), [&](const IndexSchedule& is) {
          return !parallelNames.count(is.index) &&
                 std::any_of(is.parts.begin(), is.parts.end(), [](const SchedulePart& p) { return isThreadPlacement(p.place); });
        }))
      std::replace(out.begin(), out.end(), std::string("long_rows"), std::string("long_rows, a row a thread"));
    for (const IndexSchedule& is : n.indices) {
      const bool parallel = parallelNames.count(is.index) > 0;
      for (size_t p = 1; p < is.parts.size(); ++p) {
        // Blocks walking several positions with multi-buffered tiles (positions pipelined).
        if (parallel && n.buffers > 1 && is.parts[p].place == Placement::Serial && is.parts[p].factor.value_or(1) > 1 &&
            isGridPlacement(is.parts[0].place))
          out.push_back("positions pipelined");
      }
      // Cyclic rows (a serial part ahead of the grid part of a parallel index): the balance term
      // values them, but on a model of the dispatch that no measurement has calibrated yet.
      if (parallel && is.parts.size() > 1 && is.parts[0].place == Placement::Serial && isGridPlacement(is.parts[1].place))
        out.push_back("cyclic rows");
      // A staged reduction split across blocks (split-K).
      if (!parallel && !n.shared.empty() && !is.parts.empty() && isGridPlacement(is.parts[0].place))
        out.push_back("split-K");
    }
  }
  return out;
}

// The nests' spaces, enumerated; their counts, families offered and pruned entries into `space`.
std::vector<NestSpace> nestSpaces(const Kernel& bound, const SpaceOptions& options, const Schedule& defaults,
                                  Space& space) {
  std::vector<NestSpace> nests;
  nests.reserve(bound.nests.size());
  for (size_t n = 0; n < bound.nests.size(); ++n) {
    nests.emplace_back(bound, (int)n, options, defaults);
    NestSpace& ns = nests.back();
    ns.run();
    space.enumerated += ns.enumerated;
    space.sharedStaging = space.sharedStaging || ns.sharedOffered;
    space.splitReductions = space.splitReductions || ns.splitOffered;
    space.crossBlockReductions = space.crossBlockReductions || ns.crossBlockOffered;
    for (PrunedCandidate& p : ns.pruned) space.pruned.push_back(std::move(p));
  }
  return nests;
}

// The product over nests, capped: each nest keeps its best-predicted schedules (its default
// among them) so that the product stays under the cap, as many each; but where one nest holds
// most of the predicted time (its best schedule's against the others'), the shares of the cap
// follow the shares of the time: every nest keeps 5 or more, the slow one most (an Ozaki scheme's
// products beside its scaling nests: an equal share left the products 7 of their hundreds).
std::vector<size_t> productCaps(const std::vector<NestSpace>& nests, double cap) {
  const size_t fewest = 5;
  std::vector<size_t> keep(nests.size());
  std::vector<double> share(nests.size());
  std::vector<bool> full(nests.size());
  double logLeft = std::log(cap), total = 0, slowest = 0;
  for (size_t n = 0; n < nests.size(); ++n) {
    share[n] = nests[n].kept.empty() ? 0.0 : std::max(1e-9, nests[n].kept.front().est.seconds);
    total += share[n];
    slowest = std::max(slowest, share[n]);
  }
  if (slowest <= total / 2) {
    const size_t equal = std::max<size_t>(1, (size_t)std::floor(std::pow(cap, 1.0 / (double)nests.size())));
    for (size_t n = 0; n < nests.size(); ++n) keep[n] = std::min(equal, std::max<size_t>(1, nests[n].kept.size()));
    return keep;
  }
  for (size_t n = 0; n < nests.size(); ++n) {
    const size_t size = std::max<size_t>(1, nests[n].kept.size());
    keep[n] = std::min(size, fewest);
    logLeft -= std::log((double)keep[n]);
    full[n] = keep[n] == size;
  }
  // Water-filling: the log of the cap left over goes to the nests by share; a nest that would
  // keep all it has takes only that, and the rest is shared again among the others.
  for (bool again = true; again && logLeft > 0;) {
    again = false;
    double sum = 0;
    for (size_t n = 0; n < nests.size(); ++n)
      if (!full[n]) sum += share[n];
    if (sum <= 0) break;
    for (size_t n = 0; n < nests.size() && !again; ++n) {
      if (full[n]) continue;
      const double want = (double)keep[n] * std::exp(logLeft * share[n] / sum);
      if (want >= (double)nests[n].kept.size()) {
        logLeft -= std::log((double)nests[n].kept.size() / (double)keep[n]);
        keep[n] = nests[n].kept.size();
        full[n] = again = true;
      }
    }
    if (!again)
      for (size_t n = 0; n < nests.size(); ++n)
        if (!full[n]) keep[n] = std::max(keep[n], (size_t)std::floor((double)keep[n] * std::exp(logLeft * share[n] / sum)));
  }
  return keep;
}

void capProduct(std::vector<NestSpace>& nests, Space& space) {
  const double cap = 200000;
  double product = 1;
  for (const NestSpace& ns : nests) product *= (double)std::max<size_t>(1, ns.kept.size());
  if (product <= cap || nests.empty()) return;
  std::vector<size_t> keep = productCaps(nests, cap);
  for (size_t n = 0; n < nests.size(); ++n) {
    NestSpace& ns = nests[n];
    const size_t perNest = keep[n];
    if (ns.kept.size() <= perNest) continue;
    auto def = std::find_if(ns.kept.begin(), ns.kept.end(), [](const NestCandidate& c) { return c.isDefault; });
    if (def != ns.kept.end() && def - ns.kept.begin() >= (ptrdiff_t)perNest) std::iter_swap(def, ns.kept.begin() + perNest - 1);
    space.sampledOut += (int64_t)(ns.kept.size() - perNest);
    ns.kept.resize(perNest);
  }
}

// The candidates of the product of the nests' spaces, then the fused launches (`fuse: N`) of the
// runs of nests that may share one.
std::vector<Candidate> productCandidates(const Kernel& bound, const SpaceOptions& options,
                                         const std::vector<NestSpace>& nests, Space& space) {
  std::vector<Candidate> all;
  bool someNestEmpty = std::any_of(nests.begin(), nests.end(), [](const NestSpace& ns) { return ns.kept.empty(); });
  if (nests.empty()) {
    all.push_back(makeCandidate({}));
  } else if (!someNestEmpty) {
    // Product number p has nest 0's p-th schedule modulo its count, and so on (nest 0 fastest);
    // made on the enumeration's threads, each into its place.
    size_t total = 1;
    for (const NestSpace& ns : nests) total *= ns.kept.size();
    all.resize(total);
    space::forChunks(total, space::enumerationThreads(options), [&](size_t begin, size_t end) {
      std::vector<const NestCandidate*> parts(nests.size());
      for (size_t p = begin; p < end; ++p) {
        for (size_t n = 0, rest = p; n < nests.size(); rest /= nests[n].kept.size(), ++n)
          parts[n] = &nests[n].kept[rest % nests[n].kept.size()];
        all[p] = makeCandidate(parts);
      }
    });
  }
  if (!someNestEmpty)
    for (std::pair<int, int> run : space::fusableRuns(bound)) {
      std::vector<const NestCandidate*> best;
      for (const NestSpace& ns : nests) best.push_back(&ns.kept[0]);
      const size_t before = all.size();
      space::addFusedCandidates(bound, options, run, best, all, space.pruned);
      space.enumerated += int64_t(all.size() - before);
    }
  return all;
}

// Ties are common (the model does not see staging layouts, steps or buffer counts): tied
// candidates are taken round-robin over the placements of their parallel indices, so that the
// best-predicted half of a sample covers several tilings instead of every staging variant of one.
void sortRoundRobinOverTies(std::vector<Candidate>& all, const std::set<std::string>& parallelNames) {
  std::map<std::pair<double, std::string>, int64_t> seenPlacements;
  std::vector<int64_t> variant(all.size());
  for (size_t c = 0; c < all.size(); ++c) {
    std::string placement;
    for (const NestSchedule& n : all[c].schedule.nests) {
      for (const IndexSchedule& is : n.indices)
        if (parallelNames.count(is.index)) placement += printIndexSchedule(is) + ";";
      placement += "|";
    }
    variant[c] = seenPlacements[{all[c].score, placement}]++;
  }
  std::vector<size_t> order(all.size());
  for (size_t c = 0; c < order.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (all[a].score != all[b].score) return all[a].score < all[b].score;
    return variant[a] < variant[b];
  });
  std::vector<Candidate> sorted;
  sorted.reserve(all.size());
  for (size_t c : order) sorted.push_back(std::move(all[c]));
  all = std::move(sorted);
}

// Sampling down to maxCandidates: the best-predicted half; then, for each family of the emitter's
// choices that the model cannot value (see familiesOf) and that the half lacks, its
// best-predicted few, so that the tuner measures every family the space offers; then a seeded
// random sample of the rest. The default replaces the last pick when none of these took it. What
// is left out goes to the reserve.
void sampleDown(std::vector<Candidate>& all, const SpaceOptions& options, const std::set<std::string>& parallelNames,
                const std::string& defaultText, Space& space) {
  size_t budget = (size_t)options.maxCandidates;
  size_t best = (budget + 1) / 2;
  std::vector<Candidate> chosen(all.begin(), all.begin() + best);
  std::vector<bool> picked(all.size(), false);
  std::fill(picked.begin(), picked.begin() + best, true);
  std::set<std::string> covered;
  for (size_t c = 0; c < best; ++c)
    for (const std::string& f : familiesOf(all[c], parallelNames)) covered.insert(f);
  const size_t perFamily = std::max<size_t>(1, budget / 32);
  std::map<std::string, size_t> added;
  for (size_t c = best; c < all.size() && chosen.size() < budget; ++c) {
    bool take = false;
    for (const std::string& f : familiesOf(all[c], parallelNames))
      if (!covered.count(f) && added[f] < perFamily) take = true, ++added[f];
    if (take) chosen.push_back(all[c]), picked[c] = true;
  }
  std::vector<size_t> rest;
  for (size_t c = best; c < all.size(); ++c)
    if (!picked[c]) rest.push_back(c);
  for (size_t i : sampleIndices(rest.size(), std::min(rest.size(), budget - chosen.size()), options.seed))
    chosen.push_back(all[rest[i]]);
  bool hasDefault = std::any_of(chosen.begin(), chosen.end(), [&](const Candidate& c) { return c.text == defaultText; });
  auto def = std::find_if(all.begin(), all.end(), [&](const Candidate& c) { return c.text == defaultText; });
  if (!hasDefault && def != all.end()) chosen.back() = *def;
  space.sampledOut += (int64_t)(all.size() - chosen.size());
  std::set<std::string> taken;
  for (const Candidate& c : chosen) taken.insert(c.text);
  for (Candidate& c : all)
    if (!taken.count(c.text)) space.reserve.push_back(std::move(c));
  all = std::move(chosen);
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) { return a.score < b.score; });
}

}  // namespace

SchedulePlan candidatePlan(const Candidate& c) {
  SchedulePlan out;
  RTCG_ASSERT(c.plans.size() == c.schedule.nests.size(), "a candidate holds a plan per nest");
  for (const std::shared_ptr<const NestPlan>& p : c.plans) out.nests.push_back(*p);
  out.fusions = c.fusions;
  return out;
}

Space enumerateSchedules(const Kernel& bound, const SpaceOptions& options) {
  Space space;
  if (!bound.isBound()) throw Error(fmt::format("kernel '{}' must be bound before its schedules are enumerated", bound.name));
  Schedule defaults = defaultSchedule(bound, options.limits);
  std::vector<NestSpace> nests = nestSpaces(bound, options, defaults, space);
  capProduct(nests, space);
  // Every kept candidate must parse back to itself: the tuner stores the text. A product
  // candidate's text is its nests' joined by " | ", which parses nest by nest: each nest's kept
  // schedules are parsed once, not once per product (softmax's tens of thousands of candidates
  // are products of a few dozen nest schedules); the fused candidates, whole.
  // (On the enumeration's threads: each check is independent; the first failure in order is reported.)
  for (const NestSpace& ns : nests) {
    std::vector<char> roundTrips(ns.kept.size());
    space::forChunks(ns.kept.size(), space::enumerationThreads(options), [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) {
        auto again = parseSchedule(ns.kept[i].text);
        roundTrips[i] = again.ok() && again.schedule->nests.size() == 1 && again.schedule->nests[0] == ns.kept[i].plan->schedule;
      }
    });
    for (size_t i = 0; i < ns.kept.size(); ++i)
      RTCG_ASSERT(roundTrips[i], "schedule text does not round-trip: " + ns.kept[i].text);
  }
  // The default schedule first, so that it survives ties and sampling.
  std::vector<Candidate> all = productCandidates(bound, options, nests, space);
  for (const Candidate& c : all) {
    if (c.fusions.empty()) continue;
    auto again = parseSchedule(c.text);
    RTCG_ASSERT(again.ok() && *again.schedule == c.schedule, "schedule text does not round-trip: " + c.text);
  }
  std::set<std::string> parallelNames;
  for (size_t n = 0; n < bound.nests.size(); ++n)
    if (auto indices = nestIndices(bound, (int)n))
      for (const NestIndex& ni : *indices)
        if (ni.parallel) parallelNames.insert(ni.name);
  sortRoundRobinOverTies(all, parallelNames);
  if (options.maxCandidates > 0 && (int64_t)all.size() > options.maxCandidates)
    sampleDown(all, options, parallelNames, printSchedule(defaults), space);
  space.candidates = std::move(all);
  return space;
}

}  // namespace rtcg
