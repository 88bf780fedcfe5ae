#include "schedule/SpaceModel.h"
#include "schedule/SpaceScan.h"

#include "ir/Counts.h"
#include "ir/IntOps.h"
#include "ir/Walk.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <fmt/format.h>

namespace rtcg {

namespace {

// `stores: streaming` (NestPlan::streamedStores): no credit, and no charge. The streaming store
// moves the same bytes with one instruction per store, as a plain one; what it saves is L2 room
// for the inputs other blocks read again, and the traffic model already counts those repeated
// reads as L2 hits ((U - F) / 4). Nothing measured yet says by how much the hits would otherwise
// fall, so the factor is 1: streaming siblings tie with their cached ones (ranked after them,
// generated first), and sampling measures a few of the family (the clause row's family).
constexpr double kStreamingStoreMemory = 1.0;
double streamingStoreFactor(const NestPlan& plan) { return plan.streamedStores.empty() ? 1.0 : kStreamingStoreMemory; }

// Accumulations (AccumulationPlan, schedule/Plan.h), per update of the nest's points: the atomics
// they issue and how those meet. An update whose element is read from an index map counts as
// uniform over the E elements it can reach, so a warp's 32 lanes name E (1 - (1 - 1/E)^32) distinct
// ones; an affine one names 32 where it moves with the thread.x index, else one. Device atomics
// run at kGlobalAtomicsPerByte of the bandwidth in elements (L2's atomic units) and at most
// kAtomicsPerElement per second on one element (updates of one element serialize in its L2 slice):
// a histogram of 256 bins is bound by the second, one of 65536 by the first. `aggregate: warp`
// issues one atomic per distinct element of a warp, for about 60 instructions per warp and update
// (the match, five rounds of shuffles and votes); `accumulate: shared` turns the updates into
// shared-memory atomics (one per lane and clock of a multiprocessor, lanes naming one element
// serialized) plus the block's merge: E device atomics and two passes over its copy. The warps of
// a block that update one copy also collide with each other: with W warps on a copy of E elements,
// each warp's atomics wait about 1 + (W - 1) * distinct / E times as long (a guess the H200's
// 256-bin histogram bears out in kind: Nsight Compute found its 16 warps a block waiting on the
// shared atomics, 47 cycles per instruction); `copies R` divides W by R and multiplies the passes
// over the copies by R. `slices S` reads the input S times (the launch's S times the blocks: the
// traffic model counts it) and merges E / S elements a block.
constexpr double kGlobalAtomicsPerByte = 1.0 / 16;
constexpr double kAtomicsPerElement = 1.5e9;
constexpr double kClock = 1.7e9;

double accumulationSeconds(const Kernel& k, const NestPlan& plan, const NestEstimate& e, const DeviceModel& d) {
  double total = 0;
  const std::optional<double> points = domainPoints(k, plan.nest);
  if (!points) return 0;
  const std::vector<Access> accesses = collectAccesses(k, plan.nest);
  int loopX = -1;
  for (const Loop& l : k.nests[size_t(plan.nest)].loops)
    if (l.name == e.threadXIndex) loopX = l.id;
  for (int st : accumulationStatements(k, plan.nest)) {
    const auto [lo, extent] = accumulationRange(k, plan.nest, st);
    const double elements = double(std::max<int64_t>(1, extent));
    double distinct = 1;  // per warp
    for (const Access& a : accesses)
      if (a.accumulate && a.array == k.nests[size_t(plan.nest)].body[size_t(st)].array) {
        if (a.indirect) distinct = elements * (1 - std::pow(1 - 1 / elements, 32.0));
        else if (auto f = flatOffset(k, a.array, a.indices); f && loopX >= 0 && f->coeff(loopX) != 0) distinct = 32;
        break;
      }
    distinct = std::clamp(distinct, 1.0, 32.0);
    const AccumulationPlan& ap = plan.accumulation;
    const bool planned = ap.statement == st;
    const double issueRate = double(d.multiprocessors) * 4 * kClock;  // warp instructions per second
    const bool warp = planned && ap.warp, shared = planned && ap.shared;
    const double atomics = warp ? *points * distinct / 32 : *points;
    // (Sliced, every block of the S runs the exchange on each of its points.)
    if (warp) total += *points * double(shared ? ap.slices : 1) / 32 * 60 / issueRate;
    if (shared) {
      const double conflicts = warp ? 1 : 32 / distinct;  // lanes a shared atomic serializes
      const double slice = double(std::max<int64_t>(1, ap.sliceExtent));
      const double warpsPerCopy = std::max(1.0, double(e.threads) / 32 / double(ap.copies));
      const double contention = 1 + (warpsPerCopy - 1) * std::min(1.0, distinct / slice);
      total += atomics / 32 * conflicts * contention / issueRate;
      const double merged = double(e.blocks) * slice;
      // The merge's device atomics, and the two passes over the copies (about 10 instructions per
      // element a pass, 32 elements a warp instruction).
      total += merged / (d.memoryBandwidth * kGlobalAtomicsPerByte) + merged * double(ap.copies) * 2 * 10 / 32 / issueRate;
    } else {
      total += std::max(atomics / (d.memoryBandwidth * kGlobalAtomicsPerByte), atomics / (elements * kAtomicsPerElement));
    }
  }
  return total;
}

// The sustained arithmetic rate of the nest's mix of operations: peakFlops for fp32 work, and fp64
// operations at the device's FP64 share of it (an H100: half; an L40S: 1/64), so that an f64
// nest's compute time is its own. Without fp64 operations, peakFlops exactly.
double sustainedPeak(const DeviceModel& d, const NestEstimate& e) {
  if (e.fp64Flops <= 0 || d.peakFp32Flops <= 0) return d.peakFlops;
  const double fp64 = d.peakFlops * d.peakFp64Flops / d.peakFp32Flops;
  return arithmeticPeak(d.peakFlops, fp64, FloatOpsByPrecision{e.flops - e.fp64Flops, e.fp64Flops});
}

}  // namespace

namespace {

// Loop ids an affine form uses; nullopt when the index expressions are not affine.
std::optional<std::set<int>> usedLoops(const Kernel& k, const Access& a) {
  auto off = flatOffset(k, a.array, a.indices);
  if (!off) return std::nullopt;
  std::set<int> ids;
  for (const auto& [id, c] : off->coeffs) ids.insert(id);
  return ids;
}

}  // namespace

NestModel::NestModel(const Kernel& k, int nest) : k_(&k), nest_(nest), facts_(k, nest) {
  if (!facts_.indices()) {
    error_ = facts_.error();
    return;
  }
  indices_ = *facts_.indices();
  domain_ = indices_;
  ok_ = true;
  meanDataRows();
  meanVaryingRows();
  // A read repeated in one scope (x * x, |x| on both sides of a select) is one load: the compiler
  // loads the element once. Reads of separate reductions are kept apart (their loops differ).
  for (Access& a : collectAccesses(k, nest)) {
    auto same = [&](const Access& u) {
      if (u.isWrite || a.isWrite || u.array != a.array || u.scope != a.scope || u.indices.size() != a.indices.size()) return false;
      for (size_t i = 0; i < a.indices.size(); ++i)
        if (!sameExpr(u.indices[i], a.indices[i])) return false;
      return true;
    };
    if (std::none_of(accesses_.begin(), accesses_.end(), same)) accesses_.push_back(std::move(a));
  }
  for (const Access& a : accesses_) {
    usedLoops_.push_back(usedLoops(k, a));
    flatForms_.push_back(flatOffset(k, a.array, a.indices));
    indexForms_.emplace_back();
    for (const Expr& i : a.indices) indexForms_.back().push_back(toAffine(i));
    // The loop along each end dimension (coefficient 1, alone), for vectorWidth.
    auto soleLoop = [](const Expr& e) {
      auto form = toAffine(e);
      return form && form->coeffs.size() == 1 && form->coeffs.begin()->second == 1 ? form->coeffs.begin()->first : -1;
    };
    rowLoops_.push_back(a.indices.empty() ? std::pair{-1, -1}
                                          : std::pair{soleLoop(a.indices.back()), soleLoop(a.indices.front())});
  }
  for (const NestIndex& ni : indices_)
    if (ni.parallel) points_ *= (double)std::max<int64_t>(1, ni.hull.extent());
  // A triangular output domain has about half its hull's points.
  for (const NestIndex& ni : domain_) parallelVarying_ = parallelVarying_ || (ni.parallel && !ni.constantBounds);
  if (parallelVarying_)
    if (std::optional<double> p = domainPoints(k, nest)) points_ = std::max(1.0, *p);

  std::set<int> written;
  for (const Access& a : accesses_)
    if (a.isWrite) written.insert(a.array);
  listStagingEntries(written);

  // Arithmetic per parallel point: every operator once, reduction bodies once per iteration; those
  // on f64 values (its operands', or a reduction's combine) also count as fp64.
  std::function<double(const Expr&, double&)> ops = [&](const Expr& e, double& fp64) -> double {
    if (!e) return 0;
    switch (e->kind) {
      case ExprKind::IntImm:
      case ExprKind::FloatImm:
      case ExprKind::Var:
      case ExprKind::Load: return 0;
      case ExprKind::Cast: return ops(e->operands[0], fp64);
      case ExprKind::Reduce: {
        double iters = 1;
        for (const Loop& l : e->loops) {
          if (const NestIndex* ni = index(l.name)) iters *= (double)std::max<int64_t>(1, ni->hull.extent());
          if (auto rare = rareRows_.find(l.name); rare != rareRows_.end()) iters *= rare->second;
        }
        double bodyFp64 = 0;
        double n = iters * (1 + ops(e->operands[0], bodyFp64));
        fp64 += iters * ((e->type == ScalarType::F64 ? 1 : 0) + bodyFp64);
        return n;
      }
      default: {
        double n = 1;
        if (e->operands[0]->type == ScalarType::F64) fp64 += 1;
        for (const Expr& o : e->operands) n += ops(o, fp64);
        return n;
      }
    }
  };
  for (const Stmt& s : k.nests[nest].body) flopsPerPoint_ += ops(s.value, fp64FlopsPerPoint_);

  std::function<void(const Expr&, const std::string&)> nesting = [&](const Expr& e, const std::string& outer) {
    if (!e) return;
    std::string here = outer;
    if (e->kind == ExprKind::Reduce && !e->loops.empty()) {
      for (const Loop& l : e->loops)
        if (!outer.empty() && l.name != outer) outerOf_.emplace(l.name, outer);
      here = e->loops.front().name;
    }
    for (const Expr& o : e->operands) nesting(o, here);
  };
  for (const Stmt& s : k.nests[nest].body) nesting(s.value, "");
}

double NestModel::tripShare(const Access& a) const {
  double share = 1;
  if (rareRows_.empty()) return share;
  std::set<std::string> seen;
  for (const Loop* l : a.scope)
    if (auto it = rareRows_.find(l->name); it != rareRows_.end() && seen.insert(l->name).second) share *= it->second;
  return share;
}

int64_t NestModel::regValues(const NestPlan& plan, const std::string& name) {
  const IndexSchedule* is = plan.schedule.find(name);
  int64_t r = 1;
  if (is)
    for (const SchedulePart& p : is->parts)
      if (p.place == Placement::Reg) r *= p.factor.value_or(1);
  return r;
}

double NestModel::reloads(const NestPlan& plan, const Tiles& t, size_t ai) const {
  if (outerOf_.empty() || !usedLoops_[ai]) return 1;
  const Access& a = accesses_[ai];
  std::set<std::string> outers;
  for (const Loop* l : a.scope)
    if (auto it = outerOf_.find(l->name); it != outerOf_.end()) outers.insert(it->second);
  double n = 1;
  for (const Loop* l : a.scope) {
    if (!outers.count(l->name) || usedLoops_[ai]->count(l->id)) continue;
    auto c = t.threadCount.find(l->name);
    if (c != t.threadCount.end()) n *= std::max(1.0, (double)c->second / (double)regValues(plan, l->name));
  }
  return n;
}

// A data-dependent range (a CSR row) has the hull of everything it may index ([0, nnz)), far more
// than one row takes. The model counts it as a row of the mean length instead: its extent spread
// over the parallel points (the rows partition it), so that iterations, steps and footprints are
// one row's. Rows of unequal length cost what the mean costs (the tuner measures the rest). A
// hull shorter than the rows (`0..flag[i]`, a fallback few points take: the Ozaki scheme's
// non-finite rows) is a row of one trip that only that share of the points runs (rareRows_).
void NestModel::meanDataRows() {
  double rows = 1;
  for (const NestIndex& ni : indices_)
    if (ni.parallel) rows *= double(std::max<int64_t>(1, ni.hull.extent()));
  for (NestIndex& ni : indices_)
    if (ni.dataDependent) {
      const double share = double(ni.hull.extent()) / rows;
      if (share < 1) rareRows_[ni.name] = share;
      int64_t mean = std::max<int64_t>(1, int64_t(std::ceil(share)));
      ni.hull = IndexRange{0, mean - 1};
      meanRows_.insert(ni.name);
    }
}

// A reduction range whose bounds vary with the indices around it (`j in 0..i + 1`) counts as a
// row of its mean trip count over the domain (meanTripCount; the longest of its loops' means when
// several loops share the name), from the hull's start: a triangle has half the work of its square.
void NestModel::meanVaryingRows() {
  for (NestIndex& ni : indices_) {
    if (ni.parallel || ni.constantBounds || ni.dataDependent) continue;
    std::optional<double> mean;
    for (const Loop* l : ni.loops)
      if (std::optional<double> m = meanTripCount(*k_, nest_, *l)) mean = std::max(mean.value_or(0.0), *m);
    if (!mean) continue;
    const int64_t rows = std::clamp<int64_t>(int64_t(std::ceil(*mean)), 1, std::max<int64_t>(1, ni.hull.extent()));
    ni.hull = IndexRange{ni.hull.lo, ni.hull.lo + rows - 1};
    meanRows_.insert(ni.name);
  }
  for (const NestIndex& ni : indices_) varying_ = varying_ || (!ni.constantBounds && !ni.dataDependent);
}

// The fraction of the launch's blocks whose tile meets the domain: 1 unless a parallel index's
// bounds vary with another's (the blocks of a triangle's tiles above its diagonal hold no point
// and leave at once: the emitter checks each block's box against the bounds, as here). Sampled
// over up to 64 block positions per parallel index; a block counts as covered when the hull of
// each index's bounds over the block's box (rangeOfInt) meets the block's values.
double NestModel::coveredBlocks(const NestPlan& plan) const {
  if (!parallelVarying_) return 1;
  struct Axis {
    const NestIndex* ni;
    int64_t span = 1, blocks = 1;
  };
  std::vector<Axis> axes;
  std::vector<int64_t> key;  // the axes' spans and blocks: all the share depends on
  for (const NestIndex& ni : domain_) {
    if (!ni.parallel) continue;
    const IndexPlan* ip = plan.index(ni.name);
    if (!ip) return 1;
    const IndexSchedule& is = plan.clauseOf(*ip);
    Axis a{&ni};
    for (size_t p = 0; p < is.parts.size(); ++p) (isGridPlacement(is.parts[p].place) ? a.blocks : a.span) *= ip->extents[p];
    axes.push_back(a);
    key.push_back(a.span);
    key.push_back(a.blocks);
  }
  const double minimum = 1.0 / double(std::max<int64_t>(1, plan.launch.blocks));
  if (auto hit = coveredCache_.find(key); hit != coveredCache_.end()) return std::max(hit->second, minimum);
  std::map<int, IndexRange> box;
  std::function<double(size_t)> covered = [&](size_t d) -> double {
    if (d == axes.size()) return 1;
    const Axis& a = axes[d];
    const Loop& l = *a.ni->loops.front();
    const int64_t samples = std::min<int64_t>(a.blocks, 64);
    double sum = 0;
    for (int64_t t = 0; t < samples; ++t) {
      const int64_t b = int64_t((double(t) + 0.5) * double(a.blocks) / double(samples));
      const IndexRange mine{a.ni->hull.lo + b * a.span, a.ni->hull.lo + (b + 1) * a.span - 1};
      auto lo = rangeOfInt(l.lo, *k_, box), hi = rangeOfInt(l.hi, *k_, box);
      if (lo && hi && !lo->empty() && !hi->empty() && (lo->lo > mine.hi || hi->hi - 1 < mine.lo)) continue;
      box[l.id] = mine;
      sum += covered(d + 1);
      box.erase(l.id);
    }
    return sum / double(samples);
  };
  const double share = covered(0);
  coveredCache_.emplace(std::move(key), share);
  return std::max(share, minimum);
}

std::vector<int64_t> NestModel::partsOf(const NestPlan& plan, const IndexPlan& ip, const NestIndex& ni) const {
  if (!meanRows_.count(ni.name)) return ip.extents;
  return partExtents(plan.clauseOf(ip), hullRow(plan, ni));
}

int64_t NestModel::hullRow(const NestPlan& plan, const NestIndex& ni) const {
  const int64_t row = std::max<int64_t>(1, ni.hull.extent());
  for (const BlockHullSteps& bh : plan.staging.blockHulls) {
    if (bh.index != ni.name) continue;
    const int64_t spread = (bh.hi.most - bh.hi.least) + (bh.lo.most - bh.lo.least);
    return std::min<int64_t>(std::max<int64_t>(row, bh.hull.extent()), row + (spread + 1) / 2);
  }
  return row;
}

double NestModel::hullWaste(const NestPlan& plan) const {
  double waste = 1;
  for (const BlockHullSteps& bh : plan.staging.blockHulls)
    if (const NestIndex* ni = index(bh.index))
      waste *= double(hullRow(plan, *ni)) / double(std::max<int64_t>(1, ni->hull.extent()));
  return waste;
}

const NestIndex* NestModel::index(const std::string& name) const {
  for (const NestIndex& ni : indices_)
    if (ni.name == name) return &ni;
  return nullptr;
}

std::vector<const NestIndex*> NestModel::parallel() const {
  std::vector<const NestIndex*> out;
  for (const NestIndex& ni : indices_)
    if (ni.parallel) out.push_back(&ni);
  return out;
}

std::vector<const NestIndex*> NestModel::reductions() const {
  std::vector<const NestIndex*> out;
  for (const NestIndex& ni : indices_)
    if (!ni.parallel) out.push_back(&ni);
  return out;
}

int NestModel::loopIdIn(const Access& a, const std::string& index) const {
  if (index.empty()) return -1;
  for (const Loop* l : a.scope)
    if (l->name == index) return l->id;
  return -1;
}

// Lanes of a warp whose elements of `access` (at unit stride along thread.x) lie one after
// another: thread.x's, continued along thread.y, then thread.z, while the lanes so far hold whole
// indices (no idle lane, no register point between neighbours) and the next axis's index steps
// exactly past them. Sum factorisation's i, b, a whole on thread.x, .y, .z (p = 5) store runs of
// 32 neighbours, not runs of 5.
int64_t NestModel::warpRunLanes(const NestPlan& plan, size_t access) const {
  const Placement axes[3] = {Placement::ThreadX, Placement::ThreadY, Placement::ThreadZ};
  int64_t run = std::min<int64_t>(plan.launch.threadX, 32);
  for (int axis = 0; axis < 3 && run < 32; ++axis) {
    const NestIndex* on = nullptr;
    const IndexPlan* ip = nullptr;
    size_t part = 0;
    for (const NestIndex& ni : indices_) {
      const IndexPlan* p = ni.parallel ? plan.index(ni.name) : nullptr;
      const IndexSchedule* is = p ? &plan.clauseOf(*p) : nullptr;
      for (size_t q = 0; is && q < is->parts.size(); ++q)
        if (is->parts[q].place == axes[axis]) on = &ni, ip = p, part = q;
    }
    if (!on) break;
    const int64_t threads = ip->extents[part], laneStep = ip->strides[part];
    const int loop = loopIdIn(accesses_[access], on->name);
    const std::optional<int64_t> stride = loop < 0 ? std::nullopt : strideIn(access, loop);
    if (!stride || std::llabs(*stride) * laneStep != (axis == 0 ? 1 : run)) break;
    if (axis > 0) run *= threads;
    // Past an index with idle lanes or register points outside its thread part, lanes of the next
    // axis land elsewhere.
    if (laneStep != 1 || threads != on->hull.extent()) break;
  }
  return std::min<int64_t>(run, 32);
}

// The ranges each loop takes within one block, within one thread, and within one staging step.
// A block fixes the grid parts of every index; a thread fixes the grid and thread parts. The
// values left are represented by a contiguous range with as many points (exact when the fixed
// parts are the outer ones, which is how the space places grid parts).
NestModel::Tiles NestModel::tiles(const NestPlan& plan) const {
  Tiles t;
  std::map<int, IndexRange> middle;  // varying domains: the middle point, by loop id
  for (const NestIndex& ni : indices_) {
    const IndexPlan* ip = plan.index(ni.name);
    int64_t extent = std::max<int64_t>(1, ni.hull.extent());
    int64_t inBlock = extent, inThread = extent, inStep = extent, inPosition = extent;
    if (ip) {
      const IndexSchedule* is = &plan.clauseOf(*ip);
      const std::vector<int64_t> ext = partsOf(plan, *ip, ni);
      inBlock = inThread = inPosition = 1;
      // Cyclic rows: the leading serial part's positions are as far apart as separate blocks.
      const bool cyclic = ni.parallel && is->parts.size() > 1 && is->parts[0].place == Placement::Serial &&
                          isGridPlacement(is->parts[1].place);
      // (The mean positions a block takes: the last round of positions holds fewer than G blocks.)
      if (cyclic) t.cyclicPositions *= std::min(double(ext[0]), double(extent) / double(std::max<int64_t>(1, ip->strides[0])));
      for (size_t p = cyclic ? 1 : 0; p < is->parts.size(); ++p) {
        Placement pl = is->parts[p].place;
        if (!isGridPlacement(pl)) inBlock *= ext[p];
        if (!isGridPlacement(pl) && !isThreadPlacement(pl)) inThread *= ext[p];
        if (isThreadPlacement(pl) || pl == Placement::Reg) inPosition *= ext[p];
      }
      // A step: the parts after the step part (stepPartOf: grid parts ahead of it are the block's
      // share); a lone first part is not stepped.
      const size_t sp = stepPartOf(*is);
      if (sp < is->parts.size() && (sp > 0 || is->parts.size() > 1)) inStep = stepSpanOf(*is);
    }
    inBlock = std::min(inBlock, extent);
    inThread = std::min(inThread, extent);
    inStep = std::min(inStep, extent);
    inPosition = std::min(inPosition, extent);
    t.threadCount[ni.name] = inThread;
    for (const Loop* l : ni.loops) {
      // Tiles start at the hull's start; in a domain with varying bounds, at the middle point of
      // the domain instead (a triangle's middle rows are its mean rows; at its start a footprint
      // would see the first, shortest ones): the parallel indices' tiles centred on their hulls,
      // a varying reduction's from its row's start there.
      int64_t origin = ni.hull.lo;
      if (varying_ && ni.parallel) {
        middle[l->id] = IndexRange{ni.hull.lo + (extent - 1) / 2, ni.hull.lo + (extent - 1) / 2};
      } else if (varying_) {
        std::optional<IndexRange> lo = rangeOfInt(l->lo, *k_, middle);
        if (lo && !lo->empty() && lo->lo == lo->hi) origin = lo->lo;
        middle[l->id] = IndexRange{origin + (extent - 1) / 2, origin + (extent - 1) / 2};
      }
      auto at = [&](int64_t n) {
        const int64_t lo = varying_ && ni.parallel ? ni.hull.lo + (extent - n) / 2 : origin;
        return Interval{lo, lo + n - 1};
      };
      t.block[l->id] = at(inBlock);
      t.thread[l->id] = at(inThread);
      // A staged tile holds one position of the serial loops of parallel indices (it moves with them).
      t.step[l->id] = at(ni.parallel ? inPosition : inStep);
    }
  }
  return t;
}

// Candidates share tiles (they differ in unrolling, steps, staging): footprints and distinct
// counts are memoized per access and the tile's ranges over the access's loops.
std::vector<int64_t> NestModel::tileKey(size_t access, const std::map<int, Interval>& tile) const {
  std::vector<int64_t> key{(int64_t)access};
  for (const Loop* l : accesses_[access].scope) {
    auto it = tile.find(l->id);
    key.push_back(it == tile.end() ? -1 : it->second.lo);
    key.push_back(it == tile.end() ? -1 : it->second.hi);
  }
  return key;
}

const std::optional<Box>& NestModel::box(size_t access, const std::map<int, Interval>& tile) const {
  std::vector<int64_t> key = tileKey(access, tile);
  auto hit = boxCache_.find(key);
  if (hit == boxCache_.end()) hit = boxCache_.emplace(std::move(key), footprint(*k_, accesses_[access], tile)).first;
  return hit->second;
}

// Distinct elements an access touches over a tile: its box footprint, capped by the number of
// index points that reach it (a flat a[i + n*k] has a huge box but few points).
double NestModel::distinctElements(size_t access, const std::map<int, Interval>& tile) const {
  std::vector<int64_t> key = tileKey(access, tile);
  auto hit = distinctCache_.find(key);
  if (hit != distinctCache_.end()) return hit->second;
  const Access& a = accesses_[access];
  const std::optional<std::set<int>>& used = usedLoops_[access];
  double points = 1;
  for (const Loop* l : a.scope) {
    if (used && !used->count(l->id)) continue;
    auto it = tile.find(l->id);
    if (it != tile.end()) points *= (double)std::max<int64_t>(1, it->second.extent());
  }
  double v = points;
  if (!a.indirect)
    if (const std::optional<Box>& b = box(access, tile)) v = std::min(points, (double)b->elements());
  distinctCache_.emplace(std::move(key), v);
  return v;
}

// Bytes a block moves to stage an access cooperatively: its tile row by row, each row of the
// innermost dimension rounded up to 32-byte sectors (a column-shaped tile wastes most of each).
static double stagedTraffic(const Kernel& k, const Access& a, const std::optional<Box>& box, double distinct,
                            double bytes) {
  if (!box || box->dims.empty() || (double)box->elements() > distinct) return distinct * bytes;
  // A row spans every inner dimension the box covers in full, and one more: the rows of a u[k, j]
  // tile of whole DG elements are one contiguous run, not a sector-rounded row per element.
  const Param& param = k.params[a.array];
  double width = 1;
  for (size_t d = box->dims.size(); d-- > 0;) {
    width *= (double)std::max<int64_t>(1, box->dims[d].extent());
    std::optional<int64_t> full = d < param.shape.size() ? constIntValue(param.shape[d], k) : std::nullopt;
    if (!full || box->dims[d].extent() != *full) break;
  }
  double rows = (double)box->elements() / width;
  return rows * std::ceil(width * bytes / 32) * 32;
}

// readOnly_ and per access its entry: an array whose reads use different sets of parallel loops
// (a[i, k] and a[j, k]) is listed by its accesses, each of which can be a tile of its own.
void NestModel::listStagingEntries(const std::set<int>& written) {
  std::map<int, std::set<std::set<int>>> parallelLoops;  // array -> the parallel loops of each read
  std::set<int> parallelIds;
  for (const NestIndex& ni : domain_)
    if (ni.parallel)
      for (const Loop* l : ni.loops) parallelIds.insert(l->id);
  auto readOnly = [&](const Access& a) {
    return !a.isWrite && !written.count(a.array) && !k_->params[a.array].isWritten();
  };
  for (const Access& a : accesses_) {
    keyOf_.push_back(accessKey(*k_, a.indices));
    if (!readOnly(a)) continue;
    std::set<int> ids, par;
    for (const Expr& i : a.indices)
      visitExprs(i, [&](const Expr& x) {
        if (x->kind == ExprKind::Var && x->varKind == VarKind::Index) ids.insert(x->varId);
      });
    for (int id : ids)
      if (parallelIds.count(id)) par.insert(id);
    parallelLoops[a.array].insert(par);
  }
  for (size_t ai = 0; ai < accesses_.size(); ++ai) {
    const Access& a = accesses_[ai];
    entryOf_.push_back("");
    if (!readOnly(a)) continue;
    const std::string& name = k_->params[a.array].name;
    entryOf_.back() = parallelLoops[a.array].size() > 1 && !a.indirect ? fmt::format("{}[{}]", name, keyOf_[ai]) : name;
    if (std::find(readOnly_.begin(), readOnly_.end(), entryOf_.back()) == readOnly_.end())
      readOnly_.push_back(entryOf_.back());
  }
}

std::string NestModel::stagedEntry(const NestSchedule& s, size_t access) const {
  const Access& a = accesses_[access];
  if (a.isWrite) return "";
  const std::string& name = k_->params[a.array].name;
  for (const std::string& e : s.shared)
    if (stagedArrayName(e) == name && (stagedAccess(e).empty() || stagedAccess(e) == keyOf_[access])) return e;
  return "";
}

std::optional<int64_t> NestModel::stagedBytes(const NestSchedule& s, const std::vector<std::string>& arrays) const {
  return stagedBytes(sketchNest(*k_, nest_, s, indices_), arrays);
}

std::optional<int64_t> NestModel::stagedBytes(const NestPlan& plan, const std::vector<std::string>& arrays) const {
  return stagedBytes(tiles(plan), arrays);
}

std::optional<int64_t> NestModel::stagedBytes(const Tiles& t, const std::vector<std::string>& arrays) const {
  int64_t total = 0;
  for (const std::string& name : arrays) {
    int p = k_->findParam(std::string(stagedArrayName(name)));
    if (p < 0) return std::nullopt;
    for (size_t ai = 0; ai < accesses_.size(); ++ai) {
      const Access& a = accesses_[ai];
      if (a.array != p || a.isWrite || (!stagedAccess(name).empty() && stagedAccess(name) != keyOf_[ai])) continue;
      if (a.indirect) return std::nullopt;
      const std::optional<Box>& b = box(ai, t.step);
      if (!b) return std::nullopt;
      total += b->elements() * typeBytes(k_->params[p].type);
    }
  }
  return total;
}

// Elements one load instruction of a staged access brings: 4 when the thread's points along the
// tile's stored rows (the last dimension, the first for a transposed tile) are runs of 4
// neighbours (a parallel index whose innermost part is a register tile of a multiple of 4),
// which NVCC reads as one 16-byte vector; else 1.
int64_t NestModel::vectorWidth(const NestSchedule& s, size_t access, bool transposed) const {
  int loop = transposed ? rowLoops_[access].second : rowLoops_[access].first;
  if (loop < 0) return 1;
  for (const NestIndex& ni : indices_) {
    if (!ni.parallel) continue;
    bool mine = std::any_of(ni.loops.begin(), ni.loops.end(), [&](const Loop* l) { return l->id == loop; });
    if (!mine) continue;
    const IndexSchedule* is = s.find(ni.name);
    if (!is) return 1;
    const SchedulePart& last = is->parts.back();
    return last.place == Placement::Reg && last.factor && *last.factor % 4 == 0 ? 4 : 1;
  }
  return 1;
}

// Iterations a thread makes of the staged reduction step (the outer part of the innermost
// reduction index, or of the reduction around it; 1 without one).
double NestModel::stepsPerThread(const NestPlan& plan) const {
  const NestIndex* inner = innermostReduction();
  // A reduction over a reduction is staged along the outer index (OuterTile).
  if (auto outer = inner ? outerOf_.find(inner->name) : outerOf_.end(); outer != outerOf_.end())
    inner = index(outer->second);
  const IndexPlan* ip = inner ? plan.index(inner->name) : nullptr;
  if (!ip) return 1;
  const IndexSchedule& is = plan.clauseOf(*ip);
  const size_t sp = stepPartOf(is);
  if (sp >= is.parts.size() || (sp == 0 && is.parts.size() < 2)) return 1;
  return (double)partsOf(plan, *ip, *inner)[sp];
}

const NestIndex* NestModel::innermostReduction() const {
  for (size_t i = indices_.size(); i-- > 0;)
    if (!indices_[i].parallel) return &indices_[i];
  return nullptr;
}

// Loop control per thread: about 3 instructions (add, compare, branch) per iteration of a rolled
// loop part of a reduction index (unrolled parts have none), and a barrier pair with its
// bookkeeping (~6) per staged step.
double NestModel::loopControl(const NestPlan& plan) const {
  double control = 0;
  for (const NestIndex* ni : reductions()) {
    const IndexPlan* ip = plan.index(ni->name);
    if (!ip) {
      control += 3 * (double)std::max<int64_t>(1, ni->hull.extent());
      continue;
    }
    const IndexSchedule* is = &plan.clauseOf(*ip);
    const std::vector<int64_t> ext = partsOf(plan, *ip, *ni);
    double iterations = 1;
    for (size_t p = 0; p < is->parts.size(); ++p) {
      Placement pl = is->parts[p].place;
      if (isThreadPlacement(pl) || isGridPlacement(pl)) continue;
      if (pl == Placement::Unroll || pl == Placement::Reg) continue;
      iterations *= (double)ext[p];
    }
    // An inner reduction's loops run again at every step of the outer one.
    if (auto outer = outerOf_.find(ni->name); outer != outerOf_.end()) {
      const IndexPlan* op = plan.index(outer->second);
      const NestIndex* on = index(outer->second);
      if (op && on) {
        int64_t values = 1;
        const IndexSchedule& os = plan.clauseOf(*op);
        const std::vector<int64_t> oext = partsOf(plan, *op, *on);
        for (size_t p = 0; p < os.parts.size(); ++p)
          if (!isThreadPlacement(os.parts[p].place) && !isGridPlacement(os.parts[p].place)) values *= oext[p];
        iterations *= std::max(1.0, (double)values / (double)regValues(plan, outer->second));
      }
    }
    control += 3 * iterations;
  }
  if (!plan.schedule.shared.empty()) control += 6 * stepsPerThread(plan);
  return control;
}

// How many times a warp's read of a staged tile replays for shared-memory bank conflicts: the
// lanes of thread.x step through the tile by the index's in-warp stride (the extent of the parts
// after its thread part) times the stored pitch of each dimension it indexes. Reads are 16 bytes
// wide (8 lanes per phase, 4-bank groups) where the thread's points run along the stored rows or
// an unrolled reduction walks them, else 4 bytes (32 lanes, one bank each). DG differentiation's
// matrix rows, 36 elements apart: neighbouring lanes on neighbouring rows hit 8 different groups,
// but lanes 4 rows apart (`thread.x 14, reg 4`) only 2, 4-way conflicts; measured on an H100,
// such schedules ran about 2x slower than their `reg 4, thread.x 14` siblings.
double NestModel::bankConflictWays(const NestPlan& plan, size_t access, const StagedArray& sa, int64_t width,
                                   const std::string& threadXIndex, int64_t threadX) const {
  const Access& a = accesses_[access];
  const int txLoop = loopIdIn(a, threadXIndex);
  const NestSchedule& s = plan.schedule;
  const IndexPlan* ip = threadXIndex.empty() ? nullptr : plan.index(threadXIndex);
  const IndexSchedule* is = ip ? &plan.clauseOf(*ip) : nullptr;
  const int64_t lanes = std::min<int64_t>(32, threadX);
  if (txLoop < 0 || !is || lanes <= 1 || sa.order.size() != a.indices.size()) return 1;
  const std::vector<int64_t>& ext = ip->extents;
  int64_t laneStep = 1;
  bool after = false;
  for (size_t p = 0; p < is->parts.size(); ++p) {
    if (after) laneStep *= ext[p];
    after = after || is->parts[p].place == Placement::ThreadX;
  }
  const std::vector<int64_t> pitch = storedPitches(sa);
  const int64_t words = std::max<int64_t>(1, typeBytes(k_->params[a.array].type) / 4);
  int64_t step = 0;  // words between neighbouring lanes
  bool rowAlongUnrolledReduction = false;
  const NestIndex* inner = innermostReduction();
  const IndexSchedule* innerSchedule = inner ? s.find(inner->name) : nullptr;
  const bool unrolled = innerSchedule && innerSchedule->parts.back().place == Placement::Unroll;
  for (size_t d = 0; d < a.indices.size(); ++d) {
    const std::optional<AffineForm>& form = indexForms_[access][d];
    if (!form) return 1;
    auto c = form->coeffs.find(txLoop);
    if (c != form->coeffs.end()) step += c->second * laneStep * pitch[d] * words;
    if (d == sa.order.back() && inner && unrolled)
      for (const Loop* l : inner->loops) rowAlongUnrolledReduction = rowAlongUnrolledReduction || form->coeffs.count(l->id);
  }
  if (step == 0) return 1;  // a broadcast
  const bool vector = width == 4 || (rowAlongUnrolledReduction && sa.padded[sa.order.back()] % 4 == 0);
  const int64_t perPhase = vector ? 8 : 32, unit = vector ? 4 : 1, banks = vector ? 8 : 32;
  int64_t ways = 1;
  for (int64_t phase = 0; phase < lanes; phase += perPhase) {
    // The (bank, chunk) pairs of the phase's lanes (at most 32), distinct: the ways are the most
    // chunks of one bank.
    std::pair<int64_t, int64_t> hits[32];
    size_t n = 0;
    for (int64_t l = phase; l < std::min(lanes, phase + perPhase); ++l) {
      int64_t chunk = floorDiv(l * step, unit);
      hits[n++] = {floorMod(chunk, banks), chunk};
    }
    std::sort(hits, hits + n);
    n = size_t(std::unique(hits, hits + n) - hits);
    for (size_t i = 0, run = 0; i < n; ++i) {
      run = i > 0 && hits[i].first == hits[i - 1].first ? run + 1 : 1;
      ways = std::max<int64_t>(ways, (int64_t)run);
    }
  }
  return (double)ways;
}

NestEstimate NestModel::estimate(const NestSchedule& s, const DeviceModel& d) const {
  if (s.mma.any() || s.scan.any()) {  // a probe of an mma or scan schedule: its plan, where it has one
    NestPlanResult r = planNest(*k_, nest_, s, {}, &facts_);
    if (r.plan) return estimate(*r.plan, d);
    NestEstimate e;
    e.seconds = std::numeric_limits<double>::infinity();
    return e;
  }
  NestPlan sketch = sketchNest(*k_, nest_, s, indices_);
  sketch.staging = planStaging(*k_, nest_, s, &facts_);
  if (s.earlyLoads) sketch.earlyLoads = earlyStatementLoads(*k_, nest_, s);
  return estimate(sketch, d);
}


// The model of a SIMT plan (estimate), in four parts: the traffic and issue counts of the
// accesses; registers, shared memory and residency; the time; the second passes (cross-block
// combines, long rows, accumulation).
NestEstimate NestModel::estimate(const NestPlan& plan, const DeviceModel& d) const {
  if (plan.mma) return estimateMma(*k_, plan, d);
  if (plan.scan) return estimateScan(*k_, plan, d);  // SpaceScan.h
  NestEstimate e;
  const LaunchPlan& launch = plan.launch;
  e.threads = launch.threads;
  e.blocks = launch.blocks;
  e.crossBlocks = launch.crossBlocks;
  e.registerTile = launch.regPoints;
  e.outputsPerThread = launch.outputsPerThread;
  e.threadXIndex = launch.threadXIndex;
  EstimateState st;
  estimateTraffic(plan, e, st);
  if (!estimateResidency(plan, d, e, st)) return e;
  estimateTime(plan, d, e, st);
  addSecondPasses(plan, d, e);
  return e;
}

std::optional<int64_t> NestModel::strideIn(size_t access, int loopId) const {
  if (!flatForms_[access]) return std::nullopt;
  return flatForms_[access]->coeff(loopId);
}

// The accesses' traffic per block (e.bytes), arithmetic (e.flops), reuse and coalescing per
// staging entry, and what a thread issues for them.
void NestModel::estimateTraffic(const NestPlan& plan, NestEstimate& e, EstimateState& st) const {
  const NestSchedule& s = plan.schedule;
  const int64_t threadX = plan.launch.threadX;
  st.t = tiles(plan);
  Tiles& t = st.t;  // not const: threadCount[] counts an index it lacks as 0
  double reductionValuesPerThread = 1;
  for (const NestIndex& ni : indices_)
    if (!ni.parallel) reductionValuesPerThread *= (double)t.threadCount[ni.name];
  IssueCounts& issue = st.issue;
  double& operandsPerValue = st.operandsPerValue;  // registers holding one reduction value's operands
  std::map<std::string, std::pair<double, double>> reuse;  // array -> (requests, distinct)
  double perBlock = 0;
  bool sawStore = false;
  for (size_t ai = 0; ai < accesses_.size(); ++ai) {
    const Access& a = accesses_[ai];
    const Param& param = k_->params[a.array];
    double bytes = typeBytes(param.type);
    int txLoop = loopIdIn(a, e.threadXIndex);
    // strideAlong's: the coefficient in the flat offset.
    std::optional<int64_t> stride = txLoop < 0 ? std::optional<int64_t>(0) : strideIn(ai, txLoop);
    int64_t waste = !stride ? 4 : std::min<int64_t>(32, std::max<int64_t>(1, std::llabs(*stride)));
    // Inside a range few points run (rareRows_), only that share of the accesses happen.
    const double share = tripShare(a);
    double distinct = distinctElements(ai, t.block) * share;
    const double usedPerThread = distinctElements(ai, t.thread) * share;
    double perThread = usedPerThread * reloads(plan, t, ai);
    double requests = (double)e.threads * perThread;
    if (stride && *stride == 0) requests /= (double)std::min<int64_t>(threadX, 32);  // one request per warp
    if (a.isWrite && a.accumulate) continue;  // its atomics: accumulationSeconds
    if (a.isWrite) {
      // A warp's run along the stored row shorter than a 32-byte sector (i8 stores of 16 threads
      // on thread.x): each sector takes the writes of several warps. An Ozaki residue nest ran 1.9x
      // slower on 16-byte runs than on 32-byte ones (docs/bench.md, session 36).
      const bool unit = stride && std::llabs(*stride) == 1;
      const double run = unit ? double(warpRunLanes(plan, ai)) * bytes : 32;
      const double shortRun = run < 32 ? 32 / run : 1.0;
      perBlock += distinct * bytes * (double)waste * shortRun;
      if (!sawStore) {
        sawStore = true;
        e.storeArray = param.name;
        e.storeStride = stride ? *stride : 0;
      }
      continue;
    }
    if (a.indirect) {
      perBlock += requests * bytes * 4;
      continue;
    }
    // Reuse and coalescing per staging entry (the array, or its access: readOnlyArrays).
    const std::string& entry = entryOf_[ai].empty() ? param.name : entryOf_[ai];
    auto& r = reuse[entry];
    r.first += requests;
    r.second += distinct;
    e.coalescing[entry] = std::max<int64_t>(e.coalescing[entry], waste);
    const std::string stagedAs = stagedEntry(s, ai);
    bool isStaged = !stagedAs.empty();
    if (isStaged)
      perBlock += stagedTraffic(*k_, a, box(ai, t.block), distinct, bytes);
    else
      perBlock += (distinct + std::max(0.0, requests - distinct) / 4) * bytes * (double)waste;
    // Issue: each element a thread uses is loaded once per thread (register tiles share it),
    // staged tiles as vectors where the thread's points run along the stored rows; the tile copy
    // costs a load, a store and its address arithmetic per element.
    double width = isStaged ? (double)vectorWidth(s, ai, s.isTransposed(stagedAs)) : 1.0;
    double ways = 1;
    if (isStaged) {
      for (const StagedArray& sa : plan.staging.arrays)
        if (sa.array == a.array && (sa.access.empty() || sa.access == keyOf_[ai])) ways = bankConflictWays(plan, ai, sa, (int64_t)width, e.threadXIndex, threadX);
    }
    issue.loads += perThread / width * ways;
    operandsPerValue += usedPerThread / std::max(1.0, reductionValuesPerThread);
    if (isStaged) issue.copies += 3 * distinct / (double)std::max<int64_t>(1, e.threads);
  }
  for (const auto& [name, r] : reuse) e.reuse[name] = r.second > 0 ? r.first / r.second : 1;
  if (t.cyclicPositions > 1) {
    // Cyclic rows: every position moves its own tile's traffic and its threads load their own.
    perBlock *= t.cyclicPositions;
    issue.loads *= t.cyclicPositions;
    issue.copies *= t.cyclicPositions;
  }
  // Blocks with work: a triangle's empty blocks leave at once (coveredBlocks).
  st.activeBlocks = std::max(1.0, (double)e.blocks * coveredBlocks(plan));
  e.bytes = perBlock * st.activeBlocks;
  // Steps over a block's hull (BlockHullSteps) also issue their masked values.
  e.flops = flopsPerPoint_ * points_ * hullWaste(plan);
  e.fp64Flops = fp64FlopsPerPoint_ * points_ * hullWaste(plan);

}

// Registers (e.registers, capped: st.spills past the cap), shared memory and blocks per
// multiprocessor; false (with infinite seconds) where no block can be resident.
bool NestModel::estimateResidency(const NestPlan& plan, const DeviceModel& d, NestEstimate& e, EstimateState& st) const {
  const NestSchedule& s = plan.schedule;
  const Tiles& t = st.t;
  if (!s.shared.empty()) e.sharedBytes = stagedBytes(t, s.shared).value_or(0);
  if (plan.accumulation.shared) e.sharedBytes += plan.accumulation.bytes;  // the block's copy
  // Registers: the accumulators of every statement's register tile, one reduction value's
  // operands, the staged step held in registers while the previous one computes, and ~24 for
  // addresses and indices (an 8 x 8 matrix-product tile with both operands staged: 112; NVCC: 128).
  int64_t statements = std::max<int64_t>(1, (int64_t)k_->nests[nest_].body.size());
  // One step at one position of the serial loops of parallel indices is held (a block's copies
  // cover every position; the tiles move with them).
  const double positions = (double)std::max<int64_t>(1, e.outputsPerThread / std::max<int64_t>(1, e.registerTile));
  double prefetch = s.shared.empty() || s.asyncCopy ? 0 : st.issue.copies / 3 / std::max(1.0, stepsPerThread(plan)) / positions;
  e.registers = 24 + statements * e.registerTile + (int64_t)std::ceil(st.operandsPerValue + prefetch);
  // An outer register tile: R inner accumulators per register point and inner reduction.
  int64_t& outerValues = st.outerValues;
  if (plan.outerTile.any()) {
    outerValues = plan.outerTile.extent;
    size_t innerReductions = 0;
    for (const std::vector<Expr>& ig : plan.outerTile.inner) innerReductions += ig.size();
    e.registers += e.registerTile * outerValues * (int64_t)innerReductions;
  }
  // `loads: early`: the statements' loads held across the reductions, per register point.
  if (s.earlyLoads) e.registers += (int64_t)plan.earlyLoads.size() * e.registerTile;
  // __launch_bounds__(threads, N) caps the registers; so does NVCC at 255. Past the cap it spills.
  int64_t cap = 255;
  if (s.blocksPerSM > 0) cap = std::min<int64_t>(cap, d.registersPerMultiprocessor / (e.threads * s.blocksPerSM) / 8 * 8);
  st.spills = e.registers > cap;
  st.spilled = std::max<int64_t>(0, e.registers - cap);
  e.registers = std::min(e.registers, cap);
  const int64_t warps = st.warps = ceilDiv(e.threads, 32);
  int64_t perSm = d.maxBlocksPerMultiprocessor;
  perSm = std::min<int64_t>(perSm, d.maxThreadsPerMultiprocessor / std::max<int64_t>(1, warps * 32));
  perSm = std::min<int64_t>(perSm, d.registersPerMultiprocessor / (ceilDiv(e.registers, 8) * 8 * warps * 32));
  if (e.sharedBytes > 0) perSm = std::min<int64_t>(perSm, d.sharedPerMultiprocessor / e.sharedBytes);
  if (e.sharedBytes > d.sharedPerBlockOptin) perSm = 0;
  e.blocksPerMultiprocessor = std::max<int64_t>(0, perSm);
  if (e.blocksPerMultiprocessor == 0) {
    e.seconds = std::numeric_limits<double>::infinity();
    return false;
  }
  e.occupancy = (double)(e.blocksPerMultiprocessor * warps * 32) / d.maxThreadsPerMultiprocessor;

  return true;
}

// The time (e.seconds) from the traffic, the arithmetic and how well the residency hides them.
void NestModel::estimateTime(const NestPlan& plan, const DeviceModel& d, NestEstimate& e, EstimateState& st) const {
  const NestSchedule& s = plan.schedule;
  const int64_t lanes = plan.launch.lanes;  // threads on reduction thread parts
  const int64_t warps = st.warps, outerValues = st.outerValues;
  IssueCounts& issue = st.issue;
  double sms = d.multiprocessors;
  double blocks = st.activeBlocks;
  double smUse = std::min(1.0, blocks / sms);
  double residentBlocks = std::min<double>((double)e.blocksPerMultiprocessor, std::max(1.0, blocks / sms));
  double ilp = (double)std::min<int64_t>(e.registerTile * outerValues, 8);
  double hiding = std::min(1.0, residentBlocks * (double)warps * ilp / 32);
  // The last wave: what idles is the multiprocessors that run fewer blocks than the busiest, not
  // the block slots left empty (a multiprocessor with half its slots filled runs those blocks
  // faster); ranking by multiprocessor balance raised the model's rank correlation on SGEMM
  // (docs/bench.md, "Decisions and their measurements").
  double waveUse = blocks >= sms ? blocks / (sms * std::ceil(blocks / sms)) : 1.0;
  e.efficiency = smUse * hiding * waveUse;
  // Rows of unequal length: the blocks' own work over the block slots (workBalance).
  // A block's share of its multiprocessor's latency hiding: its warps times the independent
  // values each has in flight (register points, and the innermost reduction's unrolled loads).
  const double inFlight = ilp * (double)std::max<int64_t>(1, stepValues(plan) / std::max<int64_t>(1, lanes));
  if (std::optional<double> b = workBalance(plan, d.multiprocessors, e.blocksPerMultiprocessor,
                                            std::min(1.0, (double)warps * inFlight / 32))) {
    // Imbalance under 5% is left out: the hardware hands blocks to multiprocessors as they free
    // up, and what dealing rows cyclically costs (the serial loop, neighbouring blocks no longer
    // sharing tiles in L2) is not counted; a small modelled imbalance ranked slower cyclic rows
    // first (docs/bench.md).
    e.balance = *b >= 0.95 ? 1.0 : *b;
    e.efficiency *= e.balance;
  }
  // Memory and arithmetic overlap, not perfectly: a quarter of the smaller one shows (this also
  // ranks compute-bound candidates by their traffic).
  // Arithmetic issues at one instruction per clock per scheduler: the multiply-adds' share of a
  // thread's instructions bounds the rate (loads, copies, loop control and stores take slots too).
  const double totalThreads = (double)e.threads * st.activeBlocks;
  issue.fmas = e.flops / 2 / std::max(1.0, totalThreads);
  issue.control = loopControl(plan);
  // A rolled loop inside the staged step computes every shared-memory address at run time
  // (unrolled, they are immediates): about one more instruction per load.
  const NestIndex* innermost = innermostReduction();
  if (const IndexSchedule* inner = innermost ? s.find(innermost->name) : nullptr)
    if (inner->parts.size() > 1 && inner->parts.back().place == Placement::Serial) issue.loads *= 2;
  issue.stores = (double)e.outputsPerThread;
  e.issueEfficiency = issue.fmas > 0 ? issue.fmas / issue.total() : 1.0;
  // Issue slots also go idle while every warp of a scheduler waits (a barrier, a shared-memory
  // load): about W / (W + 4) of them issue with W warps resident per multiprocessor. Register
  // tiles past 64 points hide as many stalls with fewer warps, by their independent multiply-adds
  // (both calibrated on an H100: docs/bench.md).
  double residentWarps = residentBlocks * (double)warps;
  double effectiveWarps = residentWarps * std::max(1.0, (double)(e.registerTile * outerValues) / 64);
  double issueHiding = effectiveWarps / (effectiveWarps + 4);
  double spill = st.spills ? 0.5 : 1.0;  // spilled registers go through local memory
  // Each register past the cap is stored and loaded again through local memory, about once per
  // thread (a register tile of a long statement holds every point's operands at once, as the
  // Ozaki reconstruction's 8 x 8 tile did; docs/bench.md, session 36).
  const double spillBytes = st.spilled > 64 ? (double)st.spilled * 8 * totalThreads : 0.0;
  double memory = (e.bytes + spillBytes) / d.memoryBandwidth;
  double compute = e.flops / (sustainedPeak(d, e) * e.issueEfficiency * issueHiding * spill);
  // Copies steps ahead with cp.async: more bytes in flight, but waits and element-sized copies
  // of transposed tiles in the step; it helped some tiles and hurt others, and crediting the
  // overlap lost searches (docs/bench.md). So no credit: async ties where memory bounds (ranked
  // after its sibling, which is generated first) and pays where arithmetic does; the tuner
  // measures which wins.
  if (s.asyncCopy) compute *= 1.15;
  memory *= streamingStoreFactor(plan);
  // Large blocks lose more to their barriers (each waits for the block's slowest warp): 8% at 512
  // threads and 22% at 1024, from the exhaustive SGEMM n=4096 space (docs/bench.md).
  if (e.threads >= 1024) compute *= 1.22;
  else if (e.threads >= 512) compute *= 1.08;
  e.seconds = d.launchOverhead + (std::max(memory, compute) + std::min(memory, compute) / 4) / e.efficiency;
}

// What passes after the nest's own loop cost: a reduction's combine across blocks, `long_rows:`'s
// pass, the accumulation's atomics.
void NestModel::addSecondPasses(const NestPlan& plan, const DeviceModel& d, NestEstimate& e) const {
  const LaunchPlan& launch = plan.launch;
  const int64_t lanes = launch.lanes;
  if (e.crossBlocks > 1) {
    // The second pass: every block stores a partial per output point it holds (8 bytes, with a
    // fence and an atomic), and the last block of each tile reads its tile's partials back alone,
    // at about one multiprocessor's share of the bandwidth.
    double partials = (double)e.blocks * (double)std::max<int64_t>(1, e.threads / lanes) * (double)e.registerTile;
    double tileBytes = partials / (double)std::max<int64_t>(1, e.blocks / e.crossBlocks) * 8;
    e.seconds += 1e-6 + tileBytes / (d.memoryBandwidth / d.multiprocessors);
    e.bytes += partials * 16;
  }
  if (const LongRowPlan& lr = plan.longRows; lr.any()) {
    // `long_rows:`: the block's pass after each position costs two barriers and the read of the
    // list's count, about 120 cycles per block and position (at ~1.5 GHz), whether or not a row is
    // long; it walks the rows handed over, not its slots, so a row a thread (as many slots as
    // threads) pays no more than lanes per row. Its gain, the long rows no longer serialized on
    // one thread or a few lanes, depends on the data, which the model does not see: it ranks the
    // family just behind its siblings (on regular rows it is their code plus the pass), the
    // sampling keeps one of each shape (familiesOf) and the tuner measures it on the user's matrix
    // (`tune --input`).
    const double passes = double(e.blocks) * double(std::max<int64_t>(1, launch.outputsPerThread));
    const double resident = double(d.multiprocessors) * double(std::max<int64_t>(1, e.blocksPerMultiprocessor));
    e.seconds += passes * 120.0 / (resident * 1.5e9);
  }
  if (!accumulationStatements(*k_, plan.nest).empty()) e.seconds += accumulationSeconds(*k_, plan, e, d);
}

FusionSavings fusionSavings(const Kernel& k, const FusionGroup& g, const std::vector<NestEstimate>& parts,
                            const DeviceModel& d) {
  FusionSavings out;
  out.seconds = d.launchOverhead * double(g.count - 1);
  const std::set<int> inShared(g.sharedLocals.begin(), g.sharedLocals.end());
  std::set<int> kept;  // `keep:`: a later reader's reads cost no traffic at all (registers)
  for (const KeptRow& r : g.kept) kept.insert(r.array);
  std::set<int> readBefore;  // arrays an earlier nest of the group read
  for (int n = g.first; n < g.first + g.count; ++n) {
    const NestEstimate& e = parts[size_t(n - g.first)];
    std::map<int, double> bytes;  // per array this nest stops moving (once per array)
    std::set<int> readHere;
    for (const Access& a : collectAccesses(k, n)) {
      auto box = footprint(k, a);
      const double whole = box ? double(box->elements()) * typeBytes(k.params[size_t(a.array)].type) : 0;
      if (inShared.count(a.array)) bytes[a.array] = std::max(bytes[a.array], whole);
      else if (!a.isWrite && readBefore.count(a.array))
        bytes[a.array] = std::max(bytes[a.array], (kept.count(a.array) ? 1.0 : 0.75) * whole);
      if (!a.isWrite) readHere.insert(a.array);
    }
    double saved = 0;
    for (const auto& [array, b] : bytes) saved += b;
    saved = std::min(saved, e.bytes);
    out.bytes += saved;
    const double own = std::max(0.0, e.seconds - d.launchOverhead);
    out.seconds += std::min(0.8 * own, saved / d.memoryBandwidth / std::max(e.efficiency, 0.05));
    readBefore.insert(readHere.begin(), readHere.end());
  }
  return out;
}

}  // namespace rtcg
