// The one interval type of the analyses (ir/Analysis.h) and the scheduler's domains
// (schedule/Domain.h, as IndexRange), kept in a header of its own so that the scheduler does not
// depend on the heavier analyses.
#pragma once

#include <cstdint>

namespace rtcg {

// Inclusive integer interval [lo, hi]; empty when hi < lo.
struct Interval {
  int64_t lo = 0, hi = -1;
  bool empty() const { return hi < lo; }
  int64_t extent() const { return empty() ? 0 : hi - lo + 1; }
  bool operator==(const Interval&) const = default;
};

}  // namespace rtcg
