// The store: one SQLite database per workspace (WAL mode, versioned schema). Every evaluation is
// recorded with its kernel, GPU, arch, verdict, timings and speed-of-light fraction. A committed
// evaluation survives a kill -9 of the orchestrator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

struct sqlite3;

namespace ws {

struct KernelRecord {
  int64_t id = 0;
  std::string problem;
  std::string hash;         // sha256 of the source
  std::string source;
  std::string origin;       // "file:<path>", "tuner", "agent:<model>", "reference"
  std::optional<int64_t> parent_id;
  std::string created_at;
  std::optional<int64_t> campaign_id;  // the campaign that produced it (first sighting)
  std::string agent;                   // "tuner", "openai:gpt-5", "" for files
  /// The device-library headers (kernels/include) it was compiled with, path -> content; its
  /// hash covers them (KernelHash), and export ships them beside the source.
  std::map<std::string, std::string> library_headers;
};

struct ShapeTiming {
  std::string shape_json;   // {"M":..,"K":..}
  std::string kind;         // "bench"
  double median_us = 0, min_us = 0, p90_us = 0, stdev_us = 0;
  int iterations = 0;
  double sol_us = 0;
};

struct EvaluationRecord {
  int64_t id = 0;
  int64_t kernel_id = 0;
  std::string problem;
  std::string params_json;  // {"rounding":"rceil"}
  std::string knobs_json;   // {"ROWS":4}
  std::string gpu;          // "NVIDIA H200" ("" when compile-only)
  std::string arch;         // "sm_90a"
  std::string driver;
  std::string verdict;      // VerdictName
  std::string message;
  std::string resources_json;
  double time_us = 0;       // geomean of bench medians (0 if not timed)
  double sol_fraction = 0;  // geomean of T_SOL / T over bench shapes (0 if unknown)
  std::vector<ShapeTiming> timings;
  std::string created_at;
  std::optional<int64_t> campaign_id;
  std::optional<int64_t> attempt_id;
  std::string agent;         // "tuner", "openai:gpt-5", "" for `warpsmith eval`
  std::string purpose;       // "eval", "compile", "check", "time", "submit", "tune"
  double gpu_seconds = 0;    // wall time of the evaluation when it ran on a GPU
  bool flagged = false;      // a reviewer asks a person to look at it
  std::string flag_reason;
  /// The sandbox layers that confined it, {"layer": "state", ...} (EvalResult::sandbox_layers;
  /// "stage" says whether they are the runner's or, when nothing ran, the compile worker's).
  /// '{}' for evaluations recorded before the store kept them. Empty is stored as '{}'.
  std::string sandbox_json = "{}";
  /// Deep mode's per-tool results ({"memcheck": "clean", ...}, EvalResult::deep); '{}' when
  /// deep mode was not asked for. Empty is stored as '{}'.
  std::string deep_json = "{}";
  /// The executor job that produced it ("" for in-process evaluations); unique in the store.
  std::string job_id;
  std::string node;                  // the host that ran it ("" when unknown)
  std::optional<int64_t> gpu_index;  // the GPU of that host that timed it (CUDA ordinal)
};

/// One executor job of a campaign (`campaign status` shows them per node).
struct JobRecord {
  std::string id;  // the logical job id; the same across retries
  std::optional<int64_t> campaign_id;
  std::string kind;      // "compile", "gpu"
  std::string executor;  // "local", "slurm", ...
  std::string state;     // "queued", "running", "done", "failed", "cancelled", "lost"
  int64_t tries = 1;
  std::string external_id;  // the Slurm job id of the latest try, ...
  std::string node;
  std::optional<int64_t> gpu_index;
  std::string message;
  std::optional<int64_t> evaluation_id;
  std::string created_at, updated_at;
};

struct CeilingsRecord {
  std::string gpu;
  double copy_bytes_per_s = 0, bf16_flops_per_s = 0, fp8_flops_per_s = 0;
  std::string measured_at;
};

// A kernel with its knobs at the top of its (problem, params, gpu) group. time_us is the median
// of its ok, timed evaluations there; evaluation_id names the one at the lower middle, whose
// record (created_at, sandbox, deep mode) the entry shows; flagged if any of them was.
struct LeaderboardEntry {
  std::string problem;
  std::string params_json;
  std::string gpu;
  int64_t kernel_id = 0;
  int64_t evaluation_id = 0;
  std::string kernel_hash;
  std::string origin;
  double time_us = 0;
  double sol_fraction = 0;  // at time_us
  int64_t evaluations = 1;  // the ok, timed evaluations time_us is the median of
  double fastest_us = 0, slowest_us = 0;  // of those runs: how far apart they are
  std::string created_at;
  std::string knobs_json;
  std::string agent;
  bool flagged = false;
  std::string flag_reason;
  std::string sandbox_json = "{}";  // as in EvaluationRecord
  std::string deep_json = "{}";
};

// ---- Campaigns ----------------------------------------------------------------------------------

struct CampaignRecord {
  int64_t id = 0;
  std::string config_json;   // what `campaign start` was given (problems, agents, budget, ...)
  std::string status;        // "running", "stopped", "done", "failed"
  bool stop_requested = false;
  int64_t pid = 0;           // of the orchestrator that last ran it
  double wall_seconds = 0;   // time spent running, summed over start and resumes
  std::string message;
  std::string created_at, updated_at;
};

struct CampaignProblemRecord {
  int64_t campaign_id = 0;
  std::string problem;
  std::string params_json;
  std::optional<int64_t> seed_kernel_id;
  std::string status = "active";  // "active", "stalled", "done"
};

struct AttemptRecord {
  int64_t id = 0;
  int64_t campaign_id = 0;
  std::string problem;
  std::string agent;
  std::optional<int64_t> parent_kernel_id;
  std::string status = "running";  // "running", "submitted", "no_submission", "error", "interrupted"
  std::string message;
  std::optional<int64_t> best_evaluation_id;
  std::string started_at, finished_at;
};

struct AgentTurnRecord {
  int64_t campaign_id = 0;
  std::optional<int64_t> attempt_id;
  std::string agent;
  int64_t input_tokens = 0, output_tokens = 0, cached_input_tokens = 0;
  double cost_usd = 0;
  std::string stop_reason;
};

/// What a campaign has spent so far, summed from the store (so a resumed run counts it all).
struct CampaignSpend {
  int64_t evaluations = 0;
  int64_t tokens = 0;        // input + output
  double dollars = 0;
  double gpu_seconds = 0;
  double wall_seconds = 0;
};

/// Per agent: attempts, evaluations by verdict, tokens and cost.
struct AgentStats {
  std::string agent;
  int64_t attempts = 0;
  std::map<std::string, int64_t> verdicts;  // verdict -> evaluations
  int64_t input_tokens = 0, output_tokens = 0;
  double cost_usd = 0;
};

/// Thread-compatible (one Store per thread); separate processes may share one database file.
class Store {
 public:
  /// Opens or creates the database and migrates the schema to the current version.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  /// Inserts a kernel, or returns the id of the kernel with the same (problem, hash).
  Result<int64_t> PutKernel(const KernelRecord& k);
  Result<KernelRecord> GetKernel(int64_t id);

  /// Records an evaluation and its timings in one transaction; returns its id. An evaluation
  /// whose job_id is already stored is not added again: the stored one's id is returned and
  /// `inserted` (if given) says false.
  Result<int64_t> AddEvaluation(const EvaluationRecord& e, bool* inserted = nullptr);
  Result<std::vector<EvaluationRecord>> Evaluations(const std::string& problem, int limit);

  Status PutCeilings(const CeilingsRecord& c);
  Result<std::optional<CeilingsRecord>> GetCeilings(const std::string& gpu);
  /// The most recently measured ceilings of any GPU (`problems show` on a machine without one).
  Result<std::optional<CeilingsRecord>> LatestCeilings();

  /// The fastest ok evaluation per (problem, params, gpu), fastest first within a problem.
  /// `problem` empty means all problems.
  Result<std::vector<LeaderboardEntry>> Leaderboard(const std::string& problem);

  /// Marks an evaluation for a person to review.
  Status FlagEvaluation(int64_t evaluation_id, const std::string& reason);

  // ---- Campaigns --------------------------------------------------------------------------------

  Result<int64_t> CreateCampaign(const std::string& config_json, int64_t pid);
  Result<CampaignRecord> GetCampaign(int64_t id);
  /// The newest campaign, if any.
  Result<std::optional<CampaignRecord>> LatestCampaign();
  Result<std::vector<CampaignRecord>> Campaigns();
  /// Takes a campaign over for this process: status running, stop request cleared, pid set.
  Status ClaimCampaign(int64_t id, int64_t pid);
  Status SetCampaignStatus(int64_t id, const std::string& status, const std::string& message);
  Status RequestCampaignStop(int64_t id);
  Status AddCampaignWallSeconds(int64_t id, double seconds);

  Status PutCampaignProblem(const CampaignProblemRecord& p);
  Result<std::vector<CampaignProblemRecord>> CampaignProblems(int64_t campaign_id);
  Status SetCampaignProblemStatus(int64_t campaign_id, const std::string& problem,
                                  const std::string& status);

  Result<int64_t> StartAttempt(const AttemptRecord& a);
  Status FinishAttempt(int64_t id, const std::string& status, const std::string& message,
                       std::optional<int64_t> best_evaluation_id);
  /// Attempts left "running" by a killed orchestrator become "interrupted"; returns how many.
  Result<int64_t> InterruptRunningAttempts(int64_t campaign_id);
  /// Oldest first; `problem` empty means all.
  Result<std::vector<AttemptRecord>> Attempts(int64_t campaign_id, const std::string& problem);

  Status AddAgentTurn(const AgentTurnRecord& t);

  /// The campaign's evaluations (no per-shape timings), oldest first; `problem` empty means all.
  Result<std::vector<EvaluationRecord>> CampaignEvaluations(int64_t campaign_id,
                                                            const std::string& problem);
  Result<CampaignSpend> Spend(int64_t campaign_id);
  /// The models' tokens and dollars per problem (each turn counted to its attempt's problem,
  /// reviews included); `evaluations`, `gpu_seconds` and `wall_seconds` are left 0.
  Result<std::map<std::string, CampaignSpend>> TokenSpendByProblem(int64_t campaign_id);
  /// Per agent; `campaign_id` empty means every campaign (and `warpsmith eval`, as agent "").
  Result<std::vector<AgentStats>> AgentStatistics(std::optional<int64_t> campaign_id);

  /// Inserts or updates a job (by id); evaluation_id is kept once set.
  Status PutJob(const JobRecord& j);
  /// Oldest first; `campaign_id` empty means every job.
  Result<std::vector<JobRecord>> Jobs(std::optional<int64_t> campaign_id);

 private:
  explicit Store(sqlite3* db);
  sqlite3* db_;
  int version_ = 0;
};

}  // namespace ws
