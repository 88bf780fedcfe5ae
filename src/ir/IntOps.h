// Integer arithmetic of the IR on 64-bit values: wrapping + - * (no undefined behaviour on
// overflow) and FLOOR division and modulo (rounding toward -infinity, as IR.h states).
#pragma once

#include <cstdint>

namespace rtcg {

inline int64_t wrapAdd(int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); }
inline int64_t wrapSub(int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); }
inline int64_t wrapMul(int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); }

// b != 0 is the caller's check.
inline int64_t floorDiv(int64_t a, int64_t b) {
  if (b == -1) return wrapSub(0, a);  // INT64_MIN / -1 would trap
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
inline int64_t floorMod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

}  // namespace rtcg
