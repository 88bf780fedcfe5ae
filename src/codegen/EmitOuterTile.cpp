// An outer reduction's register tile (OuterTile, schedule/Domain.h): a reg part on the index of a
// reduction whose body holds reductions (`min(j in 0..m, sum(e in 0..D, ...))` under `j: serial,
// reg 4`). At each step of the outer loop the thread evaluates the body for its R values of j at
// once: the inner reductions take one pass over their loops updating an accumulator per value of
// j and register point of the parallel indices (the unrolled body reads each q[i, e] once for
// the R values of j and each r[j, e] once for the points of i: the register tile of a matrix
// product), then each value's body is folded into the point's accumulator of the outer reduction
// (the epilogue of a matrix-product step). Values past the range read at its last value and are
// left out of the fold.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// The thread's values of the outer index at this step: for reads (clamped into the range where
// values may lie past it) and for the fold's guard (null: always in range).
struct OuterValues {
  std::vector<C::ExprP> read;
  std::vector<C::ExprP> inRange;
};

OuterValues declareOuterValues(EmitContext& ctx, const std::string& name, const Env& renv, std::vector<C::Stmt>& out) {
  const RegisterValues& rv = renv.regValues;
  OuterValues v;
  const C::ExprP base = renv.vars.at(rv.loop);
  for (int64_t r = 0; r < rv.extent; ++r) {
    if (r == 0) {  // the base is in range (the step's guard)
      v.read.push_back(base);
      v.inRange.push_back(nullptr);
      continue;
    }
    C::ExprP raw = C::sum({base, lit(r * rv.stride)});
    C::ExprP value = rv.guarded ? C::call("min", {raw, C::binary("-", rv.hi, lit(1))}) : raw;
    std::string n = ctx.names.fresh(fmt::format("{}_v{}", name, r));
    out.push_back(C::decl(ctx.idx, n, value));
    v.read.push_back(C::name(n));
    v.inRange.push_back(rv.guarded ? C::binary("<", raw, rv.hi) : nullptr);
  }
  return v;
}

// `env` with the outer index of every reduction of group `g` at `value`.
void setOuter(const std::vector<Expr>& g, const C::ExprP& value, Env& env) {
  for (const Expr& r : g) env.vars[r->loops[0].id] = value;
}

}  // namespace

void emitOuterTileStep(EmitContext& ctx, size_t gi, const Env& renv, const PointAccumulators& accs,
                       std::vector<C::Stmt>& out) {
  const std::vector<Expr>& g = ctx.plan.groups[gi];
  const OuterTile& tile = ctx.plan.outerTile;
  RTCG_ASSERT(renv.regValues.loop >= 0 && renv.regValues.extent == tile.extent, "outer tile without its reg part");
  const int64_t points = ctx.facts.regPoints, R = tile.extent;
  std::vector<C::Stmt> step;
  const OuterValues values = declareOuterValues(ctx, g[0]->loops[0].name, renv, step);
  // The inner accumulators, per (point, value): inner[point * R + value][reduction].
  PointAccumulators inner((size_t)(points * R));
  for (int64_t pt = 0; pt < points; ++pt)
    for (int64_t r = 0; r < R; ++r)
      for (const std::vector<Expr>& ig : tile.inner)
        for (const Expr& red : ig) {
          std::string n = ctx.names.fresh(
              fmt::format("{}_{}_p{}v{}", reduceName(red->reduceOp), red->loops.front().name, pt, r));
          step.push_back(C::decl(cudaTypeName(red->type), n, reductionIdentity(red->reduceOp, red->type), false));
          inner[(size_t)(pt * R + r)][red.get()] = C::name(n);
        }
  // One pass over each inner group's loops for every point and value.
  for (const std::vector<Expr>& ig : tile.inner) {
    emitReductionLoops(ctx, ig[0]->loops, 0, renv, step, [&](Env& ienv, std::vector<C::Stmt>& body) {
      for (const Expr& red : ig)
        for (size_t q = 0; q < red->loops.size(); ++q) ienv.vars[red->loops[q].id] = ienv.vars.at(ig[0]->loops[q].id);
      for (int64_t pt = 0; pt < points; ++pt)
        for (int64_t r = 0; r < R; ++r) {
          Env penv = ienv;
          setOuter(g, values.read[(size_t)r], penv);
          std::vector<C::Stmt> pbody;
          C::ExprP guard;
          declarePointIndices(ctx, pt, penv, pbody, guard);
          std::vector<C::Stmt> updates;
          for (const Expr& red : ig)
            updates.push_back(combine(red->reduceOp, red->type, inner[(size_t)(pt * R + r)].at(red.get()),
                                      lower(ctx, red->operands[0], penv, updates)));
          // Values past the range read inside it; points outside the domain that read only
          // shared tiles accumulate garbage they never fold (unguarded: vector reads).
          appendGuarded(guard && !readsOnlyTiles(ctx, ig, penv) ? guard : nullptr, std::move(updates), pbody);
          body.push_back(C::block(std::move(pbody)));
        }
    });
  }
  // The fold: each value's body, from its inner results, into the point's accumulators.
  for (int64_t pt = 0; pt < points; ++pt)
    for (int64_t r = 0; r < R; ++r) {
      Env penv = renv;
      setOuter(g, values.read[(size_t)r], penv);
      for (const auto& [node, acc] : inner[(size_t)(pt * R + r)]) penv.hoisted[node] = acc;
      std::vector<C::Stmt> pbody;
      C::ExprP guard;
      declarePointIndices(ctx, pt, penv, pbody, guard);
      std::vector<C::Stmt> updates;
      for (const Expr& red : g)
        updates.push_back(combine(red->reduceOp, red->type, accs[(size_t)pt].at(red.get()),
                                  lower(ctx, red->operands[0], penv, updates)));
      appendGuarded(andAll(guard, values.inRange[(size_t)r]), std::move(updates), pbody);
      step.push_back(C::block(std::move(pbody)));
    }
  out.push_back(C::block(std::move(step)));
}

}  // namespace rtcg::emit
