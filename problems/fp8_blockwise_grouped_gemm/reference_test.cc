#include "problems/fp8_blockwise_grouped_gemm/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

TEST(Fp8BlockwiseGroupedGemmTest, ActivationScalesAreMnMajorAndWeightScalesPer128x128) {
  // M 2, E 1, N 128, K 256, all data 1.0. a_scales [K/128, M] = [[0.5, 1], [4, 2]];
  // b_scales [1, 1, 2] = [[3, 0.25]].
  // row 0: 128*0.5*3 + 128*4*0.25 = 320; row 1: 128*1*3 + 128*2*0.25 = 448.
  const std::vector<uint8_t> a(2 * 256, 0x38), b(128 * 256, 0x38);
  const std::vector<float> as = {0.5f, 1.0f, 4.0f, 2.0f}, bs = {3.0f, 0.25f};
  std::vector<uint16_t> c(2 * 128);
  ASSERT_TRUE(
      Fp8BlockwiseGroupedGemm(a.data(), as.data(), b.data(), bs.data(), {2}, 2, 128, 256, c.data())
          .ok());
  for (int n = 0; n < 128; ++n) {
    EXPECT_EQ(c[n], 0x43A0) << n;
    EXPECT_EQ(c[128 + n], 0x43E0) << n;
  }
}

TEST(Fp8BlockwiseGroupedGemmTest, WeightScaleRowsFollowN) {
  // N 256: output columns 0..127 use b_scales[g,0,:], 128..255 b_scales[g,1,:]. Two experts,
  // groups {}, {0}: expert 1 only.
  const std::vector<uint8_t> a(128, 0x38), b(2 * 256 * 128, 0x38);
  const std::vector<float> as = {1.0f}, bs = {100.0f, 100.0f, 2.0f, 0.5f};
  std::vector<uint16_t> c(256);
  ASSERT_TRUE(
      Fp8BlockwiseGroupedGemm(a.data(), as.data(), b.data(), bs.data(), {0, 1}, 1, 256, 128,
                              c.data())
          .ok());
  EXPECT_EQ(c[0], DoubleToBf16(256));
  EXPECT_EQ(c[127], DoubleToBf16(256));
  EXPECT_EQ(c[128], DoubleToBf16(64));
  EXPECT_EQ(c[255], DoubleToBf16(64));
}

TEST(Fp8BlockwiseGroupedGemmTest, SizesMustBeWholeBlocks) {
  const std::vector<uint8_t> a(64, 0x38), b(64, 0x38);
  const std::vector<float> s = {1.0f};
  uint16_t c = 0;
  EXPECT_FALSE(Fp8BlockwiseGroupedGemm(a.data(), s.data(), b.data(), s.data(), {1}, 1, 1, 64, &c)
                   .ok());
}

}  // namespace
}  // namespace ws::gemm
