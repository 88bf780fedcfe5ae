// wgmma's operands beside the descriptors (EmitWgmma.cpp): A from registers (MmaPlan::registerA:
// TF32 stored along M / N, whose shared-memory tiles wgmma takes K-major only) in one or two
// register sets (MmaPlan::pingPong), kept allocated until the wait that retires their wgmma; and
// tf32x3's split of each step's shared-memory tiles into big and small parts, and its partial
// sums per step (MmaPlan::splitBuffers). EmitWgmma.cpp's step loop calls these.
#include <fmt/format.h>

#include "codegen/CudaTypes.h"
#include "codegen/EmitMmaParts.h"

namespace rtcg::emit::mma {

// tf32x3 (MmaPlan::splitBuffers): the step's buffer of each tile wgmma reads from shared memory
// split in place into its big part and, in the small tile's buffer `small`, its small part, four
// values a thread at a time (the buffers are multiples of 16 bytes); then the async proxy fence
// (wgmma reads these generic writes) and a barrier.
void splitStep(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer, const C::ExprP& small,
               std::vector<C::Stmt>& body) {
  splitTiles(ctx, p, nm, buffer, small, nm.tid, ctx.plan.launch.threads, body);
  body.push_back(C::exprStmt(C::call("rtcg_fence_proxy_async", {})));
  body.push_back(C::syncThreads());
}

void splitTiles(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer,
                const C::ExprP& small, const C::ExprP& tid, int64_t threads, std::vector<C::Stmt>& body,
                const char* helper) {
  for (bool isA : {true, false}) {
    if (isA && p.registerA()) continue;
    const std::vector<Tile>& tiles = isA ? nm.tileA : nm.tileB;
    const int64_t size = p.tile(isA).buffer, quads = size / 4, rounds = (quads + threads - 1) / threads;
    std::string s = ctx.names.fresh(isA ? "split_a" : "split_b"), e = ctx.names.fresh("e");
    std::vector<C::Stmt> inner{C::exprStmt(C::call(
        helper, {C::unary("&", tileRef(tiles[0], C::sum({C::product(buffer, lit(size)), C::name(e)}))),
                             C::unary("&", tileRef(tiles[1], C::sum({C::product(small, lit(size)), C::name(e)})))}))};
    std::vector<C::Stmt> loop{C::decl(ctx.idx, e, C::product(C::sum({tid, C::product(C::name(s), lit(threads))}), lit(4)))};
    if (quads % threads == 0) append(loop, std::move(inner));
    else loop.push_back(C::ifThen(bin("<", C::name(e), lit(size)), std::move(inner)));
    body.push_back(C::forLoop(ctx.idx, s, lit(0), lit(rounds), C::Unroll::Full, std::move(loop)));
  }
}

RegisterSet declareRegisterSet(EmitContext& ctx, const MmaPlan& p, int set, std::vector<C::Stmt>& body) {
  RegisterSet rs;
  if (p.splitBuffers) declareWgmmaAccumulators(ctx, p, rs.partial, body, set ? "part_b" : "part");
  for (int64_t f = 0; p.registerA() && f < p.blockK / p.fragK; ++f) {
    rs.a.emplace_back(p.splitBuffers ? 2 : 1);
    for (size_t part = 0; part < rs.a.back().size(); ++part)
      for (int r = 0; r < 4; ++r) {
        rs.a.back()[part].push_back(ctx.names.fresh(fmt::format("a{}{}_{}{}", set ? "b" : "", f, r, part ? "_small" : "")));
        body.push_back(C::decl("unsigned int", rs.a.back()[part].back(), lit(0), false));
      }
  }
  return rs;
}

std::vector<C::ExprP> nameList(const std::vector<std::string>& v) {
  std::vector<C::ExprP> out;
  for (const std::string& n : v) out.push_back(C::name(n));
  return out;
}

// registerA: the warp's A fragments of the step from its buffer of the MN-major tile into the
// set's registers (the m16n8k8 pattern: (row, k) = (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)):
// TF32 the values (the tensor cores read their top 19 bits), tf32x3 big and small parts. The
// registers hold the bits (unsigned int), which the asm statement takes as they are: a float
// would pass through a converted copy, whose register the compiler may reuse while wgmma runs.
void loadRegisterA(EmitContext& ctx, const MmaPlan& p, const MmaNames& nm, const C::ExprP& buffer,
                   const RegisterSet& rs, std::vector<C::Stmt>& body) {
  static const std::pair<int64_t, int64_t> at[] = {{0, 0}, {8, 0}, {0, 4}, {8, 4}};
  for (size_t f = 0; f < rs.a.size(); ++f)
    for (size_t r = 0; r < 4; ++r) {
      auto [dr, dk] = at[r];
      C::ExprP row = C::sum({nm.wm, lit(dr), nm.g}), k = C::sum({lit(int64_t(f) * p.fragK + dk), nm.t});
      C::ExprP value = tileRef(nm.tileA[0], C::sum({C::product(buffer, lit(p.a.buffer)), wgmmaTileAt(p, true, row, k)}));
      if (!p.splitBuffers) {
        body.push_back(C::assign(C::name(rs.a[f][0][r]), "=", C::call("__float_as_uint", {std::move(value)})));
        continue;
      }
      std::string v = ctx.names.fresh("a_value"), big = ctx.names.fresh("a_big");
      body.push_back(C::decl("float", v, std::move(value)));
      body.push_back(C::decl("float", big, C::call("rtcg_tf32_rna", {C::name(v)})));
      body.push_back(C::assign(C::name(rs.a[f][0][r]), "=", C::call("__float_as_uint", {C::name(big)})));
      body.push_back(C::assign(C::name(rs.a[f][1][r]), "=", C::call("__float_as_uint", {C::call(
                                   "rtcg_tf32_rna", {bin("-", C::name(v), C::name(big))})})));
    }
}

// After the wait that retired a group: its A registers read into the sink (so they stay allocated
// until here: the compilers see them read by the instruction that issues wgmma, which returns
// before the tensor cores read them, and would otherwise reuse them; H200: wrong results), and
// tf32x3's partial sums added to the accumulators in FP32 (rounded to nearest).
void retire(const MmaPlan& p, const MmaNames& nm, const std::string& name, const RegisterSet& rs,
            const std::string& sink, std::vector<C::Stmt>& to) {
  for (const auto& fragment : rs.a)
    for (const auto& part : fragment) {
      std::vector<C::ExprP> args{C::name(sink)};
      for (const C::ExprP& a : nameList(part)) args.push_back(a);
      to.push_back(C::exprStmt(C::call(name + "_keep", std::move(args))));
    }
  if (!p.splitBuffers) return;
  for (size_t c = 0; c < nm.acc[0].size(); ++c)
    for (size_t r = 0; r < nm.acc[0][c].size(); ++r)
      to.push_back(C::assign(C::name(nm.acc[0][c][r]), "+=", C::name(rs.partial.acc[0][c][r])));
}

// tf32x3's split of a step's tile (MmaPlan::splitBuffers): four values at `x` become their big
// parts (TF32 rounded to nearest) in place and their small parts (the rest, rounded) at `small`.
const Prelude wgmmaSplitHelpers{3020, R"wgmma(// tf32x3 on wgmma: a tile's values split in place (big) and into the small tile.
__device__ __forceinline__ void rtcg_tf32_split4(float* x, float* small) {
  const float4 v = *reinterpret_cast<const float4*>(x);
  const float4 big = make_float4(rtcg_tf32_rna(v.x), rtcg_tf32_rna(v.y), rtcg_tf32_rna(v.z), rtcg_tf32_rna(v.w));
  *reinterpret_cast<float4*>(x) = big;
  *reinterpret_cast<float4*>(small) = make_float4(rtcg_tf32_rna(v.x - big.x), rtcg_tf32_rna(v.y - big.y),
                                                  rtcg_tf32_rna(v.z - big.z), rtcg_tf32_rna(v.w - big.w));
})wgmma"};

}  // namespace rtcg::emit::mma
