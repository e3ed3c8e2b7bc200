#include "evaluator/checkers/router_topk.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws {
namespace {

template <typename T>
HostTensor Tensor(DType dtype, std::vector<int64_t> dims, const std::vector<T>& v) {
  HostTensor t{dtype, std::move(dims), std::vector<uint8_t>(v.size() * sizeof(T))};
  if (!v.empty())
    std::memcpy(t.bytes.data(), v.data(), t.bytes.size());
  return t;
}

template <typename T>
std::vector<T> Values(const HostTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  return v;
}

class RouterCheckerTest : public ::testing::Test {
 protected:
  void Load(const std::string& name) {
    auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/" + name + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    spec_ = *spec;
  }
  // Runs the CPU reference on `inputs` into got_.
  void Reference() {
    auto out = RunCpuReference(spec_, symbols_, params_, inputs_);
    ASSERT_TRUE(out.ok()) << out.status().message();
    got_ = *out;
  }
  std::string Check() { return CheckRouterTopk(spec_, symbols_, params_, {}, inputs_, got_); }
  void SetIdx(int64_t row, int64_t j, int32_t v) {
    std::memcpy(got_["idx"].bytes.data() + (row * symbols_["K"] + j) * 4, &v, 4);
  }
  void SetW(int64_t row, int64_t j, float v) {
    std::memcpy(got_["w"].bytes.data() + (row * symbols_["K"] + j) * 4, &v, 4);
  }
  void SetCounts(const std::vector<int32_t>& c) {
    got_["counts"] = Tensor(DType::kI32, {int64_t(c.size())}, c);
  }
  float W(int64_t row, int64_t j) { return Values<float>(got_["w"])[row * symbols_["K"] + j]; }

  ProblemSpec spec_;
  SymbolTable symbols_;
  std::map<std::string, std::string> params_;
  TensorMap inputs_, got_;
};

TEST_F(RouterCheckerTest, SoftmaxReferencePassesAndMistakesFail) {
  Load("router_topk_softmax");
  std::mt19937_64 rng(2);
  std::normal_distribution<float> n(0.0f, 2.0f);
  const int64_t t = 40, e = 64, k = 6;
  std::vector<float> logits(t * e);
  for (float& l : logits) l = n(rng);
  symbols_ = {{"T", t}, {"E", e}, {"K", k}};
  inputs_ = {{"logits", Tensor(DType::kF32, {t, e}, logits)}};
  for (const char* mode : {"renormalize", "softmax"}) {
    params_ = {{"weights", mode}};
    Reference();
    EXPECT_EQ(Check(), "") << mode;
    // Two slots swapped: the order is wrong.
    const std::vector<int32_t> idx = Values<int32_t>(got_["idx"]);
    SetIdx(3, 0, idx[3 * k + 1]);
    SetIdx(3, 1, idx[3 * k + 0]);
    EXPECT_NE(Check().find("descending"), std::string::npos) << Check();
    Reference();
    // The last choice replaced by an expert well below the top K.
    int32_t outsider = 0;
    while (std::find(idx.begin() + 5 * k, idx.begin() + 6 * k, outsider) != idx.begin() + 6 * k)
      ++outsider;
    SetIdx(5, k - 1, outsider);
    EXPECT_NE(Check(), "");
    Reference();
    // Duplicates and out-of-range ids.
    SetIdx(0, 1, idx[0]);
    EXPECT_NE(Check().find("twice"), std::string::npos) << Check();
    Reference();
    SetIdx(0, 1, static_cast<int32_t>(e));
    EXPECT_NE(Check().find("not an expert id"), std::string::npos) << Check();
    Reference();
    // Weights: 5e-6 relative passes, 2e-5 fails; NaN fails.
    SetW(7, 2, W(7, 2) * (1 + 5e-6f));
    EXPECT_EQ(Check(), "");
    SetW(7, 2, W(7, 2) * (1 + 2e-5f));
    EXPECT_NE(Check().find("w[7, 2]"), std::string::npos) << Check();
    SetW(7, 2, NAN);
    EXPECT_NE(Check(), "");
    Reference();
    // Counts must be the histogram of idx.
    std::vector<int32_t> counts = Values<int32_t>(got_["counts"]);
    ++counts[idx[0]];
    SetCounts(counts);
    EXPECT_NE(Check().find("counts["), std::string::npos) << Check();
  }
}

TEST_F(RouterCheckerTest, SoftmaxNearTieMayGoEitherWay) {
  Load("router_topk_softmax");
  params_ = {{"weights", "renormalize"}};
  symbols_ = {{"T", 1}, {"E", 4}, {"K", 2}};
  const float two_up = std::nextafter(2.0f, 3.0f);  // 2 + 2.4e-7: probabilities 2.4e-7 apart
  inputs_ = {{"logits", Tensor(DType::kF32, {1, 4}, std::vector<float>{1, 3, 2, two_up})}};
  Reference();
  EXPECT_EQ(Values<int32_t>(got_["idx"]), (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(Check(), "");
  // Expert 2 instead of 3: accepted once the counts follow the choice.
  SetIdx(0, 1, 2);
  EXPECT_NE(Check().find("counts[2] = 0"), std::string::npos) << Check();
  SetCounts({0, 1, 1, 0});
  EXPECT_EQ(Check(), "");
  // A real gap (2 vs 2.001, 1e-3 apart) is no tie.
  inputs_ = {{"logits", Tensor(DType::kF32, {1, 4}, std::vector<float>{1, 3, 2, 2.001f})}};
  Reference();
  SetIdx(0, 1, 2);
  SetCounts({0, 1, 1, 0});
  EXPECT_NE(Check().find("left out"), std::string::npos) << Check();
  // Exactly equal logits: either order.
  inputs_ = {{"logits", Tensor(DType::kF32, {1, 4}, std::vector<float>{5, 1, 5, 0})}};
  Reference();
  EXPECT_EQ(Values<int32_t>(got_["idx"]), (std::vector<int32_t>{0, 2}));
  SetIdx(0, 0, 2);
  SetIdx(0, 1, 0);
  EXPECT_EQ(Check(), "");
}

TEST_F(RouterCheckerTest, GroupedReferencePassesAndGroupsAreEnforced) {
  Load("router_topk_sigmoid_grouped");
  std::mt19937_64 rng(4);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::uniform_real_distribution<float> u(-0.25f, 0.25f);
  const int64_t t = 50, e = 32, k = 3;
  std::vector<float> logits(t * e), bias(e);
  for (float& l : logits) l = n(rng);
  for (float& b : bias) b = u(rng);
  symbols_ = {{"T", t}, {"E", e}, {"K", k}, {"NG", 8}, {"TG", 2}, {"SCALE_MILLI", 2500}};
  inputs_ = {{"logits", Tensor(DType::kF32, {t, e}, logits)},
             {"bias", Tensor(DType::kF32, {e}, bias)}};
  Reference();
  EXPECT_EQ(Check(), "");
  // Weights carry the scale: without it they fail.
  SetW(0, 0, W(0, 0) / 2.5f);
  EXPECT_NE(Check().find("w[0, 0]"), std::string::npos) << Check();
  // Row 1: the globally best expert outside the kept groups, if it is not chosen, cannot replace
  // the last choice.
  Reference();
  const std::vector<int32_t> idx = Values<int32_t>(got_["idx"]);
  int exercised = 0;
  for (int64_t row = 0; row < t; ++row) {
    int32_t best = 0;
    for (int32_t i = 1; i < e; ++i) {
      if (1 / (1 + std::exp(-logits[row * e + i])) + bias[i] >
          1 / (1 + std::exp(-logits[row * e + best])) + bias[best])
        best = i;
    }
    bool chosen = false;
    for (int j = 0; j < k; ++j) chosen = chosen || idx[row * k + j] == best;
    if (chosen)
      continue;
    // The row's best expert was not chosen: its group was not kept. Putting it first must fail.
    SetIdx(row, 0, best);
    EXPECT_NE(Check(), "") << "row " << row;
    Reference();
    ++exercised;
  }
  EXPECT_GT(exercised, 0);
}

TEST_F(RouterCheckerTest, GroupedNearTieOfGroups) {
  Load("router_topk_sigmoid_grouped");
  // Two groups of two; group 1 = s(0) + s(1 + 1.2e-7) is above group 0 = s(1) + s(0) by 2.4e-8:
  // a near-tie, so keeping group 0 instead (experts 0 and 1) is accepted.
  symbols_ = {{"T", 1}, {"E", 4}, {"K", 2}, {"NG", 2}, {"TG", 1}, {"SCALE_MILLI", 1000}};
  const float one_up = std::nextafter(1.0f, 2.0f);
  inputs_ = {{"logits", Tensor(DType::kF32, {1, 4}, std::vector<float>{1, 0, 0, one_up})},
             {"bias", Tensor(DType::kF32, {4}, std::vector<float>(4, 0.0f))}};
  Reference();
  EXPECT_EQ(Values<int32_t>(got_["idx"]), (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(Check(), "");
  SetIdx(0, 0, 0);
  SetIdx(0, 1, 1);
  SetCounts({1, 1, 0, 0});
  EXPECT_EQ(Check(), "");
  // One from each group: never a valid kept set with TG = 1.
  SetIdx(0, 1, 3);
  SetCounts({1, 0, 0, 1});
  EXPECT_NE(Check().find("groups"), std::string::npos) << Check();
  // With a real gap between the groups, group 0 is wrong.
  inputs_["logits"] = Tensor(DType::kF32, {1, 4}, std::vector<float>{1, 0, 0, 1.5f});
  Reference();
  SetIdx(0, 0, 0);
  SetIdx(0, 1, 1);
  SetCounts({1, 1, 0, 0});
  EXPECT_NE(Check(), "");
}

// The CPU reference on inputs generated as the runner generates them (problems/init.h), at every
// test and hidden shape and parameter setting: the checker accepts it, and rejects it with one
// count moved.
TEST_F(RouterCheckerTest, ReferenceOnGeneratedInputsPassesEveryShape) {
  for (const char* name : {"router_topk_softmax", "router_topk_sigmoid_grouped"}) {
    Load(name);
    std::vector<std::map<std::string, std::string>> settings = {{}};
    if (spec_.FindParam("weights"))
      settings = {{{"weights", "renormalize"}}, {{"weights", "softmax"}}};
    for (const auto* shapes : {&spec_.test_shapes, &spec_.hidden_shapes}) {
      for (const Shape& shape : *shapes) {
        for (const auto& setting : settings) {
          params_ = setting;
          symbols_ = BindSymbols(spec_, shape, params_);
          auto inputs = GenerateInputs(spec_, symbols_, 0x5EED0000u + shape.symbols.at("T"));
          ASSERT_TRUE(inputs.ok()) << inputs.status().message();
          inputs_ = *inputs;
          Reference();
          const std::string where = std::string(name) + " " + ShapeText(spec_, shape);
          EXPECT_EQ(Check(), "") << where;
          std::vector<int32_t> counts = Values<int32_t>(got_["counts"]);
          --counts[Values<int32_t>(got_["idx"])[0]];
          ++counts[(Values<int32_t>(got_["idx"])[0] + 1) % counts.size()];
          SetCounts(counts);
          if (counts.size() > 1) {
            EXPECT_NE(Check(), "") << where;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace ws
