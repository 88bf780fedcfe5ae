#include "reference/Compare.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "support/Error.h"

namespace rtcg {

std::string Comparison::str() const {
  return fmt::format("rel {:.3g}, max abs {:.3g}, non-finite {} of {}", relativeError, maxAbsError, nonFinite, count);
}

namespace {

// The comparison over out[i] (any element type, read as double) and ref[i].
template <class T>
Comparison compareValues(const T* out, size_t count, const std::vector<double>& ref) {
  if (count != ref.size()) throw Error(fmt::format("comparing {} values with a reference of {}", count, ref.size()));
  Comparison c;
  c.count = int64_t(count);
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < count; ++i) {
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
  return c;
}

}  // namespace

Comparison compare(const std::vector<double>& out, const std::vector<double>& ref) {
  return compareValues(out.data(), out.size(), ref);
}

// Reads the array at its element type: no double copy of a large output (the tuner compares
// every candidate's outputs).
Comparison compare(const HostArray& out, const std::vector<double>& ref) {
  const size_t n = size_t(out.size());
  switch (out.type()) {
    case ScalarType::F32: return compareValues(out.as<float>(), n, ref);
    case ScalarType::F64: return compareValues(out.as<double>(), n, ref);
    case ScalarType::I32: return compareValues(out.as<int32_t>(), n, ref);
    case ScalarType::I64: return compareValues(out.as<int64_t>(), n, ref);
    case ScalarType::Bool: break;
  }
  RTCG_ASSERT(false, "bad host array type");
  return {};
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
