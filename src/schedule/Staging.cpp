// Shared-memory staging (schedule/Domain.h, planStaging): which tile of each `shared:` array a
// block or a reduction step stages, its dimensions, padding and bytes.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fmt/format.h>
#include <set>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "schedule/Domain.h"

namespace rtcg {

namespace {

// One load of the staged array, with the hoisted group whose reduction body it is in (-1: none).
struct StagedLoad {
  Expr load;
  int group = -1;
};

void findLoads(const Expr& e, int array, int group, const std::map<const ExprNode*, int>& groupOf,
               std::vector<StagedLoad>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Reduce) {
    auto it = groupOf.find(e.get());
    if (it != groupOf.end()) group = it->second;
  }
  if (e->kind == ExprKind::Load && e->array == array) out.push_back({e, group});
  for (const Expr& o : e->operands) findLoads(o, array, group, groupOf, out);
  for (const Loop& l : e->loops) {
    findLoads(l.lo, array, group, groupOf, out);
    findLoads(l.hi, array, group, groupOf, out);
  }
}

// How an array read in a hoisted group of outer reductions (reductions holding reductions) is
// staged: Block where its reads do not move with the group's index, Step where they do and the
// index has steps (more than one part), None (the usual rules) otherwise or outside such a group.
enum class NestedOperand { None, Block, Step };
NestedOperand nestedOperand(const std::vector<StagedLoad>& loads, const std::vector<std::vector<Expr>>& groups,
                            const NestSchedule& s) {
  const int g = loads.front().group;
  if (g < 0 || std::any_of(loads.begin(), loads.end(), [&](const StagedLoad& l) { return l.group != g; }))
    return NestedOperand::None;
  std::set<int> outerIds;
  bool nested = false;
  for (const Expr& r : groups[g]) {
    if (r->loops.size() != 1) return NestedOperand::None;
    outerIds.insert(r->loops[0].id);
    std::vector<Expr> inner;
    topReductions(r->operands[0], inner);
    nested = nested || !inner.empty();
  }
  if (!nested) return NestedOperand::None;
  std::set<int> used;
  for (const StagedLoad& l : loads)
    for (const Expr& i : l.load->operands) varIds(i, VarKind::Index, used);
  const bool moves = std::any_of(used.begin(), used.end(), [&](int id) { return outerIds.count(id) > 0; });
  if (!moves) return NestedOperand::Block;
  const IndexSchedule* is = s.find(groups[g][0]->loops[0].name);
  return is && is->parts.size() > 1 ? NestedOperand::Step : NestedOperand::None;
}

// The distinct accesses of `loads` as `shared:` entries name them ("a[i,k]"), in order of first read.
std::vector<std::string> accessTexts(const Kernel& k, const std::vector<StagedLoad>& loads) {
  std::vector<std::string> out;
  for (const StagedLoad& l : loads) {
    std::string t = fmt::format("{}[{}]", k.params[l.load->array].name, accessKey(k, l.load));
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

// Keeps the loads of `access` (accessKey) only; false, `loads` as it was, where none reads it.
bool selectAccess(const Kernel& k, std::string_view access, std::vector<StagedLoad>& loads) {
  // (Partitioned, not erased: where none matches, the caller's message lists them all.)
  auto others = std::stable_partition(loads.begin(), loads.end(),
                                      [&](const StagedLoad& l) { return accessKey(k, l.load) == access; });
  if (others == loads.begin()) return false;
  loads.erase(others, loads.end());
  return true;
}

// The block hull of the varying range of staged loop `first` (BlockHullSteps), or nullopt with
// `error` saying why the block's threads cannot share its steps: a range read (its rows are only
// known from the data), a bound that names a reduction index or is not affine, or grid or register
// parts on the index (a block's share of split-K, or an outer register tile, is measured from the
// bounds of one thread's range). `parKey` and `spans`: the parallel loops' keys and in-block spans.
std::optional<BlockHullSteps> blockHullSteps(const Kernel& k, const Loop& first, const NestIndex& ni,
                                             const IndexSchedule& is, const std::map<int, std::string>& parKey,
                                             const std::map<std::string, int64_t>& spans, std::string& error) {
  if (ni.dataDependent) {
    error = "its range reads an array (the steps of a block are known only from the data)";
    return std::nullopt;
  }
  for (const SchedulePart& p : is.parts)
    if (isGridPlacement(p.place) || p.place == Placement::Reg) {
      error = fmt::format("'{}' has a {} part: the block's steps over the hull of its threads' ranges take serial, "
                          "unroll and thread parts only", first.name, placementName(p.place));
      return std::nullopt;
    }
  BlockHullSteps bh;
  bh.index = first.name;
  bh.hull = ni.hull;
  for (auto [bound, out] : {std::pair{&first.lo, &bh.lo}, std::pair{&first.hi, &bh.hi}}) {
    std::optional<AffineForm> form = toAffine(*bound);
    const bool parallelOnly = form && std::all_of(form->coeffs.begin(), form->coeffs.end(),
                                                  [&](const auto& term) { return parKey.count(term.first) > 0; });
    if (!parallelOnly) {
      error = fmt::format("its bound '{}' is not affine in the parallel indices alone (the block's steps are the "
                          "extremes of the bounds over the block's parallel indices)", printExpr(*bound, &k));
      return std::nullopt;
    }
    out->least = out->most = form->constant;
    for (const auto& [id, c] : form->coeffs) {
      const std::string& key = parKey.at(id);
      out->coeffs[key] = c;
      const int64_t reach = c * (spans.at(key) - 1);
      out->least += std::min<int64_t>(0, reach);
      out->most += std::max<int64_t>(0, reach);
    }
  }
  return bh;
}

// What planStaging knows of the nest under the schedule: the hoisted groups and, per index, how
// far its values reach within a block.
struct StagingContext {
  const Kernel& k;
  int nest;
  const NestSchedule& s;
  std::vector<std::vector<Expr>> groups{};    // hoistedReductionGroups
  std::map<const ExprNode*, int> groupOf{};   // a hoisted reduction -> its group
  std::map<int, std::string> parKey{};        // parallel loop id -> "p:<name>"
  std::map<std::string, int64_t> spans{};     // uniform-based key -> in-block span
  std::map<std::string, bool> serialKey{};    // "p:<name>" -> has a serial/unroll part
  std::map<int, IndexRange> hull{};           // reduction loop id -> hull of its values
  std::map<std::string, const NestIndex*> reductionByName{};
  std::set<int> threadXLoops{};               // loop ids of the index with a thread.x part
  std::set<int> dataDependentIds{};           // loop ids of data-dependent ranges
};

// The context of nest `nest` under `s`; false where an index has no clause or a factor is not
// positive (validation reports those).
bool makeStagingContext(StagingContext& c, const std::vector<NestIndex>& indices,
                        const std::vector<std::vector<Expr>>& groups) {
  const int nest = c.nest;
  const NestSchedule& s = c.s;
  c.groups = groups;
  for (size_t g = 0; g < c.groups.size(); ++g)
    for (const Expr& r : c.groups[g]) c.groupOf[r.get()] = (int)g;
  for (const NestIndex& ni : indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (!is || is->parts.empty()) return false;
    for (const SchedulePart& p : is->parts)
      if (p.place == Placement::ThreadX)
        for (const Loop* l : ni.loops) c.threadXLoops.insert(l->id);
    for (const SchedulePart& p : is->parts)
      if (p.factor && *p.factor <= 0) return false;
    if (!ni.parallel) {
      for (const Loop* l : ni.loops) c.hull[l->id] = ni.hull;
      c.reductionByName[ni.name] = &ni;
      continue;
    }
    std::vector<int64_t> ext = partExtents(*is, ni.hull.extent());
    int64_t stride = 1, span = 1;
    bool serial = false;
    for (size_t p = ext.size(); p-- > 0;) {
      if (isInBlockPlacement(is->parts[p].place)) span += (ext[p] - 1) * stride;
      if (is->parts[p].place == Placement::Serial || is->parts[p].place == Placement::Unroll) serial = true;
      stride *= ext[p];
    }
    std::string key = "p:" + ni.name;
    c.parKey[ni.loops.front()->id] = key;
    c.spans[key] = span;
    c.serialKey[key] = serial;
  }
  for (const DataRange& r : dataRanges(c.k, nest)) c.dataDependentIds.insert(r.loop->id);
  return true;
}

// One dimension of the box of one load, or false with `error` saying why there is none.
bool dimOf(const StagingContext& c, const Expr& ld, size_t d, int64_t extent, const std::set<int>& stepIds,
           int64_t stepSpan, StagedDim& dim, std::string& error) {
  auto form = toAffine(ld->operands[d]);
  if (!form) {
    error = fmt::format("its index '{}' is not affine in the loop indices", accessText(c.k, ld->array, ld->operands));
    return false;
  }
  dim.extent = extent;
  dim.constant = form->constant;
  for (const auto& [id, coeff] : form->coeffs) {
    std::string key;
    int64_t span = 1;
    if (stepIds.count(id)) {
      key = "step", span = stepSpan;
    } else if (c.parKey.count(id)) {
      key = c.parKey.at(id), span = c.spans.at(key);
    } else if (c.hull.count(id)) {
      // Ranges over its hull: folded into the constant and the size.
      IndexRange h = c.hull.at(id);
      if (h.empty()) continue;
      dim.constant += coeff * h.lo + std::min<int64_t>(0, coeff * (h.extent() - 1));
      dim.size += std::abs(coeff) * (h.extent() - 1);
      continue;
    } else {
      error = "its index uses a loop the schedule does not know";
      return false;
    }
    dim.coeffs[key] = coeff;
    dim.constant += std::min<int64_t>(0, coeff * (span - 1));
    dim.size += std::abs(coeff) * (span - 1);
  }
  return true;
}

// The box of a set of loads; `stepIds` are the loop ids of the staged step (Step level).
bool boxOf(const StagingContext& c, const std::vector<StagedLoad>& loads, const std::set<int>& stepIds,
           int64_t stepSpan, std::vector<StagedDim>& dims, std::string& error) {
  std::vector<int64_t> shape = arrayShape(c.k, loads.front().load->array);
  dims.assign(shape.size(), {});
  std::vector<int64_t> hi(shape.size());
  for (size_t li = 0; li < loads.size(); ++li) {
    for (size_t d = 0; d < shape.size(); ++d) {
      StagedDim dim;
      if (!dimOf(c, loads[li].load, d, shape[d], stepIds, stepSpan, dim, error)) return false;
      if (li == 0) {
        dims[d] = dim;
        hi[d] = dim.constant + dim.size;
      } else if (dims[d].coeffs != dim.coeffs) {
        error = fmt::format("its accesses move differently with the loop indices, so they do not share one tile "
                            "(stage each access as its own tile: 'shared: {}')",
                            fmt::join(accessTexts(c.k, loads), ", "));
        return false;
      } else {
        dims[d].constant = std::min(dims[d].constant, dim.constant);
        hi[d] = std::max(hi[d], dim.constant + dim.size);
      }
    }
  }
  for (size_t d = 0; d < dims.size(); ++d) {
    dims[d].size = hi[d] - dims[d].constant;
    if (dims[d].size >= dims[d].extent) {
      dims[d].clipped = dims[d].size > dims[d].extent;
      dims[d].whole = true;
      dims[d].coeffs.clear();
      dims[d].constant = 0;
      dims[d].size = dims[d].extent;
    }
  }
  return true;
}

// Why the reads `loads` of `shared:` entry `name` (array `a`) cannot be staged at all (nullopt:
// they can); an entry naming one access keeps only that access's loads.
std::optional<std::string> readsProblem(const StagingContext& c, const std::string& name, int a,
                                        std::vector<StagedLoad>& loads) {
  // (The reads' texts are formatted for the message only: the space stages tens of thousands.)
  if (!stagedAccess(name).empty() && !selectAccess(c.k, stagedAccess(name), loads))
    return fmt::format("no read of the nest has these indices (its reads of '{}': {})", c.k.params[a].name,
                       fmt::join(accessTexts(c.k, loads), ", "));
  bool indirect = false;
  for (const StagedLoad& l : loads)
    for (const Expr& i : l.load->operands) indirect = indirect || containsLoad(i);
  if (indirect) return "it is accessed indirectly (through an index array); only affine accesses are staged";
  // A tile covers a box of the index hulls; a row of a data-dependent range lies anywhere in
  // its hull (a CSR row in [0, nnz)), so no box smaller than the array fits it.
  std::string dataIndex;
  for (const StagedLoad& l : loads)
    for (const Expr& i : l.load->operands)
      visitExprs(i, [&](const Expr& x) {
        if (x->kind != ExprKind::Var || x->varKind != VarKind::Index || !c.dataDependentIds.count(x->varId)) return;
        if (dataIndex.empty()) dataIndex = x->name;
      });
  if (!dataIndex.empty())
    return fmt::format("its index '{}' has a range that reads an array; only arrays read at affine ranges are staged",
                       dataIndex);
  return std::nullopt;
}

// Why the steps along reduction index `first` cannot be staged, from its clause `is` (nullopt:
// they can): the step part is the first non-grid part, and neither on the grid nor on threads.
std::optional<std::string> stepPartProblem(const Loop& first, const IndexSchedule& is) {
  const size_t stepPart = stepPartOf(is);
  if (stepPart == is.parts.size())
    return fmt::format("every part of '{}' is on the grid, so a block has no steps to stage: give '{}' a serial "
                       "or unroll part after its grid parts", first.name, first.name);
  if (std::any_of(is.parts.begin() + stepPart, is.parts.end(), [](const SchedulePart& p) { return isGridPlacement(p.place); }))
    return fmt::format("'{}' has a grid part after its first non-grid part, so a step along it would span the "
                       "values of several blocks; stage per step only with the grid parts of '{}' first (each "
                       "block then steps through its share)", first.name, first.name);
  if (isThreadPlacement(is.parts[stepPart].place))
    return fmt::format("the steps along '{}' would be its {} part, which is on {}: give '{}' a serial or "
                       "unroll {} part", first.name, stepPart == 0 ? "first" : "first non-grid",
                       placementName(is.parts[stepPart].place), first.name, stepPart == 0 ? "first" : "first non-grid");
  return std::nullopt;
}

// Stages `sa` per step of the one hoisted group its reads are in: its group, its step box, and
// the block hull of the group's steps where the reduction's bounds vary; the reason where it
// cannot be staged so.
std::optional<std::string> planStepLevel(const StagingContext& c, const std::vector<StagedLoad>& loads,
                                         StagedArray& sa, StagingPlan& plan) {
  std::set<int> gs;
  for (const StagedLoad& l : loads)
    if (l.group >= 0) gs.insert(l.group);
  if (gs.size() != 1)
    return gs.empty() ? "its reads depend on reduction indices but are not in a reduction computed ahead "
                        "of the statements, and the whole array is not read by every block"
                      : "it is read by reductions over different loops; only one can stage it per step";
  int g = *gs.begin();
  const Loop& first = c.groups[g][0]->loops.front();
  const NestIndex* ni = c.reductionByName.at(first.name);
  const IndexSchedule* is = c.s.find(first.name);
  std::string error;
  if (!ni->constantBounds) {
    std::optional<BlockHullSteps> bh = blockHullSteps(c.k, first, *ni, *is, c.parKey, c.spans, error);
    if (!bh)
      return fmt::format("the reduction index '{}' it would be staged along has bounds that vary with other "
                         "indices, and {}", first.name, error);
    bh->group = g;
    if (std::none_of(plan.blockHulls.begin(), plan.blockHulls.end(), [&](const BlockHullSteps& b) { return b.group == g; }))
      plan.blockHulls.push_back(std::move(*bh));
  }
  std::set<int> stepIds;
  for (const Expr& r : c.groups[g]) stepIds.insert(r->loops.front().id);
  if (std::optional<std::string> why = stepPartProblem(first, *is)) return why;
  const int64_t inner = stepSpanOf(*is);
  std::vector<StagedLoad> inGroup;
  for (const StagedLoad& l : loads)
    if (l.group == g) inGroup.push_back(l);
  if (!boxOf(c, inGroup, stepIds, inner, sa.dims, error)) return error;
  sa.level = StageLevel::Step;
  sa.group = g;
  return std::nullopt;
}

// The stored layout of `sa`: its dimensions' order (reversed where transposed) and the padding of
// its rows against bank conflicts.
void layOut(const StagingContext& c, const std::string& name, const std::vector<StagedLoad>& loads, StagedArray& sa) {
  for (const StagedDim& d : sa.dims) sa.padded.push_back(d.size);
  for (size_t d = 0; d < sa.dims.size(); ++d) sa.order.push_back(d);
  if (c.s.isTransposed(name)) std::reverse(sa.order.begin(), sa.order.end());
  if (sa.padded.size() < 2) return;
  // The innermost stored dimension is the tile's row. Does a warp read down a column of the
  // tile (neighbouring thread.x threads at different positions of another dimension)? Does a
  // thread walk its row along a reduction?
  const size_t rowDim = sa.order.back();
  bool columnReads = false, alongReduction = false;
  for (const StagedLoad& l : loads) {
    for (size_t d = 0; d < l.load->operands.size(); ++d) {
      std::set<int> ids;
      varIds(l.load->operands[d], VarKind::Index, ids);
      for (int id : ids) {
        if (d != rowDim) columnReads = columnReads || c.threadXLoops.count(id) > 0;
        else alongReduction = alongReduction || c.hull.count(id) > 0;
      }
    }
  }
  int64_t& row = sa.padded[rowDim];
  auto alignRow = [&row] { row = (row + 3) / 4 * 4; };  // 4 elements: 16 bytes of f32
  if (columnReads && alongReduction && row >= 4) {
    // Each thread walks its own row along a reduction (a matrix row per output node): rows
    // 16-byte aligned for vector reads, and a pitch of an odd number of 16-byte groups, so
    // that the 8 threads of a vector read's phase hit 8 different groups of 4 banks.
    alignRow();
    if ((row / 4) % 2 == 0) row += 4;
  } else if (columnReads) {
    // An odd pitch: the threads of a warp reading down a column hit 32 different banks.
    if (row % 2 == 0) row += 1;
  } else {
    // Rows stay 16-byte aligned, so that a thread's neighbouring reads along a row merge into
    // vector loads; rows of a multiple of 32 elements are staggered by 4 (the rows of
    // neighbouring threads then start in different banks, and so do the elements that the
    // copy of a transposed tile stores from one warp).
    if (row >= 4) alignRow();
    if (row % 32 == 0) row += 4;
  }
}

// The staged tile of `shared:` entry `name` (array `a`) into `plan`, or its error.
void stageArray(const StagingContext& c, const std::string& name, int a, StagingPlan& plan) {
  auto fail = [&](const std::string& why) {
    plan.errors.push_back(fmt::format("{} '{}' cannot be staged in shared memory: {}",
                                      stagedAccess(name).empty() ? "array" : "access", name, why));
  };
  std::vector<StagedLoad> loads;
  for (const Stmt& st : c.k.nests[c.nest].body) {
    for (const Expr& i : st.indices) findLoads(i, a, -1, c.groupOf, loads);
    findLoads(st.value, a, -1, c.groupOf, loads);
  }
  if (loads.empty()) return;  // validation reports this
  if (std::optional<std::string> why = readsProblem(c, name, a, loads)) return fail(*why);
  StagedArray sa;
  sa.array = a;
  sa.access = std::string(stagedAccess(name));
  std::string error;
  // Block level: every read, reduction indices over their hulls.
  if (!boxOf(c, loads, {}, 1, sa.dims, error)) return fail(error);
  bool whole = std::all_of(sa.dims.begin(), sa.dims.end(), [](const StagedDim& d) { return d.whole; });
  bool onReduction = false;
  for (const StagedLoad& l : loads)
    for (const Expr& i : l.load->operands) {
      std::set<int> ids;
      varIds(i, VarKind::Index, ids);
      for (int id : ids) onReduction = onReduction || c.hull.count(id) > 0;
    }
  // The operands of an outer reduction (a group whose reductions hold reductions, as OuterTile
  // tiles): one that moves with the outer index (r[j, e]) is staged per step of it where it has
  // steps (even when the whole array would fit: it is read once per block either way, and the
  // steps keep the tile small); one that does not (q[i, e]) once per block, for every step.
  const NestedOperand nested = nestedOperand(loads, c.groups, c.s);
  if (nested == NestedOperand::Block || (nested == NestedOperand::None && (whole || !onReduction))) {
    sa.level = StageLevel::Block;
  } else if (std::optional<std::string> why = planStepLevel(c, loads, sa, plan)) {
    // Step level: the reads in one hoisted group whose first loop moves the tile.
    return fail(*why);
  }
  for (const StagedDim& d : sa.dims)
    for (const auto& [key, coeff] : d.coeffs) sa.movesWithSerial = sa.movesWithSerial || (key != "step" && c.serialKey.at(key));
  layOut(c, name, loads, sa);
  for (int64_t e : sa.padded) sa.elements *= e;
  if (sa.level == StageLevel::Step) sa.buffers = plan.ring.stages;
  sa.bytes = sa.elements * sa.buffers * typeBytes(c.k.params[a].type);
  plan.bytes += (sa.bytes + 15) / 16 * 16;
  plan.arrays.push_back(std::move(sa));
}

std::atomic<int64_t> stagingPlans{0};

}  // namespace

bool movesWith(const StagedArray& sa, const std::string& index) {
  return std::any_of(sa.dims.begin(), sa.dims.end(), [&](const StagedDim& d) { return d.coeffs.count("p:" + index) > 0; });
}

std::vector<int64_t> storedPitches(const StagedArray& sa) {
  std::vector<int64_t> pitch(sa.order.size());
  int64_t stride = 1;
  for (size_t q = sa.order.size(); q-- > 0;) {
    pitch[sa.order[q]] = stride;
    stride *= sa.padded[sa.order[q]];
  }
  return pitch;
}

std::string accessKey(const Kernel& k, const std::vector<Expr>& indices) {
  std::string text;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d > 0) text += ',';
    for (char c : printExpr(indices[d], &k))
      if (!std::isspace((unsigned char)c)) text += c;
  }
  return text;
}

std::string stagingEntry(const Kernel& k, const StagedArray& sa) {
  const std::string& name = k.params[sa.array].name;
  return sa.access.empty() ? name : fmt::format("{}[{}]", name, sa.access);
}

int64_t planStagingCount() { return stagingPlans.load(std::memory_order_relaxed); }

StagingPlan planStaging(const Kernel& k, int nest, const NestSchedule& s, const NestFacts* known) {
  StagingPlan plan;
  plan.ring.stages = s.buffers;
  plan.ring.engine = s.asyncCopy ? CopyEngine::CpAsync : CopyEngine::Registers;
  if (s.shared.empty()) return plan;
  stagingPlans.fetch_add(1, std::memory_order_relaxed);
  std::optional<NestFacts> own;
  const NestFacts& facts = known ? *known : own.emplace(k, nest);
  if (!facts.indices()) return plan;  // validation reports this
  StagingContext c{k, nest, s};
  if (!makeStagingContext(c, *facts.indices(), facts.hoistedGroups(s))) return plan;  // validation reports this
  for (const std::string& name : s.shared) {
    int a = k.findParam(std::string(stagedArrayName(name)));
    if (a < 0 || !k.params[a].isArray()) continue;  // validation reports this
    stageArray(c, name, a, plan);
  }
  return plan;
}

}  // namespace rtcg
