// Steps over a block's hull of a varying reduction range (BlockHullSteps in schedule/Domain.h):
// the bounds every thread of the block steps through (so that the tiles staged per step, and their
// barriers, are the same for all), the values inside every thread's range (steps there run
// unguarded), and each thread's own range (the guard of the other steps).
#include <fmt/format.h>

#include "codegen/EmitContext.h"

namespace rtcg::emit {

const BlockHullSteps* blockHullOf(const EmitContext& ctx, int group) {
  for (const BlockHullSteps& bh : ctx.plan.staging.blockHulls)
    if (bh.group == group) return &bh;
  return nullptr;
}

HullSteps hullSteps(EmitContext& ctx, const BlockHullSteps& bh, const Loop& l, Env& env, std::vector<C::Stmt>& out) {
  const std::map<std::string, C::ExprP> bases = tileBases(ctx);
  // The bound at the block's bases, plus `constant` (HullBound::least or most).
  auto at = [&](const HullBound& b, int64_t constant) {
    std::vector<C::ExprP> terms{lit(constant)};
    for (const auto& [key, c] : b.coeffs) terms.push_back(C::product(bases.at(key), lit(c)));
    return C::sum(terms);
  };
  auto declared = [&](const char* what, const C::ExprP& v) {
    std::string n = ctx.names.fresh(fmt::format("{}_{}", l.name, what));
    out.push_back(C::decl(ctx.idx, n, v));
    return C::name(n);
  };
  HullSteps h;
  out.push_back(C::comment(fmt::format("The block's steps along '{}' cover the union of its threads' ranges; each "
                                       "thread keeps its own", l.name)));
  // The union, clamped to the hull (points outside the domain do not widen it); the intersection
  // need not be: a smaller one only guards more steps.
  h.lo = bh.lo.varies() ? declared("block_lo", C::call("max", {at(bh.lo, bh.lo.least), lit(bh.hull.lo)}))
                        : lit(bh.lo.least);
  h.hi = bh.hi.varies() ? declared("block_hi", C::call("min", {at(bh.hi, bh.hi.most), lit(bh.hull.hi + 1)}))
                        : lit(bh.hi.most);
  h.fullLo = bh.lo.varies() ? declared("all_lo", at(bh.lo, bh.lo.most)) : h.lo;
  h.fullHi = bh.hi.varies() ? declared("all_hi", C::call("min", {at(bh.hi, bh.hi.least), h.hi})) : h.hi;
  // A bound on register-tile indices is checked per point (pointRangeGuard); others per thread.
  if (bh.lo.varies() && !namesPointIndex(ctx, l.lo, env)) h.ownLo = declared("lo", lower(ctx, l.lo, env, out));
  if (bh.hi.varies() && !namesPointIndex(ctx, l.hi, env)) h.ownHi = declared("hi", lower(ctx, l.hi, env, out));
  return h;
}

C::ExprP ownRangeGuard(const HullSteps& h, const C::ExprP& v) {
  C::ExprP guard;
  if (h.ownLo) guard = andAll(guard, C::binary(">=", v, h.ownLo));
  if (h.ownHi) guard = andAll(guard, C::binary("<", v, h.ownHi));
  return guard;
}

C::ExprP fullStep(const HullSteps& h, const C::ExprP& start, int64_t span) {
  C::ExprP full = C::binary("<=", C::sum({start, lit(span)}), h.fullHi);
  if (h.fullLo != h.lo) full = C::binary("&&", C::binary(">=", start, h.fullLo), full);
  return full;
}

}  // namespace rtcg::emit
