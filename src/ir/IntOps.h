// Integer arithmetic of the IR on 64-bit values: wrapping + - * (no undefined behaviour on
// overflow) and FLOOR division and modulo (rounding toward -infinity, as IR.h states), and the
// binary operators on integer constants that the IR's evaluators and folders share.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/IR.h"

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

// The ceiling of a / b for a >= 0, b > 0 and a + b - 1 within int64: the planners' and the space's
// tile, step and block counts.
inline int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a (op) b as the IR defines it on integers (floor / and %, comparisons and logic give 0 or 1),
// computed exactly: nullopt when the result does not fit in 64 bits or b is 0 for / and %.
inline std::optional<int64_t> checkedIntBinary(BinaryOp op, int64_t a, int64_t b) {
  int64_t r = 0;
  switch (op) {
    case BinaryOp::Add: return __builtin_add_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case BinaryOp::Sub: return __builtin_sub_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case BinaryOp::Mul: return __builtin_mul_overflow(a, b, &r) ? std::nullopt : std::optional<int64_t>(r);
    case BinaryOp::Div:
      if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
      return floorDiv(a, b);
    case BinaryOp::Mod:
      if (b == 0) return std::nullopt;
      return floorMod(a, b);
    case BinaryOp::Lt: return a < b;
    case BinaryOp::Le: return a <= b;
    case BinaryOp::Gt: return a > b;
    case BinaryOp::Ge: return a >= b;
    case BinaryOp::Eq: return a == b;
    case BinaryOp::Ne: return a != b;
    case BinaryOp::And: return a && b;
    case BinaryOp::Or: return a || b;
  }
  return std::nullopt;
}

// a (op) b for the arithmetic operators + - * / % as the device computes them on 64 bits
// (wrapping + - *, floor / and %): nullopt for other operators and for b = 0 with / and %.
inline std::optional<int64_t> wrappingIntArith(BinaryOp op, int64_t a, int64_t b) {
  switch (op) {
    case BinaryOp::Add: return wrapAdd(a, b);
    case BinaryOp::Sub: return wrapSub(a, b);
    case BinaryOp::Mul: return wrapMul(a, b);
    case BinaryOp::Div: return b == 0 ? std::nullopt : std::optional<int64_t>(floorDiv(a, b));
    case BinaryOp::Mod: return b == 0 ? std::nullopt : std::optional<int64_t>(floorMod(a, b));
    default: return std::nullopt;
  }
}

}  // namespace rtcg
