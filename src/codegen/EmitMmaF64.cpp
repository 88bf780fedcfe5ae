// FP64 fragments of `mma: f64` (schedule/Mma.h): m8n8k4 (sm_80), and sm_90's m16n8k4, m16n8k8 and
// m16n8k16, which feed Hopper's FP64 tensor rate (m8n8k4 runs there at a fraction of it). Their
// registers follow the TF32 m16n8k8 pattern with 64-bit elements (PTX ISA 7.8, mma.m16n8k*.f64):
// with g = lane / 4 and t = lane % 4, A register 2j + i holds (row g + 8i, column t + 4j), B register
// j holds (row t + 4j, column g), and the four accumulators (row g, columns 2t, 2t + 1) then (row
// g + 8, the same columns). EmitMma.cpp stages the tiles and loads these registers from them.
#include "codegen/EmitMmaParts.h"

namespace rtcg::emit {

namespace mma {

Offsets f64AOffsets(const MmaPlan& p) {
  if (p.fragM == 8) return {{0, 0}};  // m8n8k4: a0 (g, t)
  Offsets out;
  for (int64_t j = 0; j < p.fragK / 4; ++j) out.push_back({0, 4 * j}), out.push_back({8, 4 * j});
  return out;
}

Offsets f64BOffsets(const MmaPlan& p) {
  Offsets out;
  for (int64_t j = 0; j < p.fragK / 4; ++j) out.push_back({0, 4 * j});
  return out;
}

int f64AccElements(const MmaPlan& p) { return p.fragM == 8 ? 2 : 4; }

const char* f64MmaHelper(const MmaPlan& p) {
  switch (p.shape) {
    case MmaShape::M16N8K4: return "rtcg_mma_f64_m16n8k4";
    case MmaShape::M16N8K8: return "rtcg_mma_f64_m16n8k8";
    case MmaShape::M16N8K16: return "rtcg_mma_f64_m16n8k16";
    case MmaShape::Native: break;
  }
  return "rtcg_mma_f64";
}

}  // namespace mma

// One helper per sm_90 shape, included only where a nest uses one (so that every other module's
// text, and its cubin, stays as it was). Below sm_90 the module does not compile: the pipeline
// refuses such a schedule first (ScheduleLimits::computeCapability), this is the last guard.
const Prelude mmaF64Sm90Helpers{2010, R"mma(// FP64 tensor-core helpers of sm_90 ('mma: f64 m16n8k4 / m16n8k8 / m16n8k16'): d += a * b on one
// 16x8 FP64 fragment of this lane (four accumulators; A two, four or eight registers, B one, two or four).
#ifndef RTCG_HOST_EMULATION
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
__device__ __forceinline__ void rtcg_mma_f64_m16n8k4(double& d0, double& d1, double& d2, double& d3, double a0,
                                                     double a1, double b0) {
  asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5}, {%6}, {%0, %1, %2, %3};\n"
               : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3) : "d"(a0), "d"(a1), "d"(b0));
}
__device__ __forceinline__ void rtcg_mma_f64_m16n8k8(double& d0, double& d1, double& d2, double& d3, double a0,
                                                     double a1, double a2, double a3, double b0, double b1) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
               "{%0, %1, %2, %3};\n"
               : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3) : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(b0), "d"(b1));
}
__device__ __forceinline__ void rtcg_mma_f64_m16n8k16(double& d0, double& d1, double& d2, double& d3, double a0,
                                                      double a1, double a2, double a3, double a4, double a5,
                                                      double a6, double a7, double b0, double b1, double b2,
                                                      double b3) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0, %1, %2, %3}, {%4, %5, %6, %7, %8, %9, %10, "
               "%11}, {%12, %13, %14, %15}, {%0, %1, %2, %3};\n"
               : "+d"(d0), "+d"(d1), "+d"(d2), "+d"(d3)
               : "d"(a0), "d"(a1), "d"(a2), "d"(a3), "d"(a4), "d"(a5), "d"(a6), "d"(a7), "d"(b0), "d"(b1),
                 "d"(b2), "d"(b3));
}
#else
#error "mma f64 m16n8k4 / m16n8k8 / m16n8k16 need sm_90 or later (m8n8k4 runs on sm_80)"
#endif
#endif)mma"};

}  // namespace rtcg::emit
