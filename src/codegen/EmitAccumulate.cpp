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

const Prelude accumulateHelpers{6010, R"(// Accumulations (a[i] += v, max=, min=): atomics on device or shared memory, by element type.
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
)"};

// The u32 atomics, in modules that accumulate into u32 arrays only (the other modules' code stays
// as it was). They precede accumulateHelpers, whose warp templates call rtcg_atomic_* with T
// unsigned int: a call of a fundamental type finds only the overloads declared before the template.
const Prelude accumulateU32Helpers{6000, R"(// Accumulations into u32 elements: unsigned atomics (a sum wraps modulo 2^32; max and min compare unsigned).
__device__ __forceinline__ void rtcg_atomic_add(unsigned int* p, unsigned int v) { atomicAdd(p, v); }
__device__ __forceinline__ void rtcg_atomic_max(unsigned int* p, unsigned int v) { atomicMax(p, v); }
__device__ __forceinline__ void rtcg_atomic_min(unsigned int* p, unsigned int v) { atomicMin(p, v); }
)"};

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

// `for (r = 0; r < rounds; ++r) { e = r * threads + tid; if (e < count [&& also]) body(e) }`: the
// block's threads over `count` elements of its copies (`also`: a further bound, or null).
C::Stmt overCopy(EmitContext& ctx, int64_t count, const std::function<C::ExprP(const C::ExprP&)>& also,
                 const std::function<std::vector<C::Stmt>(const C::ExprP&)>& body) {
  const int64_t threads = ctx.facts.threads;
  const std::string r = ctx.names.fresh("r"), e = ctx.names.fresh("e");
  std::vector<C::Stmt> inner;
  inner.push_back(C::decl("int", e, C::sum({C::product(C::name(r), lit(threads)), C::castTo("int", ctx.tid)})));
  C::ExprP ev = C::name(e);
  std::vector<C::Stmt> work = body(ev);
  C::ExprP bound = count % threads == 0 ? nullptr : C::binary("<", ev, lit(count));
  if (also) bound = bound ? C::binary("&&", bound, also(ev)) : also(ev);
  if (!bound) append(inner, std::move(work));
  else inner.push_back(C::ifThen(bound, std::move(work)));
  return C::forLoop("int", r, lit(0), lit((count + threads - 1) / threads), C::Unroll::Never, std::move(inner));
}

// The copy's element for the flat index `at` of the array (in the block's slice, where sliced), in
// this warp's copy (`copies R`).
C::ExprP copyOffset(const EmitContext& ctx, const C::ExprP& relative) {
  const AccumulationState& s = ctx.accum;
  return s.copyBase.empty() ? relative : C::sum({C::name(s.copyBase), relative});
}

// `at - lo - slice_lo` as long long: where a flat index falls in the block's slice.
C::ExprP sliceRelative(const EmitContext& ctx, const C::ExprP& at) {
  return C::binary("-", C::sum({C::castTo("long long", at), lit(-ctx.plan.accumulation.lo)}), C::name(ctx.accum.sliceLo));
}

// Whether a slice-relative index is in the block's slice: `(unsigned long long)rel < L` (the last
// slice may be shorter, but an element of the array past it is past the range).
C::ExprP inSlice(const EmitContext& ctx, const C::ExprP& relative) {
  return C::binary("<", C::castTo("unsigned long long", relative),
                   C::intLit(ctx.plan.accumulation.sliceExtent, true));
}

}  // namespace

void declareAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const AccumulationPlan& a = ctx.plan.accumulation;
  if (!a.shared) return;
  const Stmt& st = accumulation(ctx);
  const ScalarType t = ctx.k.params[size_t(a.array)].type;
  const std::string array = ctx.k.params[size_t(a.array)].name;
  ctx.accum.copy = ctx.names.fresh(array + "_copy");
  const bool plain = a.slices == 1 && a.copies == 1 && !a.dynamic;
  if (plain) {
    body.push_back(C::comment(fmt::format("The block's copy of {}[{}..{}) (flat), which the accumulation updates; merged "
                                          "into {} at the end",
                                          array, a.lo, a.lo + a.extent, array)));
  } else {
    body.push_back(C::comment(fmt::format(
        "The block's {} of {}[{}..{}) (flat){}{}{}, which the accumulation updates; merged into {} at the end",
        a.copies > 1 ? fmt::format("{} copies", a.copies) : "copy", array, a.lo, a.lo + a.extent,
        a.slices > 1 ? fmt::format(", slice blockIdx.z of {} elements", a.sliceExtent) : "",
        a.copies > 1 ? fmt::format(", warp w updating copy w % {}", a.copies) : "",
        a.dynamic ? ", in dynamic shared memory" : "", array)));
  }
  const int64_t elements = a.copies * a.sliceExtent;
  if (!a.dynamic) {
    body.push_back(C::sharedArray(cudaTypeName(t), ctx.accum.copy, elements));
  } else {
    const std::string storage = fmt::format("rtcg_smem_{}", typeName(t));
    body.push_back(C::externSharedArray(cudaTypeName(t), storage));
    body.push_back(C::decl(fmt::format("{}*", cudaTypeName(t)), ctx.accum.copy,
                           C::sum({C::name(storage), lit(a.dynamicOffset / typeBytes(t))}), false));
  }
  if (a.slices > 1) {
    ctx.accum.sliceLo = ctx.names.fresh("slice_lo");
    body.push_back(C::decl("long long", ctx.accum.sliceLo,
                           C::product(C::castTo("long long", C::member(C::name("blockIdx"), "z")),
                                      C::intLit(a.sliceExtent, true))));
  }
  if (a.copies > 1) {
    ctx.accum.copyBase = ctx.names.fresh("copy_base");
    C::ExprP warp = C::binary("/", C::castTo("int", ctx.tid), lit(32));
    body.push_back(C::decl("int", ctx.accum.copyBase,
                           C::product(C::binary("%", warp, lit(a.copies)), lit(a.sliceExtent))));
  }
  body.push_back(overCopy(ctx, elements, nullptr, [&](const C::ExprP& e) {
    return std::vector<C::Stmt>{C::assign(C::index(C::name(ctx.accum.copy), e), "=", reductionIdentity(st.accumOp, t))};
  }));
  body.push_back(C::syncThreads());
}

void mergeAccumulationCopy(EmitContext& ctx, std::vector<C::Stmt>& body) {
  const AccumulationPlan& a = ctx.plan.accumulation;
  if (!a.shared) return;
  const Stmt& st = accumulation(ctx);
  const ScalarType t = ctx.k.params[size_t(a.array)].type;
  const std::string op = opWord(st.accumOp);
  body.push_back(C::comment(a.copies > 1 ? "Merge the block's copies: their values of an element combined, one atomic per "
                                           "element they changed"
                                         : "Merge the block's copy: one atomic per element it changed"));
  body.push_back(C::syncThreads());
  // The last slice may be shorter than the others: its elements past the range are not merged.
  std::function<C::ExprP(const C::ExprP&)> also;
  if (a.slices > 1 && a.slices * a.sliceExtent != a.extent)
    also = [&](const C::ExprP& e) {
      return C::binary("<", C::sum({C::name(ctx.accum.sliceLo), e}), C::intLit(a.extent, true));
    };
  body.push_back(overCopy(ctx, a.sliceExtent, also, [&](const C::ExprP& e) {
    const std::string v = ctx.names.fresh("v");
    std::vector<C::Stmt> out;
    out.push_back(C::decl(cudaTypeName(t), v, C::index(C::name(ctx.accum.copy), e), a.copies == 1));
    if (a.copies > 1) {
      const std::string c = ctx.names.fresh("c");
      C::ExprP other = C::index(C::name(ctx.accum.copy), C::sum({C::product(C::name(c), lit(a.sliceExtent)), e}));
      out.push_back(C::forLoop("int", c, lit(1), lit(a.copies), C::Unroll::Full,
                               {C::assign(C::name(v), "=", C::call("rtcg_combine_" + op, {C::name(v), other}))}));
    }
    std::vector<C::ExprP> at{lit(a.lo)};
    if (a.slices > 1) at.push_back(C::name(ctx.accum.sliceLo));
    at.push_back(e);
    C::ExprP target = C::index(C::name(ctx.paramNames[size_t(a.array)]), C::sum(at));
    out.push_back(C::ifThen(C::binary("!=", C::name(v), reductionIdentity(st.accumOp, t)),
                            {C::exprStmt(C::call(fmt::format("rtcg_atomic_{}", op), {C::unary("&", target), C::name(v)}))}));
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
  if (!s.copyBase.empty()) base = C::sum({base, C::name(s.copyBase)});
  C::ExprP at = s.sliceLo.empty() ? C::sum({C::name(s.at), lit(-a.lo)}) : sliceRelative(ctx, C::name(s.at));
  pbody.push_back(C::comment("The warp's lanes naming one element combine their updates; one atomic each"));
  pbody.push_back(C::exprStmt(C::call(fmt::format("rtcg_warp_{}", opWord(st.accumOp)),
                                      {base, at, C::name(s.value), C::name(s.ok), C::binary("%", tid, C::uintLit(32)),
                                       lanes})));
}

C::Stmt emitAccumulation(EmitContext& ctx, size_t statement, const C::ExprP& target, const C::ExprP& value) {
  const Stmt& st = ctx.nest.body[statement];
  RTCG_ASSERT(target->kind == C::ExprKind::Index, "an accumulation's target is an element of its array");
  ctx.needs.need(accumulateHelpers);
  if (ctx.k.params[size_t(st.array)].type == ScalarType::U32) ctx.needs.need(accumulateU32Helpers);
  const AccumulationPlan& a = ctx.plan.accumulation;
  const bool planned = a.any() && a.statement == int(statement);
  const bool sliced = planned && a.shared && a.slices > 1;
  if (planned && a.warp) {  // recorded here, issued after the point's guard (closeWarpAggregation)
    if (sliced)  // only an update in the block's slice takes part
      return C::block({C::assign(C::name(ctx.accum.at), "=", target->args[1]),
                       C::assign(C::name(ctx.accum.ok), "=", inSlice(ctx, sliceRelative(ctx, C::name(ctx.accum.at)))),
                       C::assign(C::name(ctx.accum.value), "=", value)});
    return C::block({C::assign(C::name(ctx.accum.ok), "=", C::boolLit(true)),
                     C::assign(C::name(ctx.accum.at), "=", target->args[1]),
                     C::assign(C::name(ctx.accum.value), "=", value)});
  }
  const std::string atomic = fmt::format("rtcg_atomic_{}", opWord(st.accumOp));
  if (sliced) {  // the update applies where its element is in the block's slice
    const std::string rel = ctx.names.fresh("slice_at");
    C::ExprP element = C::index(C::name(ctx.accum.copy), copyOffset(ctx, C::name(rel)));
    return C::block({C::decl("long long", rel, sliceRelative(ctx, target->args[1])),
                     C::ifThen(inSlice(ctx, C::name(rel)), {C::exprStmt(C::call(atomic, {C::unary("&", element), value}))})});
  }
  C::ExprP element = target;
  if (planned && a.shared)
    element = C::index(C::name(ctx.accum.copy), copyOffset(ctx, C::sum({target->args[1], lit(-a.lo)})));
  return C::exprStmt(C::call(atomic, {C::unary("&", element), value}));
}

}  // namespace rtcg::emit
