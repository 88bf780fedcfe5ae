// Hopper's warpgroup MMA (`mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4`, MmaPlan::wgmma):
// each warpgroup (4 consecutive warps) owns a 64 x N output tile and issues wgmma.mma_async on it
// with both operands read from shared memory through matrix descriptors. The block copies each
// reduction step's tiles by cp.async (16 bytes where aligned, zero-filled outside the domain) into
// a ring of `stages` buffers in the canonical layouts of schedule/Mma.h; per step every thread
// waits for its copies, fences them for the async proxy (wgmma reads shared memory through it),
// a barrier, the copy of the step MmaPlan::copyAhead ahead, then the warpgroup's wgmma over the
// step's k, committed; with 3 or more stages it stays in flight through the next step's copies and
// issue (wait_group 1, so the buffer refilled at a step is the one read two steps before, whose
// wgmma every warpgroup waited for before that step's barrier), else it is waited for at once.
// With `swizzle 128` (MmaPlan::swizzle128) the same copies land in the 128-byte swizzled layouts
// and the descriptors say so; with `tma` as well (MmaPlan::tma) thread 0 fills each stage by TMA
// boxes on the stage's mbarrier instead (EmitTma.cpp, openTmaRing), the rest of the step as here.
// The accumulators stay in registers in the m16n8 fragment layout per warp, so the mma.sync
// epilogues (EmitMma.cpp) store them.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

namespace {

// Elements of the staged type in 16 bytes (a core matrix row).
int64_t coreRow(const MmaPlan& p) { return 16 / typeBytes(p.staged); }

bool mnMajor(const MmaPlan& p, bool isA) { return isA ? p.aMnMajor : p.bMnMajor; }

// The helper's name: arithmetic, shape and each operand's layout (k: K-major, m: MN-major).
std::string helperName(const MmaPlan& p) {
  return fmt::format("rtcg_wgmma_{}_m64n{}k{}_{}{}", mmaArithName(p.arith), p.fragN, p.fragK, p.aMnMajor ? 'm' : 'k',
                     p.bMnMajor ? 'm' : 'k');
}

// Elements of the staged type in 128 bytes (a swizzle atom's row).
int64_t atomRow(const MmaPlan& p) { return 128 / typeBytes(p.staged); }

// A descriptor's offset (in 16-byte units, what its start address field counts) of the core
// matrix holding row `rows` (a multiple of 8 and of a core row) of k 0: SBO per row group. Swizzled
// MN-major: LBO per atom of W rows (a warpgroup's rows start at an atom, planSwizzle128).
C::ExprP rowsOffset(const MmaPlan& p, bool isA, const C::ExprP& rows) {
  const int64_t sbo = isA ? p.sboA : p.sboB;
  if (p.swizzle128 && mnMajor(p, isA))
    return C::product(bin("/", rows, lit(atomRow(p))), lit((isA ? p.lboA : p.lboB) / 16));
  return C::product(bin("/", rows, lit(mnMajor(p, isA) ? coreRow(p) : 8)), lit(sbo / 16));
}

// The same for k = kk (a multiple of the instruction's k): LBO per core along k. Swizzled: K-major
// moves by the column of atoms (rows x 128 bytes) and within its row (kk's bytes: the hardware
// XORs the address it forms), MN-major by SBO per 8 k.
int64_t kOffset(const MmaPlan& p, bool isA, int64_t kk) {
  const int64_t lbo = isA ? p.lboA : p.lboB, rows = isA ? p.blockM : p.blockN, w = atomRow(p);
  if (p.swizzle128)
    return mnMajor(p, isA) ? kk / 8 * ((isA ? p.sboA : p.sboB) / 16)
                           : (kk / w * rows * 128 + kk % w * typeBytes(p.staged)) / 16;
  return kk / (mnMajor(p, isA) ? 8 : coreRow(p)) * (lbo / 16);
}

// The accumulators of a warpgroup's 64 x N tile: N / 2 per thread, chunk c (8 columns) holding
// elements 4c..4c + 3 (rows g, g, g + 8, g + 8 of the warp's 16; columns 2t, 2t + 1).
void declareAccumulators(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  nm.acc.assign(1, std::vector<std::vector<std::string>>(size_t(p.fragN / 8)));
  for (size_t c = 0; c < nm.acc[0].size(); ++c)
    for (int r = 0; r < 4; ++r) {
      nm.acc[0][c].push_back(ctx.names.fresh(fmt::format("acc{}_{}", c, r)));
      body.push_back(C::decl("float", nm.acc[0][c].back(), literalOf(ScalarType::F32, 0, 0.0), false));
    }
}

// A call of a per-shape helper with every accumulator (by reference) after `lead`.
C::Stmt withAccumulators(const MmaNames& nm, const std::string& name, std::vector<C::ExprP> lead) {
  for (const auto& chunk : nm.acc[0])
    for (const std::string& a : chunk) lead.push_back(C::name(a));
  return C::exprStmt(C::call(name, std::move(lead)));
}

// The reduction: the cp.async ring (openStepRing) with D = copyAhead steps copied ahead and the
// copies fenced for the async proxy, then per step the wgmma of each k of the step, committed and
// waited for down to 1 group in flight (overlap) or 0.
void emitWgmmaSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const C::ExprP& descA, const C::ExprP& descB,
                    std::vector<C::Stmt>& out) {
  const int64_t D = p.copyAhead;
  auto copyStep = [&](const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    C::ExprP k0 = C::product(stepIndex, lit(p.blockK));
    stageOperandAsLoaded(ctx, p, nm, true, k0, C::product(buffer, lit(p.bufferA)), to);
    stageOperandAsLoaded(ctx, p, nm, false, k0, C::product(buffer, lit(p.bufferB)), to);
  };
  std::vector<C::Stmt> body;
  const StepRing ring = p.tma ? openTmaRing(ctx, p, nm, nm.tmapA, nm.tmapB, out, body)
                              : openStepRing(ctx, p, D, true, copyStep, out, body);
  const std::string& buf = ring.buffer;
  const std::string name = helperName(p);
  body.push_back(withAccumulators(nm, name + "_fence", {}));
  const int64_t bytes = typeBytes(p.staged);
  for (int64_t kk = 0; kk < p.blockK; kk += p.fragK) {
    C::ExprP a = C::sum({descA, C::product(C::name(buf), lit(p.bufferA * bytes / 16)), lit(kOffset(p, true, kk))});
    C::ExprP b = C::sum({descB, C::product(C::name(buf), lit(p.bufferB * bytes / 16)), lit(kOffset(p, false, kk))});
    body.push_back(withAccumulators(nm, name, {a, b}));
  }
  body.push_back(C::exprStmt(C::call("rtcg_wgmma_commit", {})));
  body.push_back(withAccumulators(nm, name + (p.wgmmaOverlap ? "_wait1" : "_wait0"), {}));
  out.push_back(C::forLoop(ctx.idx, ring.step, lit(0), lit(p.steps), C::Unroll::Never, std::move(body)));
  if (p.wgmmaOverlap) out.push_back(withAccumulators(nm, name + "_wait0", {}));
}

}  // namespace

// The 128-byte swizzled layouts (MmaPlan::swizzle128): the unswizzled element offset, whose
// 128-byte row index (mod 8) is row % 8 (K-major) or k % 8 (MN-major) as every atom starts at a
// multiple of 1024 bytes, with its 16-byte chunk XORed by that.
C::ExprP swizzledTileAt(const MmaPlan& p, bool isA, const C::ExprP& row, const C::ExprP& k) {
  const int64_t e = coreRow(p), w = atomRow(p), rows = isA ? p.blockM : p.blockN;
  // K-major: columns of atoms along k, rows of 128 bytes; MN-major: columns along M / N, k rows.
  if (!mnMajor(p, isA))
    return C::sum({C::product(bin("/", k, lit(w)), lit(rows * w)), C::product(row, lit(w)),
                   bin("^", bin("%", k, lit(w)), C::product(bin("%", row, lit(8)), lit(e)))});
  return C::sum({C::product(bin("/", row, lit(w)), lit(p.blockK * w)), C::product(k, lit(w)),
                 bin("^", bin("%", row, lit(w)), C::product(bin("%", k, lit(8)), lit(e)))});
}

C::ExprP wgmmaTileAt(const MmaPlan& p, bool isA, const C::ExprP& row, const C::ExprP& k) {
  if (p.swizzle128) return swizzledTileAt(p, isA, row, k);
  const int64_t e = coreRow(p), rows = isA ? p.blockM : p.blockN;
  // K-major: core (row / 8, k / e), 8 * e elements each, a row group's cores adjacent along k.
  if (!mnMajor(p, isA))
    return C::sum({C::product(bin("/", row, lit(8)), lit(p.blockK * 8)), C::product(bin("/", k, lit(e)), lit(8 * e)),
                   C::product(bin("%", row, lit(8)), lit(e)), bin("%", k, lit(e))});
  // MN-major: core (row / e, k / 8), the cores of 8 k adjacent along M / N.
  return C::sum({C::product(bin("/", k, lit(8)), lit(rows * 8)), C::product(bin("/", row, lit(e)), lit(8 * e)),
                 C::product(bin("%", k, lit(8)), lit(e)), bin("%", row, lit(e))});
}

void emitWgmmaMain(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body) {
  body.push_back(C::comment(fmt::format(
      "wgmma m64n{}k{}: operands {} x {} (M, {}) and {} x {} (N, {}) values per step in {}, {} buffers "
      "filled by {}",
      p.fragN, p.fragK, p.blockM, p.blockK, p.aMnMajor ? "MN-major" : "K-major", p.blockN, p.blockK,
      p.bMnMajor ? "MN-major" : "K-major", p.swizzle128 ? "128-byte swizzled atoms" : "core matrices", p.stages,
      p.tma ? "TMA (thread 0), an mbarrier each" : "cp.async")));
  declareMmaTiles(ctx, p, nm, body);
  declareAccumulators(ctx, p, nm, body);
  // Each warpgroup's descriptors at buffer 0, k 0: the tile's start plus its rows' offset.
  auto descriptor = [&](bool isA) {
    const Tile& tile = (isA ? nm.tileA : nm.tileB)[0];
    std::string n = ctx.names.fresh(isA ? "desc_a" : "desc_b");
    C::ExprP base = C::call(p.swizzle128 ? "rtcg_wgmma_desc_sw128" : "rtcg_wgmma_desc", {C::unary("&", tileRef(tile, lit(0))), lit(isA ? p.lboA : p.lboB),
                                                lit(isA ? p.sboA : p.sboB)});
    body.push_back(C::decl("unsigned long long", n, C::sum({base, rowsOffset(p, isA, isA ? nm.wgm : nm.wgn)})));
    return C::name(n);
  };
  C::ExprP descA = descriptor(true), descB = descriptor(false);
  emitWgmmaSteps(ctx, p, nm, descA, descB, body);
}

// Descriptors and fences (PTX ISA: wgmma, the shared memory matrix descriptor; fence.proxy.async).
// The first line marks the module for sm_90a (codegen/Nvrtc.h: NVRTC compiles such a module for
// sm_90a where the target is sm_90). The host emulation defines the same functions.
const char* const wgmmaCommonHelpers = R"wgmma(// rtcg-arch: sm_90a (wgmma)
// wgmma helpers ('mma: ... wgmma'): the 64-bit shared memory matrix descriptor (start address,
// leading and stride dimension byte offsets, each >> 4; no swizzle), the async proxy fence that
// makes the tiles' copies visible to wgmma, commit.
#ifndef RTCG_HOST_EMULATION
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "wgmma schedules need sm_90a (rtcg compiles them for sm_90a where the target is sm_90)"
#endif
__device__ __forceinline__ unsigned long long rtcg_wgmma_desc(const void* p, unsigned int lbo, unsigned int sbo) {
  const unsigned long long at = (unsigned int)__cvta_generic_to_shared(p);
  return ((at & 0x3FFFF) >> 4) | (unsigned long long)(lbo >> 4) << 16 | (unsigned long long)(sbo >> 4) << 32;
}
__device__ __forceinline__ void rtcg_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
__device__ __forceinline__ void rtcg_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
#endif)wgmma";

// `swizzle 128`'s descriptor (a prelude of its own, so that modules without it stay as they were):
// layout type 1 (128-byte swizzle) in bits 62-63, base offset 0 (every atom starts at a multiple of
// 1024 bytes: the dynamic shared memory is aligned to 1024 for such a module).
const char* const wgmmaSwizzleHelpers = R"wgmma(// wgmma's 128-byte swizzled descriptors ('mma: ... swizzle 128').
#ifndef RTCG_HOST_EMULATION
__device__ __forceinline__ unsigned long long rtcg_wgmma_desc_sw128(const void* p, unsigned int lbo, unsigned int sbo) {
  return rtcg_wgmma_desc(p, lbo, sbo) | 1ull << 62;
}
#endif)wgmma";

// One shape's helpers: `NAME(desc_a, desc_b, d0, ...)` issues wgmma.mma_async (D += A B: scale-d
// set, no negation, imm-trans per operand's layout; TF32 has no transpose operands);
// `NAME_fence(d...)` and `NAME_wait0(d...)`, `NAME_wait1(d...)` are wgmma.fence and
// wgmma.wait_group 0 / 1 with the
// accumulators as operands, so that the compiler keeps every write and read of them on its side
// of the asynchronous operation.
std::string wgmmaShapeHelper(const MmaPlan& p) {
  const int64_t regs = p.fragN / 2;
  const std::string name = helperName(p);
  const bool tf32 = p.arith == MmaArith::Tf32;
  const int kind = tf32 ? 2 : p.arith == MmaArith::Bf16 ? 1 : 0;
  std::vector<std::string> params, refs, outs, slots;
  for (int64_t i = 0; i < regs; ++i) {
    params.push_back(fmt::format("float& d{}", i));
    refs.push_back(fmt::format("&d{}", i));
    outs.push_back(fmt::format("\"+f\"(d{})", i));
    slots.push_back(fmt::format("%{}", i));
  }
  const std::string accParams = fmt::format("{}", fmt::join(params, ", "));
  const std::string accOuts = fmt::format("{}", fmt::join(outs, ", "));
  std::string s = fmt::format("// wgmma.mma_async m64n{}k{} {} (A {}, B {}).\n#ifdef RTCG_HOST_EMULATION\n", p.fragN, p.fragK,
                              mmaArithName(p.arith), p.aMnMajor ? "MN-major" : "K-major",
                              p.bMnMajor ? "MN-major" : "K-major");
  s += fmt::format("inline void {}(unsigned long long desc_a, unsigned long long desc_b, {}) {{\n"
                   "  float* const d[] = {{{}}};\n  rtcg_emu_wgmma({}, {}, {}, {}, desc_a, desc_b, d);\n}}\n",
                   name, accParams, fmt::join(refs, ", "), kind, p.fragN, p.aMnMajor ? 1 : 0, p.bMnMajor ? 1 : 0);
  s += fmt::format("inline void {0}_fence({1}) {{}}\ninline void {0}_wait0({1}) {{ rtcg_emu_wgmma_wait(0); }}\n"
                   "inline void {0}_wait1({1}) {{ rtcg_emu_wgmma_wait(1); }}\n#else\n", name, accParams);
  const std::string type = tf32 ? "tf32" : mmaArithName(p.arith);
  s += fmt::format("__device__ __forceinline__ void {}(unsigned long long desc_a, unsigned long long desc_b, {}) {{\n"
                   "  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{}, 0;\\n\"\n"
                   "               \"wgmma.mma_async.sync.aligned.m64n{}k{}.f32.{}.{} {{{}}}, %{}, %{}, p, 1, 1{};\\n}}\\n\"\n"
                   "               : {}\n               : \"l\"(desc_a), \"l\"(desc_b), \"r\"(1));\n}}\n",
                   name, accParams, regs + 2, p.fragN, p.fragK, type, type, fmt::join(slots, ", "), regs, regs + 1,
                   tf32 ? "" : fmt::format(", {}, {}", p.aMnMajor ? 1 : 0, p.bMnMajor ? 1 : 0), accOuts);
  s += fmt::format("__device__ __forceinline__ void {}_fence({}) {{\n"
                   "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" : {} :: \"memory\");\n}}\n",
                   name, accParams, accOuts);
  for (int pending : {0, 1})
    s += fmt::format("__device__ __forceinline__ void {0}_wait{3}({1}) {{\n"
                     "  asm volatile(\"wgmma.wait_group.sync.aligned {3};\\n\" : {2} :: \"memory\");\n}}\n",
                     name, accParams, accOuts, pending);
  s += "#endif";
  return s;
}

}  // namespace rtcg::emit::mma
