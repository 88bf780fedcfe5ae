// TMA for wgmma's tiles (`mma: ... swizzle 128 tma`, MmaPlan::ring: TMA): instead of every thread's
// cp.async, thread 0 issues each stage's boxes with cp.async.bulk.tensor.2d from the operands'
// tensor maps (kernel parameters `const __grid_constant__ rtcg_tensor_map`, encoded at launch from
// LaunchSpec::tensorMaps), with 128-byte swizzle: the swizzled layouts wgmma's descriptors
// describe. Each stage has an mbarrier (count 1): thread 0 arrives on it with the stage's bytes
// expected (arrive.expect_tx), the boxes complete them, and every thread waits for the phase of the
// stage's use (parity = (step / stages) & 1) before the step's barrier. The ring is openRing's
// (EmitStageRing.cpp) with this copy and the mbarrier hand-over: the barrier after the wait also
// says that every warpgroup has waited for the wgmma that read the buffer refilled next, so
// thread 0 refills it after the barrier. TMA
// zero-fills what lies outside the array (the domain: planTma), which replaces the copies' guards.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

C::ExprP barrierAt(const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer) {
  return C::call("rtcg_tma_barrier", {C::name(nm.tileA[0].storage),
                                      C::sum({lit(p.barrierOffset), C::product(buffer, lit(8))})});
}

namespace {

// One operand's boxes of the step at k0 into the buffer at element `buffer` of its tile: K-major a
// column of atoms (W of k by the tile's rows) per box, MN-major W of M / N by the step's k.
void issueOperand(const MmaPlan& p, const MmaNames& nm, bool isA, const std::string& map, const C::ExprP& k0,
                  const C::ExprP& buffer, const C::ExprP& bar, std::vector<C::Stmt>& out, const C::ExprP& from = nullptr) {
  const MmaPlan::TmaOperand& t = p.tile(isA).tma;
  const bool mnMajor = p.tile(isA).mnMajor;
  // A batched operand's box starts at its batch's rows (MmaPlan::TmaOperand::batchRows).
  std::vector<C::ExprP> rows{from ? from : isA ? nm.m0 : nm.n0};
  for (const auto& [loop, step] : t.batchRows) rows.push_back(C::product(nm.batch.at(loop), lit(step)));
  const C::ExprP origin = C::sum(rows);
  for (int64_t j = 0; j < t.boxes; ++j) {
    C::ExprP dst = C::unary("&", tileRef((isA ? nm.tileA : nm.tileB)[0],
                                         C::sum({buffer, lit(j * t.boxInner * t.boxOuter)})));
    C::ExprP inner = C::sum({mnMajor ? origin : k0, lit(j * t.boxInner)});
    C::ExprP outer = mnMajor ? k0 : origin;
    out.push_back(C::exprStmt(C::call("rtcg_tma_load_2d", {dst, C::unary("&", C::name(map)), bar, inner, outer})));
  }
}

}  // namespace

std::vector<C::Stmt> issueStep(const MmaPlan& p, const MmaNames& nm, const std::string& mapA, const std::string& mapB,
                               const C::ExprP& stepIndex, const C::ExprP& buffer) {
  std::vector<C::Stmt> out;
  // `resident`: B's tiles are copied once (issueResidentB), the stages carry A alone.
  const int64_t bytes = (p.a.buffer + (p.residentB ? 0 : p.b.buffer)) * typeBytes(p.staged);
  C::ExprP bar = barrierAt(p, nm, buffer);
  out.push_back(C::exprStmt(C::call("rtcg_mbar_expect_tx", {bar, lit(bytes)})));
  C::ExprP k0 = C::product(stepIndex, lit(p.blockK));
  issueOperand(p, nm, true, mapA, k0, C::product(buffer, lit(p.a.buffer)), bar, out);
  if (!p.residentB) issueOperand(p, nm, false, mapB, k0, C::product(buffer, lit(p.b.buffer)), bar, out);
  return out;
}

std::vector<C::Stmt> issueResidentB(const MmaPlan& p, const MmaNames& nm, const C::ExprP& n0, const C::ExprP& bar) {
  std::vector<C::Stmt> out;
  out.push_back(C::exprStmt(C::call("rtcg_mbar_expect_tx", {bar, lit(p.steps * p.b.buffer * typeBytes(p.staged))})));
  for (int64_t step = 0; step < p.steps; ++step)
    issueOperand(p, nm, false, nm.tmapB, lit(step * p.blockK), lit(step * p.b.buffer), bar, out, n0);
  return out;
}

void declareTensorMaps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, C::Function& fn, LaunchSpec& launch) {
  if (ctx.arrayAlignment < 16)
    throw Error(fmt::format("'tma' needs 16-byte aligned arrays (TMA's global addresses); this variant assumes {}",
                            ctx.arrayAlignment));
  for (bool isA : {true, false}) {
    const MmaPlan::TmaOperand& t = p.tile(isA).tma;
    if (t.array < 0) continue;  // a kept B that the producer's threads copy (MmaPlan::residentByThreads)
    std::string& name = isA ? nm.tmapA : nm.tmapB;
    name = ctx.names.fresh(ctx.k.params[size_t(t.array)].name + "_map");
    C::Param param{"rtcg_tensor_map", name};
    param.gridConstant = true;
    fn.params.push_back(param);
    const bool local = ctx.k.params[size_t(t.array)].isLocal();
    launch.tensorMaps.push_back({t.array, local ? localArrayName(ctx.k, t.array) : "", p.staged, uint64_t(t.inner),
                                 uint64_t(t.outer), uint64_t(t.pitchBytes), uint32_t(t.boxInner), uint32_t(t.boxOuter)});
  }
}

RingCopy tmaCopy(const MmaPlan& p, const MmaNames& nm) {
  return RingCopy{[&p, &nm](const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
                    append(to, issueStep(p, nm, nm.tmapA, nm.tmapB, stepIndex, buffer));
                  },
                  bin("==", nm.tid, lit(0))};
}

RingHandOver tmaHandOver(const MmaPlan& p, const MmaNames& nm) {
  return RingHandOver{[&p, &nm](const C::ExprP& buffer) { return barrierAt(p, nm, buffer); }, nullptr};
}

// The tensor map's parameter type, the mbarrier and the TMA copy (PTX ISA: mbarrier,
// cp.async.bulk.tensor). rtcg_tensor_map has CUtensorMap's size and alignment (NVRTC has no
// cuda.h); the host emulation defines the same functions over its own encoding of the map.
const Prelude tmaHelpers{3030, R"tma(// TMA helpers ('mma: ... tma'): the tensor map parameter, the stages' mbarriers, the 2-D box copy.
struct __align__(64) rtcg_tensor_map {
  unsigned long long opaque[16];
};
__device__ __forceinline__ void* rtcg_tma_barrier(void* smem, unsigned int offset) {
  return static_cast<unsigned char*>(smem) + offset;
}
#ifndef RTCG_HOST_EMULATION
__device__ __forceinline__ void rtcg_mbar_init(void* bar, unsigned int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"((unsigned int)__cvta_generic_to_shared(bar)),
               "r"(count) : "memory");
}
__device__ __forceinline__ void rtcg_mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_mbar_expect_tx(void* bar, unsigned int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                   (unsigned int)__cvta_generic_to_shared(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void rtcg_mbar_wait(void* bar, unsigned int parity) {
  asm volatile("{\n.reg .pred done;\nrtcg_wait:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
               "@!done bra rtcg_wait;\n}\n" ::"r"((unsigned int)__cvta_generic_to_shared(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void rtcg_tma_load_2d(void* dst, const rtcg_tensor_map* map, void* bar, int inner, int outer) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], "
               "[%2];\n" ::"r"((unsigned int)__cvta_generic_to_shared(dst)), "l"(map),
               "r"((unsigned int)__cvta_generic_to_shared(bar)), "r"(inner), "r"(outer) : "memory");
}
#endif)tma"};

}  // namespace rtcg::emit::mma
