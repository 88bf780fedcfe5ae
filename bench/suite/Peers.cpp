#include "bench/suite/Peers.h"

#include <cublas_v2.h>
#include <cusparse.h>
#include <fmt/format.h>

#include "support/Error.h"

namespace rtcg::bench {

namespace {

void check(cusparseStatus_t status, const char* call) {
  if (status != CUSPARSE_STATUS_SUCCESS)
    throw Error(fmt::format("{} failed: {} ({})", call, cusparseGetErrorName(status), cusparseGetErrorString(status)));
}

void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw Error(fmt::format("{} failed: {} ({})", call, cublasGetStatusName(status), cublasGetStatusString(status)));
}

int asInt(int64_t v, const char* what) {
  if (v < 0 || v > INT32_MAX) throw Error(fmt::format("{} = {} does not fit cuBLAS's int", what, v));
  return int(v);
}

cudaStream_t cudaStreamOf(const cuda::Stream& s) { return s.handle(); }  // CUstream and cudaStream_t are one type

constexpr float kOne = 1.0f, kZero = 0.0f;

}  // namespace

Blas::Blas(const cuda::Stream& stream) {
  check(cublasCreate(&handle_), "cublasCreate");
  check(cublasSetStream(handle_, cudaStreamOf(stream)), "cublasSetStream");
  // FP32 arithmetic: the default math mode uses no tensor-core TF32 for cublasSgemm* (unless the
  // NVIDIA_TF32_OVERRIDE environment variable forces it, which main() refuses).
  check(cublasSetMathMode(handle_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode");
  check(cublasSetPointerMode(handle_, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
}

Blas::~Blas() {
  if (handle_) cublasDestroy(handle_);
}

std::string Blas::version() const {
  int v = 0;
  if (cublasGetVersion(handle_, &v) != CUBLAS_STATUS_SUCCESS) return "unknown";
  return fmt::format("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100);
}

// cuSPARSE's CSR product y = A x in FP32 on the peer's buffers: the handle on the timed stream,
// the matrix and vector descriptors, and the work buffer cusparseSpMV_bufferSize asks for.
struct Peer::Sparse {
  cusparseHandle_t handle = nullptr;
  cusparseSpMatDescr_t a = nullptr;
  cusparseDnVecDescr_t x = nullptr, y = nullptr;
  std::optional<cuda::DeviceBuffer> work;
  ~Sparse() {
    if (x) cusparseDestroyDnVec(x);
    if (y) cusparseDestroyDnVec(y);
    if (a) cusparseDestroySpMat(a);
    if (handle) cusparseDestroy(handle);
  }
};

Peer::Peer(const Workload& w, const Kernel& bound, const HostArgs& host, std::shared_ptr<cuda::Context> ctx,
           Blas& blas)
    : w_(w), bound_(bound), host_(host), ctx_(std::move(ctx)), blas_(blas) {
  switch (w_.peer) {
    case PeerKind::Sgemm:
    case PeerKind::SgemmTf32:
    case PeerKind::Dgemm:
    case PeerKind::GemmBf16:
      upload("a");
      upload("b");
      allocate("c", host_.array("c").bytes());
      break;
    case PeerKind::GemmI8:
      upload("a");
      upload("bt");
      allocate("c", host_.array("c").bytes());
      break;
    case PeerKind::Sgemv:
      upload("a");
      upload("x");
      allocate("y", host_.array("y").bytes());
      break;
    case PeerKind::Copy:
      upload("a");
      allocate("copy", host_.array("a").bytes());
      break;
    case PeerKind::Sdot:
      upload("x");
      upload("y");
      allocate("r", sizeof(float));
      break;
    case PeerKind::SgemmBatched:
      upload("a");
      upload("x");
      allocate("c", host_.array("c").bytes());
      break;
    case PeerKind::DgDiffStacked:
    case PeerKind::DgDiffStackedF64: {
      upload("u");
      if (stackedKernel()) {  // the kernel's own layout: D and w as they are
        upload("D");
        allocate("w", host_.array("w").bytes());
        break;
      }
      // [Dr; Ds; Dt] row-major (3 Np x Np): the three matrices one after the other.
      size_t one = host_.array("Dr").bytes();
      allocate("D", 3 * one);
      buffer("D").copyFromHost(host_.array("Dr").data(), one, 0);
      buffer("D").copyFromHost(host_.array("Ds").data(), one, one);
      buffer("D").copyFromHost(host_.array("Dt").data(), one, 2 * one);
      allocate("w", 3 * host_.array("ur").bytes());
      break;
    }
    case PeerKind::SpmvCsr:
      for (const char* name : {"rowptr", "col", "val", "x"}) upload(name);
      allocate("y", host_.array("y").bytes());
      break;
    case PeerKind::DgLiftProduct:
      upload("LIFT");
      upload("flux");
      allocate("p", host_.array("rhs").bytes());
      break;
    case PeerKind::Strmv:
      upload("a");
      upload("x");
      allocate("y", host_.array("y").bytes());
      break;
    case PeerKind::Strmm:
      upload("a");
      upload("b");
      allocate("c", host_.array("c").bytes());
      break;
    case PeerKind::Ssyrk:
      upload("a");
      // From the poisoned host array: the upper triangle neither side writes stays NaN in both.
      upload("c");
      break;
    case PeerKind::Torch:
      throw Error(fmt::format("workload {}: its peer is timed by bench/peers/torch_peers.py, not in bench_suite", w_.name));
  }
}

// The descriptors and work buffer, once the buffers exist (the first enqueue, on its stream).
void Peer::prepareSparse(const cuda::Stream& stream) {
  if (sparse_) return;
  auto sp = std::make_shared<Sparse>();
  const int64_t n = w_.sizes.at("n"), nnz = w_.sizes.at("nnz");
  auto dev = [&](const char* name) { return reinterpret_cast<void*>(buffer(name).devicePtr()); };
  check(cusparseCreate(&sp->handle), "cusparseCreate");
  check(cusparseSetStream(sp->handle, cudaStreamOf(stream)), "cusparseSetStream");
  check(cusparseCreateCsr(&sp->a, n, n, nnz, dev("rowptr"), dev("col"), dev("val"), CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_BASE_ZERO,
                          CUDA_R_32F),
        "cusparseCreateCsr");
  check(cusparseCreateDnVec(&sp->x, n, dev("x"), CUDA_R_32F), "cusparseCreateDnVec");
  check(cusparseCreateDnVec(&sp->y, n, dev("y"), CUDA_R_32F), "cusparseCreateDnVec");
  size_t bytes = 0;
  check(cusparseSpMV_bufferSize(sp->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, sp->a, sp->x, &kZero, sp->y,
                                CUDA_R_32F, CUSPARSE_SPMV_CSR_ALG1, &bytes),
        "cusparseSpMV_bufferSize");
  sp->work.emplace(ctx_, std::max<size_t>(bytes, 16));
  sparse_ = std::move(sp);
}

bool Peer::stackedKernel() const { return bound_.findParam("w") >= 0; }

cuda::DeviceBuffer& Peer::buffer(const std::string& name) {
  auto it = buffers_.find(name);
  RTCG_ASSERT(it != buffers_.end(), "peer buffer " + name + " was never allocated");
  return it->second;
}

void Peer::allocate(const std::string& name, size_t bytes) {
  buffers_.insert_or_assign(name, cuda::DeviceBuffer(ctx_, bytes));
}

void Peer::upload(const std::string& name) {
  const HostArray& a = host_.array(name);
  allocate(name, a.bytes());
  buffer(name).copyFromHost(a.data(), a.bytes());
}

std::vector<double> Peer::download(const std::string& name) const {
  if (w_.peer == PeerKind::Dgemm || w_.peer == PeerKind::DgDiffStackedF64) return buffers_.at(name).download<double>();
  if (w_.peer == PeerKind::GemmI8) {
    std::vector<int32_t> v = buffers_.at(name).download<int32_t>();
    return std::vector<double>(v.begin(), v.end());
  }
  std::vector<float> f = buffers_.at(name).download<float>();
  return std::vector<double>(f.begin(), f.end());
}

void Peer::enqueue(const cuda::Stream& stream) {
  cublasHandle_t h = blas_.handle();
  auto ptr = [&](const std::string& name) { return reinterpret_cast<float*>(buffer(name).devicePtr()); };
  const SizeBindings& s = w_.sizes;
  switch (w_.peer) {
    case PeerKind::Sgemm: {
      // Row-major C = A B is column-major C^T = B^T A^T: pass B first.
      int n = asInt(s.at("n"), "n");
      check(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kOne, ptr("b"), n, ptr("a"), n, &kZero, ptr("c"), n),
            "cublasSgemm");
      break;
    }
    case PeerKind::SgemmTf32: {
      // As Sgemm, with TF32 tensor cores allowed (one TF32 product, FP32 accumulation).
      int n = asInt(s.at("n"), "n");
      check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kOne, ptr("b"), CUDA_R_32F, n, ptr("a"), CUDA_R_32F, n,
                         &kZero, ptr("c"), CUDA_R_32F, n, CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (FAST_TF32)");
      break;
    }
    case PeerKind::GemmBf16: {
      // bf16 operands (the same bits rtcg reads), f32 products and sums on the tensor cores.
      int n = asInt(s.at("n"), "n");
      check(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kOne, ptr("b"), CUDA_R_16BF, n, ptr("a"), CUDA_R_16BF, n,
                         &kZero, ptr("c"), CUDA_R_32F, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (BF16)");
      break;
    }
    case PeerKind::GemmI8: {
      // Row-major c = a bt^T is column-major c^T = bt a^T: bt and a read as column-major K x n
      // matrices, the first transposed (cuBLAS's "TN" INT8 form).
      int n = asInt(s.at("n"), "n");
      const int32_t one = 1, zero = 0;
      check(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &one, ptr("bt"), CUDA_R_8I, n, ptr("a"), CUDA_R_8I, n,
                         &zero, ptr("c"), CUDA_R_32I, n, CUBLAS_COMPUTE_32I, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx (INT8)");
      break;
    }
    case PeerKind::Dgemm: {
      int n = asInt(s.at("n"), "n");
      auto dptr = [&](const std::string& name) { return reinterpret_cast<double*>(buffer(name).devicePtr()); };
      const double one = 1.0, zero = 0.0;
      check(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, dptr("b"), n, dptr("a"), n, &zero, dptr("c"), n),
            "cublasDgemm");
      break;
    }
    case PeerKind::Sgemv: {
      // A row-major m x n is column-major n x m (lda n): y = (that)^T x.
      int m = asInt(s.at("m"), "m"), n = asInt(s.at("n"), "n");
      check(cublasSgemv(h, CUBLAS_OP_T, n, m, &kOne, ptr("a"), n, ptr("x"), 1, &kZero, ptr("y"), 1), "cublasSgemv");
      break;
    }
    case PeerKind::Copy:
      buffer("copy").copyFromDeviceAsync(buffer("a"), buffer("a").bytes(), &stream);
      break;
    case PeerKind::Sdot: {
      int n = asInt(s.at("n"), "n");
      check(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_DEVICE), "cublasSetPointerMode");
      cublasStatus_t st = cublasSdot(h, n, ptr("x"), 1, ptr("y"), 1, ptr("r"));
      check(cublasSetPointerMode(h, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
      check(st, "cublasSdot");
      break;
    }
    case PeerKind::SgemmBatched: {
      int nb = asInt(s.at("nb"), "nb"), n = asInt(s.at("n"), "n");
      long long stride = (long long)n * n;
      check(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &kOne, ptr("x"), n, stride, ptr("a"), n,
                                      stride, &kZero, ptr("c"), n, stride, nb),
            "cublasSgemmStridedBatched");
      break;
    }
    case PeerKind::DgDiffStacked: {
      // W (K x 3Np, row-major) = u (K x Np) [Dr; Ds; Dt]^T. Column-major: W^T = D u^T, where the
      // stacked D's memory is the column-major Np x 3Np matrix D^T (hence op T) and u's is u^T.
      int k = asInt(s.at("K"), "K"), np = asInt(s.at("Np"), "Np");
      check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 3 * np, k, np, &kOne, ptr("D"), np, ptr("u"), np, &kZero,
                        ptr("w"), 3 * np),
            "cublasSgemm");
      break;
    }
    case PeerKind::DgDiffStackedF64: {  // as DgDiffStacked, in f64 (the stacked kernel only)
      int k = asInt(s.at("K"), "K"), np = asInt(s.at("Np"), "Np");
      auto dptr = [&](const std::string& name) { return reinterpret_cast<double*>(buffer(name).devicePtr()); };
      const double one = 1.0, zero = 0.0;
      check(cublasDgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, 3 * np, k, np, &one, dptr("D"), np, dptr("u"), np, &zero,
                        dptr("w"), 3 * np),
            "cublasDgemm");
      break;
    }
    case PeerKind::SpmvCsr: {
      prepareSparse(stream);
      check(cusparseSpMV(sparse_->handle, CUSPARSE_OPERATION_NON_TRANSPOSE, &kOne, sparse_->a, sparse_->x, &kZero,
                         sparse_->y, CUDA_R_32F, CUSPARSE_SPMV_CSR_ALG1, reinterpret_cast<void*>(sparse_->work->devicePtr())),
            "cusparseSpMV");
      break;
    }
    case PeerKind::DgLiftProduct: {
      // P (K x Np, row-major) = flux (K x 4Nfp) LIFT^T; column-major: P^T = LIFT flux^T.
      int k = asInt(s.at("K"), "K"), np = asInt(s.at("Np"), "Np"), nf = asInt(4 * s.at("Nfp"), "4 Nfp");
      check(cublasSgemm(h, CUBLAS_OP_T, CUBLAS_OP_N, np, k, nf, &kOne, ptr("LIFT"), nf, ptr("flux"), nf, &kZero,
                        ptr("p"), np),
            "cublasSgemm");
      break;
    }
    case PeerKind::Strmv: {
      // cublasStrmv overwrites its vector: y = x first (n floats, next to the n^2 / 2 read). The
      // row-major lower a is the column-major upper a^T, so y = L x is op T on the upper triangle.
      int n = asInt(s.at("n"), "n");
      buffer("y").copyFromDeviceAsync(buffer("x"), buffer("x").bytes(), &stream);
      check(cublasStrmv(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, n, ptr("a"), n, ptr("y"), 1),
            "cublasStrmv");
      break;
    }
    case PeerKind::Ssyrk: {
      // Row-major a (n x K) is the column-major K x n a^T: c = (a^T)^T a^T with op T; the row-major
      // lower triangle of c is the column-major upper one.
      int n = asInt(s.at("n"), "n"), k = asInt(s.at("K"), "K");
      check(cublasSsyrk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, n, k, &kOne, ptr("a"), k, &kZero, ptr("c"), n),
            "cublasSsyrk");
      break;
    }
    case PeerKind::Strmm: {
      // Out of place, c = L b. Column-major, the row-major arrays are their transposes: c^T = b^T L^T,
      // with L^T the upper triangle of the column-major view of a: side right, upper, no transpose.
      int n = asInt(s.at("n"), "n");
      check(cublasStrmm(h, CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N, CUBLAS_DIAG_NON_UNIT, n, n, &kOne,
                        ptr("a"), n, ptr("b"), n, ptr("c"), n),
            "cublasStrmm");
      break;
    }
    case PeerKind::Torch: break;  // never constructed (see the constructor)
  }
}

std::optional<std::map<int, std::vector<double>>> Peer::result(const cuda::Stream& stream) {
  if (w_.peer == PeerKind::Copy) return std::nullopt;
  enqueue(stream);
  stream.synchronize();
  std::map<int, std::vector<double>> out;
  auto param = [&](const char* name) { return host_.paramIndex(name); };
  switch (w_.peer) {
    case PeerKind::Sgemm:
    case PeerKind::SgemmTf32:
    case PeerKind::Dgemm:
    case PeerKind::GemmBf16:
    case PeerKind::GemmI8:
    case PeerKind::SgemmBatched: out[param("c")] = download("c"); break;
    case PeerKind::Ssyrk:
    case PeerKind::Strmm: out[param("c")] = download("c"); break;
    case PeerKind::Sgemv:
    case PeerKind::Strmv:
    case PeerKind::SpmvCsr: out[param("y")] = download("y"); break;
    case PeerKind::Sdot: out[param("r")] = download("r"); break;
    case PeerKind::DgDiffStacked:
    case PeerKind::DgDiffStackedF64: {
      if (stackedKernel()) {
        out[param("w")] = download("w");
        break;
      }
      int64_t k = w_.sizes.at("K"), np = w_.sizes.at("Np");
      std::vector<double> w = download("w");
      const char* names[3] = {"ur", "us", "ut"};
      for (int m = 0; m < 3; ++m) {
        std::vector<double> v(size_t(k * np));
        for (int64_t e = 0; e < k; ++e)
          for (int64_t i = 0; i < np; ++i) v[size_t(e * np + i)] = w[size_t(e * 3 * np + m * np + i)];
        out[param(names[m])] = std::move(v);
      }
      break;
    }
    case PeerKind::DgLiftProduct: {
      // The product came from cuBLAS; the invJ scaling and the += are applied here in double.
      int64_t k = w_.sizes.at("K"), np = w_.sizes.at("Np");
      std::vector<double> p = download("p");
      const HostArray& rhs = host_.array("rhs");
      const HostArray& invJ = host_.array("invJ");
      std::vector<double> v(size_t(k * np));
      for (int64_t e = 0; e < k; ++e)
        for (int64_t i = 0; i < np; ++i)
          v[size_t(e * np + i)] = rhs.get(e * np + i) + invJ.get(e) * p[size_t(e * np + i)];
      out[param("rhs")] = std::move(v);
      break;
    }
    case PeerKind::Copy:
    case PeerKind::Torch: break;
  }
  return out;
}

}  // namespace rtcg::bench
