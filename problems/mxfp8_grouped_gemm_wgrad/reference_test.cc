#include "problems/mxfp8_grouped_gemm_wgrad/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

namespace ws::gemm {
namespace {

TEST(MxGroupedGemmWgradTest, SumsEachGroupsTokensAndZeroesEmptyGroups) {
  // M 64, E 3, N 1, K 2; groups {0..31}, {}, {32..63}. dct = 1.0 everywhere (scales 2^0);
  // xt row k = 1.0 with scales {2^k, 2^(k+1)} per 32-token block.
  const std::vector<uint8_t> dct(64, 0x38), xt(2 * 64, 0x38);
  const std::vector<uint8_t> dcts = {127, 127}, xts = {127, 128, 128, 129};
  std::vector<float> db(3 * 2, -1.0f);
  ASSERT_TRUE(MxGroupedGemmWgrad(dct.data(), dcts.data(), xt.data(), xts.data(), {32, 32, 64}, 64,
                                 1, 2, db.data())
                  .ok());
  EXPECT_EQ(db, (std::vector<float>{32, 64, 0, 0, 64, 128}));
}

TEST(MxGroupedGemmWgradTest, ScalesRunAlongTokensAndOutputIsF32) {
  // M 32, one group; dct[0,:] = 1.0 with scale 2^-127 (0), xt[0,:] = 1.5 (0x3C) with 2^0:
  // 32 * 1.5 * 2^-127 = 1.5 * 2^-122, exact in f32.
  const std::vector<uint8_t> dct(32, 0x38), xt(32, 0x3C), dcts = {0}, xts = {127};
  float db = 0;
  ASSERT_TRUE(
      MxGroupedGemmWgrad(dct.data(), dcts.data(), xt.data(), xts.data(), {32}, 32, 1, 1, &db)
          .ok());
  EXPECT_EQ(db, 0x1.8p-122f);
}

TEST(MxGroupedGemmWgradTest, OffsetsMustBeMultiplesOf32) {
  const std::vector<uint8_t> dct(64, 0x38), xt(64, 0x38), s = {127, 127};
  std::vector<float> db(2);
  EXPECT_FALSE(
      MxGroupedGemmWgrad(dct.data(), s.data(), xt.data(), s.data(), {16, 64}, 64, 1, 1, db.data())
          .ok());
}

}  // namespace
}  // namespace ws::gemm
