#include "runtime/Hash.h"

#include <fmt/format.h>

#include <cstring>

namespace rtcg {
namespace {

// Odd 64-bit constants with well-spread bits (golden ratio and friends).
constexpr uint64_t kP1 = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kP2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kP3 = 0x165667B19E3779F9ull;
constexpr uint64_t kP4 = 0xD6E8FEB86659FD93ull;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// Byte order fixed to little-endian, so keys are the same on every host.
uint64_t load64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// Final avalanche: every input bit affects every output bit.
uint64_t avalanche(uint64_t x) {
  x ^= x >> 33;
  x *= kP4;
  x ^= x >> 29;
  x *= kP1;
  x ^= x >> 32;
  return x;
}

// Two lanes, each fed one 64-bit word per 16-byte block and cross-added, so the lanes
// depend on each other and on the order of blocks.
void mixBlock(uint64_t& h1, uint64_t& h2, uint64_t k1, uint64_t k2) {
  h1 = rotl(h1 ^ (k1 * kP2), 31) * kP1;
  h1 += h2;
  h2 = rotl(h2 ^ (k2 * kP3), 29) * kP4;
  h2 += h1;
}

}  // namespace

std::string Hash128::hex() const { return fmt::format("{:016x}{:016x}", hi, lo); }

Hash128 hash128(std::string_view data, uint64_t seed) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint64_t h1 = seed ^ kP1, h2 = rotl(seed, 32) ^ kP2;
  size_t i = 0;
  for (; i + 16 <= n; i += 16) mixBlock(h1, h2, load64(p + i), load64(p + i + 8));
  // The tail, zero-padded; the length mixed in below tells padded tails apart.
  unsigned char tail[16] = {};
  std::memcpy(tail, p + i, n - i);
  mixBlock(h1, h2, load64(tail), load64(tail + 8));
  h1 ^= static_cast<uint64_t>(n);
  h2 ^= static_cast<uint64_t>(n) * kP3;
  h1 += h2;
  h2 += h1;
  h1 = avalanche(h1);
  h2 = avalanche(h2);
  h1 += h2;
  h2 += h1;
  return {h1, h2};
}

std::string hashKey(const std::vector<std::string>& parts) {
  std::string buf;
  for (const std::string& part : parts) {
    uint64_t len = part.size();
    for (int b = 0; b < 8; ++b) buf.push_back(static_cast<char>((len >> (8 * b)) & 0xff));
    buf += part;
  }
  return hash128(buf).hex();
}

}  // namespace rtcg
