#include "bench/suite/Workloads.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "reference/RandomFill.h"
#include "support/Error.h"

namespace rtcg::bench {

namespace {

// The kernels, as users write them (the same as examples/*.rtcg).
constexpr const char* kMatmul = R"(// Dense matrix product, row-major: c = a * b.
kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

constexpr const char* kGemv = R"(// Matrix-vector product y = A x, A row-major m x n.
kernel gemv(m: int, n: int, a: f32[m, n], x: f32[n], out y: f32[m]) {
  for i in 0..m {
    y[i] = sum(j in 0..n, a[i, j] * x[j]);
  }
}
)";

constexpr const char* kTranspose = R"(// Out-of-place transpose of an m x n matrix.
kernel transpose(m: int, n: int, a: f32[m, n], out b: f32[n, m]) {
  for i in 0..n, j in 0..m {
    b[i, j] = a[j, i];
  }
}
)";

constexpr const char* kDot = R"(// Dot product: one output element, one reduction over the whole vectors.
kernel dot(n: int, x: f32[n], y: f32[n], out r: f32[1]) {
  r[0] = sum(i in 0..n, x[i] * y[i]);
}
)";

constexpr const char* kBatched = R"(// A batch of small independent matrix products: c[b] = a[b] * x[b].
kernel batched_matmul(nb: int, n: int, a: f32[nb, n, n], x: f32[nb, n, n], out c: f32[nb, n, n]) {
  for b in 0..nb, i in 0..n, j in 0..n {
    c[b, i, j] = sum(k in 0..n, a[b, i, k] * x[b, k, j]);
  }
}
)";

constexpr const char* kDgDiff = R"(// DG element-local differentiation: three derivative matrices applied to K elements.
kernel dg_diff(K: int, Np: int,
               Dr: f32[Np, Np], Ds: f32[Np, Np], Dt: f32[Np, Np], u: f32[K, Np],
               out ur: f32[K, Np], out us: f32[K, Np], out ut: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    ur[k, i] = sum(j in 0..Np, Dr[i, j] * u[k, j]);
    us[k, i] = sum(j in 0..Np, Ds[i, j] * u[k, j]);
    ut[k, i] = sum(j in 0..Np, Dt[i, j] * u[k, j]);
  }
}
)";

// The same product in the layout of the cuBLAS peer: the matrices stacked as D = [Dr; Ds; Dt] and
// each element's three derivatives side by side in one row of w. One statement over 3 Np outputs,
// so register tiles and blocks are cut from 3 Np values rather than from Np (165 nodes at N=8 fill
// 6 blocks of 32 to 86%, 495 outputs fill 4 blocks of 128 to 97%).
constexpr const char* kDgDiffStacked = R"(// DG differentiation, the three matrices stacked: D = [Dr; Ds; Dt].
kernel dg_diff_stacked(K: int, Np: int, D: f32[3 * Np, Np], u: f32[K, Np], out w: f32[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
)";

// DG differentiation in f64 (the stacked form, cuBLAS's layout).
constexpr const char* kDgDiffStacked64 = R"(// DG differentiation in f64, the three matrices stacked.
kernel dg_diff_stacked64(K: int, Np: int, D: f64[3 * Np, Np], u: f64[K, Np], out w: f64[K, 3 * Np]) {
  for k in 0..K, m in 0..3 * Np {
    w[k, m] = sum(j in 0..Np, D[m, j] * u[k, j]);
  }
}
)";

// Sum factorisation's core: a 1-D operator applied along the last axis of each element's p^3 nodes.
constexpr const char* kSumFact = R"(// A p x p operator along the last axis of E elements' p x p x p nodes.
kernel sumfact(E: int, p: int, A: f32[p, p], u: f32[E, p, p, p], out v: f32[E, p, p, p]) {
  for e in 0..E, a in 0..p, b in 0..p, i in 0..p {
    v[e, a, b, i] = sum(j in 0..p, A[i, j] * u[e, a, b, j]);
  }
}
)";

constexpr const char* kSpmv = R"(// Sparse matrix-vector product y = A x, A in CSR form.
kernel spmv(n: int, nnz: int, rowptr: i32[n + 1], col: i32[nnz], val: f32[nnz], x: f32[n], out y: f32[n]) {
  for i in 0..n {
    y[i] = sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]]);
  }
}
)";

constexpr uint64_t kPowerLawSeed = 23;

constexpr const char* kGemmBf16 = R"(// Mixed-precision matrix product: bf16 inputs, converted exactly and accumulated in f32.
kernel gemm_bf16(n: int, a: bf16[n, n], b: bf16[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, f32(a[i, k]) * f32(b[k, j]));
  }
}
)";

// Issue 23's shapes beyond rectangles, written as a user would from the math.
constexpr const char* kTrmv = R"(// Triangular matrix-vector product y = L x, L the lower triangle of a (diagonal included).
kernel trmv(n: int, a: f32[n, n], x: f32[n], out y: f32[n]) {
  for i in 0..n {
    y[i] = sum(j in 0..i + 1, a[i, j] * x[j]);
  }
}
)";

constexpr const char* kTrmm = R"(// Triangular matrix-matrix product c = L b, L the lower triangle of a (diagonal included).
kernel trmm(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..i + 1, a[i, k] * b[k, j]);
  }
}
)";

constexpr const char* kSyrk = R"(// Symmetric rank-K update: the lower triangle of c = a a^T; the upper one keeps the caller's
// values (inout: as out, no point would write it, an error when the sizes are bound).
kernel syrk(n: int, K: int, a: f32[n, K], inout c: f32[n, n]) {
  for i in 0..n, j in 0..i + 1 {
    c[i, j] = sum(k in 0..K, a[i, k] * a[j, k]);
  }
}
)";

constexpr const char* kSoftmax = R"(// Row-wise softmax, as a user writes it: the row maximum and the sum of the shifted exponentials
// are kernel-local (no caller sees them, as torch.softmax outputs only y).
kernel softmax(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {
  local rowmax: f32[m];
  local rowsum: f32[m];
  for i in 0..m {
    rowmax[i] = max(j in 0..n, x[i, j]);
  }
  for i in 0..m {
    rowsum[i] = sum(j in 0..n, exp(x[i, j] - rowmax[i]));
  }
  for i in 0..m, j in 0..n {
    y[i, j] = exp(x[i, j] - rowmax[i]) / rowsum[i];
  }
}
)";

constexpr const char* kLayernorm = R"(// Layer normalisation of each row without the affine step (torch.nn.functional.layer_norm
// without weight and bias): the mean and the reciprocal standard deviation are kernel-local.
kernel layernorm(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {
  local mean: f32[m];
  local rstd: f32[m];
  for i in 0..m {
    mean[i] = sum(j in 0..n, x[i, j]) / f32(n);
  }
  for i in 0..m {
    rstd[i] = 1.0 / sqrt(sum(j in 0..n, (x[i, j] - mean[i]) * (x[i, j] - mean[i])) / f32(n) + 1e-5);
  }
  for i in 0..m, j in 0..n {
    y[i, j] = (x[i, j] - mean[i]) * rstd[i];
  }
}
)";

constexpr const char* kNearest = R"(// For each query point, the squared distance to its nearest reference point.
kernel nearest(n: int, m: int, D: int, q: f32[n, D], r: f32[m, D], out d: f32[n]) {
  for i in 0..n {
    d[i] = min(j in 0..m, sum(e in 0..D, (q[i, e] - r[j, e]) * (q[i, e] - r[j, e])));
  }
}
)";

constexpr const char* kHistogram = R"(// A histogram: each sample adds one to its bin (an accumulation, docs/language.md 5.1).
kernel histogram(n: int, bins: int, bin: i32[n], inout counts: i32[bins]) {
  for i in 0..n {
    counts[bin[i]] += 1;
  }
}
)";

constexpr const char* kHistogramWeighted = R"(// A weighted histogram: each sample adds its weight to its bin.
kernel histogram_weighted(n: int, bins: int, bin: i32[n], w: f32[n], inout h: f32[bins]) {
  for i in 0..n {
    h[bin[i]] += w[i];
  }
}
)";

constexpr const char* kAssemble = R"(// Assembly: node j of element k adds its contribution to global node map[k, j].
kernel assemble(K: int, Np: int, N: int, map: i32[K, Np], contrib: f32[K, Np], inout u: f32[N]) {
  for k in 0..K, j in 0..Np {
    u[map[k, j]] += contrib[k, j];
  }
}
)";

constexpr const char* kCumsum = R"(// Inclusive prefix sum (a scan, docs/language.md 5.2).
kernel cumsum(n: int, x: f32[n], out y: f32[n]) {
  for i in 0..n {
    y[i] = sum(j in 0..i + 1, x[j]);
  }
}
)";

constexpr const char* kExclusiveScan = R"(// Exclusive prefix sum of i32 counts: the offsets of items of those sizes.
kernel exclusive_scan(n: int, counts: i32[n], out starts: i32[n]) {
  for i in 0..n {
    starts[i] = sum(j in 0..i, counts[j]);
  }
}
)";

constexpr const char* kRowCumsum = R"(// Prefix sums along the rows of a matrix.
kernel row_cumsum(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {
  for r in 0..m, c in 0..n {
    y[r, c] = sum(j in 0..c + 1, x[r, j]);
  }
}
)";

constexpr const char* kSegmentedSum = R"(// Segmented prefix sum: head[i] is the start of i's segment.
kernel segmented_sum(n: int, head: i32[n], x: f32[n], out y: f32[n]) {
  for i in 0..n {
    y[i] = sum(j in head[i]..i + 1, x[j]);
  }
}
)";

constexpr const char* kDgLift = R"(// DG lifting: face fluxes times the lift matrix, scaled by the inverse Jacobian.
kernel dg_lift(K: int, Np: int, Nfp: int,
               LIFT: f32[Np, 4*Nfp], flux: f32[K, 4*Nfp], invJ: f32[K],
               inout rhs: f32[K, Np]) {
  for k in 0..K, i in 0..Np {
    rhs[k, i] = rhs[k, i] + invJ[k] * sum(f in 0..4*Nfp, LIFT[i, f] * flux[k, f]);
  }
}
)";

constexpr const char* kDgemm = R"(// Dense matrix product in f64, row-major: c = a * b.
kernel dgemm(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

constexpr const char* kIgemm = R"(// 8-bit integer matrix product, exact in i32: c = a * bt^T (bt holds b's columns as rows).
kernel igemm(n: int, a: i8[n, n], bt: i8[n, n], out c: i32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, i32(a[i, k]) * i32(bt[j, k]));
  }
}
)";

// The DG workloads move about this much data (their minimal traffic), so every order is
// bandwidth-sized the same way and far larger than the L2.
constexpr int64_t kDgFloats = (int64_t(256) << 20) / 4;

// Row lengths, Pareto with alpha 1.5 and minimum 1 by inversion: mean about 2.5, a heavy tail
// capped at 4096. Their own stream, so that the sizes need no columns.
std::vector<int64_t> powerLawLengths(int64_t rows, uint64_t seed) {
  SplitMix rng{seed};
  std::vector<int64_t> lengths(static_cast<size_t>(rows));
  for (int64_t& length : lengths) {
    const double u = (double(rng.next() >> 11) + 1) * 0x1p-53;
    length = std::min<int64_t>(4096, int64_t(std::pow(u, -1 / 1.5)));
  }
  return lengths;
}

}  // namespace

int64_t tetNodes(int order) { return int64_t(order + 1) * (order + 2) * (order + 3) / 6; }
int64_t faceNodes(int order) { return int64_t(order + 1) * (order + 2) / 2; }

std::vector<Workload> allWorkloads() {
  std::vector<Workload> w;
  for (int64_t n : {500, 1000, 1500, 2048, 3000, 4096})
    w.push_back({fmt::format("sgemm_{}", n), "sgemm", "matmul", kMatmul, {{"n", n}}, PeerKind::Sgemm});
  w.push_back({"sgemv_8192", "sgemv", "gemv", kGemv, {{"m", 8192}, {"n", 8192}}, PeerKind::Sgemv});
  w.push_back({"transpose_8192x8192", "transpose", "transpose", kTranspose, {{"m", 8192}, {"n", 8192}},
               PeerKind::Copy});
  w.push_back({"transpose_4097x1023", "transpose", "transpose", kTranspose, {{"m", 4097}, {"n", 1023}},
               PeerKind::Copy});
  w.push_back({"dot_2^26", "dot", "dot", kDot, {{"n", int64_t(1) << 26}}, PeerKind::Sdot});
  w.push_back({"batched_16x16x65536", "batched", "batched_matmul", kBatched, {{"nb", 65536}, {"n", 16}},
               PeerKind::SgemmBatched});
  // Minimal traffic of DG differentiation (both forms): u read, the derivatives written (4 K Np
  // floats) plus the three Np x Np matrices.
  auto dgDiffSizes = [](int order) -> SizeBindings {
    int64_t np = tetNodes(order);
    return {{"K", (kDgFloats - 3 * np * np) / (4 * np)}, {"Np", np}};
  };
  for (int order = 1; order <= 8; ++order)
    w.push_back({fmt::format("dg_diff_N{}", order), "dg_diff", "dg_diff", kDgDiff, dgDiffSizes(order),
                 PeerKind::DgDiffStacked});
  for (int order = 1; order <= 8; ++order)
    w.push_back({fmt::format("dg_diff_stacked_N{}", order), "dg_diff_stacked", "dg_diff_stacked", kDgDiffStacked,
                 dgDiffSizes(order), PeerKind::DgDiffStacked});
  for (int order : {3, 5, 7}) {
    // Minimal traffic: flux and invJ read, rhs read and written, plus LIFT (Np x 4 Nfp).
    int64_t np = tetNodes(order), nfp = faceNodes(order);
    int64_t k = (kDgFloats - np * 4 * nfp) / (4 * nfp + 1 + 2 * np);
    w.push_back({fmt::format("dg_lift_N{}", order), "dg_lift", "dg_lift", kDgLift,
                 {{"K", k}, {"Np", np}, {"Nfp", nfp}}, PeerKind::DgLiftProduct});
  }
  // CSR sparse matrix-vector products against cuSPARSE: 3-D Laplacians (regular, 7 a row) and
  // rows of power-law lengths (most short, a few thousands long).
  auto spmv = [&](const std::string& name, SparseMatrix m, int64_t size, int64_t rows, int64_t nnz) {
    w.push_back({name, "spmv", "spmv", kSpmv, {{"n", rows}, {"nnz", nnz}}, PeerKind::SpmvCsr, Precision::Ieee, m, size});
  };
  for (int64_t side : {64, 160})  // side^3 rows; 7 a row but 6 side^2 at the faces
    spmv(fmt::format("spmv_laplace3d_{}", side), SparseMatrix::Laplacian3D, side, side * side * side,
         7 * side * side * side - 6 * side * side);
  for (int64_t rows : {int64_t(1) << 20, int64_t(1) << 22}) {
    int64_t nnz = 0;
    for (int64_t length : powerLawLengths(rows, kPowerLawSeed)) nnz += length;
    spmv(fmt::format("spmv_powerlaw_{}M", rows >> 20), SparseMatrix::PowerLaw, rows, rows, nnz);
  }
  // Tensor cores (issue 22): 3xTF32 against strict FP32 cuBLAS, TF32 against cuBLAS's TF32, FP64
  // mma against cuBLAS DGEMM, and the DG products and the batch in 3xTF32 against FP32 cuBLAS.
  const Precision x3 = Precision::Tf32x3;
  for (int64_t n : {1000, 2048, 4096})
    w.push_back({fmt::format("sgemm_tf32x3_{}", n), "sgemm_tc", "matmul", kMatmul, {{"n", n}}, PeerKind::Sgemm, x3});
  // At 8192 beside sgemm_fp32x_8192 (issue 41: the INT8 policy against 3xTF32 in the same run).
  w.push_back({"sgemm_tf32x3_8192", "sgemm_tc", "matmul", kMatmul, {{"n", 8192}}, PeerKind::Sgemm, x3});
  w.push_back({"sgemm_tf32_4096", "sgemm_tc", "matmul", kMatmul, {{"n", 4096}}, PeerKind::SgemmTf32, Precision::Tf32});
  for (int64_t n : {1000, 2048, 4096})
    w.push_back({fmt::format("dgemm_{}", n), "dgemm", "dgemm", kDgemm, {{"n", n}}, PeerKind::Dgemm});
  // The Ozaki scheme II on INT8 tensor cores (issue 41): FP64-class DGEMM against cublasDgemm,
  // FP32-class SGEMM against strict FP32 cuBLAS (and the tf32x3 rows above).
  for (int64_t n : {4096, 8192})
    w.push_back({fmt::format("dgemm_fp64x_{}", n), "ozaki", "dgemm", kDgemm, {{"n", n}}, PeerKind::Dgemm, Precision::Fp64x});
  // The products of those policies: one INT8 matrix product against cuBLAS's.
  w.push_back({"igemm_4096", "ozaki", "igemm", kIgemm, {{"n", 4096}}, PeerKind::GemmI8});
  // And the f64 DG differentiation of issue 36 (its dg_diff_f64 rows) under fp64x.
  for (int order : {3, 5, 7})
    w.push_back({fmt::format("dg_diff_fp64x_N{}", order), "ozaki", "dg_diff_stacked64", kDgDiffStacked64,
                 {{"K", 100000}, {"Np", tetNodes(order)}}, PeerKind::DgDiffStackedF64, Precision::Fp64x});
  for (int64_t n : {4096, 8192})
    w.push_back({fmt::format("sgemm_fp32x_{}", n), "ozaki", "matmul", kMatmul, {{"n", n}}, PeerKind::Sgemm, Precision::Fp32x});
  w.push_back({"batched_tf32x3_16x16x65536", "batched_tc", "batched_matmul", kBatched, {{"nb", 65536}, {"n", 16}},
               PeerKind::SgemmBatched, x3});
  for (int order = 1; order <= 8; ++order)
    w.push_back({fmt::format("dg_diff_stacked_tf32x3_N{}", order), "dg_tc", "dg_diff_stacked", kDgDiffStacked,
                 dgDiffSizes(order), PeerKind::DgDiffStacked, x3});
  for (int order : {3, 5, 7}) {
    int64_t np = tetNodes(order), nfp = faceNodes(order);
    int64_t k = (kDgFloats - np * 4 * nfp) / (4 * nfp + 1 + 2 * np);
    w.push_back({fmt::format("dg_lift_tf32x3_N{}", order), "dg_tc", "dg_lift", kDgLift,
                 {{"K", k}, {"Np", np}, {"Nfp", nfp}}, PeerKind::DgLiftProduct, x3});
  }
  // Issue 36: the three-statement differentiation on tensor cores (stacked by the plan), the f64
  // differentiation at K = 10^5, and sum factorisation's 1-D operator (E for ~256 MiB moved).
  for (int order = 5; order <= 8; ++order)
    w.push_back({fmt::format("dg_diff_tf32x3_N{}", order), "dg_tc3", "dg_diff", kDgDiff, dgDiffSizes(order),
                 PeerKind::DgDiffStacked, x3});
  for (int order : {3, 5, 7})
    w.push_back({fmt::format("dg_diff_f64_N{}", order), "dg_f64", "dg_diff_stacked64", kDgDiffStacked64,
                 {{"K", 100000}, {"Np", tetNodes(order)}}, PeerKind::DgDiffStackedF64});
  for (int64_t p : {5, 7, 9})
    w.push_back({fmt::format("sumfact_tf32x3_p{}", p), "sumfact", "sumfact", kSumFact,
                 {{"E", kDgFloats / (2 * p * p * p)}, {"p", p}}, PeerKind::Torch, x3});
  // bf16 storage with f32 accumulation (issue 22) against cuBLAS's BF16 tensor-core GEMM.
  for (int64_t n : {2048, 4096})
    w.push_back({fmt::format("gemm_bf16_{}", n), "gemm_bf16", "gemm_bf16", kGemmBf16, {{"n", n}}, PeerKind::GemmBf16});
  // Beyond rectangles (issue 23): triangular products against cuBLAS, a row-wise normalisation and
  // a distance-style nested reduction against PyTorch (bench/peers/torch_peers.py).
  for (int64_t n : {8192, 16384})
    w.push_back({fmt::format("trmv_{}", n), "trmv", "trmv", kTrmv, {{"n", n}}, PeerKind::Strmv});
  for (int64_t n : {2048, 4096})
    w.push_back({fmt::format("trmm_{}", n), "trmm", "trmm", kTrmm, {{"n", n}}, PeerKind::Strmm});
  for (auto [n, k] : {std::pair<int64_t, int64_t>{2048, 2048}, {4096, 1024}})
    w.push_back({fmt::format("syrk_{}x{}", n, k), "syrk", "syrk", kSyrk, {{"n", n}, {"K", k}}, PeerKind::Ssyrk});
  for (auto [m, n] : {std::pair<int64_t, int64_t>{65536, 256}, {8192, 2048}, {2048, 16384}})
    w.push_back({fmt::format("softmax_{}x{}", m, n), "softmax", "softmax", kSoftmax, {{"m", m}, {"n", n}},
                 PeerKind::Torch});
  // Fusion of nests (issue 23): layer normalisation at the softmax shapes, against PyTorch.
  for (auto [m, n] : {std::pair<int64_t, int64_t>{65536, 256}, {8192, 2048}, {2048, 16384}})
    w.push_back({fmt::format("layernorm_{}x{}", m, n), "layernorm", "layernorm", kLayernorm, {{"m", m}, {"n", n}},
                 PeerKind::Torch});
  for (auto [n, d] : {std::pair<int64_t, int64_t>{8192, 16}, {16384, 64}})
    w.push_back({fmt::format("nearest_{}_D{}", n, d), "nearest", "nearest", kNearest, {{"n", n}, {"m", n}, {"D", d}},
                 PeerKind::Torch});
  // Accumulations (issue 37): histograms of 2^26 uniform samples and an assembly through a random
  // map (2^20 elements of 20 nodes into 2^22 global nodes), against torch.bincount / index_add_.
  for (int64_t bins : {256, 65536})
    w.push_back({fmt::format("histogram_2^26_{}", bins), "histogram", "histogram", kHistogram,
                 {{"n", int64_t(1) << 26}, {"bins", bins}}, PeerKind::Torch});
  w.push_back({"histogram_weighted_2^26_1024", "histogram_weighted", "histogram_weighted", kHistogramWeighted,
               {{"n", int64_t(1) << 26}, {"bins", 1024}}, PeerKind::Torch});
  w.push_back({"assemble_2^20x20", "assemble", "assemble", kAssemble,
               {{"K", int64_t(1) << 20}, {"Np", 20}, {"N", int64_t(1) << 22}}, PeerKind::Torch});
  // Scans (issue 37): a 2^26-value f32 inclusive sum, an i32 exclusive one, the rows of an 8192 x
  // 4096 matrix, and a segmented sum of 2^26 values in about 2^20 segments (the inputs' random
  // segments of mean length 64), against torch.cumsum and CuPy's cumsum.
  w.push_back({"cumsum_2^26", "cumsum", "cumsum", kCumsum, {{"n", int64_t(1) << 26}}, PeerKind::Torch});
  w.push_back({"exclusive_scan_2^26", "exclusive_scan", "exclusive_scan", kExclusiveScan, {{"n", int64_t(1) << 26}},
               PeerKind::Torch});
  w.push_back({"row_cumsum_8192x4096", "row_cumsum", "row_cumsum", kRowCumsum, {{"m", 8192}, {"n", 4096}},
               PeerKind::Torch});
  w.push_back({"segmented_sum_2^26", "segmented_sum", "segmented_sum", kSegmentedSum, {{"n", int64_t(1) << 26}},
               PeerKind::Torch});
  return w;
}

CsrStructure laplacian3d(int64_t side) {
  CsrStructure m;
  m.rowptr.push_back(0);
  for (int64_t z = 0; z < side; ++z)
    for (int64_t y = 0; y < side; ++y)
      for (int64_t x = 0; x < side; ++x) {
        const int64_t row = (z * side + y) * side + x;
        // Neighbours in column order: -z, -y, -x, the point, +x, +y, +z.
        if (z > 0) m.col.push_back(int32_t(row - side * side));
        if (y > 0) m.col.push_back(int32_t(row - side));
        if (x > 0) m.col.push_back(int32_t(row - 1));
        m.col.push_back(int32_t(row));
        if (x + 1 < side) m.col.push_back(int32_t(row + 1));
        if (y + 1 < side) m.col.push_back(int32_t(row + side));
        if (z + 1 < side) m.col.push_back(int32_t(row + side * side));
        m.rowptr.push_back(int32_t(m.col.size()));
      }
  return m;
}


CsrStructure powerLawRows(int64_t rows, uint64_t seed) {
  SplitMix columns{seed ^ 0x5eedc01ull};
  CsrStructure m;
  m.rowptr.push_back(0);
  for (int64_t length : powerLawLengths(rows, seed)) {
    std::vector<int32_t> cols(static_cast<size_t>(length));
    for (int32_t& c : cols) c = int32_t(columns.next() % uint64_t(rows));
    std::sort(cols.begin(), cols.end());
    m.col.insert(m.col.end(), cols.begin(), cols.end());
    m.rowptr.push_back(int32_t(m.col.size()));
  }
  return m;
}

CsrStructure csrOf(const Workload& w) {
  switch (w.matrix) {
    case SparseMatrix::Laplacian3D: return laplacian3d(w.matrixSize);
    case SparseMatrix::PowerLaw: return powerLawRows(w.matrixSize, kPowerLawSeed);
    case SparseMatrix::None: break;
  }
  throw Error(fmt::format("workload '{}' has no sparse matrix", w.name));
}

std::vector<Workload> selectWorkloads(const std::string& only) {
  std::vector<Workload> all = allWorkloads();
  if (only.empty()) return all;
  std::set<std::string> wanted;
  size_t start = 0;
  while (start <= only.size()) {
    size_t comma = only.find(',', start);
    std::string item = only.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) wanted.insert(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::set<std::string> known;
  for (const Workload& w : all) {
    known.insert(w.name);
    known.insert(w.group);
  }
  for (const std::string& item : wanted) {
    if (known.count(item)) continue;
    std::string names;
    for (const Workload& w : all) names += (names.empty() ? "" : ", ") + w.name;
    throw Error(fmt::format("--only: unknown workload '{}'; give workload names ({}) or groups (sgemm, sgemv, "
                            "transpose, dot, batched, dg_diff, dg_diff_stacked, dg_lift, spmv, sgemm_tc, dgemm, ozaki, batched_tc, dg_tc, "
                            "gemm_bf16, trmv, trmm, syrk, softmax, layernorm, nearest, histogram, histogram_weighted, assemble)",
                            item, names));
  }
  std::vector<Workload> out;
  for (Workload& w : all)
    if (wanted.count(w.name) || wanted.count(w.group)) out.push_back(std::move(w));
  return out;
}

std::string sizesLabel(const SizeBindings& sizes) {
  std::string s;
  for (const auto& [name, value] : sizes) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", name, value);
  return s;
}

std::string peerLabel(PeerKind peer) {
  switch (peer) {
    case PeerKind::Sgemm: return "cublasSgemm";
    case PeerKind::Sgemv: return "cublasSgemv";
    case PeerKind::Copy: return "D2D copy";
    case PeerKind::Sdot: return "cublasSdot";
    case PeerKind::SgemmBatched: return "cublasSgemmStridedBatched";
    case PeerKind::DgDiffStacked: return "cublasSgemm (D stacked)";
    case PeerKind::DgDiffStackedF64: return "cublasDgemm (D stacked)";
    case PeerKind::DgLiftProduct: return "cublasSgemm (lift product)";
    case PeerKind::SpmvCsr: return "cusparseSpMV (CSR)";
    case PeerKind::SgemmTf32: return "cublasGemmEx FAST_TF32";
    case PeerKind::Dgemm: return "cublasDgemm";
    case PeerKind::GemmBf16: return "cublasGemmEx BF16";
    case PeerKind::GemmI8: return "cublasGemmEx INT8";
    case PeerKind::Strmv: return "cublasStrmv";
    case PeerKind::Ssyrk: return "cublasSsyrk";
    case PeerKind::Strmm: return "cublasStrmm";
    case PeerKind::Torch: return "PyTorch";
  }
  return "?";
}

}  // namespace rtcg::bench
