// `copies hoisted` (MmaPlan::hoistedCopies, schedule/Mma.h): the copies of `fragments 2`'s ring
// prepared once per block. stageOperandAsLoaded writes each copy of each step in full: the
// thread's run of the box, its row and k guards and its source address from the step's k0, and
// past the last step the ring skips the copies by a branch (copyOrFill). Those are the main loop's
// most instructions, several times its mma (docs/bench.md, session 44), and the
// branch keeps them from the step's mma, so the tensor pipe idles while every warp of a quarter
// computes its copies at once. Here a run's destination in a buffer, its source at step 0 and the
// bytes its row allows (the rows a block copies do not change with the step) are per-thread
// constants; a step adds its offset along k (the k index's coefficient in the flat offset, times
// the step) and, where the step is past the last one or its k past the reduction, copies no bytes
// (a zero fill, which reads nothing), so the copies need no branch. Every source address stays in
// the array: rows past the domain's edge take the last row's, steps past the last the last one's,
// and where the reduction is no whole number of steps, a copy of no bytes the array's start.
// The steps whose refill is a whole step of the reduction (all but the last `ahead`, and the last
// one's where it is partial) need neither the clamp nor the k guard: emitHoistedSteps runs them
// apart, their sources carried from step to step (one add each: startCarried, copyWhole), their
// byte count the row's constant, or none where every block's rows are in range; the rest keep the
// guarded form above.
#include <algorithm>

#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "ir/Analysis.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

void HoistedCopies::prepare(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, std::vector<C::Stmt>& out) {
  isA_ = isA, kMajor_ = p.tile(isA).kMajor;
  tile_ = (isA ? nm.tileA : nm.tileB)[0];
  const int64_t rows = isA ? p.blockM : p.blockN, rowExtent = isA ? p.c.mExtent : p.c.nExtent;
  const int64_t outerCount = kMajor_ ? p.blockK : rows, innerCount = kMajor_ ? rows : p.blockK;
  V_ = copyRunElements(ctx, p, isA);
  runs_ = outerCount * (innerCount / V_);
  const int64_t threads = ctx.plan.launch.threads, rounds = (runs_ + threads - 1) / threads;
  const Expr& load = isA ? p.c.a() : p.c.b();
  RTCG_ASSERT(load->kind == ExprKind::Load, "hoisted copies are of plain loads (planHoisted)");
  auto form = flatOffset(ctx.k, load->array, load->operands);
  RTCG_ASSERT(form.has_value(), "hoisted copies are of affine accesses (planHoisted)");
  stepDelta_ = form->coeff(p.c.kLoop()->id) * p.blockK;
  base_ = C::name(ctx.paramNames[size_t(load->array)]);
  const int64_t bytesPer = typeBytes(p.staged);
  const char* side = isA ? "a" : "b";
  auto def = [&](const std::string& base, const std::string& type, C::ExprP init, bool isConst = true) {
    std::string n = ctx.names.fresh(base);
    out.push_back(C::decl(type, n, std::move(init), isConst));
    return C::name(n);
  };
  for (int64_t s = 0; s < rounds; ++s) {
    Slot slot;
    C::ExprP e = s == 0 ? nm.tid : C::sum({nm.tid, lit(s * threads)});
    if (runs_ % threads != 0 && s == rounds - 1) slot.index = e = def(fmt::format("copy_{}_index", side), ctx.idx, e);
    C::ExprP outer = def(fmt::format("copy_{}_outer", side), ctx.idx, bin("/", e, lit(innerCount / V_)));
    C::ExprP inner = def(fmt::format("copy_{}_inner", side), ctx.idx, C::product(bin("%", e, lit(innerCount / V_)), lit(V_)));
    C::ExprP row = kMajor_ ? inner : outer;
    slot.kk = kMajor_ ? outer : inner;
    C::ExprP point = C::sum({isA ? nm.m0 : nm.n0, row});
    // The bytes of the run its row allows: up to V elements along the rows where they are its
    // contiguous direction (k x rows), else all or none.
    C::ExprP rowBytes;
    if (kMajor_ && V_ > 1) {
      C::ExprP left = bin("-", lit(rowExtent), point);
      rowBytes = C::ternary(bin(">", left, lit(0)),
                            C::product(C::ternary(bin("<", left, lit(V_)), left, lit(V_)), lit(bytesPer)), lit(0));
    } else {
      rowBytes = C::ternary(bin("<", point, lit(rowExtent)), lit(V_ * bytesPer), lit(0));
    }
    if (slot.index) rowBytes = C::ternary(bin("<", slot.index, lit(runs_)), rowBytes, lit(0));
    slot.rowBytes = def(fmt::format("copy_{}_row_bytes", side), "int", rowBytes);
    // The source row: the run's own, or where the tile passes the domain's edge the last one (its
    // bytes are none there), so that every source address lies in the array.
    const int64_t origins = isA ? p.mTiles() : p.nTiles();
    slot.fullRows = origins * rows == rowExtent && !slot.index;
    C::ExprP sourceRow = origins * rows == rowExtent ? point
                         : C::ternary(bin("<", point, lit(rowExtent)), point, lit(rowExtent - 1));
    Env env;
    env.vars = nm.batch;
    RTCG_ASSERT(!bindRow(p, isA, sourceRow, env), "hoisted copies are of plain rows (planHoisted)");
    bindK(p, slot.kk, env);
    std::vector<C::Stmt> loads;
    C::ExprP address = C::unary("&", lowerAccess(ctx, load->array, load->operands, env, loads));
    RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
    slot.src = def(fmt::format("copy_{}_src", side), fmt::format("const {}*", cudaTypeName(p.staged)), address, false);
    slot.dst = def(fmt::format("copy_{}_dst", side), ctx.idx,
                   C::sum({C::product(outer, lit(p.tile(isA).pitch)), inner}));
    slots_.push_back(std::move(slot));
  }
}

void HoistedCopies::copy(EmitContext& ctx, const MmaPlan& p, const C::ExprP& step, const C::ExprP& buffer,
                         std::vector<C::Stmt>& out) const {
  const int64_t bytesPer = typeBytes(p.staged);
  const bool wholeSteps = p.c.kExtent % p.blockK == 0;
  // Whether the step is one of the reduction's: null where it is (a literal before the last); a
  // literal past it (the prologue of a ring longer than the reduction) copies no bytes.
  const bool literal = step->kind == C::ExprKind::IntLit;
  const bool past = literal && step->intValue >= p.steps;
  const C::ExprP live = literal ? nullptr : bin("<", step, lit(p.steps));
  const C::ExprP k0 = C::product(step, lit(p.blockK));
  for (const Slot& slot : slots_) {
    std::vector<C::Stmt> one;
    const C::ExprP kq = C::sum({k0, slot.kk});
    // k x rows: the run lies in one k (whole or not at all); rows x k: up to V values of the
    // reduction are left at its k.
    C::ExprP bytes = slot.rowBytes;
    C::ExprP cond = live;
    if (!wholeSteps) {
      if (kMajor_) {
        C::ExprP inside = bin("<", kq, lit(p.c.kExtent));
        cond = cond ? bin("&&", cond, inside) : inside;
      } else {
        std::string left = ctx.names.fresh("copy_left");
        one.push_back(C::decl(ctx.idx, left, bin("-", lit(p.c.kExtent), kq)));
        C::ExprP leftBytes = C::product(C::name(left), lit(bytesPer));
        bytes = C::ternary(bin("<", leftBytes, slot.rowBytes), leftBytes, slot.rowBytes);
        C::ExprP inside = bin(">", C::name(left), lit(0));
        cond = cond ? bin("&&", cond, inside) : inside;
      }
    }
    if (past) bytes = lit(0);
    else if (cond) bytes = C::ternary(cond, bytes, lit(0));
    std::string b = ctx.names.fresh("copy_bytes");
    one.push_back(C::decl("int", b, bytes));
    // Whole steps: the source at the step, or past the last at the last (in the array, no bytes
    // read); else the array's start where no bytes are read (the last step's k may pass a row).
    // From the carried source where there is one (startCarried: then the prepared one is dead).
    auto from = [&](const C::ExprP& at) {
      if (!slot.carried) return C::sum({slot.src, C::product(at, lit(stepDelta_))});
      return C::sum({slot.carried, C::product(C::sum({at, lit(-carriedStep_)}), lit(stepDelta_))});
    };
    C::ExprP src;
    if (wholeSteps) {
      src = from(literal ? lit(std::min(step->intValue, p.steps - 1))
                         : C::ternary(bin("<", step, lit(p.steps)), step, lit(p.steps - 1)));
    } else {
      src = C::ternary(bin(">", C::name(b), lit(0)), from(step), base_);
    }
    one.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", V_ * bytesPer),
                                      {C::unary("&", tileRef(tile_, C::sum({buffer, slot.dst}))), src, C::name(b)})));
    if (slot.index) out.push_back(C::ifThen(bin("<", slot.index, lit(runs_)), std::move(one)));
    else append(out, std::move(one));
  }
}

void HoistedCopies::startCarried(EmitContext& ctx, const MmaPlan& p, int64_t first, int64_t whole,
                                 std::vector<C::Stmt>& out) {
  carriedStep_ = first + whole;
  for (Slot& slot : slots_) {
    std::string n = ctx.names.fresh(isA_ ? "copy_a_from" : "copy_b_from");
    out.push_back(C::decl(fmt::format("const {}*", cudaTypeName(p.staged)), n,
                          C::sum({slot.src, C::product(lit(first), lit(stepDelta_))}), false));
    slot.carried = C::name(n);
  }
}

void HoistedCopies::copyWhole(EmitContext& ctx, const MmaPlan& p, const C::ExprP& buffer,
                              std::vector<C::Stmt>& out) const {
  const int64_t bytesPer = typeBytes(p.staged);
  // A literal buffer past the first: its offset in the instruction (asyncCopyAtHelpers).
  const bool at = buffer->kind == C::ExprKind::IntLit && buffer->intValue != 0;
  if (at) ctx.needs.need(asyncCopyAtHelpers);
  for (const Slot& slot : slots_) {
    RTCG_ASSERT(slot.carried, "copyWhole follows startCarried");
    const C::ExprP bytes = slot.fullRows ? lit(V_ * bytesPer) : slot.rowBytes;
    C::Stmt copy = C::exprStmt(
        at ? C::call(fmt::format("RTCG_CP_ASYNC{}_AT", V_ * bytesPer), {C::unary("&", tileRef(tile_, slot.dst)), slot.carried,
                                                                       bytes, lit(buffer->intValue * bytesPer)})
           : C::call(fmt::format("rtcg_cp_async{}", V_ * bytesPer),
                     {C::unary("&", tileRef(tile_, C::sum({buffer, slot.dst}))), slot.carried, bytes}));
    if (slot.index) out.push_back(C::ifThen(bin("<", slot.index, lit(runs_)), {std::move(copy)}));
    else out.push_back(std::move(copy));
    out.push_back(C::assign(slot.carried, "+=", lit(stepDelta_)));
  }
}

bool HoistedCopies::fullRows() const {
  return std::all_of(slots_.begin(), slots_.end(), [](const Slot& s) { return s.fullRows; });
}

}  // namespace rtcg::emit::mma
