// The planner's decisions, as pure functions so they can be tested without an evaluator: which
// problem gets the next attempt (headroom to speed-of-light and recent progress), when a problem
// has stalled, and which parents an attempt starts from (the best plus diverse others).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ws {

/// What the planner knows of one problem in a campaign.
struct ProblemProgress {
  std::string problem;
  double best_time_us = 0;       // 0: nothing ranked yet
  double best_sol_fraction = 0;  // 0: unknown (no ceilings, or compile-only)
  double recent_gain = 0;        // relative speed-up of the best over the last few attempts
  int64_t attempts = 0;
  int64_t attempts_since_improvement = 0;
  bool exhausted = false;  // nothing left to try (e.g. the tuner saw every setting)
};

struct PlannerOptions {
  int64_t stall_attempts = 8;  // attempts without improvement before a problem is stalled
  double progress_weight = 4;  // how much recent gain raises a problem's share
  int inspirations = 2;        // parents besides the best
};

/// A problem's share of the next attempts: headroom (1 - fraction of speed-of-light; 1 when
/// unknown) times (1 + progress_weight * recent gain), decaying with attempts since the last
/// improvement. 0 for stalled or exhausted problems.
double ProblemWeight(const ProblemProgress& p, const PlannerOptions& opts);

/// True when the problem has gone `stall_attempts` attempts without improving.
bool IsStalled(const ProblemProgress& p, const PlannerOptions& opts);

/// The problem to work on, drawn in proportion to ProblemWeight with `u` in [0, 1); -1 when no
/// problem has weight left.
int PickProblem(const std::vector<ProblemProgress>& problems, const PlannerOptions& opts, double u);

/// A kernel an attempt may start from.
struct ParentCandidate {
  int64_t kernel_id = 0;
  double time_us = 0;   // its best ranked time; 0 when not ranked (sorts last)
  int64_t lineage = 0;  // the root of its parent chain: kernels of one line share it
};

/// The best candidate first, then up to `inspirations` others: one per other lineage first
/// (fastest of each), then the remaining kernels, drawn with rank-weighted chance from `seed`,
/// so the search does not collapse on one line.
std::vector<int64_t> PickParents(std::vector<ParentCandidate> candidates, int inspirations,
                                 uint64_t seed);

}  // namespace ws
