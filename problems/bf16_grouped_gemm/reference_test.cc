#include "problems/bf16_grouped_gemm/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"

namespace ws::gemm {
namespace {

std::vector<uint16_t> Bits(const std::vector<double>& v) {
  std::vector<uint16_t> out;
  for (double x : v) out.push_back(DoubleToBf16(x));
  return out;
}

TEST(Bf16GroupedGemmTest, ForwardWithAnEmptyMiddleGroup) {
  // M 3, N 1, K 2; groups {0,1}, {}, {2}: expert 1's weights are never used.
  const auto a = Bits({1, 0, 0, 1, 1, 1});
  const auto b = Bits({2, 3, 100, 100, 5, 7});
  std::vector<uint16_t> out(3);
  ASSERT_TRUE(Bf16GroupedGemm(GroupedForm::kFwd, a.data(), b.data(), {2, 2, 3}, 3, 1, 2,
                              out.data())
                  .ok());
  EXPECT_EQ(out, Bits({2, 3, 12}));
}

TEST(Bf16GroupedGemmTest, DgradContractsOverN) {
  // M 3, N 2, K 1; groups {0}, {1,2}. out[r,k] = sum_n a[r,n] b[g,n,k].
  const auto a = Bits({1, 1, 1, 0, 0, 2});
  const auto b = Bits({2, 3, 5, 7});
  std::vector<uint16_t> out(3);
  ASSERT_TRUE(Bf16GroupedGemm(GroupedForm::kDgrad, a.data(), b.data(), {1, 3}, 3, 2, 1,
                              out.data())
                  .ok());
  EXPECT_EQ(out, Bits({5, 5, 14}));
}

TEST(Bf16GroupedGemmTest, WgradSumsTokensPerGroupAndZeroesEmptyGroups) {
  // M 3, N 1, K 2; groups {}, {0,1}, {2}. out[g,n,k] = sum_{r in g} a[r,n] b[r,k].
  const auto a = Bits({1, 2, 3});
  const auto b = Bits({1, 1, 1, -1, 2, 0});
  std::vector<uint16_t> out(6, 0xFFFF);
  ASSERT_TRUE(Bf16GroupedGemm(GroupedForm::kWgrad, a.data(), b.data(), {0, 2, 3}, 3, 1, 2,
                              out.data())
                  .ok());
  EXPECT_EQ(out, Bits({0, 0, 3, -1, 6, 0}));
}

TEST(Bf16GroupedGemmTest, BadOffsetsAreErrors) {
  const auto a = Bits({1, 1, 1}), b = Bits({1, 1});
  std::vector<uint16_t> out(3);
  EXPECT_FALSE(
      Bf16GroupedGemm(GroupedForm::kFwd, a.data(), b.data(), {2, 1}, 3, 1, 1, out.data()).ok());
  EXPECT_FALSE(
      Bf16GroupedGemm(GroupedForm::kFwd, a.data(), b.data(), {1, 2}, 3, 1, 1, out.data()).ok());
}

// The three forms agree with one dense model: fwd's out = dgrad's input, wgrad of (dout, x)
// reproduces per-group outer sums. Here: every form against direct loops on random data.
TEST(Bf16GroupedGemmTest, FormsMatchDirectLoops) {
  const int64_t m = 9, n = 3, k = 4;
  const std::vector<int32_t> offs = {4, 4, 9};
  std::vector<double> av, bv, xv;
  for (int i = 0; i < m * k; ++i) av.push_back((i * 7 % 11) - 5);
  for (int i = 0; i < 3 * n * k; ++i) bv.push_back((i * 5 % 13) - 6);
  for (int i = 0; i < m * n; ++i) xv.push_back((i * 3 % 7) - 3);
  const int group[m] = {0, 0, 0, 0, 2, 2, 2, 2, 2};
  std::vector<uint16_t> out(m * n);
  const auto a = Bits(av), b = Bits(bv), x = Bits(xv);
  ASSERT_TRUE(
      Bf16GroupedGemm(GroupedForm::kFwd, a.data(), b.data(), offs, m, n, k, out.data()).ok());
  for (int r = 0; r < m; ++r) {
    for (int c = 0; c < n; ++c) {
      double s = 0;
      for (int q = 0; q < k; ++q) s += av[r * k + q] * bv[(group[r] * n + c) * k + q];
      EXPECT_EQ(out[r * n + c], DoubleToBf16(s));
    }
  }
  std::vector<uint16_t> da(m * k);
  ASSERT_TRUE(
      Bf16GroupedGemm(GroupedForm::kDgrad, x.data(), b.data(), offs, m, n, k, da.data()).ok());
  for (int r = 0; r < m; ++r) {
    for (int q = 0; q < k; ++q) {
      double s = 0;
      for (int c = 0; c < n; ++c) s += xv[r * n + c] * bv[(group[r] * n + c) * k + q];
      EXPECT_EQ(da[r * k + q], DoubleToBf16(s));
    }
  }
  std::vector<uint16_t> db(3 * n * k);
  ASSERT_TRUE(
      Bf16GroupedGemm(GroupedForm::kWgrad, x.data(), a.data(), offs, m, n, k, db.data()).ok());
  for (int g = 0; g < 3; ++g) {
    for (int c = 0; c < n; ++c) {
      for (int q = 0; q < k; ++q) {
        double s = 0;
        for (int r = 0; r < m; ++r) {
          if (group[r] == g) s += xv[r * n + c] * av[r * k + q];
        }
        EXPECT_EQ(db[(g * n + c) * k + q], DoubleToBf16(s)) << g << " " << c << " " << q;
      }
    }
  }
}

}  // namespace
}  // namespace ws::gemm
