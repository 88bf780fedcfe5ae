// The emitter's view of a nest's plan (schedule/Plan.h): the parallel indices with their parts and
// strides, where each value and guard is known, the register points, the loops around a position,
// the pipelined positions and the tiles' element offsets. Everything the schedule means is read
// from the plan; only what code emission needs beside it (loops, levels, C names) is added here,
// before any code is emitted.
#include <algorithm>
#include <set>

#include "codegen/EmitContext.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// The parallel indices with the plan's part extents and strides, and the level at which each value
// is known.
void planParallelIndices(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  for (const NestIndex& ni : f.indices) {
    if (!ni.parallel) continue;
    const IndexPlan* ip = ctx.plan.index(ni.name);
    RTCG_ASSERT(ip != nullptr, "planned nest lacks index " + ni.name);
    ParallelIndex p;
    p.ni = &ni;
    p.loop = ni.loops.front();
    p.sched = &ctx.plan.clauseOf(*ip);
    p.ext = ip->extents;
    p.stride = ip->strides;
    p.exact = ip->exact;
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

// The register parts (in clause order) and the serial/unrolled loop parts around a position.
void planPointsAndLoops(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  for (const IndexSchedule& is : ctx.sched.indices)
    for (size_t pi = 0; pi < f.par.size(); ++pi)
      if (f.par[pi].sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Reg) f.regParts.push_back({(int)pi, (int)part, f.par[pi].ext[part]});
  for (const IndexSchedule& is : ctx.sched.indices)
    for (ParallelIndex& p : f.par)
      if (p.sched == &is)
        for (size_t part = 0; part < is.parts.size(); ++part)
          if (is.parts[part].place == Placement::Serial || is.parts[part].place == Placement::Unroll)
            f.loopParts.push_back({&p, part});
}

// The plan's pipelined positions, pointing at the emitter's parallel index.
void pipelinedPositions(EmitContext& ctx) {
  const PositionPipeline& pp = ctx.plan.pipeline;
  if (!pp.any()) return;
  LaunchFacts& f = ctx.facts;
  for (ParallelIndex& p : f.par)
    if (p.loop->name == pp.index) f.pipe.par = &p;
  RTCG_ASSERT(f.pipe.par != nullptr, "pipelined index is not parallel: " + pp.index);
  f.pipe.group = pp.group;
  f.pipe.part = pp.part;
  f.pipe.stepBase = lit(pp.stepBase);
}

// Dynamic shared memory is one array per element type: a tile's byte offset in elements of its type.
void tileOffsets(EmitContext& ctx) {
  const std::vector<StagedArray>& arrays = ctx.plan.staging.arrays;
  for (size_t t = 0; t < arrays.size(); ++t)
    ctx.facts.tileOffsets.push_back(
        ctx.plan.dynamicShared ? ctx.plan.tileByteOffsets[t] / typeBytes(ctx.k.params[arrays[t].array].type) : 0);
}

}  // namespace

void planLaunch(EmitContext& ctx) {
  LaunchFacts& f = ctx.facts;
  // The nest's indices with their loops (the kernel's domain, not a schedule fact: the plan keeps
  // only their names and hulls).
  std::string err;
  auto indices = nestIndices(ctx.k, ctx.nestIdx, &err);
  RTCG_ASSERT(indices.has_value(), "validated nest has unbounded indices: " + err);
  f.indices = std::move(*indices);
  for (const NestIndex& ni : f.indices)
    for (const Loop* l : ni.loops) f.ranges[l->id] = ni.hull;
  planParallelIndices(ctx);
  const LaunchPlan& l = ctx.plan.launch;
  std::copy(l.grid, l.grid + 3, f.grid.begin());
  std::copy(l.block, l.block + 3, f.block.begin());
  f.threads = l.threads;
  f.regPoints = l.regPoints;
  f.fullMask = l.reductionThreadAxes;
  // Cooperative code guards each point instead of returning early or skipping whole groups.
  f.cooperative = ctx.plan.cooperative;
  if (f.cooperative)
    for (ParallelIndex& p : f.par) p.guardLevel = Level::Point;
  tileOffsets(ctx);
  planPointsAndLoops(ctx);
  pipelinedPositions(ctx);
}

}  // namespace rtcg::emit
