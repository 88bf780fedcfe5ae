#include "schedule/Plan.h"

#include "ir/Walk.h"

#include <algorithm>
#include <fmt/format.h>
#include <set>

#include "ir/Analysis.h"
#include "ir/Printer.h"
#include "support/Error.h"

namespace rtcg {

const IndexPlan* NestPlan::index(std::string_view name) const {
  for (const IndexPlan& ip : parts)
    if (ip.name == name) return &ip;
  return nullptr;
}

bool NestPlan::streams(size_t statement) const {
  return std::find(streamedStores.begin(), streamedStores.end(), (int)statement) != streamedStores.end();
}

namespace {

// Whether a clause's factors are well formed (the first part without one, the others positive and
// not too large); partExtents needs them so.
bool factorsUsable(const IndexSchedule& is) {
  if (is.parts.empty()) return false;
  for (size_t p = 0; p < is.parts.size(); ++p) {
    const std::optional<int64_t>& f = is.parts[p].factor;
    if (p == 0 ? f.has_value() : (!f || *f <= 0 || *f > (int64_t(1) << 31))) return false;
  }
  return true;
}

// a *= b, saturated at kMaxSaturatedPoints: the launch's products of part extents may not be
// checked yet (three indices on one axis, a thread's points over many indices), and checkLaunch
// refuses what exceeds the limits.
// The most copies of a nest's body its unroll parts may make together (each part: 1024).
constexpr int64_t kMaxUnrolledCopies = 4096;

void mulSat(int64_t& a, int64_t b) {
  if (__builtin_mul_overflow(a, b, &a) || a > kMaxSaturatedPoints) a = kMaxSaturatedPoints;
}

IndexPlan indexPlan(const NestIndex& ni, const IndexSchedule& is, size_t clause) {
  IndexPlan ip{ni.name, ni.parallel, ni.hull, clause, partExtents(is, ni.hull.extent()), {}, false};
  ip.strides.assign(ip.extents.size(), 1);
  for (size_t q = ip.extents.size() - 1; q-- > 0;) ip.strides[q] = ip.strides[q + 1] * ip.extents[q + 1];
  ip.exact = ni.constantBounds && ip.strides[0] * ip.extents[0] == ni.hull.extent();
  ip.dataDependent = ni.dataDependent;
  ip.varying = !ni.parallel && !ni.constantBounds && !ni.dataDependent;
  return ip;
}

// Adds the grid and thread parts of one index to the launch.
void addToLaunch(const IndexPlan& ip, const IndexSchedule& is, LaunchPlan& l) {
  for (size_t p = 0; p < ip.extents.size(); ++p) {
    const Placement pl = is.parts[p].place;
    const int64_t ext = ip.extents[p];
    if (isGridPlacement(pl)) {
      mulSat(l.grid[placementAxis(pl)], ext);
      if (!ip.parallel) mulSat(l.crossBlocks, ext);
    } else if (isThreadPlacement(pl)) {
      mulSat(l.block[placementAxis(pl)], ext);
      if (!ip.parallel) mulSat(l.lanes, ext), l.reductionThreadAxes |= 1 << placementAxis(pl);
    } else if (ip.parallel) {
      mulSat(l.outputsPerThread, ext);
      if (pl == Placement::Reg) mulSat(l.regPoints, ext);
    }
    if (pl == Placement::ThreadX) {
      l.threadXIndex = ip.name;
      l.threadX = ext;
    }
  }
}

}  // namespace

NestPlan sketchNest(const Kernel& k, int nest, const NestSchedule& s, const std::vector<NestIndex>& indices) {
  NestPlan plan;
  plan.nest = nest;
  plan.schedule = s;
  for (const NestIndex& ni : indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (!is || !factorsUsable(*is) || indexPointsProblem(*is, ni.hull)) continue;
    plan.parts.push_back(indexPlan(ni, *is, (size_t)(is - s.indices.data())));
    addToLaunch(plan.parts.back(), *is, plan.launch);
  }
  LaunchPlan& l = plan.launch;
  for (int a = 0; a < 3; ++a) mulSat(l.threads, l.block[a]), mulSat(l.blocks, l.grid[a]);
  return plan;
}

namespace {

// Arrays a nest reads (by param index).
void arraysOf(const Expr& e, std::set<int>& reads) {
  if (!e) return;
  visitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Load) reads.insert(x->array);
  });
}

// Whether another statement of `body` than `store` reads the array `store` writes.
bool readByAnotherStatement(const std::vector<Stmt>& body, size_t store) {
  std::set<int> reads;
  for (size_t j = 0; j < body.size(); ++j) {
    if (j == store) continue;
    arraysOf(body[j].value, reads);
    for (const Expr& i : body[j].indices) arraysOf(i, reads);
  }
  return reads.count(body[store].array) > 0;
}

// `stores: streaming`: the statements of nest `nest` whose stores stream (NestPlan::streamedStores),
// for the SIMT and the tensor-core plans alike; none: kNothingStreams says why.
std::vector<int> streamedStatements(const Kernel& k, int nest) {
  std::vector<int> out;
  const std::vector<Stmt>& body = k.nests[size_t(nest)].body;
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i].kind == StmtKind::Store && !body[i].accumulate && k.params[body[i].array].type != ScalarType::Bool &&
        !k.params[body[i].array].isLocal() && !readByAnotherStatement(body, i))
      out.push_back(int(i));
  return out;
}
const char* const kNothingStreams =
    "'stores: streaming' streams the stores of outputs that no other statement of the nest reads, but every array "
    "this nest stores is read back in it (or is bool, which has no streaming store, or a kernel-local array, which "
    "a later nest reads: evicting it first would only cost that nest)";

// Builds the plan of one nest, collecting every reason why it does not exist. The checks run in
// the order validateSchedule has always reported them (tests and users compare the first reason).
class NestPlanner {
 public:
  // `facts`: the nest's, where the caller has them; else found here (once for the checks, the
  // cross-block and the staging plans that need them).
  NestPlanner(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& lim, const NestFacts* facts)
      : k_(k), nest_(nest), s_(s), lim_(lim), facts_(facts ? *facts : ownFacts_.emplace(k, nest)),
        where_(k.nests.size() > 1 ? fmt::format("nest {}: ", nest) : "") {}

  NestPlanResult run() {
    NestPlanResult r;
    if (!facts_.indices()) {
      reason(facts_.error());
      r.reasons = std::move(reasons_);
      return r;
    }
    groups_ = &facts_.hoistedGroups(s_);
    plan_ = sketchNest(k_, nest_, s_, indices());
    checkClauses();
    checkLaunch();
    for (const std::string& m : splitReductionReasons(k_, nest_, s_, &facts_)) reason(m);
    if (crossBlock_ && reasons_.empty()) checkScratch();
    checkSharedClauses();
    checkBufferClauses();
    plan_.groups = *groups_;
    outerRegisterTile();
    if (s_.earlyLoads) checkEarlyLoads();
    if (s_.streamingStores) streamStores();
    if (s_.longRows > 0) checkLongRows();
    checkAccumulation();
    const bool staged = !s_.shared.empty() && reasons_.empty();
    if (staged) stage();
    if (!reasons_.empty()) {
      r.reasons = std::move(reasons_);
      if (staged) r.staging = std::move(plan_.staging);
      return r;
    }
    findPositionPipeline();
    sharedMemory();
    r.plan = std::move(plan_);
    return r;
  }

 private:
  const Kernel& k_;
  int nest_;
  const NestSchedule& s_;
  const ScheduleLimits& lim_;
  std::optional<NestFacts> ownFacts_;  // (before facts_, which may refer to it)
  const NestFacts& facts_;
  std::string where_;
  std::vector<std::string> reasons_;
  const std::vector<std::vector<Expr>>* groups_ = nullptr;  // facts_.hoistedGroups(s_)
  NestPlan plan_;
  const IndexSchedule* crossBlock_ = nullptr;  // the reduction index with grid parts

  void reason(std::string msg) { reasons_.push_back(where_ + msg); }
  const std::vector<NestIndex>& indices() const { return *facts_.indices(); }

  const NestIndex* nestIndex(const std::string& name) const {
    for (const NestIndex& ni : indices())
      if (ni.name == name) return &ni;
    return nullptr;
  }

  // Each clause: a known index, scheduled once, with parts and well-formed factors.
  void checkClauses() {
    std::vector<std::string> names;
    for (const NestIndex& ni : indices()) names.push_back(ni.name);
    std::set<std::string> seen;
    const IndexSchedule* gridUse[3] = {nullptr, nullptr, nullptr};
    const IndexSchedule* threadUse[3] = {nullptr, nullptr, nullptr};
    bool crossBlockTwice = false;
    int64_t unrolled = 1;
    for (const IndexSchedule& is : s_.indices) {
      const NestIndex* ni = nestIndex(is.index);
      if (!ni) {
        reason(names.empty() ? fmt::format("'{}' is not an index of the nest (it has no indices)", is.index)
                             : fmt::format("'{}' is not an index of the nest (its indices are {})", is.index,
                                           fmt::join(names, ", ")));
        continue;
      }
      if (!seen.insert(is.index).second) {
        reason(fmt::format("index '{}' is scheduled twice", is.index));
        continue;
      }
      if (is.parts.empty()) {
        reason(fmt::format("index '{}' has no parts", is.index));
        continue;
      }
      if (!checkFactors(is)) continue;
      if (std::optional<std::string> why = indexPointsProblem(is, ni->hull)) {
        reason(*why);
        continue;
      }
      const std::vector<int64_t> ext = partExtents(is, ni->hull.extent());
      for (size_t p = 0; p < is.parts.size(); ++p) {
        const Placement pl = is.parts[p].place;
        const int axis = placementAxis(pl);
        auto useAxis = [&](const IndexSchedule*(&use)[3]) {
          if (use[axis]) reason(fmt::format("{} is used twice (by '{}' and '{}')", placementName(pl), use[axis]->index, is.index));
          use[axis] = &is;
        };
        if (isThreadPlacement(pl)) useAxis(threadUse);
        else if (isGridPlacement(pl)) {
          useAxis(gridUse);
          // A reduction split across blocks (checkScratch checks the scratch it needs).
          if (!ni->parallel) {
            if (!crossBlock_) crossBlock_ = &is;
            else if (crossBlock_ != &is && !crossBlockTwice) {
              crossBlockTwice = true;
              reason(fmt::format("reduction indices '{}' and '{}' both have grid parts: at most one reduction "
                                 "index per nest can be split across blocks", crossBlock_->index, is.index));
            }
          }
        } else if (pl == Placement::Unroll) {
          if (ext[p] > 1024)
            reason(fmt::format("unrolling {} iterations of '{}' is too much (at most 1024)", ext[p], is.index));
          mulSat(unrolled, ext[p]);
        }
      }
    }
    // Each part's limit does not bound their product: unroll parts of three indices made NVRTC
    // compile 3.8 KB of CUDA for 325 CPU-seconds (syrk, 100 x 512 x 30 copies of the body).
    if (unrolled > kMaxUnrolledCopies)
      reason(fmt::format("the unroll parts of the nest unroll {} copies of its body in all (the product of their "
                         "extents), more than NVRTC compiles in reasonable time (at most {})",
                         unrolled, kMaxUnrolledCopies));
    for (const NestIndex& ni : indices())
      if (!seen.count(ni.name))
        reason(fmt::format("{} index '{}' has no clause (e.g. '{}: serial')", ni.parallel ? "parallel" : "reduction",
                           ni.name, ni.name));
  }

  bool checkFactors(const IndexSchedule& is) {
    bool ok = true;
    for (size_t p = 0; p < is.parts.size(); ++p) {
      const SchedulePart& part = is.parts[p];
      if (p == 0 && part.factor) {
        reason(fmt::format("the first part of '{}' takes no factor: its extent is what the other parts leave", is.index));
        ok = false;
      } else if (p > 0 && !part.factor) {
        reason(fmt::format("part {} ('{}') of '{}' needs a factor", p + 1, placementName(part.place), is.index));
        ok = false;
      } else if (p > 0 && *part.factor <= 0) {
        reason(fmt::format("factor {} of part '{}' of '{}' must be positive", *part.factor, placementName(part.place),
                           is.index));
        ok = false;
      } else if (p > 0 && *part.factor > (int64_t(1) << 31)) {
        reason(fmt::format("factor {} of part '{}' of '{}' is too large", *part.factor, placementName(part.place),
                           is.index));
        ok = false;
      }
    }
    return ok;
  }

  // The launch shape against the limits of the target.
  void checkLaunch() {
    static const char* axisName[3] = {"x", "y", "z"};
    const LaunchPlan& l = plan_.launch;
    for (int a = 0; a < 3; ++a) {
      if (l.block[a] > lim_.maxBlockDim[a])
        reason(fmt::format("{} threads on thread.{} (at most {})", l.block[a], axisName[a], lim_.maxBlockDim[a]));
      if (l.grid[a] > lim_.maxGridDim[a])
        reason(fmt::format("{} blocks on grid.{} (at most {})", l.grid[a], axisName[a], lim_.maxGridDim[a]));
    }
    if (l.threads > lim_.maxThreadsPerBlock)
      reason(fmt::format("{} threads per block (at most {})", l.threads, lim_.maxThreadsPerBlock));
    // 2048 resident threads per multiprocessor on every architecture rtcg targets (sm_70..sm_90).
    if (s_.blocksPerSM > 0 && l.threads * s_.blocksPerSM > 2048)
      reason(fmt::format("blocks_per_sm {} with {} threads per block exceeds the 2048 threads of a multiprocessor",
                         s_.blocksPerSM, l.threads));
    if (l.regPoints > lim_.maxRegTile)
      reason(fmt::format("register tile of {} points per thread is too large (at most {})", l.regPoints, lim_.maxRegTile));
  }

  // A reg part on a reduction index (OuterTile, schedule/Domain.h): the outer reduction's values
  // a thread takes at once, times its register points, within the register tile's limit.
  void outerRegisterTile() {
    std::vector<std::string> why;
    plan_.outerTile = outerTile(k_, nest_, s_, plan_.groups, why);
    for (std::string& m : why) reason(std::move(m));
    const OuterTile& t = plan_.outerTile;
    if (t.any() && plan_.launch.regPoints * t.extent > lim_.maxRegTile)
      reason(fmt::format("register tile of {} points per thread times {} values of '{}' is too large (at most {})",
                         plan_.launch.regPoints, t.extent, t.index, lim_.maxRegTile));
  }

  void checkScratch() {
    plan_.crossBlock = crossBlockPlan(k_, nest_, s_, &facts_);
    const CrossBlockPlan& cb = plan_.crossBlock;
    if (cb.scratchBytes > (double)lim_.maxGlobalScratchBytes)
      reason(fmt::format("splitting '{}' across {} blocks for {} output tiles needs {:.0f} bytes of global scratch "
                         "(at most {})", cb.index, cb.blocks, cb.counters, cb.scratchBytes, lim_.maxGlobalScratchBytes));
  }

  // `shared:` names read-only arrays the nest reads, once each; `^T` only on staged arrays of
  // two or more dimensions.
  void checkSharedClauses() {
    std::set<int> reads, writes;
    for (const Stmt& s : k_.nests[nest_].body) {
      arraysOf(s.value, reads);
      for (const Expr& i : s.indices) arraysOf(i, reads);
      if (s.kind == StmtKind::Store) writes.insert(s.array);
    }
    std::set<std::string> sharedSeen, wholeArrays;
    for (const std::string& e : s_.shared)
      if (stagedAccess(e).empty()) wholeArrays.insert(e);
    for (const std::string& e : s_.shared) {
      const std::string a(stagedArrayName(e));
      int p = k_.findParam(a);
      if (!sharedSeen.insert(e).second) reason(fmt::format("array '{}' is staged twice", e));
      else if (!stagedAccess(e).empty() && wholeArrays.count(a))
        reason(fmt::format("'{}' and '{}' are both in shared:, so two tiles would serve the access {}: stage the "
                           "array whole or by its accesses", a, e, e));
      else if (p < 0) reason(fmt::format("'{}' in shared: is not a parameter of kernel '{}'", a, k_.name));
      else if (!k_.params[p].isArray()) reason(fmt::format("'{}' in shared: is not an array", a));
      else if (writes.count(p) || k_.params[p].isWritten())
        reason(fmt::format("array '{}' is written and cannot be staged in shared memory (only read-only "
                           "arrays are staged)", a));
      else if (!reads.count(p)) reason(fmt::format("array '{}' is not read in this nest", a));
    }
    for (const std::string& a : s_.transposed) {
      int p = k_.findParam(std::string(stagedArrayName(a)));
      if (std::find(s_.shared.begin(), s_.shared.end(), a) == s_.shared.end())
        reason(fmt::format("array '{}' is marked transposed but is not staged in 'shared:'", a));
      if (p >= 0 && k_.params[p].isArray() && k_.params[p].shape.size() < 2)
        reason(fmt::format("array '{}' has one dimension: its tile cannot be transposed ('{}^T')", a, a));
    }
  }

  void checkBufferClauses() {
    if (s_.buffers > 1 && s_.shared.empty())
      reason(fmt::format("'buffers: {}' multi-buffers tiles staged per reduction step, but nothing is staged "
                         "('shared:')", s_.buffers));
    if (s_.asyncCopy && s_.buffers < 2)
      reason("'copy: async' copies tiles one or more steps ahead and needs 'buffers: 2' or more");
    // cp.async moves 4, 8 or 16 bytes, and 8- and 16-bit tiles are copied element by element (copyVector).
    for (const std::string& e : s_.shared) {
      const std::string a(stagedArrayName(e));
      if (int p = k_.findParam(a); s_.asyncCopy && p >= 0 && k_.params[p].isArray() && typeBytes(k_.params[p].type) < 4)
        reason(fmt::format("'copy: async' copies 4, 8 or 16 bytes per cp.async, and the tile of '{}' is copied one "
                           "{}-byte {} element at a time: stage it through registers (no 'copy: async')",
                           a, typeBytes(k_.params[p].type), typeName(k_.params[p].type)));
    }
    if (!s_.asyncCopy && s_.buffers > 2)
      reason(fmt::format("'buffers: {}' keeps {} steps in flight, which only asynchronous copies do: add 'copy: async'",
                         s_.buffers, s_.buffers - 1));
  }

  void checkEarlyLoads() {
    if (plan_.groups.empty()) {
      reason("'loads: early' issues the statements' loads ahead of their reductions, but no reduction of this "
             "nest is computed ahead of its statements");
      return;
    }
    if (crossBlock_) {
      reason("'loads: early' does not combine with a reduction split across blocks (the statements run in the "
             "last block of each tile only)");
      return;
    }
    plan_.earlyLoads = earlyStatementLoads(k_, nest_, s_);
    if (plan_.earlyLoads.empty())
      reason("'loads: early' issues the statements' loads ahead of their reductions, but the statements read "
             "nothing outside them that can be loaded early (an array not staged, not written before, read at "
             "the element the statement writes)");
  }

  // `long_rows: N` (LongRowPlan in Plan.h): one group over one data-dependent range, run by a group
  // of lanes per point or by one thread (a serial reduction: a row a thread, the short rows' best
  // shape when most rows hold a few values), and nothing else that needs the point's lanes or the
  // block's barriers in its own way (the block path runs after the position's statements, uniformly).
  // `accumulate: shared ...` and `aggregate: warp` (AccumulationPlan): the nest's one accumulation;
  // the copies fit in shared memory (static up to kMaxPrivateCopyBytes, dynamic above, up to the
  // target's limit). Neither combines with a reduction split across blocks or `long_rows:`, whose
  // statements run in a second pass.
  void checkAccumulation() {
    const AccumulateSchedule& as = s_.accumulate;
    if (!as.shared && !s_.warpAggregation) return;
    const std::string shared = fmt::format("'accumulate: {}'", printAccumulateSchedule(as));
    const std::string what = as.shared && s_.warpAggregation ? shared + " and 'aggregate: warp'"
                             : as.shared                     ? shared
                                                             : "'aggregate: warp'";
    const std::vector<int> acc = accumulationStatements(k_, nest_);
    if (acc.size() != 1) {
      reason(fmt::format("{} applies to the nest's one accumulation (a[i] += v), and the nest has {}", what, acc.size()));
      return;
    }
    if (crossBlock_ || s_.longRows > 0) {
      reason(fmt::format("{} does not combine with a reduction split across blocks or 'long_rows:'", what));
      return;
    }
    AccumulationPlan& a = plan_.accumulation;
    a.statement = acc[0];
    a.array = k_.nests[size_t(nest_)].body[size_t(acc[0])].array;
    a.warp = s_.warpAggregation;
    if (!as.shared) return;
    std::tie(a.lo, a.extent) = accumulationRange(k_, nest_, acc[0]);
    a.shared = true;
    a.slices = as.slices;
    a.copies = as.copies;
    a.sliceExtent = (a.extent + a.slices - 1) / a.slices;
    const int64_t elementBytes = typeBytes(k_.params[size_t(a.array)].type);
    a.bytes = a.copies * a.sliceExtent * elementBytes;
    a.dynamic = a.bytes > kMaxPrivateCopyBytes;
    const std::string array = k_.params[size_t(a.array)].name;
    if (a.slices > a.extent)
      reason(fmt::format("{} cuts the {} elements of '{}' the accumulation can reach into more slices than elements",
                         shared, a.extent, array));
    const int64_t warps = (plan_.launch.threads + 31) / 32;
    if (a.copies > warps)
      reason(fmt::format("{}: warp w of a block updates copy w % {}, and a block of {} threads has {} warp{}", shared,
                         a.copies, plan_.launch.threads, warps, warps == 1 ? "" : "s"));
    if (a.slices > 1) {
      for (const IndexPlan& ip : plan_.parts)
        for (const SchedulePart& p : plan_.clauseOf(ip).parts)
          if (p.place == Placement::GridZ) {
            reason(fmt::format("{} runs the slices on grid.z, which '{}' already uses", shared, ip.name));
            return;
          }
      plan_.launch.grid[2] = a.slices;
      mulSat(plan_.launch.blocks, a.slices);
    }
    const int64_t limit = std::max(kMaxPrivateCopyBytes, lim_.maxSharedBytes);
    if (a.bytes > limit) {
      // The fewest slices whose copies would fit, where any would.
      std::string hint = "accumulate with global atomics";
      for (int64_t sl = a.slices + 1; sl <= std::min(kMaxAccumulateSlices, a.extent); ++sl)
        if (a.copies * ((a.extent + sl - 1) / sl) * elementBytes <= limit) {
          hint = fmt::format("'slices {}' would fit, or accumulate with global atomics", sl);
          break;
        }
      reason(fmt::format("{} keeps {}{} elements of '{}' the accumulation can reach in each block's shared memory: {} "
                         "bytes, more than the {} a block's shared memory holds beside the rest; {}",
                         shared, a.copies > 1 ? fmt::format("{} copies of ", a.copies) : "",
                         a.slices > 1 ? fmt::format("a slice of {} of the {}", a.sliceExtent, a.extent)
                                      : fmt::format("the {}", a.extent),
                         array, a.bytes, limit, hint));
    } else if (a.dynamic && !s_.shared.empty()) {
      reason(fmt::format("{} keeps {} bytes in dynamic shared memory, which does not combine with staged tiles "
                         "('shared:')",
                         shared, a.bytes));
    }
  }

  // The largest copy kept as a static shared array (beside the rest, under the 48 KiB static limit).
  static constexpr int64_t kMaxPrivateCopyBytes = 40 * 1024;

  void checkLongRows() {
    const std::string what = fmt::format("'long_rows: {}' hands ranges longer than {} to the whole block", s_.longRows,
                                         s_.longRows);
    if (plan_.groups.size() != 1 || plan_.groups[0][0]->loops.size() != 1 ||
        !isDataDependent(plan_.groups[0][0]->loops[0])) {
      reason(what + ", and needs exactly one reduction computed ahead of the statements, over one data-dependent "
                    "range (p in rowptr[i]..rowptr[i + 1])");
      return;
    }
    const Loop& l = plan_.groups[0][0]->loops[0];
    const IndexPlan* ip = plan_.index(l.name);
    if (!ip) return;  // checkClauses said why
    bool grid = false;
    for (const SchedulePart& p : plan_.clauseOf(*ip).parts) grid = grid || isGridPlacement(p.place);
    if (grid) reason(fmt::format("{}: it does not combine with a reduction split across blocks (grid parts of '{}')", what, l.name));
    if (plan_.launch.regPoints > 1 || plan_.outerTile.any())
      reason(what + ": it does not combine with register tiles (reg parts), whose points share the lanes' loop");
    if (!s_.shared.empty()) reason(what + ": it does not combine with staged tiles ('shared:')");
    if (s_.earlyLoads) reason(what + ": it does not combine with 'loads: early'");
    plan_.longRows = LongRowPlan{s_.longRows, 0, l.name, plan_.launch.threads / std::max<int64_t>(1, plan_.launch.lanes)};
  }

  // `stores: streaming`: the stores that stream (see NestPlan::streamedStores).
  void streamStores() {
    plan_.streamedStores = streamedStatements(k_, nest_);
    if (plan_.streamedStores.empty()) reason(kNothingStreams);
  }

  void stage() {
    plan_.staging = planStaging(k_, nest_, s_, &facts_);
    const StagingPlan& st = plan_.staging;
    for (const std::string& e : st.errors) reason(e);
    if (st.errors.empty() && s_.buffers > 1 &&
        std::none_of(st.arrays.begin(), st.arrays.end(), [](const StagedArray& sa) { return sa.level == StageLevel::Step; }))
      reason(fmt::format("'buffers: {}' multi-buffers tiles staged per reduction step, but every staged array is "
                         "staged once per block", s_.buffers));
    if (st.bytes > lim_.maxSharedBytes)
      reason(fmt::format("staging needs {} bytes of shared memory (at most {})", st.bytes, lim_.maxSharedBytes));
  }

  int64_t parallelCount() const {
    return std::count_if(indices().begin(), indices().end(), [](const NestIndex& ni) { return ni.parallel; });
  }

  bool hasStepStaging(int group) const {
    for (const StagedArray& sa : plan_.staging.arrays)
      if (sa.level == StageLevel::Step && sa.group == group) return true;
    return false;
  }

  // Positions pipelined: when a block takes the whole reduction of the group staged per step in
  // one step, that step's tiles move only with the serial parts of parallel indices, and copying
  // them with 'buffers: N' would just stall each position on its own copy. With one serial part
  // of more than one position innermost ('k: grid.x, serial 16, thread.y 8, ...'), the copies run
  // N - 1 positions ahead instead, as they run steps ahead along a reduction: a block then streams
  // its tiles while it computes, like a persistent GEMM kernel.
  void findPositionPipeline() {
    if (s_.buffers < 2 || plan_.crossBlock.any()) return;
    int group = -1;
    for (size_t g = 0; g < plan_.groups.size(); ++g)
      if (hasStepStaging((int)g)) {
        if (group >= 0) return;  // several step groups: each keeps its own steps
        group = (int)g;
      }
    if (group < 0) return;
    const Loop& l = plan_.groups[group][0]->loops.front();
    const IndexSchedule& is = plan_.clauseOf(*plan_.index(l.name));
    auto clo = constIntValue(l.lo, k_), chi = constIntValue(l.hi, k_);
    if (!clo || !chi || stepPartOf(is) != 0 || stepSpanOf(is) < *chi - *clo) return;
    // The serial and unrolled parts of parallel indices in clause order (the emitter's loops,
    // outermost first); the innermost of more than one position must be serial.
    std::vector<std::pair<const IndexPlan*, size_t>> loopParts;
    for (const IndexSchedule& c : s_.indices)
      if (const IndexPlan* ip = plan_.index(c.index); ip && ip->parallel)
        for (size_t p = 0; p < c.parts.size(); ++p)
          if (c.parts[p].place == Placement::Serial || c.parts[p].place == Placement::Unroll) loopParts.push_back({ip, p});
    size_t q = loopParts.size();
    while (q > 0 && loopParts[q - 1].first->extents[loopParts[q - 1].second] == 1) --q;
    if (q == 0) return;
    const auto [ip, part] = loopParts[q - 1];
    if (plan_.clauseOf(*ip).parts[part].place != Placement::Serial) return;
    // The tiles must move with it (else one copy per block would do: a Block-level tile).
    bool moves = false;
    for (const StagedArray& sa : plan_.staging.arrays)
      if (sa.level == StageLevel::Step && sa.group == group) moves = moves || movesWith(sa, ip->name);
    if (!moves) return;
    plan_.pipeline = PositionPipeline{group, ip->name, part, *clo};
  }

  // The bytes of one value of each accumulator type of a group (a combine buffer's per thread).
  static int64_t groupTypeBytes(const std::vector<Expr>& g) {
    std::set<ScalarType> types;
    for (const Expr& r : g) types.insert(r->type);
    int64_t bytes = 0;
    for (ScalarType t : types) bytes += typeBytes(t);
    return bytes;
  }

  // What the emitter declares in shared memory: the tiles, a combine buffer per accumulator type
  // of the groups split across threads and of the values combined across blocks (with reduction
  // thread axes), the last-block flag. Static up to 48 KiB; a 48 KiB tile plus the 1-byte flag
  // does not compile.
  void sharedMemory() {
    int64_t extra = plan_.crossBlock.any() ? 16 : 0;
    if (plan_.launch.lanes > 1) {
      std::set<ScalarType> types;
      for (const std::vector<Expr>& g : plan_.groups)
        for (const Loop& l : g[0]->loops)
          for (const SchedulePart& p : plan_.clauseOf(*plan_.index(l.name)).parts)
            if (isThreadPlacement(p.place))
              for (const Expr& r : g) types.insert(r->type);
      for (const auto& [t, v] : plan_.crossBlock.values) types.insert(t);
      for (ScalarType t : types) extra += plan_.launch.threads * typeBytes(t);
    }
    // `long_rows:`: the list's two counters and, per entry, a range and the point's parallel indices;
    // with a row a thread (no lanes, so no combine buffer above) the block's combine buffer per type.
    if (plan_.longRows.any()) {
      extra += 8 + plan_.longRows.slots * int64_t(2 + parallelCount()) * 8;
      if (plan_.launch.lanes == 1) extra += plan_.launch.threads * groupTypeBytes(plan_.groups[size_t(plan_.longRows.group)]);
    }
    // A thread part on a reduction index, even of one thread, makes the emitter combine lanes; the
    // block's pass of `long_rows:` needs every thread at its barriers.
    AccumulationPlan& acc = plan_.accumulation;
    const int64_t copyBytes = acc.shared ? (acc.bytes + 15) / 16 * 16 : 0;
    if (!acc.dynamic) extra += copyBytes;
    plan_.cooperative = !plan_.staging.arrays.empty() || plan_.launch.reductionThreadAxes != 0 || plan_.crossBlock.any() ||
                        plan_.longRows.any() || acc.any();
    plan_.staticExtraBytes = extra;
    plan_.sharedBytes = plan_.staging.bytes + extra;
    plan_.dynamicShared = plan_.sharedBytes > 48 * 1024 || acc.dynamic;
    if (acc.dynamic) plan_.sharedBytes += copyBytes;
    if (!plan_.dynamicShared) return;
    // Each tile a 16-byte aligned slice of the one dynamic array (vector copies need the alignment).
    for (const StagedArray& sa : plan_.staging.arrays) {
      plan_.tileByteOffsets.push_back(plan_.dynamicSharedBytes);
      plan_.dynamicSharedBytes += (sa.bytes + 15) / 16 * 16;
    }
    // A copy over 40 KiB after them (checkAccumulation refuses it beside tiles: it is alone).
    if (acc.dynamic) {
      acc.dynamicOffset = plan_.dynamicSharedBytes;
      plan_.dynamicSharedBytes += copyBytes;
    }
  }
};

}  // namespace

std::vector<int> accumulationStatements(const Kernel& k, int nest) {
  std::vector<int> out;
  const std::vector<Stmt>& body = k.nests[size_t(nest)].body;
  for (size_t i = 0; i < body.size(); ++i)
    if (body[i].kind == StmtKind::Store && body[i].accumulate) out.push_back(int(i));
  return out;
}

std::pair<int64_t, int64_t> accumulationRange(const Kernel& k, int nest, int statement) {
  const Stmt& st = k.nests[size_t(nest)].body[size_t(statement)];
  const std::vector<int64_t> shape = arrayShape(k, st.array);
  // The access as collectAccesses sees it (lets inlined), for its index ranges over the nest.
  for (const Access& a : collectAccesses(k, nest)) {
    if (!a.isWrite || !a.accumulate || a.array != st.array || !(a.loc == st.loc)) continue;
    int64_t lo = 0, hi = 0;  // flat offsets of the lowest and highest corner of the box
    for (size_t d = 0; d < shape.size(); ++d) {
      Interval r{0, shape[d] - 1};
      if (!containsLoad(a.indices[d]))
        if (auto v = rangeOf(a.indices[d], a.scope)) r = Interval{std::max<int64_t>(0, v->lo), std::min(shape[d] - 1, v->hi)};
      lo = lo * shape[d] + r.lo;
      hi = hi * shape[d] + r.hi;
    }
    return {lo, std::max<int64_t>(1, hi - lo + 1)};
  }
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return {0, n};
}

// The plan of an `mma:` schedule: the launch and shared memory of its MmaPlan.
NestPlanResult planMmaNest(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits) {
  NestPlanResult r;
  auto mma = planMma(k, nest, s, limits, r.reasons);
  // `stores: streaming` beside `mma:`: the epilogue's stores stream as a SIMT nest's do.
  std::vector<int> streamed = s.streamingStores ? streamedStatements(k, nest) : std::vector<int>{};
  if (s.streamingStores && streamed.empty()) r.reasons.push_back(kNothingStreams), mma.reset();
  if (!mma) {
    if (k.nests.size() > 1)
      for (std::string& m : r.reasons) m = fmt::format("nest {}: {}", nest, m);
    return r;
  }
  NestPlan plan;
  plan.nest = nest;
  plan.schedule = s;
  LaunchPlan& l = plan.launch;
  l.block[0] = mma->threads;
  // Unbatched: the N tiles along grid.x, the M tiles along grid.y. Batched: all on grid.x (grid.z
  // would hold only 65535), the N tile fastest, then the M tile, then the batch, so that the blocks
  // that run at once share one batch's operands in L2 (the Ozaki products: 16 moduli of 16 MiB
  // operands each at n = 4096, which do not fit together).
  l.grid[0] = mma->gridX();
  l.grid[1] = mma->gridY();
  l.grid[2] = 1;
  l.threads = l.block[0];
  l.blocks = l.grid[0] * l.grid[1] * l.grid[2];
  l.regPoints = l.outputsPerThread = mma->blockM * mma->blockN / l.threads;
  l.threadX = l.block[0];
  // The shared epilogue reuses the tiles' space: one dynamic shared array, viewed per type.
  plan.sharedBytes = mma->sharedBytes;
  // wgmma: always dynamic, one array from the start of the shared window (descriptors address it).
  plan.dynamicShared = mma->sharedBytes > 48 * 1024 || mma->sharedEpilogue() || mma->isWgmma();
  plan.dynamicSharedBytes = plan.dynamicShared ? mma->sharedBytes : 0;
  plan.cooperative = true;
  plan.streamedStores = std::move(streamed);
  plan.mma = std::move(mma);
  r.plan = std::move(plan);
  return r;
}

NestPlanResult planNest(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits,
                        const NestFacts* facts) {
  RTCG_ASSERT(!facts || (&facts->kernel() == &k && facts->nest() == nest), "planNest: the facts of another nest");
  if (s.mma.any()) return planMmaNest(k, nest, s, limits);
  if (s.scan.any()) return planScanNest(k, nest, s, limits);
  return NestPlanner(k, nest, s, limits, facts).run();
}

SchedulePlan planSchedule(const Kernel& k, const Schedule& s, const ScheduleLimits& limits) {
  SchedulePlan out;
  if (!k.isBound()) {
    out.reasons.push_back(fmt::format("kernel '{}' has unbound size parameters: bind them before scheduling", k.name));
    return out;
  }
  if (s.nests.size() != k.nests.size()) {
    out.reasons.push_back(fmt::format("the schedule has {} nest schedule{} but kernel '{}' has {} loop nest{} "
                                      "(separate nest schedules with '|')",
                                      s.nests.size(), s.nests.size() == 1 ? "" : "s", k.name, k.nests.size(),
                                      k.nests.size() == 1 ? "" : "s"));
    return out;
  }
  for (size_t n = 0; n < s.nests.size(); ++n) {
    NestPlanResult r = planNest(k, (int)n, s.nests[n], limits);
    if (r.plan) out.nests.push_back(std::move(*r.plan));
    for (std::string& m : r.reasons) out.reasons.push_back(std::move(m));
  }
  if (out.ok()) out.fusions = planFusion(k, s, out.nests, limits, out.reasons);
  if (!out.ok()) out.nests.clear(), out.fusions.clear();
  return out;
}

const FusionGroup* SchedulePlan::groupOf(int nest) const {
  for (const FusionGroup& g : fusions)
    if (g.holds(nest)) return &g;
  return nullptr;
}

}  // namespace rtcg

// ---------------------------------------------------------------------------------------------
// Printing

namespace rtcg {

namespace {

// The variable a part contributes to its index value: the block or thread coordinate, else the
// part's own loop or register variable (`i_2`, as the emitter names its loops).
std::string partVariable(const IndexPlan& ip, const IndexSchedule& is, size_t p) {
  const Placement pl = is.parts[p].place;
  static const char* axis[3] = {"x", "y", "z"};
  if (isGridPlacement(pl)) return fmt::format("blockIdx.{}", axis[placementAxis(pl)]);
  if (isThreadPlacement(pl)) return fmt::format("threadIdx.{}", axis[placementAxis(pl)]);
  return fmt::format("{}_{}", ip.name, p);
}

std::string indexLines(const IndexPlan& ip, const IndexSchedule& is) {
  std::vector<std::string> parts, terms;
  if (ip.hull.lo != 0) terms.push_back(fmt::format("{}", ip.hull.lo));
  int64_t points = 1;
  for (size_t p = 0; p < ip.extents.size(); ++p) {
    parts.push_back(fmt::format("{} {}", placementName(is.parts[p].place), ip.extents[p]));
    terms.push_back(ip.strides[p] == 1 ? partVariable(ip, is, p) : fmt::format("{} * {}", ip.strides[p], partVariable(ip, is, p)));
    points *= ip.extents[p];
  }
  // A data-dependent range's first part runs as many trips as its row needs, computed at run time.
  // So does a range that follows other indices (a triangle's rows; the hull is printed).
  std::string cover = ip.dataDependent ? "a range read from arrays: the first part's trips from its bounds at run time"
                      : ip.varying     ? "a range that follows other indices: the first part's trips from its bounds at run time"
                      : ip.exact       ? "exact"
                                       : fmt::format("{} points, guarded", points);
  return fmt::format("  {} {} [{}, {}]: {} ({})\n    {} = {}\n", ip.parallel ? "parallel" : "reduction", ip.name,
                     ip.hull.lo, ip.hull.hi, fmt::join(parts, ", "), cover, ip.name, fmt::join(terms, " + "));
}

// "1 block", "2 blocks".
std::string count(int64_t n, const char* noun) { return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s"); }

std::string launchLine(const LaunchPlan& l) {
  std::string s = fmt::format("  launch: grid {} x {} x {} ({}), block {} x {} x {} ({})", l.grid[0], l.grid[1],
                              l.grid[2], count(l.blocks, "block"), l.block[0], l.block[1], l.block[2],
                              count(l.threads, "thread"));
  if (l.regPoints > 1) s += fmt::format(", {} register points per thread", l.regPoints);
  if (l.outputsPerThread > l.regPoints) s += fmt::format(", {} outputs per thread", l.outputsPerThread);
  if (l.lanes > 1) s += fmt::format(", {} threads per output point", l.lanes);
  return s + "\n";
}

// A tile's box: per dimension `origin : size`, the origin from the bases of the parallel indices
// (their block's first value) and of the reduction step.
std::string boxText(const StagedArray& sa) {
  std::vector<std::string> dims;
  for (const StagedDim& d : sa.dims) {
    std::vector<std::string> terms;
    for (const auto& [key, c] : d.coeffs) {
      std::string base = key.rfind("p:", 0) == 0 ? key.substr(2) : key;
      terms.push_back(c == 1 ? base : fmt::format("{} * {}", c, base));
    }
    if (d.constant != 0 || terms.empty()) terms.push_back(fmt::format("{}", d.constant));
    dims.push_back(fmt::format("{} : {}{}", fmt::join(terms, " + "), d.size, d.whole ? " (whole)" : ""));
  }
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

// The extremes of a bound over a block: "base_i + 1, base_i + 8", or "0, 0" for a constant one.
std::string hullBoundText(const HullBound& b) {
  std::string at;
  for (const auto& [key, c] : b.coeffs)
    at += (c == 1 ? std::string() : fmt::format("{} * ", c)) + "base_" + key.substr(2) + " + ";
  return fmt::format("{}{}, {}{}", at, b.least, at, b.most);
}

std::string stagingLines(const Kernel& k, const NestPlan& plan) {
  std::string s;
  for (const StagedArray& sa : plan.staging.arrays) {
    const std::string name = stagingEntry(k, sa);
    std::string level = sa.level == StageLevel::Step ? fmt::format("per step of reduction group {}", sa.group)
                        : sa.movesWithSerial      ? "per block, per position of its serial parts"
                                                  : "once per block";
    std::vector<int64_t> pitch = storedPitches(sa);
    s += fmt::format("  shared {}{}: {}, box {}\n", name, plan.schedule.isTransposed(name) ? "^T" : "", level, boxText(sa));
    s += fmt::format("    stored dimensions {} (outermost first), padded {}, pitches {}; {} elements x {} buffer{} = {} bytes\n",
                     fmt::join(sa.order, ", "), fmt::join(sa.padded, " x "), fmt::join(pitch, ", "), sa.elements,
                     sa.buffers, sa.buffers == 1 ? "" : "s", sa.bytes);
  }
  for (const BlockHullSteps& bh : plan.staging.blockHulls)
    s += fmt::format("  steps of reduction group {} along '{}': over the block's hull of its threads' ranges, lo in [{}], "
                     "hi in [{}] over the block (base: the block's first value of each parallel index), clamped to "
                     "[{}, {}]; a step inside every thread's range runs unguarded, the others check each thread's own\n",
                     bh.group, bh.index, hullBoundText(bh.lo), hullBoundText(bh.hi), bh.hull.lo, bh.hull.hi + 1);
  if (!plan.staging.arrays.empty())
    s += fmt::format("  copies: {}, {} buffer{}\n",
                     plan.staging.ring.engine == CopyEngine::CpAsync ? "cp.async" : "through registers",
                     plan.staging.ring.stages, plan.staging.ring.stages == 1 ? "" : "s");
  return s;
}

std::string crossBlockLine(const CrossBlockPlan& cb) {
  static const char* axis[3] = {"x", "y", "z"};
  std::vector<std::string> axes;
  for (int a = 0; a < 3; ++a)
    if (cb.gridAxis[a]) axes.push_back(fmt::format("grid.{}", axis[a]));
  return fmt::format("  split across blocks: '{}' on {}, {} per tile, {} x {} ({}), {} x {} per block, {:.0f} "
                     "bytes of global scratch\n",
                     cb.index, fmt::join(axes, ", "), count(cb.blocks, "block"), count(cb.tiles, "tile"),
                     count(cb.positions, "position"), count(cb.counters, "arrival counter"), count(cb.slots, "slot"),
                     count(cb.regPoints, "register point"), cb.scratchBytes);
}

// The epilogue of an mma plan in words.
std::string mmaEpilogueLine(const MmaPlan& p) {
  if (p.sharedEpilogue())
    return fmt::format("  epilogue: accumulators to a shared {}x{} tile ({} fastest, pitch {}, {} bytes, in the operand "
                       "tiles' space), then the statement per output point in that order (coalesced), guarded\n",
                       p.blockM, p.blockN, p.epilogueAlongM() ? "M" : "N", p.epiloguePitch, p.epilogueBytes);
  std::string line = "  epilogue: the statement with the sum replaced by the accumulator, per output point, guarded\n";
  if (!p.epiloguePrefetch.empty())
    line += fmt::format("  epilogue prefetch: the producer's issuing thread prefetches the tile's {} read{} beside the "
                        "sum into L2 as it starts the tile (one bulk prefetch each, the tile's first point to its "
                        "last)\n",
                        p.epiloguePrefetch.size(), p.epiloguePrefetch.size() == 1 ? "" : "s");
  return line;
}

// `group G`: the order of the tiles a linear tile index walks (absent: N fastest, said nowhere).
std::string tileOrderLine(const MmaPlan& p) {
  if (p.groupM <= 0) return "";
  const int64_t left = p.mTiles() % p.groupM;
  return fmt::format("  tile order: groups of {} M tiles, M fastest within a group, each group's {} N tiles in turn{}\n",
                     p.groupM, p.nTiles(),
                     left ? fmt::format("; the last group holds the {} M tile{} left", left, left == 1 ? "" : "s")
                          : std::string());
}

// A wgmma plan in words (after the contraction's lines): the instruction, the tiles' canonical
// layouts and descriptor strides, the pipeline, the epilogue.
std::string wgmmaLines(const MmaPlan& p) {
  const int64_t groups = (p.ring.producer() ? p.consumerThreads : p.threads) / 128;
  std::string s = fmt::format("  {} wgmma.mma_async m64n{}k{} (sm_90a): block tile {}x{} ({}), "
                              "{} reduction step{} of {}, {} wgmma per warpgroup and step{}\n",
                              mmaArithName(p.arith), p.fragN, p.fragK, p.blockM, p.blockN,
                              p.alternatingTiles ? fmt::format("one warpgroup's; its {} consumer warpgroups take whole "
                                                               "tiles in turn", groups)
                                                 : fmt::format("{} warpgroups of 64x{}", groups, p.fragN),
                              p.steps, p.steps == 1 ? "" : "s", p.blockK, p.mmaPerStep,
                              p.lastStepFragments < p.blockK / p.fragK
                                  ? fmt::format(" (the last step {} fragment-k{} of {}: the reduction ends at {})",
                                                p.lastStepFragments, p.lastStepFragments == 1 ? "" : "s",
                                                p.blockK / p.fragK, p.c.kExtent)
                                  : std::string());
  auto layout = [&](const char* name, bool mnMajor, bool contiguousMn, int64_t lbo, int64_t sbo) {
    if (name[0] == 'A' && p.registerA())
      return std::string("A MN-major, each warp's fragment loaded into registers per fragment-k (wgmma's A from "
                         "registers: TF32 tiles in shared memory are K-major only)");
    return fmt::format("{} {} (LBO {}, SBO {} bytes){}", name, mnMajor ? "MN-major" : "K-major", lbo, sbo,
                       contiguousMn && !mnMajor ? ", copied value by value (TF32 is K-major only)" : "");
  };
  if (p.transposed && p.registerA())
    s += "  transposed: C^T = B^T A^T (the operand stored along N is A, from registers; M is the output's column "
         "index)\n";
  else if (p.transposed)
    s += "  transposed: C^T = B^T A^T (the product's first operand, kept by 'resident a', is wgmma's B)\n";
  // tf32x3: who splits which tiles how, then the products and the partial sums (`resident`: B's once,
  // said below).
  if (p.splitBuffers) {
    const char* tiles = p.registerA() ? (p.residentB ? "no tile (B is resident, A in registers)" : "B tile")
                        : p.residentB ? "A tile"
                                      : "A and B tiles";
    const int64_t smallBytes =
        ((p.registerA() ? 0 : p.a.buffer) + (p.residentB ? 0 : p.b.buffer)) * p.splitBuffers * typeBytes(p.staged);
    s += p.ring.producer() ? fmt::format("  tf32x3: the producer splits each landed stage's {}: the big parts are the values "
                                  "truncated (as the tensor cores read them), the small parts the rest rounded to "
                                  "nearest, into a buffer per stage ({} bytes after the rings)",
                                  tiles, smallBytes)
                    : fmt::format("  tf32x3: each step's {} split in place into big parts and small ones ({} bytes "
                                  "after the rings), then a barrier",
                                  tiles, smallBytes);
    s += "; per fragment-k small A x big B, big A x small B, big x big into partial sums of the step (scale-d 0 first), "
         "added to the accumulators in FP32 after its wait\n";
  }
  s += fmt::format("  shared memory: {} bytes, dynamic; {} tiles as loaded in {}: {}; {}\n", p.sharedBytes,
                   typeName(p.staged),
                   p.tiles == TileForm::Swizzle128 ? "128-byte swizzled atoms (8 rows x 128 bytes, 16-byte chunks XORed by row % 8; "
                                  "1024-byte aligned)"
                                : "core matrices (8 rows x 16 bytes, no swizzle)",
                   layout("A", p.a.mnMajor, p.a.kMajor, p.a.lbo, p.a.sbo),
                   layout("B", p.b.mnMajor, p.b.kMajor, p.b.lbo, p.b.sbo));
  auto box = [&](const char* name, const MmaPlan::TmaOperand& t) {
    std::string stacked;
    if (!t.batchRows.empty())  // its first entry is the innermost batch index's: one batch's rows
      stacked = fmt::format(" (the batches' rows stacked, {} a batch)", t.batchRows.front().second);
    if (t.array < 0) return fmt::format("{} by the producer's threads (cp.async, no box)", name);
    return fmt::format("{} {} box{} of {} x {} from a {} x {} map{}", name, t.boxes, t.boxes == 1 ? "" : "es",
                       t.boxInner, t.boxOuter, t.inner, t.outer, stacked);
  };
  if (p.aByLoads())
    s += fmt::format("  copies: {}; A by the producer's 128 threads by plain loads (a warp's 32 lanes one row's 128 "
                     "bytes of k, {} rows in flight{}; zeros outside the domain), each writing the values and their small "
                     "parts into the swizzled stage, fencing for the async proxy and arriving on the stage's mbarrier "
                     "'ready' (128 arrivals); the consumers fence each stage for the async proxy after their wait\n",
                     p.residentByThreads() ? "no TMA box" : box("B", p.b.tma), p.aRowsInFlight,
                     p.aLoadsAhead == 1   ? ", the next step's loaded as soon as this one's are stored, before its stage is free"
                     : p.aLoadsAhead > 1
                         ? fmt::format(", each step's loaded as soon as the one {0} before is stored ({0} steps in flight)",
                                       p.aLoadsAhead == 2 ? "two" : "three")
                         : "");
  else if (p.aByThreads())
    s += fmt::format("  copies: {}; A by the producer's 128 threads by cp.async (16 bytes where the rows allow, else "
                     "value by value; zeros outside the domain), each arriving on the stage's mbarrier 'full' (128 arrivals) as its copies land; the "
                     "consumers fence each stage for the async proxy after their wait\n",
                     p.residentByThreads() ? "no TMA box" : box("B", p.b.tma));
  else if (p.ring.tma())
    s += fmt::format("  TMA: thread 0 copies each stage by cp.async.bulk.tensor.2d (128-byte swizzle, zeros outside "
                     "the arrays): {}; {}; an mbarrier per stage (expect_tx {} bytes, waited for by parity)\n",
                     box("A", p.a.tma), box("B", p.b.tma),
                     (p.a.buffer + (p.residentB ? 0 : p.b.buffer)) * typeBytes(p.staged));
  if (p.ring.producer())
    s += fmt::format("  producer: a warpgroup more (threads {}-{}) {} up to {} steps ahead, as the "
                     "consumers free each stage (mbarrier 'empty', {} arrivals){}; no block-wide barrier per step{}\n",
                     p.consumerThreads, p.threads - 1, p.aByThreads() ? "copies A" : "issues the boxes", p.ring.ahead(),
                     p.releasingWarps(),
                     p.aByLoads()     ? ", and writes each stage's small parts as it stores the values, a small buffer per stage"
                     : p.splitBuffers ? ", and splits each landed stage (mbarrier 'ready'), a small buffer per stage"
                                      : "",
                     p.consumerRegisters ? fmt::format("; setmaxnreg: producer {}, consumers {} registers{}",
                                                       p.producerRegisters, p.consumerRegisters,
                                                       p.singleArrays ? " (with the odd-length rows' output arrays picked once a chunk)" : "")
                                         : "");
  if (p.persistent())
    s += fmt::format("  persistent: {} blocks loop over the {} output tiles (up to {} each), the ring's steps running on "
                     "across them: the producer fills the next tile's stages while the consumers store the last\n",
                     p.persistentBlocks, p.tileCount(), (p.tileCount() + p.persistentBlocks - 1) / p.persistentBlocks);
  s += tileOrderLine(p);
  if (p.residentB)
    s += fmt::format("  resident: B's tiles of all {} steps ({} bytes{}) stay in shared memory for the block's tiles, "
                     "which share N tile (block % {}): the producer copies them once ({}){}; the "
                     "stages carry A alone\n",
                     p.steps, p.steps * p.b.buffer * typeBytes(p.staged), p.splitBuffers ? ", and as many for their small parts" : "",
                     p.nTiles(),
                     p.residentByThreads()
                         ? "its 128 threads by cp.async, each arriving as its copies land; the consumers fence them "
                           "for the async proxy"
                         : fmt::format("expect_tx {} bytes", p.steps * p.b.buffer * typeBytes(p.staged)),
                     p.splitBuffers ? " and its splitting warps split them once" : "");
  if (p.alternatingTiles)
    s += fmt::format("  pingpong: the {0} consumer warpgroups run the block's tiles in turn (consumer c its tiles c, c + "
                     "{0}, ...), each freeing the stages it read; their main loops go in the tiles' order "
                     "(an mbarrier 'turn' each: a tile's steps start once the previous tile's are issued), so one "
                     "consumer's epilogue runs beneath the next one's wgmma\n",
                     p.consumerGroups());
  s += fmt::format("  pipeline: {} buffers filled by {}, {} step{} ahead; {}\n", p.ring.stages,
                   p.ring.tma() && !p.aByThreads() ? "TMA" : p.aByLoads() ? "plain loads" : "cp.async",
                   p.ring.ahead(),
                   p.ring.ahead() == 1 ? "" : "s",
                   p.pingPong() ? "each step's wgmma in flight while the next step is copied and issued (wait_group 1), "
                                "its A fragments in one of two register sets by the step's parity"
                   : p.wgmmaInFlight() ? "each step's wgmma in flight while the next step is copied and issued (wait_group 1)"
                   : p.registerA() || p.splitBuffers
                       ? fmt::format("each step's wgmma waited for before the next step (wait_group 0: {})",
                                     p.splitBuffers  ? "tf32x3 adds each step's partial sums"
                                     : p.ring.stages >= 3 ? "two register sets would not fit"
                                                     : "2 stages")
                       : "each step's wgmma waited for before the next step (wait_group 0)");
  return s + mmaEpilogueLine(p);
}

// An mma plan in words: the GEMM it sees, the tiles, the staging, the epilogue.
std::string mmaLines(const Kernel& k, const MmaPlan& p) {
  std::string s = fmt::format("  contraction: M {} x N {} x K {} ({} sum over '{}'), batch of {}\n", p.c.mExtent,
                              p.c.nExtent, p.c.kExtent, typeName(p.c.type), p.c.kLoop()->name, [&] {
                                int64_t b = 1;
                                for (int64_t e : p.c.batchExtent) b *= e;
                                return b;
                              }());
  s += fmt::format("  operands: {} (M, staged along {}), {} (N, staged along {})\n", printExpr(p.c.a(), &k),
                   p.c.aAlongK ? "K" : "M", printExpr(p.c.b(), &k), p.c.bAlongK ? "K" : "N");
  for (bool isA : {true, false})
    if (!plainRows(p.c, isA)) s += fmt::format("  rows: {}\n", rowsText(k, p.c, isA));
  if (p.isWgmma()) return s + wgmmaLines(p);
  MmaSchedule shape{p.arith};
  shape.shape = p.shape;
  s += fmt::format("  {} mma.sync {}{}: block tile {}x{}, {} reduction step{} of {}, {} mma per warp and step\n",
                   mmaArithName(p.arith), mmaShapeName(shape),
                   mmaMinComputeCapability(shape) >= 90 ? " (sm_90: Hopper's FP64 tensor rate)" : "", p.blockM,
                   p.blockN, p.steps, p.steps == 1 ? "" : "s", p.blockK, p.mmaPerStep);
  s += fmt::format("  shared memory: {} bytes, {} ({} tile{} per operand, pitch {} elements: conflict-free "
                   "fragment loads)\n",
                   p.sharedBytes, p.sharedBytes > 48 * 1024 || p.sharedEpilogue() ? "dynamic" : "static", p.tilesPerOperand * p.ring.stages, p.tilesPerOperand * p.ring.stages == 1 ? "" : "s", p.pitch);
  if (p.tiles != TileForm::Padded)
    s += fmt::format("  {} tiles as loaded: A {} (pitch {}), B {} (pitch {}); fragments {}{}\n",
                     typeName(p.staged), p.a.kMajor ? "K x M" : "M x K", p.a.pitch, p.b.kMajor ? "K x N" : "N x K",
                     p.b.pitch, p.arith == MmaArith::F64 ? "value by value" : "by ldmatrix",
                     p.arith == MmaArith::F64 || !(p.a.kMajor || p.b.kMajor) ? ""
                               : mmaPacked(p.arith) ? " (.trans from a K-major tile)"
                                                     : " (value by value from a K-major tile)");
  if (p.ring.stages > 1)
    s += fmt::format("  pipeline: {} buffers filled by cp.async, {} steps ahead; {}\n", p.ring.stages,
                     p.ring.ahead(),
                     mmaPacked(p.arith) || p.arith == MmaArith::F64 ? "no conversion"
                     : p.arith == MmaArith::Tf32 ? "TF32 operands as copied (the tensor cores truncate them)"
                                                 : "operands split as fragments load");
  if (p.prefetchFragments())
    s += "  fragments: two register sets; the next fragment-k's loaded while this one's mma issue, the next "
         "step's first from its stage (waited for before the step's last mma)\n";
  if (p.hoistedCopies)
    s += "  copies: hoisted; each thread's sources, destinations and row bytes computed once, a step adding its k "
         "offset; issued before the step's last mma, zero fills past the last step (no branch)\n";
  if (p.transposed)
    s += "  transposed: C^T = B^T A^T (the product's first operand, kept by 'resident a', is B)\n";
  if (p.persistent())
    s += fmt::format("  persistent: {} blocks loop over the {} output tiles (up to {} each), the ring's steps running on "
                     "across them: the next tile's first stages land while the block stores the last\n",
                     p.persistentBlocks, p.tileCount(), (p.tileCount() + p.persistentBlocks - 1) / p.persistentBlocks);
  s += tileOrderLine(p);
  if (p.keptWhole())
    s += fmt::format("  resident: B's tile of the whole reduction ({} x {}, pitch {}: {} bytes) stays in shared memory "
                     "for the block's tiles, which share N tile (block % {}): copied once by cp.async before the ring, "
                     "whose stages carry A alone\n",
                     p.blockN, p.steps * p.blockK, p.b.pitch, p.b.buffer * typeBytes(p.staged), p.nTiles());
  if (p.rowGroups > 0)
    s += fmt::format("  pingpong: each of the {} warp rows owns whole tiles of {}x{} (row r the block's tiles r, r + {}, "
                     "...), with a ring of {} stages of its own and named barrier 1 + r of its {} threads{}; the rows "
                     "run freely, one's waits and stores beneath the others' mma\n",
                     p.rowGroups, p.blockM, p.blockN, p.rowGroups, p.ring.stages, p.threads / p.rowGroups,
                     p.keptWhole() ? " (after the block's copy of the kept B, met once)" : "");
  return s + mmaEpilogueLine(p);
}

}  // namespace

std::string printPlan(const Kernel& k, const NestPlan& plan) {
  std::string s = fmt::format("nest {}: {}\n", plan.nest, printNestSchedule(plan.schedule));
  s += launchLine(plan.launch);
  const int64_t minBlocks = plan.mma ? plan.mma->minBlocks(plan.schedule.blocksPerSM) : plan.schedule.blocksPerSM;
  if (minBlocks > 0)
    s += fmt::format("  __launch_bounds__({}, {}){}\n", plan.launch.threads, minBlocks,
                     plan.schedule.blocksPerSM > 0 ? "" : " (the persistent grid's blocks per multiprocessor)");
  if (plan.mma) return s + mmaLines(k, *plan.mma);
  if (plan.scan) return s + scanLines(k, *plan.scan);
  for (const IndexPlan& ip : plan.parts) s += indexLines(ip, plan.clauseOf(ip));
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    std::vector<std::string> loops;
    for (const Loop& l : plan.groups[g][0]->loops) loops.push_back(l.name);
    s += fmt::format("  reduction group {}: {} reduction{} over {}, computed ahead of the statements\n", g,
                     plan.groups[g].size(), plan.groups[g].size() == 1 ? "" : "s", fmt::join(loops, ", "));
  }
  if (const OuterTile& t = plan.outerTile; t.any()) {
    std::vector<std::string> inner;
    for (const std::vector<Expr>& ig : t.inner) {
      std::vector<std::string> loops;
      for (const Loop& l : ig[0]->loops) loops.push_back(l.name);
      inner.push_back(fmt::format("{} over {}", ig.size(), fmt::join(loops, ", ")));
    }
    s += fmt::format("  outer register tile: {} values of '{}' per thread (part {}) in reduction group {}; inner "
                     "reductions per value and point: {}, then folded into the group's accumulators\n",
                     t.extent, t.index, t.part, t.group, inner.empty() ? "none" : fmt::format("{}", fmt::join(inner, "; ")));
  }
  s += stagingLines(k, plan);
  if (plan.pipeline.any())
    s += fmt::format("  positions pipelined: part {} (serial) of '{}', the one step of reduction group {}\n",
                     plan.pipeline.part, plan.pipeline.index, plan.pipeline.group);
  if (plan.crossBlock.any()) s += crossBlockLine(plan.crossBlock);
  if (const LongRowPlan& lr = plan.longRows; lr.any())
    s += fmt::format("  long rows: a range of '{}' longer than {} goes to the whole block ({} threads) instead of its "
                     "{}; up to {} per block and position\n",
                     lr.index, lr.threshold, plan.launch.threads, plan.launch.lanes > 1 ? "lanes" : "thread", lr.slots);
  if (plan.accumulation.dynamic)  // (alone: checkAccumulation refuses tiles beside it)
    s += fmt::format("  shared memory: {} bytes ({} besides the accumulation's copies), dynamic: the launch provides {} "
                     "bytes\n",
                     plan.sharedBytes, plan.staticExtraBytes, plan.dynamicSharedBytes);
  else if (plan.sharedBytes > 0)
    s += fmt::format("  shared memory: {} bytes ({} of tiles, {} besides), {}\n", plan.sharedBytes, plan.staging.bytes,
                     plan.staticExtraBytes,
                     plan.dynamicShared ? fmt::format("dynamic: the launch provides {} bytes", plan.staging.bytes)
                                        : std::string("static"));
  for (const Expr& e : plan.earlyLoads) s += fmt::format("  early load: {}\n", printExpr(e, &k));
  if (const AccumulationPlan& a = plan.accumulation; a.any()) {
    const std::string name = k.params[size_t(a.array)].name;
    if (a.shared && a.slices == 1 && a.copies == 1 && !a.dynamic)
      s += fmt::format("  accumulation into {}: a copy of its elements {}..{} per block in shared memory ({} bytes), "
                       "merged by one atomic per changed element at the end\n",
                       name, a.lo, a.lo + a.extent, a.bytes);
    else if (a.shared)
      s += fmt::format("  accumulation into {}: {} of {} of its elements {}..{} per block in {} shared memory ({} bytes{}), "
                       "merged by one atomic per changed element at the end{}\n",
                       name, a.copies > 1 ? fmt::format("{} copies (warp w updates copy w % {})", a.copies, a.copies) : "a copy",
                       a.slices > 1 ? fmt::format("a slice (blockIdx.z of {}, {} elements each)", a.slices, a.sliceExtent)
                                    : std::string("all"),
                       a.lo, a.lo + a.extent, a.dynamic ? "dynamic" : "static", a.bytes,
                       a.dynamic ? fmt::format(" at byte {}", a.dynamicOffset) : "",
                       a.slices > 1 ? "; each block applies the updates that fall in its slice" : "");
    if (a.warp)
      s += fmt::format("  accumulation into {}: the lanes of a warp naming one element combine first, one atomic "
                       "each\n", name);
  }
  for (int i : plan.streamedStores)
    s += fmt::format("  streaming store: {} (statement {})\n", k.params[k.nests[plan.nest].body[i].array].name, i);
  return s;
}

}  // namespace rtcg
