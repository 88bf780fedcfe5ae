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
  // of them were found unwritten (Unchecked::MustBeWritten, or the caller's countUnwritten).
  bool sampled = false;
  int64_t unchecked = 0, unwritten = 0;
  // Exact comparisons (compareExact: integer outputs): the elements that differ from the
  // reference. relativeError and maxAbsError then come from the exact differences.
  bool exact = false;
  int64_t mismatched = 0;
  // "rel 1.2e-07, max abs 3.4e-06, non-finite 0 of 250000"; exact ones "mismatched 0 of 250000,
  // max abs 0"; sampled comparisons add " checked, unwritten 0 of 249000 unchecked".
  std::string str() const;
  // The verdict: nothing non-finite or unwritten, and an exact comparison with no mismatched
  // element or a floating-point one with relativeError <= tolerance (which an exact one ignores).
  bool passes(double tolerance) const;
};

// What a sampled comparison does with the elements it does not check (checked[i] == 0).
enum class Unchecked {
  Ignore,         // nothing: an inout array's unchecked elements have no known value
  MustBeWritten,  // count those a kernel left unwritten (countUnwritten) in Comparison::unwritten
};

// The comparisons below run over fixed chunks of the array on up to `threads` threads (0: by the
// size, one for small arrays and at most 16); partial sums are added in chunk order, so the
// result is the same bit for bit for any number of threads.

// Throws rtcg::Error if the sizes differ.
Comparison compare(const HostArray& out, const std::vector<double>& ref, int threads = 0);
Comparison compare(const std::vector<double>& out, const std::vector<double>& ref, int threads = 0);
// The same over the elements i with checked[i] != 0 only (a sampled reference: the others have
// no reference value). Throws rtcg::Error if the sizes differ.
Comparison compare(const HostArray& out, const std::vector<double>& ref, const std::vector<uint8_t>& checked,
                   Unchecked unchecked = Unchecked::Ignore, int threads = 0);

// Integer outputs, exactly: each element in 64 bits against its reference value. Through double,
// i64 values that differ above 2^53 compared equal (a tolerance of 0 let them through). `out` must
// be an i32 or i64 array (else rtcg::Error); the sizes must match (else rtcg::Error).
Comparison compareExact(const HostArray& out, const std::vector<int64_t>& ref, int threads = 0);
Comparison compareExact(const std::vector<int64_t>& out, const std::vector<int64_t>& ref, int threads = 0);
// The same over the elements i with checked[i] != 0 only (a sampled reference).
Comparison compareExact(const HostArray& out, const std::vector<int64_t>& ref, const std::vector<uint8_t>& checked,
                        Unchecked unchecked = Unchecked::Ignore, int threads = 0);

// Elements i with checked[i] == 0 that still hold what a poisoned output holds where a kernel did
// not write: NaN (or any non-finite value) for floats, kPoisonInt for integers.
int64_t countUnwritten(const HostArray& out, const std::vector<uint8_t>& checked, int threads = 0);
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
