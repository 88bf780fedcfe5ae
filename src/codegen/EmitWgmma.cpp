// Hopper's warpgroup MMA (`mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4`, MmaPlan::wgmma):
// each warpgroup (4 consecutive warps) owns a 64 x N output tile and issues wgmma.mma_async on it
// with both operands read from shared memory through matrix descriptors. The block copies each
// reduction step's tiles by cp.async (16 bytes where aligned, zero-filled outside the domain) into
// a ring of `stages` buffers in the canonical layouts of schedule/Mma.h; per step every thread
// waits for its copies, fences them for the async proxy (wgmma reads shared memory through it),
// a barrier, the copy of the step MmaPlan::ring.ahead() ahead, then the warpgroup's wgmma over the
// step's k, committed; with 3 or more stages it stays in flight through the next step's copies and
// issue (wait_group 1, so the buffer refilled at a step is the one read two steps before, whose
// wgmma every warpgroup waited for before that step's barrier), else it is waited for at once.
// With `swizzle 128` (MmaPlan::tiles: Swizzle128) the same copies land in the 128-byte swizzled layouts
// and the descriptors say so; with `tma` as well (MmaPlan::ring: TMA) thread 0 fills each stage by TMA
// boxes on the stage's mbarrier instead (EmitTma.cpp, openRing), the rest of the step as here.
// TF32 stored along M / N comes from registers instead of a descriptor (MmaPlan::registerA), with
// the product transposed where that operand is B, and tf32x3 splits its tiles and sums per step
// (EmitWgmmaRegisters.cpp); with two register sets (MmaPlan::pingPong) the loop runs two steps an
// iteration (ring.stepAt). The accumulators stay in registers in the m16n8 fragment layout per
// warp, so the mma.sync epilogues (EmitMma.cpp) store them.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"
#include "support/Error.h"

namespace rtcg::emit::mma {

namespace {

// Elements of the staged type in 16 bytes (a core matrix row).
int64_t coreRow(const MmaPlan& p) { return 16 / typeBytes(p.staged); }

bool mnMajor(const MmaPlan& p, bool isA) { return p.tile(isA).mnMajor; }

// wgmma's accumulators: s32 for s8, else f32.
ScalarType accumulatorType(const MmaPlan& p) { return p.arith == MmaArith::S8 ? ScalarType::I32 : ScalarType::F32; }

// The helper's name: arithmetic, shape and each operand's layout (k: K-major, m: MN-major, r: A
// from registers). tf32x3's issue TF32 instructions, and have a `_zero` form (scale-d 0).
std::string helperName(const MmaPlan& p) {
  return fmt::format("rtcg_wgmma_{}_m64n{}k{}_{}{}", mmaArithName(p.arith), p.fragN, p.fragK,
                     p.registerA() ? 'r' : p.a.mnMajor ? 'm' : 'k', p.b.mnMajor ? 'm' : 'k');
}

// Elements of the staged type in 128 bytes (a swizzle atom's row).
int64_t atomRow(const MmaPlan& p) { return 128 / typeBytes(p.staged); }

// A descriptor's offset (in 16-byte units, what its start address field counts) of the core
// matrix holding row `rows` (a multiple of 8 and of a core row) of k 0: SBO per row group. Swizzled
// MN-major: LBO per atom of W rows (a warpgroup's rows start at an atom, planSwizzle128).
C::ExprP rowsOffset(const MmaPlan& p, bool isA, const C::ExprP& rows) {
  const int64_t sbo = p.tile(isA).sbo;
  if (p.tiles == TileForm::Swizzle128 && mnMajor(p, isA))
    return C::product(bin("/", rows, lit(atomRow(p))), lit(p.tile(isA).lbo / 16));
  return C::product(bin("/", rows, lit(mnMajor(p, isA) ? coreRow(p) : 8)), lit(sbo / 16));
}

// The same for k = kk (a multiple of the instruction's k): LBO per core along k. Swizzled: K-major
// moves by the column of atoms (rows x 128 bytes) and within its row (kk's bytes: the hardware
// XORs the address it forms), MN-major by SBO per 8 k.
int64_t kOffset(const MmaPlan& p, bool isA, int64_t kk) {
  const int64_t lbo = p.tile(isA).lbo, rows = isA ? p.blockM : p.blockN, w = atomRow(p);
  if (p.tiles == TileForm::Swizzle128)
    return mnMajor(p, isA) ? kk / 8 * (p.tile(isA).sbo / 16)
                           : (kk / w * rows * 128 + kk % w * typeBytes(p.staged)) / 16;
  return kk / (mnMajor(p, isA) ? 8 : coreRow(p)) * (lbo / 16);
}

// A call of a per-shape helper with every accumulator (by reference) after `lead`.
C::Stmt withAccumulators(const MmaNames& nm, const std::string& name, std::vector<C::ExprP> lead) {
  for (const auto& chunk : nm.acc[0])
    for (const std::string& a : chunk) lead.push_back(C::name(a));
  return C::exprStmt(C::call(name, std::move(lead)));
}

// The descriptors of the step's tiles: per operand [0] the (big) value, [1] tf32x3's small part.
struct StepDescriptors {
  std::vector<C::ExprP> a, b;
};

// The reduction: the ring (openRing: cp.async copies ring.ahead() steps ahead, fenced for the
// async proxy; or TMA's, or the producer's), then per step tf32x3's split, A's registers (registerA), the
// wgmma of each k of the step, committed and waited for down to 1 group in flight (overlap) or 0.
// What the wgmma in flight reads stays allocated until the wait that retires it: with pingPong the
// step's parity picks a register set, and after its wait_group 1 the other set (the previous
// step's) is kept, and (tf32x3) its partial sums added; without, the step waits for its own.
void emitWgmmaSteps(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, const StepDescriptors& desc,
                    const std::function<void(std::vector<C::Stmt>& out)>& finishTile, std::vector<C::Stmt>& out) {
  auto copyStep = [&](const C::ExprP& stepIndex, const C::ExprP& buffer, std::vector<C::Stmt>& to) {
    C::ExprP k0 = C::product(stepIndex, lit(p.blockK));
    stageOperandAsLoaded(ctx, p, nm, true, k0, C::product(buffer, lit(p.a.buffer)), to);
    stageOperandAsLoaded(ctx, p, nm, false, k0, C::product(buffer, lit(p.b.buffer)), to);
  };
  std::vector<RegisterSet> sets;
  for (int set = 0; set < (p.pingPong() ? 2 : 1) && (p.registerA() || p.splitBuffers); ++set)
    sets.push_back(declareRegisterSet(ctx, p, set, out));
  std::string sink;
  if (p.registerA()) {
    sink = ctx.names.fresh("a_sink");
    out.push_back(C::decl("unsigned int", sink, lit(0), false));
  }
  std::vector<C::Stmt> body;
  // pingPong opens each step of a pair itself (ring.stepAt), persistent each step at its ring step.
  std::vector<C::Stmt>* first = p.pingPong() || p.persistent() ? nullptr : &body;
  const RingCopy copy = p.ring.tma() ? tmaCopy(p, nm) : RingCopy{copyStep, nullptr};
  const RingHandOver handOver = p.ring.producer() ? producerHandOver(ctx, p, nm)
                                : p.ring.tma()     ? tmaHandOver(p, nm)
                                                   : RingHandOver{};
  const StepRing ring = openRing(ctx, p.ring, p.steps, copy, handOver, out, first);
  const std::string name = helperName(p);
  const int64_t bytes = typeBytes(p.staged);
  // tf32x3: the small products first (small A by big B, big A by small B), then the big one.
  const std::vector<std::pair<int, int>> products =
      p.splitBuffers ? std::vector<std::pair<int, int>>{{1, 0}, {0, 1}, {0, 0}} : std::vector<std::pair<int, int>>{{0, 0}};
  const int64_t frags = p.blockK / p.fragK;
  const char* wait = p.wgmmaInFlight() ? "_wait1" : "_wait0";
  // Step `at` of the ring (its buffer `buf`; `local`: its step in the tile, which persistent's
  // ring step is not) on register set `rs` (or none): tf32x3's split, A's registers, the fence,
  // the wgmma of every fragment-k (tf32x3: into the set's partial sums, the first with scale-d
  // 0), commit, wait, then the retired group's set retired.
  auto step = [&](const C::ExprP& at, const C::ExprP& local, const std::string& buf, const RegisterSet* rs,
                  const RegisterSet* retired, std::vector<C::Stmt>& to, int64_t stepFrags) {
    std::string small;
    if (p.splitBuffers) {
      small = ctx.names.fresh("small");
      to.push_back(C::decl(ctx.idx, small, bin("%", at, lit(p.splitBuffers))));
      if (!p.ring.producer()) splitStep(ctx, p, nm, C::name(buf), C::name(small), to);
    }
    // Operand `isA`'s descriptor of part `part` at kk (parts: the ring's buffer, the small tile's;
    // `resident` B: its buffer of the tile's step, either part).
    auto descAt = [&](bool isA, int part, int64_t kk) {
      const int64_t size = p.tile(isA).buffer * bytes / 16;
      C::ExprP b = !isA && p.residentB ? local : C::name(part ? small : buf);
      return C::sum({(isA ? desc.a : desc.b)[size_t(part)], C::product(b, lit(size)), lit(kOffset(p, isA, kk))});
    };
    if (p.registerA()) loadRegisterA(ctx, p, nm, C::name(buf), *rs, to);
    const MmaNames& acc = p.splitBuffers ? rs->partial : nm;
    waitTurn(p, nm, at, to);
    to.push_back(withAccumulators(acc, name + "_fence", {}));
    for (int64_t f = 0; f < stepFrags; ++f)
      for (auto [pa, pb] : products) {
        std::vector<C::ExprP> lead = p.registerA() ? nameList(rs->a[size_t(f)][size_t(pa)])
                                                 : std::vector<C::ExprP>{descAt(true, pa, f * p.fragK)};
        lead.push_back(descAt(false, pb, f * p.fragK));
        const bool zero = p.splitBuffers && f == 0 && pa == products[0].first && pb == products[0].second;
        to.push_back(withAccumulators(acc, name + (zero ? "_zero" : ""), std::move(lead)));
      }
    to.push_back(C::exprStmt(C::call("rtcg_wgmma_commit", {})));
    passTurn(p, nm, to);
    // The wait names what the retired group wrote: the accumulators, or its partial sums.
    to.push_back(withAccumulators(p.splitBuffers ? retired->partial : nm, name + wait, {}));
    if (retired) retire(p, nm, name, *retired, sink, to);
    // The producer's stage is free once its wgmma is waited for: this step's, or the one before.
    if (p.ring.producer() && !p.wgmmaInFlight()) releaseStage(p, nm, at, to);
    if (p.ring.producer() && p.wgmmaInFlight()) {
      std::vector<C::Stmt> release;
      releaseStage(p, nm, bin("-", at, lit(1)), release);
      to.push_back(C::ifThen(bin(">", local, lit(0)), std::move(release)));
    }
  };
  // persistent: the ring step of the tile's step `local` in round `round` (round * steps + local).
  C::ExprP round;
  auto ringStep = [&](const C::ExprP& local, std::vector<C::Stmt>& to) {
    if (!p.persistent()) return local;
    const std::string n = ctx.names.fresh("ring_step");
    to.push_back(C::decl(ctx.idx, n, C::sum({C::product(round, lit(p.steps)), local})));
    return C::name(n);
  };
  // The steps of a tile (of the block's one, or persistent's round `round`) into `to`.
  auto tileSteps = [&](std::vector<C::Stmt>& to) {
    if (!p.pingPong()) {
      // The last step apart where it issues fewer fragment-ks (MmaPlan::lastStepFragments; persistent).
      const bool lastApart = p.lastStepFragments < frags;
      RTCG_ASSERT(!lastApart || p.persistent(), "the last step apart: a persistent ring's (planMma)");
      const RegisterSet* rs = sets.empty() ? nullptr : &sets[0];
      const C::ExprP at = ringStep(C::name(ring.step), body);
      step(at, C::name(ring.step), p.persistent() ? ring.stepAt(at, body) : ring.buffer, rs, rs, body, frags);
      waitTileTurn(p, nm, to);
      const int64_t looped = p.steps - (lastApart ? 1 : 0);
      if (looped > 0)
        to.push_back(C::forLoop(ctx.idx, ring.step, lit(0), lit(looped), C::Unroll::Never, std::move(body)));
      if (lastApart) {
        std::vector<C::Stmt> last;
        const C::ExprP atLast = ringStep(lit(p.steps - 1), last);
        step(atLast, lit(p.steps - 1), ring.stepAt(atLast, last), rs, rs, last, p.lastStepFragments);
        to.push_back(C::block(std::move(last)));
      }
    } else {
      // Two steps an iteration, in straight-line code: the sets are distinct registers of the
      // compilers' own (a branch on the parity let them merge the two sets' loads into one).
      std::string pair = ctx.names.fresh("pair"), odd = ctx.names.fresh("step_odd");
      body.push_back(C::decl(ctx.idx, ring.step, C::product(C::name(pair), lit(2))));
      const C::ExprP at = ringStep(C::name(ring.step), body);
      step(at, C::name(ring.step), ring.stepAt(at, body), &sets[0], &sets[1], body, frags);
      body.push_back(C::decl(ctx.idx, odd, C::sum({C::name(ring.step), lit(1)})));
      std::vector<C::Stmt> second;
      const C::ExprP atOdd = ringStep(C::name(odd), second);
      step(atOdd, C::name(odd), ring.stepAt(atOdd, second), &sets[1], &sets[0], second, frags);
      if (p.steps % 2 == 0) append(body, std::move(second));
      else body.push_back(C::ifThen(bin("<", C::name(odd), lit(p.steps)), std::move(second)));
      waitTileTurn(p, nm, to);
      to.push_back(C::forLoop(ctx.idx, pair, lit(0), lit((p.steps + 1) / 2), C::Unroll::Never, std::move(body)));
    }
    // pingpong: every step of the tile issued, the next tile's consumer may start its steps.
    passTileTurn(p, nm, to);
    if (p.wgmmaInFlight()) {
      // The last step's group: waited for, then retired as the steps retire theirs.
      const RegisterSet* last = sets.empty() ? nullptr : &sets[size_t((p.steps - 1) % int64_t(sets.size()))];
      to.push_back(withAccumulators(p.splitBuffers ? last->partial : nm, name + "_wait0", {}));
      if (last) retire(p, nm, name, *last, sink, to);
      // persistent: the tile's last stage is free now, before the epilogue, for the next tile's steps.
      if (p.persistent()) releaseStage(p, nm, C::sum({C::product(round, lit(p.steps)), lit(p.steps - 1)}), to);
    }
    // The sink's use, which changes no value (a NaN's payload at most), keeps its reads.
    if (p.registerA())
      to.push_back(C::assign(C::name(nm.acc[0][0][0]), "=",
                             C::call(name + "_sink", {C::name(nm.acc[0][0][0]), C::name(sink)})));
  };
  if (!p.persistent()) return tileSteps(out);
  waitResident(p, nm, out);
  // persistent: per tile of the block (pingpong: of the consumer's own) its accumulators (zero),
  // its steps, its epilogue.
  out.push_back(tileLoop(
      ctx, p, nm,
      [&](const C::ExprP& r, std::vector<C::Stmt>& to) {
        round = r;
        declareWgmmaAccumulators(ctx, p, nm, to, "acc");
        tileSteps(to);
        finishTile(to);
      },
      true));
}

}  // namespace

// The accumulators of a warpgroup's 64 x N tile: N / 2 per thread, chunk c (8 columns) holding
// elements 4c..4c + 3 (rows g, g, g + 8, g + 8 of the warp's 16; columns 2t, 2t + 1); f32, or s32
// for s8.
void declareWgmmaAccumulators(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body,
                               const char* base) {
  const ScalarType t = accumulatorType(p);
  nm.acc.assign(1, std::vector<std::vector<std::string>>(size_t(p.fragN / 8)));
  for (size_t c = 0; c < nm.acc[0].size(); ++c)
    for (int r = 0; r < 4; ++r) {
      nm.acc[0][c].push_back(ctx.names.fresh(fmt::format("{}{}_{}", base, c, r)));
      body.push_back(C::decl(cudaTypeName(t), nm.acc[0][c].back(), literalOf(t, 0, 0.0), false));
    }
}

// The 128-byte swizzled layouts (MmaPlan::tiles: Swizzle128): the unswizzled element offset, whose
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
  if (p.tiles == TileForm::Swizzle128) return swizzledTileAt(p, isA, row, k);
  const int64_t e = coreRow(p), rows = isA ? p.blockM : p.blockN;
  // K-major: core (row / 8, k / e), 8 * e elements each, a row group's cores adjacent along k.
  if (!mnMajor(p, isA))
    return C::sum({C::product(bin("/", row, lit(8)), lit(p.blockK * 8)), C::product(bin("/", k, lit(e)), lit(8 * e)),
                   C::product(bin("%", row, lit(8)), lit(e)), bin("%", k, lit(e))});
  // MN-major: core (row / e, k / 8), the cores of 8 k adjacent along M / N.
  return C::sum({C::product(bin("/", k, lit(8)), lit(rows * 8)), C::product(bin("/", row, lit(e)), lit(8 * e)),
                 C::product(bin("%", k, lit(8)), lit(e)), bin("%", row, lit(e))});
}

void emitWgmmaMain(EmitContext& ctx, const MmaPlan& p, MmaNames& nm, std::vector<C::Stmt>& body,
                   const std::function<void(std::vector<C::Stmt>& out)>& finishTile) {
  body.push_back(C::comment(fmt::format(
      "wgmma m64n{}k{}: operands {} x {} (M, {}{}) and {} x {} (N, {}) values per step in {}, {} buffers "
      "filled by {}{}{}",
      p.fragN, p.fragK, p.blockM, p.blockK, p.a.mnMajor ? "MN-major" : "K-major", p.registerA() ? ", A from registers" : "",
      p.blockN, p.blockK, p.b.mnMajor ? "MN-major" : "K-major", p.tiles == TileForm::Swizzle128 ? "128-byte swizzled atoms" : "core matrices",
      p.ring.stages, p.ring.tma() ? "TMA (thread 0), an mbarrier each" : "cp.async",
      p.transposed ? "; the product transposed (M is the output's column index)" : "",
      p.splitBuffers ? fmt::format("; tf32x3: split per step, small parts in {} buffers", p.splitBuffers) : "")));
  declareMmaTiles(ctx, p, nm, body);
  RTCG_ASSERT(!p.persistent() || (p.ring.producer() && !p.sharedEpilogue()),
              "persistent wgmma loops over tiles on a producer's ring, with the fragments' epilogue");
  if (!p.persistent()) declareWgmmaAccumulators(ctx, p, nm, body, "acc");  // persistent: per tile
  // Each warpgroup's descriptors at buffer 0, k 0: the tile's start plus its rows' offset.
  auto descriptor = [&](bool isA, int part) {
    const Tile& tile = (isA ? nm.tileA : nm.tileB)[size_t(part)];
    std::string n = ctx.names.fresh(std::string(isA ? "desc_a" : "desc_b") + (part ? "_small" : ""));
    C::ExprP base = C::call(p.tiles == TileForm::Swizzle128 ? "rtcg_wgmma_desc_sw128" : "rtcg_wgmma_desc", {C::unary("&", tileRef(tile, lit(0))), lit(p.tile(isA).lbo),
                                                lit(p.tile(isA).sbo)});
    body.push_back(C::decl("unsigned long long", n, C::sum({base, rowsOffset(p, isA, isA ? nm.wgm : nm.wgn)})));
    return C::name(n);
  };
  StepDescriptors desc;
  for (int part = 0; part < (p.splitBuffers ? 2 : 1); ++part) {
    if (!p.registerA()) desc.a.push_back(descriptor(true, part));
    desc.b.push_back(descriptor(false, part));
  }
  emitWgmmaSteps(ctx, p, nm, desc, finishTile, body);
}

// Descriptors and fences (PTX ISA: wgmma, the shared memory matrix descriptor; fence.proxy.async).
// The first line marks the module for sm_90a (codegen/Nvrtc.h: NVRTC compiles such a module for
// sm_90a where the target is sm_90). The host emulation defines the same functions.
const Prelude wgmmaCommonHelpers{3000, R"wgmma(// rtcg-arch: sm_90a (wgmma)
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
#endif)wgmma"};

// `swizzle 128`'s descriptor (a prelude of its own, so that modules without it stay as they were):
// layout type 1 (128-byte swizzle) in bits 62-63, base offset 0 (every atom starts at a multiple of
// 1024 bytes: the dynamic shared memory is aligned to 1024 for such a module).
const Prelude wgmmaSwizzleHelpers{3010, R"wgmma(// wgmma's 128-byte swizzled descriptors ('mma: ... swizzle 128').
#ifndef RTCG_HOST_EMULATION
__device__ __forceinline__ unsigned long long rtcg_wgmma_desc_sw128(const void* p, unsigned int lbo, unsigned int sbo) {
  return rtcg_wgmma_desc(p, lbo, sbo) | 1ull << 62;
}
#endif)wgmma"};

// One shape's helpers: `NAME(desc_a, desc_b, d0, ...)` issues wgmma.mma_async (D += A B: scale-d
// set, no negation, imm-trans per operand's layout; TF32 has no transpose operands), with A from
// registers (MmaPlan::registerA) `NAME(a0, a1, a2, a3, desc_b, d0, ...)`;
// `NAME_fence(d...)` and `NAME_wait0(d...)`, `NAME_wait1(d...)` are wgmma.fence and
// wgmma.wait_group 0 / 1 with the
// accumulators as operands, so that the compiler keeps every write and read of them on its side
// of the asynchronous operation.
std::string wgmmaShapeHelper(const MmaPlan& p) {
  const int64_t regs = p.fragN / 2;
  const std::string name = helperName(p);
  const bool s8 = p.arith == MmaArith::S8;
  const bool tf32 = p.arith == MmaArith::Tf32 || p.arith == MmaArith::Tf32x3;
  const int kind = tf32 ? 2 : s8 ? 3 : p.arith == MmaArith::Bf16 ? 1 : 0;
  const char* acc = s8 ? "int" : "float";
  std::vector<std::string> params, refs, outs, slots;
  for (int64_t i = 0; i < regs; ++i) {
    params.push_back(fmt::format("{}& d{}", acc, i));
    refs.push_back(fmt::format("&d{}", i));
    outs.push_back(fmt::format("\"+{}\"(d{})", s8 ? 'r' : 'f', i));
    slots.push_back(fmt::format("%{}", i));
  }
  const std::string accParams = fmt::format("{}", fmt::join(params, ", "));
  const std::string accOuts = fmt::format("{}", fmt::join(outs, ", "));
  // The A operand: a descriptor, or (registerA, TF32 only) four registers.
  const std::string aParams =
      p.registerA() ? "unsigned int a0, unsigned int a1, unsigned int a2, unsigned int a3" : "unsigned long long desc_a";
  const std::string typeName = tf32 ? "tf32" : mmaArithName(p.arith);
  std::string s = fmt::format("// wgmma.mma_async m64n{}k{} {} (A {}, B {}).\n#ifdef RTCG_HOST_EMULATION\n", p.fragN, p.fragK,
                              typeName, p.registerA() ? "from registers" : p.a.mnMajor ? "MN-major" : "K-major",
                              p.b.mnMajor ? "MN-major" : "K-major");
  // tf32x3 also NAME_zero: scale-d 0 (D = A B, the partial sums' first).
  for (int scaleD : p.splitBuffers ? std::vector<int>{1, 0} : std::vector<int>{1}) {
    const std::string fn = name + (scaleD ? "" : "_zero"), zeroArg = scaleD ? "" : ", 0";
    if (p.registerA())
      s += fmt::format("inline void {}({}, unsigned long long desc_b, {}) {{\n"
                       "  float* const d[] = {{{}}};\n"
                       "  const float a[] = {{__uint_as_float(a0), __uint_as_float(a1), __uint_as_float(a2), __uint_as_float(a3)}};\n"
                       "  rtcg_emu_wgmma_rs({}, a, desc_b, d{});\n}}\n",
                       fn, aParams, accParams, fmt::join(refs, ", "), p.fragN, zeroArg);
    else if (s8)
      s += fmt::format("inline void {}({}, unsigned long long desc_b, {}) {{\n"
                       "  int* const d[] = {{{}}};\n  rtcg_emu_wgmma_s8({}, desc_a, desc_b, d{});\n}}\n",
                       fn, aParams, accParams, fmt::join(refs, ", "), p.fragN, zeroArg);
    else
      s += fmt::format("inline void {}({}, unsigned long long desc_b, {}) {{\n"
                       "  float* const d[] = {{{}}};\n  rtcg_emu_wgmma({}, {}, {}, {}, desc_a, desc_b, d{});\n}}\n",
                       fn, aParams, accParams, fmt::join(refs, ", "), kind, p.fragN, p.a.mnMajor ? 1 : 0,
                       p.b.mnMajor ? 1 : 0, zeroArg);
  }
  s += fmt::format("inline void {0}_fence({1}) {{}}\ninline void {0}_wait0({1}) {{ rtcg_emu_wgmma_wait(0); }}\n"
                   "inline void {0}_wait1({1}) {{ rtcg_emu_wgmma_wait(1); }}\n", name, accParams);
  if (p.registerA())
    s += fmt::format("inline void {0}_keep(unsigned int& sink, unsigned int a0, unsigned int a1, unsigned int a2, "
                     "unsigned int a3) {{ sink ^= a0 ^ a1 ^ a2 ^ a3; }}\n"
                     "inline float {0}_sink(float x, unsigned int sink) {{\n"
                     "  return x != x ? __uint_as_float(__float_as_uint(x) | (sink & 1u)) : x;\n}}\n", name);
  s += "#else\n";
  // Operands after the accumulators: A (a descriptor or four registers), B's descriptor, scale-d.
  const int64_t aCount = p.registerA() ? 4 : 1;
  std::vector<std::string> aSlots;
  for (int64_t i = 0; i < aCount; ++i) aSlots.push_back(fmt::format("%{}", regs + i));
  const std::string aSlot = p.registerA() ? fmt::format("{{{}}}", fmt::join(aSlots, ", ")) : aSlots[0];
  const std::string aInputs = p.registerA() ? "\"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3)" : "\"l\"(desc_a)";
  // The operands after scale-d: imm-scale-a and -b (floating point only), then imm-trans-a and -b
  // (16-bit only; A's only from shared memory).
  const std::string immediates = s8     ? ""
                                 : tf32 ? ", 1, 1"
                                 : p.registerA() ? fmt::format(", 1, 1, {}", p.b.mnMajor ? 1 : 0)
                                               : fmt::format(", 1, 1, {}, {}", p.a.mnMajor ? 1 : 0, p.b.mnMajor ? 1 : 0);
  const std::string types = s8 ? "s32.s8.s8" : fmt::format("f32.{0}.{0}", typeName);
  for (int scaleD : p.splitBuffers ? std::vector<int>{1, 0} : std::vector<int>{1})
    s += fmt::format("__device__ __forceinline__ void {}({}, unsigned long long desc_b, {}) {{\n"
                     "  asm volatile(\"{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{}, 0;\\n\"\n"
                     "               \"wgmma.mma_async.sync.aligned.m64n{}k{}.{} {{{}}}, {}, %{}, p{};\\n}}\\n\"\n"
                     "               : {}\n               : {}, \"l\"(desc_b), \"r\"({}));\n}}\n",
                     name + (scaleD ? "" : "_zero"), aParams, accParams, regs + aCount + 1, p.fragN, p.fragK, types,
                     fmt::join(slots, ", "), aSlot, regs + aCount, immediates, accOuts, aInputs, scaleD);
  s += fmt::format("__device__ __forceinline__ void {}_fence({}) {{\n"
                   "  asm volatile(\"wgmma.fence.sync.aligned;\\n\" : {} :: \"memory\");\n}}\n",
                   name, accParams, accOuts);
  for (int pending : {0, 1})
    s += fmt::format("__device__ __forceinline__ void {0}_wait{3}({1}) {{\n"
                     "  asm volatile(\"wgmma.wait_group.sync.aligned {3};\\n\" : {2} :: \"memory\");\n}}\n",
                     name, accParams, accOuts, pending);
  // registerA: NAME_keep(sink, a0, ...) after the wait reads A's registers (an xor into the sink,
  // in order after the wait: both are volatile), NAME_sink(x, sink) uses the sink without changing
  // x (a NaN's payload at most).
  if (p.registerA())
    s += fmt::format("__device__ __forceinline__ void {0}_keep(unsigned int& sink, unsigned int a0, unsigned int a1, "
                     "unsigned int a2, unsigned int a3) {{\n"
                     "  asm volatile(\"xor.b32 %0, %0, %1;\\nxor.b32 %0, %0, %2;\\nxor.b32 %0, %0, %3;\\nxor.b32 %0, %0, %4;\\n\"\n"
                     "               : \"+r\"(sink) : \"r\"(a0), \"r\"(a1), \"r\"(a2), \"r\"(a3) : \"memory\");\n}}\n"
                     "__device__ __forceinline__ float {0}_sink(float x, unsigned int sink) {{\n"
                     "  return x != x ? __uint_as_float(__float_as_uint(x) | (sink & 1u)) : x;\n}}\n",
                     name);
  s += "#endif";
  return s;
}


}  // namespace rtcg::emit::mma
