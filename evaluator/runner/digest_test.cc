// The host reference of the keyed output digest (digest.h), which the device kernel ws_digest
// must match (runner_digest_gpu_test checks that on a GPU): equal bytes give equal digests; one
// changed byte anywhere, swapped words, another length or another key give another digest.
#include "evaluator/runner/digest.h"

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ws::runner {
namespace {

struct Digest {
  unsigned long long lane[2];
  bool operator==(const Digest& o) const { return lane[0] == o.lane[0] && lane[1] == o.lane[1]; }
  // Both lanes differ: each is a full 64-bit hash of its own.
  bool AllDiffer(const Digest& o) const { return lane[0] != o.lane[0] && lane[1] != o.lane[1]; }
};

Digest Of(const std::vector<unsigned char>& b, uint64_t key) {
  Digest d;
  ws_digest_host(b.data(), static_cast<long long>(b.size()), key, d.lane);
  return d;
}

std::vector<unsigned char> Pattern(size_t n) {
  std::vector<unsigned char> b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<unsigned char>(i * 131 + 7);
  return b;
}

constexpr uint64_t kKey = 0x9A3F00C1D2E3F405ull;

TEST(DigestTest, EqualBytesEqualDigests) {
  EXPECT_TRUE(Of(Pattern(1003), kKey) == Of(Pattern(1003), kKey));
}

TEST(DigestTest, OneFlippedByteAnywhereChangesBothLanes) {
  // 1003 bytes: 125 whole words and a 3-byte tail.
  const auto base = Pattern(1003);
  const Digest want = Of(base, kKey);
  for (size_t pos :
       {size_t{0}, size_t{7}, size_t{8}, size_t{501}, size_t{999}, size_t{1000}, size_t{1002}}) {
    for (unsigned char bit : {0x01, 0x80}) {
      auto b = base;
      b[pos] ^= bit;
      EXPECT_TRUE(Of(b, kKey).AllDiffer(want)) << "byte " << pos << " bit " << int(bit);
    }
  }
}

TEST(DigestTest, PositionsCount) {
  // Swapping two whole words keeps the multiset of words: the digest must still change.
  auto b = Pattern(64);
  const Digest want = Of(b, kKey);
  for (int i = 0; i < 8; ++i) std::swap(b[i], b[8 + i]);
  EXPECT_TRUE(Of(b, kKey).AllDiffer(want));
  // Two equal words swapped are the same bytes.
  std::vector<unsigned char> z(64, 0);
  EXPECT_TRUE(Of(z, kKey) == Of(std::vector<unsigned char>(64, 0), kKey));
}

TEST(DigestTest, LengthCountsEvenForZeroBytes) {
  const Digest empty = Of({}, kKey);
  const Digest one = Of({0}, kKey), eight = Of(std::vector<unsigned char>(8, 0), kKey),
               nine = Of(std::vector<unsigned char>(9, 0), kKey);
  EXPECT_TRUE(empty.AllDiffer(one));
  EXPECT_TRUE(one.AllDiffer(eight));
  EXPECT_TRUE(eight.AllDiffer(nine));
}

TEST(DigestTest, AnotherKeyAnotherDigest) {
  const auto b = Pattern(1003);
  EXPECT_TRUE(Of(b, kKey).AllDiffer(Of(b, kKey ^ 1)));
  EXPECT_TRUE(Of(b, kKey).AllDiffer(Of(b, kKey ^ (uint64_t{1} << 63))));
  EXPECT_TRUE(Of({}, kKey).AllDiffer(Of({}, kKey + 1)));
}

TEST(DigestTest, LanesAreIndependent) {
  // The same sum folded by each lane's mixer and key: the lanes never coincide by construction.
  const Digest d = Of(Pattern(4096), kKey);
  EXPECT_NE(d.lane[0], d.lane[1]);
  EXPECT_NE(ws_digest_lane_key(0, kKey), ws_digest_lane_key(1, kKey));
}

}  // namespace
}  // namespace ws::runner
