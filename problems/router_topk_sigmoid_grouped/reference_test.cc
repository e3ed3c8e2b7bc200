#include "problems/router_topk_sigmoid_grouped/reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace ws::router {
namespace {

double Sig(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

struct Row {
  std::vector<int32_t> idx;
  std::vector<float> w;
};

Row RunRow(const std::vector<float>& logits, const std::vector<float>& bias, int64_t k,
           int64_t groups, int64_t keep, int64_t scale_milli) {
  GroupedConfig c{static_cast<int64_t>(logits.size()), k, groups, keep, scale_milli};
  Row r{std::vector<int32_t>(k), std::vector<float>(k)};
  TopkSigmoidGroupedRow(logits.data(), bias.data(), c, r.idx.data(), r.w.data());
  return r;
}

TEST(TopkSigmoidGroupedRowTest, GroupLimitedSelection) {
  // Four groups of two. Group scores (no bias): g0 = s(3) + s(-3) = 1, g1 = 2 s(2) = 1.76,
  // g2 = s(2.5) + s(-5) = 0.93, g3 = s(0) + s(-1) = 0.77. Groups 1 and 0 are kept, so expert 4
  // (s(2.5) = 0.92, the second-best score of the row) is out; experts 2 and 3 tie (lower id first).
  const std::vector<float> logits = {3, -3, 2, 2, 2.5f, -5, 0, -1};
  const std::vector<float> zero(8, 0.0f);
  const Row r = RunRow(logits, zero, 3, 4, 2, 2500);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{0, 2, 3}));
  const double sum = Sig(3) + 2 * Sig(2);
  EXPECT_FLOAT_EQ(r.w[0], static_cast<float>(Sig(3) / sum * 2.5));  // 0.8774
  EXPECT_FLOAT_EQ(r.w[1], static_cast<float>(Sig(2) / sum * 2.5));  // 0.8113
  EXPECT_EQ(r.w[1], r.w[2]);
  // One group kept: only group 1.
  const Row one = RunRow(logits, zero, 2, 4, 1, 1000);
  EXPECT_EQ(one.idx, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(one.w[0], 0.5f);
  // Without group limits (one group): plain top-3 by score.
  const Row flat = RunRow(logits, zero, 3, 1, 1, 1000);
  EXPECT_EQ(flat.idx, (std::vector<int32_t>{0, 4, 2}));
}

TEST(TopkSigmoidGroupedRowTest, BiasSelectsButDoesNotWeigh) {
  // Biased scores 0.731, 1.1, 0.5, 0.5: expert 1 first; the weights use s(1) and s(0) only.
  const Row r = RunRow({1, 0, 0, 0}, {0, 0.6f, 0, 0}, 2, 1, 1, 1000);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 0}));
  const double sum = Sig(0) + Sig(1);
  EXPECT_FLOAT_EQ(r.w[0], static_cast<float>(0.5 / sum));  // 0.4062
  EXPECT_FLOAT_EQ(r.w[1], static_cast<float>(Sig(1) / sum));
  // A negative bias can make every biased score negative; the order still decides.
  const Row neg = RunRow({1, 0, 0, 0}, {-2, -1, -1.2f, -3}, 2, 1, 1, 1000);
  EXPECT_EQ(neg.idx, (std::vector<int32_t>{1, 2}));  // -0.5, -0.7, -1.269, -2.5
  EXPECT_EQ(neg.w[0], 0.5f);
}

TEST(TopkSigmoidGroupedRowTest, GroupTiesAndSingletonGroups) {
  // Groups of one: a group's score is its expert's. Groups 1 and 2 tie: group 1 is kept.
  const Row r = RunRow({0, 1, 1, -1}, {0, 0, 0, 0}, 2, 4, 2, 1000);
  EXPECT_EQ(r.idx, (std::vector<int32_t>{1, 2}));
  const Row r1 = RunRow({0, 1, 1, -1}, {0, 0, 0, 0}, 1, 4, 1, 1000);
  EXPECT_EQ(r1.idx, (std::vector<int32_t>{1}));
  EXPECT_EQ(r1.w[0], 1.0f);
  // Two groups of two with equal sums: group 0 kept; K fills it.
  const Row t = RunRow({1, 2, 2, 1}, {0, 0, 0, 0}, 2, 2, 1, 1000);
  EXPECT_EQ(t.idx, (std::vector<int32_t>{1, 0}));
}

TEST(TopkSigmoidGroupedRowTest, ScaleAndSums) {
  // Kimi K2's factor: the weights sum to 2.827.
  std::vector<float> logits(384), bias(384);
  std::mt19937_64 rng(3);
  std::normal_distribution<float> n(0.0f, 2.0f);
  for (int i = 0; i < 384; ++i) {
    logits[i] = n(rng);
    bias[i] = n(rng) * 0.05f;
  }
  const Row r = RunRow(logits, bias, 8, 1, 1, 2827);
  double sum = 0;
  for (float w : r.w) sum += w;
  EXPECT_NEAR(sum, 2.827, 4e-6);
}

TEST(TopkSigmoidGroupedTest, CountsOverRows) {
  const std::vector<float> logits = {3, 2, 1, 0,  //
                                     0, 1, 2, 3};
  const std::vector<float> bias(4, 0.0f);
  GroupedConfig c{4, 2, 2, 1, 1000};
  std::vector<int32_t> idx(4), counts(4, 99);
  std::vector<float> w(4);
  TopkSigmoidGrouped(logits.data(), bias.data(), 2, c, idx.data(), w.data(), counts.data());
  EXPECT_EQ(idx, (std::vector<int32_t>{0, 1, 3, 2}));
  EXPECT_EQ(counts, (std::vector<int32_t>{1, 1, 1, 1}));
}

// An independent model of DeepSeek-V3's gate: sorts instead of scans, std::exp in double.
TEST(TopkSigmoidGroupedTest, AgreesWithASortingModel) {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::uniform_real_distribution<float> u(-0.25f, 0.25f);
  struct Cfg {
    int e, k, groups, keep, scale;
  };
  for (const Cfg& cfg : {Cfg{256, 8, 8, 4, 2500}, Cfg{384, 8, 1, 1, 2827}, Cfg{64, 6, 16, 3, 1000},
                         Cfg{12, 12, 3, 3, 1000}}) {
    const int per = cfg.e / cfg.groups;
    for (int trial = 0; trial < 40; ++trial) {
      std::vector<float> logits(cfg.e), bias(cfg.e);
      for (int i = 0; i < cfg.e; ++i) {
        logits[i] = n(rng);
        bias[i] = u(rng);
      }
      std::vector<double> s(cfg.e), b(cfg.e);
      for (int i = 0; i < cfg.e; ++i) {
        s[i] = Sig(logits[i]);
        b[i] = s[i] + bias[i];
      }
      std::vector<double> gs(cfg.groups);
      for (int g = 0; g < cfg.groups; ++g) {
        std::vector<double> v(b.begin() + g * per, b.begin() + (g + 1) * per);
        std::sort(v.rbegin(), v.rend());
        gs[g] = per == 1 ? v[0] : v[0] + v[1];
      }
      std::vector<int> gorder(cfg.groups);
      std::iota(gorder.begin(), gorder.end(), 0);
      std::stable_sort(gorder.begin(), gorder.end(), [&](int x, int y) { return gs[x] > gs[y]; });
      std::vector<int> cand;
      for (int i = 0; i < cfg.e; ++i) {
        if (std::find(gorder.begin(), gorder.begin() + cfg.keep, i / per) !=
            gorder.begin() + cfg.keep)
          cand.push_back(i);
      }
      std::stable_sort(cand.begin(), cand.end(), [&](int x, int y) { return b[x] > b[y]; });
      double sum = 0;
      for (int j = 0; j < cfg.k; ++j) sum += s[cand[j]];
      const Row r = RunRow(logits, bias, cfg.k, cfg.groups, cfg.keep, cfg.scale);
      for (int j = 0; j < cfg.k; ++j) {
        ASSERT_EQ(r.idx[j], cand[j]) << "E " << cfg.e << " trial " << trial << " slot " << j;
        const double want = s[cand[j]] / sum * cfg.scale / 1000.0;
        EXPECT_NEAR(r.w[j], want, 1e-7 * want);
      }
    }
  }
}

}  // namespace
}  // namespace ws::router
