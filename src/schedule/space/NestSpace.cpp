// NestSpace: the coordinator of one nest's space (space/NestSpace.h). The families add their
// variants through add; run calls them in the order of the family table.
#include "schedule/space/NestSpace.h"

#include "schedule/SpaceScan.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fmt/format.h>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "support/Cores.h"

namespace rtcg::space {

namespace {

std::string micros(double seconds) {
  double us = seconds * 1e6;
  return us >= 100 ? fmt::format("{:.0f} us", us) : fmt::format("{:.3g} us", us);
}

}  // namespace

void forChunks(size_t n, int threads, const std::function<void(size_t begin, size_t end)>& work) {
  const size_t chunks = std::min(n, (size_t)std::max(1, threads) * 4);
  if (chunks <= 1 || threads <= 1) {
    if (n > 0) work(0, n);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex errorMutex;
  auto run = [&] {
    for (size_t c; (c = next.fetch_add(1)) < chunks;) {
      try {
        work(n * c / chunks, n * (c + 1) / chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(errorMutex);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads && (size_t)t < chunks; ++t) pool.emplace_back(run);
  run();
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

int enumerationThreads(const SpaceOptions& options) {
  if (options.threads > 0) return options.threads;
  return std::min(8, usableCores());
}

NestSpace::NestSpace(const Kernel& k, int nest, const SpaceOptions& o, const Schedule& defaults)
    : k_(k), nest_(nest), o_(o), defaults_(defaults), ownModel_(std::make_unique<NestModel>(k, nest)),
      model_(ownModel_.get()) {
  // The other nests keep their default schedules: their reasons (none, unless the limits exclude
  // a default) are planned once and reported around this nest's, as validateSchedule orders them.
  for (size_t n = 0; n < defaults.nests.size(); ++n)
    if ((int)n != nest)
      for (std::string& r : planNest(k, (int)n, defaults.nests[n], o.limits).reasons)
        ((int)n < nest ? reasonsBefore_ : reasonsAfter_).push_back(std::move(r));
}

NestSpace::NestSpace(const NestSpace& parent, const NestModel& model)
    : k_(parent.k_), nest_(parent.nest_), o_(parent.o_), defaults_(parent.defaults_), model_(&model),
      parentSeen_(&parent.seen_), reasonsBefore_(parent.reasonsBefore_), reasonsAfter_(parent.reasonsAfter_),
      contraction_(parent.contraction_) {}

void NestSpace::noteAdded(std::string text, Group group, bool result, bool accepts, Entry entry) {
  if (parentSeen_) added_.push_back({std::move(text), group, result, accepts, entry});
}

void NestSpace::runJobs(size_t count, const std::function<void(NestSpace&, size_t)>& job) {
  const size_t threads = std::min(count, (size_t)std::max(1, enumerationThreads(o_)));
  if (threads <= 1 || parentSeen_) {  // one thread, or a shard's own jobs: in order, here
    for (size_t i = 0; i < count; ++i) job(*this, i);
    return;
  }
  // Each thread but this one plans with a copy of the model (copied here, before any job runs).
  std::vector<std::unique_ptr<NestModel>> models;
  for (size_t t = 1; t < threads; ++t) models.push_back(std::make_unique<NestModel>(*model_));
  std::vector<std::unique_ptr<NestSpace>> shards(count);
  std::vector<char> failed(count, 0);
  std::atomic<size_t> next{0};
  auto work = [&](const NestModel& model) {
    for (size_t i; (i = next.fetch_add(1)) < count;) {
      auto shard = std::unique_ptr<NestSpace>(new NestSpace(*this, model));
      try {
        job(*shard, i);
      } catch (...) {
        failed[i] = 1;  // run again below, in order, where it throws as it would have
      }
      shards[i] = std::move(shard);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, std::cref(*models[t - 1]));
  work(*model_);
  for (std::thread& t : pool) t.join();
  for (size_t i = 0; i < count; ++i) {
    bool again = failed[i];
    for (const Added& a : shards[i]->added_)
      if (a.result && seen_.count(a.text)) again = true;
    if (again) job(*this, i);
    else merge(*shards[i]);
    shards[i].reset();
  }
}

void NestSpace::merge(NestSpace& shard) {
  size_t nextKept = 0, nextPruned = 0;
  std::map<Group, size_t> nextRejected;
  for (Added& a : shard.added_) {
    const bool fresh = seen_.insert(a.text).second;
    if (fresh) {
      ++enumerated;
      if (a.accepts) accepted_[a.group] = true;
    }
    switch (a.entry) {
      case Entry::Kept:
        if (fresh) kept.push_back(std::move(shard.kept[nextKept]));
        ++nextKept;
        break;
      case Entry::Pruned:
        if (fresh) pruned.push_back(std::move(shard.pruned[nextPruned]));
        ++nextPruned;
        break;
      case Entry::Rejected:
        if (fresh) rejected_[a.group].push_back(std::move(shard.rejected_[a.group][nextRejected[a.group]]));
        ++nextRejected[a.group];
        break;
    }
  }
}

void NestSpace::run() {
  add(defaults_.nests[nest_], Group::Plain, /*isDefault=*/true);
  // A scan's one-pass schedules (SpaceScan.h); the other families only where its triangle is short.
  for (const NestSchedule& ns : scanVariants(k_, nest_, o_)) add(ns, Group::Plain);
  if (model_->ok() && pointwiseOffered(k_, nest_))
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
  if (hit == planned_.end()) return planNest(k_, nest_, ns, o_.limits, &model_->facts());
  NestPlanResult r = std::move(hit->second);
  planned_.erase(hit);
  return r;
}

StagingPlan NestSpace::stagingOf(const NestSchedule& ns) {
  std::string text = printNestSchedule(ns);
  auto hit = planned_.find(text);
  if (hit == planned_.end()) hit = planned_.emplace(text, planNest(k_, nest_, ns, o_.limits, &model_->facts())).first;
  const NestPlanResult& r = hit->second;
  if (r.plan) return r.plan->staging;
  if (r.staging) return *r.staging;
  return planStaging(k_, nest_, ns, &model_->facts());
}

bool NestSpace::add(const NestSchedule& ns, Group group, bool isDefault) {
  std::string text = printNestSchedule(ns);
  if ((parentSeen_ && parentSeen_->count(text)) || !seen_.insert(text).second) return false;
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
    noteAdded(std::move(text), group, false, false, group == Group::Plain ? Entry::Pruned : Entry::Rejected);
    return false;
  }
  if (group != Group::Plain) accepted_[group] = true;
  auto plan = std::make_shared<const NestPlan>(std::move(*planned.plan));
  if (group == Group::Shared && !ns.shared.empty()) {
    auto bytes = model_->stagedBytes(*plan, ns.shared);
    if (bytes && *bytes > o_.limits.maxSharedBytes) {
      pruned.push_back({where() + text, fmt::format("staging needs {} bytes of shared memory (at most {})",
                                                    *bytes, o_.limits.maxSharedBytes)});
      noteAdded(std::move(text), group, false, true, Entry::Pruned);
      return false;
    }
  }
  NestEstimate est = model_->estimate(*plan, o_.device);
  kept.push_back({text, std::move(est), isDefault, std::move(plan)});
  noteAdded(std::move(text), group, true, group != Group::Plain, Entry::Kept);
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
  // Drops the candidates that `reason` gives a reason for (std::nullopt: kept) into `pruned`, in
  // order, and keeps the others in order, in place (a second list of tens of thousands of
  // candidates cost more than the pruning). The reasons, most of the pruning's time, are found
  // on several threads, each candidate's once.
  auto filter = [&](auto reason) {
    std::vector<std::optional<std::string>> why(kept.size());
    forChunks(kept.size(), enumerationThreads(o_), [&](size_t begin, size_t end) {
      for (size_t i = begin; i < end; ++i) why[i] = reason(kept[i]);
    });
    size_t out = 0;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (why[i]) {
        pruned.push_back({where() + kept[i].text, std::move(*why[i])});
      } else {
        if (out != i) kept[out] = std::move(kept[i]);
        ++out;
      }
    }
    kept.erase(kept.begin() + (ptrdiff_t)out, kept.end());
  };
  using Reason = std::optional<std::string>;
  filter([&](const NestCandidate& c) -> Reason {
    if (c.isDefault) return std::nullopt;
    if (c.est.blocksPerMultiprocessor == 0)
      return fmt::format("cannot be resident: {} threads with ~{} registers and {} bytes of shared memory "
                         "per block exceed a multiprocessor", c.est.threads, c.est.registers, c.est.sharedBytes);
    if (c.est.threads < o_.minThreads) return fmt::format("threads per block {} < min_threads {}", c.est.threads, o_.minThreads);
    if (c.est.blocks < o_.minBlocks) return fmt::format("blocks {} < min_blocks {}", c.est.blocks, o_.minBlocks);
    return std::nullopt;
  });

  // Too few blocks to spread over the device, when other candidates have enough.
  int64_t quarter = std::max<int64_t>(1, d.multiprocessors / 4);
  bool enoughExists = std::any_of(kept.begin(), kept.end(), [&](const NestCandidate& c) { return c.est.blocks >= quarter; });
  if (enoughExists)
    filter([&](const NestCandidate& c) -> Reason {
      if (!c.isDefault && c.est.blocks < quarter)
        return fmt::format("only {} blocks for {} multiprocessors", c.est.blocks, d.multiprocessors);
      return std::nullopt;
    });

  double best = std::numeric_limits<double>::infinity();
  for (const NestCandidate& c : kept) best = std::min(best, c.est.seconds);
  bool coalescedExists = std::any_of(kept.begin(), kept.end(), [](const NestCandidate& c) {
    return std::llabs(c.est.storeStride) <= 1;
  });
  filter([&](const NestCandidate& c) -> Reason {
    if (c.isDefault) return std::nullopt;
    if (coalescedExists && std::llabs(c.est.storeStride) > 1 && c.est.seconds > 4 * best)
      return fmt::format("uncoalesced: thread.x on {} (stride {} along it for {}), predicted {} vs the best {}",
                         c.est.threadXIndex, c.est.storeStride, c.est.storeArray, micros(c.est.seconds), micros(best));
    if (c.est.seconds > 20 * best) return fmt::format("predicted {} > 20x the best {}", micros(c.est.seconds), micros(best));
    return std::nullopt;
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
