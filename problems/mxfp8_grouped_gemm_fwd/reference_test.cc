#include "problems/mxfp8_grouped_gemm_fwd/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

TEST(MxGroupedGemmFwdTest, EachBlockScaledByBothScales) {
  // One group, M 1, N 1, K 64 of 1.0 (0x38). Blocks: a scales 2^0, 2^1; b scales 2^-1, 2^3:
  // 32 * 1 * 2^-1 + 32 * 2 * 8 = 16 + 512 = 528.
  const std::vector<uint8_t> a(64, 0x38), b(64, 0x38);
  const std::vector<uint8_t> as = {127, 128}, bs = {126, 130};
  uint16_t c = 0;
  ASSERT_TRUE(MxGroupedGemmFwd(a.data(), as.data(), b.data(), bs.data(), {1}, 1, 1, 64, &c).ok());
  EXPECT_EQ(c, 0x4404);
  // Scale 0 (2^-127) against 254 (2^127): the exact product is 2^0 per element.
  const std::vector<uint8_t> as0 = {0, 0}, bs0 = {254, 254};
  ASSERT_TRUE(
      MxGroupedGemmFwd(a.data(), as0.data(), b.data(), bs0.data(), {1}, 1, 1, 64, &c).ok());
  EXPECT_EQ(c, DoubleToBf16(64));
  // A NaN scale (0xFF) poisons its row.
  const std::vector<uint8_t> asn = {127, 0xFF};
  ASSERT_TRUE(
      MxGroupedGemmFwd(a.data(), asn.data(), b.data(), bs.data(), {1}, 1, 1, 64, &c).ok());
  EXPECT_EQ(c, 0x7FC0);
}

TEST(MxGroupedGemmFwdTest, RowsUseTheirGroupsExpert) {
  // M 3, E 3, N 1, K 32; groups {0}, {}, {1, 2}. Expert e's row is all 2^e (scale 127 + e).
  const std::vector<uint8_t> a(96, 0x38), b(96, 0x38);
  const std::vector<uint8_t> as = {127, 128, 129}, bs = {127, 128, 129};
  std::vector<uint16_t> c(3);
  ASSERT_TRUE(
      MxGroupedGemmFwd(a.data(), as.data(), b.data(), bs.data(), {1, 1, 3}, 3, 1, 32, c.data())
          .ok());
  // row 0: 32 * 1 * 1; row 1: 32 * 2 * 4; row 2: 32 * 4 * 4.
  EXPECT_EQ(c, (std::vector<uint16_t>{DoubleToBf16(32), DoubleToBf16(256), DoubleToBf16(512)}));
}

TEST(MxGroupedGemmFwdTest, DequantizeMxRowsIndexesBlocksAlongColumns) {
  std::vector<uint8_t> q(2 * 64, 0x38);
  q[33] = 0x01;  // 2^-9
  const std::vector<uint8_t> s = {127, 130, 100, 0};
  const std::vector<double> d = DequantizeMxRows(q.data(), s.data(), 2, 64);
  EXPECT_EQ(d[0], 1.0);
  EXPECT_EQ(d[32], 8.0);
  EXPECT_EQ(d[33], 0x1p-6);
  EXPECT_EQ(d[64], 0x1p-27);
  EXPECT_EQ(d[127], 0x1p-127);
}

}  // namespace
}  // namespace ws::gemm
