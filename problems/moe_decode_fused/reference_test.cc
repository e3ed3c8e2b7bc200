#include "problems/moe_decode_fused/reference.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

uint16_t B(double v) {
  return DoubleToBf16(v);
}
double Silu(double g) {
  return g / (1 + std::exp(-g));
}

TEST(MoeDecodeFusedTest, WorkedExampleOneExpert) {
  // T 1, H 1, I 1, E 2, TOPK 1: token -> expert 1 with weight 0.5. g = 1*2, u = 3*2,
  // y = 0.5 * 4 * silu(2) * 6.
  const MoeDecodeShape s{1, 1, 1, 2, 1};
  const std::vector<uint16_t> x = {B(2)}, w13 = {B(9), B(9), B(1), B(3)}, w2 = {B(9), B(4)};
  const std::vector<int32_t> ids = {1};
  const std::vector<float> w = {0.5f};
  uint16_t y = 0;
  ASSERT_TRUE(MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(), &y).ok());
  EXPECT_EQ(y, DoubleToBf16(0.5 * 4 * Silu(2) * 6));
}

TEST(MoeDecodeFusedTest, TwoTokensTwoExpertsEach) {
  // T 2, H 2, I 1, E 3, TOPK 2. Expert e: gate row (e+1, 0), up row (0, 1), down (1, e+1).
  const MoeDecodeShape s{2, 2, 1, 3, 2};
  std::vector<uint16_t> w13, w2;
  for (int e = 0; e < 3; ++e) {
    for (double v : {e + 1.0, 0.0, 0.0, 1.0}) w13.push_back(B(v));
    for (double v : {1.0, e + 1.0}) w2.push_back(B(v));
  }
  const std::vector<uint16_t> x = {B(1), B(2), B(-1), B(0.5)};
  const std::vector<int32_t> ids = {0, 2, 2, 1};
  const std::vector<float> w = {0.25f, 0.75f, 1.0f, -0.5f};
  std::vector<uint16_t> y(4);
  ASSERT_TRUE(
      MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(), y.data()).ok());
  for (int t = 0; t < 2; ++t) {
    double acc[2] = {0, 0};
    for (int j = 0; j < 2; ++j) {
      const int e = ids[t * 2 + j];
      const double h = Silu((e + 1) * Bf16ToDouble(x[t * 2])) * Bf16ToDouble(x[t * 2 + 1]);
      acc[0] += w[t * 2 + j] * h;
      acc[1] += w[t * 2 + j] * (e + 1) * h;
    }
    EXPECT_EQ(y[t * 2], DoubleToBf16(acc[0])) << t;
    EXPECT_EQ(y[t * 2 + 1], DoubleToBf16(acc[1])) << t;
  }
}

TEST(MoeDecodeFusedTest, SiluSaturatesAndIdsAreChecked) {
  // A large negative gate: silu(-100) is about -3.7e-42, so y is a tiny negative, not NaN.
  const MoeDecodeShape s{1, 1, 1, 1, 1};
  const std::vector<uint16_t> x = {B(-100)}, w13 = {B(1), B(1)}, w2 = {B(1)};
  std::vector<int32_t> ids = {0};
  const std::vector<float> w = {1.0f};
  uint16_t y = 0;
  ASSERT_TRUE(MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(), &y).ok());
  EXPECT_EQ(y, DoubleToBf16(Silu(-100) * -100));
  ids[0] = 1;
  EXPECT_FALSE(MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(), &y).ok());
  ids[0] = -1;
  EXPECT_FALSE(MoeDecodeFused(s, x.data(), ids.data(), w.data(), w13.data(), w2.data(), &y).ok());
}

}  // namespace
}  // namespace ws::gemm
