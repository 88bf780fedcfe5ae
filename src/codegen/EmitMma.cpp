// A contraction on tensor cores (`mma:`, schedule/Mma.h): the block stages both operands of a
// reduction step in shared memory (converted once: TF32-rounded, tf32x3 split into big and small),
// each warp loads its fragments from the tiles and issues mma.sync on accumulators held in
// registers, and the epilogue evaluates the statement per output point with the sum replaced by
// the accumulator. Every thread runs every mma (they are warp-wide): only the staging loads and the
// epilogue's stores are guarded, and elements outside the domain are staged as zeros. With `stages`
// the steps are copied by cp.async into a ring of buffers, stages - 1 steps ahead, and converted as
// the fragments are loaded.
#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "ir/Analysis.h"
#include "ir/IntOps.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

using namespace mma;

// The accumulators' (and the contraction's) type: float, double or (s8) int.
const char* elemType(const MmaPlan& p) { return cudaTypeName(p.c.type); }

int accElements(const MmaPlan& p) { return p.arith == MmaArith::F64 ? f64AccElements(p) : 4; }

// The block's and the thread's coordinates: warp, lane group and thread in group (PTX's groupID
// and threadID_in_group), the tile origins, the batch indices from blockIdx.z.
void declareCoordinates(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  const MmaSchedule& ms = ctx.sched.mma;
  auto def = ctx.declarer(body);
  nm.tid = def("tid", coordinate(ctx, "threadIdx", 0));
  C::ExprP warp = def("warp", bin("/", nm.tid, lit(32)));
  nm.lane = def("lane", bin("%", nm.tid, lit(32)));
  nm.g = def("group", bin("/", nm.lane, lit(4)));
  nm.t = def("in_group", bin("%", nm.lane, lit(4)));
  if (p.alternatingTiles) {
    // `pingpong`: every consumer warpgroup owns the whole block tile (one warpgroup's) of its own
    // rounds, which its index picks (tileLoop); its warp w = warp % 4 holds rows 16w..16w + 15.
    nm.consumer = def("consumer", bin("/", warp, lit(4)));
    nm.wgm = nm.wgn = lit(0);
    nm.wm = def("warp_m", C::product(bin("%", warp, lit(4)), lit(16)));
    nm.wn = nm.wgn;
  } else if (p.isWgmma()) {
    // Warpgroup wg = warp / 4 owns rows 64 (wg / warpsN) and columns N (wg % warpsN) of the block
    // tile; its warp w = warp % 4 holds accumulator rows 16w..16w + 15 (wgmma's D layout).
    nm.wgm = def("group_m", C::product(bin("/", bin("/", warp, lit(4)), lit(ms.warpsN)), lit(p.fragM)));
    nm.wgn = def("group_n", C::product(bin("%", bin("/", warp, lit(4)), lit(ms.warpsN)), lit(p.fragN)));
    nm.wm = def("warp_m", C::sum({nm.wgm, C::product(bin("%", warp, lit(4)), lit(16))}));
    nm.wn = nm.wgn;
  } else if (p.rowGroups > 0) {
    // mma.sync's row groups: warp row r is group r, whose tiles are its own (its warps' rows start
    // at the tile's); its threads copy its ring's stages.
    const int64_t groupThreads = ms.warpsN * 32;
    nm.rowGroup = def("row_group", bin("/", nm.tid, lit(groupThreads)));
    nm.copyTid = def("group_tid", bin("%", nm.tid, lit(groupThreads)));
    nm.copyThreads = groupThreads;
    nm.wm = lit(0);
    nm.wn = def("warp_n", C::product(bin("%", warp, lit(ms.warpsN)), lit(ms.tileN * p.fragN)));
  } else {
    nm.wm = def("warp_m", C::product(bin("/", warp, lit(ms.warpsN)), lit(ms.tileM * p.fragM)));
    nm.wn = def("warp_n", C::product(bin("%", warp, lit(ms.warpsN)), lit(ms.tileN * p.fragN)));
  }
  // `persistent`: the block's tiles, each one's origin declared in its loop (tileLoop). Row
  // groups: group g's rounds are the block's g, g + G, ... (emitPersistentPrefetchedSteps).
  if (p.persistent()) {
    C::ExprP rounds = bin("/", bin("-", lit(p.tileCount() + p.persistentBlocks - 1), coordinate(ctx, "blockIdx", 0)),
                          lit(p.persistentBlocks));
    if (p.rowGroups > 0)
      rounds = bin("/", C::sum({bin("-", rounds, nm.rowGroup), lit(p.rowGroups - 1)}), lit(p.rowGroups));
    nm.rounds = def("rounds", rounds);
    return;
  }
  declareTileOrigin(ctx, p, nm, nullptr, body);
}

}  // namespace

namespace mma {

namespace {

// `group G` (MmaPlan::groupM): the tile index within its batch walks groups of G M tiles, M
// fastest within a group; where G does not divide the M tiles, the last group holds the rest.
void groupedTileOrigin(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& bx, std::vector<C::Stmt>& body) {
  auto def = ctx.declarer(body);
  const int64_t nTiles = p.nTiles(), mTiles = p.mTiles(), g = p.groupM;
  C::ExprP idx = def("tile_in_batch", bin("%", bx, lit(nTiles * mTiles)));
  C::ExprP grp = def("tile_group", bin("/", idx, lit(g * nTiles)));
  C::ExprP local = def("tile_local", bin("%", idx, lit(g * nTiles)));
  C::ExprP rows = lit(g);
  if (mTiles % g != 0) {
    C::ExprP rest = bin("-", lit(mTiles), C::product(grp, lit(g)));
    rows = def("group_rows", C::ternary(bin("<", lit(g), rest), lit(g), rest));
  }
  nm.m0 = def("block_m", C::product(C::sum({C::product(grp, lit(g)), bin("%", local, rows)}), lit(p.blockM)));
  nm.n0 = def("block_n", C::product(bin("/", local, rows), lit(p.blockN)));
}

}  // namespace

// Unbatched: blockIdx.x the N tile, blockIdx.y the M tile. Batched: blockIdx.x the N tile, then
// the M tile, then the batch (Plan.cpp: the blocks that run at once share the batch's operands).
// With a `tile` index (persistent) the batched order, unbatched too.
void declareTileOrigin(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& tile,
                       std::vector<C::Stmt>& body) {
  auto def = ctx.declarer(body);
  const int64_t nTiles = p.nTiles(), mTiles = p.mTiles();
  C::ExprP bx = tile ? tile : coordinate(ctx, "blockIdx", 0);
  if (p.c.batch.empty() && !tile) {
    nm.m0 = def("block_m", C::product(coordinate(ctx, "blockIdx", 1), lit(p.blockM)));
    nm.n0 = def("block_n", C::product(bx, lit(p.blockN)));
    return;
  }
  if (p.groupM > 0) {
    groupedTileOrigin(ctx, p, nm, bx, body);
  } else {
    nm.m0 = def("block_m", C::product(p.c.batch.empty() ? bin("/", bx, lit(nTiles))
                                                        : bin("%", bin("/", bx, lit(nTiles)), lit(mTiles)),
                                      lit(p.blockM)));
    nm.n0 = def("block_n", C::product(bin("%", bx, lit(nTiles)), lit(p.blockN)));
  }
  // Batch indices, the last one fastest, from blockIdx.x / (the M and N tiles).
  int64_t stride = 1;
  std::vector<C::Stmt> batch;
  for (size_t b = p.c.batch.size(); b-- > 0;) {
    C::ExprP z = bin("/", bx, lit(nTiles * mTiles));
    C::ExprP v = bin("%", stride == 1 ? z : bin("/", z, lit(stride)), lit(std::max<int64_t>(1, p.c.batchExtent[b])));
    std::string n = ctx.names.fresh("batch");
    batch.insert(batch.begin(), C::decl(ctx.idx, n, C::sum({lit(p.c.batchLo[b]), v})));
    nm.batch[p.c.batch[b]] = C::name(n);
    stride *= std::max<int64_t>(1, p.c.batchExtent[b]);
  }
  append(body, std::move(batch));
}

C::Stmt tileLoop(EmitContext& ctx, const MmaPlan& p, MmaNames& nm,
                 const std::function<void(const C::ExprP& round, std::vector<C::Stmt>& body)>& each,
                 bool consumer) {
  const bool own = consumer && p.alternatingTiles;
  const std::string round = ctx.names.fresh("round"), tile = ctx.names.fresh("tile");
  const std::string turn = own ? ctx.names.fresh("turn") : round;
  std::vector<C::Stmt> body;
  // pingpong: the consumer's turn t is round consumer + t * consumers.
  if (own)
    body.push_back(C::decl(ctx.idx, round, C::sum({nm.consumer, C::product(C::name(turn), lit(p.consumerGroups()))})));
  body.push_back(C::decl(ctx.idx, tile, C::sum({coordinate(ctx, "blockIdx", 0),
                                                C::product(C::name(round), lit(p.persistentBlocks))})));
  declareTileOrigin(ctx, p, nm, C::name(tile), body);
  if (own) nm.tileTurn = C::name(turn);
  each(C::name(round), body);
  if (!own) return C::forLoop(ctx.idx, round, lit(0), nm.rounds, C::Unroll::Never, std::move(body));
  // Its turns: the rounds from its own index, every consumers-th (each block has one a consumer at
  // least: planPingpong).
  const std::string turns = ctx.names.fresh("turns");
  const int64_t groups = p.consumerGroups();
  return C::block({C::decl(ctx.idx, turns, bin("/", C::sum({bin("-", nm.rounds, nm.consumer), lit(groups - 1)}), lit(groups))),
                   C::forLoop(ctx.idx, turn, lit(0), C::name(turns), C::Unroll::Never, std::move(body))});
}

void epiloguePrefetches(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  // The tile's last point: its far corner, or the domain's edge.
  auto last = [&](const C::ExprP& origin, int64_t block, int64_t extent) {
    C::ExprP end = C::sum({origin, lit(block)});
    return bin("-", C::ternary(bin("<", end, lit(extent)), end, lit(extent)), lit(1));
  };
  for (const Expr& load : p.epiloguePrefetch) {
    Env first, end;
    first.vars = end.vars = nm.batch;
    bindRow(p, true, nm.m0, first);
    bindRow(p, false, nm.n0, first);
    bindRow(p, true, last(nm.m0, p.blockM, p.c.mExtent), end);
    bindRow(p, false, last(nm.n0, p.blockN, p.c.nExtent), end);
    C::ExprP a = lowerAccess(ctx, load->array, load->operands, first, out);
    C::ExprP b = lowerAccess(ctx, load->array, load->operands, end, out);
    out.push_back(C::exprStmt(C::call("rtcg_prefetch_l2_range", {C::unary("&", a), C::sum({C::unary("&", b), lit(1)})})));
  }
}

}  // namespace mma

namespace {

// Without stages: the value stored converted (TF32 rounded to nearest, ties away; tf32x3 keeps the
// rounded-off rest as a second TF32 value in the second tile).
void stageConverted(EmitContext& ctx, const MmaPlan& p, const std::vector<Tile>& tiles, const C::ExprP& at,
                    C::ExprP value, std::vector<C::Stmt>& out) {
  std::string v = ctx.names.fresh("v");
  out.push_back(C::decl(elemType(p), v, std::move(value)));
  if (p.arith == MmaArith::F64) {
    out.push_back(C::assign(tileRef(tiles[0], at), "=", C::name(v)));
    return;
  }
  std::string big = ctx.names.fresh("big");
  out.push_back(C::decl("float", big, C::call("rtcg_tf32_rna", {C::name(v)})));
  out.push_back(C::assign(tileRef(tiles[0], at), "=", C::name(big)));
  if (p.arith == MmaArith::Tf32x3)
    out.push_back(C::assign(tileRef(tiles[1], at), "=",
                            C::call("rtcg_tf32_rna", {bin("-", C::name(v), C::name(big))})));
}

// One operand's tiles: rows x blockK values of the step at k0, zero outside the domain, into the
// buffer starting at element `buffer` of the tile (null: the only one). Without stages converted
// and stored; with stages copied by cp.async (zero-filled outside the domain). The copy walks the
// operand's contiguous direction with consecutive threads.
void stageOperand(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, const C::ExprP& k0,
                  const C::ExprP& buffer, std::vector<C::Stmt>& out) {
  if (p.tiles != TileForm::Padded) return stageOperandAsLoaded(ctx, p, nm, isA, k0, buffer, out);
  const int64_t rows = isA ? p.blockM : p.blockN, total = rows * p.blockK;
  const int64_t threads = nm.copiers(ctx.plan.launch.threads), rounds = ceilDiv(total, threads);
  const bool alongK = isA ? p.c.aAlongK : p.c.bAlongK;
  std::string s = ctx.names.fresh(isA ? "copy_a" : "copy_b");
  std::vector<C::Stmt> body;
  std::string e = ctx.names.fresh("e");
  body.push_back(C::decl(ctx.idx, e, C::sum({nm.copier(), C::product(C::name(s), lit(threads))})));
  C::ExprP r = alongK ? bin("/", C::name(e), lit(p.blockK)) : bin("%", C::name(e), lit(rows));
  C::ExprP kk = alongK ? bin("%", C::name(e), lit(p.blockK)) : bin("/", C::name(e), lit(rows));
  std::string rn = ctx.names.fresh("row"), kn = ctx.names.fresh("kk");
  std::vector<C::Stmt> inner{C::decl(ctx.idx, rn, r), C::decl(ctx.idx, kn, kk)};
  C::ExprP point = C::sum({isA ? nm.m0 : nm.n0, C::name(rn)});
  C::ExprP kq = C::sum({k0, C::name(kn)});
  Env env;
  env.vars = nm.batch;
  C::ExprP part = bindRow(p, isA, point, env);
  bindK(p, kq, env);
  std::vector<C::Stmt> loads;
  auto lowerOne = [&](const Expr& operand) { return lower(ctx, operand, env, loads); };
  C::ExprP value = operandAt(p, isA, part, lowerOne);
  RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
  C::ExprP inside = bin("&&", bin("<", point, lit(isA ? p.c.mExtent : p.c.nExtent)), bin("<", kq, lit(p.c.kExtent)));
  C::ExprP at = C::sum({buffer ? buffer : lit(0), C::product(C::name(rn), lit(p.tile(isA).pitch)), C::name(kn)});
  const auto& tiles = isA ? nm.tileA : nm.tileB;
  if (p.ring.stages > 1) {
    // The element's address only where it is inside (elsewhere the array's start: no byte is read).
    const int bytes = typeBytes(p.c.type);
    auto addressOf = [](C::ExprP v) {
      RTCG_ASSERT(v->kind == C::ExprKind::Index, "an mma operand copied by cp.async is a plain load");
      return C::unary("&", std::move(v));
    };
    C::ExprP address = part ? operandAt(p, isA, part, [&](const Expr& operand) { return addressOf(lowerOne(operand)); })
                            : addressOf(value);
    C::ExprP src = C::ternary(inside, address, C::name(ctx.paramNames[size_t((isA ? p.c.a() : p.c.b())->array)]));
    inner.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", bytes),
                                        {C::unary("&", tileRef(tiles[0], at)), src,
                                         C::ternary(inside, lit(bytes), lit(0))})));
  } else {
    stageConverted(ctx, p, tiles, at, C::ternary(inside, value, literalOf(p.c.type, 0, 0.0)), inner);
  }
  if (total % threads == 0) append(body, std::move(inner));
  else body.push_back(C::ifThen(bin("<", C::name(e), lit(total)), std::move(inner)));
  out.push_back(C::forLoop(ctx.idx, s, lit(0), lit(rounds), C::Unroll::Full, std::move(body)));
}

// A fragment value from operand `isA`'s tile: row `row` (of the block tile), column kcol, in the
// buffer starting at element `buffer` (null: the only one). FP64 tiles as loaded may be (k x rows).
C::ExprP tileAt(const MmaPlan& p, bool isA, const Tile& tile, const C::ExprP& buffer, C::ExprP row, C::ExprP kcol) {
  if (p.tile(isA).kMajor)
    return tileRef(tile, C::sum({buffer ? buffer : lit(0), C::product(std::move(kcol), lit(p.tile(isA).pitch)),
                                 std::move(row)}));
  return tileRef(tile, C::sum({buffer ? buffer : lit(0), C::product(std::move(row), lit(p.tile(isA).pitch)),
                               std::move(kcol)}));
}

// A fragment register's value as copied by cp.async, converted: its big part and (tf32x3) its
// small part.
std::pair<C::ExprP, C::ExprP> convertRegister(EmitContext& ctx, const MmaPlan& p, C::ExprP raw,
                                              const std::string& base, std::vector<C::Stmt>& out) {
  auto def = ctx.declarer(out, elemType(p));
  const bool x3 = p.arith == MmaArith::Tf32x3;
  if (p.arith == MmaArith::F64) return {def(base, raw), nullptr};
  // TF32 as copied: the tensor cores read the top 19 bits of each value (truncation; schedule/Mma.h).
  if (!x3) return {def(base, raw), nullptr};
  C::ExprP value = def(base + "_value", raw);
  C::ExprP big = def(base, C::call("rtcg_tf32_rna", {value}));
  return {big, def(base + "_small", C::call("rtcg_tf32_rna", {bin("-", value, big)}))};
}

// One operand register of a fragment: its big part and (tf32x3) its small part. Tiles staged
// converted hold them; tiles copied by cp.async hold the values, converted here.
std::pair<C::ExprP, C::ExprP> fragmentRegister(EmitContext& ctx, const MmaPlan& p, bool isA,
                                               const std::vector<Tile>& tiles, const C::ExprP& buffer,
                                               const C::ExprP& row, const C::ExprP& kcol, const std::string& base,
                                               std::vector<C::Stmt>& out) {
  if (p.ring.stages > 1) return convertRegister(ctx, p, tileAt(p, isA, tiles[0], buffer, row, kcol), base, out);
  std::string name = ctx.names.fresh(base);
  out.push_back(C::decl(elemType(p), name, tileAt(p, isA, tiles[0], buffer, row, kcol)));
  if (p.arith != MmaArith::Tf32x3) return {C::name(name), nullptr};
  std::string small = ctx.names.fresh(base + "_small");
  out.push_back(C::decl(elemType(p), small, tileAt(p, isA, tiles[1], buffer, row, kcol)));
  return {C::name(name), C::name(small)};
}

// TF32 tiles as loaded (MmaPlan::tiles: AsLoaded): one operand's fragments of the fragment-k at kk,
// converted. From a (rows x k) tile by ldmatrix, whose 8x8 b16 matrices are 8 x 4 words, thread
// (g, t) getting word t of row g, as the m16n8k8 TF32 registers are laid out: x4 per A fragment
// (a0-a3), x4 per two B fragments (b0, b1 of each), x2 for a last single one. From a (k x rows)
// tile value by value (pitch = 8 (mod 32): conflict-free).
void loadedOperand(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, const C::ExprP& kk,
                   const C::ExprP& buffer, Fragments& f, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  const int64_t count = isA ? ms.tileM : ms.tileN, rows = isA ? p.fragM : p.fragN, regs = isA ? 4 : 2;
  const int64_t pitch = p.tile(isA).pitch;
  const Tile& tile = (isA ? nm.tileA : nm.tileB)[0];
  const char* letter = isA ? "a" : "b";
  f.assign(size_t(count), std::vector<std::vector<C::ExprP>>(2));
  auto add = [&](int64_t fr, C::ExprP raw) {
    auto [big, small] = convertRegister(ctx, p, std::move(raw), fmt::format("{}{}", letter, fr), out);
    f[size_t(fr)][0].push_back(big), f[size_t(fr)][1].push_back(small);
  };
  if (p.tile(isA).kMajor) {
    const Offsets at = isA ? Offsets{{0, 0}, {8, 0}, {0, 4}, {8, 4}} : Offsets{{0, 0}, {0, 4}};  // (row, k)
    for (int64_t fr = 0; fr < count; ++fr)
      for (auto [dr, dc] : at)
        add(fr, tileRef(tile, C::sum({buffer, C::product(C::sum({kk, nm.t, lit(dc)}), lit(pitch)), isA ? nm.wm : nm.wn,
                                      lit(fr * rows + dr), nm.g})));
    return;
  }
  const int64_t per = isA ? 1 : 2;  // fragments per ldmatrix
  for (int64_t fr = 0; fr < count; fr += per) {
    const int64_t matrices = std::min(per, count - fr) * regs;
    std::vector<C::ExprP> args;
    std::vector<std::string> names;
    for (int64_t i = 0; i < matrices; ++i) {
      names.push_back(ctx.names.fresh(fmt::format("{}{}_bits", letter, fr)));
      out.push_back(C::decl("unsigned int", names.back(), nullptr, false));
      args.push_back(C::name(names.back()));
    }
    args.push_back(C::unary("&", tileRef(tile, C::sum({buffer, isA ? nm.aLane : nm.bLane, lit(fr * rows * pitch), kk}))));
    out.push_back(C::exprStmt(C::call(matrices == 4 ? "rtcg_ldmatrix_x4" : "rtcg_ldmatrix_x2", std::move(args))));
    for (int64_t i = 0; i < matrices; ++i) add(fr + i / regs, C::call("__uint_as_float", {C::name(names[size_t(i)])}));
  }
}

}  // namespace

namespace mma {

WarpFragments loadFragments(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk,
                            const C::ExprP& bufA, const C::ExprP& bufB, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  const bool f64 = p.arith == MmaArith::F64;
  WarpFragments f;
  Fragments& a = f.a;
  Fragments& b = f.b;
  a.assign(size_t(ms.tileM), std::vector<std::vector<C::ExprP>>(2));
  b.assign(size_t(ms.tileN), std::vector<std::vector<C::ExprP>>(2));
  // TF32 tiles as loaded: ldmatrix where it applies; FP64's value by value from either tile.
  const bool byLdmatrix = p.tiles != TileForm::Padded && !f64;
  if (byLdmatrix) {
    loadedOperand(ctx, p, nm, true, kk, bufA, a, out);
    loadedOperand(ctx, p, nm, false, kk, bufB, b, out);
  }
  const Offsets aAt = f64 ? f64AOffsets(p) : Offsets{{0, 0}, {8, 0}, {0, 4}, {8, 4}};  // (row, k) per register
  const Offsets bAt = f64 ? f64BOffsets(p) : Offsets{{0, 0}, {0, 4}};
  for (int64_t fm = 0; fm < (byLdmatrix ? 0 : ms.tileM); ++fm)
    for (auto [dr, dc] : aAt) {
      C::ExprP row = C::sum({nm.wm, lit(fm * p.fragM + dr), nm.g});
      auto [big, small] = fragmentRegister(ctx, p, true, nm.tileA, bufA, row, C::sum({kk, nm.t, lit(dc)}),
                                           fmt::format("a{}", fm), out);
      a[fm][0].push_back(big), a[fm][1].push_back(small);
    }
  for (int64_t fn = 0; fn < (byLdmatrix ? 0 : ms.tileN); ++fn)
    for (auto [dr, dc] : bAt) {
      C::ExprP col = C::sum({nm.wn, lit(fn * p.fragN + dr), nm.g});
      auto [big, small] = fragmentRegister(ctx, p, false, nm.tileB, bufB, col, C::sum({kk, nm.t, lit(dc)}),
                                           fmt::format("b{}", fn), out);
      b[fn][0].push_back(big), b[fn][1].push_back(small);
    }
  return f;
}

void issueMmas(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const WarpFragments& f, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  const bool f64 = p.arith == MmaArith::F64, x3 = p.arith == MmaArith::Tf32x3;
  const Fragments& a = f.a;
  const Fragments& b = f.b;
  auto mma = [&](const std::vector<std::string>& acc, int64_t fm, int64_t fn, int pa, int pb, std::vector<C::Stmt>& to) {
    std::vector<C::ExprP> args;
    for (const std::string& r : acc) args.push_back(C::name(r));
    for (const C::ExprP& r : a[fm][pa]) args.push_back(r);
    for (const C::ExprP& r : b[fn][pb]) args.push_back(r);
    to.push_back(C::exprStmt(C::call(f64 ? f64MmaHelper(p) : "rtcg_mma_tf32", std::move(args))));
  };
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn) {
      if (!x3) {
        mma(nm.acc[fm][fn], fm, fn, 0, 0, out);
        continue;
      }
      // tf32x3: the three products of this fragment-k go into zeroed registers, which are then
      // added to the accumulator by FP32 adds (rounded to nearest). The tensor cores' own sums
      // truncate, and accumulated in place that bias grows with K past the FP32-class accuracy the
      // policy promises (docs/bench.md, "Decisions and their measurements").
      std::vector<C::Stmt> part;
      std::vector<std::string> t;
      for (size_t r = 0; r < nm.acc[fm][fn].size(); ++r) {
        t.push_back(ctx.names.fresh("part"));
        part.push_back(C::decl("float", t.back(), C::floatLit(0, true), false));
      }
      mma(t, fm, fn, 1, 0, part), mma(t, fm, fn, 0, 1, part), mma(t, fm, fn, 0, 0, part);
      for (size_t r = 0; r < t.size(); ++r) part.push_back(C::assign(C::name(nm.acc[fm][fn][r]), "+=", C::name(t[r])));
      out.push_back(C::block(std::move(part)));
    }
}

}  // namespace mma

namespace {

// One fragment-k of the step: per warp fragment its operand registers, then every mma.
void fragmentStep(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk, const C::ExprP& bufA,
                  const C::ExprP& bufB, std::vector<C::Stmt>& out) {
  if (mmaPacked(p.arith)) return halfFragmentStep(ctx, p, nm, kk, bufA, bufB, out);
  issueMmas(ctx, p, nm, loadFragments(ctx, p, nm, kk, bufA, bufB, out), out);
}

// The fragment-k loop over one step's tiles.
C::Stmt fragmentLoop(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& bufA, const C::ExprP& bufB) {
  std::string kf = ctx.names.fresh("kf");
  std::vector<C::Stmt> frag;
  fragmentStep(ctx, p, nm, C::product(C::name(kf), lit(p.fragK)), bufA, bufB, frag);
  return C::forLoop(ctx.idx, kf, lit(0), lit(p.blockK / p.fragK), C::Unroll::Full, std::move(frag));
}

// The reduction without stages: per step, stage both operands between barriers, then compute.
void emitSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  std::string step = ctx.names.fresh("step");
  std::vector<C::Stmt> body;
  std::string k0 = ctx.names.fresh("k0");
  body.push_back(C::decl(ctx.idx, k0, C::product(C::name(step), lit(p.blockK))));
  body.push_back(C::syncThreads());  // the previous step's fragments are read
  stageOperand(ctx, p, nm, true, C::name(k0), nullptr, body);
  stageOperand(ctx, p, nm, false, C::name(k0), nullptr, body);
  if (mmaPacked(p.arith) && halfCopiesAsync(ctx, p)) {  // packed tiles copied by cp.async: this step's
    body.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
    body.push_back(C::exprStmt(C::call("rtcg_cp_async_wait0", {})));
  }
  body.push_back(C::syncThreads());
  body.push_back(fragmentLoop(ctx, p, nm, nullptr, nullptr));
  out.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
}

// The reduction with stages: the cp.async ring (openRing) with stages - 1 steps copied ahead,
// then the fragments of this step's buffer. `persistent`: the ring over the block's tiles, each
// finished by `finishTile`.
void emitPipelinedSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out,
                        const std::function<void(std::vector<C::Stmt>& out)>& finishTile) {
  if (p.persistent()) {
    auto copyOperand = [&](bool isA, const C::ExprP& k0, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
      stageOperand(ctx, p, nm, isA, k0, buffer, to);
    };
    return emitPersistentPrefetchedSteps(ctx, p, nm, copyOperand, finishTile, out);
  }
  auto copyStep = [&](const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    C::ExprP k0 = C::product(stepIndex, lit(p.blockK));
    stageOperand(ctx, p, nm, true, k0, buffer ? C::product(buffer, lit(p.a.buffer)) : nullptr, to);
    stageOperand(ctx, p, nm, false, k0, buffer ? C::product(buffer, lit(p.b.buffer)) : nullptr, to);
  };
  if (p.hoistedCopies) return emitHoistedSteps(ctx, p, nm, out);
  if (p.prefetchFragments()) return emitPrefetchedSteps(ctx, p, nm, copyStep, out);
  std::vector<C::Stmt> body;
  const StepRing ring = openRing(ctx, p.ring, p.steps, RingCopy{copyStep, nullptr}, RingHandOver{}, out, &body);
  body.push_back(fragmentLoop(ctx, p, nm, C::product(C::name(ring.buffer), lit(p.a.buffer)),
                              C::product(C::name(ring.buffer), lit(p.b.buffer))));
  out.push_back(C::forLoop(ctx.idx, ring.step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
}

}  // namespace

namespace mma {

// Accumulator element r of fragment (fm, fn): its row and column in the block tile (PTX's C
// fragment layout), or in the domain with `blockOrigin` (the block tile's origin added first).
std::pair<C::ExprP, C::ExprP> accPoint(const MmaPlan& p, const MmaNames& nm, size_t fm, size_t fn, int r,
                                       bool blockOrigin) {
  // c2, c3 are row g + 8 in every 16-row fragment (m16n8 and wgmma's chunks); m8n8k4's 8-row
  // fragment has none.
  const int64_t dr = p.fragM != 8 && r >= 2 ? 8 : 0;
  // wgmma: a warp's accumulators are 16 rows by N / 8 chunks of 8 columns, each laid out as an
  // m16n8 fragment (nm.acc[0][chunk]).
  const int64_t fragN = p.isWgmma() ? 8 : p.fragN;
  std::vector<C::ExprP> row{nm.wm, lit(int64_t(fm) * p.fragM + dr), nm.g};
  std::vector<C::ExprP> col{nm.wn, lit(int64_t(fn) * fragN + (r & 1)), C::product(nm.t, lit(2))};
  if (blockOrigin) row.insert(row.begin(), nm.m0), col.insert(col.begin(), nm.n0);
  return {C::sum(row), C::sum(col)};
}

}  // namespace mma

namespace {

// Whether `e` reads nothing but the batch indices, sizes and scalars (no load, let or other index),
// and whether it reads a batch index at all.
bool batchUniform(const Expr& e, const std::map<int, C::ExprP>& batch, bool& readsBatch) {
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: return true;
    case ExprKind::Var:
      if (e->varKind == VarKind::Index) return batch.count(e->varId) ? (readsBatch = true) : false;
      return e->varKind != VarKind::Let;
    case ExprKind::Load:
    case ExprKind::Reduce: return false;
    default:
      for (const Expr& o : e->operands)
        if (!batchUniform(o, batch, readsBatch)) return false;
      return true;
  }
}

// The largest subexpressions of the epilogue's statements that depend on the batch indices alone
// (the Ozaki products' `select(modulus == 0, 256, ...)` chains), declared once before the
// epilogue: evaluated per output point, they cost the products' epilogue more than its stores;
// and the multiplier of such an i32 divisor of a % (rtcg_mod_magic), which then takes no division.
void hoistBatchUniform(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  if (nm.batch.empty()) return;
  Env env;
  env.vars = nm.batch;
  std::function<void(const Expr&)> visit = [&](const Expr& e) {
    bool readsBatch = false;
    if (e->kind != ExprKind::Var && batchUniform(e, nm.batch, readsBatch) && readsBatch) {
      if (nm.epilogue.hoisted.count(e.get())) return;
      const std::string name = ctx.names.fresh("per_batch");
      out.push_back(C::decl(cudaTypeName(e->type), name, lower(ctx, e, env, out)));
      nm.epilogue.hoisted[e.get()] = C::name(name);
      return;
    }
    for (const Expr& o : e->operands) visit(o);
    // An i32 % by a hoisted divisor: its multiplier once too, so that each point needs no division
    // (nor conversions to and from f64: they were most of the Ozaki products' epilogue).
    if (e->kind == ExprKind::Binary && e->binaryOp == BinaryOp::Mod && e->operands[0]->type == ScalarType::I32) {
      auto d = nm.epilogue.hoisted.find(e->operands[1].get());
      if (d != nm.epilogue.hoisted.end() && !nm.epilogue.divisorMagic.count(d->first)) {
        const std::string name = ctx.names.fresh("per_batch_magic");
        out.push_back(C::decl("unsigned long long", name, C::call("rtcg_mod_magic", {d->second})));
        nm.epilogue.divisorMagic[d->first] = C::name(name);
        ctx.needs.floorInt |= 4;
      }
    }
  };
  for (const ContractionPart& part : p.c.parts) {
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    visit(st.value);
    for (const Expr& ix : st.indices) visit(ix);
  }
}

// Whether the fragments' column pairs (accumulator elements r and r + 1: columns 2t and 2t + 1 of
// one row) store as one 8-byte float2: f32 statements whose outputs' offsets have unit stride
// along N and are even otherwise (a pair's first column is even), and 8-byte aligned arrays. N's
// rows of several dimensions (stacked statements: dg_diff's Dr, Ds, Dt) need an even, evenly
// starting innermost extent, so that no pair straddles two rows of the outer ones (or two
// statements). Single floats 8 bytes apart write half of each sector per store, two sectors where
// the rows are no 32-byte multiple (dg_diff_stacked N6: docs/bench.md, session 39). f64 pairs (one
// 16-byte double2) on mma.sync's persistent loop, whose `resident a` puts the output's contiguous
// direction on N (the other f64 forms keep single stores, as measured).
bool pairedStores(const EmitContext& ctx, const MmaPlan& p) {
  const ScalarType type = p.c.type == ScalarType::F64 && !p.isWgmma() && p.persistent() ? ScalarType::F64 : ScalarType::F32;
  if (ctx.arrayAlignment < 2 * typeBytes(type)) return false;
  if (!plainRows(p.c, false) && (p.c.nRows.back().extent % 2 != 0 || p.c.nRows.back().lo % 2 != 0)) return false;
  if (plainRows(p.c, false) && p.c.nLo % 2 != 0) return false;
  for (const ContractionPart& part : p.c.parts) {
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    if (ctx.k.params[size_t(st.array)].type != type) return false;
    if (!offsetInRunsOf(ctx.k, st, p.c.n, 0, 2)) return false;
  }
  return true;
}

}  // namespace

namespace mma {

// The epilogue's environment at the point (m, n + column): the batch indices, the rows of M bound
// at m and those of N at n + column, or from `chunk`'s column where given.
Env pointEnv(const MmaPlan& p, const MmaNames& nm, const C::ExprP& m, const C::ExprP& n, int64_t column,
             const ChunkColumn* chunk) {
  Env env = nm.epilogue;
  env.vars = nm.batch;
  bindRow(p, true, m, env);
  if (!chunk) {
    bindRow(p, false, column ? C::sum({n, lit(column)}) : n, env);
  } else {
    const ContractionRow& i = p.c.nRows.back();
    env.vars[i.loop] = C::sum({lit(i.lo), chunk->inner, lit(column)});
  }
  return env;
}

// The output point (mm, nn) relative to the domain's origin: declared, guarded, and `body(q, at,
// n)`'s statements for the statement there (the only one, or the stacked one its row or column
// picks; n: the column's name). With `chunk`, N's rows are bound from it rather than from the
// column's division.
void emitPoint(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::ExprP mm, C::ExprP nn, const ChunkColumn* chunk,
               const std::function<std::vector<C::Stmt>(size_t q, const PointAt& at, const C::ExprP& n)>& body,
               std::vector<C::Stmt>& out) {
  std::string mi = ctx.names.fresh("m"), ni = ctx.names.fresh("n");
  std::vector<C::Stmt> point{C::decl(ctx.idx, mi, std::move(mm)), C::decl(ctx.idx, ni, std::move(nn))};
  const PointAt at = [&](size_t q, int64_t column, const C::ExprP& sum, std::vector<C::Stmt>& to) {
    const ContractionPart& part = p.c.parts[q];
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    Env env = pointEnv(p, nm, C::name(mi), C::name(ni), column, chunk);
    env.hoisted[part.sum.get()] = sum;
    C::ExprP value = nm.accumulatorsHoldValues ? sum : lower(ctx, st.value, env, to);
    C::ExprP target = lowerAccess(ctx, st.array, st.indices, env, to);
    if (chunk && chunk->array) {
      RTCG_ASSERT(target->kind == C::ExprKind::Index, "a chunk's array replaces a plain array's");
      target = C::index(chunk->array, target->args[1]);
    }
    return std::make_pair(target, value);
  };
  auto bodyOf = [&](size_t q) { return body(q, at, C::name(ni)); };
  Env rows;
  C::ExprP partM = bindRow(p, true, C::name(mi), rows);
  C::ExprP partN = !chunk ? bindRow(p, false, C::name(ni), rows) : chunk->array ? nullptr : chunk->part;
  C::ExprP part = partM ? partM : partN;
  std::vector<C::Stmt> store = part ? std::vector<C::Stmt>{chooseStatement(p, part, bodyOf)} : bodyOf(0);
  C::ExprP inside = bin("&&", bin("<", C::name(mi), lit(p.c.mExtent)), bin("<", C::name(ni), lit(p.c.nExtent)));
  point.push_back(C::ifThen(inside, std::move(store)));
  out.push_back(C::block(std::move(point)));
}

// The statements' arrays chosen by `statement` (the stacked statement's index): `statement == 0 ?
// a0 : statement == 1 ? a1 : ... a_last`, as a pointer `name` (past the last statement: the last
// one's, whose points the guard leaves out).
C::Stmt statementArrayDecl(const EmitContext& ctx, const MmaPlan& p, const C::ExprP& statement, const std::string& name) {
  const size_t last = p.c.parts.size() - 1;
  auto arrayOf = [&](size_t q) { return C::name(ctx.paramNames[size_t(ctx.nest.body[size_t(p.c.parts[q].statement)].array)]); };
  C::ExprP chosen = arrayOf(last);
  if (statement->kind == C::ExprKind::IntLit)  // a literal statement (the epilogue per N origin)
    chosen = arrayOf(size_t(std::clamp<int64_t>(statement->intValue, 0, int64_t(last))));
  else
    for (size_t s = last; s-- > 0;) chosen = C::ternary(bin("==", statement, lit(int64_t(s))), arrayOf(s), chosen);
  const Param& first = ctx.k.params[size_t(ctx.nest.body[size_t(p.c.parts[0].statement)].array)];
  return C::decl(std::string(cudaTypeName(first.type)) + "*", name, chosen, false);
}

// wgmma's chunk fn of stacked rows: its first column's statement and i - lo, declared once for
// its points (chunk_q = base / E, chunk_i = base % E, base = n0 + wn + 8 fn).
std::pair<C::ExprP, C::ExprP> declareChunkStatement(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, size_t fn,
                                                    std::vector<C::Stmt>& out) {
  const int64_t e = p.c.nRows.back().extent;
  C::ExprP base = C::sum({nm.n0, nm.wn, lit(int64_t(fn) * 8)});
  // A literal base (the epilogue per N origin: epiloguePerOrigin) gives literal statement and column.
  if (base->kind == C::ExprKind::IntLit && !base->longLong) return {lit(base->intValue / e), lit(base->intValue % e)};
  const std::string q = ctx.names.fresh("chunk_q"), i = ctx.names.fresh("chunk_i");
  out.push_back(C::decl(ctx.idx, q, bin("/", base, lit(e))));
  out.push_back(C::decl(ctx.idx, i, bin("%", base, lit(e))));
  return {C::name(q), C::name(i)};
}

}  // namespace mma

namespace {

// The output point (mm, nn): the statement evaluated there with the sum replaced by `sum`.
// With `chunk`, N's rows are bound from it (emitPoint).
void storePoint(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::ExprP mm, C::ExprP nn, C::ExprP sum,
                std::vector<C::Stmt>& out, const ChunkColumn* chunk = nullptr) {
  emitPoint(ctx, p, nm, std::move(mm), std::move(nn), chunk,
            [&](size_t q, const PointAt& at, const C::ExprP&) {
              std::vector<C::Stmt> store;
              auto [target, value] = at(q, 0, sum, store);
              store.push_back(emitStore(ctx, size_t(p.c.parts[q].statement), target, value));
              return store;
            },
            out);
}

// The output point (mm, nn) and the v - 1 after it along the shared epilogue's fast direction
// (epilogueVectorWidth), whose statement stores its sum alone: one 16-byte copy from the epilogue
// tile, where `first` is the point's element, to the output.
void storeVector(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::ExprP mm, C::ExprP nn, C::ExprP first,
                 std::vector<C::Stmt>& out) {
  const char* vectorType = p.c.type == ScalarType::F64 ? "double2*" : p.c.type == ScalarType::F32 ? "float4*" : "int4*";
  emitPoint(ctx, p, nm, std::move(mm), std::move(nn), nullptr,
            [&](size_t q, const PointAt& at, const C::ExprP&) {
              std::vector<C::Stmt> store;
              C::ExprP target = C::castTo(vectorType, C::unary("&", at(q, 0, first, store).first));
              C::ExprP value = C::index(C::castTo(vectorType, C::unary("&", first)), lit(0));
              store.push_back(ctx.plan.streams(size_t(p.c.parts[q].statement))
                                  ? C::exprStmt(C::call("__stcs", {target, value}))
                                  : C::assign(C::index(target, lit(0)), "=", value));
              return store;
            },
            out);
}

// A column pair's two points (pairedStores): one float2 (f64: double2) store of both where the
// second is inside the domain, else the first alone.
void storePair(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::ExprP mm, C::ExprP nn, const std::string& sum0,
               const std::string& sum1, std::vector<C::Stmt>& out, const ChunkColumn* chunk = nullptr) {
  auto pairOf = [&](size_t q, const PointAt& at, const C::ExprP& n) {
    const size_t statement = size_t(p.c.parts[q].statement);
    std::vector<C::Stmt> both;
    auto [target, first] = at(q, 0, C::name(sum0), both);
    C::ExprP second = at(q, 1, C::name(sum1), both).second;
    const bool f64 = p.c.type == ScalarType::F64;
    C::ExprP pair = C::castTo(f64 ? "double2*" : "float2*", C::unary("&", target));
    C::ExprP value = C::call(f64 ? "make_double2" : "make_float2", {first, second});
    both.push_back(ctx.plan.streams(statement) ? C::exprStmt(C::call("__stcs", {pair, value}))
                                               : C::assign(C::index(pair, lit(0)), "=", value));
    if (p.c.nExtent % 2 == 0) return both;
    std::vector<C::Stmt> alone;  // the last pair may have its first column alone
    auto [t, v] = at(q, 0, C::name(sum0), alone);
    alone.push_back(emitStore(ctx, statement, t, v));
    return std::vector<C::Stmt>{
        C::ifThen(bin("<", C::sum({n, lit(1)}), lit(p.c.nExtent)), std::move(both), std::move(alone))};
  };
  emitPoint(ctx, p, nm, std::move(mm), std::move(nn), chunk, pairOf, out);
}

// The thread's column of a chunk (its statement q and first i, chunk_q and chunk_i), `offset` (0
// or 1) past its first: the statement and i - lo, past a statement boundary where E is no
// multiple of 8, declared once for the chunk's pairs or single stores (chunkArrayOf's; the
// branching pairs keep their own expressions).
ChunkColumn chunkColumnOf(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& q, const C::ExprP& i,
                          std::vector<C::Stmt>& out, int64_t offset = 0) {
  const int64_t e = p.c.nRows.back().extent;
  C::ExprP column = offset ? C::sum({i, C::product(nm.t, lit(2)), lit(offset)}) : C::sum({i, C::product(nm.t, lit(2))});
  C::ExprP part = q;
  if (e % 8 != 0) {  // the chunk may cross into the next statement
    const std::string c = ctx.names.fresh("chunk_column"), wrap = ctx.names.fresh("chunk_wrap");
    out.push_back(C::decl(ctx.idx, c, column));
    out.push_back(C::decl(ctx.idx, wrap, C::castTo("int", bin(">=", C::name(c), lit(e)))));
    column = bin("-", C::name(c), C::product(C::name(wrap), lit(e)));
    part = C::sum({q, C::name(wrap)});
  }
  const std::string inner = ctx.names.fresh("chunk_inner");
  out.push_back(C::decl(ctx.idx, inner, column));
  return ChunkColumn{part, C::name(inner), nullptr};
}

// chunkColumnOf's column with the statement's array as a pointer instead of the statement
// (statementArrayDecl).
ChunkColumn chunkArrayOf(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& q, const C::ExprP& i,
                         std::vector<C::Stmt>& out, int64_t offset = 0) {
  ChunkColumn column = chunkColumnOf(ctx, p, nm, q, i, out, offset);
  const std::string array = ctx.names.fresh("chunk_array");
  out.push_back(statementArrayDecl(ctx, p, column.part, array));
  return ChunkColumn{nullptr, column.inner, C::name(array)};
}

// Whether the epilogue computes every point's value before it stores any (valuesFirst): where the
// statements read memory beside their sums (DG lifting's `rhs[k, i] + invJ[k] * sum`), a point's
// loads would otherwise follow the stores before it, which may alias them, one memory latency
// after another. The nest's race proof says no point reads what another point writes, so the
// order keeps the meaning. The values go back into the accumulators, so the statements' types
// must be the accumulators'.
constexpr int64_t kValuesInFlight = 16;

bool valuesFirst(const EmitContext& ctx, const MmaPlan& p) {
  for (const ContractionPart& part : p.c.parts) {
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    if (ctx.k.params[size_t(st.array)].type != p.c.type || st.value->type != p.c.type) return false;
  }
  return !epilogueLoads(ctx.nest, p.c).empty();
}

// Whether the stacked statements store their sums alone at the same indices of arrays of one shape
// and one store kind (dg_diff's ur, us, ut), so that a point's statement only picks its array.
bool sameStoresButArrays(const EmitContext& ctx, const MmaPlan& p) {
  const Stmt& first = ctx.nest.body[size_t(p.c.parts[0].statement)];
  const Param& firstArray = ctx.k.params[size_t(first.array)];
  for (const ContractionPart& part : p.c.parts) {
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    const Param& array = ctx.k.params[size_t(st.array)];
    if (st.value.get() != part.sum.get() || array.type != firstArray.type ||
        ctx.plan.streams(size_t(part.statement)) != ctx.plan.streams(size_t(p.c.parts[0].statement)) ||
        st.indices.size() != first.indices.size() || array.shape.size() != firstArray.shape.size())
      return false;
    for (size_t d = 0; d < st.indices.size(); ++d)
      if (!sameExpr(st.indices[d], first.indices[d]) ||
          constIntValue(array.shape[d], ctx.k) != constIntValue(firstArray.shape[d], ctx.k))
        return false;
  }
  return true;
}

// Per accumulator element: its output point, guarded, and the statement evaluated there with the
// sum replaced by the accumulator (column pairs together where pairedStores).
void emitEpilogue(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  const bool pairs = pairedStores(ctx, p);
  const bool oddPairs = !pairs && !valuesFirst(ctx, p) && oddPairStores(ctx, p, sameStoresButArrays(ctx, p));
  // wgmma's chunk fn holds columns base + 2t + {0, 1} (base = n0 + wn + 8 fn). Of N's stacked rows
  // (statement, i) with E >= 8 values of i, the chunk's statement and first i are computed once
  // (chunk_q = base / E, chunk_i = base % E) for its points instead of a division at each (which
  // made dg_diff N5's epilogue 1.8x the instructions of the stacked kernel's: docs/bench.md,
  // session 40); a chunk crosses into the next statement only where E is no multiple of 8.
  const int64_t e = p.c.nRows.back().extent;
  const bool chunked = pairs && p.isWgmma() && stackedRows(p.c, false) && p.c.nRows.size() == 2 && e >= 8;
  // Statements that differ only in their arrays: the thread's array and column of each chunk once,
  // its pairs' stores without a branch (dg_diff N6's pairs branched over statements: docs/bench.md,
  // session 41).
  const bool chunkArray = chunked && sameStoresButArrays(ctx, p);
  // Single stores (no pairs: rows of an odd number of values, dg_diff's at N = 8) of such
  // statements: each of the thread's two columns of a chunk takes its array once for the chunk's
  // two rows, where each point divided its column and branched over the statements: dg_diff N8's
  // one-consumer form 0.463 -> 0.424 ms. Under `pingpong`, whose epilogue runs beside the other
  // consumer's steps, only where setmaxnreg gives the consumers registers for it (the plan's
  // MmaPlan::singleArrays) and the producer keeps two or more steps' loads in flight: with its loads 8 rows
  // in flight it ran slower (0.357 -> 0.406 ms; session 47), within the launch's registers it
  // spilled (docs/bench.md, session 49).
  const bool singleArrays = !pairs && p.isWgmma() && (!p.alternatingTiles || p.singleArrays) &&
                            stackedRows(p.c, false) && p.c.nRows.size() == 2 && e >= 8 && sameStoresButArrays(ctx, p);
  // Each accumulator chunk's points: the first pass of valuesFirst (the value into the
  // accumulator, where the point is inside the domain), or the stores.
  auto values = [&](size_t fm, size_t fn) {
    for (int r = 0; r < accElements(p); ++r) {
      auto [mm, nn] = accPoint(p, nm, fm, fn, r, true);
      const std::string& acc = nm.acc[fm][fn][size_t(r)];
      emitPoint(ctx, p, nm, mm, nn, nullptr,
                [&](size_t q, const PointAt& at, const C::ExprP&) {
                  std::vector<C::Stmt> value;
                  C::ExprP v = at(q, 0, C::name(acc), value).second;
                  value.push_back(C::assign(C::name(acc), "=", v));
                  return value;
                },
                out);
    }
  };
  OddPairState odd;  // oddPairs: what the chunks share
  // The chunk's points one by one, or by column pairs (pairedStores).
  auto plainStores = [&](size_t fm, size_t fn, std::vector<C::Stmt>& to) {
    C::ExprP q, i;
    std::optional<ChunkColumn> arrayChunk, singleColumns[2];
    if (chunked || singleArrays) std::tie(q, i) = declareChunkStatement(ctx, p, nm, fn, to);
    if (chunkArray) arrayChunk = chunkArrayOf(ctx, p, nm, q, i, to);
    if (singleArrays)
      for (int64_t c = 0; c < 2; ++c) singleColumns[c] = chunkArrayOf(ctx, p, nm, q, i, to, c);
    for (int r = 0; r < accElements(p); r += pairs ? 2 : 1) {
      auto [mm, nn] = accPoint(p, nm, fm, fn, r, true);
      if (!pairs) {
        storePoint(ctx, p, nm, mm, nn, C::name(nm.acc[fm][fn][r]), to, singleArrays ? &*singleColumns[r & 1] : nullptr);
        continue;
      }
      // Statements that pick by branch: the column's expressions at each pair. Declared once per
      // chunk instead (chunkColumnOf), they ran slower (docs/bench.md, session 41).
      std::optional<ChunkColumn> chunk = arrayChunk;
      if (chunked && !chunkArray) {
        C::ExprP inner = C::sum({i, C::product(nm.t, lit(2))});
        chunk = e % 8 == 0 ? ChunkColumn{q, inner, nullptr}
                           : ChunkColumn{C::sum({q, C::castTo("int", bin(">=", inner, lit(e)))}),
                                         bin("-", inner, C::product(C::castTo("int", bin(">=", inner, lit(e))), lit(e))),
                                         nullptr};
      }
      storePair(ctx, p, nm, mm, nn, nm.acc[fm][fn][r], nm.acc[fm][fn][r + 1], to, chunk ? &*chunk : nullptr);
    }
  };
  auto stores = [&](size_t fm, size_t fn) {
    if (oddPairs) {
      storeOddPairChunk(ctx, p, nm, fm, fn, odd, [&](std::vector<C::Stmt>& to) { plainStores(fm, fn, to); }, out);
      return;
    }
    plainStores(fm, fn, out);
  };
  // valuesFirst: the chunks in groups of kValuesInFlight values, each group's values before its
  // stores (all of a tile's loads in flight at once spilled m64n64 2x2's 96 registers).
  std::vector<std::pair<size_t, size_t>> chunks;
  for (size_t fm = 0; fm < nm.acc.size(); ++fm)
    for (size_t fn = 0; fn < nm.acc[fm].size(); ++fn) chunks.push_back({fm, fn});
  const bool first = valuesFirst(ctx, p);
  const size_t group = first ? size_t(std::max<int64_t>(1, kValuesInFlight / accElements(p))) : chunks.size();
  for (size_t g = 0; g < chunks.size(); g += group) {
    const size_t last = std::min(chunks.size(), g + group);
    if (first) {
      for (size_t c = g; c < last; ++c) values(chunks[c].first, chunks[c].second);
      nm.accumulatorsHoldValues = true;
    }
    for (size_t c = g; c < last; ++c) stores(chunks[c].first, chunks[c].second);
    nm.accumulatorsHoldValues = false;
  }
}

// Under `pingpong` the N origin of a tile takes one of nTiles values. Where stacked statements of
// several arrays share the tile and their rows hold an odd number of values (dg_diff at N = 8: no
// column pairs, each point's array and alignment apart), the epilogue is emitted once per origin,
// the origin a literal in each, so that each chunk's statement, column and bounds fold to
// constants instead of being computed at every tile, and a statement's columns store as one
// statement's rows do (EmitMmaOddRows.cpp, runs): dg_diff N8 ran 4% faster so, and 7% more with
// the runs; with column pairs (dg_diff N6) 1.6% slower, and the one statement of the
// stacked kernel, which picks no array, 1.3% slower (docs/bench.md, sessions 53 and 54).
// kOriginCases bounds the copies of the epilogue.
constexpr int64_t kOriginCases = 4;

bool epiloguePerOrigin(const EmitContext& ctx, const MmaPlan& p) {
  return p.isWgmma() && p.alternatingTiles && p.c.parts.size() > 1 && p.c.batch.empty() && stackedRows(p.c, false) &&
         !pairedStores(ctx, p) && p.nTiles() > 1 && p.nTiles() <= kOriginCases;
}

// The chain: if (n0 == 0) {...} else if (n0 == blockN) {...} ... else {the last origin's}.
void emitEpiloguePerOrigin(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  const C::ExprP origin = nm.n0;
  std::vector<C::Stmt> chain;
  for (int64_t j = p.nTiles(); j-- > 0;) {
    std::vector<C::Stmt> body;
    nm.n0 = lit(j * p.blockN);
    emitEpilogue(ctx, p, nm, body);
    chain = chain.empty() ? std::move(body)
                          : std::vector<C::Stmt>{C::ifThen(bin("==", origin, lit(j * p.blockN)), std::move(body), std::move(chain))};
  }
  nm.n0 = origin;
  append(out, std::move(chain));
}

// `epilogue shared`: after a barrier (every warp is done with the operand tiles), the accumulators
// go to the epilogue tile (its fast direction the output's contiguous one), a barrier, then the
// block walks the tile in that order, consecutive threads on consecutive output elements.
void emitSharedEpilogue(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  const Tile tile{std::string("rtcg_smem_") + typeName(p.c.type), 0};
  auto at = [&](C::ExprP row, C::ExprP col) {
    return p.epilogueAlongM() ? C::sum({C::product(std::move(col), lit(p.epiloguePitch)), std::move(row)})
                            : C::sum({C::product(std::move(row), lit(p.epiloguePitch)), std::move(col)});
  };
  out.push_back(C::syncThreads());
  // Along N, f32 accumulators r and r + 1 are neighbours in a row: one float2 store (planEpilogue).
  const bool pairs = !p.epilogueAlongM() && p.c.type == ScalarType::F32;
  for (size_t fm = 0; fm < nm.acc.size(); ++fm)
    for (size_t fn = 0; fn < nm.acc[fm].size(); ++fn)
      for (int r = 0; r < accElements(p); r += pairs ? 2 : 1) {
        auto [row, col] = accPoint(p, nm, fm, fn, r, false);
        if (!pairs) {
          out.push_back(C::assign(tileRef(tile, at(row, col)), "=", C::name(nm.acc[fm][fn][r])));
          continue;
        }
        C::ExprP pair = C::castTo("float2*", C::unary("&", tileRef(tile, at(row, col))));
        out.push_back(C::assign(C::index(pair, lit(0)), "=",
                                C::call("make_float2", {C::name(nm.acc[fm][fn][r]), C::name(nm.acc[fm][fn][r + 1])})));
      }
  out.push_back(C::syncThreads());
  // epilogueVectorWidth: v outputs a thread and 16-byte access; where one tile spans the fast
  // direction, only its extent (no vectors of padding).
  const int64_t v = epilogueVectorWidth(ctx.k, ctx.nestIdx, p, ctx.arrayAlignment);
  const bool alongM = p.epilogueAlongM();
  const int64_t block = alongM ? p.blockM : p.blockN, tiles = alongM ? p.mTiles() : p.nTiles();
  const int64_t fast = (v > 1 && tiles == 1 ? (alongM ? p.c.mExtent : p.c.nExtent) : block) / v;
  const int64_t total = fast * (alongM ? p.blockN : p.blockM), threads = ctx.plan.launch.threads;
  std::string s = ctx.names.fresh("out"), e = ctx.names.fresh("e");
  std::vector<C::Stmt> body{C::decl(ctx.idx, e, C::sum({nm.tid, C::product(C::name(s), lit(threads))}))};
  std::string rn = ctx.names.fresh("row"), cn = ctx.names.fresh("col");
  std::vector<C::Stmt> inner;
  C::ExprP slowIx = bin("/", C::name(e), lit(fast)), fastIx = bin("%", C::name(e), lit(fast));
  if (v > 1) fastIx = C::product(std::move(fastIx), lit(v));
  inner.push_back(C::decl(ctx.idx, rn, alongM ? fastIx : slowIx));
  inner.push_back(C::decl(ctx.idx, cn, alongM ? slowIx : fastIx));
  C::ExprP value = tileRef(tile, at(C::name(rn), C::name(cn)));
  if (v == 1) storePoint(ctx, p, nm, C::sum({nm.m0, C::name(rn)}), C::sum({nm.n0, C::name(cn)}), std::move(value), inner);
  else storeVector(ctx, p, nm, C::sum({nm.m0, C::name(rn)}), C::sum({nm.n0, C::name(cn)}), std::move(value), inner);
  if (total % threads == 0) append(body, std::move(inner));
  else body.push_back(C::ifThen(bin("<", C::name(e), lit(total)), std::move(inner)));
  // The loop left to NVCC's unrolling (by 4) so that a thread's loads from the tile issue back to
  // back instead of each store waiting for its own (docs/bench.md, session 45): with 16-byte vectors
  // (DG differentiation's store-bound f64 product ran no faster than with the fragments' stores
  // without it), and for f64 on mma.sync where the tiles divide the output (one block a
  // multiprocessor leaves nothing else to run meanwhile; where tiles pass the edge the largest
  // scalar forms spilled with it at n = 1003).
  const bool divides = p.mTiles() * p.blockM == p.c.mExtent && p.nTiles() * p.blockN == p.c.nExtent;
  const bool unrolled = v > 1 || (p.c.type == ScalarType::F64 && !p.isWgmma() && divides);
  out.push_back(C::forLoop(ctx.idx, s, lit(0), lit((total + threads - 1) / threads),
                           unrolled ? C::Unroll::Default : C::Unroll::Never, std::move(body)));
}

}  // namespace

namespace mma {

// The tiles: a static shared array each, or (NestPlan::dynamicShared, over 48 KiB) slices of the
// dynamic shared memory of the element type, one after the other.
void declareMmaTiles(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  const int64_t a = p.aBuffers() * p.a.buffer, b = p.bBuffers() * p.b.buffer;  // `resident`: B's a step
  const std::string type = cudaTypeName(p.staged);  // 16-bit arithmetics: the values as loaded
  if (ctx.plan.dynamicShared) {
    const std::string storage = std::string("rtcg_smem_") + typeName(p.staged);
    // wgmma's 128-byte swizzle: atoms at multiples of 1024 bytes (the descriptors' base offset 0).
    const int64_t align = p.tiles == TileForm::Swizzle128 ? 1024 : 16;
    body.push_back(C::externSharedArray(type, storage, align));
    // The shared epilogue's view of the same memory, in the accumulators' type.
    if (p.sharedEpilogue() && p.staged != p.c.type)
      body.push_back(C::externSharedArray(elemType(p), std::string("rtcg_smem_") + typeName(p.c.type), align));
    int64_t at = 0;
    for (int part = 0; part < p.tilesPerOperand; ++part) {
      nm.tileA.push_back({storage, at}), at += a;
      nm.tileB.push_back({storage, at}), at += b;
    }
    // tf32x3 on wgmma: the small tiles' rings after the operands' (A's only where it is read from
    // shared memory).
    if (p.splitBuffers) {
      at = p.smallOffset;
      if (!p.registerA()) nm.tileA.push_back({storage, at}), at += p.splitBuffers * p.a.buffer;
      nm.tileB.push_back({storage, at});
    }
    return;
  }
  for (int part = 0; part < p.tilesPerOperand; ++part) {
    nm.tileA.push_back({ctx.names.fresh(part ? "tile_a_small" : "tile_a"), 0});
    body.push_back(C::sharedArray(type, nm.tileA.back().storage, a));
    nm.tileB.push_back({ctx.names.fresh(part ? "tile_b_small" : "tile_b"), 0});
    body.push_back(C::sharedArray(type, nm.tileB.back().storage, b));
  }
}

std::vector<C::Stmt> keepGroupFilled(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer) {
  // Four zero bytes (no global byte read: the source only names A's array) at this thread's word
  // of A's buffer, which no step reads any more; words repeat past the buffer's.
  const int64_t words = std::max<int64_t>(1, p.a.buffer * typeBytes(p.staged) / 4);
  const Expr& a = p.c.a()->kind == ExprKind::Load ? p.c.a() : p.c.a()->operands[0];
  C::ExprP start = C::castTo("int*", C::unary("&", tileRef(nm.tileA[0], ringBuffer(p, nm, true, buffer))));
  C::ExprP word = words >= nm.copiers(ctx.plan.launch.threads) ? nm.copier() : bin("%", nm.copier(), lit(words));
  return {C::exprStmt(
      C::call("rtcg_cp_async4", {C::sum({start, word}), C::name(ctx.paramNames[size_t(a->array)]), lit(0)}))};
}

C::ExprP ringBuffer(const MmaPlan& p, const MmaNames& nm, bool isA, const C::ExprP& buffer) {
  const int64_t elements = isA ? p.a.buffer : p.b.buffer;
  C::ExprP at = C::product(buffer, lit(elements));
  if (p.rowGroups == 0) return at;
  return C::sum({C::product(nm.rowGroup, lit(p.ring.stages * elements)), at});
}

void copyOrFill(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const CopyStep& copyStep,
                const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to, const C::ExprP& steps) {
  std::vector<C::Stmt> copy;
  copyStep(stepIndex, buffer, copy);
  to.push_back(C::ifThen(bin("<", stepIndex, steps ? steps : lit(p.steps)), std::move(copy),
                         keepGroupFilled(ctx, p, nm, buffer)));
  to.push_back(C::exprStmt(C::call("rtcg_cp_async_commit", {})));
}

}  // namespace mma

namespace {

// mma.sync: the tiles, the accumulators and the reduction's steps (`persistent`: of each tile, then
// `finishTile`).
void emitSyncMain(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body,
                  const std::function<void(std::vector<C::Stmt>& out)>& finishTile) {
  const MmaSchedule& ms = ctx.sched.mma;
  body.push_back(C::comment(fmt::format("Staged operands: {} x {} (M) and {} x {} (N) values per step, pitch {}{}",
                                        p.blockM, p.blockK, p.blockN, p.blockK,
                                        p.a.pitch == p.b.pitch ? fmt::format("{}", p.pitch)
                                                             : fmt::format("{} and {}", p.a.pitch, p.b.pitch),
                                        p.ring.stages > 1 ? fmt::format("; {} buffers filled by cp.async", p.ring.stages)
                                        : p.tilesPerOperand == 2 ? "; TF32 big and small parts" : "")));
  declareMmaTiles(ctx, p, nm, body);
  if (p.tiles != TileForm::Padded && p.arith != MmaArith::F64) declareLdmatrixLanes(ctx, p, nm, body);
  nm.acc.assign(size_t(ms.tileM), std::vector<std::vector<std::string>>(size_t(ms.tileN)));
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn)
      for (int r = 0; r < accElements(p); ++r) {
        nm.acc[fm][fn].push_back(ctx.names.fresh(fmt::format("acc{}_{}_{}", fm, fn, r)));
        body.push_back(C::decl(elemType(p), nm.acc[fm][fn].back(), literalOf(p.c.type, 0, 0.0), false));
      }
  if (p.ring.stages > 1) emitPipelinedSteps(ctx, p, nm, body, finishTile);
  else emitSteps(ctx, p, nm, body);
}

// The preludes the nest's tensor-core code calls: the mma helpers; cp.async for a ring of stages
// and for packed tiles (16- and 8-bit, copied by cp.async with or without stages); ldmatrix for
// packed tiles and TF32 tiles as loaded (with stages, MmaPlan::tiles: AsLoaded); s8's mma; the row
// groups' named barrier; wgmma's common helpers and each shape's once, its swizzle and tf32x3
// split; TMA's; the producer's (declared by EmitModule.cpp from what every nest needs of it).
void declareMmaNeeds(const MmaPlan& p, const MmaSchedule& s, ModuleNeeds& needs) {
  const bool half = mmaPacked(s.arith);
  const bool tf32 = s.arith == MmaArith::Tf32 || s.arith == MmaArith::Tf32x3;
  needs.need(mmaHelpers);
  if (s.stages > 1 || half) needs.need(asyncCopyHelpers);
  if (s.shape != MmaShape::Native) needs.need(mmaF64Sm90Helpers);
  if (half || (tf32 && s.stages > 1)) needs.need(mma16Helpers);
  if (s.arith == MmaArith::S8 && !p.isWgmma()) needs.need(mmaS8Helpers);
  if (p.rowGroups > 0) needs.need(mma::namedBarrierHelpers);
  if (p.isWgmma()) {
    needs.need(mma::wgmmaCommonHelpers);
    needs.needInOrder(ModuleNeeds::wgmmaShapeBand, ModuleNeeds::wgmmaShapeBand + 1000, mma::wgmmaShapeHelper(p));
  }
  if (p.tiles == TileForm::Swizzle128) needs.need(mma::wgmmaSwizzleHelpers);
  if (p.splitBuffers > 0) needs.need(mma::wgmmaSplitHelpers);
  if (p.ring.tma()) needs.need(mma::tmaHelpers);
  if (p.ring.producer()) {
    needs.producer = true;
    needs.producerSplit |= p.splitBuffers > 0;
    needs.producerThreadCopies |= p.residentByThreads() || (p.aByThreads() && !p.aByLoads());
    if (!p.epiloguePrefetch.empty()) needs.need(mma::prefetchL2Helpers);
    for (int64_t n : {p.producerRegisters, p.consumerRegisters})
      if (n > 0) needs.producerRegisters.insert(n);
  }
}

}  // namespace

C::Function emitMmaNest(EmitContext& ctx, LaunchSpec& launch) {
  const MmaPlan& p = *ctx.plan.mma;
  declareMmaNeeds(p, ctx.sched.mma, ctx.needs);
  const LaunchPlan& l = ctx.plan.launch;
  for (int a = 0; a < 3; ++a) ctx.facts.grid[a] = l.grid[a], ctx.facts.block[a] = l.block[a];
  ctx.facts.threads = l.threads;
  // Index ranges, for the lowering of / and % (nonNegative).
  if (auto indices = nestIndices(ctx.k, ctx.nestIdx))
    for (const NestIndex& ni : *indices)
      for (const Loop* loop : ni.loops) ctx.facts.ranges[loop->id] = ni.hull;
  C::Function fn;
  fn.kind = C::FunctionKind::Kernel;
  fn.name = fmt::format("{}_{}", ctx.k.name, ctx.nestIdx);
  launch.function = fn.name;
  for (int a = 0; a < 3; ++a) launch.grid[a] = (uint32_t)l.grid[a], launch.block[a] = (uint32_t)l.block[a];
  fn.launchBounds = (int)l.threads;
  // `blocks_per_sm`, or the persistent mma.sync grid's blocks per multiprocessor (MmaPlan::boundBlocks):
  // the registers capped for that many blocks.
  fn.minBlocks = (int)p.minBlocks(ctx.sched.blocksPerSM);
  if (ctx.plan.dynamicShared) launch.dynamicSharedBytes = (uint32_t)ctx.plan.dynamicSharedBytes;
  std::vector<C::Stmt> body;
  declareNestParams(ctx, fn, launch, body);
  MmaNames nm;
  if (p.ring.tma()) mma::declareTensorMaps(ctx, p, nm, fn, launch);
  declareCoordinates(ctx, p, nm, body);
  // `persistent`: the epilogue of each tile in the tile loop (emitWgmmaMain; mma.sync's ring loop).
  auto finishTile = [&](std::vector<C::Stmt>& out) {
    hoistBatchUniform(ctx, p, nm, out);
    if (epiloguePerOrigin(ctx, p)) emitEpiloguePerOrigin(ctx, p, nm, out);
    else emitEpilogue(ctx, p, nm, out);
  };
  if (p.isWgmma()) mma::emitWgmmaMain(ctx, p, nm, body, finishTile);
  else emitSyncMain(ctx, p, nm, body, finishTile);
  if (p.persistent()) {
    fn.body = std::move(body);
    describeNest(ctx, fn);
    return fn;
  }
  // The epilogue's tile is the operand tiles' space: no copy of a cp.async ring may land there after.
  if (p.sharedEpilogue() && p.ring.stages > 1 && !p.ring.tma()) body.push_back(C::exprStmt(C::call("rtcg_cp_async_wait0", {})));
  hoistBatchUniform(ctx, p, nm, body);
  if (p.sharedEpilogue()) emitSharedEpilogue(ctx, p, nm, body);
  else emitEpilogue(ctx, p, nm, body);
  fn.body = std::move(body);
  describeNest(ctx, fn);
  return fn;
}

}  // namespace rtcg::emit
