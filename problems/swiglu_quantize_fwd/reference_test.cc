#include "problems/swiglu_quantize_fwd/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/mxfp8_quantize_dual/reference.h"
#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/swiglu_quantize_fwd/spec.json";

constexpr auto kStd = SwigluVariant::kStandard;
constexpr auto kClamp = SwigluVariant::kClamped;

// Expected bf16 results computed independently in Python (math.exp in double, struct-packed fp32,
// bf16 RNE).
TEST(SwigluForwardTest, HandDerived) {
  struct Case {
    uint16_t g, u;
    SwigluVariant v;
    uint16_t a;
  };
  const Case cases[] = {
      {0x3F80, 0x4000, kStd, 0x3FBB},    // g 1, u 2: 1.4621 -> 1.4609375
      {0x3F80, 0x4000, kClamp, 0x4022},  // sigmoid(1.702) * 3 = 2.53...
      {0xC000, 0x4040, kStd, 0xBF37},    // g -2, u 3
      {0xC000, 0x4040, kClamp, 0xBE84},
      {0x3F00, 0xBFC0, kStd, 0xBEEF},    // g 0.5, u -1.5
      {0x3F00, 0xBFC0, kClamp, 0xBE33},
      {0x4120, 0x4120, kStd, 0x42C8},    // g 10, u 10: 100 (sigmoid(10) rounds away)
      {0x4120, 0x4120, kClamp, 0x4260},  // clamped to 7, 7: 6.99995 * 8 -> 56
      {0x40E0, 0xC100, kStd, 0xC260},    // g 7, u -8
      {0x40E0, 0xC100, kClamp, 0xC228},  // u clamps to -7: * -6
      {0xC040, 0x3E80, kStd, 0xBD12},    // g -3, u 0.25
      {0xC040, 0x3E80, kClamp, 0xBCB9},
      // Zeros and signs: silu(0) = 0, times a negative u is -0; clamped u + 1 = 0 gives +0 * ...
      {0x0000, 0xC000, kStd, 0x8000},
      {0x0000, 0x4000, kStd, 0x0000},
      {0x3F80, 0xBF80, kClamp, 0x0000},  // u = -1: (u + 1) = +0
      // Special values (inputs never hold them; the rules still fix them).
      {0x7FC0, 0x3F80, kStd, 0x7FC0},    // NaN g
      {0x3F80, 0x7FC0, kClamp, 0x7FC0},  // NaN u survives the clamp
      {0xFF80, 0x3F80, kStd, 0x7FC0},    // -Inf * sigmoid(-Inf) = -Inf * 0 = NaN
      {0x7F80, 0x3F80, kStd, 0x7F80},    // +Inf
      {0x7F80, 0x7F80, kClamp, 0x4260},  // clamped: both to 7
      {0x7F7F, 0x7F7F, kStd, 0x7F80},    // bf16 max squared overflows fp32: +Inf
  };
  for (const Case& c : cases) {
    EXPECT_EQ(SwigluForward(c.g, c.u, c.v), c.a)
        << std::hex << "g " << c.g << " u " << c.u << " variant " << static_cast<int>(c.v);
  }
}

// hpre [32, 2 * 32]: gate in columns 0..31, up in 32..63. Row r: gate = 1.0, up = r - 16 (exact
// small integers), so A[r][c] = silu(1) * (r - 16) for every c.
TEST(SwigluQuantizeFwdTest, GateUpSplitAndBothOrientations) {
  constexpr int64_t kM = 32, kI = 32;
  std::vector<uint16_t> h(kM * 2 * kI);
  for (int64_t r = 0; r < kM; ++r) {
    for (int64_t c = 0; c < kI; ++c) {
      h[r * 2 * kI + c] = 0x3F80;
      h[r * 2 * kI + kI + c] = FloatToBf16(static_cast<float>(r - 16));
    }
  }
  std::vector<uint16_t> a(kM * kI);
  SwigluRows(h.data(), kM, kI, kStd, a.data());
  EXPECT_EQ(a[16 * kI + 5], 0x0000);  // up = 0
  EXPECT_EQ(a[18 * kI + 0], 0x3FBB);  // 2 * silu(1) = 1.4621 -> 0x3FBB, as hand-derived above
  EXPECT_EQ(a[17 * kI + 31], SwigluForward(0x3F80, 0x3F80, kStd));

  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  HostTensor ht{DType::kBF16, {kM, 2 * kI}, {}};
  StoreBf16Words(h, ht);
  const std::map<std::string, std::string> params = {{"rounding", "rceil"},
                                                      {"variant", "standard"}};
  const SymbolTable symbols = BindSymbols(*spec, Shape{{{"M", kM}, {"I", kI}}, ""}, params);
  auto out = RunCpuReference(*spec, symbols, params, {{"hpre", ht}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<uint8_t> q(kM * kI), s(kM), q_t(kM * kI), s_t(kI);
  QuantizeDual(a.data(), kM, kI, Rounding::kRceil, q.data(), s.data(), q_t.data(), s_t.data());
  EXPECT_EQ(out->at("q").bytes, q);
  EXPECT_EQ(out->at("scales").bytes, s);
  EXPECT_EQ(out->at("q_t").bytes, q_t);
  EXPECT_EQ(out->at("scales_t").bytes, s_t);
  // Row 31: A = 15 * 0.7311 = 10.966 -> bf16 10.9375; rceil S = 2^-5 >= 10.9375 / 448: 122.
  EXPECT_EQ(s[31], 122);
  // Column blocks hold rows 0..31: amax |A| at row 0 (-16 * 0.7311 = -11.70): also S = 122.
  for (int64_t c = 0; c < kI; ++c) EXPECT_EQ(s_t[c], 122) << c;
}

TEST(SwigluQuantizeFwdTest, RejectsUnknownVariant) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_FALSE(VariantParam(*spec, {{"variant", "geglu"}}).ok());
  auto v = VariantParam(*spec, {});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, kStd);
}

}  // namespace
}  // namespace ws::mxfp8
