// The launch and index facts of one nest under its schedule: the parallel indices' parts and
// strides, where each value and guard is known, the grid and block, the register points, the
// loops around a position, the hoisted reductions, the staging and cross-block plans, where the
// tiles live in shared memory, and the position pipeline. Computed here and nowhere else, before any code is emitted.
#include <algorithm>
#include <set>

#include "codegen/EmitContext.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// Part extents and strides of the parallel indices, and the level at which each value is known.
void planParallelIndices(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  for (const NestIndex& ni : f.indices) {
    if (!ni.parallel) continue;
    ParallelIndex p;
    p.ni = &ni;
    p.loop = ni.loops.front();
    p.sched = &ctx.scheduleOf(ni.name);
    p.ext = partExtents(*p.sched, ni.hull.extent());
    p.stride.assign(p.ext.size(), 1);
    for (size_t q = p.ext.size() - 1; q-- > 0;) p.stride[q] = p.stride[q + 1] * p.ext[q + 1];
    int64_t covered = p.stride[0] * p.ext[0];
    p.exact = ni.constantBounds && covered == ni.hull.extent();
    for (const SchedulePart& part : p.sched->parts) {
      if (part.place == Placement::Reg) p.level = Level::Point;
      else if ((part.place == Placement::Serial || part.place == Placement::Unroll) && p.level == Level::Top)
        p.level = Level::Group;
    }
    p.loopVars.resize(p.ext.size());
    f.par.push_back(std::move(p));
  }
  // A guard is checked once every index its bounds mention is known.
  for (ParallelIndex& p : f.par) {
    p.guardLevel = p.level;
    std::set<int> refs;
    auto collect = [&](const Expr& e) {
      if (e->kind == ExprKind::Var && e->varKind == VarKind::Index) refs.insert(e->varId);
    };
    visitExprs(p.loop->lo, collect);
    visitExprs(p.loop->hi, collect);
    for (const ParallelIndex& o : f.par)
      if (refs.count(o.loop->id)) p.guardLevel = std::max(p.guardLevel, o.level);
  }
}

// The grid and block: the grid and thread parts of every index. Thread parts of reduction
// indices split reductions across threads (LaunchFacts::fullMask).
void planLaunchShape(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  for (const ParallelIndex& p : f.par)
    for (size_t part = 0; part < p.ext.size(); ++part) {
      Placement pl = p.sched->parts[part].place;
      int axis = placementAxis(pl);
      if (axis >= 0) (isGridPlacement(pl) ? f.grid : f.block)[axis] *= p.ext[part];
    }
  for (const NestIndex& ni : f.indices) {
    if (ni.parallel) continue;
    const IndexSchedule& is = ctx.scheduleOf(ni.name);
    std::vector<int64_t> ext = partExtents(is, ni.hull.extent());
    for (size_t part = 0; part < ext.size(); ++part) {
      Placement pl = is.parts[part].place;
      if (isThreadPlacement(pl)) {
        f.block[placementAxis(pl)] *= ext[part];
        f.fullMask |= 1 << placementAxis(pl);
      } else if (isGridPlacement(pl)) {
        f.grid[placementAxis(pl)] *= ext[part];
      }
    }
  }
  f.threads = f.block[0] * f.block[1] * f.block[2];
}

// Register points (in clause order) and the serial/unrolled loop parts around a position.
void planPointsAndLoops(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  for (const IndexSchedule& is : ctx.sched.indices)
    for (size_t pi = 0; pi < f.par.size(); ++pi)
      if (f.par[pi].sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Reg) {
            f.regParts.push_back({(int)pi, (int)part, f.par[pi].ext[part]});
            f.regPoints *= f.par[pi].ext[part];
          }
  for (const IndexSchedule& is : ctx.sched.indices)
    for (ParallelIndex& p : f.par)
      if (p.sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Serial || is.parts[part].place == Placement::Unroll)
            f.loopParts.push_back({&p, part});
}

// Positions pipelined: when a block takes the whole reduction of the group staged per step in one
// step, that step's tiles move only with the serial parts of parallel indices, and copying them
// with 'buffers: N' would just stall each position on its own copy. With one serial part of more
// than one position innermost ('k: grid.x, serial 16, thread.y 8, ...'), the copies run N - 1
// positions ahead instead, as they run steps ahead along a reduction (copyStep): a block then
// streams its tiles while it computes, like a persistent GEMM kernel. Sets facts.pipe when that
// applies.
void findPositionPipeline(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  if (ctx.sched.buffers < 2 || f.xb.any()) return;
  int group = -1;
  for (size_t g = 0; g < f.groups.size(); ++g)
    if (hasStepStaging(ctx, (int)g)) {
      if (group >= 0) return;  // several step groups: each keeps its own steps
      group = (int)g;
    }
  if (group < 0) return;
  const Loop& l = f.groups[group][0]->loops.front();
  const IndexSchedule& is = ctx.scheduleOf(l.name);
  auto clo = constIntValue(l.lo, ctx.k), chi = constIntValue(l.hi, ctx.k);
  if (!clo || !chi || stepPartOf(is) != 0 || stepSpanOf(is) < *chi - *clo) return;
  // The innermost serial part of more than one position; inner ones have one position each.
  const std::vector<LoopPart>& loopParts = f.loopParts;
  size_t q = loopParts.size();
  while (q > 0 && loopParts[q - 1].p->ext[loopParts[q - 1].part] == 1) --q;
  if (q == 0) return;
  const LoopPart& lp = loopParts[q - 1];
  if (lp.p->sched->parts[lp.part].place != Placement::Serial) return;
  // The tiles must move with it (else one copy per block would do: a Block-level tile).
  bool moves = false;
  for (const StagedArray& sa : f.staging.arrays)
    if (sa.level == StageLevel::Step && sa.group == group) moves = moves || movesWith(sa, lp.p->loop->name);
  if (!moves) return;
  f.pipe.group = group;
  f.pipe.par = lp.p;
  f.pipe.part = lp.part;
  f.pipe.stepBase = lit(*clo);
}

// Tiles: static shared arrays up to 48 KiB, else slices of dynamic shared memory (each tile
// 16-byte aligned; the launch then provides the bytes). The static limit covers what the
// reductions declare too: a combine buffer per accumulator type (with reduction thread axes) and
// the last-block flag (a reduction split across blocks); a 48 KiB tile plus the 1-byte flag does
// not compile.
void planSharedMemory(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  int64_t staticExtra = f.xb.any() ? 16 : 0;
  int64_t lanes = 1;
  for (int a = 0; a < 3; ++a)
    if (f.fullMask & (1 << a)) lanes *= f.block[a];
  if (lanes > 1)
    for (ScalarType t : combineBufferTypes(ctx)) staticExtra += f.threads * typeBytes(t);
  f.dynamicShared = f.staging.bytes + staticExtra > 48 * 1024;
  int64_t byteOffset = 0;
  for (const StagedArray& sa : f.staging.arrays) {
    f.tileOffsets.push_back(f.dynamicShared ? byteOffset / typeBytes(ctx.k.params[sa.array].type) : 0);
    if (f.dynamicShared) byteOffset += (sa.bytes + 15) / 16 * 16;
  }
  f.dynamicSharedBytes = byteOffset;
}

}  // namespace

void planLaunch(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  std::string err;
  auto indices = nestIndices(ctx.k, ctx.nestIdx, &err);
  RTCG_ASSERT(indices.has_value(), "validated nest has unbounded indices: " + err);
  f.indices = std::move(*indices);
  for (const NestIndex& ni : f.indices)
    for (const Loop* l : ni.loops) f.ranges[l->id] = ni.hull;
  f.xb = crossBlockPlan(ctx.k, ctx.nestIdx, ctx.sched);
  planParallelIndices(ctx);
  // Reductions computed ahead of the statements (so that register-tile points share one pass over
  // the reduction loops, and reductions over the same loops share one loop): see
  // hoistedReductionGroups.
  f.groups = hoistedReductionGroups(ctx.k, ctx.nestIdx, ctx.sched);
  f.staging = planStaging(ctx.k, ctx.nestIdx, ctx.sched);
  RTCG_ASSERT(f.staging.errors.empty(), "validated staging has errors");
  planLaunchShape(ctx);
  // Staged tiles, reductions across threads, and the blocks of a tile meeting at barriers around
  // the arrival count all make cooperative code, which guards each point instead of returning
  // early or skipping whole groups.
  f.cooperative = !f.staging.arrays.empty() || f.fullMask != 0 || f.xb.any();
  if (f.cooperative)
    for (ParallelIndex& p : f.par) p.guardLevel = Level::Point;
  planSharedMemory(ctx);
  planPointsAndLoops(ctx);
  findPositionPipeline(ctx);
}

}  // namespace rtcg::emit
