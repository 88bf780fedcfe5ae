// A fast 128-bit non-cryptographic hash, for cache keys and entry checksums. Not for security:
// the kernel cache stores the full key next to each entry, so a collision is detected anyway.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rtcg {

struct Hash128 {
  uint64_t lo = 0, hi = 0;
  std::string hex() const;  // 32 lowercase hex digits, hi first
  bool operator==(const Hash128&) const = default;
};

Hash128 hash128(std::string_view data, uint64_t seed = 0);

// Hashes a list of strings into a 32-hex-digit key. Each part is length-prefixed, so
// {"ab", "c"} and {"a", "bc"} give different keys.
std::string hashKey(const std::vector<std::string>& parts);

}  // namespace rtcg
