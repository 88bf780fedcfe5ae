// rtcg: run-time code generation for loop kernels on CUDA GPUs — the C++ embedding API.
//
//   rtcg::Context ctx;                                          // device 0, primary context
//   auto mm = ctx.compile(R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
//                              for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }
//                            })", {{"n", 500}});
//   rtcg::Array<float> a = ctx.upload(host_a), b = ctx.upload(host_b), c = ctx.empty<float>(500 * 500);
//   mm(a, b, c);                                                 // launch; returns when done
//   std::vector<float> host_c = c.download();
//
// Arguments are the kernel's non-size parameters in declaration order: rtcg::Array<T> (device
// memory), std::vector<T> (host memory, copied in before the launch for in/inout parameters and
// back after it for out/inout ones, like PyCUDA's In/Out/InOut), or scalars (float, double,
// int32_t, int64_t). Arrays of the kernel language's f16 and bf16 hold rtcg::f16 and rtcg::bf16
// (rtcg/Half.h: 16-bit storage with explicit conversions to and from float). Each argument is checked against the signature at the call (element type,
// element count = the bound shape's, writability, array vs scalar); a mismatch throws rtcg::Error
// naming the kernel, the argument and what was expected. Everything here is thread-safe.
//
// Compiled kernels are cached in memory (same source, sizes, schedule and device give the same
// module) and on disk (see docs/api.md: $RTCG_CACHE_DIR, $XDG_CACHE_HOME/rtcg, RTCG_CACHE=0), so a
// second process with the same kernel starts without NVRTC.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "rtcg/Error.h"
#include "rtcg/Half.h"

// The CUDA stream type: CUstream (driver API) and cudaStream_t (runtime API) are both pointers to
// it, so either converts without a cast and this header needs neither CUDA header.
struct CUstream_st;

namespace rtcg {

using Sizes = std::map<std::string, int64_t>;

enum class ElementType : uint8_t { I32, I64, F32, F64, F16, BF16 };
template <class T> constexpr ElementType elementTypeOf();
template <> constexpr ElementType elementTypeOf<float>() { return ElementType::F32; }
template <> constexpr ElementType elementTypeOf<double>() { return ElementType::F64; }
template <> constexpr ElementType elementTypeOf<int32_t>() { return ElementType::I32; }
template <> constexpr ElementType elementTypeOf<int64_t>() { return ElementType::I64; }
template <> constexpr ElementType elementTypeOf<f16>() { return ElementType::F16; }   // rtcg/Half.h
template <> constexpr ElementType elementTypeOf<bf16>() { return ElementType::BF16; }
const char* elementTypeName(ElementType t);  // "f32", ...

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int computeMajor = 0, computeMinor = 0;
  int multiprocessors = 0;
  size_t sharedPerBlock = 0, sharedPerBlockOptin = 0, sharedPerMultiprocessor = 0;
  int registersPerBlock = 0, registersPerMultiprocessor = 0;
  size_t l2Bytes = 0, totalMemory = 0;
  int clockKHz = 0;
  int driverVersion = 0;
  std::string arch() const;  // "sm_90"
};

// What compile() does about the schedule when none is given: the tuning database (see docs/api.md
// for where it is) holds the best schedule measured for a kernel, its sizes and the device; a
// lookup ladder also offers other drivers' and boards' and the nearest sizes' measurements.
// The environment variable RTCG_TUNING=off|cached|tune overrides the policy.
enum class Tuning : uint8_t {
  Off,             // the default schedule
  UseCached,       // the database's best schedule if there is one, else the default schedule
  TuneOnFirstUse,  // the database's best; on a miss, tune now (rtcgc tune's search) and use the winner
};

// How a search that compile() starts (Tuning::TuneOnFirstUse) is going: CompileOptions::onTuneProgress
// is called after each candidate, from the search's thread, one call at a time.
struct TuningProgress {
  int64_t candidates = 0;               // to try (the space's sample, within tuneMaxCandidates)
  int64_t measured = 0, verified = 0;   // run on the GPU; verified against the reference
  double elapsedSeconds = 0;
  double timeLimitSeconds = 0;          // tuneTimeLimitSeconds: no new candidate starts after it
  double bestMs = 0;                    // the fastest verified median so far; 0 before the first
};

// Which tensor-core arithmetic f32 contractions may use (docs/api.md, "Precision"): Ieee (the
// default) never rounds an f32 operand to TF32 (f64 contractions may still use FP64 tensor cores:
// IEEE products and sums, only the order of summation differs); Tf32x3 allows the split of each
// operand into two TF32 values and three products (FP32-class accuracy); Tf32 allows one TF32
// product (about 3e-4 relative error). A policy other than Ieee on a kernel that computes only in
// f64 is an error. The policy is part of the tuning key: each has its own tuned schedules.
enum class PrecisionPolicy : uint8_t { Ieee, Tf32x3, Tf32 };

struct CompileOptions {
  std::string kernel;    // which kernel of the source; empty: the only one
  std::string schedule;  // schedule text; empty: decided by `tuning`
  std::string fileName = "<string>";  // used in diagnostics
  Tuning tuning = Tuning::UseCached;
  PrecisionPolicy precision = PrecisionPolicy::Ieee;
  // Read the tuning database as a snapshot that nobody writes meanwhile: no locks, nothing written
  // (SQLite's immutable mode), so that the many ranks of an MPI application read one file at once,
  // also on a network file system (docs/api.md, "Many ranks, one database"). The environment
  // variable RTCG_TUNING_DB_SNAPSHOT=1 does the same for every open. A TuneOnFirstUse search then
  // keeps its result nowhere.
  bool tuningDbSnapshot = false;
  int tuneMaxCandidates = 64;         // for TuneOnFirstUse
  double tuneTimeLimitSeconds = 30;   // for TuneOnFirstUse
  // Receives compile()'s warnings ("rtcg: warning: ...": a cache or tuning database that cannot be
  // used, a stored schedule that no longer plans; compile() goes on without them) and notes
  // ("rtcg: ...": which schedule was used and where it came from). Without it, warnings go to
  // stderr once per process, and notes only when the environment variable RTCG_LOG is set.
  std::function<void(const std::string&)> log;
  // For TuneOnFirstUse: told how the search goes (a search can take tuneTimeLimitSeconds, so an
  // application shows progress or logs it); empty: nothing is told.
  std::function<void(const TuningProgress&)> onTuneProgress;
};

class Context;

namespace detail {
struct ContextImpl;
struct BufferImpl;
struct KernelImpl;

// One launch argument as the type-erased call path sees it.
struct ArgRef {
  enum class Kind : uint8_t { DeviceArray, HostArray, ConstHostArray, Scalar } kind{};
  ElementType type{};
  size_t count = 0;                     // arrays: elements
  std::shared_ptr<BufferImpl> buffer;   // DeviceArray
  void* host = nullptr;                 // HostArray / ConstHostArray
  union { int32_t i32; int64_t i64; float f32; double f64; } scalar{};
  const char* cppType = "";             // for error messages
};

std::shared_ptr<BufferImpl> allocate(const std::shared_ptr<ContextImpl>& ctx, size_t bytes);
std::shared_ptr<BufferImpl> wrapExternal(const std::shared_ptr<ContextImpl>& ctx, uint64_t address, size_t bytes,
                                         ElementType type);
uint64_t devicePointer(const BufferImpl& b);
void copyToDevice(BufferImpl& b, const void* src, size_t bytes);
void copyToHost(const BufferImpl& b, void* dst, size_t bytes);
}  // namespace detail

// Device memory of `size()` elements of T: owned (from Context::empty or upload; freed when the
// last copy goes away), or the application's own memory (Context::wrap; never freed by rtcg).
template <class T>
class Array {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int32_t> ||
                    std::is_same_v<T, int64_t> || std::is_same_v<T, f16> || std::is_same_v<T, bf16>,
                "rtcg::Array holds f32, f64, i32, i64, f16 or bf16 elements (float, double, int32_t, int64_t, "
                "rtcg::f16, rtcg::bf16)");

 public:
  Array() = default;
  size_t size() const { return count_; }
  size_t bytes() const { return count_ * sizeof(T); }
  std::vector<T> download() const {
    std::vector<T> out(count_);
    if (count_) detail::copyToHost(*buffer_, out.data(), bytes());
    return out;
  }
  void upload(const std::vector<T>& host) {
    if (host.size() != count_)
      throw Error("rtcg::Array::upload: the array has " + std::to_string(count_) + " elements, the vector " +
                  std::to_string(host.size()));
    if (count_) detail::copyToDevice(*buffer_, host.data(), bytes());
  }
  const std::shared_ptr<detail::BufferImpl>& buffer() const { return buffer_; }
  // The device address of element 0, for cuBLAS, CUDA kernels or another library (nullptr for an
  // empty array). It stays valid while a copy of this Array lives (for wrapped memory: while the
  // application keeps its allocation).
  T* data() const { return count_ ? reinterpret_cast<T*>(detail::devicePointer(*buffer_)) : nullptr; }

 private:
  friend class Context;
  Array(std::shared_ptr<detail::BufferImpl> b, size_t n) : buffer_(std::move(b)), count_(n) {}
  std::shared_ptr<detail::BufferImpl> buffer_;
  size_t count_ = 0;
};

namespace detail {
// One C++ argument as an ArgRef: device arrays, host vectors (const or not) and scalars.
template <class T>
inline ArgRef argRef(const Array<T>& a) {
  ArgRef r;
  r.kind = ArgRef::Kind::DeviceArray;
  r.type = elementTypeOf<T>();
  r.count = a.size();
  r.buffer = a.buffer();
  r.cppType = "rtcg::Array";
  return r;
}
template <class T>
inline ArgRef argRef(Array<T>& a) { return argRef(static_cast<const Array<T>&>(a)); }
template <class T>
inline ArgRef argRef(std::vector<T>& v) {
  ArgRef r;
  r.kind = ArgRef::Kind::HostArray;
  r.type = elementTypeOf<T>();
  r.count = v.size();
  r.host = v.data();
  r.cppType = "std::vector";
  return r;
}
template <class T>
inline ArgRef argRef(const std::vector<T>& v) {
  ArgRef r = argRef(const_cast<std::vector<T>&>(v));
  r.kind = ArgRef::Kind::ConstHostArray;
  r.cppType = "const std::vector";
  return r;
}
template <class T>
ArgRef argRef(std::vector<T>&& v) = delete;  // results would be lost: pass an lvalue
template <class T, std::enable_if_t<std::is_arithmetic_v<std::decay_t<T>>, int> = 0>
ArgRef argRef(T&& value) {
  using S = std::decay_t<T>;
  static_assert(std::is_same_v<S, float> || std::is_same_v<S, double> || std::is_same_v<S, int32_t> ||
                    std::is_same_v<S, int64_t>,
                "scalar kernel arguments are float, double, int32_t or int64_t");
  ArgRef r;
  r.kind = ArgRef::Kind::Scalar;
  r.type = elementTypeOf<S>();
  if constexpr (std::is_same_v<S, float>) r.scalar.f32 = value, r.cppType = "float";
  if constexpr (std::is_same_v<S, double>) r.scalar.f64 = value, r.cppType = "double";
  if constexpr (std::is_same_v<S, int32_t>) r.scalar.i32 = value, r.cppType = "int32_t";
  if constexpr (std::is_same_v<S, int64_t>) r.scalar.i64 = value, r.cppType = "int64_t";
  return r;
}
}  // namespace detail

// A compiled kernel, ready to launch. Cheap to copy; copies share the loaded module. (Named
// CompiledKernel because rtcg::Kernel is the compiler's IR kernel.)
class CompiledKernel {
 public:
  CompiledKernel() = default;
  bool valid() const { return impl_ != nullptr; }

  template <class... Args>
  void operator()(Args&&... args) const {
    std::vector<detail::ArgRef> refs;
    refs.reserve(sizeof...(Args));
    (refs.push_back(detail::argRef(std::forward<Args>(args))), ...);
    launch(refs);
  }
  // Enqueues the launch on `stream` (a cudaStream_t or CUstream of this device's primary context,
  // the one the CUDA runtime uses; nullptr: the legacy default stream) and returns without waiting:
  // kernels overlap with other streams' work, follow the application's order on its stream, and a
  // stream capture records them into a CUDA graph. Arguments are rtcg::Array (owned or wrapped) and
  // scalars: host vectors are copied back after the launch, which only the synchronous call does,
  // and throw rtcg::Error here. The arrays must stay allocated until the stream has run the kernel.
  // A kernel's errors (rare: accesses are proved in bounds) show at the application's next
  // synchronization. docs/api.md, Streams, says how cross-block reductions stay safe.
  template <class... Args>
  void launchAsync(CUstream_st* stream, Args&&... args) const {
    std::vector<detail::ArgRef> refs;
    refs.reserve(sizeof...(Args));
    (refs.push_back(detail::argRef(std::forward<Args>(args))), ...);
    enqueue(stream, refs);
  }
  // launchAsync with type-erased arguments.
  void enqueue(CUstream_st* stream, const std::vector<detail::ArgRef>& args) const;

  // Launches with type-erased arguments (what operator() builds), then waits for completion.
  // Launches of a kernel whose schedule splits a reduction across blocks (it keeps partials in
  // module-global scratch) are serialized: concurrent calls from several threads wait for each
  // other (docs/api.md, Thread safety).
  void launch(const std::vector<detail::ArgRef>& args) const;

  // The accessors throw rtcg::Error on a default-constructed (invalid) CompiledKernel.
  const std::string& name() const;
  const std::string& cudaSource() const;     // the generated CUDA C
  const std::string& scheduleText() const;   // the schedule it was built with (printed form)
  // Where the schedule came from: "explicit", "default", "tuned", or the tuning database's rung of
  // the lookup ladder: "tuning database" (the exact key), "tuning database (other versions or
  // board)", "tuning database (nearest sizes)" (docs/api.md, Tuned schedules).
  const std::string& scheduleOrigin() const;
  std::string signature() const;             // "matmul(a: f32[500, 500], b: ..., out c: ...) with n = 500"
  // True when the module's cubin was read from the disk cache: NVRTC did not run for it in this
  // process (a later compile() of the same kernel that hits the in-memory cache keeps the flag).
  bool loadedFromDiskCache() const;

 private:
  friend class Context;
  explicit CompiledKernel(std::shared_ptr<detail::KernelImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::KernelImpl> impl_;
};

// A CUDA device with its primary context, and rtcg's compile caches for it.
class Context {
 public:
  explicit Context(int device = 0);  // throws NoDeviceError without a driver or device
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Compiles DSL source for the given sizes (every size parameter bound, nothing else): parses,
  // proves every access in bounds and every nest race-free, schedules, emits CUDA C and loads the
  // cubin (from memory, the disk cache, or NVRTC). Throws rtcg::Error whose message is the
  // rendered diagnostics (file:line:col, source line, caret) on bad source, sizes or schedule.
  CompiledKernel compile(std::string_view source, const Sizes& sizes, const CompileOptions& options = {});

  // Device memory for `count` elements; the contents are undefined until written.
  template <class T>
  Array<T> empty(size_t count) {
    return Array<T>(detail::allocate(impl_, count * sizeof(T)), count);
  }
  // The application's device memory as an Array, without a copy and without ownership: `count`
  // elements of T at `devicePointer` (cudaMalloc, cuMemAlloc, CuPy's or PyTorch's data pointer),
  // on this context's device (the primary context, the one the CUDA runtime uses). rtcg never
  // frees it: the memory must stay allocated while any copy of the Array is used, launches still
  // running on a stream included. Any address aligned for T is accepted, also inside an allocation
  // (a kernel given an array off a 16-byte boundary runs a variant without 16-byte vector
  // accesses). Throws rtcg::Error for a null pointer with elements or an address not aligned for T.
  template <class T>
  Array<T> wrap(T* devicePointer, size_t count) {
    return Array<T>(detail::wrapExternal(impl_, reinterpret_cast<uint64_t>(devicePointer), count * sizeof(T),
                                         elementTypeOf<T>()),
                    count);
  }
  template <class T>
  Array<T> upload(const std::vector<T>& host) {
    Array<T> a = empty<T>(host.size());
    a.upload(host);
    return a;
  }

  const DeviceInfo& device() const;
  void synchronize();  // waits for all work on the device (launches already wait for themselves)

  // How compile() calls on this Context were served, so far: by NVRTC, by the disk cache, or from
  // memory (a kernel this process already had).
  struct CacheStats { int nvrtc = 0, disk = 0, memory = 0; };
  CacheStats cacheStats() const;

 private:
  std::shared_ptr<detail::ContextImpl> impl_;
};

// Library version ("0.1.0").
const char* version();

}  // namespace rtcg
