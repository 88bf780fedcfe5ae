// A contraction on tensor cores (`mma:`, schedule/Mma.h): the block stages both operands of a
// reduction step in shared memory (converted once: TF32-rounded, tf32x3 split into big and small),
// each warp loads its fragments from the tiles and issues mma.sync on accumulators held in
// registers, and the epilogue evaluates the statement per output point with the sum replaced by
// the accumulator. Every thread runs every mma (they are warp-wide): only the staging loads and the
// epilogue's stores are guarded, and elements outside the domain are staged as zeros.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

struct MmaNames {
  C::ExprP tid, g, t, wm, wn, m0, n0, k0;
  std::vector<std::string> tileA, tileB;  // per part: [0] the (big) value, [1] the small part (tf32x3)
  std::vector<std::vector<std::vector<std::string>>> acc;  // [fm][fn][element]
  std::map<int, C::ExprP> batch;                           // batch loop id -> its value
};

const char* elemType(const MmaPlan& p) { return p.c.type == ScalarType::F64 ? "double" : "float"; }
int accElements(const MmaPlan& p) { return p.arith == MmaArith::F64 ? 2 : 4; }

C::ExprP bin(const char* op, C::ExprP a, C::ExprP b) { return C::binary(op, std::move(a), std::move(b)); }

// The block's and the thread's coordinates: warp, lane group and thread in group (PTX's groupID
// and threadID_in_group), the tile origins, the batch indices from blockIdx.z.
void declareCoordinates(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  const MmaSchedule& ms = ctx.sched.mma;
  auto def = [&](const std::string& base, C::ExprP init) {
    std::string n = ctx.names.fresh(base);
    body.push_back(C::decl(ctx.idx, n, std::move(init)));
    return C::name(n);
  };
  nm.tid = def("tid", coordinate(ctx, "threadIdx", 0));
  C::ExprP warp = def("warp", bin("/", nm.tid, lit(32)));
  C::ExprP lane = def("lane", bin("%", nm.tid, lit(32)));
  nm.g = def("group", bin("/", lane, lit(4)));
  nm.t = def("in_group", bin("%", lane, lit(4)));
  nm.wm = def("warp_m", C::product(bin("/", warp, lit(ms.warpsN)), lit(ms.tileM * p.fragM)));
  nm.wn = def("warp_n", C::product(bin("%", warp, lit(ms.warpsN)), lit(ms.tileN * p.fragN)));
  nm.m0 = def("block_m", C::product(coordinate(ctx, "blockIdx", 1), lit(p.blockM)));
  nm.n0 = def("block_n", C::product(coordinate(ctx, "blockIdx", 0), lit(p.blockN)));
  // Batch indices, the last one fastest along blockIdx.z.
  int64_t stride = 1;
  std::vector<C::Stmt> batch;
  for (size_t b = p.c.batch.size(); b-- > 0;) {
    C::ExprP z = coordinate(ctx, "blockIdx", 2);
    C::ExprP v = bin("%", stride == 1 ? z : bin("/", z, lit(stride)), lit(std::max<int64_t>(1, p.c.batchExtent[b])));
    std::string n = ctx.names.fresh("batch");
    batch.insert(batch.begin(), C::decl(ctx.idx, n, C::sum({lit(p.c.batchLo[b]), v})));
    nm.batch[p.c.batch[b]] = C::name(n);
    stride *= std::max<int64_t>(1, p.c.batchExtent[b]);
  }
  append(body, std::move(batch));
}

// One operand's tiles: rows x blockK values of step k0, converted, zero outside the domain. The
// copy walks the operand's contiguous direction with consecutive threads.
void stageOperand(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, bool isA, std::vector<C::Stmt>& out) {
  const int64_t rows = isA ? p.blockM : p.blockN, total = rows * p.blockK;
  const int64_t threads = ctx.plan.launch.threads, rounds = (total + threads - 1) / threads;
  const bool alongK = isA ? p.c.aAlongK : p.c.bAlongK;
  std::string s = ctx.names.fresh(isA ? "copy_a" : "copy_b");
  std::vector<C::Stmt> body;
  std::string e = ctx.names.fresh("e");
  body.push_back(C::decl(ctx.idx, e, C::sum({nm.tid, C::product(C::name(s), lit(threads))})));
  C::ExprP r = alongK ? bin("/", C::name(e), lit(p.blockK)) : bin("%", C::name(e), lit(rows));
  C::ExprP kk = alongK ? bin("%", C::name(e), lit(p.blockK)) : bin("/", C::name(e), lit(rows));
  std::string rn = ctx.names.fresh("row"), kn = ctx.names.fresh("kk");
  std::vector<C::Stmt> inner{C::decl(ctx.idx, rn, r), C::decl(ctx.idx, kn, kk)};
  C::ExprP point = C::sum({isA ? nm.m0 : nm.n0, C::name(rn)});
  C::ExprP kq = C::sum({nm.k0, C::name(kn)});
  Env env;
  env.vars = nm.batch;
  env.vars[isA ? p.c.m : p.c.n] = C::sum({lit(isA ? p.c.mLo : p.c.nLo), point});
  env.vars[p.c.kLoop->id] = C::sum({lit(p.c.kLo), kq});
  std::vector<C::Stmt> loads;
  C::ExprP value = lower(ctx, isA ? p.c.a : p.c.b, env, loads);
  RTCG_ASSERT(loads.empty(), "an mma operand lowers to one expression");
  C::ExprP inside = bin("&&", bin("<", point, lit(isA ? p.c.mExtent : p.c.nExtent)), bin("<", kq, lit(p.c.kExtent)));
  std::string v = ctx.names.fresh("v");
  inner.push_back(C::decl(elemType(p), v, C::ternary(inside, value, literalOf(p.c.type, 0, 0.0))));
  C::ExprP at = C::sum({C::product(C::name(rn), lit(p.pitch)), C::name(kn)});
  const auto& tiles = isA ? nm.tileA : nm.tileB;
  if (p.arith == MmaArith::F64) {
    inner.push_back(C::assign(C::index(C::name(tiles[0]), at), "=", C::name(v)));
  } else {
    // TF32: rounded to nearest (ties away); tf32x3 keeps the rounded-off rest as a second TF32 value.
    std::string big = ctx.names.fresh("big");
    inner.push_back(C::decl("float", big, C::call("rtcg_tf32_rna", {C::name(v)})));
    inner.push_back(C::assign(C::index(C::name(tiles[0]), at), "=", C::name(big)));
    if (p.arith == MmaArith::Tf32x3)
      inner.push_back(C::assign(C::index(C::name(tiles[1]), at), "=",
                                C::call("rtcg_tf32_rna", {bin("-", C::name(v), C::name(big))})));
  }
  if (total % threads == 0) append(body, std::move(inner));
  else body.push_back(C::ifThen(bin("<", C::name(e), lit(total)), std::move(inner)));
  out.push_back(C::forLoop(ctx.idx, s, lit(0), lit(rounds), C::Unroll::Full, std::move(body)));
}

// A fragment value from a tile: row `row` (of the block tile), column kk + col.
C::ExprP tileAt(const MmaPlan& p, const std::string& tile, C::ExprP row, C::ExprP kcol) {
  return C::index(C::name(tile), C::sum({C::product(std::move(row), lit(p.pitch)), std::move(kcol)}));
}

// One fragment-k of the step: per warp fragment its operand registers, then every mma. tf32x3 adds
// the small products first (a_small b_big, a_big b_small), then the big one, into one accumulator.
void fragmentStep(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& kk, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  const bool f64 = p.arith == MmaArith::F64;
  const int parts = p.tilesPerOperand;
  // a[fm][part][reg], b[fn][part][reg]
  std::vector<std::vector<std::vector<C::ExprP>>> a(ms.tileM), b(ms.tileN);
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int part = 0; part < parts; ++part) {
      C::ExprP row = C::sum({nm.wm, lit(fm * p.fragM), nm.g});
      std::vector<std::pair<int64_t, int64_t>> at = f64 ? std::vector<std::pair<int64_t, int64_t>>{{0, 0}}
                                                        : std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {8, 0}, {0, 4}, {8, 4}};
      std::vector<C::ExprP> regs;
      for (auto [dr, dc] : at) {
        std::string n = ctx.names.fresh(fmt::format("a{}{}", fm, part ? "_small" : ""));
        out.push_back(C::decl(elemType(p), n, tileAt(p, nm.tileA[part], C::sum({row, lit(dr)}), C::sum({kk, nm.t, lit(dc)}))));
        regs.push_back(C::name(n));
      }
      a[fm].push_back(regs);
    }
  for (int64_t fn = 0; fn < ms.tileN; ++fn)
    for (int part = 0; part < parts; ++part) {
      C::ExprP col = C::sum({nm.wn, lit(fn * p.fragN), nm.g});
      std::vector<C::ExprP> regs;
      for (int64_t dk : f64 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, 4}) {
        std::string n = ctx.names.fresh(fmt::format("b{}{}", fn, part ? "_small" : ""));
        out.push_back(C::decl(elemType(p), n, tileAt(p, nm.tileB[part], col, C::sum({kk, nm.t, lit(dk)}))));
        regs.push_back(C::name(n));
      }
      b[fn].push_back(regs);
    }
  auto mma = [&](int64_t fm, int64_t fn, int pa, int pb) {
    std::vector<C::ExprP> args;
    for (const std::string& acc : nm.acc[fm][fn]) args.push_back(C::name(acc));
    for (const C::ExprP& r : a[fm][pa]) args.push_back(r);
    for (const C::ExprP& r : b[fn][pb]) args.push_back(r);
    out.push_back(C::exprStmt(C::call(f64 ? "rtcg_mma_f64" : "rtcg_mma_tf32", std::move(args))));
  };
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn) {
      if (parts == 2) mma(fm, fn, 1, 0), mma(fm, fn, 0, 1);
      mma(fm, fn, 0, 0);
    }
}

// The reduction: per step, stage both operands between barriers, then the fragment-k loop.
void emitSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  std::string step = ctx.names.fresh("step");
  std::vector<C::Stmt> body;
  std::string k0 = ctx.names.fresh("k0");
  body.push_back(C::decl(ctx.idx, k0, C::product(C::name(step), lit(p.blockK))));
  nm.k0 = C::name(k0);
  body.push_back(C::syncThreads());  // the previous step's fragments are read
  stageOperand(ctx, p, nm, true, body);
  stageOperand(ctx, p, nm, false, body);
  body.push_back(C::syncThreads());
  std::string kf = ctx.names.fresh("kf");
  std::vector<C::Stmt> frag;
  fragmentStep(ctx, p, nm, C::product(C::name(kf), lit(p.fragK)), frag);
  body.push_back(C::forLoop(ctx.idx, kf, lit(0), lit(p.blockK / p.fragK), C::Unroll::Full, std::move(frag)));
  out.push_back(C::forLoop(ctx.idx, step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
}

// Per accumulator element: its output point (PTX's C fragment layout), guarded, and the statement
// evaluated there with the sum replaced by the accumulator.
void emitEpilogue(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& out) {
  const MmaSchedule& ms = ctx.sched.mma;
  const Stmt& st = ctx.nest.body[size_t(p.c.statement)];
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn)
      for (int r = 0; r < accElements(p); ++r) {
        const int64_t dr = p.arith == MmaArith::F64 ? 0 : (r >= 2 ? 8 : 0);
        C::ExprP mm = C::sum({nm.m0, nm.wm, lit(fm * p.fragM + dr), nm.g});
        C::ExprP nn = C::sum({nm.n0, nm.wn, lit(fn * p.fragN + (r & 1)), C::product(nm.t, lit(2))});
        std::vector<C::Stmt> store;
        std::string mi = ctx.names.fresh("m"), ni = ctx.names.fresh("n");
        std::vector<C::Stmt> point{C::decl(ctx.idx, mi, mm), C::decl(ctx.idx, ni, nn)};
        Env env;
        env.vars = nm.batch;
        env.vars[p.c.m] = C::sum({lit(p.c.mLo), C::name(mi)});
        env.vars[p.c.n] = C::sum({lit(p.c.nLo), C::name(ni)});
        env.hoisted[p.c.sum.get()] = C::name(nm.acc[fm][fn][r]);
        C::ExprP value = lower(ctx, st.value, env, store);
        C::ExprP target = lowerAccess(ctx, st.array, st.indices, env, store);
        store.push_back(emitStore(ctx, size_t(p.c.statement), target, value));
        C::ExprP inside = bin("&&", bin("<", C::name(mi), lit(p.c.mExtent)), bin("<", C::name(ni), lit(p.c.nExtent)));
        point.push_back(C::ifThen(inside, std::move(store)));
        out.push_back(C::block(std::move(point)));
      }
}

}  // namespace

C::Function emitMmaNest(EmitContext& ctx, LaunchSpec& launch) {
  const MmaPlan& p = *ctx.plan.mma;
  const MmaSchedule& ms = ctx.sched.mma;
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
  std::vector<C::Stmt> body;
  declareNestParams(ctx, fn, launch, body);
  MmaNames nm;
  declareCoordinates(ctx, p, nm, body);
  body.push_back(C::comment(fmt::format("Staged operands: {} x {} (M) and {} x {} (N) values per step, pitch {}{}",
                                        p.blockM, p.blockK, p.blockN, p.blockK, p.pitch,
                                        p.tilesPerOperand == 2 ? "; TF32 big and small parts" : "")));
  for (int part = 0; part < p.tilesPerOperand; ++part) {
    nm.tileA.push_back(ctx.names.fresh(part ? "tile_a_small" : "tile_a"));
    body.push_back(C::sharedArray(elemType(p), nm.tileA.back(), p.blockM * p.pitch));
    nm.tileB.push_back(ctx.names.fresh(part ? "tile_b_small" : "tile_b"));
    body.push_back(C::sharedArray(elemType(p), nm.tileB.back(), p.blockN * p.pitch));
  }
  nm.acc.assign(size_t(ms.tileM), std::vector<std::vector<std::string>>(size_t(ms.tileN)));
  for (int64_t fm = 0; fm < ms.tileM; ++fm)
    for (int64_t fn = 0; fn < ms.tileN; ++fn)
      for (int r = 0; r < accElements(p); ++r) {
        nm.acc[fm][fn].push_back(ctx.names.fresh(fmt::format("acc{}_{}_{}", fm, fn, r)));
        body.push_back(C::decl(elemType(p), nm.acc[fm][fn].back(), literalOf(p.c.type, 0, 0.0), false));
      }
  emitSteps(ctx, p, nm, body);
  emitEpilogue(ctx, p, nm, body);
  fn.body = std::move(body);
  describeNest(ctx, fn);
  return fn;
}

}  // namespace rtcg::emit
