// Inputs for reference and GPU runs: deterministic random data, index arrays that are valid for
// the way the kernel uses them, and poisoned outputs (so an element a GPU kernel fails to write
// shows up as NaN or as a sentinel, never as a plausible value).
#pragma once

#include <cstdint>
#include <map>

#include "ir/IR.h"
#include "reference/HostArgs.h"
#include "reference/HostArray.h"

namespace rtcg {

// splitmix64: tiny, fast and the same everywhere (std distributions are not). The random inputs
// and the benchmark's sparse matrices draw from it.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
};

// The value integer arrays are poisoned with (fits i32).
constexpr int64_t kPoisonInt = -1234567891;

// Floats uniform in [-1, 1) (f32 values are exact floats); integers uniform in [-8, 8).
// The same seed gives the same values on every platform.
void fillRandom(HostArray& a, uint64_t seed);
// Integers (or floats) uniform in the integers of [lo, hi); hi > lo.
void fillRandomInts(HostArray& a, uint64_t seed, int64_t lo, int64_t hi);
// Distinct integers of [lo, hi) in random order; throws rtcg::Error if the range holds fewer
// than a.size() integers.
void fillDistinctInts(HostArray& a, uint64_t seed, int64_t lo, int64_t hi);
// NaN for float arrays, kPoisonInt for integer arrays.
void poison(HostArray& a);

// Half-open range of values an integer array may hold.
struct ValueRange {
  int64_t lo = 0, hi = 0;
  bool operator==(const ValueRange&) const = default;
};

// For each integer array of a bound kernel that is loaded inside an index expression of another
// access (u[vmap[k, f]], u[vmap[k, f] + Np*k], ...), the values that keep every such access in
// bounds, intersected over all of its uses. Derived from the IR: the index must be linear in the
// load, the rest of the index is bounded over the loop domain by interval arithmetic. Throws
// rtcg::Error if the uses leave no valid value. Arrays used in ways it cannot invert get no entry.
std::map<int, ValueRange> indirectIndexRanges(const Kernel& bound);

// For each integer array read by the bounds of a data-dependent range (ir/DataRanges.h), the
// extent its values must stay within: the smallest over its ranges.
std::map<int, int64_t> rangeArrayExtents(const Kernel& bound);
// Non-decreasing offsets from 0 to `extent`: the first element 0, the last `extent`, the others
// sorted uniform values between (CSR row offsets: consecutive elements bound a row, and the rows
// partition [0, extent)). A one-element array holds 0.
void fillOffsets(HostArray& a, uint64_t seed, int64_t extent);

// The segment heads of a segmented scan (ir/Scan.h) of `lines` lines of `length` positions at
// stride `inner` (ScanForm's view of the array): every line's position 0 starts a segment, and so
// does each other position with probability 1 / meanSegment (64: about 2^20 segments in 2^26
// values); a position holds its segment's start.
void fillSegmentHeads(HostArray& a, uint64_t seed, int64_t length, int64_t inner, int64_t meanSegment = 64);

// Fills every `in` and `inout` array with random data (seeded per parameter): arrays read by
// range bounds with fillOffsets (so that rowptr[i]..rowptr[i + 1] are valid rows), a segmented
// scan's heads with fillSegmentHeads, integer arrays
// used as indirect indices with values valid for their uses (distinct values where they index a
// store and the range holds enough: a scatter's points then write distinct elements), other
// arrays with fillRandom;
// poisons every `out` array. Scalars are not touched.
void fillInputs(const Kernel& bound, HostArgs& args, uint64_t seed);

}  // namespace rtcg
