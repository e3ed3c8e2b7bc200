#include "problems/rmsnorm_quantize/reference.h"

#include <bit>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/rmsnorm_quantize/spec.json";

// Values computed independently in Python (doubles, struct-packed fp32 and bf16 RNE).
// Row 0: x = [3, -4, -0, 0 ...], w = 1.5: mean(x^2) = 25/32, r = fp32(1/sqrt(0.78125 + 1e-6)) =
// 0x3F90D0BC; 3r = 3.3941 -> bf16 3.390625 (0x4059) -> * 1.5 = 5.0859375 -> bf16 5.09375
// (0x40A3); -4r -> -4.53125 (0xC091) -> * 1.5 -> -6.8125 (0xC0DA). amax 6.8125: S = 121 under
// both roundings (2^-6 >= 6.8125/448; floor(log2) = 2); q = y * 2^6: 326 -> 320 (0x7A), -436 ->
// -448 (0xFE). Row 1: zeros: r = 1000, y = 0, S = 0.
TEST(RmsNormQuantizeTest, WorkedExample) {
  constexpr int kH = 32;
  std::vector<uint16_t> x(2 * kH, 0), w(kH, 0x3FC0);  // w = 1.5
  x[0] = 0x4040;                                        // 3
  x[1] = 0xC080;                                        // -4
  x[2] = 0x8000;                                        // -0
  EXPECT_EQ(std::bit_cast<uint32_t>(RmsNormFactor(x.data(), kH)), 0x3F90D0BCu);
  EXPECT_EQ(RmsNormFactor(x.data() + kH, kH), 1000.0f);
  for (Rounding mode : {Rounding::kRceil, Rounding::kFloor}) {
    std::vector<uint16_t> y(2 * kH, 0xAAAA);
    std::vector<uint8_t> q(2 * kH, 0xAA), s(2, 0xAA);
    RmsNormQuantize(x.data(), w.data(), 2, kH, mode, y.data(), q.data(), s.data());
    EXPECT_EQ(y[0], 0x40A3);
    EXPECT_EQ(y[1], 0xC0DA);
    EXPECT_EQ(y[2], 0x8000);  // -0 * r * 1.5 keeps the sign
    EXPECT_EQ(y[3], 0x0000);
    EXPECT_EQ(s[0], 121);
    EXPECT_EQ(q[0], 0x7A);
    EXPECT_EQ(q[1], 0xFE);
    EXPECT_EQ(q[2], 0x80);
    EXPECT_EQ(q[3], 0x00);
    EXPECT_EQ(s[1], 0);
    for (int i = kH; i < 2 * kH; ++i) {
      EXPECT_EQ(y[i], 0x0000) << i;
      EXPECT_EQ(q[i], 0x00) << i;
    }
  }
}

// x = 1.0 everywhere: r = fp32(1/sqrt(1 + 1e-6)) rounds to bf16 1.0, so y is exactly w; a
// negative weight flips the sign and the scale follows |w|.
TEST(RmsNormQuantizeTest, OnesGiveTheWeight) {
  constexpr int kH = 64;
  std::vector<uint16_t> x(kH, 0x3F80), w(kH, 0x4000), y(kH);  // w = 2
  w[40] = 0xC200;                                             // -32 in the second block
  std::vector<uint8_t> q(kH), s(2);
  RmsNormQuantize(x.data(), w.data(), 1, kH, Rounding::kRceil, y.data(), q.data(), s.data());
  EXPECT_EQ(y[0], 0x4000);
  EXPECT_EQ(y[40], 0xC200);
  EXPECT_EQ(s[0], 120);  // amax 2: 2^-7 >= 2/448 > 2^-8
  EXPECT_EQ(s[1], 124);  // amax 32: 2^-3 >= 32/448 > 2^-4
  EXPECT_EQ(q[0], 0x78);   // 2 * 2^7 = 256
  EXPECT_EQ(q[40], 0xF8);  // -32 * 2^3 = -256
  EXPECT_EQ(q[41], 0x58);  // 2 * 2^3 = 16
}

TEST(RmsNormQuantizeTest, RegisteredReferenceFollowsTheSpec) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  constexpr int64_t kM = 3, kH = 96;
  std::vector<uint16_t> x(kM * kH), w(kH);
  for (int64_t i = 0; i < kM * kH; ++i) x[i] = static_cast<uint16_t>(0x3C00 + (i * 37) % 0x700);
  for (int64_t i = 0; i < kH; ++i) w[i] = static_cast<uint16_t>(0x3F00 + (i * 11) % 0x100);
  HostTensor xt{DType::kBF16, {kM, kH}, {}}, wt{DType::kBF16, {kH}, {}};
  StoreBf16Words(x, xt);
  StoreBf16Words(w, wt);
  const std::map<std::string, std::string> params = {{"rounding", "floor"}};
  const SymbolTable symbols = BindSymbols(*spec, Shape{{{"M", kM}, {"H", kH}}, ""}, params);
  auto out = RunCpuReference(*spec, symbols, params, {{"x", xt}, {"weight", wt}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  std::vector<uint16_t> y(kM * kH);
  std::vector<uint8_t> q(kM * kH), s(kM * kH / 32);
  RmsNormQuantize(x.data(), w.data(), kM, kH, Rounding::kFloor, y.data(), q.data(), s.data());
  EXPECT_EQ(Bf16Words(out->at("y")), y);
  EXPECT_EQ(out->at("q").bytes, q);
  EXPECT_EQ(out->at("scales").bytes, s);
}

}  // namespace
}  // namespace ws::mxfp8
