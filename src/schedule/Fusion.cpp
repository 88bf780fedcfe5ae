// The plan of nests fused into one launch (`fuse: N`, FusionGroup in schedule/Plan.h): which
// groups the schedule asks for, whether the nests' plans can share one launch, and which
// kernel-local arrays move into shared memory.
#include <fmt/format.h>

#include <algorithm>

#include "ir/Analysis.h"
#include "schedule/Plan.h"

namespace rtcg {

namespace {

// The index clause of nest `n`'s leading parallel index in its schedule (nullptr: none).
const IndexSchedule* leadingClause(const Kernel& k, const NestSchedule& s, int n) {
  return k.nests[size_t(n)].loops.empty() ? nullptr : s.find(k.nests[size_t(n)].loops[0].name);
}

// Why the plans of the group's nests cannot share one launch (empty: they can). The block of a
// fused launch must own the same values of the shared index in every nest, so its clause is the
// same everywhere and its first part is the nests' only grid part; the nests' code runs one
// after another inside one function, so nothing may leave early or need a launch of its own.
std::vector<std::string> launchConflicts(const Kernel& k, const Schedule& s, const std::vector<NestPlan>& plans,
                                         const FusionGroup& g, const ScheduleLimits& limits) {
  std::vector<std::string> why;
  const IndexSchedule* lead = leadingClause(k, s.nests[size_t(g.first)], g.first);
  if (!lead || !isGridPlacement(lead->parts[0].place)) {
    why.push_back(fmt::format("the shared index '{}' of nest {} must start with a grid part", g.index, g.first));
    return why;
  }
  int64_t shared = 0;
  for (int n = g.first; n < g.first + g.count; ++n) {
    const NestPlan& p = plans[size_t(n)];
    const NestSchedule& ns = s.nests[size_t(n)];
    const IndexSchedule* c = leadingClause(k, ns, n);
    if (p.mma) why.push_back(fmt::format("nest {} computes on tensor cores (mma:), which runs as a launch of its own", n));
    if (p.crossBlock.any())
      why.push_back(fmt::format("nest {} splits a reduction across blocks, which needs a launch of its own", n));
    if (p.dynamicShared) why.push_back(fmt::format("nest {} keeps its tiles in dynamic shared memory", n));
    if (!c || c->parts != lead->parts)
      why.push_back(fmt::format("nest {} maps its leading index differently ('{}') than nest {} maps '{}' ('{}')", n,
                                c ? printIndexSchedule(*c) : k.nests[size_t(n)].loops[0].name + ": none", g.first,
                                g.index, printIndexSchedule(*lead)));
    for (const IndexSchedule& is : ns.indices)
      for (size_t part = 0; part < is.parts.size(); ++part)
        if (isGridPlacement(is.parts[part].place) && !(&is == c && part == 0))
          why.push_back(fmt::format("nest {}: index '{}' has a grid part; only the shared index's first part may", n,
                                    is.index));
    for (int a = 0; a < 3; ++a)
      if (p.launch.block[a] != plans[size_t(g.first)].launch.block[a]) {
        why.push_back(fmt::format("nest {}'s block ({}, {}, {}) differs from nest {}'s ({}, {}, {})", n,
                                  p.launch.block[0], p.launch.block[1], p.launch.block[2], g.first,
                                  plans[size_t(g.first)].launch.block[0], plans[size_t(g.first)].launch.block[1],
                                  plans[size_t(g.first)].launch.block[2]));
        break;
      }
    if (ns.blocksPerSM != s.nests[size_t(g.first)].blocksPerSM)
      why.push_back(fmt::format("nest {}'s blocks_per_sm differs from nest {}'s", n, g.first));
    shared += p.sharedBytes;
  }
  // Each nest's shared memory is its own (declared in its part of the function), beside the locals.
  if (shared + g.sharedBytes > std::min<int64_t>(limits.maxSharedBytes, 48 * 1024))
    why.push_back(fmt::format("the fused nests need {} bytes of shared memory, more than the {} of static shared memory",
                              shared + g.sharedBytes, std::min<int64_t>(limits.maxSharedBytes, 48 * 1024)));
  return why;
}

// The kernel-local arrays that only the group's nests use, every access at the accessing nest's
// own value of its leading index alone (`rowmax[i]`): a block needs only its own rows of them.
void placeSharedLocals(const Kernel& k, FusionGroup& g) {
  std::vector<std::vector<Access>> accesses;
  for (size_t n = 0; n < k.nests.size(); ++n) accesses.push_back(collectAccesses(k, int(n)));
  for (size_t p = k.numSignatureParams(); p < k.params.size(); ++p) {
    bool fits = k.params[p].shape.size() == 1, used = false;
    for (size_t n = 0; n < k.nests.size() && fits; ++n)
      for (const Access& a : accesses[n]) {
        if (a.array != int(p)) continue;
        used = true;
        if (!g.holds(int(n)) || a.indirect) {
          fits = false;
          break;
        }
        auto f = toAffine(a.indices[0]);
        const int lead = k.nests[n].loops[0].id;
        fits = f && f->constant == 0 && f->coeffs.size() == 1 && f->coeff(lead) == 1;
        if (!fits) break;
      }
    if (!fits || !used) continue;
    g.sharedLocals.push_back(int(p));
    g.sharedBytes += g.rows * typeBytes(k.params[p].type);
  }
}

}  // namespace

std::vector<FusionGroup> planFusion(const Kernel& k, const Schedule& s, std::vector<NestPlan>& plans,
                                    const ScheduleLimits& limits, std::vector<std::string>& reasons) {
  std::vector<FusionGroup> groups;
  const int nests = int(k.nests.size());
  int askedFrom = 0, askedUntil = 0;  // the nests the last `fuse:` asked for
  for (int n = 0; n < nests; ++n) {
    const int64_t count = s.nests[size_t(n)].fuse;
    if (count == 1) continue;
    if (n < askedUntil) {
      reasons.push_back(fmt::format("nest {}: fuse: {} inside the nests that nest {} fuses; fuse them from nest {}", n,
                                    count, askedFrom, askedFrom));
      continue;
    }
    askedFrom = n, askedUntil = int(n + count);
    if (n + count > nests) {
      reasons.push_back(fmt::format("nest {}: fuse: {} asks for nests {} to {}, but kernel '{}' has {} nest{}", n, count,
                                    n, n + count - 1, k.name, nests, nests == 1 ? "" : "s"));
      continue;
    }
    FusionGroup g;
    g.first = n;
    g.count = int(count);
    std::vector<std::string> why = fusionConflicts(k, n, g.count);
    if (why.empty()) {
      g.index = k.nests[size_t(n)].loops[0].name;
      const NestPlan& head = plans[size_t(n)];
      if (const IndexPlan* ip = head.index(g.index); ip && !ip->strides.empty()) {
        g.axis = placementAxis(head.clauseOf(*ip).parts[0].place);
        g.lo = ip->hull.lo;
        g.rows = ip->strides[0];
      }
      placeSharedLocals(k, g);
      why = launchConflicts(k, s, plans, g, limits);
    }
    for (const std::string& w : why)
      reasons.push_back(fmt::format("nest {}: fuse: {}: {}", n, count, w));
    if (why.empty()) groups.push_back(std::move(g));
  }
  // Every thread of a block reaches the barriers between the nests: none leaves early.
  for (const FusionGroup& g : groups)
    for (int n = g.first; n < g.first + g.count; ++n) plans[size_t(n)].cooperative = true;
  return groups;
}

std::string printFusion(const Kernel& k, const FusionGroup& g) {
  std::vector<std::string> locals;
  for (int p : g.sharedLocals) locals.push_back(k.params[size_t(p)].name);
  return fmt::format("fused: nests {} to {} in one launch over '{}' ({} value{} per block, a barrier between nests); "
                     "locals in shared memory: {}\n",
                     g.first, g.first + g.count - 1, g.index, g.rows, g.rows == 1 ? "" : "s",
                     locals.empty() ? std::string("none")
                                    : fmt::format("{} ({} bytes per block)", fmt::join(locals, ", "), g.sharedBytes));
}

}  // namespace rtcg
