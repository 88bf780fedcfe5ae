// wgmma's fragment epilogue on output rows of an odd number of floats (EmitMma.cpp's emitEpilogue
// calls it per accumulator chunk where oddPairStores): float2 pairs from each row's own alignment.
#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "codegen/EmitMmaParts.h"
#include "ir/Analysis.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

namespace {

// Whether `ptr` starts 4 bytes past a multiple of 8, as its bit 2 (nonzero: past).
C::ExprP pastEight(const C::ExprP& ptr) { return bin("&", C::castTo("unsigned long long", ptr), lit(4)); }

// The float2 (first, second) at `to`, streaming where the statement's stores stream.
C::Stmt floatPairStore(const EmitContext& ctx, size_t statement, const C::ExprP& to, const C::ExprP& first,
                       const C::ExprP& second) {
  C::ExprP pair = C::castTo("float2*", to), value = C::call("make_float2", {first, second});
  return ctx.plan.streams(statement) ? C::exprStmt(C::call("__stcs", {pair, value}))
                                     : C::assign(C::index(pair, lit(0)), "=", value);
}

// Stacked statements (dg_diff's ur, us, ut): one 16-row half (h) of chunk (fm, fn) lying in one
// statement, point by point (emitPoint). `next` is the chunk's first columns rotated in the quad
// (lane t holds lane t + 1's; no pair crosses chunks here); `chunk` the statement's array and the
// thread's first column's i - lo. (The one-statement form's slimmer code, below, with the tile's
// statements picked at run time, ran slower here: dg_diff N8's pingpong forms 0.270 -> 0.275 ms
// and, spilling, 0.272 -> 0.445; docs/bench.md session 52. Under a literal N origin the runs take
// it: storeOddPairChunk.)
void storeOddPairs(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t fn, int h,
                   const C::ExprP& next, const ChunkColumn& chunk, std::vector<C::Stmt>& out) {
  const size_t statement = size_t(p.c.parts[0].statement);
  const C::ExprP a0 = C::name(nm.acc[fm][fn][size_t(2 * h)]), a1 = C::name(nm.acc[fm][fn][size_t(2 * h + 1)]);
  auto [mm, nn] = accPoint(p, nm, fm, fn, 2 * h, true);
  emitPoint(ctx, p, nm, mm, nn, &chunk, [&](size_t q, const PointAt& at, const C::ExprP& n) {
    std::vector<C::Stmt> body;
    // Column 2t + c's element, as a pointer.
    auto pointer = [&](int64_t c) {
      C::ExprP target = at(q, c, c ? a1 : a0, body).first;
      const std::string name = ctx.names.fresh("to");
      body.push_back(C::decl("float*", name, C::unary("&", target), false));
      return C::name(name);
    };
    auto aligned = [](const C::ExprP& ptr) { return bin("==", pastEight(ptr), lit(0)); };
    auto inside = [&](int64_t c) { return bin("<", C::sum({n, lit(c)}), lit(p.c.nExtent)); };
    const C::ExprP p0 = pointer(0), p1 = pointer(1);
    auto single = [&](const C::ExprP& to, const C::ExprP& value) {
      return emitStore(ctx, statement, C::index(to, lit(0)), value);
    };
    // 2t starts a pair where aligned; 2t + 1 starts one (with the next lane's column) where it is,
    // but in the last lane, whose neighbour is the next chunk's (their rotations' registers spilled
    // dg_diff N8's pingpong form): the next chunk's lane 0 stores that column alone instead; 2t goes
    // alone where it does not start a pair and is aligned or lane 0's.
    C::ExprP pair0 = bin("&&", aligned(p0), inside(1));
    C::ExprP pair1 = bin("&&", bin("&&", aligned(p1), inside(2)), bin("!=", nm.t, lit(3)));
    C::ExprP alone0 = bin("||", aligned(p0), bin("==", nm.t, lit(0)));
    // One store instruction for the warp's pairs, whichever column each lane's starts at (a row's
    // lanes all start at 2t or all at 2t + 1, and rows of both kinds share the warp: a branch per
    // kind ran both, 0.2365 -> 0.2502 ms on the stacked N8 form, docs/bench.md session 51); the
    // columns alone, rare, after it.
    const std::string at0 = ctx.names.fresh("pair0"), at1 = ctx.names.fresh("pair1");
    body.push_back(C::decl("bool", at0, pair0));
    body.push_back(C::decl("bool", at1, pair1));
    const C::ExprP first0 = C::name(at0), first1 = C::name(at1);
    body.push_back(C::ifThen(bin("||", first0, first1),
                             {floatPairStore(ctx, statement, C::ternary(first0, p0, p1), C::ternary(first0, a0, a1),
                                             C::ternary(first0, a1, next))}));
    body.push_back(C::ifThen(bin("&&", C::unary("!", first0), alone0), {single(p0, a0)}));
    body.push_back(C::ifThen(bin("&&", bin("&&", C::unary("!", first0), C::unary("!", first1)), inside(1)),
                             {single(p1, a1)}));
    return body;
  }, out);
}

// A run of a statement's columns (one statement's rows, plainRows: all of them; stacked statements
// under a literal N origin: a segment of whole chunks inside one statement): a thread's two rows of
// the tile (halves h: rows g and g + 8), declared once, at the run's first chunk f1. Per half the
// pointer to its first pair's first column (the column 2t of chunk f1, plus one where that column
// starts 4 bytes past 8), the row's kind (`odd`: 1 there), whether the row is inside M, and the
// columns left from that first column to the run's end `end` (a column from the domain's N
// origin). A chunk's pair is then that pointer plus 8 (fn - f1), under a compare with the columns
// left: no per-point bounds, addresses or alignment tests (the per-point form's code was most of
// the N8 epilogues, which run beside the other consumer's steps). `chunk` binds statement q's
// column where the statements are stacked.
std::array<OddRow, 2> declareOddRows(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t q, size_t f1,
                                     const C::ExprP& end, const ChunkColumn* chunk, std::vector<C::Stmt>& out) {
  const Stmt& st = ctx.nest.body[size_t(p.c.parts[q].statement)];
  std::array<OddRow, 2> rows;
  for (int h = 0; h < 2; ++h) {
    auto [mm, nn] = accPoint(p, nm, fm, f1, 2 * h, true);
    const std::string mi = ctx.names.fresh("row_m"), ni = ctx.names.fresh("row_n");
    out.push_back(C::decl(ctx.idx, mi, mm));
    out.push_back(C::decl(ctx.idx, ni, nn));
    Env env = pointEnv(p, nm, C::name(mi), C::name(ni), 0, chunk);
    const C::ExprP target = lowerAccess(ctx, st.array, st.indices, env, out);
    const std::string first = ctx.names.fresh("row_first"), odd = ctx.names.fresh("row_odd"),
                      pair = ctx.names.fresh("row_pair"), inside = ctx.names.fresh("row_inside"),
                      left = ctx.names.fresh("row_left");
    out.push_back(C::decl("float*", first, C::unary("&", target), false));
    out.push_back(C::decl(ctx.idx, odd,
                          C::castTo("int", bin("!=", pastEight(C::name(first)), lit(0)))));
    out.push_back(C::decl("float*", pair, C::sum({C::name(first), C::name(odd)}), false));
    out.push_back(C::decl("bool", inside, bin("<", C::name(mi), lit(p.c.mExtent))));
    out.push_back(C::decl(ctx.idx, left, bin("-", end, C::sum({C::name(ni), C::name(odd)}))));
    rows[size_t(h)] = {C::name(pair), C::name(odd), C::name(inside), C::name(left)};
  }
  return rows;
}

// A run's chunk fn, half h, from its rows (declareOddRows; `c`: 8 (fn - f1), the chunk's columns past
// the run's first): aligned rows store (2t, 2t + 1), odd rows (2t + 1, 2t + 2), the second from
// the next lane of the quad (`next`; the last lane's from the next chunk's first, `after`, null in
// the run's last chunk, where that lane's column goes alone). Where the row ends inside the pair
// its first column goes alone; an odd row's column 0 of the run's first chunk goes alone from
// lane 0.
void storeOddRowPairs(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t fn, int h, size_t statement,
                      const OddRow& row, const C::ExprP& next, const C::ExprP& after, int64_t c, bool first,
                      std::vector<C::Stmt>& out) {
  const C::ExprP a0 = C::name(nm.acc[fm][fn][size_t(2 * h)]), a1 = C::name(nm.acc[fm][fn][size_t(2 * h + 1)]);
  const C::ExprP odd = bin("!=", row.odd, lit(0));
  const C::ExprP second = after ? C::ternary(bin("==", nm.t, lit(3)), after, next) : next;
  const C::ExprP lead = C::ternary(odd, a1, a0);
  C::ExprP pair = bin("&&", row.inside, bin("<", lit(c + 1), row.left));
  if (!after) pair = bin("&&", pair, C::unary("!", bin("&&", odd, bin("==", nm.t, lit(3)))));
  const C::ExprP at = c ? C::sum({row.pair, lit(c)}) : row.pair;
  C::Stmt pairStore = floatPairStore(ctx, statement, at, lead, C::ternary(odd, second, a1));
  C::Stmt alone = C::ifThen(bin("&&", row.inside, bin("<", lit(c), row.left)),
                            {emitStore(ctx, statement, C::index(at, lit(0)), lead)}, {});
  out.push_back(C::ifThen(pair, {std::move(pairStore)}, {std::move(alone)}));
  if (!first) return;
  C::ExprP lane0 = bin("&&", bin("==", nm.t, lit(0)), bin(">", row.left, lit(-1)));
  out.push_back(C::ifThen(bin("&&", bin("&&", row.inside, odd), lane0),
                          {emitStore(ctx, statement, C::index(row.pair, lit(-1)), a0)}, {}));
}

// A literal chunk base (the epilogue per N origin): chunk fn's first column from the domain's N
// origin, n0 + wn + 8 fn, where both are literals.
std::optional<int64_t> literalBase(const MmaNames& nm, size_t fn) {
  const C::ExprP base = C::sum({nm.n0, nm.wn, lit(int64_t(fn) * 8)});
  if (base->kind != C::ExprKind::IntLit || base->longLong) return std::nullopt;
  return base->intValue;
}

// Chunk f of stacked statements under a literal base, where its 8 columns lie inside N and in one
// statement: that statement and the chunk's first i - lo.
struct LiteralChunk {
  int64_t statement, i;
};
std::optional<LiteralChunk> literalChunk(const MmaPlan& p, const MmaNames& nm, size_t fm, size_t f) {
  if (f >= nm.acc[fm].size()) return std::nullopt;
  const std::optional<int64_t> base = literalBase(nm, f);
  const int64_t e = p.c.nRows.back().extent;
  if (!base || *base + 8 > p.c.nExtent || *base % e + 8 > e) return std::nullopt;
  return LiteralChunk{*base / e, *base % e};
}

}  // namespace

// Rows of an odd number of floats (dg_diff N8's 165, the stacked kernel's 495): single stores,
// two per pair of a thread's columns, each writing 4 of every 8 bytes over 8 rows (pairedStores
// needs even rows). Instead each column that starts 8-byte aligned, with its right neighbour
// inside the domain, the warp's chunks and the same statement, stores the two as one float2; the
// rest go alone. Thread t holds columns 2t and 2t + 1 of a chunk: where 2t starts a pair it
// holds both; where 2t + 1 does, the second comes from the next lane of the quad (the last lane's
// from the next chunk's first lane, by one rotation of each chunk's first columns). The
// statements store their sums alone, contiguous along N, into f32: one statement of one row, or
// stacked statements that differ only in their arrays (dg_diff's ur, us, ut).
bool oddPairStores(const EmitContext& ctx, const MmaPlan& p, bool sameStoresButArrays) {
  if (!p.isWgmma() || p.c.type != ScalarType::F32 || ctx.arrayAlignment < 8) return false;
  const bool stacked =
      stackedRows(p.c, false) && p.c.nRows.size() == 2 && p.c.nRows.back().extent >= 8 && sameStoresButArrays;
  if (!stacked && (p.c.parts.size() != 1 || !plainRows(p.c, false))) return false;
  // Each chunk's array takes registers: under pingpong only where the plan counted them for the
  // single stores (MmaPlan::singleArrays), whose chunks crossing statements these chunks' stay.
  if (stacked && p.alternatingTiles && !p.singleArrays) return false;
  const int fast = stacked ? p.c.nRows.back().loop : p.c.n;
  for (const ContractionPart& part : p.c.parts) {
    const Stmt& st = ctx.nest.body[size_t(part.statement)];
    if (st.value.get() != part.sum.get() || ctx.k.params[size_t(st.array)].type != ScalarType::F32) return false;
    auto form = flatOffset(ctx.k, st.array, st.indices);
    if (!form || form->coeff(fast) != 1) return false;
  }
  return true;
}

// One chunk (fm, fn) of the accumulators under oddPairStores: its two 16-row halves' pairs, each
// chunk's first columns rotated once within the quad (`rotated`, by chunk and half, shared by the
// chunks of one epilogue; the rotation of chunk fn + 1 gives one statement's last lane its
// second column); `plain` stores a chunk of stacked statements that crosses into the next one.
void storeOddPairChunk(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t fn,
                       OddPairState& state, const std::function<void(std::vector<C::Stmt>&)>& plain,
                       std::vector<C::Stmt>& out) {
  std::map<std::pair<size_t, size_t>, std::string>& rotated = state.rotated;
  auto rotate = [&](size_t f, int h) {
    auto key = std::make_pair(fm * 2 + size_t(h), f);
    if (rotated.count(key)) return C::name(rotated[key]);
    const std::string v = ctx.names.fresh("rotated");
    C::ExprP source = bin("|", bin("&", nm.lane, lit(28)), bin("&", C::sum({nm.t, lit(1)}), lit(3)));
    out.push_back(C::decl("float", v,
                          C::call("__shfl_sync", {C::uintLit(0xffffffffu), C::name(nm.acc[fm][f][size_t(2 * h)]), source})));
    rotated[key] = v;
    return C::name(v);
  };
  const bool oneStatement = plainRows(p.c, false);
  // Stacked statements under a literal N origin (the epilogue per N origin, EmitMma.cpp
  // epiloguePerOrigin): the chunks' statements and columns are known here, so their whole chunks
  // inside one statement make runs (segments) stored as one statement's rows are.
  const std::optional<LiteralChunk> literal = oneStatement ? std::nullopt : literalChunk(p, nm, fm, fn);
  const bool segments = !oneStatement && literalBase(nm, fn).has_value();
  if (segments && *literalBase(nm, fn) >= p.c.nExtent) return;  // past N's end: nothing to store
  // Under `pingpong` with the producer's threads loading A (through L1, as the stores go), the
  // consumer pauses between chunks of one statement's rows or of the segments: their stores back to
  // back held up the producer's loads, and the other consumer's steps with them (stacked N8 0.2328
  // -> 0.2288 ms with 32 ns, 0.2293 with 0, 0.2309 every second chunk; a branch-free epilogue 0.270
  // -> 0.2375; dg_diff N8's segments 0.2561 -> 0.2493; docs/bench.md, sessions 53 and 54).
  if (fn > 0 && p.alternatingTiles && p.aByThreads() && (oneStatement || segments)) {
    ctx.needs.epilogueYield = true;
    out.push_back(C::exprStmt(C::call("rtcg_epilogue_yield", {})));
  }
  if (oneStatement || literal) {
    // The run of chunk fn: chunks [f1, f2] of statement q, ending at column `end`.
    size_t f1 = 0, f2 = nm.acc[fm].size() - 1, q = 0;
    if (literal) {
      q = size_t(literal->statement);
      f1 = f2 = fn;
      auto same = [&](size_t f) {
        const std::optional<LiteralChunk> c = literalChunk(p, nm, fm, f);
        return c && c->statement == literal->statement;
      };
      while (f1 > 0 && same(f1 - 1)) --f1;
      while (same(f2 + 1)) ++f2;
    }
    C::ExprP next[2], after[2];
    for (int h = 0; h < 2; ++h) {
      next[h] = rotate(fn, h);
      after[h] = fn < f2 ? rotate(fn + 1, h) : nullptr;
    }
    if (!state.runs.count(f1)) {
      std::optional<ChunkColumn> column;  // statement q's i - lo of the run's first chunk
      if (literal)
        column = ChunkColumn{lit(int64_t(q)), C::sum({lit(literal->i - 8 * int64_t(fn - f1)), C::product(nm.t, lit(2))}),
                             nullptr};
      const C::ExprP end = literal ? lit(*literalBase(nm, f2) + 8) : lit(p.c.nExtent);
      state.runs[f1] = declareOddRows(ctx, p, nm, fm, q, f1, end, column ? &*column : nullptr, out);
    }
    for (int h = 0; h < 2; ++h)
      storeOddRowPairs(ctx, p, nm, fm, fn, h, size_t(p.c.parts[q].statement), state.runs[f1][size_t(h)], next[h],
                       after[h], 8 * int64_t(fn - f1), fn == f1, out);
    return;
  }
  if (segments) {  // a chunk across a statement's end or N's: its points one by one
    plain(out);
    return;
  }
  C::ExprP next[2];
  for (int h = 0; h < 2; ++h) next[h] = rotate(fn, h);
  // Stacked statements: the chunk's statement and first i (warp-uniform). A chunk whose columns
  // and the next chunk's first lie in one statement pairs with that statement's array picked
  // once; another stores as without (`plain`), and no pair crosses from chunk to chunk.
  auto [cq, ci] = declareChunkStatement(ctx, p, nm, fn, out);
  auto inOne = [&, cq = cq, ci = ci](std::vector<C::Stmt>& to) {
    const std::string array = ctx.names.fresh("chunk_array");
    to.push_back(statementArrayDecl(ctx, p, cq, array));
    const ChunkColumn chunk{nullptr, C::sum({ci, C::product(nm.t, lit(2))}), C::name(array)};
    for (int h = 0; h < 2; ++h) storeOddPairs(ctx, p, nm, fm, fn, h, next[h], chunk, to);
  };
  const int64_t e = p.c.nRows.back().extent;
  std::vector<C::Stmt> one, crossing;
  inOne(one);
  plain(crossing);
  out.push_back(C::ifThen(bin("<", C::sum({ci, lit(8)}), lit(e)), std::move(one), std::move(crossing)));
}

}  // namespace rtcg::emit::mma
