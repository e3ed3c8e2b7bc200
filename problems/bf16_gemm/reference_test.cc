#include "problems/bf16_gemm/reference.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

TEST(GemmCommonTest, DoubleToBf16RoundsOnceToNearestEven) {
  const std::pair<double, uint16_t> cases[] = {
      {1.0, 0x3F80},
      {-2.0, 0xC000},
      {0.0, 0x0000},
      {-0.0, 0x8000},
      {1.0 + 0x1p-8, 0x3F80},                // half an ulp: tie, to even (mantissa 0)
      {1.0 + 0x1p-8 + 0x1p-30, 0x3F81},      // just above the tie
      {1.0 + 3 * 0x1p-8, 0x3F82},            // 1.5 ulps: tie, to even (mantissa 2)
      {17.0, 0x4188},
      {0x1p-126, 0x0080},                    // smallest normal
      {0x1p-133, 0x0001},                    // smallest subnormal
      {0x1p-134, 0x0000},                    // half the smallest subnormal: tie, to 0
      {3 * 0x1p-134, 0x0002},                // 1.5 quanta: tie, to even 2
      {-5 * 0x1p-135, 0x8001},               // 1.25 quanta
      {0x1p127 * (2 - 0x1p-7), 0x7F7F},      // largest finite
      {0x1p127 * (2 - 0x1p-8), 0x7F80},      // its tie with 2^128: to even, which is Inf
      {-0x1p128, 0xFF80},
      {std::numeric_limits<double>::infinity(), 0x7F80},
      {std::numeric_limits<double>::quiet_NaN(), 0x7FC0},
  };
  for (const auto& [v, bits] : cases) EXPECT_EQ(DoubleToBf16(v), bits) << v;
}

TEST(GemmCommonTest, FormatDecoding) {
  EXPECT_EQ(Bf16ToDouble(0x3F80), 1.0);
  EXPECT_EQ(Bf16ToDouble(0x0001), 0x1p-133);
  EXPECT_EQ(E4M3ToDouble(0x38), 1.0);
  EXPECT_EQ(E4M3ToDouble(0x7E), 448.0);
  EXPECT_EQ(E4M3ToDouble(0xFE), -448.0);
  EXPECT_EQ(E4M3ToDouble(0x01), 0x1p-9);
  EXPECT_EQ(E4M3ToDouble(0x08), 0x1p-6);
  EXPECT_TRUE(std::signbit(E4M3ToDouble(0x80)));
  EXPECT_TRUE(std::isnan(E4M3ToDouble(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToDouble(0xFF)));
  EXPECT_EQ(E8M0ToDouble(127), 1.0);
  EXPECT_EQ(E8M0ToDouble(0), 0x1p-127);
  EXPECT_EQ(E8M0ToDouble(254), 0x1p127);
  EXPECT_TRUE(std::isnan(E8M0ToDouble(0xFF)));
}

TEST(GemmCommonTest, GroupStartsValidates) {
  auto ok = GroupStarts({2, 2, 5}, 5, 1);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_FALSE(GroupStarts({3, 2, 5}, 5, 1).ok());     // decreasing
  EXPECT_FALSE(GroupStarts({2, 4}, 5, 1).ok());        // does not reach the total
  EXPECT_FALSE(GroupStarts({-1, 5}, 5, 1).ok());       // negative
  EXPECT_FALSE(GroupStarts({16, 48}, 48, 32).ok());    // not aligned
  EXPECT_TRUE(GroupStarts({0, 0, 0}, 0, 32).ok());     // all empty
}

uint16_t B(double v) { return DoubleToBf16(v); }

TEST(Bf16GemmTest, WorkedExample) {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]]: D = A B^T = [[17,23],[39,53]].
  const std::vector<uint16_t> a = {B(1), B(2), B(3), B(4)}, b = {B(5), B(6), B(7), B(8)};
  std::vector<uint16_t> d(4);
  Bf16Gemm(a.data(), b.data(), 2, 2, 2, d.data());
  EXPECT_EQ(d, (std::vector<uint16_t>{0x4188, 0x41B8, 0x421C, 0x4254}));
}

TEST(Bf16GemmTest, TheSumIsExactThenRoundedOnce) {
  // 2^24 + 1 - 2^24: a float accumulator loses the 1, the reference keeps it.
  const std::vector<uint16_t> a = {B(0x1p24), B(1), B(-0x1p24)}, b = {B(1), B(1), B(1)};
  uint16_t d = 0;
  Bf16Gemm(a.data(), b.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F80);
  // 1 + 2^-8 is a bf16 tie (to 1.0); 1 + 2^-8 + 2^-20 is not (up).
  const std::vector<uint16_t> a2 = {B(1), B(0x1p-8), B(0x1p-20)}, b2 = {B(1), B(1), B(0)};
  Bf16Gemm(a2.data(), b2.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F80);
  const std::vector<uint16_t> b3 = {B(1), B(1), B(1)};
  Bf16Gemm(a2.data(), b3.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F81);
}

TEST(Bf16GemmTest, SpecialValues) {
  uint16_t d = 0;
  const uint16_t nan = 0x7FC0, inf = 0x7F80;
  std::vector<uint16_t> a = {nan, B(1)}, b = {B(1), B(1)};
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7FC0);
  a = {inf, B(1)};
  b = {B(0), B(1)};  // Inf * 0 is NaN
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7FC0);
  a = {B(0x1p127), B(0x1p127)};
  b = {B(2), B(2)};  // overflows bf16
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7F80);
  a = {B(0x1p-100), B(0)};
  b = {B(0x1p-33), B(0)};  // 2^-133: a bf16 subnormal
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x0001);
}

// Against an independent long-double model on odd sizes, row/column placement included.
TEST(Bf16GemmTest, MatchesALongDoubleModel) {
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  const int64_t m = 5, n = 7, k = 33;
  std::vector<uint16_t> a(m * k), b(n * k), d(m * n);
  for (auto& v : a) v = B(nd(rng));
  for (auto& v : b) v = B(nd(rng));
  Bf16Gemm(a.data(), b.data(), m, n, k, d.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t x = 0; x < k; ++x) {
        s += static_cast<long double>(Bf16ToDouble(a[i * k + x])) * Bf16ToDouble(b[j * k + x]);
      }
      EXPECT_EQ(d[i * n + j], DoubleToBf16(static_cast<double>(s))) << i << "," << j;
    }
  }
}

}  // namespace
}  // namespace ws::gemm
