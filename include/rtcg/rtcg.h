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

#include <charconv>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
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

enum class ElementType : uint8_t { I32, I64, F32, F64, F16, BF16, I8, U8, U32 };
template <class T> constexpr ElementType elementTypeOf();
template <> constexpr ElementType elementTypeOf<float>() { return ElementType::F32; }
template <> constexpr ElementType elementTypeOf<double>() { return ElementType::F64; }
template <> constexpr ElementType elementTypeOf<int32_t>() { return ElementType::I32; }
template <> constexpr ElementType elementTypeOf<int64_t>() { return ElementType::I64; }
template <> constexpr ElementType elementTypeOf<f16>() { return ElementType::F16; }   // rtcg/Half.h
template <> constexpr ElementType elementTypeOf<bf16>() { return ElementType::BF16; }
template <> constexpr ElementType elementTypeOf<int8_t>() { return ElementType::I8; }
template <> constexpr ElementType elementTypeOf<uint8_t>() { return ElementType::U8; }
template <> constexpr ElementType elementTypeOf<uint32_t>() { return ElementType::U32; }
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
// f64 is an error. Fp64x and Fp32x compute each f64 (Fp64x) or f32 (Fp32x) contraction on INT8
// tensor cores by the Ozaki scheme II (docs/api.md, "Precision": FP64- and FP32-class accuracy,
// and its limits), where the scheme can be faster than the contraction as written (the others stay
// as written: docs/language.md 6.2); a kernel without such a contraction refuses them. The policy is part of the
// tuning key: each has its own tuned schedules.
enum class PrecisionPolicy : uint8_t { Ieee, Tf32x3, Tf32, Fp64x, Fp32x };

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
struct RawModuleImpl;
struct RawFunctionImpl;

// One launch argument as the type-erased call path sees it.
struct ArgRef {
  enum class Kind : uint8_t { DeviceArray, HostArray, ConstHostArray, Scalar } kind{};
  ElementType type{};
  size_t count = 0;                     // arrays: elements
  std::shared_ptr<BufferImpl> buffer;   // DeviceArray
  void* host = nullptr;                 // HostArray / ConstHostArray
  union { int32_t i32; int64_t i64; float f32; double f64; uint32_t u32; } scalar{};
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
                    std::is_same_v<T, int64_t> || std::is_same_v<T, f16> || std::is_same_v<T, bf16> ||
                    std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> || std::is_same_v<T, uint32_t>,
                "rtcg::Array holds f32, f64, i32, i64, u32, f16, bf16, i8 or u8 elements (float, double, int32_t, "
                "int64_t, uint32_t, rtcg::f16, rtcg::bf16, int8_t, uint8_t)");

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
                    std::is_same_v<S, int64_t> || std::is_same_v<S, uint32_t>,
                "scalar kernel arguments are float, double, int32_t, int64_t or uint32_t");
  ArgRef r;
  r.kind = ArgRef::Kind::Scalar;
  r.type = elementTypeOf<S>();
  if constexpr (std::is_same_v<S, float>) r.scalar.f32 = value, r.cppType = "float";
  if constexpr (std::is_same_v<S, double>) r.scalar.f64 = value, r.cppType = "double";
  if constexpr (std::is_same_v<S, int32_t>) r.scalar.i32 = value, r.cppType = "int32_t";
  if constexpr (std::is_same_v<S, int64_t>) r.scalar.i64 = value, r.cppType = "int64_t";
  if constexpr (std::is_same_v<S, uint32_t>) r.scalar.u32 = value, r.cppType = "uint32_t";
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

// ---- raw CUDA modules ------------------------------------------------------------------------------
//
// CUDA C of the application's own, compiled at run time (PyCUDA's SourceModule, jitify): through
// the same NVRTC route and the same disk cache as rtcg's generated code, functions looked up by
// name, launched on the application's stream with each argument checked against the function's
// parameters before the launch (docs/api.md, Raw CUDA modules).
//
//   rtcg::RawModule m = ctx.module(R"(extern "C" __global__ void scale(int n, float a, float* x) {
//                                       int i = blockIdx.x * blockDim.x + threadIdx.x;
//                                       if (i < n) x[i] *= a; })");
//   m.function("scale").launch({{(n + 255) / 256}, {256}}, n, 2.0f, x);   // x: rtcg::Array<float>

// Grid or block extents; any integer types (so that {(n + 255) / 256} of an int is no narrowing).
struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
  Dim3() = default;
  template <class X, class Y = unsigned, class Z = unsigned,
            std::enable_if_t<std::is_integral_v<X> && std::is_integral_v<Y> && std::is_integral_v<Z>, int> = 0>
  Dim3(X x_, Y y_ = 1, Z z_ = 1) : x(unsigned(x_)), y(unsigned(y_)), z(unsigned(z_)) {}
};

struct LaunchConfig {
  Dim3 grid, block;
  size_t sharedBytes = 0;           // dynamic shared memory per block (above 48 KiB: opted in for the launch)
  CUstream_st* stream = nullptr;    // the application's stream of this device's primary context; nullptr: the legacy default stream
};

struct ModuleOptions {
  // NVRTC options, each one word: -DTILE=128, -I/path, --use_fast_math, -lineinfo. The
  // architecture is the device's (a line "// rtcg-arch: sm_90a" in the source picks sm_90a on
  // sm_90); options that choose another one or another output are refused.
  std::vector<std::string> nvrtcOptions;
  std::string fileName = "module.cu";  // in NVRTC's messages (and __FILE__); errors point into it
  // Receives NVRTC's warnings, rendered with the source line; empty: they go to stderr.
  std::function<void(const std::string&)> log;
};

// A parameter of a raw module's function: its size (from the driver, cuFuncGetParamInfo, or the
// NVRTC-lowered signature on drivers before CUDA 12.4) and, where the source's declaration of the
// function is found, its name and type ("" otherwise).
struct RawParameter {
  std::string name, type;
  size_t size = 0;
  bool pointer = false;
};

namespace detail {
// One argument of a raw launch: an rtcg::Array (its device address, element type and count), a
// bare device pointer, or a value passed by its bytes.
struct RawArg {
  enum class Kind : uint8_t { Array, Pointer, Value } kind{};
  std::shared_ptr<BufferImpl> buffer;  // Array
  ElementType type{};                  // Array
  size_t count = 0;                    // Array: elements
  std::string bytes;                   // Pointer and Value: what is passed
  std::string description;             // for messages: "rtcg::Array<f32> of 1000 elements", "float 2.5"
};

template <class T>
std::string rawTypeName() {
  if constexpr (std::is_same_v<T, float>) return "float";
  else if constexpr (std::is_same_v<T, double>) return "double";
  else if constexpr (std::is_same_v<T, int32_t>) return "int32_t";
  else if constexpr (std::is_same_v<T, uint32_t>) return "uint32_t";
  else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
  else if constexpr (std::is_same_v<T, uint64_t>) return "uint64_t";
  else if constexpr (std::is_same_v<T, bool>) return "bool";
  else if constexpr (std::is_integral_v<T>) return std::to_string(sizeof(T)) + "-byte integer";
  else return std::to_string(sizeof(T)) + "-byte value";
}

template <class T>
RawArg rawArg(const Array<T>& a) {
  RawArg r;
  r.kind = RawArg::Kind::Array;
  r.buffer = a.buffer();
  r.type = elementTypeOf<T>();
  r.count = a.size();
  r.description = std::string("rtcg::Array<") + elementTypeName(r.type) + "> of " + std::to_string(a.size()) +
                  " elements";
  return r;
}
template <class T>
RawArg rawArg(Array<T>& a) { return rawArg(static_cast<const Array<T>&>(a)); }
template <class T>
RawArg rawArg(T* devicePointer) {  // the application's device memory (cudaMalloc, a framework's data pointer)
  RawArg r;
  r.kind = RawArg::Kind::Pointer;
  uint64_t address = reinterpret_cast<uint64_t>(devicePointer);
  r.bytes.assign(reinterpret_cast<const char*>(&address), sizeof address);
  r.description = "a device pointer";
  return r;
}
template <class T>
RawArg rawArg(const std::vector<T>&) = delete;  // host memory: upload it (Context::upload) or wrap device memory
template <class T, std::enable_if_t<!std::is_pointer_v<std::decay_t<T>>, int> = 0>
RawArg rawArg(const T& value) {
  static_assert(std::is_trivially_copyable_v<T>, "raw kernel arguments are rtcg::Array, device pointers or values "
                                                 "of trivially copyable types (numbers, plain structs)");
  RawArg r;
  r.kind = RawArg::Kind::Value;
  r.bytes.assign(reinterpret_cast<const char*>(&value), sizeof(T));
  r.description = rawTypeName<T>();
  if constexpr (std::is_floating_point_v<T>) {
    char text[32];
    std::to_chars_result end = std::to_chars(text, text + sizeof text, value);  // shortest: "2.5", not "2.500000"
    r.description += " " + std::string(text, end.ptr);
  } else if constexpr (std::is_arithmetic_v<T>) {
    r.description += " " + std::to_string(value);
  }
  return r;
}
}  // namespace detail

// A __global__ function of a RawModule. Cheap to copy; keeps its module loaded.
class RawFunction {
 public:
  RawFunction() = default;
  bool valid() const { return impl_ != nullptr; }
  const std::string& name() const;
  std::vector<RawParameter> parameters() const;
  int maxThreadsPerBlock() const;  // for this function (its registers decide)
  int registers() const;           // per thread

  // Enqueues the launch on config.stream and returns without waiting (like <<<...>>>). Every
  // argument is checked first: the count and each size against the parameters, an array or
  // pointer for a pointer parameter, a value for any other, an rtcg::Array's element type against
  // the declared pointer type where the declaration is known; a mismatch throws rtcg::Error naming
  // the parameter, and nothing is launched. Arguments: rtcg::Array<T> (of this device), device
  // pointers T*, and values of trivially copyable types (int, float, a struct) passed as their
  // bytes: pass exactly the parameter's type (2.0f for a float, not 2.0).
  template <class... Args>
  void launch(const LaunchConfig& config, Args&&... args) const {
    std::vector<detail::RawArg> refs;
    refs.reserve(sizeof...(Args));
    (refs.push_back(detail::rawArg(std::forward<Args>(args))), ...);
    enqueue(config, refs);
  }
  void enqueue(const LaunchConfig& config, const std::vector<detail::RawArg>& args) const;

 private:
  friend class RawModule;
  explicit RawFunction(std::shared_ptr<detail::RawFunctionImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::RawFunctionImpl> impl_;
};

// A compiled and loaded raw CUDA module (Context::module). Cheap to copy.
class RawModule {
 public:
  RawModule() = default;
  bool valid() const { return impl_ != nullptr; }
  // The __global__ function `name` (extern "C" functions by their name; others by their mangled
  // name). Throws rtcg::Error listing the module's functions when it has none of that name.
  RawFunction function(const std::string& name) const;
  std::vector<std::string> functionNames() const;
  bool loadedFromDiskCache() const;  // NVRTC did not run for it in this call
  const std::string& warnings() const;  // NVRTC's warnings, rendered (empty when read from the cache)

 private:
  friend class Context;
  explicit RawModule(std::shared_ptr<detail::RawModuleImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::RawModuleImpl> impl_;
};

// One variant of a raw module's tuning space: each macro with its value ("TILE" -> "128").
using RawVariant = std::map<std::string, std::string>;

// Tuning a raw module's function over macro values (Kernel Tuner's use): every variant compiles
// with -DMACRO=VALUE for each macro, launches with the geometry `geometry` gives for it, is
// verified (against `reference` on `outputs`, and/or by `check`) and, when right, timed like
// rtcg's own candidates (warm-up, repeats, L2 flushed between runs, the median); every variant is
// recorded in rtcg's tuning database under a key of the source, options, function, space,
// problem and device (docs/api.md, Tuning a raw module).
struct RawTuneOptions {
  std::string function;
  // Macros with their values, in order (the last varies fastest): {{"TILE", {"64", "128", "256"}}}.
  std::vector<std::pair<std::string, std::vector<std::string>>> space;
  std::function<bool(const RawVariant&)> restrict;          // optional: false leaves a variant out
  std::function<LaunchConfig(const RawVariant&)> geometry;  // required: grid, block, shared memory (stream ignored)
  // Verification (at least one of the two). `reference`: a function of any module launched once
  // with `referenceConfig` on the same arguments; `outputs` (argument indices, rtcg::Array
  // arguments) are then compared with its results: relative L2 error within `tolerance` (0: 1e-5
  // for f32, 1e-12 for f64, 1e-3 for f16, 1e-2 for bf16); i32 and i64 outputs exactly, element by
  // element in 64 bits, whatever `tolerance` says.
  RawFunction reference;
  LaunchConfig referenceConfig;
  std::vector<size_t> outputs;
  double tolerance = 0;
  // Before each verifying launch every array argument gets back its values from before the search
  // and the `outputs` are overwritten with 0xFF bytes (NaN), so an element a variant does not write
  // shows; false for outputs the kernel also reads (in place).
  bool poisonOutputs = true;
  // Called after each variant's verifying launch (complete; the arrays hold its results): "" when
  // they are right, else why not.
  std::function<std::string(const RawVariant&)> check;
  std::string problem;      // what the arguments are ("n=1048576"), part of the key; empty: their array sizes
  std::string database;     // tuning database file; empty: the default (docs/api.md); "-": none
  bool useCached = true;    // the database's best for the key, when there is one, without a search
  size_t maxVariants = 0;   // 0: every variant of the space
  int warmup = 2, repeats = 20;
  double timingBudgetSeconds = 2;  // about how long timing one variant may take (fewer repeats, at least 3)
  std::function<void(const std::string&)> log;  // one line per variant
};

struct RawTuneCandidate {
  RawVariant variant;
  std::string text;     // "TILE=128 UNROLL=4", as the database records it
  std::string status;   // "verified", "wrong-result", "compile-failed", "launch-failed"
  std::string reason;   // why not verified
  double medianMs = 0, relativeError = 0, compileMs = 0;
  int registers = 0;
};

struct RawTuneResult {
  std::vector<RawTuneCandidate> candidates;  // measured now, in order (empty when from the database)
  std::optional<RawTuneCandidate> best;      // the fastest verified
  bool fromDatabase = false;                 // best is the database's, no search ran
  std::string kernelHash;                    // the key's hash (`rtcgc db show HASH`)
  // The NVRTC options of the best variant: the module's own, then -DMACRO=VALUE for each macro
  // (Context::module with these builds it). Empty without a best.
  std::vector<std::string> bestOptions;
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

  // Compiles CUDA C text (a raw module) for this device, or reads it from the kernel cache, and
  // loads it. Throws rtcg::CompileError with NVRTC's errors at their lines and columns of
  // options.fileName, rtcg::Error for a refused option.
  RawModule module(std::string_view cudaSource, const ModuleOptions& options = {});

  // Tunes options.function of a raw module over options.space with these arguments (as for
  // RawFunction::launch: rtcg::Array for anything an output or reference compares), in this
  // process, on a stream of its own; it waits for the device first (the arrays' producers on other
  // streams), and the arrays hold their values from before the search when it returns. Throws rtcg::Error for a bad space or request, or when a
  // variant faults (an illegal address leaves the device's context unusable: the search stops;
  // the variants measured before it are in the database).
  template <class... Args>
  RawTuneResult tuneModule(std::string_view cudaSource, const ModuleOptions& moduleOptions,
                           const RawTuneOptions& options, Args&&... args) {
    std::vector<detail::RawArg> refs;
    refs.reserve(sizeof...(Args));
    (refs.push_back(detail::rawArg(std::forward<Args>(args))), ...);
    return tuneModuleWith(cudaSource, moduleOptions, options, refs);
  }
  RawTuneResult tuneModuleWith(std::string_view cudaSource, const ModuleOptions& moduleOptions,
                               const RawTuneOptions& options, const std::vector<detail::RawArg>& args);

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
