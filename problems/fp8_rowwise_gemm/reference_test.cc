#include "problems/fp8_rowwise_gemm/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

TEST(Fp8RowwiseGemmTest, WorkedExampleScalesRunAlongRowsAndColumns) {
  // A = [[1, 2]], B = [[1, 1], [0.5, -1]]; a_scale = [0.5], b_scale = [2, 8]:
  // D = [[(1+2) * 0.5 * 2, (0.5-2) * 0.5 * 8]] = [[3, -6]].
  const std::vector<uint8_t> a = {0x38, 0x40}, b = {0x38, 0x38, 0x30, 0xB8};
  const std::vector<float> sa = {0.5f}, sb = {2.0f, 8.0f};
  std::vector<uint16_t> d(2);
  Fp8RowwiseGemm(a.data(), b.data(), sa.data(), sb.data(), 1, 2, 2, d.data());
  EXPECT_EQ(d, (std::vector<uint16_t>{0x4040, 0xC0C0}));
  // Two rows with their own scales: row 1 = [448, 2^-9] scaled by 1/448.
  const std::vector<uint8_t> a2 = {0x38, 0x40, 0x7E, 0x01};
  const float inv = 1.0f / 448;
  const std::vector<float> sa2 = {0.5f, inv};
  std::vector<uint16_t> d2(4);
  Fp8RowwiseGemm(a2.data(), b.data(), sa2.data(), sb.data(), 2, 2, 2, d2.data());
  EXPECT_EQ(d2[0], 0x4040);
  EXPECT_EQ(d2[2], DoubleToBf16((448 + 0x1p-9) * static_cast<double>(inv) * 2));
  EXPECT_EQ(d2[3], DoubleToBf16((224 - 0x1p-9) * static_cast<double>(inv) * 8));
}

TEST(Fp8RowwiseGemmTest, ExtremesAndNaN) {
  // 448 * 448 * 32 = 6422528 times scales 2^-20 and 2^-3: exact, 0.765625.
  std::vector<uint8_t> a(32, 0x7E), b(32, 0x7E);
  const std::vector<float> sa = {0x1p-20f}, sb = {0x1p-3f};
  uint16_t d = 0;
  Fp8RowwiseGemm(a.data(), b.data(), sa.data(), sb.data(), 1, 1, 32, &d);
  EXPECT_EQ(d, DoubleToBf16(448.0 * 448 * 32 * 0x1p-23));
  a[5] = 0x7F;  // NaN
  Fp8RowwiseGemm(a.data(), b.data(), sa.data(), sb.data(), 1, 1, 32, &d);
  EXPECT_EQ(d, 0x7FC0);
  // Subnormal E4M3 operands: 2^-9 * 2^-9 * 32 = 2^-13.
  std::vector<uint8_t> s(32, 0x01);
  const std::vector<float> one = {1.0f};
  Fp8RowwiseGemm(s.data(), s.data(), one.data(), one.data(), 1, 1, 32, &d);
  EXPECT_EQ(d, DoubleToBf16(0x1p-13));
}

}  // namespace
}  // namespace ws::gemm
