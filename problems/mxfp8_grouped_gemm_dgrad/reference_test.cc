#include "problems/mxfp8_grouped_gemm_dgrad/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

TEST(MxGroupedGemmDgradTest, ContractsOverNWithTheTransposedWeights) {
  // M 2, E 2, N 64, K 2; groups {0}, {1}. dc rows all 1.0, dc scales: row 0 {2^0, 2^1},
  // row 1 {2^0, 2^0}. bt[e,k,:] = 1.0 with scales bt_scales[e,k,:] = {127 + e + k, 127}.
  const std::vector<uint8_t> dc(2 * 64, 0x38), bt(2 * 2 * 64, 0x38);
  const std::vector<uint8_t> dcs = {127, 128, 127, 127};
  const std::vector<uint8_t> bts = {127, 127, 128, 127, 128, 127, 129, 127};
  std::vector<uint16_t> da(4);
  ASSERT_TRUE(MxGroupedGemmDgrad(dc.data(), dcs.data(), bt.data(), bts.data(), {1, 2}, 2, 64, 2,
                                 da.data())
                  .ok());
  // row 0 (expert 0): k 0: 32*1*1 + 32*2*1 = 96; k 1: 32*1*2 + 32*2*1 = 128.
  // row 1 (expert 1): k 0: 32*2 + 32*1 = 96; k 1: 32*4 + 32 = 160.
  EXPECT_EQ(da, (std::vector<uint16_t>{DoubleToBf16(96), DoubleToBf16(128), DoubleToBf16(96),
                                       DoubleToBf16(160)}));
}

TEST(MxGroupedGemmDgradTest, EmptyGroupsAndBadOffsets) {
  const std::vector<uint8_t> dc(32, 0x40), bt(3 * 32, 0x38), dcs = {127}, bts = {127, 127, 126};
  uint16_t da = 0;
  // Groups {}, {}, {0}: expert 2 (scale 2^-1): 32 * 2 * 0.5 = 32.
  ASSERT_TRUE(
      MxGroupedGemmDgrad(dc.data(), dcs.data(), bt.data(), bts.data(), {0, 0, 1}, 1, 32, 1, &da)
          .ok());
  EXPECT_EQ(da, DoubleToBf16(32));
  EXPECT_FALSE(
      MxGroupedGemmDgrad(dc.data(), dcs.data(), bt.data(), bts.data(), {0, 0, 2}, 1, 32, 1, &da)
          .ok());
}

}  // namespace
}  // namespace ws::gemm
