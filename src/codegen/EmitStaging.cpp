// Shared-memory staging: the storage of the tiles, their bases at the current position or
// step, and the cooperative copies into them (direct, through prefetch registers, or cp.async),
// steps or positions ahead by the ring of the plan (EmitStageRing.cpp).
#include <fmt/format.h>
#include <numeric>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "codegen/EmitStageRing.h"
#include "support/Error.h"

namespace rtcg::emit {

namespace {

StageRef tileRef(EmitContext& ctx, size_t t, const std::map<std::string, C::ExprP>& bases, const C::ExprP& buffer,
                 std::vector<C::Stmt>& out);
bool asyncRuns(const EmitContext& ctx, size_t t);
std::map<std::string, C::ExprP> stepBases(const EmitContext& ctx, int group, const C::ExprP& stepBase);

// Elements each thread copies per step for tile `t` (whole runs of copyVector(ctx, t) elements).
int64_t copyTrips(const EmitContext& ctx, size_t t) {
  int64_t total = 1;
  for (const StagedDim& d : ctx.plan.staging.arrays[t].dims) total *= d.size;
  const int64_t V = copyVector(ctx, t);
  return (total / V + ctx.facts.threads - 1) / ctx.facts.threads * V;
}

// Whether the runs of tile `t` (copyVector) are also 16-byte aligned runs in shared memory, so
// that one 16-byte cp.async copies each: the tile's rows are stored contiguously (not
// transposed) and every row, tile and buffer starts at a multiple of the run.
bool asyncRuns(const EmitContext& ctx, size_t t) {
  const StagedArray& sa = ctx.plan.staging.arrays[t];
  const int64_t V = copyVector(ctx, t);
  if (V == 1 || sa.dims.empty() || sa.order.back() != sa.dims.size() - 1) return false;
  // Row pitches are products of the padded extents that include the last one.
  return ctx.stage.tiles[t].offset % V == 0 && sa.elements % V == 0 && sa.padded.back() % V == 0;
}

// The copy of one tile: what every run of it needs (TileCopy::Direct copies global -> shared;
// a prefetched step splits the copy in LoadToRegisters and StoreFromRegisters; Async uses cp.async).
struct TileCopyJob {
  const StagedArray& sa;
  const Param& param;
  const std::string& arr;  // the array's C name
  const StageRef& ref;     // the tile, as reads see it
  TileCopy mode;
  size_t t;
  int64_t V;      // elements per run (copyVector)
  int64_t total;  // elements of the box
};

// The indices of the run that starts at element `e` of the box, declared into `copy`: its index
// in the tile, and (unless it only stores registers) its flat index in the array and whether it
// lies inside the array (null: always).
struct RunIndices {
  C::ExprP tileIndex, flat, inside;
};

RunIndices runIndices(EmitContext& ctx, const TileCopyJob& job, const C::ExprP& e, std::vector<C::Stmt>& copy) {
  const StagedArray& sa = job.sa;
  const size_t rank = sa.dims.size();
  RunIndices r{job.ref.offset, nullptr, nullptr};
  int64_t after = job.total;
  std::string en = ctx.names.fresh("e");
  copy.push_back(C::decl(ctx.idx, en, e));
  for (size_t d = 0; d < rank; ++d) {
    after /= sa.dims[d].size;
    C::ExprP ed = C::name(en);
    if (after > 1) ed = C::binary("/", ed, lit(after));
    if (d > 0) ed = C::binary("%", ed, lit(sa.dims[d].size));
    std::string ln = ctx.names.fresh(fmt::format("{}_{}", en, d));
    copy.push_back(C::decl(ctx.idx, ln, ed));
    r.tileIndex = C::sum({r.tileIndex, C::product(C::name(ln), lit(job.ref.pitch[d]))});
    if (job.mode == TileCopy::StoreFromRegisters) continue;
    C::ExprP gv = C::sum({job.ref.origins[d], C::name(ln)});
    std::string gn = ctx.names.fresh(fmt::format("g_{}", d));
    copy.push_back(C::decl(ctx.idx, gn, gv));
    if (!sa.dims[d].whole) {
      C::ExprP in = C::binary("&&", C::binary(">=", C::name(gn), lit(0)), C::binary("<", C::name(gn), lit(sa.dims[d].extent)));
      r.inside = r.inside ? C::binary("&&", r.inside, in) : in;
    }
    r.flat = d == 0 ? (ctx.idx == "long long" && rank > 1 ? C::castTo("long long", C::name(gn)) : C::name(gn))
                    : C::sum({C::product(r.flat, lit(sa.dims[d].extent)), C::name(gn)});
  }
  if (!r.flat) r.flat = lit(0);
  return r;
}

// Element v of the run in the tile: v further along the last dimension.
C::ExprP tileElement(const TileCopyJob& job, const RunIndices& r, int64_t v) {
  C::ExprP i = v == 0 ? r.tileIndex : C::sum({r.tileIndex, lit(v * job.ref.pitch[job.sa.dims.size() - 1])});
  return C::index(C::name(job.ref.storage), i);
}

// cp.async: 16 bytes at once where the run is one aligned row piece in shared memory too, else
// element by element; elements outside the array are zero-filled (0 bytes read).
void copyRunAsync(const EmitContext& ctx, const TileCopyJob& job, const RunIndices& r, std::vector<C::Stmt>& copy) {
  const int bytes = typeBytes(job.param.type);
  auto source = [&](int64_t v) {
    C::ExprP at = C::unary("&", C::index(C::name(job.arr), v == 0 ? r.flat : C::sum({r.flat, lit(v)})));
    return r.inside ? C::ternary(r.inside, at, C::name(job.arr)) : at;
  };
  auto size = [&](int64_t n) { return r.inside ? C::ternary(r.inside, lit(n), lit(0)) : lit(n); };
  if (job.V > 1 && asyncRuns(ctx, job.t)) {
    copy.push_back(C::exprStmt(C::call("rtcg_cp_async16", {C::unary("&", tileElement(job, r, 0)), source(0), size(16)})));
    return;
  }
  for (int64_t v = 0; v < job.V; ++v)
    copy.push_back(C::exprStmt(C::call(fmt::format("rtcg_cp_async{}", bytes),
                                       {C::unary("&", tileElement(job, r, v)), source(v), size(bytes)})));
}

// A load of the run into the tile or the registers `runRegs`: element by element, or one
// 16-byte load through the read-only data cache.
void copyRunLoad(EmitContext& ctx, const TileCopyJob& job, const RunIndices& r, const std::vector<std::string>& runRegs,
                 std::vector<C::Stmt>& copy) {
  const ScalarType type = job.param.type;
  auto dest = [&](int64_t v) {
    return job.mode == TileCopy::LoadToRegisters ? C::name(runRegs[v]) : tileElement(job, r, v);
  };
  if (job.V == 1) {
    C::ExprP value = C::index(C::name(job.arr), r.flat);
    if (r.inside) value = C::ternary(r.inside, value, literalOf(type, 0, 0.0));
    copy.push_back(C::assign(dest(0), "=", value));
    return;
  }
  const std::string vt = vectorTypeName(type);
  C::ExprP value = C::call("__ldg", {C::castTo("const " + vt + "*", C::unary("&", C::index(C::name(job.arr), r.flat)))});
  if (r.inside) {
    std::vector<C::ExprP> zeros(job.V, literalOf(type, 0, 0.0));
    value = C::ternary(r.inside, value, C::call("make_" + vt, zeros));
  }
  std::string vn = ctx.names.fresh("run");
  copy.push_back(C::decl(vt, vn, value));
  static const char* const lanes[4] = {"x", "y", "z", "w"};
  for (int64_t v = 0; v < job.V; ++v) copy.push_back(C::assign(dest(v), "=", C::member(C::name(vn), lanes[v])));
}

// The copy of the run of V elements that starts at element `e` (a multiple of V: the run lies in
// one row of the box, see copyVector), into shared memory or the registers `runRegs`. A run of
// V > 1 is one 16-byte load; it lies wholly inside the array or wholly outside.
std::vector<C::Stmt> copyRun(EmitContext& ctx, const TileCopyJob& job, const C::ExprP& e,
                             const std::vector<std::string>& runRegs) {
  std::vector<C::Stmt> copy;
  const RunIndices r = runIndices(ctx, job, e, copy);
  if (job.mode == TileCopy::StoreFromRegisters) {
    for (int64_t v = 0; v < job.V; ++v) copy.push_back(C::assign(tileElement(job, r, v), "=", C::name(runRegs[v])));
  } else if (job.mode == TileCopy::Async) {
    copyRunAsync(ctx, job, r, copy);
  } else {
    copyRunLoad(ctx, job, r, runRegs, copy);
  }
  return copy;
}

// The comment ahead of a tile copy: what is copied where, by how many threads.
C::Stmt tileCopyComment(const EmitContext& ctx, const StagedArray& sa, const Param& param, TileCopy mode,
                        const TileTarget& target) {
  std::vector<std::string> box;
  for (const StagedDim& d : sa.dims) box.push_back(fmt::format("{}", d.size));
  static const char* const verbs[] = {"Stage {} in shared memory", "Load a step's tile of {} into registers",
                                      "Store the registers' tile of {} in shared memory",
                                      "Copy a step's tile of {} into shared memory asynchronously (cp.async)"};
  std::string where;
  if (target.buffer && mode != TileCopy::LoadToRegisters)
    where = target.buffer->kind == C::ExprKind::IntLit ? fmt::format(" (buffer {})", target.buffer->intValue)
                                                        : " (the other buffer)";
  return C::comment(fmt::format("{}{}: a tile of {} elements, copied by all {} threads",
                                fmt::format(fmt::runtime(verbs[(int)mode]), stagingEntry(ctx.k, sa)), where,
                                sa.dims.size() ? fmt::format("{}", fmt::join(box, " x ")) : "1", ctx.facts.threads));
}

}  // namespace

// The cooperative copy of tile `t` of the plan: element e of the tile (row-major over its box) is
// loaded by thread e % threads, so consecutive threads load consecutive elements of a row
// (coalesced). Elements outside the array are set to zero (no point in the domain reads them).
// TileCopy::Direct copies global -> shared and points the reads of `env` at the tile; a prefetched
// step splits the copy in two: LoadToRegisters (global -> the thread's registers `regs`, one per
// element it copies; `env` is not changed) and StoreFromRegisters (registers -> shared, and the
// reads of `env` point at the tile).
void stageTile(EmitContext& ctx, size_t t, const std::map<std::string, C::ExprP>& bases, Env& env,
               std::vector<C::Stmt>& out, TileCopy mode, const std::vector<std::string>& regs,
               const TileTarget& target) {
  const StagedArray& sa = ctx.plan.staging.arrays[t];
  const Param& param = ctx.k.params[sa.array];
  int64_t total = 1;
  for (const StagedDim& d : sa.dims) total *= d.size;
  out.push_back(tileCopyComment(ctx, sa, param, mode, target));
  StageRef ref = tileRef(ctx, t, bases, target.buffer, out);
  const int64_t V = copyVector(ctx, t), threads = ctx.facts.threads;
  const TileCopyJob job{sa, param, ctx.paramNames[sa.array], ref, mode, t, V, total};
  auto guarded = [&](const C::ExprP& e, std::vector<C::Stmt> copy) {
    std::vector<C::Stmt> body;
    if (total % (threads * V) != 0) body.push_back(C::ifThen(C::binary("<", e, lit(total)), std::move(copy)));
    else body = std::move(copy);
    return body;
  };
  // Run r = c * threads + tid starts at element r * V: consecutive threads copy consecutive runs.
  auto runStart = [&](const C::ExprP& r) { return V == 1 ? r : C::product(r, lit(V)); };
  int64_t trips = (total / V + threads - 1) / threads;
  if (mode == TileCopy::Direct || mode == TileCopy::Async) {
    std::string c = ctx.names.fresh("c");
    C::ExprP e = runStart(C::sum({C::product(C::name(c), lit(threads)), ctx.tid}));
    out.push_back(C::forLoop(ctx.idx, c, lit(0), lit(trips), C::Unroll::Default, guarded(e, copyRun(ctx, job, e, {}))));
  } else {
    // V named registers per trip, so the copies are straight-line code.
    RTCG_ASSERT((int64_t)regs.size() == trips * V, "prefetch registers do not match the copy's trips");
    for (int64_t c = 0; c < trips; ++c) {
      C::ExprP e = runStart(C::sum({lit(c * threads), ctx.tid}));
      std::vector<std::string> runRegs(regs.begin() + c * V, regs.begin() + (c + 1) * V);
      out.push_back(C::block(guarded(e, copyRun(ctx, job, e, runRegs))));
    }
  }
  if (mode != TileCopy::LoadToRegisters && target.pointReads) env.staged[{sa.array, sa.access}] = std::move(ref);
}

bool hasStepStaging(const EmitContext& ctx, int group) {
  for (const StagedArray& sa : ctx.plan.staging.arrays)
    if (sa.level == StageLevel::Step && sa.group == group) return true;
  return false;
}

namespace {

// Copies (or, per `mode`, loads or stores the prefetch registers of) the step tiles of `group`
// for the step at `stepBase`.
void stageStep(EmitContext& ctx, int group, const C::ExprP& stepBase, Env& env, std::vector<C::Stmt>& out,
               TileCopy mode = TileCopy::Direct, const TileTarget& target = TileTarget()) {
  const std::map<std::string, C::ExprP> bases = stepBases(ctx, group, stepBase);
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t)
    if (ctx.plan.staging.arrays[t].level == StageLevel::Step && ctx.plan.staging.arrays[t].group == group)
      stageTile(ctx, t, bases, env, out, mode,
                mode == TileCopy::Direct || mode == TileCopy::Async ? std::vector<std::string>{} : ctx.stage.prefetchRegs.at(t),
                target);
}

// Points the reads of `env` at buffer `buffer` of the step tiles of `group` (the step at `stepBase`).
void readStep(EmitContext& ctx, int group, const C::ExprP& stepBase, const C::ExprP& buffer, Env& env,
              std::vector<C::Stmt>& out) {
  const std::map<std::string, C::ExprP> bases = stepBases(ctx, group, stepBase);
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t)
    if (ctx.plan.staging.arrays[t].level == StageLevel::Step && ctx.plan.staging.arrays[t].group == group)
      env.staged[{ctx.plan.staging.arrays[t].array, ctx.plan.staging.arrays[t].access}] = tileRef(ctx, t, bases, buffer, out);
}

// Registers for prefetching the step tiles of `group`, declared into `out`: a step is prefetched
// (loaded into registers while the previous one is computed) when its tiles take at most 16
// elements per thread. False (nothing declared) otherwise.
bool declarePrefetch(EmitContext& ctx, int group, std::vector<C::Stmt>& out) {
  int64_t elements = 0;
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t)
    if (ctx.plan.staging.arrays[t].level == StageLevel::Step && ctx.plan.staging.arrays[t].group == group) elements += copyTrips(ctx, t);
  if (elements == 0 || elements > 16) return false;
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t) {
    if (ctx.plan.staging.arrays[t].level != StageLevel::Step || ctx.plan.staging.arrays[t].group != group) continue;
    const Param& param = ctx.k.params[ctx.plan.staging.arrays[t].array];
    std::vector<std::string>& regs = ctx.stage.prefetchRegs[t];
    regs.clear();
    for (int64_t c = 0; c < copyTrips(ctx, t); ++c) {
      regs.push_back(ctx.names.fresh(fmt::format("pf_{}_{}", param.name, c)));
      out.push_back(C::decl(cudaTypeName(param.type), regs.back(), literalOf(param.type, 0, 0.0), false));
    }
  }
  return true;
}

// lo plus the grid and serial/unroll parts of a parallel index: the same for every thread of the
// block at a position of the serial loops.
// `pipelinedAt` (positions pipelined): the value the pipelined part's loop variable takes instead
// of the variable itself, for a copy that is for another position.
C::ExprP uniformBase(const EmitContext& ctx, const ParallelIndex& p, const C::ExprP& pipelinedAt) {
  static const char* axisField[3] = {"x", "y", "z"};
  std::vector<C::ExprP> terms{lit(p.ni->hull.lo)};
  for (size_t part = 0; part < p.ext.size(); ++part) {
    Placement pl = p.sched->parts[part].place;
    if (isGridPlacement(pl))
      terms.push_back(C::product(C::castTo(ctx.idx, C::member(C::name("blockIdx"), axisField[placementAxis(pl)])),
                                 lit(p.stride[part])));
    else if (pl == Placement::Serial || pl == Placement::Unroll)
      terms.push_back(C::product(pipelinedAt && ctx.facts.pipe.par == &p && ctx.facts.pipe.part == part ? pipelinedAt : C::name(p.loopVars[part]),
                                 lit(p.stride[part])));
  }
  return C::sum(terms);
}

// The bases of the step tiles of `group` at `stepBase`: the step's first value of the reduction
// or, when the group's steps are pipelined across positions, the position (the value of the
// pipelined loop part's variable) whose one step is meant.
std::map<std::string, C::ExprP> stepBases(const EmitContext& ctx, int group, const C::ExprP& stepBase) {
  if (group != ctx.facts.pipe.group) return tileBases(ctx, stepBase);
  return tileBases(ctx, ctx.facts.pipe.stepBase, stepBase);
}

// The tile `t` as reads see it: its buffer's offset, per dimension the origin (declared into
// `out` when not constant) and the pitch in the tile's storage order.
StageRef tileRef(EmitContext& ctx, size_t t, const std::map<std::string, C::ExprP>& bases, const C::ExprP& buffer,
                              std::vector<C::Stmt>& out) {
  const StagedArray& sa = ctx.plan.staging.arrays[t];
  const size_t rank = sa.dims.size();
  C::ExprP offset = lit(ctx.stage.tiles[t].offset);
  if (buffer) offset = C::sum({offset, C::product(buffer, lit(sa.elements))});
  StageRef ref{ctx.stage.tiles[t].storage, offset, {}, storedPitches(sa), std::vector<int64_t>(rank, 0)};
  for (size_t d = 0; d < rank; ++d)
    if (sa.dims[d].clipped) ref.clampTo[d] = sa.dims[d].extent;
  const std::string& arr = ctx.paramNames[sa.array];
  for (size_t d = 0; d < rank; ++d) {
    std::vector<C::ExprP> terms{lit(sa.dims[d].constant)};
    for (const auto& [key, c] : sa.dims[d].coeffs) terms.push_back(C::product(bases.at(key), lit(c)));
    C::ExprP origin = C::sum(terms);
    if (origin->kind != C::ExprKind::IntLit) {
      std::string n = ctx.names.fresh(fmt::format("{}_o{}", arr, d));
      out.push_back(C::decl(ctx.idx, n, origin));
      origin = C::name(n);
    }
    ref.origins.push_back(origin);
  }
  return ref;
}

}  // namespace

// The copy of a step's tiles of `group` (the step number `step`, counting from 0, whose base and
// those of the others `stepAt` gives) into shared memory, by the ring of the plan
// (StagingPlan::ring; emitStepRing, EmitStageRing.cpp): `before` goes ahead of the loop over
// steps, `stage` at the start of each step, `after` at its end, followed by the caller's barrier;
// `env` then reads the step's tiles. Through the registers a step is prefetched where
// declarePrefetch takes it.
void copyStep(EmitContext& ctx, int group, const C::ExprP& step, const StepAt& stepAt, Env& env,
              std::vector<C::Stmt>& before, std::vector<C::Stmt>& stage, std::vector<C::Stmt>& after) {
  const StageRing& ring = ctx.plan.staging.ring;
  if (ring.engine == CopyEngine::CpAsync) ctx.needs.need(asyncCopyHelpers);
  Env scratch = env;  // copies that the reads of this step do not see
  StepCopies copies;
  copies.throughRegisters = ring.engine == CopyEngine::Registers && declarePrefetch(ctx, group, before);
  copies.copy = [&](const C::ExprP& at, TileCopy mode, const TileTarget& target, std::vector<C::Stmt>& to) {
    stageStep(ctx, group, at, scratch, to, mode, target);
  };
  copies.copyAndRead = [&](const C::ExprP& at, TileCopy mode, std::vector<C::Stmt>& to) {
    stageStep(ctx, group, at, env, to, mode);
  };
  copies.read = [&](const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    readStep(ctx, group, stepAt(0, false).first, buffer, env, to);
  };
  emitStepRing(ring, step, stepAt, copies, before, stage, after);
}

// The uniform-based keys of staged boxes (StagedDim::coeffs) at the current position: "p:<name>"
// for each parallel index and, with `stepBase`, "step" for the staged reduction step.
std::map<std::string, C::ExprP> tileBases(const EmitContext& ctx, const C::ExprP& stepBase,
                                          const C::ExprP& pipelinedAt) {
  std::map<std::string, C::ExprP> bases;
  if (stepBase) bases["step"] = stepBase;
  for (const ParallelIndex& p : ctx.facts.par) bases["p:" + p.loop->name] = uniformBase(ctx, p, pipelinedAt);
  return bases;
}

// Elements per 16-byte load of the copy of tile `t`: 16 / element size when every run of that
// many elements along the box's last dimension starts 16-byte aligned in the array (the box's
// rows and the array's rows hold whole runs, and the box's origin along the last dimension is a
// multiple of the run in every block and step), else 1 (element by element). Aligned runs never
// straddle the array's edge: each one is inside the array or outside it as a whole.
int64_t copyVector(const EmitContext& ctx, size_t t) {
  const StagedArray& sa = ctx.plan.staging.arrays[t];
  const int bytes = typeBytes(ctx.k.params[sa.array].type);
  if (sa.dims.empty() || (bytes != 4 && bytes != 8)) return 1;
  if (ctx.arrayAlignment < 16) return 1;  // the array itself may start off a 16-byte boundary
  const int64_t V = 16 / bytes;
  const StagedDim& last = sa.dims.back();
  if (last.size % V != 0 || last.extent % V != 0) return 1;
  int64_t divisor = last.constant;
  for (const auto& [key, c] : last.coeffs) divisor = std::gcd(divisor, c * baseDivisor(ctx, key, sa.group));
  return divisor % V == 0 ? V : 1;
}

// A number that divides every value of the uniform base `key` (tileBases): the gcd of the
// index's lo and the strides of its grid and loop parts ("p:<name>"), or of the staged
// reduction's lo and the span of its step ("step", for the steps of hoisted group `group`).
int64_t baseDivisor(const EmitContext& ctx, const std::string& key, int group) {
  if (key == "step") {
    if (group < 0 || group >= (int)ctx.plan.groups.size()) return 1;
    const Loop& l = ctx.plan.groups[group][0]->loops.front();
    const IndexSchedule& is = ctx.scheduleOf(l.name);
    auto lo = constIntValue(l.lo, ctx.k);
    // Steps start at lo + (the block's share + n) * span (stepPartOf).
    const size_t sp = stepPartOf(is);
    if (!lo || sp + 1 >= is.parts.size() || isThreadPlacement(is.parts[sp].place)) return 1;
    return std::gcd(*lo, stepSpanOf(is));
  }
  for (const ParallelIndex& p : ctx.facts.par)
    if (key == "p:" + p.loop->name) {
      int64_t divisor = p.ni->hull.lo;
      for (size_t part = 0; part < p.ext.size(); ++part) {
        Placement pl = p.sched->parts[part].place;
        if (isGridPlacement(pl) || pl == Placement::Serial || pl == Placement::Unroll)
          divisor = std::gcd(divisor, p.stride[part]);
      }
      return divisor;
    }
  return 1;
}

// The tiles' storage as the plan laid it out (NestPlan::tileByteOffsets): one `extern __shared__` array
// per element type, sliced, or a static shared array per tile.
void declareTiles(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const LaunchFacts& f = ctx.facts;
  std::set<ScalarType> externTypes;
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t) {
    const StagedArray& sa = ctx.plan.staging.arrays[t];
    ScalarType type = ctx.k.params[sa.array].type;
    if (ctx.plan.dynamicShared) {
      static const std::map<ScalarType, const char*> storage = {{ScalarType::F32, "rtcg_smem_f32"},
                                                                 {ScalarType::F64, "rtcg_smem_f64"},
                                                                 {ScalarType::I32, "rtcg_smem_i32"},
                                                                 {ScalarType::I64, "rtcg_smem_i64"},
                                                                 {ScalarType::F16, "rtcg_smem_f16"},
                                                                 {ScalarType::BF16, "rtcg_smem_bf16"},
                                                                 {ScalarType::I8, "rtcg_smem_i8"},
                                                                 {ScalarType::U8, "rtcg_smem_u8"},
                                                                 {ScalarType::U32, "rtcg_smem_u32"}};
      if (externTypes.insert(type).second) body.push_back(C::externSharedArray(cudaTypeName(type), storage.at(type)));
      ctx.stage.tiles.push_back({storage.at(type), f.tileOffsets[t]});
    } else {
      std::string n = ctx.names.fresh("s_" + ctx.k.params[sa.array].name);
      body.push_back(C::sharedArray(cudaTypeName(type), n, sa.elements * sa.buffers));
      ctx.stage.tiles.push_back({n, 0});
    }
  }
}

// The Block-level tiles that move with the serial parts of parallel indices (staged per
// position), or those that do not (staged once per block), copied into `out` and read from `env`,
// then a barrier. False when there are none.
bool stageBlockTiles(EmitContext& ctx, bool movesWithSerial, Env& env, std::vector<C::Stmt>& out) {
  const std::map<std::string, C::ExprP> bases = tileBases(ctx);
  bool any = false;
  for (size_t t = 0; t < ctx.plan.staging.arrays.size(); ++t) {
    const StagedArray& sa = ctx.plan.staging.arrays[t];
    if (sa.level == StageLevel::Block && sa.movesWithSerial == movesWithSerial) {
      stageTile(ctx, t, bases, env, out);
      any = true;
    }
  }
  if (any) out.push_back(C::syncThreads());
  return any;
}

}  // namespace rtcg::emit
