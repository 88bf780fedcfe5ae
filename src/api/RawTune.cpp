// Context::tuneModuleWith: a raw module's function tuned over macro values (tune/RawSpace.h). Each
// variant is built through Context::module (the one NVRTC route, the kernel cache), verified on
// restored arguments (against a reference kernel's outputs and/or the caller's check), timed with
// cuda::benchmark as the tuner's worker times rtcg's candidates (warm-up, repeats within a budget,
// the L2 flushed between runs, the median), and recorded in the tuning database (tune/TuningDb.h).
// The search runs in this process: unlike rtcg's own candidates (generated code whose accesses are
// proved in bounds, measured in a worker process), a variant that faults ends it.
#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "api/RawModuleApi.h"
#include "api/ScheduleChoice.h"
#include "reference/Compare.h"
#include "runtime/Benchmark.h"
#include "runtime/CudaDriver.h"
#include "support/Error.h"
#include "tune/RawSpace.h"
#include "tune/TuningDb.h"

namespace rtcg {

namespace {

using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

RawVariant asMap(const raw::Variant& v) { return RawVariant(v.begin(), v.end()); }

// "f32[1048576] f32[1048576]": the array arguments' types and sizes, the default problem text.
std::string describeProblem(const std::vector<detail::RawArg>& args) {
  std::string out;
  for (const detail::RawArg& a : args)
    if (a.kind == detail::RawArg::Kind::Array)
      out += fmt::format("{}{}[{}]", out.empty() ? "" : " ", elementTypeName(a.type), a.count);
  return out.empty() ? "scalars" : out;
}

double defaultTolerance(ElementType t) {
  switch (t) {
    case ElementType::F32: return 1e-5;
    case ElementType::F64: return 1e-12;
    case ElementType::F16: return 1e-3;
    case ElementType::BF16: return 1e-2;
    case ElementType::I32:
    case ElementType::I64:
    case ElementType::I8:
    case ElementType::U8:
    case ElementType::U32: return 0;
  }
  return 0;
}

// An array argument's elements: integers exactly (compared exactly: through double, i64 values
// that differ above 2^53 compare equal), every other type as doubles.
struct Elements {
  std::vector<double> values;
  std::vector<int64_t> integers;
  bool exact = false;
};

Elements download(const detail::RawArg& a, const cuda::Stream& stream) {
  const size_t bytes = a.buffer->memory.bytes();
  std::string host(bytes, '\0');
  if (bytes) a.buffer->memory.copyToHostAsync(host.data(), bytes, &stream);
  stream.synchronize();
  Elements out;
  out.exact = a.type == ElementType::I32 || a.type == ElementType::I64 || a.type == ElementType::I8 ||
              a.type == ElementType::U8 || a.type == ElementType::U32;
  if (out.exact) out.integers.assign(a.count, 0);
  else out.values.assign(a.count, 0.0);
  auto convert = [&](auto zero) {
    using T = decltype(zero);
    for (size_t i = 0; i < a.count && (i + 1) * sizeof(T) <= bytes; ++i) {
      T v;
      std::memcpy(&v, host.data() + i * sizeof(T), sizeof(T));
      if constexpr (std::is_integral_v<T>) out.integers[i] = int64_t(v);
      else out.values[i] = double(v);
    }
  };
  switch (a.type) {
    case ElementType::F32: convert(float{}); break;
    case ElementType::F64: convert(double{}); break;
    case ElementType::I32: convert(int32_t{}); break;
    case ElementType::I64: convert(int64_t{}); break;
    case ElementType::F16: convert(f16{}); break;
    case ElementType::BF16: convert(bf16{}); break;
    case ElementType::I8: convert(int8_t{}); break;
    case ElementType::U8: convert(uint8_t{}); break;
    case ElementType::U32: convert(uint32_t{}); break;
  }
  return out;
}

// An output against the reference's: integers exactly, floats by relative L2 error.
Comparison compareElements(const Elements& out, const Elements& ref) {
  return out.exact ? compareExact(out.integers, ref.integers) : compare(out.values, ref.values);
}

void checkRequest(const RawTuneOptions& o, const std::vector<detail::RawArg>& args) {
  if (o.function.empty()) throw Error("raw tuning: name the function to tune (RawTuneOptions::function)");
  if (!o.geometry) throw Error("raw tuning: give the launch geometry of a variant (RawTuneOptions::geometry)");
  if (!o.reference.valid() && !o.check)
    throw Error("raw tuning: a variant's results must be verified: give a reference function (with the outputs to "
                "compare) or a check");
  if (o.reference.valid() && o.outputs.empty())
    throw Error("raw tuning: a reference function needs the outputs to compare (argument indices)");
  for (size_t i : o.outputs)
    if (i >= args.size() || args[i].kind != detail::RawArg::Kind::Array)
      throw Error(fmt::format("raw tuning: output {} is not an rtcg::Array argument (there are {} arguments; outputs "
                              "are counted from 0)",
                              i, args.size()));
  if (o.repeats < 1 || o.warmup < 0) throw Error("raw tuning: repeats must be at least 1 and warm-up runs at least 0");
}

// The search's state: its stream, the arguments' values from before it (restored before every
// verifying launch), and the reference's outputs.
struct Session {
  detail::ContextImpl& ctx;
  const RawTuneOptions& options;
  const std::vector<detail::RawArg>& args;
  cuda::Stream stream;
  std::vector<std::pair<size_t, cuda::DeviceBuffer>> snapshots;  // (argument, copy)
  std::vector<Elements> expected;                                // per output

  Session(detail::ContextImpl& c, const RawTuneOptions& o, const std::vector<detail::RawArg>& a)
      : ctx(c), options(o), args(a), stream(c.cuda) {
    ctx.cuda->synchronize();  // the arrays' producers, on the application's streams, are done
    for (size_t i = 0; i < args.size(); ++i)
      if (args[i].kind == detail::RawArg::Kind::Array && args[i].buffer && args[i].buffer->memory.bytes()) {
        const cuda::DeviceBuffer& from = args[i].buffer->memory;
        cuda::DeviceBuffer copy(ctx.cuda, from.bytes());
        copy.copyFromDeviceAsync(from, from.bytes(), &stream);
        snapshots.emplace_back(i, std::move(copy));
      }
    stream.synchronize();
  }

  // Every array as before the search.
  void restore() {
    for (auto& [i, copy] : snapshots) args[i].buffer->memory.copyFromDeviceAsync(copy, copy.bytes(), &stream);
  }
  // Before a verifying launch: restored, the outputs poisoned (NaN bytes) unless told otherwise.
  void reset() {
    restore();
    if (options.poisonOutputs)
      for (size_t i : options.outputs)
        if (args[i].buffer && args[i].buffer->memory.bytes()) args[i].buffer->memory.fill8Async(0xFF, &stream);
  }

  LaunchConfig onStream(LaunchConfig c) const {
    c.stream = stream.handle();
    return c;
  }

  void runReference() {
    reset();
    options.reference.enqueue(onStream(options.referenceConfig), args);
    stream.synchronize();
    for (size_t i : options.outputs) expected.push_back(download(args[i], stream));
  }

  // "" when the outputs match the reference's; else which output is off and how much.
  std::string compareOutputs(double& worst) {
    worst = 0;
    for (size_t k = 0; k < options.outputs.size(); ++k) {
      const detail::RawArg& a = args[options.outputs[k]];
      Comparison c = compareElements(download(a, stream), expected[k]);
      double tol = options.tolerance > 0 ? options.tolerance : defaultTolerance(a.type);
      worst = std::max(worst, c.relativeError);
      if (!c.passes(tol))
        return c.exact ? fmt::format("argument {}: {} against the reference (integers must be exact)",
                                     options.outputs[k], c.str())
                       : fmt::format("argument {}: {} > tolerance {:g} against the reference", options.outputs[k],
                                     c.str(), tol);
    }
    return "";
  }
};

// Compiles, verifies and times one variant into `c`. A fault (a sticky CUDA error) is rethrown:
// the context is unusable and the search cannot go on.
void measure(Context& context, Session& s, std::string_view source, const ModuleOptions& moduleOptions,
             const raw::Variant& v, RawTuneCandidate& c, CandidateRecord& rec) {
  const RawTuneOptions& o = s.options;
  ModuleOptions mo = moduleOptions;
  for (std::string& d : raw::variantOptions(v)) mo.nvrtcOptions.push_back(std::move(d));
  mo.log = [](const std::string&) {};  // a variant's warnings are the module's; not repeated per variant
  RawFunction fn;
  Clock::time_point t0 = Clock::now();
  try {
    fn = context.module(source, mo).function(o.function);
  } catch (const Error& e) {
    rec.status = CandidateStatus::CompileFailed;
    rec.reason = e.what();
    return;
  }
  rec.compileMs = msSince(t0);
  LaunchConfig config = s.onStream(o.geometry(c.variant));
  double firstMs = 0;
  try {
    s.reset();
    t0 = Clock::now();
    fn.enqueue(config, s.args);
    s.stream.synchronize();
    firstMs = msSince(t0);
  } catch (const cuda::CudaError& e) {
    if (e.sticky()) throw;
    rec.status = CandidateStatus::LaunchFailed;
    rec.reason = e.what();
    return;
  } catch (const Error& e) {
    rec.status = CandidateStatus::LaunchFailed;
    rec.reason = e.what();
    return;
  }
  std::string wrong;
  if (o.reference.valid()) wrong = s.compareOutputs(rec.relativeError);
  if (wrong.empty() && o.check) wrong = o.check(c.variant);
  if (!wrong.empty()) {
    rec.status = CandidateStatus::WrongResult;
    rec.reason = wrong;
    return;
  }
  // As the tuner's worker times: fewer repeats (at least 3) for slow kernels, within the budget.
  int repeats = o.repeats, warmup = o.warmup;
  const double budgetMs = o.timingBudgetSeconds * 1e3;
  if (firstMs > 0 && firstMs * repeats > budgetMs) repeats = std::clamp(int(budgetMs / firstMs), 3, o.repeats);
  cuda::BenchmarkOptions bo;
  bo.warmup = warmup;
  bo.repeats = repeats;
  cuda::BenchmarkResult t;
  try {
    t = cuda::benchmark(s.stream, [&](const cuda::Stream& st, int) { fn.enqueue(s.onStream(config), s.args); }, bo);
  } catch (const cuda::CudaError& e) {
    if (e.sticky()) throw;
    rec.status = CandidateStatus::LaunchFailed;
    rec.reason = std::string("while timing: ") + e.what();
    return;
  }
  rec.status = CandidateStatus::Verified;
  rec.medianMs = t.medianMs;
  rec.registers = fn.registers();
}

RawTuneCandidate candidateOf(const raw::Variant& v, const CandidateRecord& r) {
  RawTuneCandidate c;
  c.variant = asMap(v);
  c.text = r.schedule;
  c.status = statusName(r.status);
  c.reason = r.reason;
  c.medianMs = r.medianMs;
  c.relativeError = r.relativeError;
  c.compileMs = r.compileMs;
  c.registers = r.registers;
  return c;
}

}  // namespace

RawTuneResult Context::tuneModuleWith(std::string_view cudaSource, const ModuleOptions& moduleOptions,
                                      const RawTuneOptions& options, const std::vector<detail::RawArg>& args) {
  detail::ContextImpl& ctx = *impl_;
  checkRequest(options, args);
  const raw::TuneSpace space(options.space.begin(), options.space.end());
  std::function<bool(const raw::Variant&)> keep;
  if (options.restrict) keep = [&](const raw::Variant& v) { return options.restrict(asMap(v)); };
  const std::vector<raw::Variant> variants = raw::enumerateSpace(space, keep, options.maxVariants);
  if (variants.empty()) throw Error("raw tuning: the restriction keeps no variant of the space");
  const std::string fileName = moduleOptions.fileName.empty() ? "module.cu" : moduleOptions.fileName;
  const std::string text(cudaSource);
  const TuningKey key = raw::rawTuningKey(text, fileName, moduleOptions.nvrtcOptions, options.function, space,
                                          options.problem.empty() ? describeProblem(args) : options.problem,
                                          ctx.cuda->device().properties());
  std::optional<TuningDb> db;
  if (options.database != "-") db.emplace(options.database.empty() ? TuningDb::defaultPath() : options.database);

  RawTuneResult result;
  result.kernelHash = key.kernelHash;
  auto finish = [&](const raw::Variant& v, const CandidateRecord& best) {
    result.best = candidateOf(v, best);
    result.bestOptions = moduleOptions.nvrtcOptions;
    for (std::string& d : raw::variantOptions(v)) result.bestOptions.push_back(std::move(d));
  };
  if (options.useCached && db)
    if (std::optional<CandidateRecord> best = db->best(key)) {
      result.fromDatabase = true;
      finish(raw::parseVariant(best->schedule, space), *best);
      return result;
    }

  Session session(ctx, options, args);
  if (options.reference.valid()) session.runReference();
  const int64_t searchId =
      db ? db->beginSearch(key, fmt::format("raw module {}; space {}; {} variants", fileName, raw::spaceText(space),
                                            variants.size()))
         : 0;
  Clock::time_point start = Clock::now();
  std::optional<size_t> bestIndex;
  for (const raw::Variant& v : variants) {
    CandidateRecord rec;
    rec.schedule = raw::variantText(v);
    rec.searchId = searchId;
    RawTuneCandidate c;
    c.variant = asMap(v);
    try {
      measure(*this, session, cudaSource, moduleOptions, v, c, rec);
    } catch (const cuda::CudaError& e) {
      rec.status = CandidateStatus::Faulted;
      rec.reason = e.what();
      if (db) db->record(key, rec), db->endSearch(searchId, msSince(start) / 1e3, int(result.candidates.size() + 1));
      throw Error(fmt::format("raw tuning of '{}': variant {} faulted ({}); the device's context is unusable and the "
                              "search stops (the variants measured so far are in the tuning database)",
                              options.function, rec.schedule, e.what()));
    }
    if (db) db->record(key, rec);
    result.candidates.push_back(candidateOf(v, rec));
    if (options.log)
      options.log(rec.status == CandidateStatus::Verified
                      ? fmt::format("{}: {:.4f} ms", rec.schedule, rec.medianMs)
                      : fmt::format("{}: {}: {}", rec.schedule, statusName(rec.status), rec.reason));
    if (rec.status == CandidateStatus::Verified &&
        (!bestIndex || rec.medianMs < result.candidates[*bestIndex].medianMs))
      bestIndex = result.candidates.size() - 1;
  }
  if (db) db->endSearch(searchId, msSince(start) / 1e3, int(result.candidates.size()));
  session.restore();  // the application gets its arrays back as they were
  session.stream.synchronize();
  if (bestIndex) {  // candidates[i] is variants[i]
    finish(variants[*bestIndex], CandidateRecord{});
    result.best = result.candidates[*bestIndex];
  }
  return result;
}

}  // namespace rtcg
