// Host checks of problems/init.h: the same code the runner compiles for the device.
#include "problems/init.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace {

float F(uint32_t bits) { return ws_f32_from_bits(bits); }

TEST(InitTest, Deterministic) {
  for (int dist : {kWsDistNormal, kWsDistUniform, kWsDistMxBlocks}) {
    for (uint64_t i : {0ull, 1ull, 31ull, 32ull, 123456789ull, (1ull << 40) + 7}) {
      EXPECT_EQ(ws_init_element(kWsDtypeBF16, dist, 0, 1, 42, 3, i),
                ws_init_element(kWsDtypeBF16, dist, 0, 1, 42, 3, i));
    }
  }
  EXPECT_EQ(ws_init_bits(1, 2, 3), ws_init_bits(1, 2, 3));
}

TEST(InitTest, SeedsTensorsAndElementsDiffer) {
  constexpr int kN = 10000;
  int same_seed = 0, same_tensor = 0, same_next = 0;
  for (int i = 0; i < kN; ++i) {
    uint64_t a = ws_init_element(kWsDtypeF32, kWsDistNormal, 0, 1, 11, 0, i);
    same_seed += a == ws_init_element(kWsDtypeF32, kWsDistNormal, 0, 1, 12, 0, i);
    same_tensor += a == ws_init_element(kWsDtypeF32, kWsDistNormal, 0, 1, 11, 1, i);
    same_next += a == ws_init_element(kWsDtypeF32, kWsDistNormal, 0, 1, 11, 0, i + 1);
  }
  EXPECT_EQ(same_seed, 0);
  EXPECT_EQ(same_tensor, 0);
  EXPECT_EQ(same_next, 0);
  // Raw bits: no collisions among the first elements, and every bit position toggles.
  uint64_t ones = 0, zeros = 0;
  for (int i = 0; i < 1000; ++i) {
    uint64_t b = ws_init_bits(7, 0, i);
    ones |= b;
    zeros |= ~b;
    EXPECT_NE(b, ws_init_bits(8, 0, i));
  }
  EXPECT_EQ(ones, ~0ull);
  EXPECT_EQ(zeros, ~0ull);
}

TEST(InitTest, Bf16RoundToNearestEven) {
  struct Case {
    uint32_t in;
    uint16_t want;
  };
  const Case cases[] = {
      {0x3F800000, 0x3F80},  // 1.0
      {0x3F808000, 0x3F80},  // halfway, even below: down
      {0x3F818000, 0x3F82},  // halfway, odd below: up
      {0x3F808001, 0x3F81},  // just above halfway
      {0x3F807FFF, 0x3F80},  // just below halfway
      {0x7F7F7FFF, 0x7F7F},  // below halfway to Inf: bf16 max
      {0x7F7F8000, 0x7F80},  // halfway, odd below: rounds to Inf
      {0x7F7FFFFF, 0x7F80},  // FLT_MAX -> Inf
      {0x7F800000, 0x7F80},  // Inf
      {0xFF800000, 0xFF80},  // -Inf
      {0x7FC00000, 0x7FC0},  // quiet NaN
      {0x7F800001, 0x7FC0},  // signalling NaN with a low payload stays NaN (not Inf)
      {0xFF800001, 0xFFC0},  // negative NaN keeps its sign
      {0x7FAB0000, 0x7FEB},  // payload kept, quieted
      {0x80000000, 0x8000},  // -0
      {0x00008000, 0x0000},  // float subnormal, halfway to the smallest bf16 subnormal: even
      {0x00018000, 0x0002},  // halfway, odd below: up
      {0x00010000, 0x0001},  // smallest bf16 subnormal
      {0x807FFFFF, 0x8080},  // largest negative float subnormal rounds up to -FLT_MIN
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ws_f32_to_bf16(F(c.in)), c.want) << std::hex << c.in;
  }
}

TEST(InitTest, F16RoundToNearestEven) {
  struct Case {
    float in;
    uint16_t want;
  };
  const Case cases[] = {
      {1.0f, 0x3C00},       {-2.0f, 0xC000},         {65504.0f, 0x7BFF},
      {65519.0f, 0x7BFF},   {65520.0f, 0x7C00},      {1e9f, 0x7C00},
      {std::ldexp(1.0f, -24), 0x0001},               {std::ldexp(1.0f, -25), 0x0000},
      {std::ldexp(3.0f, -25), 0x0002},               {std::ldexp(1.0f, -14), 0x0400},
      {0.1f, 0x2E66},       {-0.0f, 0x8000},
      {std::numeric_limits<float>::infinity(), 0x7C00},
  };
  for (const Case& c : cases) EXPECT_EQ(ws_f32_to_f16(c.in), c.want) << c.in;
  EXPECT_EQ(ws_f32_to_f16(std::numeric_limits<float>::quiet_NaN()) & 0x7E00, 0x7E00);
}

TEST(InitTest, Fp8Conversions) {
  struct Case {
    float in;
    uint8_t e4m3, e5m2;
  };
  const float inf = std::numeric_limits<float>::infinity();
  const Case cases[] = {
      {1.0f, 0x38, 0x3C},     {-1.0f, 0xB8, 0xBC},    {448.0f, 0x7E, 0x5F},
      {464.0f, 0x7E, 0x5F},   {1e9f, 0x7E, 0x7B},     {57344.0f, 0x7E, 0x7B},
      {inf, 0x7E, 0x7C},      {-inf, 0xFE, 0xFC},     {17.0f, 0x58, 0x4C},
      {19.0f, 0x5A, 0x4D},    {240.0f, 0x77, 0x5C},   {0.0f, 0x00, 0x00},
      {std::ldexp(1.0f, -9), 0x01, 0x18},             {std::ldexp(1.0f, -10), 0x00, 0x14},
      {std::ldexp(7.0f, -9), 0x07, 0x23},             {std::ldexp(1.0f, -6), 0x08, 0x24},
      {std::ldexp(1.0f, -16), 0x00, 0x01},            {std::ldexp(1.0f, -17), 0x00, 0x00},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ws_f32_to_e4m3(c.in), c.e4m3) << c.in;
    EXPECT_EQ(ws_f32_to_e5m2(c.in), c.e5m2) << c.in;
  }
  EXPECT_EQ(ws_f32_to_e4m3(std::numeric_limits<float>::quiet_NaN()), 0x7F);
  EXPECT_EQ(ws_f32_to_e5m2(std::numeric_limits<float>::quiet_NaN()), 0x7F);
}

TEST(InitTest, OtherDtypes) {
  EXPECT_EQ(ws_to_dtype_bits(2.5f, kWsDtypeI32), 2u);  // ties to even
  EXPECT_EQ(ws_to_dtype_bits(-3.5f, kWsDtypeI32), 0xFFFFFFFCu);
  EXPECT_EQ(ws_to_dtype_bits(1e20f, kWsDtypeI32), 0x7FFFFFFFu);
  EXPECT_EQ(ws_to_dtype_bits(-7.0f, kWsDtypeU8), 0u);
  EXPECT_EQ(ws_to_dtype_bits(300.0f, kWsDtypeU8), 255u);
  EXPECT_EQ(ws_to_dtype_bits(-1e30f, kWsDtypeI64), 0x8000000000000000ull);
  EXPECT_EQ(ws_to_dtype_bits(-5.0f, kWsDtypeI64), static_cast<uint64_t>(int64_t{-5}));
  EXPECT_EQ(ws_to_dtype_bits(1.0f, kWsDtypeE8M0), 127u);
  EXPECT_EQ(ws_to_dtype_bits(0.375f, kWsDtypeE8M0), 125u);
  EXPECT_EQ(ws_to_dtype_bits(std::numeric_limits<float>::quiet_NaN(), kWsDtypeE8M0), 0xFFu);
  EXPECT_EQ(ws_dtype_size(kWsDtypeBF16), 2);
  EXPECT_EQ(ws_dtype_size(kWsDtypeI64), 8);
  EXPECT_EQ(ws_dtype_size(kWsDtypeFP8E4M3), 1);
}

TEST(InitTest, MathHelpersAreAccurate) {
  std::mt19937_64 rng(1);
  for (int i = 0; i < 100000; ++i) {
    double u = ws_uniform01(rng());
    double x = u == 0 ? 1e-300 : u * std::ldexp(1.0, static_cast<int>(rng() % 60) - 30);
    EXPECT_NEAR(ws_log(x), std::log(x), 4e-16 * std::max(1.0, std::fabs(std::log(x)))) << x;
    EXPECT_NEAR(ws_cos_2pi(u), std::cos(6.283185307179586 * u), 3e-15) << u;
  }
  EXPECT_EQ(ws_log(1.0), 0.0);
}

TEST(InitTest, NormalMoments) {
  for (float mean : {0.0f, 3.0f}) {
    const float stddev = mean == 0 ? 1.0f : 2.0f;
    constexpr int kN = 200000;
    double sum = 0, sq = 0;
    int beyond_3sigma = 0;
    for (int i = 0; i < kN; ++i) {
      float v = F(static_cast<uint32_t>(
          ws_init_element(kWsDtypeF32, kWsDistNormal, mean, stddev, 5, 0, i)));
      sum += v;
      sq += v * v;
      beyond_3sigma += std::fabs(v - mean) > 3 * stddev;
    }
    double m = sum / kN, sd = std::sqrt(sq / kN - m * m);
    EXPECT_NEAR(m, mean, 0.02 * stddev);
    EXPECT_NEAR(sd, stddev, 0.02 * stddev);
    EXPECT_NEAR(beyond_3sigma / static_cast<double>(kN), 0.0027, 0.001);  // Gaussian tails
  }
}

TEST(InitTest, UniformRange) {
  constexpr int kN = 100000;
  double sum = 0;
  for (int i = 0; i < kN; ++i) {
    float v = F(static_cast<uint32_t>(
        ws_init_element(kWsDtypeF32, kWsDistUniform, -2.0f, 6.0f, 9, 0, i)));
    ASSERT_GE(v, -2.0f);
    ASSERT_LE(v, 6.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / kN, 2.0, 0.05);
  for (int i = 0; i < 1000; ++i) {
    float u = ws_uniform01f(ws_init_bits(3, 0, i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
  }
}

// Per-kind checks on one bf16 block; returns false with a message on failure.
::testing::AssertionResult CheckBlock(int kind, const uint16_t* b) {
  int inf = 0, nan = 0, zeros = 0, max = 0, boundary = 0;
  for (int j = 0; j < 32; ++j) {
    uint16_t h = b[j];
    uint16_t mag = h & 0x7FFF;
    int exp = mag >> 7;
    inf += mag == 0x7F80;
    nan += mag > 0x7F80;
    zeros += mag == 0;
    max += mag == 0x7F7F;
    // 448 * 2^k and its bf16 neighbours: mantissa 0x5F, 0x60 or 0x61.
    boundary += (mag & 0x7F) >= 0x5F && (mag & 0x7F) <= 0x61;
    if (kind == kWsMxPowersOfTwo && (mag & 0x7F) != 0) {
      return ::testing::AssertionFailure() << "power of two has a mantissa: " << h;
    }
    if (kind == kWsMxExtreme && exp > 12 && exp < 200) {
      return ::testing::AssertionFailure() << "extreme block holds a moderate value: " << h;
    }
    if (kind != kWsMxInf && kind != kWsMxNaN && mag >= 0x7F80) {
      return ::testing::AssertionFailure() << "unexpected Inf/NaN in kind " << kind;
    }
  }
  if (kind == kWsMxZeros && zeros != 32) return ::testing::AssertionFailure() << "non-zero";
  if (kind == kWsMxInf && inf != 1) return ::testing::AssertionFailure() << inf << " Infs";
  if (kind == kWsMxNaN && nan != 1) return ::testing::AssertionFailure() << nan << " NaNs";
  if (kind == kWsMxBf16Max && max < 1) return ::testing::AssertionFailure() << "no bf16 max";
  if (kind == kWsMxE4M3Boundary && boundary < 1) {
    return ::testing::AssertionFailure() << "no 448*2^k value";
  }
  return ::testing::AssertionSuccess();
}

TEST(InitTest, MxBlocksProducesEveryKind) {
  constexpr int kBlocks = 100000;
  // Expected shares, in percent, in kind order (see the table in init.h).
  const double kShare[kWsMxNumKinds] = {58, 8, 6, 6, 8, 6, 4, 2, 2};
  int count[kWsMxNumKinds] = {};
  int neg_zero = 0, pos_zero = 0, subnormal = 0, big = 0;
  uint16_t block[32];
  for (int b = 0; b < kBlocks; ++b) {
    const uint64_t base = static_cast<uint64_t>(b) * 32;
    int kind = ws_mx_block_kind(77, 2, base);
    ASSERT_GE(kind, 0);
    ASSERT_LT(kind, kWsMxNumKinds);
    ++count[kind];
    if (b % 7 != 0 && kind == kWsMxScaledNormal) continue;  // keep the test quick
    for (int j = 0; j < 32; ++j) {
      ASSERT_EQ(ws_mx_block_kind(77, 2, base + j), kind);  // one kind per block
      block[j] = static_cast<uint16_t>(
          ws_init_element(kWsDtypeBF16, kWsDistMxBlocks, 0, 1, 77, 2, base + j));
      if (kind == kWsMxZeros) (block[j] & 0x8000 ? neg_zero : pos_zero)++;
      if (kind == kWsMxExtreme) {
        subnormal += (block[j] & 0x7F80) == 0 && (block[j] & 0x7F) != 0;
        big += (block[j] & 0x7F80) >= (227 << 7);
      }
    }
    ASSERT_TRUE(CheckBlock(kind, block)) << "block " << b << " kind " << kind;
  }
  for (int k = 0; k < kWsMxNumKinds; ++k) {
    EXPECT_NEAR(100.0 * count[k] / kBlocks, kShare[k], 0.6) << "kind " << k;
  }
  EXPECT_GT(neg_zero, 0);
  EXPECT_GT(pos_zero, 0);
  EXPECT_GT(subnormal, 0);
  EXPECT_GT(big, 0);
}

TEST(InitTest, HashWordIsABijectionPerIndex) {
  // Distinct words at one index give distinct terms (checked on a sample), and moving a word to
  // another index changes its term.
  for (uint64_t w = 0; w < 1000; ++w) {
    EXPECT_NE(ws_hash_word(w, 5), ws_hash_word(w + 1, 5));
    EXPECT_NE(ws_hash_word(w, 5), ws_hash_word(w, 6));
  }
  EXPECT_NE(ws_canary_byte(1, 0) | (ws_canary_byte(1, 1) << 8), ws_canary_byte(2, 0) |
                                                                    (ws_canary_byte(2, 1) << 8));
}

}  // namespace
