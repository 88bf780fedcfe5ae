#include "reference/Reference.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "reference/Bytecode.h"
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

ReferenceProgram::ReferenceProgram(const Kernel& bound)
    : compiled_(std::make_unique<CompiledKernel>(refvm::compileKernel(bound))) {}
ReferenceProgram::~ReferenceProgram() = default;
ReferenceProgram::ReferenceProgram(ReferenceProgram&&) noexcept = default;
ReferenceProgram& ReferenceProgram::operator=(ReferenceProgram&&) noexcept = default;

namespace {

// Runs the outermost loop of a nest over [lo, hi) on `threads` threads. Chunks are claimed in
// increasing order, so when points fail, every chunk before the failing one has run completely
// and the error reported is the one a sequential run would hit first.
void runOuterLoop(const CompiledKernel& k, const CompiledNest& nest, const std::vector<Slot>& frame0,
                  const ArrayView* views, int64_t lo, int64_t hi, int threads) {
  const int64_t n = hi - lo;
  if (threads <= 1 || n < 2) {
    std::vector<Slot> frame = frame0;
    for (int64_t v = lo; v < hi; ++v) {
      frame[nest.outerVar].i = v;
      refvm::execute(k, nest.body, frame.data(), views);
    }
    return;
  }
  threads = int(std::min<int64_t>(threads, n));
  const int64_t chunk = std::max<int64_t>(1, n / (int64_t(threads) * 16));
  std::atomic<int64_t> next{lo};
  std::atomic<bool> failed{false};
  std::mutex mu;
  int64_t firstBad = std::numeric_limits<int64_t>::max();
  std::exception_ptr error;

  auto worker = [&] {
    std::vector<Slot> frame = frame0;
    while (!failed.load(std::memory_order_relaxed)) {
      int64_t start = next.fetch_add(chunk);
      if (start >= hi) break;
      int64_t end = std::min(hi, start + chunk);
      for (int64_t v = start; v < end; ++v) {
        frame[nest.outerVar].i = v;
        try {
          refvm::execute(k, nest.body, frame.data(), views);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mu);
          if (v < firstBad) {
            firstBad = v;
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

}  // namespace

ReferenceResult ReferenceProgram::run(HostArgs& args, const ReferenceOptions& options) const {
  const CompiledKernel& k = *compiled_;
  const int numParams = int(k.shapes.size());
  if (args.numParams() != numParams)
    throw Error(fmt::format("kernel '{}' has {} parameters, the arguments {}", k.kernelName, numParams, args.numParams()));

  // Float arrays are worked on in double; integer arrays in place.
  std::vector<std::vector<double>> work(numParams);
  std::vector<ArrayView> views(numParams);
  for (int p = 0; p < numParams; ++p) {
    if (!args.isArray(p)) continue;
    HostArray& a = args.array(p);
    if (a.shape() != k.shapes[p])
      throw Error(fmt::format("argument '{}' is {}, kernel '{}' expects shape [{}]", k.paramNames[p], a.describe(),
                              k.kernelName, fmt::join(k.shapes[p], ", ")));
    views[p].type = a.type();
    if (isFloat(a.type())) {
      work[p] = a.toDoubles();
      views[p].data = work[p].data();
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

  int threads = options.threads > 0 ? options.threads : int(std::max(1u, std::thread::hardware_concurrency()));
  auto t0 = std::chrono::steady_clock::now();
  for (const CompiledNest& nest : k.nests) {
    if (nest.outerVar < 0) {
      std::vector<Slot> f = frame;
      refvm::execute(k, nest.body, f.data(), views.data());
      continue;
    }
    refvm::execute(k, nest.prelude, frame.data(), views.data());
    runOuterLoop(k, nest, frame, views.data(), frame[nest.outerLo].i, frame[nest.outerHi].i, threads);
  }
  ReferenceResult result;
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  for (int p = 0; p < numParams; ++p) {
    if (!args.isArray(p) || !k.written[p]) continue;
    HostArray& a = args.array(p);
    ReferenceOutput out{p, k.paramNames[p], {}};
    if (isFloat(a.type())) {
      a.assignDoubles(work[p]);
      out.values = std::move(work[p]);
    } else {
      out.values = a.toDoubles();
    }
    result.outputs.push_back(std::move(out));
  }
  return result;
}

ReferenceResult runReference(const Kernel& bound, HostArgs& args, const ReferenceOptions& options) {
  return ReferenceProgram(bound).run(args, options);
}

}  // namespace rtcg
