// Accumulations (`h[bin[i]] += w[i]`, `max=`, `min=`; Stmt::accumulate, AccumulationPlan in
// schedule/Plan.h): each update is an atomic. Without clauses, on the element in device memory.
// `accumulate: shared`: on the block's copy of the reachable elements in shared memory, set to the
// operator's identity before the nest's work and merged into the array after it (one atomic per
// element the block changed). `aggregate: warp`: a point records its update (whether it has one,
// its element, its value) inside its guard, and after the guard every lane of the warp runs
// rtcg_warp_<op>: the lanes naming one element combine their values by shuffles and the lowest of
// them issues the one atomic. The plan makes such code cooperative (no thread leaves early), so
// every lane of a warp reaches the exchange and every thread of a block the barriers.
#include <fmt/format.h>

#include <functional>

#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"
#include "support/Error.h"

namespace rtcg::emit {

const char* const accumulateHelpers = R"(// Accumulations (a[i] += v, max=, min=): atomics on device or shared memory, by element type.
// A 64-bit integer sum adds the two's complement bits (the unsigned atomic wraps as the signed sum).
__device__ __forceinline__ void rtcg_atomic_add(int* p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void rtcg_atomic_add(long long* p, long long v) {
  atomicAdd(reinterpret_cast<unsigned long long*>(p), static_cast<unsigned long long>(v));
}
__device__ __forceinline__ void rtcg_atomic_add(float* p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void rtcg_atomic_add(double* p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void rtcg_atomic_max(int* p, int v) { atomicMax(p, v); }
__device__ __forceinline__ void rtcg_atomic_max(long long* p, long long v) { atomicMax(p, v); }
__device__ __forceinline__ void rtcg_atomic_min(int* p, int v) { atomicMin(p, v); }
__device__ __forceinline__ void rtcg_atomic_min(long long* p, long long v) { atomicMin(p, v); }
template <class T> __device__ __forceinline__ T rtcg_combine_add(T a, T b) { return a + b; }
template <class T> __device__ __forceinline__ T rtcg_combine_max(T a, T b) { return a > b ? a : b; }
template <class T> __device__ __forceinline__ T rtcg_combine_min(T a, T b) { return a < b ? a : b; }
// Warp-aggregated accumulation: every lane of the warp in `lanes` calls it (ok: whether the lane has
// an update of base[at] by v). The lanes naming one element (__match_any_sync) combine their values
// by a tree over their ranks (each round a lane adds the next remaining peer above it, and the odd
// ranks drop out), and the lowest of them issues the one atomic.
#define RTCG_WARP_ACCUMULATE(OP)                                                                        \
  template <class T>                                                                                     \
  __device__ __forceinline__ void rtcg_warp_##OP(T* base, long long at, T v, bool ok, unsigned int lane, \
                                                 unsigned int lanes) {                                   \
    const unsigned int peers = __match_any_sync(lanes, ok ? static_cast<unsigned long long>(at) : ~0ull); \
    const unsigned int below = peers & ((1u << lane) - 1u);                                               \
    unsigned int above = peers & (0xfffffffeu << lane);                                                   \
    unsigned int rank = __popc(below);                                                                    \
    while (__any_sync(lanes, above != 0u)) {                                                              \
      const int next = __ffs(above);                                                                      \
      const T other = __shfl_sync(lanes, v, next > 0 ? next - 1 : int(lane));                             \
      if (next > 0) v = rtcg_combine_##OP(v, other);                                                      \
      above &= __ballot_sync(lanes, (rank & 1u) == 0u);                                                   \
      rank >>= 1;                                                                                         \
    }                                                                                                     \
    if (ok && below == 0u) rtcg_atomic_##OP(base + at, v);                                                \
  }
RTCG_WARP_ACCUMULATE(add)
RTCG_WARP_ACCUMULATE(max)
RTCG_WARP_ACCUMULATE(min)
#undef RTCG_WARP_ACCUMULATE
)";

namespace {

const char* opWord(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "add";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
    case ReduceOp::Product: break;
  }
  RTCG_ASSERT(false, "an accumulation with '*=' reached the emitter");
}

const Stmt& accumulation(const EmitContext& ctx) {
  return ctx.nest.body[size_t(ctx.plan.accumulation.statement)];
}

// `for (r = 0; r < rounds; ++r) { e = r * threads + tid; if (e < extent) body(e) }`: the block's
// threads over the elements of its copy.
C::Stmt overCopy(EmitContext& ctx, const std::function<std::vector<C::Stmt>(const C::ExprP&)>& body) {
  const AccumulationPlan& a = ctx.plan.accumulation;
  const int64_t threads = ctx.facts.threads;
  const std::string r = ctx.names.fresh("r"), e = ctx.names.fresh("e");
  std::vector<C::Stmt> inner;
  inner.push_back(C::decl("int", e, C::sum({C::product(C::name(r), lit(threads)), C::castTo("int", ctx.tid)})));
  C::ExprP ev = C::name(e);
  std::vector<C::Stmt> work = body(ev);
  if (a.extent % threads == 0) append(inner, std::move(work));
  else inner.push_back(C::ifThen(C::binary("<", ev, lit(a.extent)), std::move(work)));
  return C::forLoop("int", r, lit(0), lit((a.extent + threads - 1) / threads), C::Unroll::Never, std::move(inner));
}

}  // namespace

void declareAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const AccumulationPlan& a = ctx.plan.accumulation;
  if (!a.shared) return;
  const Stmt& st = accumulation(ctx);
  const ScalarType t = ctx.k.params[size_t(a.array)].type;
  ctx.accum.copy = ctx.names.fresh(ctx.k.params[size_t(a.array)].name + "_copy");
  body.push_back(C::comment(fmt::format("The block's copy of {}[{}..{}) (flat), which the accumulation updates; merged "
                                        "into {} at the end",
                                        ctx.k.params[size_t(a.array)].name, a.lo, a.lo + a.extent,
                                        ctx.k.params[size_t(a.array)].name)));
  body.push_back(C::sharedArray(cudaTypeName(t), ctx.accum.copy, a.extent));
  body.push_back(overCopy(ctx, [&](const C::ExprP& e) {
    return std::vector<C::Stmt>{C::assign(C::index(C::name(ctx.accum.copy), e), "=", reductionIdentity(st.accumOp, t))};
  }));
  body.push_back(C::syncThreads());
}

void mergeAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const AccumulationPlan& a = ctx.plan.accumulation;
  if (!a.shared) return;
  const Stmt& st = accumulation(ctx);
  const ScalarType t = ctx.k.params[size_t(a.array)].type;
  body.push_back(C::comment("Merge the block's copy: one atomic per element it changed"));
  body.push_back(C::syncThreads());
  body.push_back(overCopy(ctx, [&](const C::ExprP& e) {
    const std::string v = ctx.names.fresh("v");
    std::vector<C::Stmt> out;
    out.push_back(C::decl(cudaTypeName(t), v, C::index(C::name(ctx.accum.copy), e)));
    C::ExprP target = C::index(C::name(ctx.paramNames[size_t(a.array)]), C::sum({lit(a.lo), e}));
    out.push_back(C::ifThen(C::binary("!=", C::name(v), reductionIdentity(st.accumOp, t)),
                            {C::exprStmt(C::call(fmt::format("rtcg_atomic_{}", opWord(st.accumOp)),
                                                 {C::unary("&", target), C::name(v)}))}));
    return out;
  }));
}

void openWarpAggregation(EmitContext& ctx, std::vector<C::Stmt>& pbody) {
  if (!ctx.plan.accumulation.warp) return;
  const ScalarType t = ctx.k.params[size_t(ctx.plan.accumulation.array)].type;
  const Stmt& st = accumulation(ctx);
  AccumulationState& s = ctx.accum;
  s.ok = ctx.names.fresh("update");
  s.at = ctx.names.fresh("update_at");
  s.value = ctx.names.fresh("update_value");
  pbody.push_back(C::decl("bool", s.ok, C::boolLit(false), false));
  pbody.push_back(C::decl("long long", s.at, lit(0), false));
  pbody.push_back(C::decl(cudaTypeName(t), s.value, reductionIdentity(st.accumOp, t), false));
}

void closeWarpAggregation(EmitContext& ctx, std::vector<C::Stmt>& pbody) {
  if (!ctx.plan.accumulation.warp) return;
  const AccumulationPlan& a = ctx.plan.accumulation;
  const Stmt& st = accumulation(ctx);
  const AccumulationState& s = ctx.accum;
  // The lanes of this thread's warp (the block's last warp may be partial), and the lane.
  const int64_t threads = ctx.facts.threads;
  C::ExprP lanes;
  C::ExprP tid = C::castTo("unsigned int", ctx.tid);
  if (threads % 32 != 0) {
    const int64_t last = threads % 32;
    lanes = C::ternary(C::binary("==", C::binary("/", tid, C::uintLit(32)), lit(threads / 32)),
                       C::uintLit(uint32_t((uint64_t(1) << last) - 1)), C::uintLit(0xffffffffu));
  } else {
    lanes = C::uintLit(0xffffffffu);
  }
  C::ExprP base = C::name(a.shared ? ctx.accum.copy : ctx.paramNames[size_t(a.array)]);
  C::ExprP at = C::sum({C::name(s.at), lit(-a.lo)});
  pbody.push_back(C::comment("The warp's lanes naming one element combine their updates; one atomic each"));
  pbody.push_back(C::exprStmt(C::call(fmt::format("rtcg_warp_{}", opWord(st.accumOp)),
                                      {base, at, C::name(s.value), C::name(s.ok), C::binary("%", tid, C::uintLit(32)),
                                       lanes})));
}

C::Stmt emitAccumulation(EmitContext& ctx, size_t statement, const C::ExprP& target, const C::ExprP& value) {
  const Stmt& st = ctx.nest.body[statement];
  RTCG_ASSERT(target->kind == C::ExprKind::Index, "an accumulation's target is an element of its array");
  ctx.needs.atomics = true;
  const AccumulationPlan& a = ctx.plan.accumulation;
  const bool planned = a.any() && a.statement == int(statement);
  if (planned && a.warp) {  // recorded here, issued after the point's guard (closeWarpAggregation)
    return C::block({C::assign(C::name(ctx.accum.ok), "=", C::boolLit(true)),
                     C::assign(C::name(ctx.accum.at), "=", target->args[1]),
                     C::assign(C::name(ctx.accum.value), "=", value)});
  }
  C::ExprP element = target;
  if (planned && a.shared)
    element = C::index(C::name(ctx.accum.copy), C::sum({target->args[1], lit(-a.lo)}));
  return C::exprStmt(C::call(fmt::format("rtcg_atomic_{}", opWord(st.accumOp)), {C::unary("&", element), value}));
}

}  // namespace rtcg::emit
