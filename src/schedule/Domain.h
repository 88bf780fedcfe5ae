// The indices of a loop nest as a schedule sees them: each parallel loop, and each reduction
// index name (all reduction loops of that name in the nest), with the hull of the values it takes.
// Interval arithmetic here is self-contained so that scheduling does not depend on the heavier
// analyses of ir/Analysis.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Schedule.h"

namespace rtcg {

// Inclusive integer range [lo, hi]; empty when hi < lo.
struct IndexRange {
  int64_t lo = 0, hi = -1;
  bool empty() const { return hi < lo; }
  int64_t extent() const { return empty() ? 0 : hi - lo + 1; }
  bool operator==(const IndexRange&) const = default;
};

// Value of an integer expression built from literals, bound size parameters (k.sizes) and
// integer arithmetic (floor / and %); nullopt if it is not such a constant.
std::optional<int64_t> constIntValue(const Expr& e, const Kernel& k);

// Conservative range of an integer expression when the Index variables in `vars` (by id) range
// over the given intervals. nullopt if unbounded (loads, unknown variables, floats, ...).
std::optional<IndexRange> rangeOfInt(const Expr& e, const Kernel& k,
                                     const std::map<int, IndexRange>& vars);

struct NestIndex {
  std::string name;
  bool parallel = false;
  std::vector<const Loop*> loops;  // the parallel loop, or every reduction loop of this name
  IndexRange hull;                 // values the index takes anywhere in the nest
  bool constantBounds = false;     // every loop of it has constant lo and hi
};

// The parallel indices of nest `nest` (outermost first), then its reduction index names in order
// of first appearance. nullopt (with `error` set) when a bound cannot be bounded.
std::optional<std::vector<NestIndex>> nestIndices(const Kernel& k, int nest, std::string* error = nullptr);

// Extent of each part of an index of extent `extent` (the first part covers the rest; its extent
// is at least 1). Factors must be positive.
std::vector<int64_t> partExtents(const IndexSchedule& s, int64_t extent);

// Every Reduce expression reachable from `e` (pre-order, outer reductions first).
void collectReductions(const Expr& e, std::vector<Expr>& out);

}  // namespace rtcg
