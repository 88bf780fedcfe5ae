#include <gtest/gtest.h>

#include <set>

#include "runtime/Hash.h"

namespace rtcg {
namespace {

TEST(Hash, IsDeterministicHex) {
  std::string h = hash128("kernel matmul").hex();
  EXPECT_EQ(h.size(), 32u);
  EXPECT_EQ(h.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(h, hash128("kernel matmul").hex());
  EXPECT_NE(h, hash128("kernel matmuL").hex());
  EXPECT_NE(hash128("x", 1), hash128("x", 2));  // the seed matters
}

TEST(Hash, NoCollisionsAmongShortAndPaddedInputs) {
  // Every length 0..80 of zero bytes and of 'a's, and every single-bit flip of a 40-byte input:
  // the zero-padded tail and the length must both be mixed in.
  std::set<std::string> seen;
  size_t n = 0;
  for (size_t len = 0; len <= 80; ++len) {
    seen.insert(hash128(std::string(len, '\0')).hex());
    seen.insert(hash128(std::string(len, 'a')).hex());
    n += 2;
  }
  std::string base(40, 'q');
  for (size_t byte = 0; byte < base.size(); ++byte)
    for (int bit = 0; bit < 8; ++bit) {
      std::string s = base;
      s[byte] = static_cast<char>(s[byte] ^ (1 << bit));
      seen.insert(hash128(s).hex());
      ++n;
    }
  EXPECT_EQ(seen.size(), n - 1);  // the empty string of zeros and of 'a's is the same input
}

TEST(Hash, AvalancheFlipsAboutHalfTheBits) {
  Hash128 a = hash128("the quick brown fox"), b = hash128("the quick brown fot");
  int differing = __builtin_popcountll(a.lo ^ b.lo) + __builtin_popcountll(a.hi ^ b.hi);
  EXPECT_GT(differing, 40);
  EXPECT_LT(differing, 88);
}

TEST(Hash, KeysArePartitionAware) {
  EXPECT_NE(hashKey({"ab", "c"}), hashKey({"a", "bc"}));
  EXPECT_NE(hashKey({}), hashKey({""}));
  EXPECT_NE(hashKey({"", ""}), hashKey({""}));
  EXPECT_EQ(hashKey({"sm_90", "n=500"}), hashKey({"sm_90", "n=500"}));
  EXPECT_EQ(hashKey({"x"}).size(), 32u);
}

}  // namespace
}  // namespace rtcg
