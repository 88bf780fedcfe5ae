#include "reference/Compare.h"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "support/Error.h"

namespace rtcg {

std::string Comparison::str() const {
  return fmt::format("rel {:.3g}, max abs {:.3g}, non-finite {} of {}", relativeError, maxAbsError, nonFinite, count);
}

Comparison compare(const std::vector<double>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size())
    throw Error(fmt::format("comparing {} values with a reference of {}", out.size(), ref.size()));
  Comparison c;
  c.count = int64_t(out.size());
  double diff2 = 0.0, ref2 = 0.0;
  for (size_t i = 0; i < out.size(); ++i) {
    const double o = out[i], r = ref[i];
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

Comparison compare(const HostArray& out, const std::vector<double>& ref) { return compare(out.toDoubles(), ref); }
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
