// The fused family: for every run of nests that may share one launch (fusionConflicts,
// ir/Analysis.h), candidates with `fuse: N`, the other nests at their best-predicted schedule.
// Generated over the product of the nests' spaces (Space.cpp), not per nest.
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>
#include <set>

#include "schedule/space/NestSpace.h"

namespace rtcg::space {

namespace {

// The arrays that two or more nests of the run read (those a `keep:` may hold in registers).
std::vector<std::string> sharedReads(const Kernel& k, int first, int count) {
  std::map<int, std::set<int>> readers;
  for (int n = first; n < first + count; ++n)
    for (const Access& a : collectAccesses(k, n))
      if (!a.isWrite && !a.indirect) readers[a.array].insert(n);
  std::vector<std::string> out;
  for (const auto& [array, nests] : readers)
    if (nests.size() >= 2 && !k.params[size_t(array)].isLocal()) out.push_back(k.params[size_t(array)].name);
  return out;
}

// Candidate `s` of fused run [first, first + count) (addFusedCandidates), valued, into `out`; or
// why it has no plan, into `pruned`.
void addFusedCandidate(const Kernel& k, const SpaceOptions& o, int first, int count, Schedule s,
                       const std::vector<NestModel>& models, const std::vector<const NestCandidate*>& best,
                       std::vector<Candidate>& out, std::vector<PrunedCandidate>& pruned) {
  SchedulePlan plan = planSchedule(k, s, o.limits);
  if (!plan.ok() || plan.fusions.empty()) {
    pruned.push_back({fmt::format("nest {}: {}", first, printSchedule(s)),
                      plan.ok() ? "not fused" : fmt::format("{}", fmt::join(plan.reasons, "; "))});
    return;
  }
  Candidate c;
  c.schedule = s;
  c.text = printSchedule(s);
  c.fusions = plan.fusions;
  double seconds = 0;
  std::vector<NestEstimate> parts;
  const NestEstimate* dominant = nullptr;
  for (size_t n = 0; n < k.nests.size(); ++n) {
    auto p = std::make_shared<const NestPlan>(plan.nests[n]);
    const bool fused = int(n) >= first && int(n) < first + count;
    NestEstimate e = fused ? models[n - size_t(first)].estimate(*p, o.device) : best[n]->est;
    if (fused) parts.push_back(e);
    c.plans.push_back(fused ? p : best[n]->plan);
    c.estimatedBytes += e.bytes;
    c.estimatedFlops += e.flops;
    seconds += e.seconds;
  }
  const FusionSavings saved = fusionSavings(k, plan.fusions[0], parts, o.device);
  for (const NestEstimate& e : parts)
    if (!dominant || e.seconds > dominant->seconds) dominant = &e;
  c.estimatedBytes -= saved.bytes;
  c.score = (seconds - saved.seconds) * 1e6;
  c.threadsPerBlock = dominant->threads;
  c.blocks = dominant->blocks;
  c.registerTile = dominant->registerTile;
  c.sharedBytes = dominant->sharedBytes;
  c.occupancy = dominant->occupancy;
  out.push_back(std::move(c));
}

}  // namespace

namespace {

// Whether nests `a` and `b` access an array in common (read or written).
bool shareAnArray(const Kernel& k, int a, int b) {
  std::set<int> arrays;
  for (const Access& x : collectAccesses(k, a)) arrays.insert(x.array);
  for (const Access& x : collectAccesses(k, b))
    if (arrays.count(x.array)) return true;
  return false;
}

}  // namespace

// The runs of consecutive nests that may be fused (fusionConflicts empty), longest from each start:
// [first, first + count) with count >= 2. Where such a run has neighbours that access no array in
// common (the Ozaki scheme's scale and residues of A, then of B: one block shape for both would
// read one of them across its rows), also its pieces between them, each of two or more nests.
std::vector<std::pair<int, int>> fusableRuns(const Kernel& k) {
  std::vector<std::pair<int, int>> runs;
  const int nests = int(k.nests.size());
  for (int f = 0; f + 1 < nests;) {
    int c = 1;
    while (f + c < nests && fusionConflicts(k, f, c + 1).empty()) ++c;
    if (c >= 2) runs.push_back({f, c});
    std::vector<std::pair<int, int>> pieces;
    for (int start = f, n = f + 1; n <= f + c; ++n)
      if (n == f + c || !shareAnArray(k, n - 1, n)) {
        if (n - start >= 2) pieces.push_back({start, n - start});
        start = n;
      }
    if (c >= 2 && !(pieces.size() == 1 && pieces[0] == std::pair{f, c})) runs.insert(runs.end(), pieces.begin(), pieces.end());
    f += c;
  }
  return runs;
}

// The fused candidates of run `run` (fusableRuns): a block of R rows of the shared index
// (`i: grid.x[, thread.y R]`), the nests' other index (each nest's innermost one; the others
// serial) across T threads, U values at once (`j: serial[, unroll U], thread.x T`): the row
// reductions split across the block's threads (shuffles, then shared memory) and the row walked
// coalesced. The other nests take their best-predicted schedule (`best`). Valued as the sum of
// the nests' estimates less what fusion saves (fusionSavings). Beside each, where the plan allows
// it, the same with `keep:` of the arrays several of the nests read (their rows in registers), and
// that with `stores: streaming` in the nests that store outputs.
void addFusedCandidates(const Kernel& k, const SpaceOptions& o, std::pair<int, int> run,
                        const std::vector<const NestCandidate*>& best, std::vector<Candidate>& out,
                        std::vector<PrunedCandidate>& pruned) {
  const int first = run.first, count = run.second;
  std::vector<NestModel> models;
  for (int n = first; n < first + count; ++n) models.emplace_back(k, n);
  if (!std::all_of(models.begin(), models.end(), [](const NestModel& m) { return m.ok(); })) return;
  // A nest with no index but the shared one has no threads to match the others' block with.
  for (int n = first; n < first + count; ++n)
    if (models[size_t(n - first)].domain().size() < 2) return;
  const int64_t rowsTotal = k.nests[size_t(first)].loops[0].hi->intValue - k.nests[size_t(first)].loops[0].lo->intValue;
  const std::vector<std::string> keepable = sharedReads(k, first, count);
  // 8 rows of 32 threads: short rows (256 values) a warp each.
  // Unrolled values after the thread part (`thread.x T, unroll 4`) are a thread's 4 neighbours:
  // 16-byte vector loads and stores where the row is aligned.
  for (int64_t rows : {1, 2, 4, 8})
    for (int64_t threads : {32, 64, 128, 256, 512, 1024})
      for (int64_t unroll : {1, 4, -4}) {
        if (rows * threads > std::min<int64_t>(o.limits.maxThreadsPerBlock, o.device.maxThreadsPerBlock) || rows * threads < o.minThreads ||
            (rowsTotal + rows - 1) / rows < o.minBlocks || (rows == 8 && threads != 32))
          continue;
        Schedule s;
        for (size_t n = 0; n < k.nests.size(); ++n) {
          if (int(n) < first || int(n) >= first + count) {
            s.nests.push_back(best[n]->plan->schedule);
            continue;
          }
          NestSchedule ns;
          const NestModel& m = models[n - size_t(first)];
          const std::string& lead = k.nests[n].loops[0].name;
          IndexSchedule li{lead, {{Placement::GridX, std::nullopt}}};
          if (rows > 1) li.parts.push_back({Placement::ThreadY, rows});
          ns.indices.push_back(li);
          std::vector<std::string> others;
          for (const NestIndex& ni : m.domain())
            if (ni.name != lead) others.push_back(ni.name);
          for (size_t q = 0; q < others.size(); ++q) {
            IndexSchedule is{others[q], {{Placement::Serial, std::nullopt}}};
            if (q + 1 == others.size()) {
              if (unroll > 1) is.parts.push_back({Placement::Unroll, unroll});
              is.parts.push_back({Placement::ThreadX, threads});
              if (unroll < 0) is.parts.push_back({Placement::Unroll, -unroll});
            }
            ns.indices.push_back(is);
          }
          if (int(n) == first) ns.fuse = count;
          s.nests.push_back(ns);
        }
        if (!keepable.empty()) {
          Schedule kept = s;
          kept.nests[size_t(first)].kept = keepable;
          if (planSchedule(k, kept, o.limits).ok()) {
            // With the row read once, the outputs are the other half of the traffic: streamed
            // past L2 (evict-first) in the nests that store them.
            Schedule streamed = kept;
            bool any = false;
            for (int n = first; n < first + count; ++n)
              for (const Stmt& st : k.nests[size_t(n)].body)
                if (st.kind == StmtKind::Store && !k.params[size_t(st.array)].isLocal())
                  any = streamed.nests[size_t(n)].streamingStores = true;
            if (any && planSchedule(k, streamed, o.limits).ok())
              addFusedCandidate(k, o, first, count, std::move(streamed), models, best, out, pruned);
            addFusedCandidate(k, o, first, count, std::move(kept), models, best, out, pruned);
          }
        }
        addFusedCandidate(k, o, first, count, std::move(s), models, best, out, pruned);
      }
}

}  // namespace rtcg::space
