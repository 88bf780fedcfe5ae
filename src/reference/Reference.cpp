#include "reference/Reference.h"

#include "ir/DataRanges.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <random>
#include <set>
#include <unordered_set>

#include "ir/Analysis.h"
#include "ir/IntOps.h"
#include "ir/Walk.h"
#include "reference/Bytecode.h"
#include "reference/RandomFill.h"
#include "support/Error.h"

namespace rtcg {

using refvm::ArrayView;
using refvm::CompiledKernel;
using refvm::CompiledNest;
using refvm::Slot;

const std::vector<double>& ReferenceResult::values(const std::string& name) const {
  for (const ReferenceOutput& o : outputs)
    if (o.name == name) return o.values;
  throw Error(fmt::format("the reference result has no output '{}'", name));
}

int64_t ReferenceOutput::computedCount() const {
  if (computed.empty()) return int64_t(values.size());
  return int64_t(std::count(computed.begin(), computed.end(), uint8_t(1)));
}

namespace {

// The arrays a nest loads from, anywhere: loop bounds, values, indices.
std::set<int> arraysRead(const LoopNest& nest) {
  std::set<int> read;
  auto visit = [&](const Expr& e) {
    visitExprs(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Load) read.insert(x->array);
    });
  };
  for (const Loop& l : nest.loops) {
    visit(l.lo);
    visit(l.hi);
  }
  for (const Stmt& st : nest.body) {
    visit(st.value);
    for (const Expr& i : st.indices) visit(i);
  }
  return read;
}

// True if `st` stores to every element of its array, each dimension indexed by its own parallel
// loop of `nest` running over the whole extent (or by 0, for an extent of 1), with every loop of
// the nest used: the points then write each element once.
bool writesWholeArray(const Kernel& k, const LoopNest& nest, const Stmt& st) {
  const std::vector<int64_t> shape = arrayShape(k, st.array);
  if (st.indices.size() != shape.size()) return false;
  std::set<int> used;
  for (size_t d = 0; d < shape.size(); ++d) {
    std::optional<AffineForm> f = toAffine(st.indices[d]);
    if (!f || f->constant != 0) return false;
    if (f->isConstant()) {
      if (shape[d] != 1) return false;
      continue;
    }
    if (f->coeffs.size() != 1 || f->coeffs.begin()->second != 1) return false;
    const int id = f->coeffs.begin()->first;
    auto loop = std::find_if(nest.loops.begin(), nest.loops.end(), [&](const Loop& l) { return l.id == id; });
    if (loop == nest.loops.end() || !used.insert(id).second) return false;
    std::optional<AffineForm> lo = toAffine(loop->lo), hi = toAffine(loop->hi);
    if (!lo || !hi || !lo->isConstant() || !hi->isConstant() || lo->constant != 0 || hi->constant != shape[d])
      return false;
  }
  return used.size() == nest.loops.size();
}

}  // namespace

std::string samplingObstacle(const Kernel& bound) {
  // A sample would leave the other points' ranges unchecked, and a GPU run reads through them.
  if (hasDataRanges(bound)) return "the kernel has ranges that read arrays: every one is checked before a GPU run";
  std::map<int, size_t> writer;  // array -> the first nest writing it
  for (size_t n = 0; n < bound.nests.size(); ++n) {
    const LoopNest& nest = bound.nests[n];
    for (int a : arraysRead(nest)) {
      auto w = writer.find(a);
      if (w != writer.end() && w->second < n)
        return fmt::format("nest {} reads '{}', which nest {} writes (it would read elements the sample left unwritten)",
                           n + 1, bound.params[size_t(a)].name, w->second + 1);
    }
    for (const Stmt& st : nest.body) {
      if (st.kind != StmtKind::Store) continue;
      auto [w, fresh] = writer.emplace(st.array, n);
      if (!fresh && w->second != n)
        return fmt::format("nests {} and {} both write '{}'", w->second + 1, n + 1, bound.params[size_t(st.array)].name);
    }
  }
  for (size_t p = 0; p < bound.params.size(); ++p) {
    const Param& param = bound.params[p];
    if (!param.isArray() || param.mode != ArrayMode::Out) continue;
    bool whole = false;
    for (const LoopNest& nest : bound.nests)
      for (const Stmt& st : nest.body)
        whole = whole || (st.kind == StmtKind::Store && st.array == int(p) && writesWholeArray(bound, nest, st));
    if (!whole)
      return fmt::format("'{}' is not provably written everywhere (it is not stored by loops over its whole index "
                         "space), so elements a GPU kernel leaves unwritten outside the sample would go unseen",
                         param.name);
  }
  // An accumulation's elements collect the updates of every point: a sample's would be partial.
  for (size_t n = 0; n < bound.nests.size(); ++n)
    for (const Stmt& st : bound.nests[n].body)
      if (st.kind == StmtKind::Store && st.accumulate)
        return fmt::format("nest {} accumulates into '{}': an element sums the updates of all the points, a sample's "
                           "would be partial", n + 1, bound.params[size_t(st.array)].name);
  // Stores through an indirect index are checked for two points writing one element
  // (AccessSite::claims) only among the points that run.
  for (size_t n = 0; n < bound.nests.size(); ++n) {
    if (bound.nests[n].loops.empty()) continue;
    for (const Access& a : collectAccesses(bound, int(n)))
      if (a.isWrite && a.indirect)
        return fmt::format("nest {} stores to '{}' through an indirect index: only a full run checks that no two of "
                           "its points store to the same element", n + 1, bound.params[size_t(a.array)].name);
  }
  return {};
}

std::vector<int64_t> sampleOuterValues(int64_t lo, int64_t hi, int64_t count, uint64_t seed) {
  RTCG_ASSERT(count >= 2, "a sample of the outer loop needs its first and last value");
  const int64_t n = hi - lo;
  std::vector<int64_t> values;
  if (n <= 0) return values;
  if (count > n / 2) {
    values.resize(size_t(n));
    for (int64_t i = 0; i < n; ++i) values[size_t(i)] = lo + i;
    return values;
  }
  std::unordered_set<int64_t> chosen{lo, hi - 1};
  // Evenly strided: spread over the whole range whatever the seed.
  const int64_t strided = (count - 2) / 2;
  for (int64_t t = 1; t <= strided; ++t) chosen.insert(lo + (n - 1) * t / (strided + 1));
  // Random: rows a fixed stride would miss (a tile boundary pattern aligned with it).
  std::mt19937_64 rng(seed ^ 0x5a3b1edULL);
  std::uniform_int_distribution<int64_t> pick(lo, hi - 1);
  while (int64_t(chosen.size()) < count) chosen.insert(pick(rng));
  values.assign(chosen.begin(), chosen.end());
  std::sort(values.begin(), values.end());
  return values;
}

ReferenceProgram::ReferenceProgram(const Kernel& bound)
    : compiled_(std::make_unique<CompiledKernel>(refvm::compileKernel(bound))),
      samplingObstacle_(samplingObstacle(bound)) {
  for (size_t n = 0; n < bound.nests.size(); ++n) scans_.push_back(recogniseScan(bound, int(n)));
}
ReferenceProgram::~ReferenceProgram() = default;
ReferenceProgram::ReferenceProgram(ReferenceProgram&&) noexcept = default;
ReferenceProgram& ReferenceProgram::operator=(ReferenceProgram&&) noexcept = default;

namespace {

// The bounds [lo, hi) of a nest's outermost loop: constants, as sizes are bound and no loop
// encloses it (the prelude reads no array and no scalar).
std::pair<int64_t, int64_t> outerRange(const CompiledKernel& k, const CompiledNest& nest) {
  std::vector<Slot> f = k.frameTemplate;
  refvm::execute(k, nest.prelude, f.data(), nullptr);
  return {f[nest.outerLo].i, f[nest.outerHi].i};
}

// Runs the outermost loop of a nest for the n values lo, lo + 1, ... (values == nullptr) or
// values[0..n), on `threads` threads. Chunks are claimed in increasing order, so when points
// fail, every chunk before the failing one has run completely and the error reported is the one
// a sequential run would hit first.
void runOuterLoop(const CompiledKernel& k, const CompiledNest& nest, const std::vector<Slot>& frame0,
                  const ArrayView* views, int64_t lo, const int64_t* values, int64_t n, int threads, bool trackWrites) {
  auto valueAt = [&](int64_t i) { return values ? values[i] : lo + i; };
  if (threads <= 1 || n < 2) {
    std::vector<Slot> frame = frame0;
    for (int64_t i = 0; i < n; ++i) {
      frame[nest.outerVar].i = valueAt(i);
      refvm::execute(k, nest.body, frame.data(), views, trackWrites);
    }
    return;
  }
  threads = int(std::min<int64_t>(threads, n));
  const int64_t chunk = std::max<int64_t>(1, n / (int64_t(threads) * 16));
  std::atomic<int64_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mu;
  int64_t firstBad = std::numeric_limits<int64_t>::max();
  std::exception_ptr error;

  auto worker = [&] {
    std::vector<Slot> frame = frame0;
    while (!failed.load(std::memory_order_relaxed)) {
      int64_t start = next.fetch_add(chunk);
      if (start >= n) break;
      int64_t end = std::min(n, start + chunk);
      for (int64_t i = start; i < end; ++i) {
        frame[nest.outerVar].i = valueAt(i);
        try {
          refvm::execute(k, nest.body, frame.data(), views, trackWrites);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (i < firstBad) {
            firstBad = i;
            error = std::current_exception();
          }
          failed = true;
          break;
        }
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

// A scan nest (ir/Scan.h) in one pass: each line combined from its start in order, as the
// triangular form's reduction combines each of its points' values (floats in double, integers
// wrapping), so the results are the same. A segmented scan's heads are checked to be a
// segmentation of each line (ir/Scan.h).
void runScan(const CompiledKernel& k, const ScanForm& f, const ArrayView* views, bool track) {
  const ArrayView &in = views[f.in], &out = views[f.out];
  const int32_t* head = f.head >= 0 ? static_cast<const int32_t*>(views[f.head].data) : nullptr;
  const bool fl = isFloat(f.type);
  auto get = [&](int64_t at, double& d, int64_t& i) {
    if (fl) d = static_cast<const double*>(in.data)[at];
    else if (f.type == ScalarType::U32) i = static_cast<const uint32_t*>(in.data)[at];
    else i = f.type == ScalarType::I32 ? static_cast<const int32_t*>(in.data)[at] : static_cast<const int64_t*>(in.data)[at];
  };
  auto put = [&](int64_t at, double d, int64_t i) {
    if (fl) static_cast<double*>(out.data)[at] = d;
    else if (f.type == ScalarType::I32) static_cast<int32_t*>(out.data)[at] = int32_t(uint32_t(uint64_t(i)));
    else if (f.type == ScalarType::U32) static_cast<uint32_t*>(out.data)[at] = uint32_t(uint64_t(i));
    else static_cast<int64_t*>(out.data)[at] = i;
    if (track && out.written) out.written[at] = 1;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const int64_t imin = f.type == ScalarType::I32   ? std::numeric_limits<int32_t>::min()
                       : f.type == ScalarType::U32 ? 0
                                                   : std::numeric_limits<int64_t>::min();
  const int64_t imax = f.type == ScalarType::I32   ? std::numeric_limits<int32_t>::max()
                       : f.type == ScalarType::U32 ? int64_t(std::numeric_limits<uint32_t>::max())
                                                   : std::numeric_limits<int64_t>::max();
  double did = 0;
  int64_t iid = 0;
  switch (f.op) {
    case ReduceOp::Sum: did = 0, iid = 0; break;
    case ReduceOp::Product: did = 1, iid = 1; break;
    case ReduceOp::Max: did = -inf, iid = imin; break;
    case ReduceOp::Min: did = inf, iid = imax; break;
  }
  auto combine = [&](double& da, int64_t& ia, double dv, int64_t iv) {
    switch (f.op) {
      case ReduceOp::Sum: fl ? void(da = da + dv) : void(ia = wrapAdd(ia, iv)); break;
      case ReduceOp::Product: fl ? void(da = da * dv) : void(ia = wrapMul(ia, iv)); break;
      case ReduceOp::Max: fl ? void(da = (da > dv || std::isnan(da)) ? da : dv) : void(ia = std::max(ia, iv)); break;
      case ReduceOp::Min: fl ? void(da = (da < dv || std::isnan(da)) ? da : dv) : void(ia = std::min(ia, iv)); break;
    }
  };
  for (int64_t line = 0; line < f.lines(); ++line) {
    const int64_t base = line / f.inner * f.length * f.inner + line % f.inner;
    double da = did;
    int64_t ia = iid;
    for (int64_t p = 0; p < f.length; ++p) {
      const int64_t at = base + p * f.inner;
      if (head) {
        const int64_t h = head[at], before = p > 0 ? head[at - f.inner] : 0;
        if (h != p && (p == 0 || h != before))
          throw Error(fmt::format("kernel '{}': segmented scan: '{}' holds {} at flat element {} (position {} of its line): "
                                  "a segment's start is the position itself or, within a segment, the value before it ({})",
                                  k.kernelName, k.paramNames[size_t(f.head)], h, at, p, p == 0 ? int64_t(0) : before));
        if (h == p) da = did, ia = iid;
      }
      double dv = 0;
      int64_t iv = 0;
      get(at, dv, iv);
      if (f.exclusive) put(at, da, ia);
      combine(da, ia, dv, iv);
      if (!f.exclusive) put(at, da, ia);
    }
  }
}

// Calls work(begin, end) for `threads` consecutive ranges covering [0, n), each range but the
// first on a thread of its own, where each has at least 2^18 elements (else one call).
template <class Work>
void inRanges(int64_t n, int threads, Work work) {
  constexpr int64_t kMinPerThread = int64_t(1) << 18;
  threads = int(std::min<int64_t>(threads, n / kMinPerThread));
  if (threads <= 1) {
    work(int64_t(0), n);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, n * t / threads, n * (t + 1) / threads);
  work(int64_t(0), n / threads);
  for (std::thread& t : pool) t.join();
}

// a.toDoubles() and a.assignDoubles(values) on `threads` threads for f32 and f64 arrays (the
// same values: each element converted alone), on this one for the others. The run converts every
// float array it reads or writes (an SGEMM of 4096: 50 million elements each way).
void convertRange(const HostArray& a, double* out, int64_t begin, int64_t end) {
  if (a.type() == ScalarType::F64) {
    std::copy(a.as<double>() + begin, a.as<double>() + end, out + begin);
  } else {
    const float* p = a.as<float>();
    for (int64_t i = begin; i < end; ++i) out[i] = p[i];
  }
}

std::vector<double> doublesOf(const HostArray& a, int threads) {
  if (a.type() != ScalarType::F32 && a.type() != ScalarType::F64) return a.toDoubles();
  std::vector<double> out(size_t(a.size()));
  inRanges(a.size(), threads, [&](int64_t begin, int64_t end) { convertRange(a, out.data(), begin, end); });
  return out;
}

// The same for an array the run only reads, in storage left uninitialized: a std::vector's zero
// fill touches every page first on this thread (for 400 MB of doubles, most of the conversion's
// time), the threads' conversion touches them here.
std::unique_ptr<double[]> readOnlyDoublesOf(const HostArray& a, int threads) {
  auto out = std::make_unique_for_overwrite<double[]>(size_t(a.size()));
  if (a.type() != ScalarType::F32 && a.type() != ScalarType::F64) {
    const std::vector<double> v = a.toDoubles();
    std::copy(v.begin(), v.end(), out.get());
    return out;
  }
  inRanges(a.size(), threads, [&](int64_t begin, int64_t end) { convertRange(a, out.get(), begin, end); });
  return out;
}

void assignDoubles(HostArray& a, const std::vector<double>& values, int threads) {
  if ((a.type() != ScalarType::F32 && a.type() != ScalarType::F64) || int64_t(values.size()) != a.size()) {
    a.assignDoubles(values);  // (which reports a size mismatch)
    return;
  }
  inRanges(a.size(), threads, [&](int64_t begin, int64_t end) {
    if (a.type() == ScalarType::F64) {
      std::copy(values.begin() + begin, values.begin() + end, a.as<double>() + begin);
    } else {
      float* p = a.as<float>();
      for (int64_t i = begin; i < end; ++i) p[i] = float(values[size_t(i)]);
    }
  });
}

}  // namespace

ReferenceResult ReferenceProgram::run(HostArgs& args, const ReferenceOptions& options) const {
  const CompiledKernel& k = *compiled_;
  const int numParams = int(k.shapes.size());
  if (args.numParams() != k.signatureParams)
    throw Error(fmt::format("kernel '{}' has {} parameters, the arguments {}", k.kernelName, k.signatureParams,
                            args.numParams()));
  // The kernel's locals (IR.h) live for this run only, poisoned so that an element no nest
  // writes shows as NaN / the sentinel wherever it is read.
  std::vector<HostArray> locals;
  for (int p = k.signatureParams; p < numParams; ++p) {
    locals.emplace_back(k.types[size_t(p)], k.shapes[p]);
    poison(locals.back());
  }
  auto isArray = [&](int p) { return p >= k.signatureParams || args.isArray(p); };
  auto arrayOf = [&](int p) -> HostArray& { return p >= k.signatureParams ? locals[size_t(p - k.signatureParams)] : args.array(p); };

  const int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  // Float arrays are worked on in double (converted on the run's threads: an SGEMM of 4096's three
  // arrays are 50 million elements); integer arrays in place.
  std::vector<std::vector<double>> work(numParams);
  std::vector<std::unique_ptr<double[]>> readOnlyWork(numParams);  // arrays the kernel only reads
  std::vector<ArrayView> views(numParams);
  for (int p = 0; p < numParams; ++p) {
    if (!isArray(p)) continue;
    HostArray& a = arrayOf(p);
    if (a.shape() != k.shapes[p])
      throw Error(fmt::format("argument '{}' is {}, kernel '{}' expects shape [{}]", k.paramNames[p], a.describe(),
                              k.kernelName, fmt::join(k.shapes[p], ", ")));
    views[p].type = a.type();
    if (isFloat(a.type())) {
      if (k.written[p]) {
        work[p] = doublesOf(a, threads);
        views[p].data = work[p].data();
      } else {
        readOnlyWork[p] = readOnlyDoublesOf(a, threads);
        views[p].data = readOnlyWork[p].get();
      }
    } else {
      views[p].data = a.data();
    }
  }

  std::vector<Slot> frame = k.frameTemplate;
  for (const auto& [param, reg] : k.scalarRegs) {
    const ScalarValue& s = args.scalar(param);
    if (isFloat(s.type)) frame[reg].f = s.f;
    else frame[reg].i = s.i;
  }

  ReferenceResult result;

  // The outer loop values each nest runs: a sample, or all of them (empty list).
  std::vector<std::vector<int64_t>> sample(k.nests.size());
  bool sampled = false;
  if (options.sampleOuterValues > 0) {
    RTCG_ASSERT(options.sampleOuterValues >= 2, "a sample needs at least 2 outer values");
    if (!samplingObstacle_.empty()) {
      result.fullReason = samplingObstacle_;
    } else {
      int64_t largest = 0;
      for (size_t n = 0; n < k.nests.size(); ++n) {
        if (k.nests[n].outerVar < 0) continue;
        const auto [lo, hi] = outerRange(k, k.nests[n]);
        std::vector<int64_t> values = sampleOuterValues(lo, hi, options.sampleOuterValues, options.sampleSeed + n);
        if (int64_t(values.size()) < hi - lo) sampled = true;
        largest = std::max(largest, hi - lo);
        sample[n] = std::move(values);
      }
      if (!sampled) {
        result.fullReason =
            largest == 0 ? std::string("no nest has an outer loop with values to sample")
                         : fmt::format("a sample of {} outer loop values would run (almost) every point: the outer "
                                       "loops have at most {} values", options.sampleOuterValues, largest);
        for (std::vector<int64_t>& s : sample) s.clear();
      }
    }
  }
  // Sampled runs mark the elements they write, and so do full runs that count unwritten ones.
  const bool track = sampled || options.countUnwritten;
  std::vector<std::vector<uint8_t>> written(numParams);
  if (track)
    for (int p = 0; p < numParams; ++p)
      if (isArray(p) && k.written[p]) {
        written[p].assign(size_t(arrayOf(p).size()), 0);
        views[p].written = written[p].data();
      }

  auto t0 = std::chrono::steady_clock::now();
  for (size_t n = 0; n < k.nests.size(); ++n) {
    const CompiledNest& nest = k.nests[n];
    if (scans_[n]) {  // every line in one pass, sampled or not (ir/Scan.h)
      runScan(k, *scans_[n], views.data(), track);
      refvm::execute(k, nest.prelude, frame.data(), views.data());
      const int64_t values = std::max<int64_t>(0, frame[nest.outerHi].i - frame[nest.outerLo].i);
      result.outerValuesTotal += values, result.outerValuesRun += values;
      continue;
    }
    if (nest.outerVar < 0) {
      std::vector<Slot> f = frame;
      refvm::execute(k, nest.body, f.data(), views.data(), track);
      continue;
    }
    refvm::execute(k, nest.prelude, frame.data(), views.data());
    const int64_t lo = frame[nest.outerLo].i, hi = frame[nest.outerHi].i;
    result.outerValuesTotal += std::max<int64_t>(0, hi - lo);
    // Arrays stored through an indirect index: which point wrote each element, to catch two
    // points writing the same one. Such a nest runs on one thread: the record is not shared
    // between threads, and the conflict reported is the first in the loops' order.
    std::vector<std::vector<int64_t>> owners(nest.claimed.size());
    for (size_t c = 0; c < nest.claimed.size(); ++c) {
      const int a = nest.claimed[c];
      owners[c].assign(size_t(arrayOf(a).size()) * size_t(nest.pointWidth + 1), 0);
      views[a].owners = owners[c].data();
    }
    const int nestThreads = nest.claimed.empty() && !nest.accumulates ? threads : 1;
    if (sampled) {
      runOuterLoop(k, nest, frame, views.data(), lo, sample[n].data(), int64_t(sample[n].size()), nestThreads, true);
      result.outerValuesRun += int64_t(sample[n].size());
    } else {
      runOuterLoop(k, nest, frame, views.data(), lo, nullptr, std::max<int64_t>(0, hi - lo), nestThreads, track);
      result.outerValuesRun += std::max<int64_t>(0, hi - lo);
    }
    for (int a : nest.claimed) views[a].owners = nullptr;
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.sampled = sampled;
  if (sampled) result.outerValues = std::move(sample);

  for (int p = 0; p < k.signatureParams; ++p) {  // the outputs: the locals are gone with the run
    if (!args.isArray(p) || !k.written[p]) continue;
    HostArray& a = args.array(p);
    ReferenceOutput out;
    out.param = p, out.name = k.paramNames[p];
    if (sampled) {
      out.computed = std::move(written[p]);
    } else if (options.countUnwritten) {
      out.unwritten = std::count(written[p].begin(), written[p].end(), uint8_t(0));
      auto first = std::find(written[p].begin(), written[p].end(), uint8_t(0));
      if (first != written[p].end()) out.firstUnwritten = first - written[p].begin();
    }
    if (isFloat(a.type())) {
      assignDoubles(a, work[p], threads);
      out.values = std::move(work[p]);
    } else {
      out.values = a.toDoubles();
      out.integers.resize(size_t(a.size()));
      for (int64_t i = 0; i < a.size(); ++i) out.integers[size_t(i)] = a.getInt(i);
    }
    result.outputs.push_back(std::move(out));
  }
  return result;
}

Comparison compareWithReference(const HostArray& out, const ReferenceOutput& ref, Unchecked unchecked) {
  if (isIntegral(out.type()) || isNarrowInt(out.type())) {
    if (ref.integers.size() != ref.values.size())
      throw Error(fmt::format("the reference of integer output '{}' has no exact values", ref.name));
    return ref.computed.empty() ? compareExact(out, ref.integers) : compareExact(out, ref.integers, ref.computed, unchecked);
  }
  return ref.computed.empty() ? compare(out, ref.values) : compare(out, ref.values, ref.computed, unchecked);
}

std::vector<int64_t> ReferenceProgram::outerExtents() const {
  const CompiledKernel& k = *compiled_;
  std::vector<int64_t> extents;
  for (const CompiledNest& nest : k.nests) {
    if (nest.outerVar < 0) {
      extents.push_back(1);
      continue;
    }
    const auto [lo, hi] = outerRange(k, nest);
    extents.push_back(std::max<int64_t>(0, hi - lo));
  }
  return extents;
}

ReferenceResult runReference(const Kernel& bound, HostArgs& args, const ReferenceOptions& options) {
  return ReferenceProgram(bound).run(args, options);
}

}  // namespace rtcg
