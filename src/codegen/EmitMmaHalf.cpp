// The packed arithmetics of `mma:` (bf16 / f16, mma.sync m16n8k16 with f32 accumulators; s8,
// m16n8k32 with s32 accumulators; schedule/Mma.h): tiles hold the operands' 16- or 8-bit values as
// loaded, in each operand's contiguous direction ((rows x k), or (k x rows) where k is not
// contiguous; s8 always (rows x k)), copied by cp.async of 16, 8 or 4 bytes where every run of
// that many bytes is aligned to its size in the array (runElements), else element by element. The
// warps load their fragments with ldmatrix: x4 for an A fragment (16 x 16 values, 16 x 32 bytes of
// s8), x4 for two B fragments (x2 for a last single one), .trans from a (k x rows) tile. The
// register layouts are PTX's (mma m16n8k16 and m16n8k32, ldmatrix m8n8): lane l supplies the
// address of row l % 8 of matrix l / 8; a row of a matrix is 16 bytes either way, so s8's
// fragments are the 16-bit ones' bytes.
#include <fmt/format.h>

#include <numeric>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "ir/Analysis.h"
#include "ir/IntOps.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

namespace {

// The load under the operand's conversion (`f32(a[i, k])` -> `a[i, k]`; a TF32 operand copied by
// cp.async is the load itself).
const Expr& operandLoad(const Expr& e) {
  if (e->kind == ExprKind::Load) return e;
  RTCG_ASSERT(e->kind == ExprKind::Cast && e->operands[0]->kind == ExprKind::Load, "a 16-bit mma operand");
  return e->operands[0];
}

// Elements of the tiles' type in 16 bytes: one cp.async, one row of an ldmatrix 8x8 b16 matrix.
int64_t piece(const MmaPlan& p) { return 16 / typeBytes(p.staged); }

// The lower bound of loop `id` among the contraction's indices.
int64_t loBound(const Contraction& c, int id) {
  for (const auto* rows : {&c.mRows, &c.nRows})
    for (const ContractionRow& r : *rows)
      if (r.loop == id) return r.lo;
  if (id == c.kLoop()->id) return c.kLo;
  for (size_t b = 0; b < c.batch.size(); ++b)
    if (c.batch[b] == id) return c.batchLo[b];
  return 0;
}

// Elements per copy of the operand's tile: V elements of 16, 8 or 4 bytes (one cp.async, the
// largest that fits; at least two elements) when every run of V elements along its contiguous
// direction starts aligned to its bytes in the array, else 1. A run starts at a tile origin plus a
// multiple of V along that direction (unit stride): aligned when the array starts 16-byte aligned
// and the flat offset at the indices' lower bounds, and the strides of every other index, are
// multiples of V. (A reduction of K = 1000 i8 values: rows 8-byte aligned, 8-byte copies instead
// of byte by byte.) wgmma's core matrices take 16-byte runs only.
int64_t runElements(const EmitContext& ctx, const MmaPlan& p, bool isA) {
  if (ctx.arrayAlignment < 16) return 1;
  const ExprNode* load = operandLoad(isA ? p.c.a() : p.c.b()).get();
  auto form = flatOffset(ctx.k, load->array, load->operands);
  if (!form) return 1;
  const bool kMajor = p.tile(isA).kMajor;
  // wgmma's TF32 tile of an operand contiguous along M / N is K-major: its 16 bytes run across the
  // copy's direction, so the copy goes value by value.
  if (p.isWgmma() && kMajor && !p.tile(isA).mnMajor) return 1;
  const int inner = kMajor ? (isA ? p.c.m : p.c.n) : p.c.kLoop()->id;
  if (form->coeff(inner) != 1) return 1;
  int64_t base = form->constant, divisor = 0;
  for (const auto& [id, c] : form->coeffs) {
    base += c * loBound(p.c, id);
    if (id != inner) divisor = std::gcd(divisor, c);
  }
  divisor = std::gcd(divisor, base);
  // Rows of several indices or statements: a run along the rows stays in one value of the outer
  // ones where the innermost extent is a multiple of V (stacked operands share indices and shape).
  const std::vector<ContractionRow>& rows = isA ? p.c.mRows : p.c.nRows;
  for (int64_t bytes : {16, 8, 4}) {
    const int64_t v = bytes / typeBytes(p.staged);
    if (v < 2 || (p.isWgmma() && v != piece(p))) break;
    if (kMajor && !plainRows(p.c, isA) && rows.back().extent % v != 0) continue;
    if (divisor % v == 0) return v;
  }
  return 1;
}

}  // namespace

int64_t copyRunElements(const EmitContext& ctx, const MmaPlan& p, bool isA) { return runElements(ctx, p, isA); }

bool halfCopiesAsync(const EmitContext& ctx, const MmaPlan& p) {
  return runElements(ctx, p, true) > 1 || runElements(ctx, p, false) > 1;
}

bool copiesAsync(const EmitContext& ctx, const MmaPlan& p, bool isA) {
  return runElements(ctx, p, isA) > 1 || !mmaPacked(p.arith);
}

void declareLdmatrixLanes(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  auto def = ctx.declarer(body);
  // Lane l addresses row l % 8 of matrix l / 8; `half` and `pair` select the matrix.
  C::ExprP row = def("ld_row", bin("%", nm.lane, lit(8)));
  C::ExprP half = def("ld_half", bin("%", bin("/", nm.lane, lit(8)), lit(2)));
  C::ExprP pair = def("ld_pair", bin("/", nm.lane, lit(16)));
  // A (x4): matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), (m 8-15, k 8-15); TF32: k in
  // words, 0-3 and 4-7 (registers a0-a3 of m16n8k8). A TF32 (k x rows) tile has no lane address
  // (its fragments load value by value).
  const bool tf32 = !mmaPacked(p.arith);
  const int64_t v = piece(p);
  if (!(tf32 && p.a.kMajor))
    nm.aLane = def("a_lane", p.a.kMajor ? C::sum({C::product(C::sum({row, C::product(pair, lit(8))}), lit(p.a.pitch)),
                                                 nm.wm, C::product(half, lit(8))})
                                       : C::sum({C::product(C::sum({nm.wm, row, C::product(half, lit(8))}), lit(p.a.pitch)),
                                                 C::product(pair, lit(v))}));
  // B (x4, two fragments): (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), (n 8-15, k 8-15); TF32:
  // registers b0, b1 of fragment n 0-7, then of n 8-15.
  if (!(tf32 && p.b.kMajor))
    nm.bLane = def("b_lane", p.b.kMajor ? C::sum({C::product(C::sum({row, C::product(half, lit(8))}), lit(p.b.pitch)),
                                                 nm.wn, C::product(pair, lit(8))})
                                       : C::sum({C::product(C::sum({nm.wn, row, C::product(pair, lit(8))}), lit(p.b.pitch)),
                                                 C::product(half, lit(v))}));
}

void stageOperandAsLoaded(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, const C::ExprP& k0,
                      const C::ExprP& buffer, std::vector<C::Stmt>& out, const C::ExprP& tid, int64_t threads) {
  const bool kMajor = p.tile(isA).kMajor;
  const int64_t rows = isA ? p.blockM : p.blockN, rowExtent = isA ? p.c.mExtent : p.c.nExtent;
  const int64_t outerCount = kMajor ? p.blockK : rows, innerCount = kMajor ? rows : p.blockK;
  const int64_t pitch = p.tile(isA).pitch, V = runElements(ctx, p, isA);
  const int64_t runs = outerCount * (innerCount / V);
  if (!tid) threads = nm.copiers(ctx.plan.launch.threads);
  const int64_t rounds = ceilDiv(runs, threads);
  std::string s = ctx.names.fresh(isA ? "copy_a" : "copy_b");
  std::vector<C::Stmt> body;
  std::string e = ctx.names.fresh("e");
  body.push_back(C::decl(ctx.idx, e, C::sum({tid ? tid : nm.copier(), C::product(C::name(s), lit(threads))})));
  std::string on = ctx.names.fresh("outer"), in = ctx.names.fresh("inner");
  std::vector<C::Stmt> inner{C::decl(ctx.idx, on, bin("/", C::name(e), lit(innerCount / V))),
                             C::decl(ctx.idx, in, C::product(bin("%", C::name(e), lit(innerCount / V)), lit(V)))};
  if (p.isWgmma() && V > 1) {
    // wgmma's core matrices hold 8 outer rows of one 16-byte run each: eight consecutive threads
    // copy one core matrix (128 contiguous bytes, no bank conflict), a warp 8 rows x 4 runs (64
    // contiguous bytes of each row in memory). The outer count is a multiple of 8 (rows of 64, k
    // of 8 or 16).
    const int64_t chunks = innerCount / V;
    inner = {C::decl(ctx.idx, on, C::sum({C::product(bin("/", C::name(e), lit(8 * chunks)), lit(8)), bin("%", C::name(e), lit(8))})),
             C::decl(ctx.idx, in, C::product(bin("%", bin("/", C::name(e), lit(8)), lit(chunks)), lit(V)))};
  }
  C::ExprP row = C::name(kMajor ? in : on), kk = C::name(kMajor ? on : in);
  C::ExprP point = C::sum({isA ? nm.m0 : nm.n0, row});
  C::ExprP kq = C::sum({k0, kk});
  Env env;
  env.vars = nm.batch;
  C::ExprP part = bindRow(p, isA, point, env);
  bindK(p, kq, env);
  const Expr& load = operandLoad(isA ? p.c.a() : p.c.b());
  std::vector<C::Stmt> loads;
  // The element's address in the array (a choice over stacked statements' arrays).
  auto address = [&]() {
    return operandAt(p, isA, part, [&](const Expr& operand) {
      const Expr& l = operandLoad(operand);
      return C::unary("&", lowerAccess(ctx, l->array, l->operands, env, loads));
    });
  };
  const Tile& tile = (isA ? nm.tileA : nm.tileB)[0];
  // wgmma: the tile's canonical layout (core matrices); else rows of `pitch` elements.
  C::ExprP at = p.isWgmma() ? C::sum({buffer ? buffer : lit(0), wgmmaTileAt(p, isA, row, kk)})
                        : C::sum({buffer ? buffer : lit(0), C::product(C::name(on), lit(pitch)), C::name(in)});
  const int64_t bytesPer = typeBytes(p.staged);
  if (V > 1) {
    // The run's bytes inside the domain: none where its row (k, or M / N) is outside, else up to
    // V elements along the contiguous direction; cp.async zero-fills the rest. Where the block
    // tile's rows and the steps divide the domain every run is inside: V elements, without the
    // bounds' tests, which cost measurable time in the ring's steps (docs/bench.md, session 60).
    const bool inside = rowExtent % rows == 0 && p.c.kExtent % p.blockK == 0;
    C::ExprP bytes = lit(V * bytesPer);
    if (!inside) {
      C::ExprP outerInside = kMajor ? bin("<", kq, lit(p.c.kExtent)) : bin("<", point, lit(rowExtent));
      std::string left = ctx.names.fresh("left"), name = ctx.names.fresh("bytes");
      inner.push_back(C::decl(ctx.idx, left, kMajor ? bin("-", lit(rowExtent), point) : bin("-", lit(p.c.kExtent), kq)));
      C::ExprP clamped = C::ternary(bin("<", C::name(left), lit(V)), C::name(left), lit(V));
      inner.push_back(C::decl("int", name,
                              C::ternary(bin("&&", outerInside, bin(">", C::name(left), lit(0))),
                                         C::product(clamped, lit(bytesPer)), lit(0))));
      bytes = C::name(name);
    }
    C::ExprP element = address();
    RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
    C::ExprP src = inside ? element
                          : C::ternary(bin(">", bytes, lit(0)), element, C::name(ctx.paramNames[size_t(load->array)]));
    inner.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", V * bytesPer),
                                        {C::unary("&", tileRef(tile, at)), src, bytes})));
  } else if (!mmaPacked(p.arith)) {
    // TF32 and FP64 (with stages): one cp.async per value, its address only where it is inside.
    C::ExprP inside = bin("&&", bin("<", point, lit(rowExtent)), bin("<", kq, lit(p.c.kExtent)));
    C::ExprP element = address();
    RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
    C::ExprP src = C::ternary(inside, element, C::name(ctx.paramNames[size_t(load->array)]));
    inner.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", bytesPer),
                                        {C::unary("&", tileRef(tile, at)), src, C::ternary(inside, lit(bytesPer), lit(0))})));
  } else {
    C::ExprP inside = bin("&&", bin("<", point, lit(rowExtent)), bin("<", kq, lit(p.c.kExtent)));
    C::ExprP value = operandAt(p, isA, part, [&](const Expr& operand) { return lower(ctx, operandLoad(operand), env, loads); });
    RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
    inner.push_back(C::assign(tileRef(tile, at), "=", C::ternary(inside, value, literalOf(p.staged, 0, 0.0))));
  }
  if (runs % threads == 0) append(body, std::move(inner));
  else body.push_back(C::ifThen(bin("<", C::name(e), lit(runs)), std::move(inner)));
  out.push_back(C::forLoop(ctx.idx, s, lit(0), lit(rounds), tid ? C::Unroll::Never : C::Unroll::Full, std::move(body)));
}

void halfFragmentStep(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk, const C::ExprP& bufA,
                      const C::ExprP& bufB, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  auto regs = [&](const std::string& base, int count) {
    std::vector<std::string> r;
    for (int i = 0; i < count; ++i) {
      r.push_back(ctx.names.fresh(fmt::format("{}_{}", base, i)));
      out.push_back(C::decl("unsigned int", r.back(), nullptr, false));
    }
    return r;
  };
  auto ldmatrix = [&](const char* shape, bool trans, const std::vector<std::string>& r, C::ExprP address) {
    std::vector<C::ExprP> args;
    for (const std::string& x : r) args.push_back(C::name(x));
    args.push_back(C::unary("&", address));
    out.push_back(C::exprStmt(C::call(fmt::format("rtcg_ldmatrix_{}{}", shape, trans ? "_trans" : ""), std::move(args))));
  };
  std::vector<std::vector<std::string>> a(ms.tileM), b(ms.tileN);
  const Tile& ta = nm.tileA[0];
  const Tile& tb = nm.tileB[0];
  for (int64_t fm = 0; fm < ms.tileM; ++fm) {
    a[fm] = regs(fmt::format("a{}", fm), 4);
    C::ExprP off = p.a.kMajor ? C::sum({C::product(kk, lit(p.a.pitch)), lit(fm * 16)})
                             : C::sum({lit(fm * 16 * p.a.pitch), kk});
    ldmatrix("x4", p.a.kMajor, a[fm], tileRef(ta, C::sum({bufA ? bufA : lit(0), nm.aLane, off})));
  }
  for (int64_t fn = 0; fn < ms.tileN; fn += 2) {
    const bool two = fn + 1 < ms.tileN;
    std::vector<std::string> r = regs(fmt::format("b{}", fn), two ? 4 : 2);
    b[fn] = {r[0], r[1]};
    if (two) b[fn + 1] = {r[2], r[3]};
    C::ExprP off = p.b.kMajor ? C::sum({C::product(kk, lit(p.b.pitch)), lit(fn * 8)})
                             : C::sum({lit(fn * 8 * p.b.pitch), kk});
    ldmatrix(two ? "x4" : "x2", p.b.kMajor, r, tileRef(tb, C::sum({bufB ? bufB : lit(0), nm.bLane, off})));
  }
  const char* fnName = p.arith == MmaArith::F16 ? "rtcg_mma_f16" : p.arith == MmaArith::S8 ? "rtcg_mma_s8" : "rtcg_mma_bf16";
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn) {
      std::vector<C::ExprP> args;
      for (const std::string& acc : nm.acc[fm][fn]) args.push_back(C::name(acc));
      for (const std::string& r : a[fm]) args.push_back(C::name(r));
      for (const std::string& r : b[fn]) args.push_back(C::name(r));
      out.push_back(C::exprStmt(C::call(fnName, std::move(args))));
    }
}

}  // namespace rtcg::emit::mma
