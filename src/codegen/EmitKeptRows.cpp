// `keep: x` (KeptRow, schedule/Plan.h): the values of x that several fused nests read at one
// access stay in a thread's array, declared once for the fused function (EmitFusion.cpp). The
// nest that reads them first loads every one of them before anything uses them (all loads in
// flight at once), the later nests read the array instead of memory. A value's place in the array
// (its slot) is the mixed-radix number of the kept index's serial and unroll parts; the loops of
// those parts are fully unrolled in every reader, so that each slot is a constant and the array
// lives in registers (an array indexed by a variable would go to local memory).
#include <fmt/format.h>

#include <utility>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "ir/Analysis.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

const KeptState* keptOf(const EmitContext& ctx, const std::string& index) {
  for (const KeptState& s : ctx.kept)
    if (s.row->index == index) return &s;
  return nullptr;
}

// The loop id that `indices` give the index named `name` (-1: none): the loading nest's own.
int loopIdIn(const std::vector<Expr>& indices, const std::string& name) {
  int id = -1;
  for (const Expr& e : indices)
    visitExprs(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Var && x->varKind == VarKind::Index && x->name == name) id = x->varId;
    });
  return id;
}

// sum over the serial and unroll parts p of vars[p] * (the product of the extents of such parts
// after p): the slot of the thread's value at these loop variables ("" for the thread parts).
C::ExprP slotOf(const std::vector<SchedulePart>& parts, const std::vector<int64_t>& ext,
                const std::vector<std::string>& vars) {
  std::vector<C::ExprP> terms;
  int64_t scale = 1;
  for (size_t p = parts.size(); p-- > 0;) {
    if (isThreadPlacement(parts[p].place)) continue;
    terms.push_back(C::product(C::name(vars[p]), lit(scale)));
    scale *= ext[p];
  }
  return terms.empty() ? lit(0) : C::sum(terms);
}

}  // namespace

C::Unroll keptUnroll(const EmitContext& ctx, const std::string& index, Placement place) {
  return keptOf(ctx, index) ? C::Unroll::Full : unrollOf(place);
}

void setKeptSlot(const EmitContext& ctx, const std::string& index, const std::vector<int64_t>& ext,
                 const std::vector<std::string>& vars, Env& env) {
  if (const KeptState* s = keptOf(ctx, index)) env.keptSlots[index] = slotOf(s->row->parts, ext, vars);
}

void setKeptSlotOfSerial(const EmitContext& ctx, const Loop& l, const C::ExprP& value, Env& env) {
  if (const KeptState* s = keptOf(ctx, l.name))
    env.keptSlots[l.name] = s->row->lo == 0 ? value : C::binary("-", value, lit(s->row->lo));
}

C::ExprP keptRead(const EmitContext& ctx, int array, const std::vector<Expr>& indices, const Env& env) {
  for (const KeptState& s : ctx.kept) {
    if (s.row->array != array || accessKey(ctx.k, indices) != s.row->access) continue;
    auto slot = env.keptSlots.find(s.row->index);
    RTCG_ASSERT(slot != env.keptSlots.end(), "a kept row is read where its index's slot is unknown");
    return C::index(C::name(s.storage), slot->second);
  }
  return nullptr;
}

void loadKeptRows(EmitContext& ctx, const Env& env, std::vector<C::Stmt>& body) {
  // The loads read memory: while they are lowered, no row is kept (lowerAccess would serve them
  // from the array they fill).
  const std::vector<KeptState> rows = std::exchange(ctx.kept, {});
  for (const KeptState& s : rows) {
    if (!s.loads) continue;
    const KeptRow& r = *s.row;
    const IndexSchedule clause{r.index, r.parts};
    const std::vector<int64_t> ext = partExtents(clause, r.extent);
    // One read of the row in this nest: its indices, lowered at the thread's values.
    std::vector<Expr> indices;
    for (const Access& a : collectAccesses(ctx.k, ctx.nestIdx))
      if (a.array == r.array && !a.isWrite) {
        indices = a.indices;
        break;
      }
    RTCG_ASSERT(!indices.empty(), "the loading nest of a kept row reads it");
    std::vector<std::string> vars(r.parts.size());
    std::vector<C::ExprP> terms{lit(r.lo)};
    int64_t stride = 1, covered = 1;
    for (size_t p = r.parts.size(); p-- > 0;) {
      const Placement pl = r.parts[p].place;
      if (isThreadPlacement(pl)) {
        terms.push_back(C::product(coordinate(ctx, "threadIdx", placementAxis(pl)), lit(stride)));
      } else {
        vars[p] = ctx.names.fresh(fmt::format("{}_{}", r.index, p));
        terms.push_back(C::product(C::name(vars[p]), lit(stride)));
      }
      stride *= ext[p], covered *= ext[p];
    }
    Env lenv = env;
    const std::string v = ctx.names.fresh(r.index);
    lenv.vars[loopIdIn(indices, r.index)] = C::name(v);
    std::vector<C::Stmt> inner{C::decl(ctx.idx, v, C::sum(terms))};
    // Past the range (sizes the threads do not divide), or past the shared index's range (a block
    // of several rows), the slot is never read: it gets 0 instead of a load out of bounds.
    C::ExprP guard = covered == r.extent ? nullptr : C::binary("<", C::name(v), lit(r.lo + r.extent));
    for (const ParallelIndex& p : ctx.facts.par)
      if (p.loop->id == ctx.nest.loops[0].id && !p.exact)
        guard = andAll(guard, C::binary("<", lenv.vars.at(p.loop->id), lower(ctx, p.loop->hi, lenv, inner)));
    const ScalarType type = ctx.k.params[size_t(r.array)].type;
    C::ExprP load = lowerAccess(ctx, r.array, indices, lenv, inner);
    if (guard) load = C::ternary(guard, load, literalOf(type, 0, 0.0));
    inner.push_back(C::assign(C::index(C::name(s.storage), slotOf(r.parts, ext, vars)), "=", load));
    for (size_t p = r.parts.size(); p-- > 0;) {
      if (vars[p].empty()) continue;
      std::vector<C::Stmt> loop{C::forLoop(ctx.idx, vars[p], lit(0), lit(ext[p]), C::Unroll::Full, std::move(inner))};
      inner = std::move(loop);
    }
    body.push_back(C::comment(fmt::format("Kept row: {}[{}] at the thread's {} value{} of '{}', all loaded before any "
                                          "use; the later fused nests read them from registers",
                                          ctx.k.params[size_t(r.array)].name, r.access, r.count,
                                          r.count == 1 ? "" : "s", r.index)));
    append(body, std::move(inner));
  }
  ctx.kept = rows;
}

}  // namespace rtcg::emit
