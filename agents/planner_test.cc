#include "agents/planner.h"

#include <gtest/gtest.h>

namespace ws {
namespace {

ProblemProgress Progress(std::string name, double sol, int64_t attempts, int64_t since,
                         double gain = 0) {
  ProblemProgress p;
  p.problem = std::move(name);
  p.best_time_us = sol > 0 ? 10 : 0;
  p.best_sol_fraction = sol;
  p.attempts = attempts;
  p.attempts_since_improvement = since;
  p.recent_gain = gain;
  return p;
}

TEST(PlannerTest, HeadroomAndProgressSetTheShares) {
  PlannerOptions opts;
  // Far from speed-of-light beats close to it.
  EXPECT_GT(ProblemWeight(Progress("far", 0.3, 5, 0), opts),
            ProblemWeight(Progress("near", 0.95, 5, 0), opts));
  // Recent progress raises a share; attempts without improvement lower it.
  EXPECT_GT(ProblemWeight(Progress("moving", 0.5, 5, 0, 0.2), opts),
            ProblemWeight(Progress("flat", 0.5, 5, 0, 0), opts));
  EXPECT_GT(ProblemWeight(Progress("fresh", 0.5, 5, 1), opts),
            ProblemWeight(Progress("stale", 0.5, 5, 6), opts));
  // Unknown fraction (no ceilings, compile-only) counts as full headroom.
  EXPECT_DOUBLE_EQ(ProblemWeight(Progress("unknown", 0, 0, 0), opts), 1.0);
  // Stalled and exhausted problems get nothing.
  EXPECT_TRUE(IsStalled(Progress("stalled", 0.5, 20, 8), opts));
  EXPECT_EQ(ProblemWeight(Progress("stalled", 0.5, 20, 8), opts), 0);
  ProblemProgress done = Progress("done", 0.5, 2, 0);
  done.exhausted = true;
  EXPECT_EQ(ProblemWeight(done, opts), 0);
}

TEST(PlannerTest, PickProblemFollowsTheWeights) {
  PlannerOptions opts;
  std::vector<ProblemProgress> ps = {Progress("near", 0.95, 5, 0), Progress("far", 0.25, 5, 0),
                                     Progress("stalled", 0.1, 30, 10)};
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < 1000; ++i) ++counts[PickProblem(ps, opts, (i + 0.5) / 1000.0)];
  EXPECT_EQ(counts[2], 0);
  EXPECT_GT(counts[1], 10 * counts[0]);  // 0.75 vs 0.05 headroom
  EXPECT_GT(counts[0], 0);               // near still gets some
  EXPECT_EQ(PickProblem({Progress("stalled", 0.1, 30, 10)}, opts, 0.5), -1);
  EXPECT_EQ(PickProblem({}, opts, 0.5), -1);
}

TEST(PlannerTest, ParentsAreTheBestPlusOtherLineages) {
  // Lineage 1 holds the three fastest kernels; lineages 2 and 3 are slower.
  std::vector<ParentCandidate> cands = {{11, 10.0, 1}, {12, 10.5, 1}, {13, 11.0, 1},
                                        {21, 14.0, 2}, {31, 20.0, 3}, {40, 0, 4}};
  for (uint64_t seed = 0; seed < 20; ++seed) {
    auto parents = PickParents(cands, 2, seed);
    ASSERT_EQ(parents.size(), 3u);
    EXPECT_EQ(parents[0], 11);
    // Both inspirations come from other lines, never from the best's.
    for (size_t i = 1; i < parents.size(); ++i) {
      EXPECT_TRUE(parents[i] == 21 || parents[i] == 31 || parents[i] == 40) << parents[i];
    }
    EXPECT_NE(parents[1], parents[2]);
  }
  // One line only: the rest of it fills in.
  auto single = PickParents({{1, 5, 1}, {2, 6, 1}, {3, 7, 1}}, 2, 1);
  ASSERT_EQ(single.size(), 3u);
  EXPECT_EQ(single[0], 1);
  EXPECT_EQ(PickParents({}, 2, 1).size(), 0u);
  EXPECT_EQ(PickParents({{9, 0, 9}}, 2, 1), std::vector<int64_t>{9});
}

}  // namespace
}  // namespace ws
