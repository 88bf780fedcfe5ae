// 16-bit floating-point storage types: rtcg::f16 (IEEE binary16) and rtcg::bf16 (bfloat16), the
// host types of the kernel language's f16 and bf16 arrays. C++17 guarantees no 16-bit float type
// (_Float16 and __bf16 are extensions), so these are plain 16-bit structs that hold the bits and
// convert to and from float and double explicitly, rounding to nearest, ties to even, as CUDA's
// __float2half_rn and __float2bfloat16_rn do. They do no arithmetic: convert to float first, as
// kernels do.
//
//   std::vector<rtcg::bf16> a(n);
//   a[i] = rtcg::bf16(0.1f);          // rounded to nearest even: 0.10009765625
//   float x = float(a[i]);            // exact
//
// The conversions are exact functions of their argument: the same on every host and the same as
// rtcg's reference executor uses.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace rtcg {

namespace half_detail {

// The bits of `v` rounded to nearest (ties to even) in a binary format with `expBits` exponent
// and `mantBits` fraction bits (f16: 5, 10; bf16: 8, 7), with subnormals, infinities and a quiet
// NaN. Works on the value's scaled significand, so every step but the one rounding is exact.
inline uint16_t roundToBits(double v, int expBits, int mantBits) {
  const uint16_t sign = std::signbit(v) ? uint16_t(1u << (expBits + mantBits)) : uint16_t(0);
  const uint16_t expMask = uint16_t(((1u << expBits) - 1) << mantBits);
  if (std::isnan(v)) return uint16_t(sign | expMask | (1u << (mantBits - 1)));
  const double a = std::fabs(v);
  if (std::isinf(a)) return uint16_t(sign | expMask);
  if (a == 0) return sign;
  const int bias = (1 << (expBits - 1)) - 1, emin = 1 - bias;
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): a's exponent is e - 1
  int exp = e - 1 < emin ? emin : e - 1;
  // The significand in units of the format's last place at this exponent (exact: a power of 2
  // scaling), below 2^(mantBits + 1), then rounded to an integer, ties to even.
  const double scaled = std::ldexp(a, mantBits - exp);
  double m = std::floor(scaled);
  const double rest = scaled - m;
  if (rest > 0.5 || (rest == 0.5 && std::fmod(m, 2.0) != 0)) m += 1;
  uint32_t mant = uint32_t(m);
  if (mant == (2u << mantBits)) mant >>= 1, ++exp;  // rounded up to the next power of two
  if (mant < (1u << mantBits)) return uint16_t(sign | mant);  // subnormal (exp == emin), or zero
  if (exp + bias >= (1 << expBits) - 1) return uint16_t(sign | expMask);  // overflow: infinity
  return uint16_t(sign | (uint32_t(exp + bias) << mantBits) | (mant - (1u << mantBits)));
}

// The exact value of the bits of a binary format with `expBits` and `mantBits` (see roundToBits).
inline double valueOfBits(uint16_t bits, int expBits, int mantBits) {
  const bool negative = (bits >> (expBits + mantBits)) & 1;
  const int expField = (bits >> mantBits) & ((1 << expBits) - 1);
  const uint32_t mant = bits & ((1u << mantBits) - 1);
  const int bias = (1 << (expBits - 1)) - 1;
  double a;
  if (expField == (1 << expBits) - 1) a = mant ? std::nan("") : INFINITY;
  else if (expField == 0) a = std::ldexp(double(mant), 1 - bias - mantBits);
  else a = std::ldexp(double(mant | (1u << mantBits)), expField - bias - mantBits);
  return negative ? -a : a;
}

// `v` as a double from which roundToBits gives the correctly rounded 16-bit value: exact up to
// 2^53, beyond that rounded to odd (the dropped bits folded into the last one), which keeps
// rounding to the 16-bit formats' at most 11 significant bits correct (no double rounding).
inline double roundToOdd(int64_t v) {
  const uint64_t mag = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  if (mag <= (uint64_t(1) << 53)) return double(v);
  int shift = 0;
  while ((mag >> shift) >= (uint64_t(1) << 53)) ++shift;
  uint64_t kept = mag >> shift;
  if (mag & ((uint64_t(1) << shift) - 1)) kept |= 1;
  const double a = std::ldexp(double(kept), shift);
  return v < 0 ? -a : a;
}

}  // namespace half_detail

// IEEE 754 binary16: 1 sign, 5 exponent, 10 fraction bits; largest finite 65504.
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(double v) : bits(half_detail::roundToBits(v, 5, 10)) {}
  explicit f16(float v) : f16(double(v)) {}  // float -> double is exact: one rounding
  explicit operator double() const { return half_detail::valueOfBits(bits, 5, 10); }
  explicit operator float() const { return float(double(*this)); }  // exact
  static f16 fromBits(uint16_t b) {
    f16 h;
    h.bits = b;
    return h;
  }
};

// bfloat16: the upper half of an IEEE binary32 (1 sign, 8 exponent, 7 fraction bits).
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(double v) : bits(half_detail::roundToBits(v, 8, 7)) {}
  explicit bf16(float v) : bf16(double(v)) {}
  explicit operator double() const { return half_detail::valueOfBits(bits, 8, 7); }
  explicit operator float() const { return float(double(*this)); }
  static bf16 fromBits(uint16_t b) {
    bf16 h;
    h.bits = b;
    return h;
  }
};

static_assert(sizeof(f16) == 2 && sizeof(bf16) == 2, "16-bit storage");
static_assert(std::is_trivially_copyable_v<f16> && std::is_trivially_copyable_v<bf16>, "copied as bytes");

}  // namespace rtcg
