// The plan of nests fused into one launch (`fuse: N`, FusionGroup in schedule/Plan.h): which
// groups the schedule asks for, whether the nests' plans can share one launch, and which
// kernel-local arrays move into shared memory.
#include <fmt/format.h>

#include <algorithm>

#include "ir/Analysis.h"
#include "ir/Walk.h"
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
    if (p.scan) why.push_back(fmt::format("nest {} is a scan (scan:), which runs as a launch of its own", n));
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

// The loop of nest access `a` named `name` (nullptr: none): the access's scope holds it.
const Loop* scopeLoop(const Access& a, int id) {
  for (const Loop* l : a.scope)
    if (l->id == id) return l;
  return nullptr;
}

// The indices that `a` names, as loops of its scope.
std::vector<const Loop*> accessLoops(const Access& a) {
  std::vector<const Loop*> out;
  for (const Expr& e : a.indices)
    visitExprs(e, [&](const Expr& x) {
      if (x->kind != ExprKind::Var || x->varKind != VarKind::Index) return;
      const Loop* l = scopeLoop(a, x->varId);
      if (l && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
    });
  return out;
}

// `keep: x` of the group (KeptRow): the reads of x in the group's nests, the one other index they
// share with the same mapping, and the thread's count of values; every reason why not (empty: kept).
std::vector<std::string> planKeptRow(const Kernel& k, const Schedule& s, const FusionGroup& g, int64_t threads,
                                     const std::string& name, KeptRow& row) {
  std::vector<std::string> why;
  auto param = std::find_if(k.params.begin(), k.params.end(), [&](const Param& p) { return p.name == name; });
  if (param == k.params.end() || !param->isArray())
    return {fmt::format("'{}' is not an array of kernel '{}'", name, k.name)};
  row.array = int(param - k.params.begin());
  const IndexSchedule* lead = leadingClause(k, s.nests[size_t(g.first)], g.first);
  for (const SchedulePart& part : lead->parts)
    if (!isGridPlacement(part.place) && !isThreadPlacement(part.place))
      return {fmt::format("the shared index '{}' has a {} part: a thread must own one value of it to keep a row",
                          g.index, placementName(part.place))};
  int keyNest = -1;
  for (int n = g.first; n < g.first + g.count; ++n) {
    bool reads = false;
    for (const Access& a : collectAccesses(k, n)) {
      if (a.array != row.array) continue;
      if (a.isWrite) return {fmt::format("nest {} writes '{}': a kept row is read-only in the fused nests", n, name)};
      if (a.indirect) return {fmt::format("nest {} reads '{}' at an index read from memory", n, name)};
      const std::string key = accessKey(k, a.indices);
      if (keyNest < 0) row.access = key, keyNest = n;
      if (key != row.access)
        return {fmt::format("nest {} reads '{}[{}]', nest {} '{}[{}]': the kept values are those of one access", n,
                            name, key, keyNest, name, row.access)};
      const Loop* other = nullptr;
      for (const Loop* l : accessLoops(a)) {
        if (l->id == k.nests[size_t(n)].loops[0].id) continue;
        if (other) return {fmt::format("'{}[{}]' names two indices besides the shared one", name, key)};
        other = l;
      }
      if (!other) return {fmt::format("'{}[{}]' names no index besides the shared one '{}'", name, key, g.index)};
      auto lo = constIntValue(other->lo, k), hi = constIntValue(other->hi, k);
      if (!lo || !hi) return {fmt::format("the range of '{}' in nest {} is not constant", other->name, n)};
      const IndexSchedule* c = s.nests[size_t(n)].find(other->name);
      if (!c) return {fmt::format("nest {} has no clause for '{}'", n, other->name)};
      if (row.index.empty()) row.index = other->name, row.parts = c->parts, row.lo = *lo, row.extent = *hi - *lo;
      if (*lo != row.lo || *hi - *lo != row.extent)
        return {fmt::format("nest {} reads '{}' over {}..{}, nest {} over {}..{}", n, name, *lo, *hi, keyNest, row.lo,
                            row.lo + row.extent)};
      if (c->parts != row.parts)
        return {fmt::format("nest {} maps '{}' as '{}', nest {} as '{}': each thread must read the same values in "
                            "every nest",
                            n, row.index, printIndexSchedule(*c), row.readers.empty() ? keyNest : row.readers[0],
                            printIndexSchedule(IndexSchedule{row.index, row.parts}))};
      reads = true;
    }
    if (!reads) continue;
    row.readers.push_back(n);
    for (const std::string& e : s.nests[size_t(n)].shared)
      if (stagedArrayName(e) == name) why.push_back(fmt::format("nest {} stages '{}' in shared memory", n, name));
  }
  if (row.readers.size() < 2)
    return {fmt::format("{} of the fused nests read{} '{}': a kept row serves later nests", row.readers.size(),
                        row.readers.size() == 1 ? "s" : "", name)};
  const std::vector<int64_t> ext = partExtents(IndexSchedule{row.index, row.parts}, row.extent);
  for (size_t p = 0; p < row.parts.size(); ++p) {
    const Placement pl = row.parts[p].place;
    if (pl != Placement::Serial && pl != Placement::Unroll && !isThreadPlacement(pl))
      why.push_back(fmt::format("'{}' has a {} part: kept values are those of serial, unroll and thread parts",
                                row.index, placementName(pl)));
    else if (!isThreadPlacement(pl)) row.count *= ext[p];
  }
  const int64_t cap = keptValueCap(threads);
  if (row.count > cap)
    why.push_back(fmt::format("each thread would hold {} values of '{}' ('{}'), more than the {} a kept row may take "
                              "with {} threads per block",
                              row.count, name, printIndexSchedule(IndexSchedule{row.index, row.parts}), cap, threads));
  return why;
}

}  // namespace

int64_t keptValueCap(int64_t threadsPerBlock) {
  const int64_t registers = std::min<int64_t>(255, 65536 / std::max<int64_t>(1, threadsPerBlock));
  return std::min(kMaxKeptValues, registers / 2);
}

std::vector<FusionGroup> planFusion(const Kernel& k, const Schedule& s, std::vector<NestPlan>& plans,
                                    const ScheduleLimits& limits, std::vector<std::string>& reasons) {
  std::vector<FusionGroup> groups;
  const int nests = int(k.nests.size());
  int askedFrom = 0, askedUntil = 0;  // the nests the last `fuse:` asked for
  for (int n = 0; n < nests; ++n) {
    const int64_t count = s.nests[size_t(n)].fuse;
    if (!s.nests[size_t(n)].kept.empty() && count == 1)
      reasons.push_back(fmt::format("nest {}: keep: needs fuse: on the same nest (it keeps a row between fused nests)", n));
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
      for (const std::string& name : s.nests[size_t(n)].kept) {
        if (!why.empty()) break;
        KeptRow row;
        for (const std::string& w : planKeptRow(k, s, g, plans[size_t(n)].launch.threads, name, row)) why.push_back(fmt::format("keep: {}: {}", name, w));
        g.kept.push_back(std::move(row));
      }
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
  std::string out = fmt::format(
      "fused: nests {} to {} in one launch over '{}' ({} value{} per block, a barrier between nests); "
      "locals in shared memory: {}\n",
      g.first, g.first + g.count - 1, g.index, g.rows, g.rows == 1 ? "" : "s",
      locals.empty() ? std::string("none") : fmt::format("{} ({} bytes per block)", fmt::join(locals, ", "), g.sharedBytes));
  for (const KeptRow& r : g.kept)
    out += fmt::format("kept row: {}[{}] in registers, {} value{} of '{}' per thread ('{}'), loaded by nest {}, read "
                       "by nests {}\n",
                       k.params[size_t(r.array)].name, r.access, r.count, r.count == 1 ? "" : "s", r.index,
                       printIndexSchedule(IndexSchedule{r.index, r.parts}), r.readers[0], fmt::join(r.readers, ", "));
  return out;
}

}  // namespace rtcg
