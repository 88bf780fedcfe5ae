// Comparing results with the double-precision reference, and checksums for `rtcgc run --cpu`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "reference/HostArray.h"

namespace rtcg {

struct Comparison {
  double relativeError = 0.0;  // ||out - ref||_2 / ||ref||_2; +inf if out has a non-finite value
                               // where ref is finite; ||out - ref||_2 when ref is all zeros
  double maxAbsError = 0.0;    // max |out - ref| over finite pairs (+inf if any non-finite)
  int64_t nonFinite = 0;       // elements of out that are NaN or infinite while ref is finite
  int64_t count = 0;           // elements compared
  std::string str() const;     // "rel 1.2e-07, max abs 3.4e-06, non-finite 0 of 250000"
};

// Throws rtcg::Error if the sizes differ.
Comparison compare(const HostArray& out, const std::vector<double>& ref);
Comparison compare(const std::vector<double>& out, const std::vector<double>& ref);
double relativeError(const HostArray& out, const std::vector<double>& ref);
double relativeError(const std::vector<double>& out, const std::vector<double>& ref);

// Sum and sum of squares in double, in element order.
struct Checksum {
  double sum = 0.0, sumSquares = 0.0;
  int64_t count = 0;
  std::string str() const;  // "sum=%.17g sumsq=%.17g n=COUNT"
};
Checksum checksum(const HostArray& a);
Checksum checksum(const std::vector<double>& values);

}  // namespace rtcg
