// `long_rows: N` (LongRowPlan, schedule/Plan.h): a data-dependent range longer than N values is
// taken from its lane group (or its one thread, where a thread takes a row) and given to the whole
// block.
//
// A point whose range is long appends it (its range and its parallel indices) to a list in shared
// memory (its first lane takes an entry with a shared atomic counter), runs its own loop over an
// empty range and skips its statements. After the position's work a barrier, then the block walks
// the list (its length read once: the same in every thread, so the block stays uniform around its
// barriers): for each entry every thread strides through the range, the block combines its
// threads' partials by a tree in shared memory, and its first thread runs the statements at the
// entry's indices. The counter alternates between two by position parity: the first thread clears
// the next position's after the barrier, when every thread has read it in the position before, and
// a final barrier keeps the next position's appends after this one's reads. Each output is written
// exactly once (by its lanes or by the block), so the output needs no initialisation, the list's
// order (the order of the atomics) changes no result bit, and any reduction operator works (no
// atomics on values).
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

// The long row's first lane appends it: with lanes (a thread part on the range), the lane set's
// lane 0; with one thread per row (a serial range), that thread (null: no condition).
C::ExprP firstLaneOfLongRows(const EmitContext& ctx) {
  if (ctx.red.lanes < 2) return nullptr;
  const ReductionState::LaneSet& ls = ctx.red.laneSets.at(groupMask(ctx, ctx.plan.groups[size_t(ctx.plan.longRows.group)]));
  return C::binary("==", ls.lane, lit(0));
}

// The counter of the next position: 1 - parity.
C::ExprP otherParity(const C::ExprP& parity) {
  return parity->kind == C::ExprKind::IntLit ? lit(1 - parity->intValue) : C::binary("-", lit(1), parity);
}

C::ExprP slotEntry(const std::string& array, const C::ExprP& slot) { return C::index(C::name(array), slot); }

// acc = the combination of acc over every thread of the block, in every thread. Blocks of whole
// warps: a butterfly of shuffles in each warp (every lane ends with the same bits), the warps'
// values through the combine buffer, folded in warp order by every thread (two barriers). Else a
// tree in the combine buffer, as combineLanes does (any thread count, no identity needed).
void combineBlock(EmitContext& ctx, ReduceOp op, ScalarType t, const C::ExprP& acc, std::vector<C::Stmt>& out) {
  const C::ExprP buf = C::name(ctx.red.combineBuffers.at(t));
  const int64_t threads = ctx.facts.threads;
  if (threads % 32 == 0) {
    for (int64_t offset = 16; offset >= 1; offset /= 2)
      out.push_back(combine(op, t, acc, C::call("__shfl_xor_sync", {C::uintLit(0xffffffffu), acc, lit(offset)})));
    const int64_t warps = threads / 32;
    if (warps == 1) return;
    out.push_back(C::ifThen(C::binary("==", C::binary("%", ctx.tid, lit(32)), lit(0)),
                            {C::assign(C::index(buf, C::binary("/", ctx.tid, lit(32))), "=", acc)}));
    out.push_back(C::syncThreads());
    out.push_back(C::assign(acc, "=", C::index(buf, lit(0))));
    for (int64_t w = 1; w < warps; ++w) out.push_back(combine(op, t, acc, C::index(buf, lit(w))));
    out.push_back(C::syncThreads());  // every thread has read before the buffer is reused
    return;
  }
  out.push_back(C::assign(C::index(buf, ctx.tid), "=", acc));
  out.push_back(C::syncThreads());
  int64_t pow2 = 1;
  while (pow2 < threads) pow2 *= 2;
  for (int64_t step = pow2 / 2; step >= 1; step /= 2) {
    const int64_t active = std::min(step, threads - step);
    out.push_back(C::ifThen(C::binary("<", ctx.tid, lit(active)),
                            {combine(op, t, C::index(buf, ctx.tid), C::index(buf, C::sum({ctx.tid, lit(step)})))}));
    out.push_back(C::syncThreads());
  }
  out.push_back(C::assign(acc, "=", C::index(buf, lit(0))));
  out.push_back(C::syncThreads());  // every thread has read before the buffer is reused
}

}  // namespace

void declareLongRows(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const LongRowPlan& lr = ctx.plan.longRows;
  if (!lr.any()) return;
  LongRowState& st = ctx.longRows;
  st.count = ctx.names.fresh(lr.index + "_long_count");
  st.lo = ctx.names.fresh(lr.index + "_long_lo");
  st.hi = ctx.names.fresh(lr.index + "_long_hi");
  body.push_back(C::comment(fmt::format("Ranges of '{}' longer than {} go to the whole block: their count (per position "
                                        "parity), ranges and points",
                                        lr.index, lr.threshold)));
  body.push_back(C::sharedArray("unsigned int", st.count, 2));
  body.push_back(C::sharedArray(ctx.idx, st.lo, lr.slots));
  body.push_back(C::sharedArray(ctx.idx, st.hi, lr.slots));
  for (const ParallelIndex& p : ctx.facts.par) {
    st.indices.push_back(ctx.names.fresh(p.loop->name + "_long"));
    body.push_back(C::sharedArray(ctx.idx, st.indices.back(), lr.slots));
  }
  // A row a thread declares no lanes' combine buffers (declareLanes): the block's pass needs its own.
  for (const Expr& r : ctx.plan.groups[size_t(lr.group)])
    if (!ctx.red.combineBuffers.count(r->type)) {
      std::string n = ctx.names.fresh(fmt::format("red_{}", typeName(r->type)));
      body.push_back(C::sharedArray(cudaTypeName(r->type), n, ctx.facts.threads));
      ctx.red.combineBuffers[r->type] = n;
    }
  body.push_back(C::ifThen(C::binary("==", ctx.tid, lit(0)), {C::assign(slotEntry(st.count, lit(0)), "=", C::uintLit(0)),
                                                              C::assign(slotEntry(st.count, lit(1)), "=", C::uintLit(0))}));
  body.push_back(C::syncThreads());
}

void setLongRowPosition(EmitContext& ctx, const C::ExprP& position) {
  if (!ctx.plan.longRows.any()) return;
  ctx.longRows.parity = position->kind == C::ExprKind::IntLit ? lit(position->intValue & 1) : C::binary("&", position, lit(1));
}

C::ExprP longRowEnd(EmitContext& ctx, const Loop& l, const C::ExprP& lo, const C::ExprP& hi, const Env& env,
                    std::vector<C::Stmt>& out) {
  const LongRowPlan& lr = ctx.plan.longRows;
  if (!lr.any() || l.name != lr.index) return hi;
  LongRowState& st = ctx.longRows;
  st.flag = ctx.names.fresh(l.name + "_long");
  // Only a point inside the domain hands its range over: a thread past the domain's edge has no
  // range (its bounds read nothing), and its entry would make the block compute and store a point
  // that does not exist.
  Env penv = env;
  C::ExprP inside = pointGuard(ctx, penv, out);
  out.push_back(C::decl("bool", st.flag, andAll(inside, C::binary(">", C::binary("-", hi, lo), lit(lr.threshold)))));
  const std::string entry = ctx.names.fresh(l.name + "_entry");
  std::vector<C::Stmt> record{C::decl(ctx.idx, entry,
                                      C::castTo(ctx.idx, C::call("atomicAdd", {C::unary("&", slotEntry(st.count, st.parity)),
                                                                               C::uintLit(1)})))};
  record.push_back(C::assign(slotEntry(st.lo, C::name(entry)), "=", lo));
  record.push_back(C::assign(slotEntry(st.hi, C::name(entry)), "=", hi));
  for (size_t q = 0; q < ctx.facts.par.size(); ++q)
    record.push_back(C::assign(slotEntry(st.indices[q], C::name(entry)), "=", env.vars.at(ctx.facts.par[q].loop->id)));
  out.push_back(C::ifThen(andAll(C::name(st.flag), firstLaneOfLongRows(ctx)), std::move(record)));
  const std::string end = ctx.names.fresh(l.name + "_end");
  out.push_back(C::decl(ctx.idx, end, C::ternary(C::name(st.flag), lo, hi)));
  return C::name(end);
}

C::ExprP shortRowGuard(const EmitContext& ctx) {
  if (ctx.longRows.flag.empty()) return nullptr;
  return C::unary("!", C::name(ctx.longRows.flag));
}

void emitLongRows(EmitContext& ctx, const Env& genv, std::vector<C::Stmt>& out) {
  const LongRowPlan& lr = ctx.plan.longRows;
  if (!lr.any()) return;
  const LongRowState& st = ctx.longRows;
  const std::vector<Expr>& g = ctx.plan.groups[size_t(lr.group)];
  const Loop& l = g[0]->loops[0];
  out.push_back(C::comment(fmt::format("The ranges of '{}' handed over, one after another, each by every thread of the block",
                                       l.name)));
  out.push_back(C::syncThreads());
  const std::string count = ctx.names.fresh(l.name + "_long_rows");
  out.push_back(C::decl(ctx.idx, count, C::castTo(ctx.idx, slotEntry(st.count, st.parity))));
  // The next position's counter: read by every thread in the position before, which ended in a barrier.
  out.push_back(C::ifThen(C::binary("==", ctx.tid, lit(0)),
                          {C::assign(slotEntry(st.count, otherParity(st.parity)), "=", C::uintLit(0))}));
  const std::string s = ctx.names.fresh("entry_long");
  const C::ExprP lo = slotEntry(st.lo, C::name(s)), hi = slotEntry(st.hi, C::name(s));
  Env env = genv;
  std::vector<C::Stmt> row;
  for (size_t q = 0; q < ctx.facts.par.size(); ++q) {
    const std::string n = ctx.names.fresh(ctx.facts.par[q].loop->name);
    row.push_back(C::decl(ctx.idx, n, slotEntry(st.indices[q], C::name(s))));
    env.vars[ctx.facts.par[q].loop->id] = C::name(n);
  }
  PointAccumulators accs(1);
  for (const Expr& r : g) {
    const std::string n = ctx.names.fresh(fmt::format("{}_{}_block", reduceName(r->reduceOp), l.name));
    row.push_back(C::decl(cudaTypeName(r->type), n, reductionIdentity(r->reduceOp, r->type), false));
    accs[0][r.get()] = C::name(n);
  }
  // Thread t takes lo + t, lo + t + threads, ...: consecutive threads read consecutive values.
  const int64_t threads = ctx.facts.threads;
  const std::string trips = ctx.names.fresh(l.name + "_trips"), t = ctx.names.fresh(l.name + "_step");
  row.push_back(C::decl(ctx.idx, trips,
                        C::binary("/", C::sum({C::binary("-", C::binary("-", hi, lo), ctx.tid), lit(threads - 1)}), lit(threads))));
  const std::string v = ctx.names.fresh(l.name);
  Env renv = env;
  renv.vars[l.id] = C::name(v);
  for (const Expr& r : g) renv.vars[r->loops[0].id] = C::name(v);
  std::vector<C::Stmt> step{C::decl(ctx.idx, v, C::sum({lo, ctx.tid, C::product(C::name(t), lit(threads))}))};
  for (const Expr& r : g) {
    C::ExprP value = lower(ctx, r->operands[0], renv, step);
    step.push_back(combine(r->reduceOp, r->type, accs[0].at(r.get()), value));
  }
  row.push_back(C::forLoop(ctx.idx, t, lit(0), C::name(trips), C::Unroll::Default, std::move(step)));
  for (const Expr& r : g) combineBlock(ctx, r->reduceOp, r->type, accs[0].at(r.get()), row);
  Env penv = env;
  penv.hoisted = accs[0];
  std::vector<C::Stmt> stmts;
  emitStatementsAt(ctx, penv, stmts);
  row.push_back(C::ifThen(C::binary("==", ctx.tid, lit(0)), std::move(stmts)));
  out.push_back(C::forLoop(ctx.idx, s, lit(0), C::name(count), C::Unroll::Never, std::move(row)));
  out.push_back(C::syncThreads());  // every thread has read the list before the next position appends to it
}

}  // namespace rtcg::emit
