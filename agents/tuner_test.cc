#include "agents/tuner.h"

#include <set>

#include <gtest/gtest.h>

namespace ws {
namespace {

TEST(TunerTest, SizeAndDefaults) {
  KnobSpace space = {{"A", {4, 1, 2}}, {"B", {256, 128}}};
  EXPECT_EQ(KnobSpaceSize(space), 6);
  EXPECT_EQ(KnobSpaceSize({}), 1);  // one setting: no knobs
  EXPECT_EQ(KnobSpaceSize({{"A", {}}}), 0);
  EXPECT_EQ(DefaultKnobs(space), (KnobSetting{{"A", 4}, {"B", 256}}));
  EXPECT_EQ(KnobText({{"A", 4}, {"B", 256}}), "A=4 B=256");
}

TEST(TunerTest, SmallSpaceIsEnumeratedOnceDefaultsFirst) {
  KnobSpace space = {{"A", {4, 1, 2}}, {"B", {256, 128}}};
  std::vector<KnobObservation> history;
  std::set<KnobSetting> seen;
  bool first = true;
  while (true) {
    auto batch = ProposeKnobs(space, history, 4, {});
    if (batch.empty())
      break;
    if (first) {
      EXPECT_EQ(batch[0], DefaultKnobs(space));
    }
    first = false;
    EXPECT_LE(batch.size(), 4u);
    for (const auto& s : batch) {
      EXPECT_TRUE(seen.insert(s).second) << "proposed twice: " << KnobText(s);
      history.push_back({s, true, 10});
    }
  }
  EXPECT_EQ(seen.size(), 6u);
}

// A large space with a known optimum: coordinate descent from the defaults and restarts find
// it well before enumerating the space.
TEST(TunerTest, GuidedSearchFindsTheOptimumOfASeparableCost) {
  KnobSpace space;
  for (std::string k : {"A", "B", "C", "D", "E"}) space[k] = {0, 1, 2, 3, 4, 5};  // 7776 settings
  auto cost = [](const KnobSetting& s) {
    double t = 100;
    for (const auto& [k, v] : s) t += (v - 3) * (v - 3) * (k == "A" ? 5.0 : 1.0);
    return t;
  };
  std::vector<KnobObservation> history;
  for (int round = 0; round < 30; ++round) {
    auto batch = ProposeKnobs(space, history, 8, {});
    ASSERT_FALSE(batch.empty());
    for (const auto& s : batch) history.push_back({s, true, cost(s)});
  }
  double best = 1e9;
  for (const auto& h : history) best = std::min(best, h.time_us);
  EXPECT_DOUBLE_EQ(best, 100);
  EXPECT_LT(history.size(), 7776u / 20);
}

// After one round of one-knob changes, the improvements are tried together: a separable cost
// whose optimum is several knobs away is reached within two rounds.
TEST(TunerTest, ImprovementsOfSeveralKnobsAreCombined) {
  KnobSpace space;
  for (std::string k : {"A", "B", "C", "D"}) space[k] = {0, 1, 2, 3};  // 256 settings
  auto cost = [](const KnobSetting& s) {
    double t = 10;
    for (const auto& [k, v] : s) t += (3 - v);  // each knob best at 3, independently
    return t;
  };
  std::vector<KnobObservation> history;
  for (int round = 0; round < 2; ++round) {
    for (const auto& s : ProposeKnobs(space, history, 16, {})) history.push_back({s, true, cost(s)});
  }
  double best = 1e9;
  for (const auto& h : history) best = std::min(best, h.time_us);
  EXPECT_DOUBLE_EQ(best, 10) << "after " << history.size() << " evaluations";
  EXPECT_LE(history.size(), 32u);
}

// A setting timed again counts at its median: a lucky first run (5 us, then 40: median 22.5)
// does not make it the centre of the descent; the setting at 20 us is.
TEST(TunerTest, ASettingTimedAgainCountsAtItsMedian) {
  KnobSpace space;
  for (std::string k : {"A", "B", "C"}) space[k] = {0, 1, 2, 3, 4, 5, 6, 7};  // 512 settings
  const KnobSetting lucky = {{"A", 0}, {"B", 0}, {"C", 0}};
  const KnobSetting steady = {{"A", 7}, {"B", 7}, {"C", 7}};
  // Whether every proposal is one knob away from `center`.
  auto around = [](const std::vector<KnobSetting>& batch, const KnobSetting& center) {
    for (const auto& s : batch) {
      int differ = 0;
      for (const auto& [k, v] : s) differ += v != center.at(k);
      if (differ != 1) return false;
    }
    return !batch.empty();
  };
  std::vector<KnobObservation> history = {
      {lucky, true, 5}, {steady, true, 20}, {lucky, true, 40}};
  EXPECT_TRUE(around(ProposeKnobs(space, history, 64, {}), steady));
  history.pop_back();  // the lucky setting's one run alone: the descent starts there
  EXPECT_TRUE(around(ProposeKnobs(space, history, 64, {}), lucky));
}

// Proposals depend only on the history, so a resumed run continues with what the killed one
// would have proposed.
TEST(TunerTest, ProposalsAreAFunctionOfTheHistory) {
  KnobSpace space;
  for (std::string k : {"A", "B", "C"}) space[k] = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<KnobObservation> history;
  for (int round = 0; round < 12; ++round) {
    auto a = ProposeKnobs(space, history, 4, {7, 3});
    auto b = ProposeKnobs(space, history, 4, {7, 3});
    ASSERT_EQ(a, b);
    for (const auto& s : a) history.push_back({s, false, 0});  // compile-only: nothing timed
  }
  std::set<KnobSetting> unique;
  for (const auto& h : history) unique.insert(h.knobs);
  EXPECT_EQ(unique.size(), history.size());
}

}  // namespace
}  // namespace ws
