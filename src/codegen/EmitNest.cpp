// The kernel function of one loop nest: its parameters, the indices of a thread, the guards, the
// loops over positions (serial parts of parallel indices) around the work of one position, and
// in that work the accumulators, the hoisted reductions, and the statements of each register
// point. The launch facts come from planLaunch (EmitLaunch.cpp).
#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <set>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "ir/Analysis.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

// ---------------------------------------------------------------------------------------------
// Small helpers

const IndexSchedule& EmitContext::scheduleOf(const std::string& name) const {
  const IndexSchedule* s = sched.find(name);
  RTCG_ASSERT(s != nullptr, "validated schedule lacks index " + name);
  return *s;
}

C::ExprP coordinate(const EmitContext& ctx, const char* builtin, int axis) {
  static const char* axisField[3] = {"x", "y", "z"};
  return C::castTo(ctx.idx, C::member(C::name(builtin), axisField[axis]));
}

C::ExprP negate(const C::ExprP& e) {
  if (e->kind == C::ExprKind::Binary) {
    static const std::map<std::string, std::string> flipped = {{"<", ">="}, {">=", "<"}, {">", "<="},
                                                               {"<=", ">"}, {"==", "!="}, {"!=", "=="}};
    auto it = flipped.find(e->text);
    if (it != flipped.end()) return C::binary(it->second, e->args[0], e->args[1]);
    if (e->text == "&&") return C::binary("||", negate(e->args[0]), negate(e->args[1]));
  }
  return C::unary("!", e);
}

C::ExprP andAll(C::ExprP a, C::ExprP b) {
  if (!a) return b;
  if (!b) return a;
  return C::binary("&&", a, b);
}

void append(std::vector<C::Stmt>& to, std::vector<C::Stmt>&& from) {
  for (C::Stmt& s : from) to.push_back(std::move(s));
}

void appendGuarded(const C::ExprP& guard, std::vector<C::Stmt>&& stmts, std::vector<C::Stmt>& out) {
  if (guard) out.push_back(C::ifThen(guard, std::move(stmts)));
  else append(out, std::move(stmts));
}

// ---------------------------------------------------------------------------------------------
// Index values and guards

// The register coordinates of point `point`: mixed radix, the first reg part most significant.
std::vector<int64_t> regValuesOf(const EmitContext& ctx, int64_t point) {
  const std::vector<RegPart>& regParts = ctx.facts.regParts;
  std::vector<int64_t> v(regParts.size());
  for (size_t r = regParts.size(); r-- > 0;) {
    v[r] = point % regParts[r].extent;
    point /= regParts[r].extent;
  }
  return v;
}

namespace {

// The condition under which index `p` is inside the domain (null when it always is).
C::ExprP guardOf(EmitContext& ctx, const ParallelIndex& p, Env& env, std::vector<C::Stmt>& out) {
  if (p.exact) return nullptr;
  C::ExprP v = env.vars.at(p.loop->id);
  C::ExprP cond = C::binary("<", v, lower(ctx, p.loop->hi, env, out));
  if (!constIntValue(p.loop->lo, ctx.k)) cond = C::binary("&&", C::binary(">=", v, lower(ctx, p.loop->lo, env, out)), cond);
  return cond;
}

// The guards of every index checked at `level`, declared into `out`, and-ed (null: none).
C::ExprP guardsAt(EmitContext& ctx, Level level, Env& env, std::vector<C::Stmt>& out) {
  C::ExprP guard;
  for (ParallelIndex& p : ctx.facts.par)
    if (p.guardLevel == level) guard = andAll(guard, guardOf(ctx, p, env, out));
  return guard;
}

}  // namespace

C::ExprP pointGuard(EmitContext& ctx, Env& env, std::vector<C::Stmt>& out) {
  C::ExprP guard;
  for (ParallelIndex& p : ctx.facts.par)
    if (p.guardLevel != Level::Top || ctx.facts.cooperative) guard = andAll(guard, guardOf(ctx, p, env, out));
  return guard;
}

C::ExprP rangeGuard(EmitContext& ctx, const Expr& read, Env& env, std::vector<C::Stmt>& out) {
  std::set<int> ids;
  visitExprs(read, [&](const Expr& x) {
    if (x->kind == ExprKind::Var && x->varKind == VarKind::Index) ids.insert(x->varId);
  });
  C::ExprP guard;
  for (ParallelIndex& p : ctx.facts.par) {
    // Threads outside a top-level guard have returned, unless the code is cooperative.
    if (!ids.count(p.loop->id) || (p.guardLevel == Level::Top && !ctx.facts.cooperative)) continue;
    guard = andAll(guard, guardOf(ctx, p, env, out));
  }
  return guard;
}

// The value of a parallel index at the current loop position and register point.
C::ExprP indexValue(EmitContext& ctx, const ParallelIndex& p, const std::vector<int64_t>* regValues) {
  std::vector<C::ExprP> terms{p.base};
  int pi = (int)(&p - ctx.facts.par.data());
  for (size_t part = 0; part < p.sched->parts.size(); ++part) {
    Placement pl = p.sched->parts[part].place;
    if (pl == Placement::Serial || pl == Placement::Unroll) {
      terms.push_back(C::product(C::name(p.loopVars[part]), lit(p.stride[part])));
    } else if (pl == Placement::Reg) {
      RTCG_ASSERT(regValues != nullptr, "register part outside a point");
      for (size_t r = 0; r < ctx.facts.regParts.size(); ++r)
        if (ctx.facts.regParts[r].par == pi && ctx.facts.regParts[r].part == (int)part)
          terms.push_back(lit((*regValues)[r] * p.stride[part]));
    }
  }
  return C::sum(terms);
}

// The indices known per register point at point `point`, and their guards (and-ed into `guard`).
void declarePointIndices(EmitContext& ctx, int64_t point, Env& env, std::vector<C::Stmt>& out, C::ExprP& guard) {
  std::vector<int64_t> rv = regValuesOf(ctx, point);
  for (ParallelIndex& p : ctx.facts.par) {
    if (p.level != Level::Point) continue;
    // Every point declares its indices in a scope of its own, under the same names.
    if (p.pointName.empty()) p.pointName = ctx.names.fresh(p.loop->name);
    const std::string& n = p.pointName;
    out.push_back(C::decl(ctx.idx, n, indexValue(ctx, p, &rv)));
    env.vars[p.loop->id] = C::name(n);
  }
  guard = andAll(guard, guardsAt(ctx, Level::Point, env, out));
}

namespace {

// ---------------------------------------------------------------------------------------------
// The top of the function

// Parameters: sizes are already substituted into the bound IR as constants (the header comment
// lists their values); everything else is an argument.
// Arrays arrive as `<name>_arg` and are read through `<name>`, declared 16-byte aligned: rtcg's
// arrays are whole device allocations (256-byte aligned; Executable::launch checks every pointer), and
// with the alignment known NVVM merges neighbouring accesses into 16-byte vector loads and stores.
void declareParams(EmitContext& ctx, C::Function& fn, LaunchSpec& launch, std::vector<C::Stmt>& body) {
  std::vector<C::Stmt> aligned;
  // The locals' module globals first, so that no parameter's name hides them.
  for (size_t i = ctx.k.numSignatureParams(); i < ctx.k.params.size(); ++i) {
    std::string global = localArrayName(ctx.k, int(i));
    RTCG_ASSERT(ctx.names.fresh(global) == global, "a local's global is named first");
    launch.usesGlobalScratch = true;
  }
  for (size_t i = 0; i < ctx.k.params.size(); ++i) {
    const Param& p = ctx.k.params[i];
    ctx.paramNames.push_back(ctx.names.fresh(p.name));
    if (p.kind == ParamKind::Size) continue;
    if (p.isLocal() && ctx.localsInShared.count(int(i))) continue;  // in shared memory (fused nests)
    if (p.isLocal()) {  // module memory, 16-byte aligned (localArrays): read through an aligned pointer
      // Const (read-only loads) in every nest but its writer, as for an `in` array.
      const std::vector<Stmt>& stmts = ctx.k.nests[size_t(ctx.nestIdx)].body;
      const bool writes = std::any_of(stmts.begin(), stmts.end(),
                                      [&](const Stmt& st) { return st.kind == StmtKind::Store && st.array == int(i); });
      std::string type = fmt::format("{}{}*", writes ? "" : "const ", cudaTypeName(p.type));
      aligned.push_back(C::decl(type + " __restrict__", ctx.paramNames.back(),
                                C::castTo(type,
                                          C::call("__builtin_assume_aligned", {C::name(localArrayName(ctx.k, int(i))), lit(16)})),
                                false));
      continue;
    }
    launch.params.push_back((int)i);
    C::Param cp{cudaTypeName(p.type), ctx.paramNames.back()};
    if (p.isArray()) {
      cp.pointer = cp.restrict = true;
      cp.constPointee = !p.isWritten();
      cp.name = ctx.names.fresh(p.name + "_arg");
      std::string pointer = fmt::format("{}{}*", cp.constPointee ? "const " : "", cp.type);
      aligned.push_back(C::decl(
          pointer + " __restrict__", ctx.paramNames.back(),
          C::castTo(pointer, C::call("__builtin_assume_aligned", {C::name(cp.name), lit(ctx.arrayAlignment)})), false));
    }
    fn.params.push_back(cp);
  }
  if (!aligned.empty()) {
    body.push_back(C::comment(ctx.arrayAlignment == kWholeAllocationAlignment
                                  ? "Arrays are whole device allocations: 16-byte aligned (checked at launch)"
                                  : fmt::format("Arrays may start inside an allocation: {}-byte aligned (checked at "
                                                "launch), no 16-byte vector accesses",
                                                ctx.arrayAlignment)));
    append(body, std::move(aligned));
  }
}

// The grid and thread part of each parallel index: the index itself when it has no other parts
// (known at the top), else its base.
void declareIndexBases(EmitContext& ctx, Env& env, std::vector<C::Stmt>& body) {
  for (ParallelIndex& p : ctx.facts.par) {
    std::vector<C::ExprP> terms{lit(p.ni->hull.lo)};
    for (size_t part = 0; part < p.ext.size(); ++part) {
      Placement pl = p.sched->parts[part].place;
      int axis = placementAxis(pl);
      if (axis < 0) continue;
      terms.push_back(C::product(coordinate(ctx, isGridPlacement(pl) ? "blockIdx" : "threadIdx", axis), lit(p.stride[part])));
    }
    C::ExprP value = C::sum(terms);
    if (p.level == Level::Top) {
      std::string n = ctx.names.fresh(p.loop->name);
      body.push_back(C::decl(ctx.idx, n, value));
      env.vars[p.loop->id] = C::name(n);
      p.base = C::name(n);
    } else if (value->kind == C::ExprKind::IntLit) {
      p.base = value;
    } else {
      std::string n = ctx.names.fresh(p.loop->name + "_base");
      body.push_back(C::decl(ctx.idx, n, value));
      p.base = C::name(n);
    }
  }
}

// A parallel index whose bounds name other parallel indices (a triangle's `j in 0..i + 1`): a block
// whose box holds no point of the domain (a tile above the diagonal) leaves at once. The test is
// the same for every thread of the block (its box: each index from its grid terms to their last
// in-block value), so cooperative code may leave too, and a reduction split across blocks loses
// no arrival: every block of an output tile leaves together. The bounds are affine, so their
// extremes over the box are at its corners.
void exitEmptyBlocks(EmitContext& ctx, std::vector<C::Stmt>& body) {
  std::map<int, std::pair<C::ExprP, C::ExprP>> box;  // loop id -> first and last value in the block
  for (const ParallelIndex& p : ctx.facts.par) {
    std::vector<C::ExprP> terms{lit(p.ni->hull.lo)};
    int64_t span = 0;
    for (size_t part = 0; part < p.ext.size(); ++part) {
      const Placement pl = p.sched->parts[part].place;
      if (isGridPlacement(pl)) terms.push_back(C::product(coordinate(ctx, "blockIdx", placementAxis(pl)), lit(p.stride[part])));
      else span += p.stride[part] * (p.ext[part] - 1);
    }
    C::ExprP first = C::sum(terms);
    box[p.loop->id] = {first, C::sum({first, lit(span)})};
  }
  C::ExprP empty;
  for (const ParallelIndex& p : ctx.facts.par) {
    std::vector<const ParallelIndex*> named;
    for (const ParallelIndex& o : ctx.facts.par)
      if (&o != &p && (anyExpr(p.loop->lo, [&](const Expr& x) { return x->kind == ExprKind::Var && x->varId == o.loop->id && x->varKind == VarKind::Index; }) ||
                       anyExpr(p.loop->hi, [&](const Expr& x) { return x->kind == ExprKind::Var && x->varId == o.loop->id && x->varKind == VarKind::Index; })))
        named.push_back(&o);
    // Affine bounds only: the extremes of min(i, n - i) are not at the corners.
    if (named.empty() || !toAffine(p.loop->lo) || !toAffine(p.loop->hi)) continue;
    // The smallest lo and the largest hi over the corners of the box.
    C::ExprP minLo, maxHi;
    for (int64_t corner = 0; corner < (int64_t(1) << named.size()); ++corner) {
      Env env;
      for (size_t q = 0; q < named.size(); ++q) {
        const auto& [first, last] = box.at(named[q]->loop->id);
        env.vars[named[q]->loop->id] = (corner >> q) & 1 ? last : first;
      }
      std::vector<C::Stmt> unused;
      C::ExprP lo = lower(ctx, p.loop->lo, env, unused), hi = lower(ctx, p.loop->hi, env, unused);
      minLo = minLo ? C::call("min", {minLo, lo}) : lo;
      maxHi = maxHi ? C::call("max", {maxHi, hi}) : hi;
    }
    const auto& [first, last] = box.at(p.loop->id);
    empty = empty ? C::binary("||", empty, C::binary(">=", first, maxHi)) : C::binary(">=", first, maxHi);
    if (!constIntValue(p.loop->lo, ctx.k)) empty = C::binary("||", empty, C::binary("<", last, minLo));
  }
  if (!empty) return;
  body.push_back(C::comment("A block whose tile holds no point of the domain (beyond a triangle's diagonal) leaves at once"));
  body.push_back(C::ifThen(empty, {C::returnStmt()}));
}

// Cooperative code: the linear thread index, the tiles' storage, the lanes of reductions across
// threads and the coordinates of a reduction across blocks.
void declareCooperative(EmitContext& ctx, std::vector<C::Stmt>& body) {
  // tid = threadIdx.x + bx * (threadIdx.y + by * threadIdx.z), axes of extent 1 left out.
  C::ExprP tid;
  for (int a = 2; a >= 0; --a) {
    if (ctx.facts.block[a] == 1) continue;
    C::ExprP t = coordinate(ctx, "threadIdx", a);
    tid = tid ? C::sum({t, C::product(lit(ctx.facts.block[a]), tid)}) : t;
  }
  if (!tid) {
    ctx.tid = lit(0);
  } else {
    std::string n = ctx.names.fresh("tid");
    body.push_back(C::decl(ctx.idx, n, tid));
    ctx.tid = C::name(n);
  }
  declareTiles(ctx, body);
  declareLanes(ctx, body);
  declareLongRows(ctx, body);
  declareCrossBlock(ctx, body);
}

// ---------------------------------------------------------------------------------------------
// The work of one position

// The statements of the nest (lets and stores) at one point, in `env`.
void emitStatements(EmitContext& ctx, Env& env, std::vector<C::Stmt>& out) {
  ctx.exactLets = lowerLetsExactly(ctx.nest);
  for (size_t i = 0; i < ctx.nest.body.size(); ++i) {
    const Stmt& s = ctx.nest.body[i];
    if (s.kind == StmtKind::Let) {
      auto it = ctx.letNames.find(s.letId);
      if (it == ctx.letNames.end()) it = ctx.letNames.emplace(s.letId, ctx.names.fresh(s.letName)).first;
      const bool exact = ctx.exactLets.count(s.letId) > 0;
      ctx.exactProducts += exact;
      C::ExprP v = lower(ctx, s.value, env, out);
      ctx.exactProducts -= exact;
      out.push_back(C::decl(cudaTypeName(s.value->type), it->second, v));
      env.vars[s.letId] = C::name(it->second);
    } else {
      C::ExprP target = lowerAccess(ctx, s.array, s.indices, env, out);
      C::ExprP v = lower(ctx, s.value, env, out);
      out.push_back(s.accumulate ? emitAccumulation(ctx, i, target, v) : emitStore(ctx, i, target, v));
    }
  }
}

// The accumulators of the hoisted reductions, per register point.
PointAccumulators declareAccumulators(EmitContext& ctx, std::vector<C::Stmt>& work) {
  const int64_t points = ctx.facts.regPoints;
  PointAccumulators accs(points);
  for (const std::vector<Expr>& g : ctx.plan.groups)
    for (const Expr& r : g)
      for (int64_t pt = 0; pt < points; ++pt) {
        std::string base = fmt::format("{}_{}", reduceName(r->reduceOp), r->loops.front().name);
        std::string n = ctx.names.fresh(points > 1 ? fmt::format("{}_r{}", base, pt) : base);
        work.push_back(C::decl(cudaTypeName(r->type), n, reductionIdentity(r->reduceOp, r->type), false));
        accs[pt][r.get()] = C::name(n);
      }
  return accs;
}

// `loads: early`: the statements' own loads, per register point, ahead of the reductions.
PointAccumulators emitEarlyLoads(EmitContext& ctx, const Env& genv, std::vector<C::Stmt>& work) {
  const int64_t points = ctx.facts.regPoints;
  PointAccumulators early(points);
  const std::vector<Expr>& loads = ctx.plan.earlyLoads;  // empty without `loads: early`
  if (loads.empty()) return early;
  work.push_back(C::comment("The statements' loads, issued ahead of the reductions so that they overlap the arithmetic"));
  for (int64_t pt = 0; pt < points; ++pt) {
    std::vector<std::string> vars;
    for (const Expr& l : loads) {
      std::string n = ctx.names.fresh(
          fmt::format("{}_early{}", ctx.paramNames[l->array], points > 1 ? fmt::format("_r{}", pt) : ""));
      work.push_back(C::decl(cudaTypeName(l->type), n, literalOf(l->type, 0, 0.0), false));
      early[pt][l.get()] = C::name(n);
      vars.push_back(n);
    }
    Env penv = genv;
    std::vector<C::Stmt> pbody;
    C::ExprP guard;
    declarePointIndices(ctx, pt, penv, pbody, guard);
    std::vector<C::Stmt> assigns;
    for (size_t q = 0; q < loads.size(); ++q)
      assigns.push_back(
          C::assign(C::name(vars[q]), "=", lowerAccess(ctx, loads[q]->array, loads[q]->operands, penv, assigns)));
    appendGuarded(guard, std::move(assigns), pbody);
    work.push_back(C::block(std::move(pbody)));
  }
  return early;
}

// Hoisted group `gi`: one pass over its loops updating every point's accumulators, then the
// combine of the lanes when the group is split across threads.
void emitGroupReductions(EmitContext& ctx, size_t gi, const Env& genv, const PointAccumulators& accs,
                         std::vector<C::Stmt>& work) {
  const std::vector<Expr>& g = ctx.plan.groups[gi];
  const int64_t points = ctx.facts.regPoints;
  emitReductionLoops(ctx, g[0]->loops, 0, genv, work, [&](Env& renv, std::vector<C::Stmt>& rbody) {
    if ((int)gi == ctx.plan.outerTile.group) return emitOuterTileStep(ctx, gi, renv, accs, rbody);
    for (const Expr& r : g)
      for (size_t q = 0; q < r->loops.size(); ++q) renv.vars[r->loops[q].id] = renv.vars.at(g[0]->loops[q].id);
    for (int64_t pt = 0; pt < points; ++pt) {
      Env penv = renv;
      std::vector<C::Stmt> pbody;
      C::ExprP guard;
      declarePointIndices(ctx, pt, penv, pbody, guard);
      std::vector<C::Stmt> updates;
      for (const Expr& r : g) {
        C::ExprP v = lower(ctx, r->operands[0], penv, updates);
        updates.push_back(combine(r->reduceOp, r->type, accs[pt].at(r.get()), v));
      }
      // A point outside the domain that reads only shared tiles accumulates garbage it never
      // stores: no guard, so that the points' reads can merge into vector loads. The point's own
      // range, where the loops run over the union of the points' ranges, is always checked.
      C::ExprP own = pointRangeGuard(ctx, g[0]->loops, renv, penv, pbody);
      appendGuarded(andAll(guard && !readsOnlyTiles(ctx, g, renv) ? guard : nullptr, own), std::move(updates), pbody);
      if (points > 1) rbody.push_back(C::block(std::move(pbody)));
      else append(rbody, std::move(pbody));
    }
  }, (int)gi == ctx.facts.pipe.group ? -1 : (int)gi);
  // A thread part of extent 1 on a reduction index (`k: serial, thread.y 1`) gives the group a mask
  // but one lane: declareLanes then declares no lanes or combine buffers, and nothing needs combining.
  if (splitGroup(ctx, g) && ctx.red.lanes > 1) {
    work.push_back(C::comment("Combine the partial results of the threads that share an output point"));
    for (const Expr& r : g)
      for (int64_t pt = 0; pt < points; ++pt)
        combineLanes(ctx, r->reduceOp, r->type, accs[pt].at(r.get()), work, groupMask(ctx, g));
  }
}

// The statements of each register point, with the hoisted values of the point; guarded, and
// with lanes stored by the first lane only.
std::vector<std::vector<C::Stmt>> pointStatements(EmitContext& ctx, const Env& genv, const PointAccumulators& accs,
                                                  const PointAccumulators& early) {
  const LaunchFacts& f = ctx.facts;
  std::vector<std::vector<C::Stmt>> all(f.regPoints);
  for (int64_t pt = 0; pt < f.regPoints; ++pt) {
    Env penv = genv;
    penv.hoisted = accs[pt];
    penv.hoisted.insert(early[pt].begin(), early[pt].end());
    std::vector<C::Stmt> pbody;
    C::ExprP guard;
    openWarpAggregation(ctx, pbody);  // `aggregate: warp`: the point's update, issued after its guard
    declarePointIndices(ctx, pt, penv, pbody, guard);
    std::vector<C::Stmt> stmts;
    emitStatements(ctx, penv, stmts);
    // Every lane holds the combined value; the first one stores.
    if (ctx.red.lanes > 1) guard = andAll(guard, C::binary("==", ctx.red.lane, lit(0)));
    guard = andAll(guard, shortRowGuard(ctx));  // `long_rows:`: a long range's statements run in the block's pass
    appendGuarded(guard, std::move(stmts), pbody);
    closeWarpAggregation(ctx, pbody);
    if (f.regPoints == 1) {
      all[pt] = std::move(pbody);
      continue;
    }
    std::vector<int64_t> rv = regValuesOf(ctx, pt);
    std::vector<std::string> coords;
    for (size_t r = 0; r < f.regParts.size(); ++r)
      coords.push_back(fmt::format("{} {}", f.par[f.regParts[r].par].loop->name, rv[r]));
    all[pt].push_back(
        C::comment(fmt::format("register point {} of {} ({})", pt + 1, f.regPoints, fmt::join(coords, ", "))));
    all[pt].push_back(C::block(std::move(pbody)));
  }
  return all;
}

// The work of one thread at one position of the serial loops of parallel indices: `position` is
// that position, linear. The copies of the first positions (positions pipelined) go to
// `pipeBefore`, ahead of the pipelined loop.
std::vector<C::Stmt> emitPosition(EmitContext& ctx, Env genv, const C::ExprP& position,
                                  std::vector<C::Stmt>& pipeBefore) {
  const LaunchFacts& f = ctx.facts;
  std::vector<C::Stmt> out;
  for (ParallelIndex& p : ctx.facts.par) {
    if (p.level != Level::Group) continue;
    std::string n = ctx.names.fresh(p.loop->name);
    out.push_back(C::decl(ctx.idx, n, indexValue(ctx, p, nullptr)));
    genv.vars[p.loop->id] = C::name(n);
  }
  for (const ParallelIndex& p : ctx.facts.par)  // `keep:`: the slot of a kept row's index
    if (p.level != Level::Point) setKeptSlot(ctx, p.loop->name, p.ext, p.loopVars, genv);
  C::ExprP groupGuard = guardsAt(ctx, Level::Group, genv, out);
  // Tiles that move with the serial parts of parallel indices: staged per position, read by all
  // before the next position's copy.
  const bool stagedHere = stageBlockTiles(ctx, true, genv, out);
  // Positions pipelined: this position's copies for later ones are issued first, and its reads
  // point at its buffer; `pipeAfter` (waits or the prefetched stores) and a barrier end it.
  std::vector<C::Stmt> pipeAfter;
  if (f.pipe.group >= 0) {
    const C::ExprP here = C::name(f.pipe.par->loopVars[f.pipe.part]);
    const int64_t positions = f.pipe.par->ext[f.pipe.part];
    StepAt positionAt = [&](int64_t n, bool fromStart) {
      C::ExprP at = fromStart ? lit(n) : C::sum({here, lit(n)});
      return std::pair{at, C::binary("<", at, lit(positions))};
    };
    out.push_back(C::comment(fmt::format("Tiles of later positions of '{}' are copied ahead ({} buffers)",
                                         f.pipe.par->loop->name, ctx.plan.staging.ring.stages)));
    copyStep(ctx, f.pipe.group, here, positionAt, genv, pipeBefore, out, pipeAfter);
  }
  setLongRowPosition(ctx, position);
  std::vector<C::Stmt> work;
  const PointAccumulators accs = declareAccumulators(ctx, work);
  const PointAccumulators early = emitEarlyLoads(ctx, genv, work);
  for (size_t gi = 0; gi < ctx.plan.groups.size(); ++gi) emitGroupReductions(ctx, gi, genv, accs, work);
  // The statements, per register point; with a reduction split across blocks, in the last block only.
  std::vector<std::vector<C::Stmt>> statements = pointStatements(ctx, genv, accs, early);
  if (ctx.plan.crossBlock.any()) {
    crossBlockCombine(ctx, accs, position, work, std::move(statements));
  } else {
    for (std::vector<C::Stmt>& s : statements) append(work, std::move(s));
  }
  appendGuarded(groupGuard, std::move(work), out);
  emitLongRows(ctx, genv, out);
  if (f.pipe.group >= 0) {
    append(out, std::move(pipeAfter));
    out.push_back(C::syncThreads());  // the position's tiles are read by all before the next copy
  }
  if (stagedHere) out.push_back(C::syncThreads());
  return out;
}

// The serial and unrolled parts of parallel indices, in clause order, around the work of a
// position.
std::vector<C::Stmt> emitPositionLoops(EmitContext& ctx, const Env& env) {
  const std::vector<LoopPart>& loopParts = ctx.facts.loopParts;
  for (const LoopPart& lp : loopParts)
    lp.p->loopVars[lp.part] = ctx.names.fresh(fmt::format("{}_{}", lp.p->loop->name, lp.part));
  std::vector<C::ExprP> terms;
  int64_t scale = 1;
  size_t pipeLoop = loopParts.size();
  for (size_t q = loopParts.size(); q-- > 0;) {
    terms.push_back(C::product(C::name(loopParts[q].p->loopVars[loopParts[q].part]), lit(scale)));
    scale *= loopParts[q].p->ext[loopParts[q].part];
    if (loopParts[q].p == ctx.facts.pipe.par && loopParts[q].part == ctx.facts.pipe.part) pipeLoop = q;
  }
  std::vector<C::Stmt> pipeBefore;  // positions pipelined: goes ahead of the pipelined loop
  std::vector<C::Stmt> inner = emitPosition(ctx, env, C::sum(terms), pipeBefore);
  for (size_t q = loopParts.size(); q-- > 0;) {
    const LoopPart& lp = loopParts[q];
    std::vector<C::Stmt> loop;
    if (q == pipeLoop) append(loop, std::move(pipeBefore));  // the first positions' copies
    loop.push_back(C::forLoop(ctx.idx, lp.p->loopVars[lp.part], lit(0), lit(lp.p->ext[lp.part]),
                              keptUnroll(ctx, lp.p->loop->name, lp.p->sched->parts[lp.part].place), std::move(inner)));
    inner = std::move(loop);
  }
  return inner;
}

// ---------------------------------------------------------------------------------------------
// The header comment and the global scratch

void describe(const EmitContext& ctx, C::Function& fn) {
  const LaunchFacts& f = ctx.facts;
  std::vector<std::string> sizes;
  for (const auto& [n, v] : ctx.k.sizes) sizes.push_back(fmt::format("{} = {}", n, v));
  fn.commentLines = {
      fmt::format("Kernel {}, loop nest {} of {}", ctx.k.name, ctx.nestIdx, ctx.k.nests.size()),
      fmt::format("Sizes: {}", sizes.empty() ? "none" : fmt::format("{}", fmt::join(sizes, ", "))),
      fmt::format("Schedule: {}", printNestSchedule(ctx.sched)),
      fmt::format("Launch: grid ({}, {}, {}), block ({}, {}, {})", f.grid[0], f.grid[1], f.grid[2], f.block[0],
                  f.block[1], f.block[2]),
  };
}

// A reduction split across blocks: the partials per accumulator type and the arrival counters,
// as module globals, said in the header comment and the launch.
void declareScratch(const EmitContext& ctx, C::Function& fn, LaunchSpec& launch, std::vector<C::GlobalArray>& globals) {
  const CrossBlockPlan& xb = ctx.plan.crossBlock;
  const ReductionState& red = ctx.red;
  std::vector<std::string> arrays;
  for (const auto& [t, v] : xb.values) {
    int64_t n = xb.counters * v * xb.slots * xb.blocks;
    globals.push_back({cudaTypeName(t), red.partials.at(t), n, {}});
    arrays.push_back(red.partials.at(t));
  }
  globals.push_back({"unsigned int", red.arrivals, xb.counters, {}});
  globals.front().commentLines = {fmt::format("Global scratch of {}: the reduction over '{}' is split across {} blocks per output tile",
                                              fn.name, xb.index, xb.blocks)};
  fn.commentLines.push_back(fmt::format("Global scratch: the reduction over '{}' is split across {} blocks per output tile;",
                                        xb.index, xb.blocks));
  fn.commentLines.push_back(fmt::format("  the partials go through {} and the last block to arrive (counted in {},",
                                        fmt::join(arrays, ", "), red.arrivals));
  fn.commentLines.push_back("  which it resets to 0) combines them. Two overlapping launches of this kernel would share");
  fn.commentLines.push_back("  the scratch: launch it once at a time (in stream order).");
  launch.usesGlobalScratch = true;
  launch.arrivalCounters = red.arrivals;
  launch.arrivalCounterCount = (uint32_t)xb.counters;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void emitStatementsAt(EmitContext& ctx, Env& env, std::vector<C::Stmt>& out) { emitStatements(ctx, env, out); }

void declareNestParams(EmitContext& ctx, C::Function& fn, LaunchSpec& launch, std::vector<C::Stmt>& body) {
  declareParams(ctx, fn, launch, body);
}

void describeNest(const EmitContext& ctx, C::Function& fn) { describe(ctx, fn); }

std::string localArrayName(const Kernel& k, int param) {
  return fmt::format("{}_local_{}", k.name, k.params[size_t(param)].name);
}

std::vector<C::GlobalArray> localArrays(const Kernel& k) {
  std::vector<C::GlobalArray> out;
  for (size_t i = k.numSignatureParams(); i < k.params.size(); ++i) {
    const std::vector<int64_t> shape = arrayShape(k, int(i));
    int64_t elements = 1;
    for (int64_t e : shape) elements *= e;
    const std::string dims = fmt::format("{}", fmt::join(shape, ", "));
    out.push_back({cudaTypeName(k.params[i].type), localArrayName(k, int(i)), elements,
                   {fmt::format("Local array '{}' of kernel {}: {}[{}], written by one nest and read by later ones; "
                                "launches of this module must not overlap",
                                k.params[i].name, k.name, typeName(k.params[i].type), dims)},
                   16});
  }
  return out;
}

C::Function emitNest(EmitContext& ctx, LaunchSpec& launch, std::vector<C::GlobalArray>& globals) {
  if (ctx.plan.mma) return emitMmaNest(ctx, launch);
  if (ctx.plan.scan) return emitScanNest(ctx, launch, globals);
  planLaunch(ctx);
  const LaunchFacts& f = ctx.facts;
  C::Function fn;
  fn.kind = C::FunctionKind::Kernel;
  fn.name = fmt::format("{}_{}", ctx.k.name, ctx.nestIdx);
  launch.function = fn.name;
  // The global scratch of a reduction split across blocks, named after the function (unique in
  // the module) and before anything else so that no parameter or local hides it.
  if (ctx.plan.crossBlock.any()) {
    for (const auto& [t, v] : ctx.plan.crossBlock.values)
      ctx.red.partials[t] = ctx.names.fresh(fmt::format("{}_partials_{}", fn.name, typeName(t)));
    ctx.red.arrivals = ctx.names.fresh(fn.name + "_arrivals");
  }
  for (int a = 0; a < 3; ++a) {
    launch.grid[a] = (uint32_t)f.grid[a];
    launch.block[a] = (uint32_t)f.block[a];
  }
  if (ctx.plan.dynamicShared) launch.dynamicSharedBytes = (uint32_t)ctx.plan.dynamicSharedBytes;
  fn.launchBounds = (int)f.threads;
  fn.minBlocks = (int)ctx.sched.blocksPerSM;

  std::vector<C::Stmt> body;
  Env env;
  declareParams(ctx, fn, launch, body);
  declareIndexBases(ctx, env, body);
  exitEmptyBlocks(ctx, body);
  if (f.cooperative) declareCooperative(ctx, body);
  // Threads outside the domain leave at once.
  if (C::ExprP topGuard = guardsAt(ctx, Level::Top, env, body)) body.push_back(C::ifThen(negate(topGuard), {C::returnStmt()}));
  stageBlockTiles(ctx, false, env, body);  // tiles staged once per block
  loadKeptRows(ctx, env, body);            // `keep:`: the rows this nest loads for the later fused nests
  declareAccumulationCopy(ctx, body);      // `accumulate: shared`
  append(body, emitPositionLoops(ctx, env));
  mergeAccumulationCopy(ctx, body);
  // The linear thread index where nothing used it (a reduction across the threads of a block
  // only, its lanes from threadIdx): NVRTC warns of an unused variable.
  if (ctx.tid && ctx.tid->kind == C::ExprKind::Name && !usesName(body, ctx.tid->text))
    std::erase_if(body, [&](const C::Stmt& s) { return s.kind == C::StmtKind::Decl && s.name == ctx.tid->text; });
  fn.body = std::move(body);
  describe(ctx, fn);
  if (ctx.plan.crossBlock.any()) declareScratch(ctx, fn, launch, globals);
  return fn;
}

}  // namespace rtcg::emit
