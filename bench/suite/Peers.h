// The peers rtcg's kernels are timed against, in the same process and on the same stream:
// cuBLAS routines (FP32 math, TF32 off), cuSPARSE's CSR SpMV and a device-to-device copy. cuBLAS is linked into the
// benchmark only; it shares the device's primary context with rtcg (the CUDA runtime uses it too).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/suite/Workloads.h"
#include "ir/IR.h"
#include "reference/HostArgs.h"
#include "runtime/Memory.h"
#include "runtime/Stream.h"

struct cublasContext;  // = cublasHandle_t's pointee, from cublas_api.h

namespace rtcg::bench {

// A cuBLAS handle bound to one stream, in FP32 math mode (no TF32). Create it after
// cuda::Context::primary(ordinal) and cudaSetDevice(ordinal) (see main.cpp).
class Blas {
 public:
  explicit Blas(const cuda::Stream& stream);
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;
  cublasContext* handle() const { return handle_; }
  std::string version() const;  // "13.0.0"

 private:
  cublasContext* handle_ = nullptr;
};

// One workload's peer with its own device buffers, uploaded from the same host inputs rtcg's
// kernel gets.
class Peer {
 public:
  Peer(const Workload& w, const Kernel& bound, const HostArgs& host, std::shared_ptr<cuda::Context> ctx, Blas& blas);

  // Enqueues the timed operation on `stream` (the stream the Blas handle is bound to).
  void enqueue(const cuda::Stream& stream);

  // Runs the peer's complete computation once from fresh inputs and returns its result in the
  // layout of rtcg's written arrays (param index -> values, row-major), or nothing when the peer
  // computes no comparable result (a copy).
  std::optional<std::map<int, std::vector<double>>> result(const cuda::Stream& stream);

 private:
  cuda::DeviceBuffer& buffer(const std::string& name);
  void upload(const std::string& name);                        // from the host array of that param
  void allocate(const std::string& name, size_t bytes);
  std::vector<double> download(const std::string& name) const;  // f32 values as double
  // DG differentiation written in the peer's layout (one stacked D, one w of K x 3Np) rather than
  // as three matrices and three outputs.
  bool stackedKernel() const;
  void prepareSparse(const cuda::Stream& stream);

  // cuSPARSE's handle, descriptors and work buffer of a CSR product (PeerKind::SpmvCsr), created
  // with the peer and kept for its timed calls (Peers.cpp).
  struct Sparse;
  std::shared_ptr<Sparse> sparse_;

  const Workload& w_;
  const Kernel& bound_;
  const HostArgs& host_;
  std::shared_ptr<cuda::Context> ctx_;
  Blas& blas_;
  std::map<std::string, cuda::DeviceBuffer> buffers_;
};

}  // namespace rtcg::bench
