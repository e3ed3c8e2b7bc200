#include "problems/router_topk_softmax/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ws::router {
namespace {

// ---- The fp64 math ------------------------------------------------------------------------------

TEST(RouterExpTest, MatchesTheLibraryToAFewUlps) {
  EXPECT_EQ(Exp(0.0), 1.0);
  EXPECT_EQ(Exp(-0.0), 1.0);
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-700.0, 700.0);
  for (int i = 0; i < 20000; ++i) {
    const double x = i < 10000 ? u(rng) : u(rng) / 100.0;
    const double want = std::exp(x);
    EXPECT_LE(std::fabs(Exp(x) - want), 4e-16 * want) << "x = " << x;
  }
  EXPECT_NEAR(Exp(1.0), 2.718281828459045, 1e-15);
  EXPECT_NEAR(Exp(-1.0), 0.36787944117144233, 1e-16);
}

TEST(RouterExpTest, EdgesOfTheRange) {
  EXPECT_EQ(Exp(-800.0), 0.0);
  EXPECT_EQ(Exp(-1e300), 0.0);
  EXPECT_EQ(Exp(710.0), std::numeric_limits<double>::infinity());
  EXPECT_EQ(Exp(1e300), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(Exp(std::nan(""))));
  // The subnormal and near-overflow ends stay close to the library.
  EXPECT_NEAR(Exp(-740.0) / std::exp(-740.0), 1.0, 1e-3);  // subnormal: few bits left
  EXPECT_NEAR(Exp(709.0) / std::exp(709.0), 1.0, 1e-15);
  EXPECT_GT(Exp(709.7), 1e308);
}

TEST(RouterSigmoidTest, BothSidesAndTheTails) {
  EXPECT_EQ(Sigmoid(0.0), 0.5);
  for (double x : {-30.0, -5.0, -1.0, -1e-3, 1e-3, 1.0, 5.0, 30.0}) {
    // Two ulps of the value: libm's exp is not correctly rounded either.
    const double want = 1.0 / (1.0 + std::exp(-x));
    EXPECT_NEAR(Sigmoid(x), want, 4.5e-16 * want) << x;
    EXPECT_NEAR(Sigmoid(x) + Sigmoid(-x), 1.0, 5e-16) << x;
  }
  EXPECT_EQ(Sigmoid(1000.0), 1.0);
  EXPECT_EQ(Sigmoid(-1000.0), 0.0);
  EXPECT_GT(Sigmoid(-700.0), 0.0);  // e^-700, not flushed
}

// ---- Worked rows --------------------------------------------------------------------------------

struct Row {
  std::vector<int32_t> idx;
  std::vector<float> w;
};

Row RunRow(const std::vector<float>& logits, int64_t k, SoftmaxWeights mode) {
  Row r{std::vector<int32_t>(k), std::vector<float>(k)};
  TopkSoftmaxRow(logits.data(), static_cast<int64_t>(logits.size()), k, mode, r.idx.data(),
                 r.w.data());
  return r;
}

TEST(TopkSoftmaxRowTest, TwoOfFour) {
  // Logits 1, 3, 2, 0: the top two are experts 1 and 2, e^0 and e^-1 after the max shift.
  const Row r = RunRow({1, 3, 2, 0}, 2, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 2}));
  EXPECT_FLOAT_EQ(r.w[0], static_cast<float>(1 / (1 + std::exp(-1.0))));  // 0.7310586
  EXPECT_FLOAT_EQ(r.w[1], static_cast<float>(std::exp(-1.0) / (1 + std::exp(-1.0))));
  // Without renormalization: the full softmax probabilities, denominator 1 + e^-1 + e^-2 + e^-3.
  const double den = 1 + std::exp(-1.0) + std::exp(-2.0) + std::exp(-3.0);
  const Row s = RunRow({1, 3, 2, 0}, 2, SoftmaxWeights::kSoftmax);
  EXPECT_EQ(s.idx, (std::vector<int32_t>{1, 2}));
  EXPECT_FLOAT_EQ(s.w[0], static_cast<float>(1 / den));  // 0.6439143
  EXPECT_FLOAT_EQ(s.w[1], static_cast<float>(std::exp(-1.0) / den));
}

TEST(TopkSoftmaxRowTest, TiesGoToTheLowerExpertId) {
  Row r = RunRow({2, 5, 5, 1, 5}, 2, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(r.w[0], 0.5f);
  EXPECT_EQ(r.w[1], 0.5f);
  r = RunRow({2, 5, 5, 1, 5}, 3, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(r.w[0], static_cast<float>(1.0 / 3));
  // Equal below the top too: 2 and 2 after the three 5s.
  r = RunRow({2, 5, 5, 2, 5}, 4, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 2, 4, 0}));
  // -0 and +0 compare equal: a tie.
  r = RunRow({-0.0f, 0.0f}, 1, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0}));
  EXPECT_EQ(r.w[0], 1.0f);
  r = RunRow({0.0f, -0.0f}, 1, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0}));
}

TEST(TopkSoftmaxRowTest, AllExpertsChosen) {
  const Row r = RunRow({0.5f, -1, 2, 0}, 4, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{2, 0, 3, 1}));
  const Row s = RunRow({0.5f, -1, 2, 0}, 4, SoftmaxWeights::kSoftmax);
  EXPECT_EQ(s.idx, r.idx);
  // K = E: renormalizing changes nothing but the order of the sum (slot order, expert order).
  for (int j = 0; j < 4; ++j) EXPECT_FLOAT_EQ(s.w[j], r.w[j]);
  EXPECT_NEAR(r.w[0] + r.w[1] + r.w[2] + r.w[3], 1.0f, 2e-7f);
}

TEST(TopkSoftmaxRowTest, ExtremeLogits) {
  // Differences far beyond exp's range: weights exactly 1 and 0.
  Row r = RunRow({1e30f, -1e30f, 0.0f}, 2, SoftmaxWeights::kRenormalize);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(r.w[0], 1.0f);
  EXPECT_EQ(r.w[1], 0.0f);
  // Only differences count: shifting every logit by -100 changes no bit.
  r = RunRow({-99.0f, -97.0f, -98.0f, -100.0f}, 2, SoftmaxWeights::kSoftmax);
  const Row shifted = RunRow({1, 3, 2, 0}, 2, SoftmaxWeights::kSoftmax);
  EXPECT_EQ(r.idx, shifted.idx);
  EXPECT_EQ(r.w, shifted.w);
  // One expert, K = 1.
  r = RunRow({-3.5f}, 1, SoftmaxWeights::kSoftmax);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0}));
  EXPECT_EQ(r.w[0], 1.0f);
}

TEST(TopkSoftmaxTest, CountsOverRows) {
  // Three rows of three experts, K = 2.
  const std::vector<float> logits = {3, 2, 1,  //
                                     1, 2, 3,  //
                                     3, 1, 2};
  std::vector<int32_t> idx(6), counts(3, -7);
  std::vector<float> w(6);
  TopkSoftmax(logits.data(), 3, 3, 2, SoftmaxWeights::kRenormalize, idx.data(), w.data(),
              counts.data());
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 2, 1, 0, 2}));
  EXPECT_EQ(counts, (std::vector<int32_t>{2, 2, 2}));
  // Every row renormalizes e^0, e^-1.
  for (int row = 0; row < 3; ++row) EXPECT_EQ(w[2 * row], w[0]);
}

// An independent model: a stable sort of (logit desc, id asc), weights with std::exp in double.
TEST(TopkSoftmaxTest, AgreesWithASortingModel) {
  std::mt19937_64 rng(11);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (const auto& [e, k] : std::vector<std::pair<int, int>>{{8, 2}, {128, 8}, {384, 8}, {5, 5}}) {
    for (int trial = 0; trial < 50; ++trial) {
      std::vector<float> logits(e);
      for (float& l : logits) l = normal(rng);
      if (trial % 5 == 0)
        logits[e - 1] = logits[0];  // a tie somewhere
      std::vector<int32_t> order(e);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(),
                       [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
      const float m = logits[order[0]];
      for (SoftmaxWeights mode : {SoftmaxWeights::kRenormalize, SoftmaxWeights::kSoftmax}) {
        const Row r = RunRow(logits, k, mode);
        double den = 0;
        for (int i = 0; i < (mode == SoftmaxWeights::kRenormalize ? k : e); ++i)
          den += std::exp(static_cast<double>(logits[order[i]]) - m);
        for (int j = 0; j < k; ++j) {
          ASSERT_EQ(r.idx[j], order[j]) << "E " << e << " trial " << trial;
          const double want = std::exp(static_cast<double>(logits[order[j]]) - m) / den;
          EXPECT_NEAR(r.w[j], want, 1e-7 * want);
        }
      }
    }
  }
}

}  // namespace
}  // namespace ws::router
