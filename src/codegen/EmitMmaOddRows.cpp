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
// under a literal N origin: the tile's columns of one statement, literalRuns): a thread's two rows
// of the tile (halves h: rows g and g + 8), declared once, at the run's first chunk f1. Per half the
// pointer to its first pair's first column (the column 2t of chunk f1, plus one where that column
// starts 4 bytes past 8), the row's kind (`odd`: 1 there), whether the row is inside M, and the
// columns left from that first column to the run's end `end` (a column from the domain's N
// origin). A chunk's pair is then that pointer plus 8 (fn - f1), under a compare with the columns
// left: no per-point bounds, addresses or alignment tests (the per-point form's code was most of
// the N8 epilogues, which run beside the other consumer's steps). `chunk` binds statement q's
// column where the statements are stacked. A `rowStride` (the output's elements from one M row to
// the next, where known) gives the second half's pointer as the first's plus 8 rows, so that a run
// holds one pointer (two runs' four spilled dg_diff N8's pingpong form: docs/bench.md, session 54).
std::array<OddRow, 2> declareOddRows(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t q, size_t f1,
                                     const C::ExprP& end, const ChunkColumn* chunk, int64_t rowStride,
                                     std::vector<C::Stmt>& out) {
  const Stmt& st = ctx.nest.body[size_t(p.c.parts[q].statement)];
  std::array<OddRow, 2> rows;
  for (int h = 0; h < 2; ++h) {
    auto [mm, nn] = accPoint(p, nm, fm, f1, 2 * h, true);
    const std::string mi = ctx.names.fresh("row_m"), inside = ctx.names.fresh("row_inside");
    if (h == 1 && rowStride) {
      out.push_back(C::decl(ctx.idx, mi, mm));
      out.push_back(C::decl("bool", inside, bin("<", C::name(mi), lit(p.c.mExtent))));
      rows[1] = {C::sum({rows[0].pair, lit(8 * rowStride)}), rows[0].odd, C::name(inside), rows[0].left};
      break;
    }
    const std::string ni = ctx.names.fresh("row_n");
    out.push_back(C::decl(ctx.idx, mi, mm));
    out.push_back(C::decl(ctx.idx, ni, nn));
    Env env = pointEnv(p, nm, C::name(mi), C::name(ni), 0, chunk);
    const C::ExprP target = lowerAccess(ctx, st.array, st.indices, env, out);
    const std::string first = ctx.names.fresh("row_first"), odd = ctx.names.fresh("row_odd"),
                      pair = ctx.names.fresh("row_pair"), left = ctx.names.fresh("row_left");
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
// the run's first chunk's): aligned rows store (2t, 2t + 1), odd rows (2t + 1, 2t + 2), the second
// from the next lane of the quad (`next`; the last lane's from the next chunk's first, `after`,
// null in the run's last chunk, where that lane's column goes alone). Where the row ends inside the
// pair its first column goes alone. A run that starts `lo` columns into its first chunk (a
// statement's first column inside a chunk) stores there only pairs from column lo on, and column lo
// alone where it starts 4 bytes past 8 (lo = 0: an odd row's column 0, from lane 0).
void storeOddRowPairs(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, size_t fm, size_t fn, int h, size_t statement,
                      const OddRow& row, const C::ExprP& next, const C::ExprP& after, int64_t c, bool first,
                      int64_t lo, std::vector<C::Stmt>& out) {
  const C::ExprP a0 = C::name(nm.acc[fm][fn][size_t(2 * h)]), a1 = C::name(nm.acc[fm][fn][size_t(2 * h + 1)]);
  const C::ExprP odd = bin("!=", row.odd, lit(0));
  const C::ExprP second = after ? C::ternary(bin("==", nm.t, lit(3)), after, next) : next;
  const C::ExprP lead = C::ternary(odd, a1, a0);
  // From column lo on (the lead column 2t + odd).
  const C::ExprP from = lo ? bin(">=", C::sum({C::product(nm.t, lit(2)), row.odd}), lit(lo)) : nullptr;
  auto within = [&](C::ExprP e) { return from ? bin("&&", std::move(e), from) : e; };
  C::ExprP pair = within(bin("&&", row.inside, bin("<", lit(c + 1), row.left)));
  if (!after) pair = bin("&&", pair, C::unary("!", bin("&&", odd, bin("==", nm.t, lit(3)))));
  const C::ExprP at = c ? C::sum({row.pair, lit(c)}) : row.pair;
  C::Stmt pairStore = floatPairStore(ctx, statement, at, lead, C::ternary(odd, second, a1));
  C::Stmt alone = C::ifThen(within(bin("&&", row.inside, bin("<", lit(c), row.left))),
                            {emitStore(ctx, statement, C::index(at, lit(0)), lead)}, {});
  out.push_back(C::ifThen(pair, {std::move(pairStore)}, {std::move(alone)}));
  if (!first) return;
  if (lo == 0) {
    C::ExprP lane0 = bin("&&", bin("==", nm.t, lit(0)), bin(">", row.left, lit(-1)));
    out.push_back(C::ifThen(bin("&&", bin("&&", row.inside, odd), lane0),
                            {emitStore(ctx, statement, C::index(row.pair, lit(-1)), a0)}, {}));
    return;
  }
  // Column lo is lane lo / 2's column lo % 2, 4 bytes past 8 where the row's kind differs from lo's.
  const int64_t e = lo % 2;
  C::ExprP mine = bin("&&", bin("==", nm.t, lit(lo / 2)), bin("==", row.odd, lit(1 - e)));
  out.push_back(C::ifThen(bin("&&", row.inside, mine),
                          {emitStore(ctx, statement, C::index(row.pair, lit(e - (1 - e))), e ? a1 : a0)}, {}));
}

// A literal chunk base (the epilogue per N origin): chunk fn's first column from the domain's N
// origin, n0 + wn + 8 fn, where both are literals.
std::optional<int64_t> literalBase(const MmaNames& nm, size_t fn) {
  const C::ExprP base = C::sum({nm.n0, nm.wn, lit(int64_t(fn) * 8)});
  if (base->kind != C::ExprKind::IntLit || base->longLong) return std::nullopt;
  return base->intValue;
}

// The tile's runs of stacked statements under a literal base: its columns inside N split at the
// statements' ends, each run statement q's columns [begin, end) (from the domain's N origin), over
// chunks f1 to f2, starting lo columns into chunk f1.
struct Run {
  size_t q, f1, f2;
  int64_t begin, end, lo;
};
std::vector<Run> literalRuns(const MmaPlan& p, const MmaNames& nm, size_t fm) {
  const int64_t e = p.c.nRows.back().extent, base = *literalBase(nm, 0);
  const int64_t last = std::min(base + 8 * int64_t(nm.acc[fm].size()), p.c.nExtent);
  std::vector<Run> runs;
  for (int64_t c = base; c < last;) {
    const int64_t end = std::min(last, (c / e + 1) * e);
    runs.push_back({size_t(c / e), size_t((c - base) / 8), size_t((end - 1 - base) / 8), c, end, (c - base) % 8});
    c = end;
  }
  return runs;
}

// Statement q's output elements from one M row to the next, where M is one loop and the output's
// offset affine in it with a literal coefficient; else 0.
int64_t rowStride(const EmitContext& ctx, const MmaPlan& p, size_t q) {
  if (!plainRows(p.c, true)) return 0;
  const Stmt& st = ctx.nest.body[size_t(p.c.parts[q].statement)];
  const auto form = flatOffset(ctx.k, st.array, st.indices);
  return form ? form->coeff(p.c.m) : 0;
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
  // epiloguePerOrigin): the tile's columns of each statement make a run stored as one statement's
  // rows are; a chunk across a statement's end belongs to both runs.
  const bool literal = !oneStatement && literalBase(nm, fn).has_value();
  if (literal && *literalBase(nm, fn) >= p.c.nExtent) return;  // past N's end: nothing to store
  // Under `pingpong` with the producer's threads loading A (through L1, as the stores go), the
  // consumer pauses between chunks of one statement's rows or of the runs: their stores back to
  // back held up the producer's loads, and the other consumer's steps with them (stacked N8 0.2328
  // -> 0.2288 ms with 32 ns, 0.2293 with 0, 0.2309 every second chunk; a branch-free epilogue 0.270
  // -> 0.2375; dg_diff N8's runs 0.2561 -> 0.2493; docs/bench.md, sessions 53 and 54).
  if (fn > 0 && p.alternatingTiles && p.aByThreads() && (oneStatement || literal)) {
    ctx.needs.need(epilogueYieldHelpers);
    out.push_back(C::exprStmt(C::call("rtcg_epilogue_yield", {})));
  }
  if (oneStatement || literal) {
    std::vector<Run> runs{{0, 0, nm.acc[fm].size() - 1, 0, p.c.nExtent, 0}};
    if (literal) runs = literalRuns(p, nm, fm);
    for (const Run& run : runs) {
      if (fn < run.f1 || fn > run.f2) continue;
      C::ExprP next[2], after[2];
      for (int h = 0; h < 2; ++h) {
        next[h] = rotate(fn, h);
        after[h] = fn < run.f2 ? rotate(fn + 1, h) : nullptr;
      }
      if (!state.runs.count(run.begin)) {
        std::optional<ChunkColumn> column;  // statement q's i - lo at the run's first chunk's column 2t
        int64_t stride = 0;                 // the output's elements from one M row to the next
        if (literal) {
          const int64_t e = p.c.nRows.back().extent;
          column = ChunkColumn{lit(int64_t(run.q)), C::sum({lit(run.begin - run.lo - int64_t(run.q) * e), C::product(nm.t, lit(2))}),
                               nullptr};
          stride = rowStride(ctx, p, run.q);
        }
        state.runs[run.begin] =
            declareOddRows(ctx, p, nm, fm, run.q, run.f1, lit(run.end), column ? &*column : nullptr, stride, out);
      }
      const std::array<OddRow, 2>& rows = state.runs[run.begin];
      for (int h = 0; h < 2; ++h)
        storeOddRowPairs(ctx, p, nm, fm, fn, h, size_t(p.c.parts[run.q].statement), rows[size_t(h)], next[h], after[h],
                         8 * int64_t(fn - run.f1), fn == run.f1, fn == run.f1 ? run.lo : 0, out);
    }
    return;
  }
  C::ExprP next[2];
  for (int h = 0; h < 2; ++h) next[h] = rotate(fn, h);
  // Stacked statements: the chunk's statement and first i (warp-uniform). A chunk whose columns
  // and the next chunk's first lie in one statement pairs with that statement's array picked
  // once; another stores as without (`plain`), and no pair crosses from chunk to chunk.
  auto [cq, ci] = declareChunkStatement(ctx, p, nm, fn, out);
  std::vector<C::Stmt> inOne, crossing;
  const std::string array = ctx.names.fresh("chunk_array");
  inOne.push_back(statementArrayDecl(ctx, p, cq, array));
  const ChunkColumn chunk{nullptr, C::sum({ci, C::product(nm.t, lit(2))}), C::name(array)};
  for (int h = 0; h < 2; ++h) storeOddPairs(ctx, p, nm, fm, fn, h, next[h], chunk, inOne);
  plain(crossing);
  out.push_back(C::ifThen(bin("<", C::sum({ci, lit(8)}), lit(p.c.nRows.back().extent)), std::move(inOne),
                          std::move(crossing)));
}

}  // namespace rtcg::emit::mma
