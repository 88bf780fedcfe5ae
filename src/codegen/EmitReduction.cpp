// Reductions: the loops of a reduction index as its schedule splits them (with the steps of
// staged tiles), and the combination of partial results across the threads of a block (lanes)
// and across the blocks of an output tile (global scratch, the last block combines).
#include <algorithm>
#include <fmt/format.h>
#include <optional>
#include <set>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// Partials the last block of a reduction split across blocks reads per group of points before
// combining them (crossBlockCombine): a few dozen loads in flight hide the memory latency without
// holding many registers.
constexpr int64_t kCombineLoadsInFlight = 32;

bool isCoordinate(Placement pl) { return isThreadPlacement(pl) || isGridPlacement(pl); }

// A reduction loop of one part that is not a coordinate: a plain loop. With `stageGroup`, each
// iteration is one step: the tile is the footprint of this value of the index.
// Over a block's hull (`hull`), each value is guarded by the thread's own range.
void emitSerialReductionLoop(EmitContext& ctx, const std::vector<Loop>& loops, size_t q, Env env,
                             std::vector<C::Stmt>& out, const ReductionBody& inner, int stageGroup,
                             const C::ExprP& lo, const C::ExprP& hi, const HullSteps* hull) {
  const Loop& l = loops[q];
  const IndexSchedule& is = ctx.scheduleOf(l.name);
  std::string v = ctx.names.fresh(l.name);
  env.vars[l.id] = C::name(v);
  std::vector<C::Stmt> body, after;
  if (stageGroup >= 0) {
    bool zeroLo = lo->kind == C::ExprKind::IntLit && lo->intValue == 0;
    C::ExprP step = zeroLo ? C::name(v) : C::binary("-", C::name(v), lo);
    StepAt stepAt = [&](int64_t n, bool fromStart) {
      C::ExprP at = C::sum({fromStart ? lo : C::name(v), lit(n)});
      return std::pair{at, C::binary("<", at, hi)};
    };
    copyStep(ctx, stageGroup, step, stepAt, env, out, body, after);
  }
  setKeptSlotOfSerial(ctx, l, C::name(v), env);
  if (C::ExprP own = hull ? ownRangeGuard(*hull, C::name(v)) : nullptr) {
    std::vector<C::Stmt> guarded;
    emitReductionLoops(ctx, loops, q + 1, env, guarded, inner);
    body.push_back(C::ifThen(own, std::move(guarded)));
  } else {
    emitReductionLoops(ctx, loops, q + 1, env, body, inner);
  }
  append(body, std::move(after));
  if (stageGroup >= 0) body.push_back(C::syncThreads());  // the tile is read by all before the next copy
  out.push_back(C::forLoop(ctx.idx, v, lo, hi, keptUnroll(ctx, l.name, is.parts[0].place), std::move(body)));
}

// A reduction loop of several parts (or a coordinate part): its extents, the terms of the
// index's value, and the steps (the iterations of the step part).
struct SplitLoop {
  SplitLoop(const Loop& l, const IndexSchedule& is, C::ExprP lo, C::ExprP hi, const Kernel& k)
      : l(l), is(is), lo(std::move(lo)), hi(std::move(hi)), clo(constIntValue(l.lo, k)), chi(constIntValue(l.hi, k)) {}
  const Loop& l;
  const IndexSchedule& is;
  C::ExprP lo, hi;
  std::optional<int64_t> clo, chi;
  std::vector<int64_t> ext;
  bool exact = false;
  // The part whose iterations are the steps (staging: the first part not on the grid; the grid
  // parts ahead of it are the block's share of the values, planStaging allows nothing else
  // there), and the values one step covers.
  size_t sp = 0;
  int64_t stepSpan = 1;
  std::vector<std::string> vars;      // per part: the loop variable ("" for coordinates and reg)
  int regPart = -1;                   // a reg part (an outer register tile): its number, and the
  int64_t regStride = 1;              // distance between its values
  std::vector<C::ExprP> terms;        // lo + the parts' contributions: the index's value
  std::vector<C::ExprP> shareSteps;   // the block's first step: its grid coordinates, in steps
  C::ExprP stepTrips;                 // steps of this block
  const HullSteps* hull = nullptr;    // steps over the block's hull of a varying range
};

SplitLoop splitLoop(EmitContext& ctx, const Loop& l, C::ExprP lo, C::ExprP hi, bool staging) {
  const IndexSchedule& is = ctx.scheduleOf(l.name);
  SplitLoop s(l, is, lo, hi, ctx.k);
  int64_t innerProduct = 1;
  for (size_t p = 1; p < is.parts.size(); ++p) innerProduct *= *is.parts[p].factor;
  C::ExprP firstTrip;
  // The extents of this loop's own range, not the plan's: a reduction index's plan splits the hull
  // of every loop of that name, and a loop may cover less of it (or have bounds known only at
  // run time, where the first part's trips are computed in the code).
  if (s.clo && s.chi) {
    s.ext = partExtents(is, std::max<int64_t>(0, *s.chi - *s.clo));
    firstTrip = lit(s.ext[0]);
    s.exact = s.ext[0] * innerProduct == *s.chi - *s.clo;
  } else {
    s.ext = partExtents(is, 1);
    // ceil((hi - lo) / inner); an empty range gives a trip count <= 0 with C division too.
    firstTrip = C::binary("/", C::sum({C::binary("-", hi, lo), lit(innerProduct - 1)}), lit(innerProduct));
  }
  s.sp = staging ? stepPartOf(is) : 0;
  s.stepSpan = staging ? stepSpanOf(is) : innerProduct;
  s.terms = {lo};
  int64_t stride = innerProduct;
  static const char* axisField[3] = {"x", "y", "z"};
  for (size_t p = 0; p < is.parts.size(); ++p) {
    if (p > 0) stride /= s.ext[p];
    Placement pl = is.parts[p].place;
    if (isCoordinate(pl)) {
      // A split reduction: this part is the thread's (or the block's) coordinate, not a loop.
      s.vars.push_back("");
      const char* coord = isThreadPlacement(pl) ? "threadIdx" : "blockIdx";
      C::ExprP c = C::castTo(ctx.idx, C::member(C::name(coord), axisField[placementAxis(pl)]));
      s.terms.push_back(C::product(c, lit(stride)));
      if (p < s.sp) s.shareSteps.push_back(C::product(c, lit(stride / s.stepSpan)));
      continue;
    }
    if (pl == Placement::Reg) {
      // An outer register tile: no loop; the body takes every value (RegisterValues).
      s.vars.push_back("");
      s.regPart = (int)p;
      s.regStride = stride;
      continue;
    }
    s.vars.push_back(ctx.names.fresh(fmt::format("{}_{}", l.name, p)));
    s.terms.push_back(C::product(C::name(s.vars.back()), lit(stride)));
  }
  // Steps of this block: all of the first part's, or (split-K) the step part's factor.
  s.stepTrips = s.sp == 0 ? firstTrip : lit(s.ext[s.sp]);
  return s;
}

// The loops of the parts after the step part around the rest of the reductions and `inner`: the
// index `v` declared, the body guarded by v < hi when `guard`.
std::vector<C::Stmt> innerParts(EmitContext& ctx, const SplitLoop& s, const std::string& v, bool guard,
                                const std::vector<Loop>& loops, size_t q, const Env& env, const ReductionBody& inner) {
  std::vector<C::Stmt> body{C::decl(ctx.idx, v, C::sum(s.terms))};
  Env inEnv = env;
  if (s.regPart >= 0)
    inEnv.regValues = RegisterValues{s.l.id, s.ext[(size_t)s.regPart], s.regStride, s.hi, guard};
  setKeptSlot(ctx, s.l.name, s.ext, s.vars, inEnv);
  if (!guard) {
    emitReductionLoops(ctx, loops, q + 1, inEnv, body, inner);
  } else {
    std::vector<C::Stmt> guarded;
    emitReductionLoops(ctx, loops, q + 1, inEnv, guarded, inner);
    C::ExprP cond = C::binary("<", C::name(v), s.hi);
    if (s.hull) cond = andAll(cond, ownRangeGuard(*s.hull, C::name(v)));
    body.push_back(C::ifThen(cond, std::move(guarded)));
  }
  for (size_t p = s.is.parts.size(); p-- > s.sp + 1;) {
    if (isCoordinate(s.is.parts[p].place) || s.is.parts[p].place == Placement::Reg) continue;
    std::vector<C::Stmt> loop{
        C::forLoop(ctx.idx, s.vars[p], lit(0), lit(s.ext[p]), keptUnroll(ctx, s.l.name, s.is.parts[p].place),
                   std::move(body))};
    body = std::move(loop);
  }
  return body;
}

// A step over a block's hull: unguarded where it lies inside every thread's range (the loop is
// then covered for every point, so pointRangeGuard skips it too), else each value guarded by the
// block's end and the thread's own range. The step's start: lo + n * span (no grid parts: planStaging).
std::vector<C::Stmt> hullStepBody(EmitContext& ctx, const SplitLoop& s, const std::string& v,
                                  const std::vector<Loop>& loops, size_t q, const Env& env, const ReductionBody& inner) {
  C::ExprP start = C::sum({s.lo, C::product(C::name(s.vars[s.sp]), lit(s.stepSpan))});
  Env covered = env;
  covered.coveredLoops.insert(s.l.id);
  std::vector<C::Stmt> body;
  body.push_back(C::ifThen(fullStep(*s.hull, start, s.stepSpan), innerParts(ctx, s, v, false, loops, q, covered, inner),
                           innerParts(ctx, s, v, true, loops, q, env, inner)));
  return body;
}

// The body of one step of a split loop: the inner parts, peeled or guarded.
std::vector<C::Stmt> stepBody(EmitContext& ctx, const SplitLoop& s, const std::string& v,
                              const std::vector<Loop>& loops, size_t q, const Env& env, const ReductionBody& inner) {
  // When the range does not divide and inner parts are unrolled (or a register tile of an outer
  // reduction), every step but the last runs the unrolled body without the guard (which would
  // keep neighbouring reads from merging into vector loads: the register values' clamp too); the
  // steps are uniform across the block, so the branch does not diverge.
  if (s.hull) return hullStepBody(ctx, s, v, loops, q, env, inner);
  const auto& parts = s.is.parts;
  bool peel = !s.exact && s.clo && s.chi && !isCoordinate(parts[s.sp].place) &&
              std::any_of(parts.begin() + s.sp + 1, parts.end(), [](const SchedulePart& part) {
                return part.place == Placement::Unroll || part.place == Placement::Reg;
              });
  if (!peel) return innerParts(ctx, s, v, !s.exact, loops, q, env, inner);
  int64_t fullSteps = (*s.chi - *s.clo) / s.stepSpan;
  std::vector<C::ExprP> number = s.shareSteps;
  number.push_back(C::name(s.vars[s.sp]));
  std::vector<C::Stmt> body;
  body.push_back(C::ifThen(C::binary("<", C::sum(number), lit(fullSteps)),
                           innerParts(ctx, s, v, false, loops, q, env, inner),
                           innerParts(ctx, s, v, true, loops, q, env, inner)));
  return body;
}

// A bound on register-tile indices (not known here: the loop is shared by the points of the
// tile), into a local: the union of the points' ranges (the smallest lo, the largest hi over the
// distinct values of those indices), clamped to the hull of the loop's values, so that points
// outside the domain do not widen it. Each point's updates are guarded by its own range
// (pointRangeGuard).
C::ExprP unionBound(EmitContext& ctx, const Loop& l, const Expr& b, const char* which, Env& env,
                    std::vector<C::Stmt>& out) {
  const bool isLo = std::string(which) == "lo";
  std::vector<int> regParts;  // the register parts of the indices b names
  for (size_t r = 0; r < ctx.facts.regParts.size(); ++r)
    if (pointIndexIn(ctx, b, *ctx.facts.par[ctx.facts.regParts[r].par].loop, env)) regParts.push_back((int)r);
  std::set<std::vector<int64_t>> seen;
  C::ExprP v;
  for (int64_t pt = 0; pt < ctx.facts.regPoints; ++pt) {
    const std::vector<int64_t> rv = regValuesOf(ctx, pt);
    std::vector<int64_t> key;
    for (int r : regParts) key.push_back(rv[size_t(r)]);
    if (!seen.insert(key).second) continue;
    Env penv = env;
    for (const ParallelIndex& p : ctx.facts.par)
      if (p.level == Level::Point) penv.vars[p.loop->id] = indexValue(ctx, p, &rv);
    C::ExprP at = lower(ctx, b, penv, out);
    v = v ? C::call(isLo ? "min" : "max", {v, at}) : at;
  }
  const IndexRange hull = ctx.facts.ranges.at(l.id);
  v = isLo ? C::call("max", {v, lit(hull.lo)}) : C::call("min", {v, lit(hull.hi + 1)});
  std::string name = ctx.names.fresh(fmt::format("{}_{}", l.name, which));
  out.push_back(C::decl(ctx.idx, name, v));
  return C::name(name);
}

// A bound of loop `l`. A range read (a data-dependent bound, IR.h) is loaded once, into a local
// ahead of the loop, and a point outside the domain (a thread of cooperative code, a position
// past the end) gets 0, an empty range, instead of reading past the bound's array. A bound on
// register-tile indices is the union of the points' ranges (unionBound).
C::ExprP lowerBound(EmitContext& ctx, const Loop& l, const Expr& b, const char* which, Env& env,
                    std::vector<C::Stmt>& out) {
  if (namesPointIndex(ctx, b, env)) return unionBound(ctx, l, b, which, env, out);
  C::ExprP v = lower(ctx, b, env, out);
  if (!isRangeRead(b)) return v;
  if (C::ExprP guard = rangeGuard(ctx, b, env, out)) v = C::ternary(guard, v, lit(0));
  std::string name = ctx.names.fresh(fmt::format("{}_{}", l.name, which));
  out.push_back(C::decl(ctx.idx, name, v));
  return C::name(name);
}

}  // namespace

bool pointIndexIn(const EmitContext& ctx, const Expr& e, const Loop& index, const Env& env) {
  if (env.vars.count(index.id)) return false;
  return anyExpr(e, [&](const Expr& x) {
    return x->kind == ExprKind::Var && x->varKind == VarKind::Index && x->varId == index.id;
  });
}

bool namesPointIndex(const EmitContext& ctx, const Expr& e, const Env& env) {
  for (const ParallelIndex& p : ctx.facts.par)
    if (p.level == Level::Point && pointIndexIn(ctx, e, *p.loop, env)) return true;
  return false;
}

C::ExprP pointRangeGuard(EmitContext& ctx, const std::vector<Loop>& loops, const Env& groupEnv, Env& penv,
                         std::vector<C::Stmt>& out) {
  C::ExprP guard;
  for (const Loop& l : loops) {
    if (groupEnv.coveredLoops.count(l.id)) continue;
    const C::ExprP v = penv.vars.at(l.id);
    if (namesPointIndex(ctx, l.lo, groupEnv)) guard = andAll(guard, C::binary(">=", v, lower(ctx, l.lo, penv, out)));
    if (namesPointIndex(ctx, l.hi, groupEnv)) guard = andAll(guard, C::binary("<", v, lower(ctx, l.hi, penv, out)));
  }
  return guard;
}

// The loops of reduction loops[q..], split as the schedule says, around `inner`. With
// `stageGroup` (a hoisted group with arrays staged per step), every iteration of the outer part of
// the first loop copies the step's tiles into shared memory, between barriers, before the inner parts.
void emitReductionLoops(EmitContext& ctx, const std::vector<Loop>& loops, size_t q, Env env, std::vector<C::Stmt>& out,
                        const ReductionBody& inner, int stageGroup) {
  if (q == loops.size()) {
    inner(env, out);
    return;
  }
  const bool staging = q == 0 && stageGroup >= 0 && hasStepStaging(ctx, stageGroup);
  const Loop& l = loops[q];
  const IndexSchedule& is = ctx.scheduleOf(l.name);
  // Staged along a varying range: the block's steps over the hull of its threads' ranges.
  const BlockHullSteps* bh = staging ? blockHullOf(ctx, stageGroup) : nullptr;
  std::optional<HullSteps> hull;
  C::ExprP lo, hi;
  if (bh) {
    hull = hullSteps(ctx, *bh, l, env, out);
    lo = hull->lo, hi = hull->hi;
  } else {
    lo = lowerBound(ctx, l, l.lo, "lo", env, out), hi = lowerBound(ctx, l, l.hi, "hi", env, out);
    hi = longRowEnd(ctx, l, lo, hi, env, out);  // `long_rows:`: a long range goes to the block (lo: none here)
  }
  const HullSteps* hs = hull ? &*hull : nullptr;
  if (is.parts.size() == 1 && !isCoordinate(is.parts[0].place)) {
    emitSerialReductionLoop(ctx, loops, q, std::move(env), out, inner, staging ? stageGroup : -1, lo, hi, hs);
    return;
  }
  SplitLoop s = splitLoop(ctx, l, lo, hi, staging);
  s.hull = hs;
  std::vector<C::Stmt> stage, after;
  if (staging) {
    // Step n of the block covers lo + (share + n) * span .. + span - 1. Prefetched: this step's
    // registers go to shared memory, then the next step's loads are issued before this step's
    // arithmetic.
    StepAt stepAt = [&](int64_t n, bool fromStart) {
      C::ExprP number = fromStart ? lit(n) : C::sum({C::name(s.vars[s.sp]), lit(n)});
      std::vector<C::ExprP> at{lo};
      for (const C::ExprP& share : s.shareSteps) at.push_back(C::product(share, lit(s.stepSpan)));
      at.push_back(C::product(number, lit(s.stepSpan)));
      return std::pair{C::sum(at), C::binary("<", number, s.stepTrips)};
    };
    copyStep(ctx, stageGroup, C::name(s.vars[s.sp]), stepAt, env, out, stage, after);
  }
  std::string v = ctx.names.fresh(l.name);
  env.vars[l.id] = C::name(v);
  std::vector<C::Stmt> body = stepBody(ctx, s, v, loops, q, env, inner);
  if (staging) {
    append(stage, std::move(body));
    append(stage, std::move(after));
    stage.push_back(C::syncThreads());
    body = std::move(stage);
  }
  // The step part's loop (the first part's without staging); parts ahead of it are grid parts.
  if (!isCoordinate(is.parts[s.sp].place)) {
    std::vector<C::Stmt> loop{
        C::forLoop(ctx.idx, s.vars[s.sp], lit(0), s.stepTrips, keptUnroll(ctx, l.name, is.parts[s.sp].place),
                   std::move(body))};
    body = std::move(loop);
  }
  append(out, std::move(body));
}

// acc = acc (op) v
C::Stmt combine(ReduceOp op, ScalarType t, const C::ExprP& acc, const C::ExprP& v) {
  switch (op) {
    case ReduceOp::Sum: return C::assign(acc, "+=", v);
    case ReduceOp::Product: return C::assign(acc, "*=", v);
    case ReduceOp::Max:
      return C::assign(acc, "=", C::call(isFloat(t) ? mathName(MathFn::Max, t) : "max", {acc, v}));
    case ReduceOp::Min:
      return C::assign(acc, "=", C::call(isFloat(t) ? mathName(MathFn::Min, t) : "min", {acc, v}));
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

// The thread axes of the reduction of group `g` (bit a for axis a).
int groupMask(const EmitContext& ctx, const std::vector<Expr>& g) {
  int mask = 0;
  for (const Loop& l : g[0]->loops)
    for (const SchedulePart& p : ctx.scheduleOf(l.name).parts)
      if (isThreadPlacement(p.place)) mask |= 1 << placementAxis(p.place);
  return mask;
}

// The accumulator types that need a combine buffer in shared memory (with reduction thread
// axes): those of groups split across threads and of values combined across blocks, each once,
// in that order.
std::vector<ScalarType> combineBufferTypes(const EmitContext& ctx) {
  std::vector<ScalarType> types;
  auto add = [&](ScalarType t) {
    if (std::find(types.begin(), types.end(), t) == types.end()) types.push_back(t);
  };
  for (const std::vector<Expr>& g : ctx.plan.groups)
    if (splitGroup(ctx, g))
      for (const Expr& r : g) add(r->type);
  for (const auto& [t, v] : ctx.plan.crossBlock.values) add(t);
  return types;
}

namespace {

// Declares the lane and slot of the threads for the reduction thread axes in `mask` (once per
// mask): lane = coordinates on those axes, slot = the other coordinates (x fastest).
void declareLaneSet(EmitContext& ctx, int mask, std::vector<C::Stmt>& body) {
  if (ctx.red.laneSets.count(mask)) return;
  const auto& block = ctx.facts.block;
  int64_t laneScale = 1, slotScale = 1;
  std::vector<C::ExprP> laneTerms, slotTerms;
  for (int a = 0; a < 3; ++a) {
    if (block[a] == 1) continue;
    C::ExprP t = coordinate(ctx, "threadIdx", a);
    if (mask & (1 << a)) laneTerms.push_back(C::product(t, lit(laneScale))), laneScale *= block[a];
    else slotTerms.push_back(C::product(t, lit(slotScale))), slotScale *= block[a];
  }
  ReductionState::LaneSet ls;
  ls.lanes = laneScale;
  if (laneScale > 1) {
    std::string ln = ctx.names.fresh("lane"), sn = ctx.names.fresh("slot");
    body.push_back(C::decl(ctx.idx, ln, C::sum(laneTerms)));
    body.push_back(C::decl(ctx.idx, sn, C::sum(slotTerms)));
    ls.lane = C::name(ln);
    ls.slot = C::name(sn);
  }
  ctx.red.laneSets[mask] = ls;
}

}  // namespace

// Lanes and slots per mask of reduction axes (every one, and the axes of each split group), and
// one combine buffer per accumulator type, a value per thread.
void declareLanes(EmitContext& ctx, std::vector<C::Stmt>& body) {
  ReductionState& red = ctx.red;
  declareLaneSet(ctx, ctx.facts.fullMask, body);
  red.lanes = red.laneSets.at(ctx.facts.fullMask).lanes;
  if (red.lanes <= 1) return;
  red.lane = red.laneSets.at(ctx.facts.fullMask).lane;
  red.slot = red.laneSets.at(ctx.facts.fullMask).slot;
  for (const std::vector<Expr>& g : ctx.plan.groups)
    if (splitGroup(ctx, g)) declareLaneSet(ctx, groupMask(ctx, g), body);
  for (ScalarType t : combineBufferTypes(ctx)) {
    std::string n = ctx.names.fresh(fmt::format("red_{}", typeName(t)));
    body.push_back(C::sharedArray(cudaTypeName(t), n, ctx.facts.threads));
    red.combineBuffers[t] = n;
  }
}

// A reduction split across blocks: this block's tile (grid coordinates of the parallel indices)
// and its place in the tile (coordinates on the reduction's grid axes), x fastest, and the
// shared flag of the last block.
void declareCrossBlock(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const LaunchFacts& f = ctx.facts;
  if (!ctx.plan.crossBlock.any()) return;
  std::vector<C::ExprP> tileTerms, blockTerms;
  int64_t tileScale = 1, blockScale = 1;
  for (int a = 0; a < 3; ++a) {
    if (f.grid[a] == 1) continue;
    C::ExprP b = coordinate(ctx, "blockIdx", a);
    if (ctx.plan.crossBlock.gridAxis[a]) blockTerms.push_back(C::product(b, lit(blockScale))), blockScale *= f.grid[a];
    else tileTerms.push_back(C::product(b, lit(tileScale))), tileScale *= f.grid[a];
  }
  auto declared = [&](const char* base, const std::vector<C::ExprP>& terms) {
    if (terms.empty()) return lit(0);
    std::string n = ctx.names.fresh(base);
    body.push_back(C::decl(ctx.idx, n, C::sum(terms)));
    return C::name(n);
  };
  ctx.red.tile = declared("tile", tileTerms);
  ctx.red.rblock = declared("block_in_tile", blockTerms);
  ctx.red.lastBlock = ctx.names.fresh("last_block");
  body.push_back(C::sharedScalar("bool", ctx.red.lastBlock));
}

// acc = the combination of acc over the lanes (thread axes in `mask`) of this thread's slot, in
// every lane: a tree in shared memory (lane l takes in lane l + s for s = half the next power of
// two of the lane count, down to 1; lanes that do not exist are skipped, so any lane count works
// and no identity is needed), between barriers. Every thread of the block runs it (uniform code).
//
// Lanes that are whole warps or aligned parts of one (the lanes are thread.x alone, a power of two,
// and every warp of the block is full) combine with register shuffles instead: a butterfly of
// __shfl_xor_sync over up to 32 lanes leaves the same bits in every lane (a + b and b + a round
// alike), and more than 32 lanes then combine their warps' values in shared memory, in warp order.
void combineLanes(EmitContext& ctx, ReduceOp op, ScalarType t, const C::ExprP& acc, std::vector<C::Stmt>& out,
                  int mask) {
  const ReductionState::LaneSet& ls = ctx.red.laneSets.at(mask);
  C::ExprP buf = C::name(ctx.red.combineBuffers.at(t));
  const bool powerOfTwo = (ls.lanes & (ls.lanes - 1)) == 0;
  if (mask == 1 && powerOfTwo && ctx.facts.threads % 32 == 0) {
    const int64_t width = std::min<int64_t>(ls.lanes, 32);
    for (int64_t offset = width / 2; offset >= 1; offset /= 2)
      out.push_back(combine(op, t, acc, C::call("__shfl_xor_sync", {C::uintLit(0xffffffffu), acc, lit(offset)})));
    if (ls.lanes <= 32) return;
    const int64_t warps = ls.lanes / 32;
    C::ExprP first = C::product(ls.slot, lit(warps));
    out.push_back(C::ifThen(C::binary("==", C::binary("%", ls.lane, lit(32)), lit(0)),
                            {C::assign(C::index(buf, C::sum({first, C::binary("/", ls.lane, lit(32))})), "=", acc)}));
    out.push_back(C::syncThreads());
    out.push_back(C::assign(acc, "=", C::index(buf, first)));
    for (int64_t w = 1; w < warps; ++w) out.push_back(combine(op, t, acc, C::index(buf, C::sum({first, lit(w)}))));
    out.push_back(C::syncThreads());  // every warp has read before the buffer is reused
    return;
  }
  C::ExprP mine = C::sum({C::product(ls.slot, lit(ls.lanes)), ls.lane});
  out.push_back(C::assign(C::index(buf, mine), "=", acc));
  out.push_back(C::syncThreads());
  int64_t pow2 = 1;
  while (pow2 < ls.lanes) pow2 *= 2;
  for (int64_t step = pow2 / 2; step >= 1; step /= 2) {
    int64_t active = std::min(step, ls.lanes - step);  // lanes l < active have a partner l + step
    out.push_back(C::ifThen(C::binary("<", ls.lane, lit(active)),
                            {combine(op, t, C::index(buf, mine), C::index(buf, C::sum({mine, lit(step)})))}));
    out.push_back(C::syncThreads());
  }
  out.push_back(C::assign(acc, "=", C::index(buf, C::product(ls.slot, lit(ls.lanes)))));
  out.push_back(C::syncThreads());  // every lane has read before the buffer is reused
}

namespace {

// One partial of a reduction split across blocks: a reduction at a register point.
struct Partial {
  const Expr* red;
  int64_t point;
  ScalarType type;
  int64_t index;  // v among the values of its type
};

// The partials of the block, group by group, reduction by reduction, point by point.
std::vector<Partial> partialsOf(const EmitContext& ctx) {
  const CrossBlockPlan& xb = ctx.plan.crossBlock;
  std::vector<Partial> values;
  std::map<ScalarType, int64_t> nextIndex;
  for (int g : xb.groups)
    for (const Expr& r : ctx.plan.groups[g])
      for (int64_t pt = 0; pt < xb.regPoints; ++pt) values.push_back({&r, pt, r->type, nextIndex[r->type]++});
  return values;
}

// Where partial `v` of block `block` of the tile at arrival counter `counter` lies in scratch.
C::ExprP partialAt(const EmitContext& ctx, const C::ExprP& counter, const Partial& v, const C::ExprP& block) {
  const CrossBlockPlan& xb = ctx.plan.crossBlock;
  const int64_t R = xb.blocks, S = xb.slots;
  const ReductionState& red = ctx.red;
  C::ExprP slot = red.lanes > 1 ? red.slot : ctx.tid;
  if (red.lanes == 1) {
    // ((counter * values + v) * blocks + block) * slots + slot: neighbouring threads store and
    // read neighbouring partials.
    C::ExprP row = C::sum({C::product(counter, lit(xb.values.at(v.type) * R)), lit(v.index * R), block});
    return C::index(C::name(red.partials.at(v.type)), C::sum({C::product(row, lit(S)), slot}));
  }
  // ((counter * values + v) * slots + slot) * blocks + block: the lanes of a slot read
  // neighbouring blocks' partials.
  C::ExprP row = C::sum({C::product(counter, lit(xb.values.at(v.type) * S)), lit(v.index * S), slot});
  return C::index(C::name(red.partials.at(v.type)), C::sum({C::product(row, lit(R)), block}));
}

// Every block stores its partials (lane 0 of each slot) and counts itself in; the shared flag
// says whether it arrived last.
void storeAndArrive(EmitContext& ctx, const PointAccumulators& accs, const C::ExprP& counter,
                    const std::vector<Partial>& values, std::vector<C::Stmt>& out) {
  const int64_t R = ctx.plan.crossBlock.blocks;
  const ReductionState& red = ctx.red;
  std::vector<C::Stmt> store;
  for (const Partial& v : values)
    store.push_back(C::assign(partialAt(ctx, counter, v, red.rblock), "=", accs[v.point].at(v.red->get())));
  store.push_back(C::exprStmt(C::call("__threadfence", {})));  // the partials are visible before the count
  if (red.lanes > 1) out.push_back(C::ifThen(C::binary("==", red.lane, lit(0)), std::move(store)));
  else append(out, std::move(store));
  out.push_back(C::syncThreads());
  // atomicInc wraps the counter back to 0 at the last arrival: ready for the next launch.
  std::string arrived = ctx.names.fresh("arrived");
  C::ExprP count = C::call("atomicInc", {C::unary("&", C::index(C::name(red.arrivals), counter)), C::uintLit((uint32_t)(R - 1))});
  std::vector<C::Stmt> arrive{
      C::decl("unsigned int", arrived, count),
      C::assign(C::name(red.lastBlock), "=", C::binary("==", C::name(arrived), C::uintLit((uint32_t)(R - 1))))};
  if (ctx.facts.threads > 1) out.push_back(C::ifThen(C::binary("==", ctx.tid, lit(0)), std::move(arrive)));
  else append(out, std::move(arrive));
  out.push_back(C::syncThreads());
}

// In the last block: acc = the combination of partial `v` of every block, in block order (each
// lane of a slot reads every lanes-th block).
void readPartials(EmitContext& ctx, const C::ExprP& counter, const Partial& v, const C::ExprP& acc,
                  std::vector<C::Stmt>& last) {
  const int64_t R = ctx.plan.crossBlock.blocks, lanes = ctx.red.lanes;
  const int64_t trips = (R + lanes - 1) / lanes;
  C::ExprP lane = lanes > 1 ? ctx.red.lane : lit(0);
  last.push_back(C::assign(acc, "=", reductionIdentity(v.red->get()->reduceOp, v.type)));
  std::string c = ctx.names.fresh("c"), b = ctx.names.fresh("b");
  std::vector<C::Stmt> body{C::decl(ctx.idx, b, C::sum({C::product(C::name(c), lit(lanes)), lane}))};
  C::Stmt add = combine(v.red->get()->reduceOp, v.type, acc,
                        C::call("__ldcg", {C::unary("&", partialAt(ctx, counter, v, C::name(b)))}));
  if (trips * lanes != R) body.push_back(C::ifThen(C::binary("<", C::name(b), lit(R)), {add}));
  else body.push_back(add);
  last.push_back(C::forLoop(ctx.idx, c, lit(0), lit(trips), C::Unroll::Default, std::move(body)));
}

}  // namespace

// The combination across the blocks of a tile (see crossBlockPlan in schedule/Domain.h), at one
// position of the serial parts of the parallel indices (`position`, linear): every block stores
// its partials (`accs`, per register point, already combined over the block's lanes) and counts
// itself in; the last block, point by point, reads back every block's partials of the point in
// block order into `accs`, combines them, and runs the point's statements (`pointStatements`).
// In groups of points whose partials are about kCombineLoadsInFlight loads: all of a group's reads
// first, then its statements. All points' reads first left NVCC hundreds of loads to hoist, and it
// spilled; one point at a time serialized the tile on memory latency (a point's reads wait for the
// previous point's store, which the reads may alias for all the compiler knows). Measurements:
// docs/bench.md, "Decisions and their measurements".
void crossBlockCombine(EmitContext& ctx, const PointAccumulators& accs, const C::ExprP& position,
                       std::vector<C::Stmt>& out, std::vector<std::vector<C::Stmt>> pointStatements) {
  const CrossBlockPlan& xb = ctx.plan.crossBlock;
  const int64_t R = xb.blocks, lanes = ctx.red.lanes;
  C::ExprP counter = C::sum({C::product(ctx.red.tile, lit(xb.positions)), position});
  out.push_back(C::comment(fmt::format(
      "Combine across the {} blocks of this output tile: each block stores its partials in global scratch;\n"
      "the last block to arrive combines them all in block order (the same result whichever block is last)",
      R)));
  if (counter->kind != C::ExprKind::IntLit) {
    std::string n = ctx.names.fresh("counter");
    out.push_back(C::decl(ctx.idx, n, counter));
    counter = C::name(n);
  }
  const std::vector<Partial> values = partialsOf(ctx);
  storeAndArrive(ctx, accs, counter, values, out);

  std::vector<C::Stmt> last{C::exprStmt(C::call("__threadfence", {}))};
  const int64_t trips = (R + lanes - 1) / lanes;
  RTCG_ASSERT(int64_t(pointStatements.size()) == xb.regPoints, "one list of statements per register point");
  const int64_t loadsPerPoint = std::max<int64_t>(1, int64_t(values.size()) / xb.regPoints * trips);
  const int64_t groupPoints = std::max<int64_t>(1, kCombineLoadsInFlight / loadsPerPoint);
  for (int64_t first = 0; first < xb.regPoints; first += groupPoints) {
    const int64_t end = std::min(xb.regPoints, first + groupPoints);
    for (const Partial& v : values)
      if (v.point >= first && v.point < end) readPartials(ctx, counter, v, accs[v.point].at(v.red->get()), last);
    for (int64_t pt = first; pt < end; ++pt) {
      if (lanes > 1)
        for (const Partial& v : values)
          if (v.point == pt)
            combineLanes(ctx, v.red->get()->reduceOp, v.type, accs[v.point].at(v.red->get()), last, ctx.facts.fullMask);
      append(last, std::move(pointStatements[pt]));
    }
  }
  out.push_back(C::ifThen(C::name(ctx.red.lastBlock), std::move(last)));
}

// Whether every array the reductions of group `g` read is served from a shared tile (in `env`),
// and they contain no nested reduction: then a point outside the domain reads inside the tiles
// (a tile spans the block's points, or is the whole array with clamped indices: StageRef::clampTo).
bool readsOnlyTiles(const EmitContext& ctx, const std::vector<Expr>& g, const Env& env) {
  auto other = [&](const Expr& e) {
    return e->kind == ExprKind::Reduce || (e->kind == ExprKind::Load && !findStaged(ctx, env, e->array, e->operands));
  };
  return std::none_of(g.begin(), g.end(), [&](const Expr& r) { return anyExpr(r->operands[0], other); });
}

}  // namespace rtcg::emit
