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
  // Comparisons with a sampled reference (a `checked` mask): the elements left out, and how many
  // of them the caller found unwritten (countUnwritten).
  bool sampled = false;
  int64_t unchecked = 0, unwritten = 0;
  // "rel 1.2e-07, max abs 3.4e-06, non-finite 0 of 250000"; sampled comparisons add
  // " checked, unwritten 0 of 249000 unchecked".
  std::string str() const;
};

// Throws rtcg::Error if the sizes differ.
Comparison compare(const HostArray& out, const std::vector<double>& ref);
Comparison compare(const std::vector<double>& out, const std::vector<double>& ref);
// The same over the elements i with checked[i] == 1 only (a sampled reference: the others have
// no reference value). Throws rtcg::Error if the sizes differ.
Comparison compare(const HostArray& out, const std::vector<double>& ref, const std::vector<uint8_t>& checked);

// Elements i with checked[i] == 0 that still hold what a poisoned output holds where a kernel did
// not write: NaN (or any non-finite value) for floats, kPoisonInt for integers.
int64_t countUnwritten(const HostArray& out, const std::vector<uint8_t>& checked);
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
