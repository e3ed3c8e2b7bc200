#include "problems/swiglu_quantize_bwd/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/mxfp8_quantize_dual/reference.h"
#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/swiglu_quantize_bwd/spec.json";

constexpr auto kStd = SwigluVariant::kStandard;
constexpr auto kClamp = SwigluVariant::kClamped;

// Expected bf16 results computed independently in Python (math.exp in double, struct-packed fp32,
// bf16 RNE).
TEST(SwigluBackwardTest, HandDerived) {
  struct Case {
    uint16_t g, u, da;
    SwigluVariant v;
    uint16_t dg, du;
  };
  const Case cases[] = {
      {0x3F80, 0x4000, 0x3F80, kStd, 0x3FED, 0x3F3B},    // g 1, u 2, dA 1
      {0x3F80, 0x4000, 0x3F80, kClamp, 0x404D, 0x3F59},
      {0xC000, 0x4040, 0x3F00, kStd, 0xBE0B, 0xBDF4},    // g -2, u 3, dA 0.5
      {0xC000, 0x4040, 0x3F00, kClamp, 0xBE17, 0xBD04},
      {0x4120, 0x4120, 0x3F80, kStd, 0x4120, 0x4120},    // g 10, u 10: dg ~ u, du ~ g
      {0x4120, 0x4120, 0x3F80, kClamp, 0x0000, 0x0000},  // both clamped: no gradient
      {0x40E0, 0xC0E0, 0x4000, kStd, 0xC161, 0x4160},    // g 7, u -7, dA 2
      {0x40E0, 0xC0E0, 0x4000, kClamp, 0xC140, 0x4160},  // at the limits: gradients pass
      {0x3F00, 0xBFC0, 0xC080, kStd, 0x408E, 0xBF9F},    // g 0.5, u -1.5, dA -4
      {0x3F00, 0xBFC0, 0xC080, kClamp, 0x3FE1, 0xBFB3},
      // Special values: the clamp's gradient is a select, so a NaN gate gives dg = +0 when
      // clamped (du still carries the NaN forward value); unclamped, NaN spreads to both.
      {0x7FC0, 0x3F80, 0x3F80, kStd, 0x7FC0, 0x7FC0},
      {0x7FC0, 0x3F80, 0x3F80, kClamp, 0x0000, 0x7FC0},
      {0x3F80, 0x7FC0, 0x3F80, kClamp, 0x7FC0, 0x0000},
      {0x3F80, 0x4000, 0x0000, kStd, 0x0000, 0x0000},    // dA = 0
  };
  for (const Case& c : cases) {
    uint16_t dg = 0xAAAA, du = 0xAAAA;
    SwigluBackward(c.g, c.u, c.da, c.v, &dg, &du);
    EXPECT_EQ(dg, c.dg) << std::hex << "g " << c.g << " u " << c.u << " dA " << c.da << " variant "
                        << static_cast<int>(c.v);
    EXPECT_EQ(du, c.du) << std::hex << "g " << c.g << " u " << c.u << " dA " << c.da
                        << " variant " << static_cast<int>(c.v);
  }
}

// M = 32, I = 32: gate = 1, up = 2, dA = 1 everywhere except row 5, whose dA is 0. dhpre's first
// 32 columns are dgate (1.8515625), the next 32 dup (0.73046875).
TEST(SwigluQuantizeBwdTest, LayoutAndBothOrientations) {
  constexpr int64_t kM = 32, kI = 32;
  std::vector<uint16_t> h(kM * 2 * kI), da(kM * kI, 0x3F80);
  for (int64_t r = 0; r < kM; ++r) {
    for (int64_t c = 0; c < kI; ++c) {
      h[r * 2 * kI + c] = 0x3F80;
      h[r * 2 * kI + kI + c] = 0x4000;
    }
  }
  for (int64_t c = 0; c < kI; ++c) da[5 * kI + c] = 0x0000;
  std::vector<uint16_t> dh(kM * 2 * kI);
  SwigluBackwardRows(h.data(), da.data(), kM, kI, kStd, dh.data());
  EXPECT_EQ(dh[0], 0x3FED);
  EXPECT_EQ(dh[kI], 0x3F3B);
  EXPECT_EQ(dh[5 * 2 * kI + 3], 0x0000);

  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  HostTensor ht{DType::kBF16, {kM, 2 * kI}, {}}, dt{DType::kBF16, {kM, kI}, {}};
  StoreBf16Words(h, ht);
  StoreBf16Words(da, dt);
  const std::map<std::string, std::string> params = {{"rounding", "rceil"},
                                                      {"variant", "standard"}};
  const SymbolTable symbols = BindSymbols(*spec, Shape{{{"M", kM}, {"I", kI}}, ""}, params);
  auto out = RunCpuReference(*spec, symbols, params, {{"hpre", ht}, {"da", dt}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<uint8_t> q(kM * 2 * kI), s(kM * 2), q_t(kM * 2 * kI), s_t(2 * kI);
  QuantizeDual(dh.data(), kM, 2 * kI, Rounding::kRceil, q.data(), s.data(), q_t.data(),
               s_t.data());
  EXPECT_EQ(out->at("q").bytes, q);
  EXPECT_EQ(out->at("scales").bytes, s);
  EXPECT_EQ(out->at("q_t").bytes, q_t);
  EXPECT_EQ(out->at("scales_t").bytes, s_t);
  // dgate blocks: amax 1.8515625 -> S = 120 (2^-7 >= 1.85/448 > 2^-8); dup: 0.73 -> S = 118
  // (2^-9 >= 0.73/448 > 2^-10);
  // row 5 is all zeros: S = 0.
  EXPECT_EQ(s[0], 120);
  EXPECT_EQ(s[1], 118);
  EXPECT_EQ(s[10], 0);
  EXPECT_EQ(s[11], 0);
  EXPECT_EQ(s_t[0], 120);   // column 0 (dgate) over rows 0..31
  EXPECT_EQ(s_t[kI], 118);  // column I (dup)
  EXPECT_EQ(q_t[0 * kM + 5], 0x00);  // row 5's zero
}

}  // namespace
}  // namespace ws::mxfp8
