// NestSpace: the coordinator of one nest's space (space/NestSpace.h). The families add their
// variants through add; run calls them in the order of the family table.
#include "schedule/space/NestSpace.h"

#include "schedule/SpaceScan.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace rtcg::space {

namespace {

std::string micros(double seconds) {
  double us = seconds * 1e6;
  return us >= 100 ? fmt::format("{:.0f} us", us) : fmt::format("{:.3g} us", us);
}

}  // namespace

NestSpace::NestSpace(const Kernel& k, int nest, const SpaceOptions& o, const Schedule& defaults)
    : k_(k), nest_(nest), o_(o), defaults_(defaults), model_(k, nest) {
  // The other nests keep their default schedules: their reasons (none, unless the limits exclude
  // a default) are planned once and reported around this nest's, as validateSchedule orders them.
  for (size_t n = 0; n < defaults.nests.size(); ++n)
    if ((int)n != nest)
      for (std::string& r : planNest(k, (int)n, defaults.nests[n], o.limits).reasons)
        ((int)n < nest ? reasonsBefore_ : reasonsAfter_).push_back(std::move(r));
}

void NestSpace::run() {
  add(defaults_.nests[nest_], Group::Plain, /*isDefault=*/true);
  // A scan's one-pass schedules (SpaceScan.h); the other families only where its triangle is short.
  for (const NestSchedule& ns : scanVariants(k_, nest_, o_)) add(ns, Group::Plain);
  if (model_.ok() && pointwiseOffered(k_, nest_))
    for (const SpaceFamily& family : spaceFamilies())
      if (family.applies(*this)) family.generate(*this);
  finishGroups();
  prune();
}

const Contraction* NestSpace::contraction() {
  if (!contraction_) contraction_ = matchContraction(k_, nest_).contraction;
  return *contraction_ ? &**contraction_ : nullptr;
}

void NestSpace::finishGroups() {
  sharedOffered = accepted_[Group::Shared];
  splitOffered = accepted_[Group::Split];
  crossBlockOffered = accepted_[Group::CrossBlock];
  for (auto& [group, list] : rejected_) {
    if (list.empty()) continue;
    if (accepted_[group]) {
      for (PrunedCandidate& p : list) pruned.push_back(std::move(p));
    } else {
      const char* what = group == Group::Shared      ? "shared-memory staging"
                         : group == Group::Split     ? "split reductions"
                         : group == Group::OuterTile ? "outer register tiles"
                                                     : "reductions split across blocks";
      pruned.push_back({list.front().text, fmt::format("{} not offered ({} variant{}): {}", what, list.size(),
                                                       list.size() == 1 ? "" : "s", list.front().reason)});
    }
  }
}

std::string NestSpace::where() const { return k_.nests.size() > 1 ? fmt::format("nest {}: ", nest_) : ""; }

// The plan of a variant of this nest (probed earlier or made now), taken out of the cache.
NestPlanResult NestSpace::takePlan(const NestSchedule& ns, const std::string& text) {
  auto hit = planned_.find(text);
  if (hit == planned_.end()) return planNest(k_, nest_, ns, o_.limits, &model_.facts());
  NestPlanResult r = std::move(hit->second);
  planned_.erase(hit);
  return r;
}

StagingPlan NestSpace::stagingOf(const NestSchedule& ns) {
  std::string text = printNestSchedule(ns);
  auto hit = planned_.find(text);
  if (hit == planned_.end()) hit = planned_.emplace(text, planNest(k_, nest_, ns, o_.limits, &model_.facts())).first;
  const NestPlanResult& r = hit->second;
  if (r.plan) return r.plan->staging;
  if (r.staging) return *r.staging;
  return planStaging(k_, nest_, ns, &model_.facts());
}

bool NestSpace::add(const NestSchedule& ns, Group group, bool isDefault) {
  std::string text = printNestSchedule(ns);
  if (!seen_.insert(text).second) return false;
  ++enumerated;
  NestPlanResult planned = takePlan(ns, text);
  std::vector<std::string> reasons = reasonsBefore_;
  reasons.insert(reasons.end(), planned.reasons.begin(), planned.reasons.end());
  reasons.insert(reasons.end(), reasonsAfter_.begin(), reasonsAfter_.end());
  if (!reasons.empty()) {
    // The default is legal under the default limits; tighter user limits may still exclude it.
    PrunedCandidate p{where() + text, (isDefault ? "default schedule: " : "") + reasons.front()};
    if (group == Group::Plain) pruned.push_back(std::move(p));
    else rejected_[group].push_back(std::move(p));
    return false;
  }
  if (group != Group::Plain) accepted_[group] = true;
  auto plan = std::make_shared<const NestPlan>(std::move(*planned.plan));
  if (group == Group::Shared && !ns.shared.empty()) {
    auto bytes = model_.stagedBytes(*plan, ns.shared);
    if (bytes && *bytes > o_.limits.maxSharedBytes) {
      pruned.push_back({where() + text, fmt::format("staging needs {} bytes of shared memory (at most {})",
                                                    *bytes, o_.limits.maxSharedBytes)});
      return false;
    }
  }
  NestEstimate est = model_.estimate(*plan, o_.device);
  kept.push_back({text, std::move(est), isDefault, std::move(plan)});
  return true;
}

std::vector<size_t> NestSpace::bestKept(size_t n, bool stable) const {
  std::vector<size_t> order;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i].est.blocksPerMultiprocessor > 0) order.push_back(i);  // (the others are pruned)
  auto faster = [&](size_t a, size_t b) { return kept[a].est.seconds < kept[b].est.seconds; };
  if (stable) {
    std::stable_sort(order.begin(), order.end(), faster);
    if (order.size() > n) order.resize(n);
    return order;
  }
  n = std::min(n, order.size());
  std::partial_sort(order.begin(), order.begin() + (ptrdiff_t)n, order.end(), faster);
  order.resize(n);
  return order;
}

// The model's pruning; the default schedule is never pruned.
void NestSpace::prune() {
  const DeviceModel& d = o_.device;
  auto drop = [&](const NestCandidate& c, std::string reason) {
    pruned.push_back({where() + c.text, std::move(reason)});
    return false;
  };
  // Keeps the candidates that `keep` takes, in order, in place (a second list of tens of thousands
  // of candidates cost more than the pruning: allocating it, and freeing the first). erase_if asks
  // each candidate once, in order: the pruned entries keep the candidates' order.
  auto filter = [&](auto keep) { std::erase_if(kept, [&](const NestCandidate& c) { return !keep(c); }); };
  filter([&](const NestCandidate& c) {
    if (c.isDefault) return true;
    if (c.est.blocksPerMultiprocessor == 0)
      return drop(c, fmt::format("cannot be resident: {} threads with ~{} registers and {} bytes of shared memory "
                                 "per block exceed a multiprocessor", c.est.threads, c.est.registers, c.est.sharedBytes));
    if (c.est.threads < o_.minThreads)
      return drop(c, fmt::format("threads per block {} < min_threads {}", c.est.threads, o_.minThreads));
    if (c.est.blocks < o_.minBlocks) return drop(c, fmt::format("blocks {} < min_blocks {}", c.est.blocks, o_.minBlocks));
    return true;
  });

  // Too few blocks to spread over the device, when other candidates have enough.
  int64_t quarter = std::max<int64_t>(1, d.multiprocessors / 4);
  bool enoughExists = std::any_of(kept.begin(), kept.end(), [&](const NestCandidate& c) { return c.est.blocks >= quarter; });
  if (enoughExists)
    filter([&](const NestCandidate& c) {
      if (!c.isDefault && c.est.blocks < quarter)
        return drop(c, fmt::format("only {} blocks for {} multiprocessors", c.est.blocks, d.multiprocessors));
      return true;
    });

  double best = std::numeric_limits<double>::infinity();
  for (const NestCandidate& c : kept) best = std::min(best, c.est.seconds);
  bool coalescedExists = std::any_of(kept.begin(), kept.end(), [](const NestCandidate& c) {
    return std::llabs(c.est.storeStride) <= 1;
  });
  filter([&](const NestCandidate& c) {
    if (c.isDefault) return true;
    if (coalescedExists && std::llabs(c.est.storeStride) > 1 && c.est.seconds > 4 * best)
      return drop(c, fmt::format("uncoalesced: thread.x on {} (stride {} along it for {}), predicted {} vs the best {}",
                                 c.est.threadXIndex, c.est.storeStride, c.est.storeArray, micros(c.est.seconds),
                                 micros(best)));
    if (c.est.seconds > 20 * best) return drop(c, fmt::format("predicted {} > 20x the best {}", micros(c.est.seconds), micros(best)));
    return true;
  });
  // Fastest first, ties in generation order: the order sorted by index, then each candidate
  // moved once (sorting the candidates themselves moved each of them log n times).
  std::vector<size_t> order(kept.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return kept[a].est.seconds < kept[b].est.seconds; });
  std::vector<NestCandidate> sorted;
  sorted.reserve(kept.size());
  for (size_t i : order) sorted.push_back(std::move(kept[i]));
  kept = std::move(sorted);
}

}  // namespace rtcg::space
