#include "problems/mxfp8_dequantize/reference.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

// ---- Hand-derived cases -------------------------------------------------------------------------
// E4M3 byte: s eeee mmm, normals (1 + m/8) * 2^(e-7), subnormals m * 2^-9. bf16: s eeeeeeee mmmmmmm,
// subnormal quantum 2^-133.

struct Case {
  uint8_t q, scale;
  uint16_t y;
};

TEST(DequantizeElementTest, HandDerivedCases) {
  const Case cases[] = {
      // zeros keep their sign under any finite scale
      {0x00, 127, 0x0000}, {0x80, 127, 0x8000}, {0x00, 0xFE, 0x0000}, {0x80, 0, 0x8000},
      {0x80, 0xFE, 0x8000},
      // plain values: 1.0 (0x38) times 1, 2, 1/2; -1.0
      {0x38, 127, 0x3F80}, {0x38, 128, 0x4000}, {0x38, 126, 0x3F00}, {0xB8, 127, 0xBF80},
      // 1.875 (0x3F) and -1.25 (0xBA)
      {0x3F, 127, 0x3FF0}, {0xBA, 127, 0xBFA0},
      // max 448 = 1.75 * 2^8 and its negative
      {0x7E, 127, 0x43E0}, {0xFE, 127, 0xC3E0},
      // E4M3 subnormals: 2^-9 (0x01), 7 * 2^-9 = 1.75 * 2^-7 (0x07), -3 * 2^-9 (0x83)
      {0x01, 127, 0x3B00}, {0x07, 127, 0x3C60}, {0x83, 127, 0xBBC0},
      // NaN q, under any scale
      {0x7F, 127, 0x7FC0}, {0xFF, 127, 0x7FC0}, {0x7F, 0, 0x7FC0}, {0xFF, 0xFE, 0x7FC0},
      // scale 0xFF: NaN whatever q is
      {0x38, 0xFF, 0x7FC0}, {0x00, 0xFF, 0x7FC0}, {0x80, 0xFF, 0x7FC0}, {0x7E, 0xFF, 0x7FC0},
      // scale 0 (2^-127): 1.0 -> 2^-127 = 64 quanta; 448 -> 1.75 * 2^-119 (normal)
      {0x38, 0, 0x0040}, {0x7E, 0, 0x0460}, {0xB8, 0, 0x8040},
      // scale 1 (2^-126): 1.0 -> smallest normal
      {0x38, 1, 0x0080},
      // scale 0xFE (2^127): 1.0, 0.5, 1.875 stay finite; 2.0 and up overflow to +-Inf
      {0x38, 0xFE, 0x7F00}, {0x30, 0xFE, 0x7E80}, {0x3F, 0xFE, 0x7F70}, {0x40, 0xFE, 0x7F80},
      {0xC0, 0xFE, 0xFF80}, {0x7E, 0xFE, 0x7F80}, {0xFE, 0xFE, 0xFF80},
      // overflow below 0xFE: 448 * 2^(247-127) = 1.75 * 2^128; 256 (0x78) * 2^120 = 2^128
      {0x7E, 247, 0x7F80}, {0x78, 247, 0x7F80}, {0x77, 247, 0x7F70},
      // RNE in bf16's subnormal range (scale 0, quantum 2^-133 = 2^6 * 2^-9 * 2^-127 ... in quanta)
      {0x01, 0, 0x0000},  // 2^-136 = 1/8 quantum
      {0x04, 0, 0x0000},  // 2^-134 = 1/2 quantum: tie to even 0
      {0x84, 0, 0x8000},  // the same, negative
      {0x05, 0, 0x0001},  // 0.625 quanta
      {0x0A, 0, 0x0001},  // 1.25 * 2^-6 -> 1.25 quanta
      {0x0C, 0, 0x0002},  // 1.5 quanta: tie, to even 2
      {0x0D, 0, 0x0002},  // 1.625
      {0x12, 0, 0x0002},  // 1.25 * 2^-5 = 2.5 quanta: tie, to even 2
      {0x16, 0, 0x0004},  // 3.5 quanta: tie, to even 4
      {0x96, 0, 0x8004},
      {0x14, 0, 0x0003},  // 3 quanta, exact
      {0x02, 1, 0x0000},  // 2^-8 * 2^-126 = 2^-134: tie to 0
      {0x06, 1, 0x0002},  // 1.5 quanta -> 2
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DequantizeElement(c.q, c.scale), c.y)
        << std::hex << "q 0x" << int{c.q} << " scale 0x" << int{c.scale};
  }
}

// ---- An independent double-precision model over every (q, scale) pair ------------------------

double ModelE4M3(uint8_t b) {
  const int e = (b >> 3) & 0xF;
  const int m = b & 7;
  const double sign = (b & 0x80) ? -1.0 : 1.0;
  if (e == 0)
    return sign * std::ldexp(m, -9);
  return sign * std::ldexp(1.0 + m / 8.0, e - 7);
}

// bf16 of an exact double: RNE on bf16's grid (quantum 2^(e-7), at least 2^-133), Inf at 2^128.
uint16_t ModelBf16(double v) {
  const uint16_t sign = std::signbit(v) ? 0x8000 : 0;
  const double a = std::fabs(v);
  if (a == 0)
    return sign;
  int ex = 0;
  std::frexp(a, &ex);  // a = f * 2^ex, f in [0.5, 1)
  const int q_exp = std::max(ex - 1, -126) - 7;
  const double r = std::ldexp(std::nearbyint(std::ldexp(a, -q_exp)), q_exp);
  if (r >= std::ldexp(1.0, 128))
    return sign | 0x7F80;
  if (r == 0)
    return sign;
  int rex = 0;
  const double f = std::frexp(r, &rex);
  if (rex - 1 < -126)
    return sign | static_cast<uint16_t>(std::ldexp(r, 133));
  const int mant = static_cast<int>(std::ldexp(f * 2 - 1, 7));
  return sign | static_cast<uint16_t>(((rex - 1 + 127) << 7) | mant);
}

TEST(DequantizeElementTest, MatchesDoubleModelForEveryPair) {
  int infs = 0, subnormals = 0;
  for (int s = 0; s < 256; ++s) {
    for (int q = 0; q < 256; ++q) {
      uint16_t want = 0x7FC0;
      if (s != 0xFF && (q & 0x7F) != 0x7F)
        want = ModelBf16(ModelE4M3(static_cast<uint8_t>(q)) * std::ldexp(1.0, s - 127));
      const uint16_t got = DequantizeElement(static_cast<uint8_t>(q), static_cast<uint8_t>(s));
      ASSERT_EQ(got, want) << "q " << q << " scale " << s;
      infs += (got & 0x7FFF) == 0x7F80;
      subnormals += (got & 0x7F80) == 0 && (got & 0x7F) != 0;
    }
  }
  EXPECT_GT(infs, 0);
  EXPECT_GT(subnormals, 0);
}

TEST(DequantizeElementTest, Conversions) {
  EXPECT_EQ(E8M0ToFloat(127), 1.0f);
  EXPECT_EQ(E8M0ToFloat(0), std::ldexp(1.0f, -127));
  EXPECT_EQ(E8M0ToFloat(254), std::ldexp(1.0f, 127));
  EXPECT_EQ(E4M3ToFloat(0x7E), 448.0f);
  EXPECT_EQ(E4M3ToFloat(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::signbit(E4M3ToFloat(0x80)));
  EXPECT_EQ(FloatToBf16(std::nanf("")), 0x7FC0);
  EXPECT_EQ(FloatToBf16(-std::nanf("")), 0x7FC0);
  EXPECT_EQ(FloatToBf16(3.4028235e38f), 0x7F80);  // FLT_MAX rounds up to Inf
  EXPECT_EQ(FloatToBf16(1.00390625f), 0x3F80);    // 1 + 2^-8: tie, to even 1.0
  EXPECT_EQ(FloatToBf16(1.01171875f), 0x3F82);    // 1 + 3 * 2^-8: tie, to even 1 + 2^-6
}

TEST(DequantizeRowwiseTest, ScalesApplyPerBlockOfRow) {
  constexpr int64_t kM = 2, kK = 64;
  std::vector<uint8_t> q(kM * kK, 0x38);  // all 1.0
  const std::vector<uint8_t> scales = {127, 128, 0xFF, 0};
  std::vector<uint16_t> y(kM * kK);
  DequantizeRowwise(q.data(), scales.data(), kM, kK, y.data());
  for (int64_t c = 0; c < kK; ++c) {
    EXPECT_EQ(y[c], c < 32 ? 0x3F80 : 0x4000) << c;
    EXPECT_EQ(y[kK + c], c < 32 ? 0x7FC0 : 0x0040) << c;
  }
}

// ---- Through the registry, as the runner calls it --------------------------------------------

TEST(DequantizeRegistryTest, MatchesDirectCall) {
  const auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_dequantize/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  ASSERT_NE(FindCpuReference("mxfp8_dequantize"), nullptr);
  constexpr int64_t kM = 3, kK = 96;
  HostTensor q{DType::kFP8E4M3, {kM, kK}, std::vector<uint8_t>(kM * kK)};
  HostTensor s{DType::kE8M0, {kM, kK / 32}, std::vector<uint8_t>(kM * kK / 32)};
  for (int64_t i = 0; i < kM * kK; ++i) q.bytes[i] = static_cast<uint8_t>(i * 37 + 5);
  for (int64_t i = 0; i < kM * kK / 32; ++i) s.bytes[i] = static_cast<uint8_t>(i * 61 + 100);
  s.bytes[1] = 0xFF;
  s.bytes[2] = 0;
  s.bytes[3] = 0xFE;
  const std::map<std::string, std::string> params;
  const auto out = RunCpuReference(*spec, BindSymbols(*spec, Shape{{{"M", kM}, {"K", kK}}, ""}, params),
                                   params, {{"q", q}, {"scales", s}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const HostTensor& y = out->at("y");
  EXPECT_EQ(y.dtype, DType::kBF16);
  EXPECT_EQ(y.dims, (std::vector<int64_t>{kM, kK}));
  std::vector<uint16_t> want(kM * kK);
  DequantizeRowwise(q.bytes.data(), s.bytes.data(), kM, kK, want.data());
  ASSERT_EQ(y.bytes.size(), want.size() * 2);
  for (int64_t i = 0; i < kM * kK; ++i) {
    EXPECT_EQ(y.bytes[2 * i] | (y.bytes[2 * i + 1] << 8), want[i]) << i;
  }
  // A wrong input dtype is refused.
  HostTensor bad = s;
  bad.dtype = DType::kU8;
  EXPECT_FALSE(RunCpuReference(*spec, BindSymbols(*spec, Shape{{{"M", kM}, {"K", kK}}, ""}, params),
                               params, {{"q", q}, {"scales", bad}})
                   .ok());
}

}  // namespace
}  // namespace ws::mxfp8
