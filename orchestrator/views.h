// The JSON views of the store that the CLI's --json output and the dashboard (`warpsmith serve`)
// share: the dashboard renders its pages from these same objects, and /api/... returns them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "orchestrator/store.h"

namespace ws {

/// Suspicion thresholds: a kernel this close to (or past) speed-of-light, or this noisy, is
/// shown for a person to look at.
inline constexpr double kNearSolFraction = 0.9;
inline constexpr double kHighVarianceCv = 0.1;  // stdev / median on any timed shape

/// `warpsmith leaderboard --json`: the fastest ok evaluation per (problem, params, GPU), with the
/// baseline's time and the speed-up over it where the store holds a baseline evaluation (a kernel
/// from <problems_dir>/<problem>/baseline.cu), the campaign, and suspicion flags. `problem` empty
/// means all problems.
Result<nlohmann::json> LeaderboardJson(Store& store, const std::string& problem,
                                       const std::string& problems_dir);

/// One problem: its leaderboard rows, every evaluation (oldest first) with its verdict, and per
/// (GPU, params) the best time after each evaluation and after each GPU-second spent, with the
/// baseline time and the speed-of-light time. nullopt when neither the store nor the problem set
/// knows the name.
Result<std::optional<nlohmann::json>> ProblemJson(Store& store, const std::string& problem,
                                                  const std::string& problems_dir);

/// One kernel: source, plan, diffs against its parent and the problem's baseline, its
/// evaluations with per-shape timings and resources, checks, suspicion flags and provenance.
/// nullopt when there is no such kernel.
Result<std::optional<nlohmann::json>> KernelJson(Store& store, int64_t id,
                                                 const std::string& problems_dir);

/// `warpsmith campaign status --json` plus spend per agent (evaluations, GPU-seconds) and the
/// latest attempts. nullopt when there is no such campaign.
Result<std::optional<nlohmann::json>> CampaignJson(Store& store, int64_t id);

/// Every campaign, newest first: id, status, created/updated, spend.
Result<nlohmann::json> CampaignsJson(Store& store);

/// The raw text of a source's `/* warpsmith:plan ... */` comment; empty when it has none.
std::string PlanText(const std::string& source);

}  // namespace ws
