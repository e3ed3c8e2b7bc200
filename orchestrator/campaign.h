// Campaigns: agents improve the kernels of a problem set until a budget is spent. The engine runs
// the planner loop (which problem, which agent, which parents), the attempts (the tuner's knob
// search, LLM workers' tool loops), the reviewer on would-be winners, the budgets and the live
// progress display. All state is in the store: every evaluation is committed as it finishes, so a
// kill -9 loses none, and `resume` continues from what the store holds.
//
// Also here: EvaluateAndRecord, the one path from a candidate to a stored evaluation, used by both
// `warpsmith eval` and the campaigns.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agents.h"
#include "base/status.h"
#include "evaluator/evaluator.h"
#include "orchestrator/executor.h"
#include "orchestrator/store.h"

namespace ws {

// ---- Evaluating and recording one candidate -----------------------------------------------------

/// Evaluate's signature: the seam where tests put a fake evaluator.
using EvalFn = std::function<Result<EvalResult>(const EvalRequest&, const EvaluatorOptions&)>;

/// Who asked for an evaluation and why; stored with it.
struct RecordContext {
  std::string origin;  // kernels.origin on first sighting ("file:x.cu", "agent:...")
  std::optional<int64_t> parent_kernel_id;
  std::optional<int64_t> campaign_id;
  std::optional<int64_t> attempt_id;
  std::string agent;             // "" for `warpsmith eval`
  std::string purpose = "eval";  // "eval", "tune", "compile", "check", "time", "submit"
  std::string job_id;            // the executor job that evaluated it ("": in-process)
  std::string node;              // where it ran
  std::optional<int64_t> gpu_index;
};

struct RecordedEvaluation {
  EvalResult result;
  int64_t kernel_id = 0;
  int64_t evaluation_id = 0;
  bool ranked = false;     // ok with hidden shapes included: the leaderboard may show it
  double gpu_seconds = 0;  // wall time of the evaluation when it ran on a GPU
  bool duplicate = false;  // its job's result was already stored: nothing new was counted
};

/// Per-kernel resource usage as JSON text (stored with every evaluation).
std::string ResourcesJson(const EvalResult& r);

/// Records an evaluation that already ran: the kernel once per content, the evaluation always.
/// Only an ok result with hidden shapes included gets a time (and so a leaderboard place).
Result<RecordedEvaluation> RecordEvaluation(Store& store, const EvalRequest& req,
                                            const EvalResult& result, const RecordContext& ctx,
                                            double gpu_seconds);

/// Evaluate (through `eval`, ws::Evaluate when empty) and RecordEvaluation.
Result<RecordedEvaluation> EvaluateAndRecord(Store& store, const EvalRequest& req,
                                             const EvaluatorOptions& opts, const RecordContext& ctx,
                                             const EvalFn& eval = nullptr);

/// The stored ceilings for the device, measured once (and stored) when there are none yet.
Result<std::optional<DeviceCeilings>> CeilingsFor(Store& store, const DeviceInfo& device,
                                                  const EvaluatorOptions& opts);

// ---- Campaign configuration ---------------------------------------------------------------------

/// Limits on a campaign's spending; an unset key is unlimited.
struct Budget {
  std::optional<int64_t> evaluations;
  std::optional<int64_t> tokens;
  std::optional<double> dollars;
  std::optional<double> gpu_seconds;
  std::optional<double> wall_seconds;
};

/// "evaluations=40,tokens=2e6,dollars=5,gpu_seconds=600,wall=30m". Keys: evaluations (evals),
/// tokens, dollars (usd), gpu_seconds (gpu), wall_seconds (wall, wall_time); times take an
/// s/m/h suffix. Errors name the bad item.
Result<Budget> ParseBudget(std::string_view text);

/// The first spent budget as text ("evaluations 40/40"), or empty while everything is left.
std::string BudgetExhausted(const Budget& budget, const CampaignSpend& spent);

/// An agent as named on the command line: "tuner", or PROVIDER:MODEL ("openai:gpt-4.1").
struct AgentSpec {
  std::string provider;  // "tuner", "openai", "anthropic"
  std::string model;
  std::string name() const { return model.empty() ? provider : provider + ":" + model; }
  bool is_tuner() const { return provider == "tuner"; }
};
Result<AgentSpec> ParseAgent(std::string_view text);

/// "AGENT=IN,OUT[,CACHE_READ[,CACHE_WRITE]]" (--price): an LLM agent's prices in USD per million
/// tokens, e.g. "anthropic:claude-sonnet-4-5=3,15,0.3,3.75".
Result<std::pair<std::string, Prices>> ParseAgentPrice(std::string_view text);

struct CampaignConfig {
  std::string problems = "*";     // a glob over problem names
  std::vector<AgentSpec> agents;  // empty: the tuner alone
  std::string base_url;           // for the LLM agents
  /// Per LLM agent (its name): what its tokens cost. A `dollars` budget needs every LLM agent's;
  /// without prices an agent's spend counts as $0.
  std::map<std::string, Prices> prices;
  Budget budget;
  bool compile_only = false;  // compile and validate only (also forced without a GPU)
  std::string arch;           // "" = the GPU's, or sm_90a without one
  std::map<std::string, std::string> params;  // problem parameters (--set), where they apply
  std::string seed = "hand";        // seed parents: "hand" (kernels/<p>/kernel.cu, else the
                                    // starting kernel), "starting", or a .cu path
  int tuner_batch = 8;              // settings per tuner attempt
  int compile_threads = 0;          // parallel compiles; 0 = min(4, CPU cores)
  int max_turns = 16;               // per worker attempt
  int64_t context_tokens = 128000;  // the models' window
  /// Per model reply, workers' and reviewers' alike; a reasoning model's hidden reasoning counts
  /// against it, so such models want more.
  int max_output_tokens = 8192;
  uint64_t rng_seed = 1;
  /// A would-be leaderboard winner (ok, hidden shapes included, faster than the stored best for
  /// its problem, parameters and GPU) is evaluated again in deep mode (compute-sanitizer) before
  /// it is recorded; only that deep evaluation is recorded. A sanitizer that cannot run fails
  /// the campaign.
  bool deep_winners = false;
  /// The leader of a problem's group (its parameters, this GPU) is timed again after an attempt
  /// until it has this many ok runs (at most 4 more per attempt): the leaderboard ranks a kernel
  /// by its runs' median (Store::Leaderboard), so one lucky run does not hold first place.
  /// 0 or 1: off.
  int confirm_runs = 2;
  /// Where evaluations run: "local" (this host's GPUs and cores) or "slurm".
  std::string executor = "local";
  std::string gpus;  // local: "0,1" (default: CUDA_VISIBLE_DEVICES, else the default GPU)
  std::string slurm_partition, slurm_account, slurm_time;
  std::string slurm_shared_dir;  // default: <workspace>/slurm (docs/scale-out.md)
  int max_tries = 3;             // per job: a lost or cancelled job is retried up to this
};

std::string CampaignConfigJson(const CampaignConfig& c);
Result<CampaignConfig> ParseCampaignConfig(const std::string& json_text);

// ---- Running campaigns --------------------------------------------------------------------------

/// Makes an LLM client for an agent from the configuration the campaign gives it (provider,
/// model, endpoint, prices); the default calls MakeLlmClient.
using ClientFactory = std::function<Result<std::unique_ptr<LlmClient>>(
    const AgentSpec& agent, const LlmConfig& cfg)>;

/// Where a campaign runs and what it talks to. Tests replace `evaluate`, `make_client` and the
/// device.
struct CampaignEnv {
  std::string workspace = ".warpsmith";
  std::string problems_dir;    // problems/<name>/spec.json
  std::string kernels_dir;     // kernels/<name>/kernel.cu (hand-tuned seeds)
  EvaluatorOptions eval_opts;  // workspace, runner, compile worker
  EvalFn evaluate;             // empty: ws::Evaluate
  ClientFactory make_client;   // empty: MakeLlmClient
  bool probe_device = true;    // false: use `device` as given (tests)
  std::optional<DeviceInfo> device;
  std::optional<DeviceCeilings> ceilings;
  FILE* out = stdout;                   // the progress display
  std::optional<bool> live;             // redraw in place; default: isatty(out)
  const CancelToken* cancel = nullptr;  // set from another thread or a signal: stop soon
  /// Runs the evaluations instead of the executor the config names (tests: a fake).
  Executor* executor = nullptr;
  std::string job_binary;  // warpsmith, for jobs in other processes; default: this binary
  double slurm_lost_grace_s = 5;
};

/// Creates a campaign from `config` and runs it to its end (budget spent, every problem stalled,
/// stopped). Returns the campaign id, also when the campaign ends "failed" (see its message).
Result<int64_t> StartCampaign(const CampaignConfig& config, CampaignEnv& env);

/// Runs (or resumes) a stored campaign: spending so far is counted from the store, attempts a
/// killed orchestrator left running are marked interrupted, and the search continues.
Status RunCampaign(int64_t campaign_id, CampaignEnv& env);

/// The campaign's state for `campaign status --json`: config, spend against budget, per problem
/// (best time, fraction of speed-of-light, attempts, evaluations, status) and per agent
/// (attempts, verdicts, tokens, cost).
Result<std::string> CampaignStatusJson(Store& store, int64_t campaign_id);
/// The same as text lines.
Result<std::string> CampaignStatusText(Store& store, int64_t campaign_id);

}  // namespace ws
