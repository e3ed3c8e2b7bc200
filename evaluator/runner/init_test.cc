// Host checks of problems/init.h: the same code the runner compiles for the device.
#include "problems/init.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
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
    // The float forms behind the normal draw: a few float ulps.
    const float xf = static_cast<float>(x);
    if (xf > 0) {
      EXPECT_NEAR(ws_logf(xf), std::log(static_cast<double>(xf)),
                  3e-7 * std::max(1.0, std::fabs(std::log(static_cast<double>(xf)))))
          << xf;
    }
    const float uf = static_cast<float>(ws_uniform01f(rng()));
    EXPECT_NEAR(ws_cos_2pif(uf), std::cos(6.283185307179586 * uf), 4e-7) << uf;
  }
  EXPECT_EQ(ws_log(1.0), 0.0);
  EXPECT_EQ(ws_logf(1.0f), 0.0f);
  EXPECT_EQ(ws_cos_2pif(0.0f), 1.0f);
  EXPECT_EQ(ws_cos_2pif(0.5f), -1.0f);
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

// "tiles": a 32x32 tile shares one kind, so column blocks (what a columnwise quantizer reads)
// are all-zero, all powers of two or hold one Inf exactly as often as row blocks are.
TEST(InitTest, MxBlockTilesGiveColumnBlocksEveryKind) {
  constexpr long long kCols = 96;  // three tiles per row of tiles; a ragged last dim is legal too
  constexpr long long kRows = 32 * 400;
  WsInitParams p{kWsDistMxBlocks, 0, 1, 0, 0, kCols, 0, 0};
  int zero_cols = 0, inf_cols = 0, tiles_seen[kWsMxNumKinds] = {};
  for (long long tr = 0; tr < kRows / 32; ++tr) {
    for (long long tc = 0; tc < kCols / 32; ++tc) {
      const int kind = ws_mx_block_kind(5, 1, (tr * 32) * kCols + tc * 32, kCols);
      ++tiles_seen[kind];
      for (int c = 0; c < 32; ++c) {
        int zeros = 0, infs = 0;
        for (int r = 0; r < 32; ++r) {
          const unsigned long long i = (tr * 32 + r) * kCols + tc * 32 + c;
          ASSERT_EQ(ws_mx_block_kind(5, 1, i, kCols), kind) << "one kind per tile";
          const auto bits = static_cast<uint16_t>(ws_init_element_p(kWsDtypeBF16, p, 5, 1, i));
          zeros += (bits & 0x7FFF) == 0;
          infs += (bits & 0x7FFF) == 0x7F80;
        }
        if (kind == kWsMxZeros) {
          EXPECT_EQ(zeros, 32);
          ++zero_cols;
        }
        if (kind == kWsMxInf) {
          EXPECT_EQ(infs, 1) << "one Inf per column block of an Inf tile";
          ++inf_cols;
        }
      }
    }
  }
  for (int k = 0; k < kWsMxNumKinds; ++k) EXPECT_GT(tiles_seen[k], 0) << "kind " << k;
  EXPECT_GT(zero_cols, 0);
  EXPECT_GT(inf_cols, 0);
  // Row blocks (tile_cols 0) are unchanged by the option's existence.
  EXPECT_EQ(ws_init_element_p(kWsDtypeBF16, WsInitParams{kWsDistMxBlocks, 0, 1, 0, 0, 0, 0, 0}, 5,
                              1, 1234),
            ws_init_element(kWsDtypeBF16, kWsDistMxBlocks, 0, 1, 5, 1, 1234));
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

TEST(InitTest, ExpIsAccurate) {
  std::mt19937_64 rng(3);
  for (int i = 0; i < 100000; ++i) {
    const double x = (ws_uniform01(rng()) - 0.5) * 1400;
    EXPECT_NEAR(ws_exp(x), std::exp(x), 4e-16 * std::exp(x)) << x;
  }
  EXPECT_EQ(ws_exp(0.0), 1.0);
  EXPECT_EQ(ws_exp(-800.0), 0.0);
}

TEST(InitTest, AffinePermIsAPermutationThatDependsOnTheSeed) {
  for (unsigned long long n : {1ull, 2ull, 3ull, 8ull, 60ull, 128ull, 256ull, 384ull, 1000ull}) {
    int differs = 0;
    for (unsigned long long seed = 1; seed <= 5; ++seed) {
      const WsAffinePerm p = ws_affine_perm(seed, 4, n);
      const WsAffinePerm q = ws_affine_perm(seed + 100, 4, n);
      std::vector<int> seen(n, 0);
      for (unsigned long long e = 0; e < n; ++e) {
        const unsigned long long r = ws_perm_apply(p, e);
        ASSERT_LT(r, n);
        ASSERT_EQ(seen[r]++, 0) << "n " << n << " seed " << seed;
        differs += r != ws_perm_apply(q, e);
      }
    }
    if (n >= 8) {
      EXPECT_GT(differs, 0) << n;
    }
  }
}

// Row t of a topk_ids tensor, element by element (the device's way).
std::vector<long long> TopkRow(unsigned long long seed, long long experts, long long k,
                               float skew, unsigned long long t) {
  const WsInitParams p{kWsDistTopkIds, skew, 0, 0, 0, experts, k, 0};
  std::vector<long long> row;
  for (long long j = 0; j < k; ++j) {
    row.push_back(static_cast<int>(static_cast<uint32_t>(
        ws_init_element_p(kWsDtypeI32, p, seed, 1, t * k + j))));
  }
  return row;
}

TEST(InitTest, TopkIdsAreDistinctAndInRange) {
  struct Case {
    long long experts, k;
    float skew;
  };
  // Includes k == experts under heavy skew (the fallback), and a huge expert count (the slots of
  // an unpermute: cheap because nothing scans the experts).
  for (const Case& c : {Case{1, 1, 0}, Case{8, 8, 0}, Case{8, 8, 2}, Case{60, 4, 1},
                        Case{256, 8, 0}, Case{256, 8, 1.5f}, Case{384, 8, 1}, Case{64, 64, 16},
                        Case{163840, 8, 0}, Case{163840, 64, 1.2f}}) {
    for (unsigned long long t = 0; t < 40; ++t) {
      const std::vector<long long> got = TopkRow(9, c.experts, c.k, c.skew, t);
      std::set<long long> seen;
      for (long long id : got) {
        ASSERT_GE(id, 0);
        ASSERT_LT(id, c.experts);
        ASSERT_TRUE(seen.insert(id).second) << "id " << id << " twice in row " << t << " (E "
                                            << c.experts << ", k " << c.k << ")";
      }
    }
  }
}

TEST(InitTest, TopkRankIsTheZipfInverseTransform) {
  // Draw m of row t: u from stream kWsStreamTopkDraw + m, then F^-1(u) with the standard library.
  for (double skew : {0.0, 1.0, 1.5, 0.5}) {
    for (unsigned int m = 0; m < 20; ++m) {
      const double u = ws_uniform01(ws_draw(9, 1, 3, kWsStreamTopkDraw + m));
      const double n = 256;
      double x;
      if (skew == 0) {
        x = u * n;
      } else if (skew == 1) {
        x = std::exp(u * std::log(1 + n)) - 1;
      } else {
        x = std::pow(1 + u * (std::pow(1 + n, 1 - skew) - 1), 1 / (1 - skew)) - 1;
      }
      const unsigned long long r = ws_topk_rank(9, 1, 256, skew, 3, m);
      EXPECT_NEAR(static_cast<double>(r), std::floor(x), 1.0) << skew << " " << m;
      EXPECT_LT(r, 256u);
    }
  }
  // With skew 1, rank 0 takes ln(2) / ln(257) = 12.5% of the draws.
  int zero = 0;
  for (unsigned int m = 0; m < 4000; ++m) zero += ws_topk_rank(5, 0, 256, 1.0, m / 40, m % 40) == 0;
  EXPECT_NEAR(zero / 4000.0, std::log(2.0) / std::log(257.0), 0.015);
}

TEST(InitTest, TopkSkewSkewsAndUniformDoesNot) {
  constexpr long long kE = 64, kK = 4;
  constexpr int kRows = 3000;
  for (float skew : {0.0f, 1.2f}) {
    std::vector<int> count(kE, 0);
    double first_rank = 0, last_rank = 0;
    const WsAffinePerm perm = ws_affine_perm(21, 1, kE);
    std::vector<long long> rank_of(kE);
    for (long long r = 0; r < kE; ++r) rank_of[ws_perm_apply(perm, r)] = r;
    for (int t = 0; t < kRows; ++t) {
      const std::vector<long long> row = TopkRow(21, kE, kK, skew, t);
      for (long long id : row) ++count[id];
      first_rank += static_cast<double>(rank_of[row[0]]);
      last_rank += static_cast<double>(rank_of[row[kK - 1]]);
    }
    const double mean = static_cast<double>(kRows) * kK / kE;
    const int top = *std::max_element(count.begin(), count.end());
    const int bottom = *std::min_element(count.begin(), count.end());
    if (skew == 0) {
      EXPECT_LT(top, 1.35 * mean);
      EXPECT_GT(bottom, 0.65 * mean);
      EXPECT_NEAR(first_rank / kRows, last_rank / kRows, 3.0);
    } else {
      EXPECT_GT(top, 4 * mean);
      EXPECT_LT(bottom, 0.5 * mean);
      // The rank-0 expert is the most popular.
      EXPECT_EQ(count[ws_perm_apply(perm, 0)], top);
      // Drawn in order: heavier experts come first.
      EXPECT_LT(first_rank / kRows, 0.9 * last_rank / kRows);
    }
  }
  // Other seeds, other popular experts.
  EXPECT_NE(ws_perm_apply(ws_affine_perm(21, 1, kE), 0),
            ws_perm_apply(ws_affine_perm(22, 1, kE), 0));
}

std::vector<long long> Offsets(unsigned long long seed, long long total, long long align,
                               long long groups, float skew, float empty) {
  const WsInitParams p{kWsDistGroupOffsets, skew, empty, 0, 0, total, align, groups};
  std::vector<long long> out;
  for (long long g = 0; g < groups; ++g) {
    out.push_back(static_cast<int>(
        static_cast<uint32_t>(ws_init_element_p(kWsDtypeI32, p, seed, 2, g))));
  }
  return out;
}

TEST(InitTest, GroupOffsetsAreMonotoneAlignedAndEndAtTotal) {
  struct Case {
    long long total, align, groups;
    float skew, empty;
  };
  for (const Case& c : {Case{4096, 16, 64, 0, 0}, Case{4096, 16, 64, 1, 0.25f},
                        Case{131072, 128, 256, 1.2f, 0.1f}, Case{0, 1, 8, 0, 0},
                        Case{96, 32, 1, 0, 0}, Case{640, 1, 7, 3, 0.5f},
                        Case{1 << 20, 256, 384, 0.5f, 0.05f}, Case{64, 64, 5, 0, 0.999f}}) {
    for (unsigned long long seed : {1ull, 2ull, 3ull}) {
      const std::vector<long long> off = Offsets(seed, c.total, c.align, c.groups, c.skew, c.empty);
      long long prev = 0;
      for (long long g = 0; g < c.groups; ++g) {
        ASSERT_GE(off[g], prev) << "group " << g;
        ASSERT_EQ(off[g] % c.align, 0) << "group " << g;
        prev = off[g];
      }
      ASSERT_EQ(off.back(), c.total);
    }
  }
  // Empty groups appear as asked; seeds differ.
  const std::vector<long long> a = Offsets(5, 4096, 16, 64, 1, 0.25f);
  int empty = 0;
  for (size_t g = 0; g < a.size(); ++g) empty += a[g] == (g ? a[g - 1] : 0);
  EXPECT_GE(empty, 8);
  EXPECT_LE(empty, 28);
  EXPECT_NE(a, Offsets(6, 4096, 16, 64, 1, 0.25f));
  const std::vector<long long> none = Offsets(5, 4096, 16, 64, 0, 0);
  for (size_t g = 0; g < none.size(); ++g) EXPECT_GT(none[g], g ? none[g - 1] : 0) << g;
}

TEST(InitTest, GroupOffsetsSkewMakesBigGroupsAndMatchesTheFormula) {
  const auto largest_share = [](const std::vector<long long>& off) {
    long long biggest = 0;
    for (size_t g = 0; g < off.size(); ++g) {
      biggest = std::max(biggest, off[g] - (g ? off[g - 1] : 0));
    }
    return static_cast<double>(biggest) / off.back();
  };
  EXPECT_LT(largest_share(Offsets(7, 1 << 20, 16, 64, 0, 0)), 0.05);
  EXPECT_GT(largest_share(Offsets(7, 1 << 20, 16, 64, 2, 0)), 0.3);

  // The formula with the standard library's exp and log.
  constexpr long long kTotal = 1 << 20, kAlign = 16, kG = 64;
  constexpr double kSkew = 1.2, kEmpty = 0.2;
  const std::vector<long long> off = Offsets(8, kTotal, kAlign, kG, 1.2f, 0.2f);
  const WsAffinePerm perm = ws_affine_perm(8, 2, kG);
  std::vector<double> w(kG);
  double all = 0;
  for (long long g = 0; g < kG; ++g) {
    const bool empty =
        ws_uniform01(ws_draw(8, 2, g, kWsStreamRouting + 2)) < static_cast<float>(kEmpty);
    const double skew = static_cast<float>(kSkew);  // as the runner passes it
    w[g] = empty ? 0
                 : (0.5 + ws_uniform01(ws_draw(8, 2, g, kWsStreamRouting + 3))) *
                       std::pow(1.0 + ws_perm_apply(perm, g), -skew);
    all += w[g];
  }
  double upto = 0;
  int exact = 0;
  for (long long g = 0; g < kG; ++g) {
    upto += w[g];
    const long long want =
        g + 1 == kG ? kTotal : static_cast<long long>(kTotal / kAlign * (upto / all)) * kAlign;
    EXPECT_LE(std::llabs(off[g] - want), kAlign) << g;
    exact += off[g] == want;
  }
  EXPECT_GE(exact, kG - 2);
}

TEST(InitTest, NormalOutliers) {
  constexpr int kN = 200000;
  const WsInitParams p{kWsDistNormalOutliers, 0, 2, 0.01f, 1000, 0, 0, 0};
  int outliers = 0;
  double sq = 0;
  int n_inliers = 0;
  for (int i = 0; i < kN; ++i) {
    const float v = F(static_cast<uint32_t>(ws_init_element_p(kWsDtypeF32, p, 4, 0, i)));
    ASSERT_TRUE(std::isfinite(v));
    if (std::fabs(v) > 40) {
      ++outliers;
    } else {
      sq += v * v;
      ++n_inliers;
    }
  }
  // Outliers are 1000 * N(0, 2): nearly all beyond 40 (20 sigma of the inliers).
  EXPECT_NEAR(outliers / static_cast<double>(kN), 0.01 * 0.99, 0.0015);
  EXPECT_NEAR(std::sqrt(sq / n_inliers), 2.0, 0.05);
  // A huge outlier scale stays finite in bf16 (clamped to its largest value).
  const WsInitParams huge{kWsDistNormalOutliers, 0, 1, 0.5f, 3e38f, 0, 0, 0};
  int clamped = 0;
  for (int i = 0; i < 1000; ++i) {
    const uint16_t h = static_cast<uint16_t>(ws_init_element_p(kWsDtypeBF16, huge, 4, 0, i));
    ASSERT_NE(h & 0x7FFF, 0x7F80) << "Inf at " << i;
    clamped += (h & 0x7FFF) == 0x7F7F;
  }
  EXPECT_GT(clamped, 80);  // half are outliers, and |z| > 1.13 for a quarter of those
  // The two-parameter distributions are unchanged through the general entry point.
  const WsInitParams normal{kWsDistNormal, 1, 3, 0, 0, 0, 0, 0};
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(ws_init_element_p(kWsDtypeBF16, normal, 4, 0, i),
              ws_init_element(kWsDtypeBF16, kWsDistNormal, 1, 3, 4, 0, i));
  }
}

TEST(InitTest, PairsAreTheElementsOneByOne) {
  // The generation kernel's unit (ws_init_pair_p) against the host's element-wise replay, for
  // every distribution, in every dtype size, with row blocks and with tiles of odd widths.
  const std::vector<WsInitParams> dists = {
      {kWsDistNormal, 0.5f, 2, 0, 0, 0, 0, 0},
      {kWsDistUniform, -1, 3, 0, 0, 0, 0, 0},
      {kWsDistMxBlocks, 0, 1, 0, 0, 0, 0, 0},
      {kWsDistMxBlocks, 0, 1, 0, 0, 96, 0, 0},
      {kWsDistMxBlocks, 0, 1, 0, 0, 33, 0, 0},
      {kWsDistMxBlocks, 0, 1, 0, 0, 7, 0, 0},
      {kWsDistNormalOutliers, 0, 2, 0.05f, 100, 0, 0, 0},
      {kWsDistTopkIds, 0, 0, 0, 0, 64, 4, 0},
      {kWsDistGroupOffsets, 0.5f, 0.2f, 0, 0, 65536, 16, 64},
  };
  const int dtypes[] = {kWsDtypeBF16, kWsDtypeF32, kWsDtypeFP8E4M3, kWsDtypeE8M0, kWsDtypeI32,
                        kWsDtypeI64};
  int checked = 0;
  for (const WsInitParams& p : dists) {
    const bool ints = p.dist == kWsDistTopkIds || p.dist == kWsDistGroupOffsets;
    for (int dtype : dtypes) {
      if (ints != (dtype == kWsDtypeI32 || dtype == kWsDtypeI64)) continue;
      const unsigned long long n = p.dist == kWsDistGroupOffsets ? 64 : 4096;
      for (unsigned long long i = 0; i + 32 < n; ++i) {
        if (ws_pair_half(i) != 0) continue;
        const WsPairBits b = ws_init_pair_p(dtype, p, 21, 2, i);
        ASSERT_EQ(b.first, ws_init_element_p(dtype, p, 21, 2, i))
            << p.dist << " " << dtype << " " << i;
        ASSERT_EQ(b.second, ws_init_element_p(dtype, p, 21, 2, i + 32))
            << p.dist << " " << dtype << " " << i + 32;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 15000);
  // The pair's two normals (cosine and sine of one angle) are uncorrelated, as are their squares.
  constexpr int kPairs = 100000;
  double xy = 0, x2y2 = 0, x2 = 0;
  for (int j = 0; j < kPairs; ++j) {
    const unsigned long long i = j / 32 * 64 + j % 32;  // a pair's first element
    const double x = ws_normal_at(8, 0, i), y = ws_normal_at(8, 0, i + 32);
    xy += x * y;
    x2y2 += x * x * y * y;
    x2 += x * x;
  }
  EXPECT_NEAR(xy / kPairs, 0.0, 0.02);
  EXPECT_NEAR(x2 / kPairs, 1.0, 0.02);
  EXPECT_NEAR(x2y2 / kPairs, 1.0, 0.05);  // E[x^2 y^2] = 1 for independent N(0, 1)
}

TEST(InitTest, MxRunsShareTheirBlockAndOffsetTheirLanes) {
  // What the generation kernel's spans rely on (ws_generate_mx_spans): with row blocks, or tiles
  // of a multiple of 32 columns, every aligned 32-element run lies in one block, and element t of
  // a run sits t lanes (mod 32) after the run's first element.
  for (long long cols : {0LL, 32LL, 96LL, 2880LL, 7168LL}) {
    for (unsigned long long run = 0; run < 4096; run += (run < 512 ? 1 : 37)) {
      const WsMxLane first = ws_mx_lane(run * 32, cols);
      for (unsigned int t = 0; t < 32; ++t) {
        const WsMxLane e = ws_mx_lane(run * 32 + t, cols);
        ASSERT_EQ(e.block, first.block) << cols << " " << run << " " << t;
        ASSERT_EQ(e.lane, (first.lane + t) & 31u) << cols << " " << run << " " << t;
      }
    }
  }
  // A width that is not a multiple of 32 breaks it (the kernel then generates by pairs).
  EXPECT_NE(ws_mx_lane(32, 33).block, ws_mx_lane(33, 33).block);
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
