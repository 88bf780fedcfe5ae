#include "reference/Compare.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include <fmt/format.h>

#include "reference/RandomFill.h"
#include "support/Error.h"

namespace rtcg {

std::string Comparison::str() const {
  std::string s = fmt::format("rel {:.3g}, max abs {:.3g}, non-finite {} of {}", relativeError, maxAbsError, nonFinite, count);
  if (sampled) s += fmt::format(" checked, unwritten {} of {} unchecked", unwritten, unchecked);
  return s;
}

namespace {

// The comparison over out[i] (any element type, read as double) and ref[i], for every i or, with
// kMasked, for those with checked[i] only.
template <bool kMasked, class T>
Comparison compareValues(const T* out, size_t count, const std::vector<double>& ref, const uint8_t* checked = nullptr) {
  if (count != ref.size()) throw Error(fmt::format("comparing {} values with a reference of {}", count, ref.size()));
  Comparison c;
  c.count = int64_t(count);
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < count; ++i) {
    if constexpr (kMasked) {
      if (!checked[i]) {
        ++c.unchecked;
        continue;
      }
    }
    const double o = double(out[i]), r = ref[i];
    if (!std::isfinite(r)) {
      // A reference that is itself inf/NaN: the output must be the same non-finite value.
      if (!(o == r || (std::isnan(o) && std::isnan(r)))) c.maxAbsError = std::numeric_limits<double>::infinity();
      continue;
    }
    if (!std::isfinite(o)) {
      ++c.nonFinite;
      continue;
    }
    const double d = o - r;
    diff2 += d * d;
    ref2 += r * r;
    c.maxAbsError = std::max(c.maxAbsError, std::fabs(d));
  }
  if (c.nonFinite > 0 || std::isinf(c.maxAbsError)) {
    c.relativeError = std::numeric_limits<double>::infinity();
    c.maxAbsError = std::numeric_limits<double>::infinity();
  } else {
    c.relativeError = ref2 > 0.0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2);
  }
  if constexpr (kMasked) {
    c.sampled = true;
    c.count -= c.unchecked;
  }
  return c;
}

template <class T>
int64_t unwrittenValues(const T* out, size_t count, const std::vector<uint8_t>& checked) {
  if (count != checked.size()) throw Error(fmt::format("a mask of {} elements for {} values", checked.size(), count));
  int64_t n = 0;
  for (size_t i = 0; i < count; ++i) {
    if (checked[i]) continue;
    if constexpr (std::is_floating_point_v<T>) n += !std::isfinite(out[i]);
    else n += int64_t(out[i]) == kPoisonInt;
  }
  return n;
}

// Calls f(elements) with the array's elements at their own type.
template <class F>
auto withElements(const HostArray& out, F&& f) {
  switch (out.type()) {
    case ScalarType::F32: return f(out.as<float>());
    case ScalarType::F64: return f(out.as<double>());
    case ScalarType::I32: return f(out.as<int32_t>());
    case ScalarType::I64: return f(out.as<int64_t>());
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
  return decltype(f(out.as<float>())){};
}

}  // namespace

Comparison compare(const std::vector<double>& out, const std::vector<double>& ref) {
  return compareValues<false>(out.data(), out.size(), ref);
}

// Reads the array at its element type: no double copy of a large output (the tuner compares
// every candidate's outputs).
Comparison compare(const HostArray& out, const std::vector<double>& ref) {
  const size_t n = size_t(out.size());
  return withElements(out, [&](const auto* values) { return compareValues<false>(values, n, ref); });
}

Comparison compare(const HostArray& out, const std::vector<double>& ref, const std::vector<uint8_t>& checked) {
  const size_t n = size_t(out.size());
  if (checked.size() != n) throw Error(fmt::format("a mask of {} elements for {} values", checked.size(), n));
  return withElements(out, [&](const auto* values) { return compareValues<true>(values, n, ref, checked.data()); });
}

int64_t countUnwritten(const HostArray& out, const std::vector<uint8_t>& checked) {
  const size_t n = size_t(out.size());
  return withElements(out, [&](const auto* values) { return unwrittenValues(values, n, checked); });
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

Checksum checksum(const HostArray& a) { return checksum(a.toDoubles()); }

}  // namespace rtcg
