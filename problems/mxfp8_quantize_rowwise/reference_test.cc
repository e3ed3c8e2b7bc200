#include "problems/mxfp8_quantize_rowwise/reference.h"

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ws::mxfp8 {
namespace {

// ---- An independent double-precision model of E4M3 ----------------------------------------------

double DecodeE4M3(uint8_t b) {
  const int e = (b >> 3) & 0xF;
  const int m = b & 7;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if ((b & 0x7F) == 0x7F)
    return std::copysign(std::nan(""), sign);
  if (e == 0)
    return sign * std::ldexp(m, -9);
  return sign * std::ldexp(1.0 + m / 8.0, e - 7);
}

// Round to nearest even on the E4M3 grid, then saturate; encode by lookup in the decode table.
uint8_t ModelE4M3(float v) {
  if (std::isnan(v))
    return std::signbit(v) ? 0xFF : 0x7F;
  static const std::map<double, uint8_t> kCodes = [] {
    std::map<double, uint8_t> m;
    for (int b = 0; b < 0x7F; ++b) m[DecodeE4M3(static_cast<uint8_t>(b))] = static_cast<uint8_t>(b);
    return m;
  }();
  const double a = std::fabs(static_cast<double>(v));
  double r = 448.0;
  if (!std::isinf(a)) {
    int ex = 0;
    std::frexp(a, &ex);  // a = f * 2^ex, f in [0.5, 1)
    const int q_exp = std::max(ex - 1, -6) - 3;
    r = std::min(std::ldexp(std::nearbyint(std::ldexp(a, -q_exp)), q_exp), 448.0);
  }
  const uint8_t code = kCodes.at(r);
  return std::signbit(v) ? (code | 0x80) : code;
}

float Bits(uint32_t b) {
  return std::bit_cast<float>(b);
}
float Bf16(uint16_t b) {
  return Bits(static_cast<uint32_t>(b) << 16);
}

// ---- FloatToE4M3 ------------------------------------------------------------------------------

TEST(FloatToE4M3Test, RoundTripsEveryCode) {
  for (int b = 0; b < 256; ++b) {
    const auto code = static_cast<uint8_t>(b);
    EXPECT_EQ(FloatToE4M3(static_cast<float>(DecodeE4M3(code))), code) << "code " << b;
  }
}

TEST(FloatToE4M3Test, EveryBf16TimesPowersOfTwoMatchesModel) {
  for (int k = -24; k <= 24; ++k) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
      const float v = std::ldexp(Bf16(static_cast<uint16_t>(b)), k);
      ASSERT_EQ(FloatToE4M3(v), ModelE4M3(v))
          << "bf16 0x" << std::hex << b << " * 2^" << std::dec << k << " = " << v;
    }
  }
}

TEST(FloatToE4M3Test, RoundingBitsAcrossRelevantExponentsMatchModel) {
  // Every high mantissa pattern, with low bits around the rounding point, for each exponent that
  // reaches the E4M3 grid (2^-12 .. 2^9).
  const uint32_t kLow[] = {0, 1, 0x7FF, 0x800, 0x801, 0xFFF};
  for (uint32_t e = 127 - 12; e <= 127 + 9; ++e) {
    for (uint32_t hi = 0; hi < 0x800; ++hi) {
      for (uint32_t lo : kLow) {
        for (uint32_t sign : {0u, 0x80000000u}) {
          const float v = Bits(sign | (e << 23) | (hi << 12) | lo);
          ASSERT_EQ(FloatToE4M3(v), ModelE4M3(v)) << v;
        }
      }
    }
  }
}

TEST(FloatToE4M3Test, RandomFp32MatchesModel) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 2'000'000; ++i) {
    const float v = Bits(rng());
    ASSERT_EQ(FloatToE4M3(v), ModelE4M3(v)) << std::hex << std::bit_cast<uint32_t>(v);
  }
}

TEST(FloatToE4M3Test, HandDerivedCases) {
  struct Case {
    float v;
    uint8_t want;
  };
  const Case cases[] = {
      {0.0f, 0x00},
      {-0.0f, 0x80},
      {448.0f, 0x7E},
      {-448.0f, 0xFE},
      {464.0f, 0x7E},  // tie 448/480: even mantissa (448)
      {480.0f, 0x7E},  // would be 0x7F (NaN): saturates
      {1e30f, 0x7E},
      {INFINITY, 0x7E},
      {-INFINITY, 0xFE},
      {NAN, 0x7F},
      {std::ldexp(1.0f, -9), 0x01},   // min subnormal
      {std::ldexp(1.0f, -10), 0x00},  // tie 0 / 2^-9: even (0)
      {-std::ldexp(1.0f, -10), 0x80},
      {std::nextafter(std::ldexp(1.0f, -10), 1.0f), 0x01},
      {std::ldexp(1.5f, -9), 0x02},  // tie 1/2 (x 2^-9): even
      {std::ldexp(2.5f, -9), 0x02},  // tie 2/3: even
      {std::ldexp(7.5f, -9), 0x08},  // tie 7/8: rolls into the min normal 2^-6
      {std::ldexp(1.0f, -6), 0x08},
      {1.0f, 0x38},
      {1.0625f, 0x38},  // tie 1.0 / 1.125
      {1.1875f, 0x3A},  // tie 1.125 / 1.25
      {240.0f, 0x77},
      {248.0f, 0x78},                  // tie 240 (m=7) / 256 (m=0)
      {std::ldexp(1.0f, -127), 0x00},  // fp32 subnormal
      {Bits(0x00000001), 0x00},
      {Bits(0x80000001), 0x80},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(FloatToE4M3(c.v), c.want) << "v = " << c.v;
  }
}

// ---- Scales and blocks --------------------------------------------------------------------------

struct BlockCase {
  const char* name;
  std::vector<uint16_t> x;  // the first values of the block; the rest are +0
  Rounding rounding;
  uint8_t scale;
  std::vector<uint8_t> q;  // expected q for the values given; the rest are 0x00
};

TEST(QuantizeBlockTest, HandDerivedBlocks) {
  constexpr auto R = Rounding::kRceil;
  constexpr auto F = Rounding::kFloor;
  const std::vector<BlockCase> cases = {
      {"zeros rceil", {}, R, 0x00, {}},
      {"zeros floor", {}, F, 0x00, {}},
      {"negative zero", {0x8000}, R, 0x00, {0x80}},
      // bf16 subnormals: amax tiny, S clamps to 0; x * 2^127.
      {"bf16 subnormals rceil", {0x0001, 0x8001, 0x0003}, R, 0x00, {0x08, 0x88, 0x14}},
      {"bf16 subnormals floor", {0x0001, 0x8001, 0x0003}, F, 0x00, {0x08, 0x88, 0x14}},
      {"largest bf16 subnormal", {0x007F}, F, 0x00, {0x40}},  // 127 * 2^-6 rounds to 2.0
      // +-Inf: rceil gives S = 254 (x * 2^-127); floor marks the block NaN.
      {"inf rceil", {0x7F80, 0xFF80, 0x3F80}, R, 0xFE, {0x7E, 0xFE, 0x00}},
      {"inf floor", {0x7F80, 0x3F80}, F, 0xFF, std::vector<uint8_t>(32, 0x7F)},
      {"nan rceil", {0x3F80, 0x7FC0}, R, 0xFF, std::vector<uint8_t>(32, 0x7F)},
      {"nan floor", {0xFFC1}, F, 0xFF, std::vector<uint8_t>(32, 0x7F)},
      // amax 1.0: S = 119 both ways; x * 2^8.
      {"powers of two",
       {0x3F80, 0x3F00, 0x3B80, 0x3880, 0x3800, 0x3700, 0x3680, 0x36C0, 0xBF80},
       R,
       119,
       {0x78, 0x70, 0x38, 0x08, 0x04, 0x01, 0x00, 0x01, 0xF8}},
      {"powers of two floor", {0x3F80, 0x3F00}, F, 119, {0x78, 0x70}},
      // amax 448: d = 448 * fp32(1/448) = 1 + 3*2^-26 rounds to exactly 1.0, so S = 127.
      {"448 rceil", {0x43E0, 0x43DF}, R, 127, {0x7E, 0x7E}},
      {"448 floor", {0x43E0, 0x43DF}, F, 127, {0x7E, 0x7E}},
      // amax 450 (one bf16 ulp above 448): rceil S = 128 (x / 2); floor S = 127.
      {"450 rceil", {0x43E1, 0x43E0, 0x43DF}, R, 128, {0x76, 0x76, 0x76}},
      {"450 floor", {0x43E1, 0x43E0, 0x43DF}, F, 127, {0x7E, 0x7E, 0x7E}},
      // 464 ties to 448, 480 saturates (floor keeps them unscaled).
      {"saturation floor", {0x43F0, 0x43E8, 0xC3F0}, F, 127, {0x7E, 0x7E, 0xFE}},
      {"510 rceil", {0x43FF}, R, 128, {0x78}},
      {"510 floor", {0x43FF}, F, 127, {0x7E}},
      // bf16 max 1.9921875 * 2^127.
      {"bf16 max rceil", {0x7F7F, 0xFF7F}, R, 247, {0x78, 0xF8}},
      {"bf16 max floor", {0x7F7F, 0xFF7F}, F, 246, {0x7E, 0xFE}},
      // d an fp32 subnormal: 448 * 2^-128 gives d = 2^-128 (S = 0); 448 * 2^-127 gives exactly
      // 2^-127 (S = 0); one ulp above that needs 2^-126 (S = 1); 2^-118 gives 8/7 * 2^-127.
      {"d = 2^-128", {0x03E0}, R, 0, {0x76}},
      {"d = 2^-127", {0x0460}, R, 0, {0x7E}},
      {"d just above 2^-127", {0x0461}, R, 1, {0x76}},
      {"amax 2^-118", {0x0480}, R, 1, {0x78}},
      {"amax 2^-118 floor", {0x0480}, F, 1, {0x78}},  // floor(log2) = -118: S = 1
  };
  for (const BlockCase& c : cases) {
    std::array<uint16_t, 32> x{};
    std::copy(c.x.begin(), c.x.end(), x.begin());
    std::array<uint8_t, 32> want{};
    std::copy(c.q.begin(), c.q.end(), want.begin());
    std::array<uint8_t, 32> q{};
    uint8_t scale = 0x5A;
    QuantizeBlock(x.data(), c.rounding, q.data(), &scale);
    EXPECT_EQ(scale, c.scale) << c.name;
    for (int i = 0; i < 32; ++i) EXPECT_EQ(q[i], want[i]) << c.name << " q[" << i << "]";
  }
}

TEST(ScaleFromAmaxTest, HandDerived) {
  EXPECT_EQ(ScaleFromAmax(0.0f, Rounding::kRceil), 0);
  EXPECT_EQ(ScaleFromAmax(448.0f, Rounding::kRceil), 127);
  EXPECT_EQ(ScaleFromAmax(std::nextafter(448.0f, 0.0f), Rounding::kRceil), 127);
  // 448 + 2^-15: d = 1 + (1/1.75 + 3/8) ulp, rounds up to 1 + ulp.
  EXPECT_EQ(ScaleFromAmax(std::nextafter(448.0f, 1e9f), Rounding::kRceil), 128);
  EXPECT_EQ(ScaleFromAmax(450.0f, Rounding::kRceil), 128);
  EXPECT_EQ(ScaleFromAmax(INFINITY, Rounding::kRceil), 254);
  EXPECT_EQ(ScaleFromAmax(3e38f, Rounding::kRceil), 247);
  EXPECT_EQ(ScaleFromAmax(Bits(0x00000001), Rounding::kRceil), 0);
  EXPECT_EQ(ScaleFromAmax(INFINITY, Rounding::kFloor), 0xFF);
  EXPECT_EQ(ScaleFromAmax(0.0f, Rounding::kFloor), 0);
  EXPECT_EQ(ScaleFromAmax(1.0f, Rounding::kFloor), 119);
  EXPECT_EQ(ScaleFromAmax(std::nextafter(2.0f, 0.0f), Rounding::kFloor), 119);
  EXPECT_EQ(ScaleFromAmax(std::ldexp(1.0f, 127), Rounding::kFloor), 246);
  EXPECT_EQ(ScaleFromAmax(std::ldexp(1.0f, -119), Rounding::kFloor), 0);
  EXPECT_EQ(ScaleFromAmax(std::ldexp(1.0f, -118), Rounding::kFloor), 1);
  EXPECT_EQ(ScaleFromAmax(std::ldexp(1.0f, -140), Rounding::kFloor), 0);  // fp32 subnormal
}

TEST(QuantizeRowwiseTest, LaysOutBlocksRowMajor) {
  // 2 x 64: block (r, b) holds the value 2^(2r + b) in its first element.
  constexpr int kM = 2, kK = 64;
  std::vector<uint16_t> x(kM * kK, 0);
  for (int r = 0; r < kM; ++r) {
    for (int b = 0; b < 2; ++b) {
      x[r * kK + b * 32] = static_cast<uint16_t>((127 + 2 * r + b) << 7);
    }
  }
  std::vector<uint8_t> q(kM * kK, 0xAA), scales(kM * 2, 0xAA);
  QuantizeRowwise(x.data(), kM, kK, Rounding::kRceil, q.data(), scales.data());
  // amax 2^p: d = 2^p * 8/7 * 2^-9, S = 127 + p - 8; each block's first q is 2^8 (0x78).
  EXPECT_EQ(scales, (std::vector<uint8_t>{119, 120, 121, 122}));
  for (int i = 0; i < kM * kK; ++i) EXPECT_EQ(q[i], i % 32 == 0 ? 0x78 : 0x00) << i;
}

}  // namespace
}  // namespace ws::mxfp8
