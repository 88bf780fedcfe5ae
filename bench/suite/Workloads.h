// The workloads of the benchmark suite: each is a DSL kernel at fixed sizes and the peer it is
// compared with (a cuBLAS routine computing the same product, or a device-to-device copy of the
// same bytes for kernels that only move data).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Schedule.h"

namespace rtcg::bench {

enum class PeerKind {
  Sgemm,          // cublasSgemm, row-major operands swapped (C^T = B^T A^T)
  Sgemv,          // cublasSgemv with op T (a row-major m x n matrix is a column-major n x m one)
  Copy,           // device-to-device copy of the input's bytes (transpose)
  Sdot,           // cublasSdot, result in device memory
  SgemmBatched,   // cublasSgemmStridedBatched, operands swapped as for Sgemm
  DgDiffStacked,  // one cublasSgemm: u (K x Np) times [Dr; Ds; Dt]^T (Np x 3Np) -> K x 3Np (both DG
                  // differentiation kernels: the stacked one reads and writes exactly these arrays)
  DgDiffStackedF64,  // the same in f64: one cublasDgemm
  DgLiftProduct,  // cublasSgemm of flux (K x 4Nfp) times LIFT^T; invJ scaling and += untimed
  SgemmTf32,      // cublasGemmEx in f32 with CUBLAS_COMPUTE_32F_FAST_TF32 (TF32 tensor cores)
  Dgemm,          // cublasDgemm (FP64 tensor cores on sm_80 and later), operands swapped as for Sgemm
  SpmvCsr,        // cusparseSpMV on the same CSR arrays (CUSPARSE_SPMV_CSR_ALG1, FP32)
  GemmI8,         // cublasGemmEx with i8 A and B^T (n x K), i32 C, CUBLAS_COMPUTE_32I: the "TN" form its INT8 tensor cores take
  GemmBf16,       // cublasGemmEx with bf16 A and B, f32 C, CUBLAS_COMPUTE_32F (tensor cores), operands swapped as for Sgemm
  Strmv,          // cublasStrmv (lower, non-unit) on a copy of x, the copy timed with it (trmv is in place)
  Ssyrk,          // cublasSsyrk writing the lower triangle of a a^T (row-major: column-major upper, op T)
  Strmm,          // cublasStrmm out of place: c = L b (row-major: c^T = b^T L^T, side right, column-major upper)
  Torch,          // a PyTorch call or torch.compile, timed by bench/peers/torch_peers.py in the same GPU job
                  // and read from --peer-times (the fastest of the script's forms for that workload)
};

// The sparse matrix of a CSR workload: the rows' structure that its rowptr and col hold in the
// tuning search and the measured run (val and x stay random): the tuner reads them from input files
// (TuneOptions::inputFiles), so it ranks schedules on these rows.
enum class SparseMatrix {
  None,
  Laplacian3D,  // the 7-point Laplacian on a side^3 grid: up to 7 nonzeros a row, banded
  PowerLaw,     // rows of Pareto-distributed lengths (alpha 1.5, at least 1, at most 4096), random columns
};

struct Workload {
  std::string name;        // unique: "sgemm_500", "dg_diff_N3"
  std::string group;       // for --only: "sgemm", "sgemv", "transpose", "dot", "batched", "dg_diff",
                           // "dg_diff_stacked", "dg_lift"
  std::string kernelName;  // the kernel in `source`
  std::string source;      // DSL text
  SizeBindings sizes;
  PeerKind peer = PeerKind::Sgemm;
  // The precision policy the workload is tuned and verified under (tensor-core rows: tf32x3, tf32).
  Precision precision = Precision::Ieee;
  SparseMatrix matrix = SparseMatrix::None;
  int64_t matrixSize = 0;  // Laplacian3D: the grid's side; PowerLaw: the rows
};

// A CSR structure: rowptr (rows + 1 offsets from 0 to nnz) and col (sorted within each row).
struct CsrStructure {
  std::vector<int32_t> rowptr, col;
  int64_t rows() const { return int64_t(rowptr.size()) - 1; }
  int64_t nonzeros() const { return int64_t(col.size()); }
};
CsrStructure laplacian3d(int64_t side);
CsrStructure powerLawRows(int64_t rows, uint64_t seed);
// The matrix of a workload with one (deterministic: the same on every run and machine).
CsrStructure csrOf(const Workload& w);

// Every workload of the suite, in the order they run.
std::vector<Workload> allWorkloads();

// The workloads named by `only` (comma-separated names or group names; empty: all), in suite
// order. Throws rtcg::Error naming an unknown entry and listing the valid ones.
std::vector<Workload> selectWorkloads(const std::string& only);

// "n=500", "K=1048576, Np=20": the size bindings for people.
std::string sizesLabel(const SizeBindings& sizes);

// What the peer is, for the table and the JSON ("cublasSgemm", "D2D copy", ...).
std::string peerLabel(PeerKind peer);

// Nodes per tetrahedron (Np) and per face (Nfp) at polynomial order N.
int64_t tetNodes(int order);
int64_t faceNodes(int order);

}  // namespace rtcg::bench
