#include "reference/Compare.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <system_error>
#include <thread>
#include <type_traits>

#include <fmt/format.h>

#include "reference/RandomFill.h"
#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg {

std::string Comparison::str() const {
  std::string s = exact ? fmt::format("mismatched {} of {}, max abs {:.3g}", mismatched, count, maxAbsError)
                        : fmt::format("rel {:.3g}, max abs {:.3g}, non-finite {} of {}", relativeError, maxAbsError,
                                      nonFinite, count);
  if (sampled) s += fmt::format(" checked, unwritten {} of {} unchecked", unwritten, unchecked);
  return s;
}

bool Comparison::passes(double tolerance) const {
  if (nonFinite != 0 || unwritten != 0) return false;
  return exact ? mismatched == 0 : relativeError <= tolerance;
}

namespace {

// The element loops run over fixed chunks of the array, each with its own partial sums, and the
// partials are added in chunk order: the result is the same bit for bit whatever the number of
// threads (the tuner compares 16M-element outputs for every candidate).
constexpr size_t kChunkElements = size_t(1) << 16;
// Within a chunk, sums go to kLanes accumulators (element i to lane i % kLanes), added in lane
// order: independent additions the compiler can overlap, in an order fixed by the data alone.
constexpr size_t kLanes = 4;
// A thread for fewer elements than this costs more to start than it saves.
constexpr size_t kElementsPerThread = size_t(1) << 18;
constexpr unsigned kMaxThreads = 16;

int compareThreads(size_t elements, int requested) {
  if (requested > 0) return requested;
  unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  return int(std::min<size_t>({hardware, kMaxThreads, std::max<size_t>(1, elements / kElementsPerThread)}));
}

// Calls work(chunk, begin, end) once for every chunk of [0, elements), on up to `threads` threads
// (0: by the size) of which the calling thread is one. Fewer threads start if the system refuses.
template <class F>
void forEachChunk(size_t elements, int threads, F&& work) {
  const size_t chunks = (elements + kChunkElements - 1) / kChunkElements;
  std::atomic<size_t> next{0};
  auto run = [&] {
    for (size_t c; (c = next.fetch_add(1, std::memory_order_relaxed)) < chunks;)
      work(c, c * kChunkElements, std::min(elements, (c + 1) * kChunkElements));
  };
  std::vector<std::thread> helpers;
  const size_t helperCount = std::min<size_t>(size_t(compareThreads(elements, threads)), chunks) - (chunks > 0);
  for (size_t t = 0; t < helperCount; ++t) {
    try {
      helpers.emplace_back(run);
    } catch (const std::system_error&) {
      break;  // the threads already started and this one do the work
    }
  }
  run();
  for (std::thread& h : helpers) h.join();
}

// One chunk's share of a Comparison.
struct Partial {
  double diff2[kLanes] = {}, ref2[kLanes] = {};
  double maxAbs = 0.0;
  int64_t nonFinite = 0, unchecked = 0, unwritten = 0, mismatched = 0;
};

// The comparison rule for one element, in lane `lane` of `p`.
inline void compareElement(Partial& p, size_t lane, double o, double r) {
  if (!std::isfinite(r)) {
    // A reference that is itself inf/NaN: the output must be the same non-finite value.
    if (!(o == r || (std::isnan(o) && std::isnan(r)))) p.maxAbs = std::numeric_limits<double>::infinity();
    return;
  }
  if (!std::isfinite(o)) {
    ++p.nonFinite;
    return;
  }
  const double d = o - r;
  p.diff2[lane] += d * d;
  p.ref2[lane] += r * r;
  p.maxAbs = std::max(p.maxAbs, std::fabs(d));
}

// The exact rule for one integer element: equal in 64 bits. The difference is taken in 128 bits
// (two i64 values can be 2^64 apart) and only then rounded to double for the error measures.
inline void compareExactElement(Partial& p, size_t lane, int64_t o, int64_t r) {
  const double rd = double(r);
  p.ref2[lane] += rd * rd;
  if (o == r) return;
  ++p.mismatched;
  const double d = double(__int128(o) - __int128(r));
  p.diff2[lane] += d * d;
  p.maxAbs = std::max(p.maxAbs, std::fabs(d));
}

// Every element of a chunk. The loop without the checks for non-finite values runs first: a NaN
// or infinity anywhere makes its sums non-finite, and then the chunk is compared again with the
// checks. Both add in the same lanes and order, so a finite chunk gets the same sums either way.
template <class T>
Partial compareChunk(const T* out, const double* ref, size_t n) {
  Partial p;
  double maxAbs[kLanes] = {};
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (size_t l = 0; l < kLanes; ++l) {
      const double r = ref[i + l], d = double(out[i + l]) - r;
      p.diff2[l] += d * d;
      p.ref2[l] += r * r;
      maxAbs[l] = std::max(maxAbs[l], std::fabs(d));
    }
  for (; i < n; ++i) {
    const double r = ref[i], d = double(out[i]) - r;
    p.diff2[i % kLanes] += d * d;
    p.ref2[i % kLanes] += r * r;
    maxAbs[i % kLanes] = std::max(maxAbs[i % kLanes], std::fabs(d));
  }
  bool finite = true;
  for (size_t l = 0; l < kLanes; ++l) {
    finite = finite && std::isfinite(p.diff2[l]) && std::isfinite(p.ref2[l]) && std::isfinite(maxAbs[l]);
    p.maxAbs = std::max(p.maxAbs, maxAbs[l]);
  }
  if (finite) return p;
  p = Partial{};
  for (i = 0; i < n; ++i) compareElement(p, i % kLanes, double(out[i]), ref[i]);
  return p;
}

// The checked elements of a chunk only; the mask is skipped 8 bytes at a time where it is zero
// (a sampled reference checks a few rows).
template <class T>
Partial compareCheckedChunk(const T* out, const double* ref, const uint8_t* checked, size_t n) {
  Partial p;
  int64_t compared = 0;
  for (size_t i = 0; i < n;) {
    uint64_t word = 0;
    if (i + 8 <= n) {
      std::memcpy(&word, checked + i, 8);
      if (word == 0) {
        i += 8;
        continue;
      }
    }
    for (const size_t end = std::min(n, i + 8); i < end; ++i) {
      if (!checked[i]) continue;
      ++compared;
      compareElement(p, i % kLanes, double(out[i]), ref[i]);
    }
  }
  p.unchecked = int64_t(n) - compared;
  return p;
}

// What a poisoned element that a kernel did not write holds: NaN (or any non-finite value) for
// floats, kPoisonInt for integers.
template <class T>
bool looksUnwritten(T v) {
  if constexpr (std::is_same_v<T, float>) return (std::bit_cast<uint32_t>(v) & 0x7f800000u) == 0x7f800000u;
  else if constexpr (std::is_same_v<T, double>)
    return (std::bit_cast<uint64_t>(v) & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
  else if constexpr (std::is_same_v<T, f16> || std::is_same_v<T, bf16>) return !std::isfinite(double(v));
  else if constexpr (std::is_same_v<T, uint32_t>) return v == uint32_t(uint64_t(kPoisonInt));  // its low 32 bits
  else return int64_t(v) == kPoisonInt;
}

// Unwritten-looking elements with checked[i] == 0 in a chunk. A branch-free count over every
// element first: it is almost always zero, and then the mask need not be read.
template <class T>
int64_t unwrittenInChunk(const T* out, const uint8_t* checked, size_t n) {
  int64_t suspects = 0;
  for (size_t i = 0; i < n; ++i) suspects += looksUnwritten(out[i]);
  if (suspects == 0) return 0;
  int64_t unwritten = 0;
  for (size_t i = 0; i < n; ++i) unwritten += !checked[i] && looksUnwritten(out[i]);
  return unwritten;
}

// The chunks' partials added in chunk order.
Comparison combine(const std::vector<Partial>& parts, size_t count, bool sampled) {
  Comparison c;
  c.count = int64_t(count);
  double diff2 = 0.0, ref2 = 0.0;
  for (const Partial& p : parts) {
    double chunkDiff2 = 0.0, chunkRef2 = 0.0;
    for (size_t l = 0; l < kLanes; ++l) {
      chunkDiff2 += p.diff2[l];
      chunkRef2 += p.ref2[l];
    }
    diff2 += chunkDiff2;
    ref2 += chunkRef2;
    c.maxAbsError = std::max(c.maxAbsError, p.maxAbs);
    c.nonFinite += p.nonFinite;
    c.unchecked += p.unchecked;
    c.unwritten += p.unwritten;
    c.mismatched += p.mismatched;
  }
  if (c.nonFinite > 0 || std::isinf(c.maxAbsError)) {
    c.relativeError = std::numeric_limits<double>::infinity();
    c.maxAbsError = std::numeric_limits<double>::infinity();
  } else {
    c.relativeError = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  }
  if (sampled) {
    c.sampled = true;
    c.count -= c.unchecked;
  }
  return c;
}

void checkSizes(size_t count, const std::vector<double>& ref) {
  if (count != ref.size()) throw Error(fmt::format("comparing {} values with a reference of {}", count, ref.size()));
}
void checkMask(size_t count, const std::vector<uint8_t>& checked) {
  if (count != checked.size()) throw Error(fmt::format("a mask of {} elements for {} values", checked.size(), count));
}

template <class T>
Comparison compareValues(const T* out, size_t count, const std::vector<double>& ref, int threads) {
  checkSizes(count, ref);
  std::vector<Partial> parts((count + kChunkElements - 1) / kChunkElements);
  forEachChunk(count, threads, [&](size_t c, size_t begin, size_t end) {
    parts[c] = compareChunk(out + begin, ref.data() + begin, end - begin);
  });
  return combine(parts, count, false);
}

template <class T>
Comparison compareCheckedValues(const T* out, size_t count, const std::vector<double>& ref,
                                const std::vector<uint8_t>& checked, Unchecked unchecked, int threads) {
  checkSizes(count, ref);
  std::vector<Partial> parts((count + kChunkElements - 1) / kChunkElements);
  forEachChunk(count, threads, [&](size_t c, size_t begin, size_t end) {
    Partial p = compareCheckedChunk(out + begin, ref.data() + begin, checked.data() + begin, end - begin);
    if (unchecked == Unchecked::MustBeWritten)
      p.unwritten = unwrittenInChunk(out + begin, checked.data() + begin, end - begin);
    parts[c] = p;
  });
  return combine(parts, count, true);
}

// Exact comparisons of integer elements (any integer type T), all of them or the checked ones.
template <class T>
Comparison compareExactValues(const T* out, size_t count, const std::vector<int64_t>& ref,
                              const std::vector<uint8_t>* checked, Unchecked unchecked, int threads) {
  if (count != ref.size()) throw Error(fmt::format("comparing {} values with a reference of {}", count, ref.size()));
  std::vector<Partial> parts((count + kChunkElements - 1) / kChunkElements);
  forEachChunk(count, threads, [&](size_t c, size_t begin, size_t end) {
    Partial p;
    int64_t compared = 0;
    for (size_t i = begin; i < end; ++i) {
      if (checked && !(*checked)[i]) continue;
      ++compared;
      compareExactElement(p, i % kLanes, int64_t(out[i]), ref[i]);
    }
    if (checked) {
      p.unchecked = int64_t(end - begin) - compared;
      if (unchecked == Unchecked::MustBeWritten) p.unwritten = unwrittenInChunk(out + begin, checked->data() + begin, end - begin);
    }
    parts[c] = p;
  });
  Comparison cmp = combine(parts, count, checked != nullptr);
  cmp.exact = true;
  return cmp;
}

template <class F>
Comparison withIntegerElements(const HostArray& out, F&& f) {
  if (out.type() == ScalarType::I32) return f(out.as<int32_t>());
  if (out.type() == ScalarType::I64) return f(out.as<int64_t>());
  if (out.type() == ScalarType::I8) return f(out.as<int8_t>());
  if (out.type() == ScalarType::U8) return f(out.as<uint8_t>());
  if (out.type() == ScalarType::U32) return f(out.as<uint32_t>());
  throw Error(fmt::format("an exact comparison needs an integer array, not {}", out.describe()));
}

// Calls f(elements) with the array's elements at their own type.
template <class F>
auto withElements(const HostArray& out, F&& f) {
  switch (out.type()) {
    case ScalarType::F32: return f(out.as<float>());
    case ScalarType::F64: return f(out.as<double>());
    case ScalarType::I32: return f(out.as<int32_t>());
    case ScalarType::I64: return f(out.as<int64_t>());
    case ScalarType::F16: return f(out.as<f16>());
    case ScalarType::BF16: return f(out.as<bf16>());
    case ScalarType::I8: return f(out.as<int8_t>());
    case ScalarType::U8: return f(out.as<uint8_t>());
    case ScalarType::U32: return f(out.as<uint32_t>());
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
  return decltype(f(out.as<float>())){};
}

}  // namespace

Comparison compare(const std::vector<double>& out, const std::vector<double>& ref, int threads) {
  return compareValues(out.data(), out.size(), ref, threads);
}

// Reads the array at its element type: no double copy of a large output (the tuner compares
// every candidate's outputs).
Comparison compare(const HostArray& out, const std::vector<double>& ref, int threads) {
  const size_t n = size_t(out.size());
  return withElements(out, [&](const auto* values) { return compareValues(values, n, ref, threads); });
}

Comparison compare(const HostArray& out, const std::vector<double>& ref, const std::vector<uint8_t>& checked,
                   Unchecked unchecked, int threads) {
  const size_t n = size_t(out.size());
  checkMask(n, checked);
  return withElements(out, [&](const auto* values) {
    return compareCheckedValues(values, n, ref, checked, unchecked, threads);
  });
}

Comparison compareExact(const HostArray& out, const std::vector<int64_t>& ref, int threads) {
  const size_t n = size_t(out.size());
  return withIntegerElements(out, [&](const auto* values) {
    return compareExactValues(values, n, ref, nullptr, Unchecked::Ignore, threads);
  });
}

Comparison compareExact(const std::vector<int64_t>& out, const std::vector<int64_t>& ref, int threads) {
  return compareExactValues(out.data(), out.size(), ref, nullptr, Unchecked::Ignore, threads);
}

Comparison compareExact(const HostArray& out, const std::vector<int64_t>& ref, const std::vector<uint8_t>& checked,
                        Unchecked unchecked, int threads) {
  const size_t n = size_t(out.size());
  checkMask(n, checked);
  return withIntegerElements(out, [&](const auto* values) {
    return compareExactValues(values, n, ref, &checked, unchecked, threads);
  });
}

int64_t countUnwritten(const HostArray& out, const std::vector<uint8_t>& checked, int threads) {
  const size_t n = size_t(out.size());
  checkMask(n, checked);
  return withElements(out, [&](const auto* values) {
    std::vector<int64_t> counts((n + kChunkElements - 1) / kChunkElements);
    forEachChunk(n, threads, [&](size_t c, size_t begin, size_t end) {
      counts[c] = unwrittenInChunk(values + begin, checked.data() + begin, end - begin);
    });
    int64_t total = 0;
    for (int64_t k : counts) total += k;
    return total;
  });
}

double relativeError(const HostArray& out, const std::vector<double>& ref) { return compare(out, ref).relativeError; }
double relativeError(const std::vector<double>& out, const std::vector<double>& ref) {
  return compare(out, ref).relativeError;
}

std::string Checksum::str() const { return fmt::format("sum={:.17g} sumsq={:.17g} n={}", sum, sumSquares, count); }

Checksum checksum(const std::vector<double>& values) {
  Checksum c;
  for (double v : values) {
    c.sum += v;
    c.sumSquares += v * v;
  }
  c.count = int64_t(values.size());
  return c;
}

// In element order at the element type: the same sums as checksum(a.toDoubles()), without the copy.
Checksum checksum(const HostArray& a) {
  Checksum c;
  withElements(a, [&](const auto* values) {
    for (int64_t i = 0; i < a.size(); ++i) {
      const double v = double(values[i]);
      c.sum += v;
      c.sumSquares += v * v;
    }
    return 0;
  });
  c.count = a.size();
  return c;
}

}  // namespace rtcg
