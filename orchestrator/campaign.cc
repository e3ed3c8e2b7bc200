// The campaign engine. One thread runs the planner loop and does all GPU work (one candidate at a
// time per GPU); compiles of a tuner batch run on a small pool of threads first, so the GPU
// evaluations that follow find their cubins in the compile cache.
#include "orchestrator/campaign.h"

#include "base/files.h"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include "agents/planner.h"
#include "agents/prompts.h"
#include "agents/reviewer.h"
#include "agents/tuner.h"
#include "agents/worker.h"
#include "problems/problems.h"
#include "evaluator/resources_json.h"
#include "evaluator/sanitizer.h"
#include "orchestrator/slurm.h"
#include "sandbox/sandbox.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

json ShapeJson(const Shape& s) {
  json j = json::object();
  for (const auto& [k, v] : s.symbols) j[k] = v;
  return j;
}

bool IsRanked(const EvaluationRecord& e) {
  return e.verdict == "ok" && e.time_us > 0;
}

KnobSetting KnobsFromJson(const std::string& text) {
  KnobSetting k;
  json j = json::parse(text, nullptr, false);
  if (!j.is_object())
    return k;
  for (const auto& [name, v] : j.items()) {
    if (v.is_number_integer())
      k[name] = v.get<int64_t>();
  }
  return k;
}

std::string Duration(double s) {
  if (s < 60)
    return fmt::format("{:.0f}s", s);
  if (s < 3600)
    return fmt::format("{}m{:02d}s", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  return fmt::format("{}h{:02d}m", static_cast<int>(s) / 3600, (static_cast<int>(s) / 60) % 60);
}

}  // namespace

// ---- Evaluating and recording -------------------------------------------------------------------

std::string ResourcesJson(const EvalResult& r) {
  return ResourcesToJson(r.compile.resources).dump();
}

Result<RecordedEvaluation> RecordEvaluation(Store& store, const EvalRequest& req,
                                            const EvalResult& r, const RecordContext& ctx,
                                            double gpu_seconds) {
  if (req.spec == nullptr)
    return Status::Error("recording an evaluation: no problem given");
  RecordedEvaluation out;
  out.result = r;
  out.gpu_seconds = gpu_seconds;
  KernelRecord k;
  k.problem = req.spec->name;
  k.hash = KernelHash(req.source, r.library_headers);
  k.source = req.source;
  k.library_headers = r.library_headers;
  k.origin = ctx.origin;
  k.parent_id = ctx.parent_kernel_id;
  k.campaign_id = ctx.campaign_id;
  k.agent = ctx.agent;
  WS_ASSIGN_OR_RETURN(out.kernel_id, store.PutKernel(k));

  EvaluationRecord e;
  e.kernel_id = out.kernel_id;
  e.problem = req.spec->name;
  e.params_json = json(req.params).dump();
  // A setting rejected before its knobs resolved still records the knobs it asked for, so the
  // tuner does not propose it again.
  e.knobs_json = json(r.knobs.empty() ? req.knobs : r.knobs).dump();
  if (r.device) {
    e.gpu = r.device->name;
    e.driver = r.device->driver;
  }
  e.arch = std::string(ArchName(req.arch));
  e.verdict = std::string(VerdictName(r.verdict));
  e.message = r.message;
  e.resources_json = ResourcesJson(r);
  // Only a run that passed the hidden shapes too, timed by the standard protocol on fresh
  // inputs, may be ranked.
  out.ranked = r.verdict == Verdict::kOk && req.include_hidden && req.include_bench &&
               req.bench_where.empty() && !req.input_seed && req.timing_iterations == 0 &&
               r.geomean_us > 0;
  e.time_us = out.ranked ? r.geomean_us : 0;
  e.sol_fraction = out.ranked ? r.sol_fraction : 0;
  for (const auto& c : r.cases) {
    if (!c.timing)
      continue;
    e.timings.push_back({ShapeJson(c.shape).dump(), c.kind, c.timing->median_us, c.timing->min_us,
                         c.timing->p90_us, c.timing->stdev_us, c.timing->iterations, c.sol_us});
  }
  e.campaign_id = ctx.campaign_id;
  e.attempt_id = ctx.attempt_id;
  e.agent = ctx.agent;
  e.purpose = ctx.purpose;
  e.gpu_seconds = gpu_seconds;
  e.sandbox_json = json(r.sandbox_layers).dump();
  e.deep_json = json(r.deep).dump();
  e.job_id = ctx.job_id;
  e.node = ctx.node;
  e.gpu_index = ctx.gpu_index;
  bool inserted = false;
  WS_ASSIGN_OR_RETURN(out.evaluation_id, store.AddEvaluation(e, &inserted));
  out.duplicate = !inserted;
  return out;
}

Result<RecordedEvaluation> EvaluateAndRecord(Store& store, const EvalRequest& req,
                                             const EvaluatorOptions& opts, const RecordContext& ctx,
                                             const EvalFn& eval) {
  const auto t0 = Clock::now();
  WS_ASSIGN_OR_RETURN(EvalResult r, eval ? eval(req, opts) : Evaluate(req, opts));
  const double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return RecordEvaluation(store, req, r, ctx, r.ran_on_gpu ? seconds : 0);
}

Result<std::optional<DeviceCeilings>> CeilingsFor(Store& store, const DeviceInfo& device,
                                                  const EvaluatorOptions& opts) {
  WS_ASSIGN_OR_RETURN(auto stored, store.GetCeilings(device.name));
  if (!stored) {
    std::fprintf(stderr, "warpsmith: no measured ceilings for %s yet; probing the device once\n",
                 device.name.c_str());
    WS_ASSIGN_OR_RETURN(DeviceCeilings c, MeasureCeilings(opts));
    CeilingsRecord rec{c.gpu, c.copy_bytes_per_s, c.bf16_flops_per_s, c.fp8_flops_per_s, ""};
    WS_RETURN_IF_ERROR(store.PutCeilings(rec));
    WS_ASSIGN_OR_RETURN(stored, store.GetCeilings(c.gpu));
    if (!stored)
      return Status::Error("ceilings for {} were not stored", c.gpu);
  }
  DeviceCeilings c;
  c.gpu = stored->gpu;
  c.copy_bytes_per_s = stored->copy_bytes_per_s;
  c.bf16_flops_per_s = stored->bf16_flops_per_s;
  c.fp8_flops_per_s = stored->fp8_flops_per_s;
  c.measured_at = stored->measured_at;
  return std::optional<DeviceCeilings>(c);
}

// ---- Configuration ------------------------------------------------------------------------------

namespace {

Result<double> ParseNumber(std::string_view key, std::string_view text, bool duration) {
  std::string t(text);
  double scale = 1;
  if (duration && !t.empty()) {
    switch (t.back()) {
      case 's':
        t.pop_back();
        break;
      case 'm':
        scale = 60;
        t.pop_back();
        break;
      case 'h':
        scale = 3600;
        t.pop_back();
        break;
      default:
        break;
    }
  }
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end == nullptr || *end != '\0' || !std::isfinite(v) || v < 0) {
    return Status::Error("budget {}: '{}' is not a non-negative number{}", key, text,
                         duration ? " (with an optional s, m or h)" : "");
  }
  return v * scale;
}

}  // namespace

Result<Budget> ParseBudget(std::string_view text) {
  Budget b;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? text.size() - pos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty())
      continue;
    size_t eq = item.find('=');
    if (eq == std::string_view::npos || eq == 0)
      return Status::Error("budget: expected KEY=VALUE, got '{}'", item);
    std::string key(item.substr(0, eq));
    std::string_view value = item.substr(eq + 1);
    if (key == "evaluations" || key == "evals") {
      WS_ASSIGN_OR_RETURN(double v, ParseNumber(key, value, false));
      b.evaluations = static_cast<int64_t>(v);
    } else if (key == "tokens") {
      WS_ASSIGN_OR_RETURN(double v, ParseNumber(key, value, false));
      b.tokens = static_cast<int64_t>(v);
    } else if (key == "dollars" || key == "usd") {
      WS_ASSIGN_OR_RETURN(b.dollars, ParseNumber(key, value, false));
    } else if (key == "gpu_seconds" || key == "gpu") {
      WS_ASSIGN_OR_RETURN(b.gpu_seconds, ParseNumber(key, value, true));
    } else if (key == "wall_seconds" || key == "wall" || key == "wall_time") {
      WS_ASSIGN_OR_RETURN(b.wall_seconds, ParseNumber(key, value, true));
    } else {
      return Status::Error(
          "budget: unknown key '{}' (known: evaluations, tokens, dollars, "
          "gpu_seconds, wall_seconds)",
          key);
    }
  }
  return b;
}

std::string BudgetExhausted(const Budget& b, const CampaignSpend& s) {
  if (b.evaluations && s.evaluations >= *b.evaluations)
    return fmt::format("evaluations {}/{}", s.evaluations, *b.evaluations);
  if (b.tokens && s.tokens >= *b.tokens)
    return fmt::format("tokens {}/{}", s.tokens, *b.tokens);
  if (b.dollars && s.dollars >= *b.dollars)
    return fmt::format("dollars {:.2f}/{:.2f}", s.dollars, *b.dollars);
  if (b.gpu_seconds && s.gpu_seconds >= *b.gpu_seconds)
    return fmt::format("GPU time {:.0f}/{:.0f} s", s.gpu_seconds, *b.gpu_seconds);
  if (b.wall_seconds && s.wall_seconds >= *b.wall_seconds)
    return fmt::format("wall time {}/{}", Duration(s.wall_seconds), Duration(*b.wall_seconds));
  return "";
}

Result<AgentSpec> ParseAgent(std::string_view text) {
  AgentSpec a;
  size_t colon = text.find(':');
  a.provider = std::string(text.substr(0, colon));
  if (colon != std::string_view::npos)
    a.model = std::string(text.substr(colon + 1));
  if (a.provider == "tuner") {
    a.model.clear();
    return a;
  }
  if (a.provider != "openai" && a.provider != "anthropic")
    return Status::Error("--agent '{}': the provider must be tuner, openai or anthropic", text);
  if (a.model.empty())
    return Status::Error("--agent '{}': give the model as PROVIDER:MODEL", text);
  return a;
}

Result<std::pair<std::string, Prices>> ParseAgentPrice(std::string_view text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0) {
    return Status::Error("--price '{}': expected AGENT=IN,OUT[,CACHE_READ[,CACHE_WRITE]]", text);
  }
  WS_ASSIGN_OR_RETURN(AgentSpec agent, ParseAgent(text.substr(0, eq)));
  if (agent.is_tuner())
    return Status::Error("--price '{}': the tuner spends no tokens", text);
  auto prices = ParsePrices(text.substr(eq + 1));
  if (!prices.ok())
    return prices.status().Context(fmt::format("--price {}", agent.name()));
  return std::make_pair(agent.name(), *prices);
}

namespace {

// Every price names an agent of the campaign, and a dollars budget knows every LLM agent's
// price: else it could never run out.
Status CheckPrices(const CampaignConfig& c) {
  for (const auto& [name, p] : c.prices) {
    const bool listed = std::any_of(c.agents.begin(), c.agents.end(),
                                    [&](const AgentSpec& a) { return a.name() == name; });
    if (!listed)
      return Status::Error("--price {}: not an agent of this campaign (--agent)", name);
  }
  if (!c.budget.dollars)
    return Status::Ok();
  for (const AgentSpec& a : c.agents) {
    if (!a.is_tuner() && c.prices.count(a.name()) == 0) {
      return Status::Error(
          "budget dollars={}: the price of {} is unknown, so its spend would count as $0; give "
          "it as --price {}=IN,OUT[,CACHE_READ[,CACHE_WRITE]] (USD per million tokens)",
          *c.budget.dollars, a.name(), a.name());
    }
  }
  return Status::Ok();
}

json BudgetJson(const Budget& b) {
  json j = json::object();
  if (b.evaluations)
    j["evaluations"] = *b.evaluations;
  if (b.tokens)
    j["tokens"] = *b.tokens;
  if (b.dollars)
    j["dollars"] = *b.dollars;
  if (b.gpu_seconds)
    j["gpu_seconds"] = *b.gpu_seconds;
  if (b.wall_seconds)
    j["wall_seconds"] = *b.wall_seconds;
  return j;
}

json SpendJson(const CampaignSpend& s) {
  return {{"evaluations", s.evaluations},
          {"tokens", s.tokens},
          {"dollars", s.dollars},
          {"gpu_seconds", s.gpu_seconds},
          {"wall_seconds", s.wall_seconds}};
}

}  // namespace

std::string CampaignConfigJson(const CampaignConfig& c) {
  json agents = json::array();
  for (const auto& a : c.agents) agents.push_back(a.name());
  json prices = json::object();
  for (const auto& [name, p] : c.prices) {
    prices[name] = {p.input_per_mtok, p.output_per_mtok, p.cached_input_per_mtok,
                    p.cache_write_per_mtok};
  }
  return json{{"problems", c.problems},
              {"agents", agents},
              {"base_url", c.base_url},
              {"prices", prices},
              {"budget", BudgetJson(c.budget)},
              {"compile_only", c.compile_only},
              {"arch", c.arch},
              {"params", c.params},
              {"seed", c.seed},
              {"tuner_batch", c.tuner_batch},
              {"compile_threads", c.compile_threads},
              {"max_turns", c.max_turns},
              {"context_tokens", c.context_tokens},
              {"max_output_tokens", c.max_output_tokens},
              {"rng_seed", c.rng_seed},
              {"deep_winners", c.deep_winners},
              {"confirm_runs", c.confirm_runs},
              {"executor", c.executor},
              {"gpus", c.gpus},
              {"slurm_partition", c.slurm_partition},
              {"slurm_account", c.slurm_account},
              {"slurm_time", c.slurm_time},
              {"slurm_shared_dir", c.slurm_shared_dir},
              {"max_tries", c.max_tries}}
      .dump();
}

Result<CampaignConfig> ParseCampaignConfig(const std::string& text) {
  try {
    json j = json::parse(text);
    CampaignConfig c;
    c.problems = j.value("problems", "*");
    for (const auto& a : j.value("agents", json::array())) {
      WS_ASSIGN_OR_RETURN(AgentSpec spec, ParseAgent(a.get<std::string>()));
      c.agents.push_back(spec);
    }
    c.base_url = j.value("base_url", "");
    const json prices = j.value("prices", json::object());
    for (const auto& [name, p] : prices.items()) {
      const auto v = p.get<std::vector<double>>();
      if (v.size() != 4)
        return Status::Error("campaign config: prices of {}: 4 numbers expected", name);
      c.prices[name] = Prices{v[0], v[1], v[2], v[3]};
    }
    const json b = j.value("budget", json::object());
    if (b.contains("evaluations"))
      c.budget.evaluations = b["evaluations"].get<int64_t>();
    if (b.contains("tokens"))
      c.budget.tokens = b["tokens"].get<int64_t>();
    if (b.contains("dollars"))
      c.budget.dollars = b["dollars"].get<double>();
    if (b.contains("gpu_seconds"))
      c.budget.gpu_seconds = b["gpu_seconds"].get<double>();
    if (b.contains("wall_seconds"))
      c.budget.wall_seconds = b["wall_seconds"].get<double>();
    c.compile_only = j.value("compile_only", false);
    c.arch = j.value("arch", "");
    c.params = j.value("params", std::map<std::string, std::string>{});
    c.seed = j.value("seed", "hand");
    c.tuner_batch = j.value("tuner_batch", 8);
    c.compile_threads = j.value("compile_threads", 0);
    c.max_turns = j.value("max_turns", 16);
    c.context_tokens = j.value("context_tokens", int64_t{128000});
    c.max_output_tokens = j.value("max_output_tokens", 8192);
    if (c.max_output_tokens < 256) {
      return Status::Error("campaign config: max_output_tokens {} is under 256",
                           c.max_output_tokens);
    }
    c.rng_seed = j.value("rng_seed", uint64_t{1});
    c.deep_winners = j.value("deep_winners", false);
    c.confirm_runs = j.value("confirm_runs", 2);
    if (c.confirm_runs < 0 || c.confirm_runs > 9)
      return Status::Error("campaign config: confirm_runs {} is not in [0, 9]", c.confirm_runs);
    c.executor = j.value("executor", "local");
    if (c.executor != "local" && c.executor != "slurm")
      return Status::Error("campaign config: executor '{}' is neither local nor slurm", c.executor);
    c.gpus = j.value("gpus", "");
    c.slurm_partition = j.value("slurm_partition", "");
    c.slurm_account = j.value("slurm_account", "");
    c.slurm_time = j.value("slurm_time", "");
    c.slurm_shared_dir = j.value("slurm_shared_dir", "");
    c.max_tries = j.value("max_tries", 3);
    return c;
  } catch (const json::exception& e) {
    return Status::Error("campaign config: {}", e.what());
  }
}

// ---- Per-problem progress, from the store -------------------------------------------------------

namespace {

struct ProblemView {
  std::string problem;
  std::string status;
  ProblemProgress progress;
  int64_t evaluations = 0;
  double gpu_seconds = 0;
  int64_t tokens = 0;  // the models' (workers and reviews), and what they cost
  double dollars = 0;
  std::optional<int64_t> best_evaluation_id;
  std::optional<int64_t> best_kernel_id;
  std::string best_agent;
  std::string best_knobs;
  bool best_flagged = false;
  std::string best_sandbox = "{}";  // the best evaluation's sandbox layers and deep results
  std::string best_deep = "{}";
};

constexpr size_t kRecentAttempts = 4;
constexpr double kImprovement = 1e-3;  // a best must drop by 0.1% to count as progress

ProblemView ComputeView(const std::string& problem, const std::string& status,
                        const std::vector<AttemptRecord>& attempts,
                        const std::vector<EvaluationRecord>& evals) {
  ProblemView v;
  v.problem = problem;
  v.status = status;
  v.progress.problem = problem;
  v.progress.attempts = static_cast<int64_t>(attempts.size());
  v.evaluations = static_cast<int64_t>(evals.size());
  std::map<int64_t, double> attempt_best;  // attempt id -> its fastest ranked time
  // The best as the leaderboard ranks it: a kernel with its knobs at the median of its runs.
  std::map<std::tuple<int64_t, std::string, std::string, std::string>,
           std::vector<const EvaluationRecord*>>
      runs;
  for (const auto& e : evals) {
    v.gpu_seconds += e.gpu_seconds;
    if (!IsRanked(e))
      continue;
    runs[{e.kernel_id, e.knobs_json, e.params_json, e.gpu}].push_back(&e);
    // Progress is what an attempt found: a leader's confirmation runs are not.
    if (e.attempt_id && e.purpose != "confirm") {
      double& b = attempt_best[*e.attempt_id];
      if (b == 0 || e.time_us < b)
        b = e.time_us;
    }
  }
  for (auto& [key, rs] : runs) {
    std::stable_sort(rs.begin(), rs.end(), [](const EvaluationRecord* a,
                                              const EvaluationRecord* b) {
      return a->time_us < b->time_us || (a->time_us == b->time_us && a->id < b->id);
    });
    const EvaluationRecord& e = *rs[(rs.size() - 1) / 2];  // the lower middle
    const double median = (e.time_us + rs[rs.size() / 2]->time_us) / 2;
    const bool first = !v.best_evaluation_id;
    if (!first && (median > v.progress.best_time_us ||
                   (median == v.progress.best_time_us && e.id > *v.best_evaluation_id)))
      continue;
    v.progress.best_time_us = median;
    v.progress.best_sol_fraction = e.sol_fraction * e.time_us / median;
    v.best_evaluation_id = e.id;
    v.best_kernel_id = e.kernel_id;
    v.best_agent = e.agent;
    v.best_knobs = e.knobs_json;
    v.best_flagged = std::any_of(rs.begin(), rs.end(),
                                 [](const EvaluationRecord* r) { return r->flagged; });
    v.best_sandbox = e.sandbox_json;
    v.best_deep = e.deep_json;
  }
  // Walk the attempts in order: when did the best last improve, and by how much lately.
  double best = 0;
  int64_t last_improved = -1;
  std::vector<double> best_after;  // best time after each attempt
  for (size_t i = 0; i < attempts.size(); ++i) {
    auto it = attempt_best.find(attempts[i].id);
    if (it != attempt_best.end() && (best == 0 || it->second < best * (1 - kImprovement))) {
      best = it->second;
      last_improved = static_cast<int64_t>(i);
    } else if (it != attempt_best.end() && it->second < best) {
      best = it->second;
    }
    best_after.push_back(best);
  }
  v.progress.attempts_since_improvement = v.progress.attempts - (last_improved + 1);
  if (best_after.size() > kRecentAttempts) {
    double before = best_after[best_after.size() - 1 - kRecentAttempts];
    if (before > 0 && best > 0)
      v.progress.recent_gain = (before - best) / before;
  } else if (best > 0) {
    v.progress.recent_gain = 1;  // early: every problem deserves attempts
  }
  return v;
}

Result<std::vector<ProblemView>> ComputeViews(Store& store, int64_t campaign_id) {
  WS_ASSIGN_OR_RETURN(auto problems, store.CampaignProblems(campaign_id));
  WS_ASSIGN_OR_RETURN(auto token_spend, store.TokenSpendByProblem(campaign_id));
  std::vector<ProblemView> out;
  for (const auto& p : problems) {
    WS_ASSIGN_OR_RETURN(auto attempts, store.Attempts(campaign_id, p.problem));
    WS_ASSIGN_OR_RETURN(auto evals, store.CampaignEvaluations(campaign_id, p.problem));
    out.push_back(ComputeView(p.problem, p.status, attempts, evals));
    if (auto s = token_spend.find(p.problem); s != token_spend.end()) {
      out.back().tokens = s->second.tokens;
      out.back().dollars = s->second.dollars;
    }
  }
  return out;
}

// ---- The progress display -----------------------------------------------------------------------

class Display {
 public:
  Display(FILE* out, bool live) : out_(out), live_(live) {}

  void Show(int64_t campaign_id, const std::string& mode, const std::vector<ProblemView>& views,
            const CampaignSpend& spend, const Budget& budget, const std::string& event) {
    if (out_ == nullptr)
      return;
    if (!live_) {
      // One plain line per event, for logs and pipes.
      if (!event.empty())
        std::fprintf(out_, "campaign %lld: %s\n", static_cast<long long>(campaign_id),
                     event.c_str());
      std::fflush(out_);
      return;
    }
    std::string text = fmt::format("campaign {} · {}\n", campaign_id, mode);
    text += fmt::format("  {:<28} {:>11} {:>7} {:>9} {:>6} {:>8}  {}\n", "problem", "best us",
                        "of SOL", "attempts", "evals", "GPU s", "status");
    for (const auto& v : views) {
      text += fmt::format(
          "  {:<28} {:>11} {:>7} {:>9} {:>6} {:>8.1f}  {}\n", v.problem,
          v.progress.best_time_us > 0 ? fmt::format("{:.2f}", v.progress.best_time_us) : "-",
          v.progress.best_sol_fraction > 0 ? fmt::format("{:.3f}", v.progress.best_sol_fraction)
                                           : "-",
          v.progress.attempts, v.evaluations, v.gpu_seconds, v.status);
    }
    text += "  spend: " + SpendLine(spend, budget) + "\n";
    if (!event.empty())
      text += "  last: " + event.substr(0, 100) + "\n";
    // Redraw in place: up over the previous frame, clear to the end of the screen.
    if (lines_ > 0)
      std::fprintf(out_, "\x1b[%dA\x1b[J", lines_);
    std::fputs(text.c_str(), out_);
    std::fflush(out_);
    lines_ = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  }

  static std::string SpendLine(const CampaignSpend& s, const Budget& b) {
    auto of = [](auto v, const auto& cap, const std::string& f) {
      std::string t = fmt::format(fmt::runtime(f), v);
      if (cap)
        t += fmt::format(fmt::runtime("/" + f), *cap);
      return t;
    };
    return fmt::format("evaluations {}, tokens {}, ${}, GPU {} s, wall {}{}",
                       of(s.evaluations, b.evaluations, "{}"), of(s.tokens, b.tokens, "{}"),
                       of(s.dollars, b.dollars, "{:.2f}"),
                       of(s.gpu_seconds, b.gpu_seconds, "{:.0f}"), Duration(s.wall_seconds),
                       b.wall_seconds ? "/" + Duration(*b.wall_seconds) : "");
  }

 private:
  FILE* out_;
  bool live_;
  int lines_ = 0;
};

// ---- The engine ---------------------------------------------------------------------------------

struct ProblemRun {
  ProblemSpec spec;
  std::map<std::string, std::string> params;
  int64_t seed_kernel_id = 0;
  bool tuner_exhausted = false;
};

class Engine;

// The worker's tools, over the evaluator and the store.
class CampaignTools : public WorkerTools {
 public:
  CampaignTools(Engine& engine, ProblemRun& problem, int64_t attempt_id, const AgentSpec& agent,
                int64_t parent_kernel_id)
      : engine_(engine),
        problem_(problem),
        attempt_id_(attempt_id),
        agent_(agent),
        parent_kernel_id_(parent_kernel_id) {}

  Result<ToolFeedback> Run(Action action, const std::string& source,
                           const KnobSetting& knobs) override;
  void RecordTurn(const Usage& usage, const std::string& stop_reason) override;
  bool ShouldStop() override;

  std::optional<int64_t> best_ranked_evaluation() const { return best_ranked_; }

 private:
  Engine& engine_;
  ProblemRun& problem_;
  int64_t attempt_id_;
  AgentSpec agent_;
  int64_t parent_kernel_id_;
  std::optional<int64_t> best_ranked_;
  double best_time_ = 0;
};

class Engine {
 public:
  Engine(int64_t id, CampaignConfig config, CampaignEnv& env, std::unique_ptr<Store> store)
      : id_(id), config_(std::move(config)), env_(env), store_(std::move(store)) {}

  Status Run();

  // For the tools.
  Store& store() { return *store_; }
  int64_t id() const { return id_; }
  EvalRequest BaseRequest(const ProblemRun& p) const;
  Result<RecordedEvaluation> Evaluate(const EvalRequest& req, const RecordContext& ctx);
  // --deep-winners: whether an ok, timed result would take its leaderboard group's first place.
  Result<bool> WouldWin(const EvalRequest& req, const EvalResult& r);
  Result<RecordedEvaluation> Record(const EvalRequest& req, const EvalResult& r,
                                    const RecordContext& ctx, double gpu_seconds);
  std::string StopReason();  // empty while the campaign may go on
  bool compile_only() const { return compile_only_; }

 private:
  Status Prepare();
  Result<int64_t> SeedKernel(const ProblemSpec& spec,
                             const std::map<std::string, std::string>& params);
  Status FlushWall();
  Result<CampaignSpend> Spent();
  void Show(const std::string& event);
  Result<std::string> TunerAttempt(ProblemRun& p);
  Result<std::string> WorkerAttempt(ProblemRun& p, const AgentSpec& agent);
  Result<std::vector<ParentCandidate>> Parents(const ProblemRun& p);
  // After attempt `attempt_id`, with the problem's attempts and evaluations in this campaign.
  Status Review(ProblemRun& p, const ProblemView& before, const AgentSpec& agent,
                int64_t attempt_id, const std::vector<AttemptRecord>& attempts,
                const std::vector<EvaluationRecord>& evals);
  // --confirm-runs: times the leader of p's group again until it has config_.confirm_runs runs.
  Status ConfirmLeader(ProblemRun& p, int64_t attempt_id,
                       const std::vector<EvaluationRecord>& evals);
  Status MakeExecutor();
  // A request as a job of this campaign.
  JobSpec Job(const EvalRequest& req, JobKind kind, const std::string& id) const;
  // Runs jobs through the executor; each job's first result goes to `take` once. With
  // `stoppable`, a stop (budget, stop request, Ctrl-C) cancels what is left.
  Result<BatchOutcome> RunJobs(const std::vector<JobSpec>& jobs, bool stoppable,
                               const std::function<Status(size_t, const JobResult&)>& take);
  // Records a job's result with its job id (a result already stored is not counted again).
  Result<RecordedEvaluation> RecordJob(const EvalRequest& req, const JobResult& r,
                                       RecordContext ctx);
  void NoteJob(const JobSpec& spec, const JobStatus& st, std::optional<int64_t> evaluation_id);
  bool MayNeedDeep(const EvalRequest& req, const JobResult& r) const;
  // --deep-winners: a would-be winner's deep evaluation (the one to record), else `r` itself;
  // empty when the campaign stopped meanwhile.
  Result<std::optional<JobResult>> DeepIfWinner(const EvalRequest& req, const JobResult& r);

  int64_t id_;
  CampaignConfig config_;
  CampaignEnv& env_;
  std::unique_ptr<Store> store_;
  std::vector<ProblemRun> problems_;
  std::map<std::string, std::unique_ptr<LlmClient>> clients_;
  std::optional<Arch> arch_;
  bool compile_only_ = false;
  std::string mode_;
  std::unique_ptr<Display> display_;
  Clock::time_point wall_mark_ = Clock::now();
  std::mt19937_64 rng_;
  std::unique_ptr<Executor> owned_executor_;
  Executor* executor_ = nullptr;
  std::vector<DeviceCeilings> all_ceilings_;  // for jobs on other hosts
  int64_t job_seq_ = 0;
  Clock::time_point stop_checked_;
  std::string stop_cached_;
};

EvalRequest Engine::BaseRequest(const ProblemRun& p) const {
  EvalRequest req;
  req.spec = &p.spec;
  req.arch = *arch_;
  req.params = p.params;
  req.compile_only = compile_only_;
  req.include_hidden = true;
  req.time_bench = true;
  req.device = env_.device;
  req.ceilings = env_.ceilings;
  return req;
}

Result<bool> Engine::WouldWin(const EvalRequest& req, const EvalResult& r) {
  WS_ASSIGN_OR_RETURN(std::vector<LeaderboardEntry> board, store_->Leaderboard(req.spec->name));
  const std::string params = json(req.params).dump();
  const std::string gpu = r.device ? r.device->name : "";
  for (const auto& e : board) {
    if (e.params_json == params && e.gpu == gpu)
      return r.geomean_us < e.time_us;
  }
  return true;
}

Result<RecordedEvaluation> Engine::Evaluate(const EvalRequest& req, const RecordContext& ctx) {
  const JobSpec job =
      Job(req, req.compile_only ? JobKind::kCompile : JobKind::kGpu,
          fmt::format("c{}-a{}-e{}", id_, ctx.attempt_id.value_or(0), ++job_seq_));
  std::optional<JobResult> got;
  WS_ASSIGN_OR_RETURN(BatchOutcome o, RunJobs({job}, false, [&](size_t, const JobResult& r) {
                        got = r;
                        return Status::Ok();
                      }));
  if (!got)
    return Status::Error("{}: the evaluation gave no result ({})", req.spec->name, o.stopped);
  if (MayNeedDeep(req, *got)) {
    WS_ASSIGN_OR_RETURN(got, DeepIfWinner(req, *got));
    if (!got)
      return Status::Error("{}: stopped during a deep evaluation", req.spec->name);
  }
  return RecordJob(req, *got, ctx);
}

JobSpec Engine::Job(const EvalRequest& req, JobKind kind, const std::string& id) const {
  JobSpec j = JobFromRequest(req, kind, env_.problems_dir);
  j.id = id;
  for (const auto& c : all_ceilings_) {
    if (std::none_of(j.ceilings.begin(), j.ceilings.end(),
                     [&](const DeviceCeilings& x) { return x.gpu == c.gpu; }))
      j.ceilings.push_back(c);
  }
  return j;
}

Result<BatchOutcome> Engine::RunJobs(const std::vector<JobSpec>& jobs, bool stoppable,
                                     const std::function<Status(size_t, const JobResult&)>& take) {
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < jobs.size(); ++i) index[jobs[i].id] = i;
  BatchOptions bo;
  bo.max_tries = std::max(1, config_.max_tries);
  bo.poll_seconds = executor_->name() == "slurm" ? 0.5 : 0.05;
  bo.on_state = [this](const JobSpec& spec, const JobStatus& st) {
    NoteJob(spec, st, std::nullopt);
  };
  if (stoppable) {
    bo.stop = [this]() {
      // The store is read at most twice a second while jobs run.
      const auto now = Clock::now();
      if (now - stop_checked_ > std::chrono::milliseconds(500) ||
          (env_.cancel != nullptr && env_.cancel->cancelled.load())) {
        stop_checked_ = now;
        stop_cached_ = StopReason();
      }
      return stop_cached_;
    };
  }
  return RunBatch(*executor_, jobs, bo, [&](const JobSpec& spec, const JobResult& r) {
    return take(index.at(spec.id), r);
  });
}

Result<RecordedEvaluation> Engine::RecordJob(const EvalRequest& req, const JobResult& r,
                                             RecordContext ctx) {
  ctx.job_id = r.job_id;
  ctx.node = r.node;
  if (r.gpu_index)
    ctx.gpu_index = *r.gpu_index;
  WS_ASSIGN_OR_RETURN(RecordedEvaluation rec,
                      Record(req, r.result, ctx, r.result.ran_on_gpu ? r.seconds : 0));
  JobSpec spec;
  spec.id = r.job_id;
  spec.kind = req.compile_only ? JobKind::kCompile : JobKind::kGpu;
  JobStatus st;
  st.job_id = r.job_id;
  st.try_number = r.try_number;
  st.state = JobState::kDone;
  st.node = r.node;
  st.gpu_index = r.gpu_index;
  NoteJob(spec, st, rec.evaluation_id);
  return rec;
}

void Engine::NoteJob(const JobSpec& spec, const JobStatus& st,
                     std::optional<int64_t> evaluation_id) {
  JobRecord j;
  j.id = spec.id;
  j.campaign_id = id_;
  j.kind = std::string(JobKindName(spec.kind));
  j.executor = executor_->name();
  j.state = std::string(JobStateName(st.state));
  j.tries = st.try_number;
  j.external_id = st.external_id;
  j.node = st.node;
  if (st.gpu_index)
    j.gpu_index = *st.gpu_index;
  j.message = st.message;
  j.evaluation_id = evaluation_id;
  if (Status s = store_->PutJob(j); !s.ok())
    std::fprintf(stderr, "warpsmith: recording job %s: %s\n", spec.id.c_str(),
                 s.message().c_str());
}

bool Engine::MayNeedDeep(const EvalRequest& req, const JobResult& r) const {
  return config_.deep_winners && !req.deep && !req.compile_only && req.include_hidden && r.ok &&
         r.result.verdict == Verdict::kOk && r.result.geomean_us > 0;
}

Result<std::optional<JobResult>> Engine::DeepIfWinner(const EvalRequest& req,
                                                      const JobResult& r) {
  WS_ASSIGN_OR_RETURN(bool winner, WouldWin(req, r.result));
  if (!winner)
    return std::optional<JobResult>(r);
  // A would-be winner is evaluated again in deep mode; only that evaluation is recorded.
  EvalRequest deep = req;
  deep.deep = true;
  std::optional<JobResult> got;
  WS_ASSIGN_OR_RETURN(BatchOutcome o,
                      RunJobs({Job(deep, JobKind::kGpu, r.job_id + "-deep")}, false,
                              [&](size_t, const JobResult& d) {
                                got = d;
                                return Status::Ok();
                              }));
  (void)o;
  if (!got)
    return std::optional<JobResult>();
  if (std::string why = DeepModeFailure(got->result); !why.empty()) {
    return Status::Error("{}: deep mode could not check a would-be winner ({}); "
                         "--deep-winners needs a working compute-sanitizer",
                         req.spec->name, why);
  }
  return got;
}

Result<RecordedEvaluation> Engine::Record(const EvalRequest& req, const EvalResult& r,
                                          const RecordContext& ctx, double gpu_seconds) {
  WS_ASSIGN_OR_RETURN(RecordedEvaluation rec, RecordEvaluation(*store_, req, r, ctx, gpu_seconds));
  WS_RETURN_IF_ERROR(FlushWall());
  return rec;
}

// Wall time is added to the store as it passes, so a killed run loses at most one step of it.
Status Engine::FlushWall() {
  const auto now = Clock::now();
  const double s = std::chrono::duration<double>(now - wall_mark_).count();
  wall_mark_ = now;
  return store_->AddCampaignWallSeconds(id_, s);
}

Result<CampaignSpend> Engine::Spent() {
  WS_RETURN_IF_ERROR(FlushWall());
  return store_->Spend(id_);
}

std::string Engine::StopReason() {
  if (env_.cancel != nullptr && env_.cancel->cancelled.load())
    return "stopped: interrupted";
  Result<CampaignRecord> c = store_->GetCampaign(id_);
  if (c.ok() && c->stop_requested)
    return "stopped: stop requested";
  Result<CampaignSpend> s = Spent();
  if (!s.ok())
    return "stopped: " + s.status().message();
  std::string spent = BudgetExhausted(config_.budget, *s);
  return spent.empty() ? "" : "budget spent: " + spent;
}

void Engine::Show(const std::string& event) {
  Result<std::vector<ProblemView>> views = ComputeViews(*store_, id_);
  Result<CampaignSpend> spend = Spent();
  if (views.ok() && spend.ok())
    display_->Show(id_, mode_, *views, *spend, config_.budget, event);
}

Result<int64_t> Engine::SeedKernel(const ProblemSpec& spec,
                                   const std::map<std::string, std::string>& params) {
  std::string path;
  if (config_.seed == "hand" || config_.seed == "starting") {
    std::string hand = env_.kernels_dir + "/" + spec.name + "/kernel.cu";
    path =
        config_.seed == "hand" && fs::exists(hand) ? hand : spec.dir + "/" + spec.starting_kernel;
  } else {
    path = config_.seed;
  }
  WS_ASSIGN_OR_RETURN(std::string source, ReadFile(path));
  KernelRecord k;
  k.problem = spec.name;
  // The identity its evaluations will record: the source with the library headers of today.
  k.library_headers = LibraryClosure(source, KernelLibraryDir(env_.eval_opts));
  k.hash = KernelHash(source, k.library_headers);
  k.source = source;
  k.origin = "seed:" + fs::path(path).lexically_normal().string();
  return store_->PutKernel(k);
}

Status Engine::Prepare() {
  rng_.seed(config_.rng_seed);
  WS_ASSIGN_OR_RETURN(int64_t interrupted, store_->InterruptRunningAttempts(id_));
  // Jobs a killed orchestrator left queued or running: their results are never collected (the
  // resumed campaign starts new attempts), so they are marked lost and Slurm's are cancelled.
  {
    WS_ASSIGN_OR_RETURN(std::vector<JobRecord> jobs, store_->Jobs(id_));
    std::vector<std::string> stale_slurm;
    for (JobRecord j : jobs) {
      if (j.state != "queued" && j.state != "running")
        continue;
      if (j.executor == "slurm" && !j.external_id.empty())
        stale_slurm.push_back(j.external_id);
      j.state = "lost";
      j.message = "the orchestrator stopped before its result came";
      WS_RETURN_IF_ERROR(store_->PutJob(j));
    }
    if (Status s = ScancelJobs(stale_slurm); !s.ok())
      std::fprintf(stderr, "warpsmith: cancelling jobs left from before: %s\n",
                   s.message().c_str());
  }
  // Only the problems the glob names are loaded: a broken spec elsewhere in the set must not stop
  // this campaign (one the glob names does, with its error).
  const auto named = [&](std::string_view name) {
    return ::fnmatch(config_.problems.c_str(), std::string(name).c_str(), 0) == 0;
  };
  WS_ASSIGN_OR_RETURN(std::vector<ProblemSpec> all, LoadProblemSet(env_.problems_dir, named));
  WS_ASSIGN_OR_RETURN(auto stored, store_->CampaignProblems(id_));
  std::map<std::string, CampaignProblemRecord> known;
  for (auto& p : stored) known[p.problem] = p;
  for (auto& spec : all) {
    // Parameters apply where the problem has them.
    std::map<std::string, std::string> sets;
    for (const auto& [k, v] : config_.params) {
      if (spec.FindParam(k) != nullptr)
        sets[k] = v;
    }
    WS_ASSIGN_OR_RETURN(auto params, ResolveParams(spec, sets));
    ProblemRun run;
    auto it = known.find(spec.name);
    if (it != known.end() && it->second.seed_kernel_id) {
      run.seed_kernel_id = *it->second.seed_kernel_id;
    } else {
      WS_ASSIGN_OR_RETURN(run.seed_kernel_id, SeedKernel(spec, params));
      WS_RETURN_IF_ERROR(store_->PutCampaignProblem(
          {id_, spec.name, json(params).dump(), run.seed_kernel_id, "active"}));
    }
    run.spec = std::move(spec);
    run.params = std::move(params);
    problems_.push_back(std::move(run));
  }
  if (problems_.empty())
    return Status::Error("no problem matches '{}' in {}", config_.problems, env_.problems_dir);

  // The device: none in compile-only campaigns; without one, the campaign compiles only.
  compile_only_ = config_.compile_only;
  const bool slurm = config_.executor == "slurm" && env_.executor == nullptr;
  std::string why;
  if (slurm && !compile_only_) {
    // The GPUs are the cluster's: each job probes its own; the ceilings the store knows travel
    // with the jobs.
    WS_ASSIGN_OR_RETURN(auto latest, store_->LatestCeilings());
    if (latest) {
      all_ceilings_.push_back({latest->gpu, latest->copy_bytes_per_s, latest->bf16_flops_per_s,
                               latest->fp8_flops_per_s, latest->measured_at});
    }
  } else if (!compile_only_ && env_.probe_device) {
    WS_ASSIGN_OR_RETURN(env_.device, ProbeDevice(env_.eval_opts, &why));
    if (env_.device && !env_.ceilings) {
      WS_ASSIGN_OR_RETURN(env_.ceilings, CeilingsFor(*store_, *env_.device, env_.eval_opts));
    }
  }
  if (!compile_only_ && !env_.device && !slurm) {
    compile_only_ = true;
    mode_ = fmt::format("compile-only: no GPU here ({})", why.empty() ? "none given" : why);
  }
  if (config_.deep_winners && !compile_only_ && !env_.evaluate &&
      env_.eval_opts.compute_sanitizer.empty()) {
    Result<std::string> cs = FindComputeSanitizer();
    if (!cs.ok())
      return Status::Error("--deep-winners: {}", cs.status().message());
    env_.eval_opts.compute_sanitizer = *cs;
  }
  std::string arch = config_.arch;
  if (arch.empty())
    arch = env_.device && !compile_only_ ? env_.device->arch : "sm_90a";
  WS_ASSIGN_OR_RETURN(arch_, ParseArch(arch));
  std::string agents;
  for (const auto& a : config_.agents) agents += (agents.empty() ? "" : ", ") + a.name();
  if (mode_.empty()) {
    mode_ = compile_only_ ? "compile-only"
            : slurm       ? std::string("on the cluster's GPUs")
                          : fmt::format("on {}", env_.device->name);
  }
  WS_RETURN_IF_ERROR(MakeExecutor());
  mode_ += " · " + executor_->Describe();
  mode_ = fmt::format("{} · {} · {}{}", agents, arch, mode_,
                      config_.deep_winners && !compile_only_ ? " · deep winners" : "");

  // Clients for the LLM agents.
  for (const auto& a : config_.agents) {
    if (a.is_tuner() || clients_.count(a.name()))
      continue;
    LlmConfig cfg;
    cfg.provider = a.provider;
    cfg.model = a.model;
    cfg.base_url = config_.base_url;
    if (auto p = config_.prices.find(a.name()); p != config_.prices.end())
      cfg.prices = p->second;
    Result<std::unique_ptr<LlmClient>> c =
        env_.make_client ? env_.make_client(a, cfg) : MakeLlmClient(cfg);
    if (!c.ok())
      return c.status().Context(fmt::format("agent {}", a.name()));
    clients_[a.name()] = std::move(*c);
  }
  const bool live = env_.live ? *env_.live : (env_.out != nullptr && ::isatty(::fileno(env_.out)));
  display_ = std::make_unique<Display>(env_.out, live);
  if (interrupted > 0)
    Show(fmt::format("resumed; {} attempt(s) cut short by the last stop marked interrupted",
                     interrupted));
  return Status::Ok();
}

Status Engine::MakeExecutor() {
  if (env_.executor != nullptr) {
    executor_ = env_.executor;
    return Status::Ok();
  }
  // Jobs in other processes or on other hosts find the problems by absolute path.
  std::error_code ec;
  env_.problems_dir = fs::absolute(env_.problems_dir, ec).lexically_normal().string();
  if (config_.executor == "slurm") {
    SlurmOptions so;
    so.partition = config_.slurm_partition;
    so.account = config_.slurm_account;
    so.time = config_.slurm_time;
    so.shared_dir = config_.slurm_shared_dir.empty()
                        ? (fs::absolute(env_.workspace, ec) / "slurm").lexically_normal().string()
                        : config_.slurm_shared_dir;
    so.job_binary = env_.job_binary;
    so.lost_grace_s = env_.slurm_lost_grace_s;
    owned_executor_ = MakeSlurmExecutor(so);
  } else if (config_.executor == "local") {
    LocalExecutorOptions lo;
    lo.compile_threads = config_.compile_threads;
    lo.eval_opts = env_.eval_opts;
    lo.evaluate = env_.evaluate;
    lo.job_binary = env_.job_binary;
    if (!compile_only_) {
      // --gpus, else CUDA_VISIBLE_DEVICES, else the one GPU this process sees.
      const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
      if (!config_.gpus.empty()) {
        lo.gpus = ParseGpuList(config_.gpus);
        lo.pin_processes = true;
      } else if (visible != nullptr && !ParseGpuList(visible).empty()) {
        lo.gpus = ParseGpuList(visible);
        lo.pin_processes = lo.gpus.size() > 1;
      } else {
        lo.gpus = {"0"};
      }
      if (lo.gpus.empty())
        return Status::Error("--gpus '{}' names no GPU", config_.gpus);
    }
    owned_executor_ = MakeLocalExecutor(lo);
  } else {
    return Status::Error("unknown executor '{}' (local or slurm)", config_.executor);
  }
  executor_ = owned_executor_.get();
  return Status::Ok();
}

Result<std::vector<ParentCandidate>> Engine::Parents(const ProblemRun& p) {
  WS_ASSIGN_OR_RETURN(auto evals, store_->CampaignEvaluations(id_, p.spec.name));
  std::map<int64_t, double> best;  // kernel -> fastest ranked time (0: accepted, not timed)
  best[p.seed_kernel_id] = 0;
  for (const auto& e : evals) {
    const bool accepted = e.purpose == "submit" && (e.verdict == "ok" || e.verdict == "not_run");
    if (!IsRanked(e) && !accepted)
      continue;
    double& b = best[e.kernel_id];
    if (IsRanked(e) && (b == 0 || e.time_us < b))
      b = e.time_us;
  }
  std::vector<ParentCandidate> out;
  for (const auto& [kid, t] : best) {
    // The lineage is the root of the parent chain.
    int64_t root = kid;
    for (int depth = 0; depth < 64; ++depth) {
      Result<KernelRecord> k = store_->GetKernel(root);
      if (!k.ok() || !k->parent_id)
        break;
      root = *k->parent_id;
    }
    out.push_back({kid, t, root});
  }
  return out;
}

Result<std::string> Engine::TunerAttempt(ProblemRun& p) {
  WS_ASSIGN_OR_RETURN(auto candidates, Parents(p));
  WS_ASSIGN_OR_RETURN(auto evals, store_->CampaignEvaluations(id_, p.spec.name));
  // The tuner works on the fastest kernel whose knobs it has not exhausted.
  std::vector<int64_t> order = PickParents(candidates, static_cast<int>(candidates.size()), 0);
  for (int64_t parent_id : order) {
    WS_ASSIGN_OR_RETURN(KernelRecord parent, store_->GetKernel(parent_id));
    Result<Plan> plan = ParsePlan(parent.source);
    if (!plan.ok())
      continue;
    std::vector<KnobObservation> history;
    for (const auto& e : evals) {
      if (e.kernel_id == parent_id && e.agent == "tuner" && e.purpose == "tune")
        history.push_back(
            {KnobsFromJson(e.knobs_json), e.verdict == "ok" || e.verdict == "not_run", e.time_us});
    }
    int batch = std::max(1, config_.tuner_batch);
    WS_ASSIGN_OR_RETURN(CampaignSpend spent, Spent());
    if (config_.budget.evaluations)
      batch = static_cast<int>(
          std::min<int64_t>(batch, *config_.budget.evaluations - spent.evaluations));
    if (batch <= 0)
      return std::string("no evaluations left");
    TunerOptions topts;
    topts.seed = config_.rng_seed + static_cast<uint64_t>(parent_id);
    // Knobs a parameter setting ignores (knob_scope) stay at their defaults.
    Result<KnobSpace> space = ScopedKnobs(*plan, p.spec, p.params);
    if (!space.ok())
      continue;
    std::vector<KnobSetting> settings = ProposeKnobs(*space, history, batch, topts);
    if (settings.empty())
      continue;

    AttemptRecord a;
    a.campaign_id = id_;
    a.problem = p.spec.name;
    a.agent = "tuner";
    a.parent_kernel_id = parent_id;
    WS_ASSIGN_OR_RETURN(int64_t attempt_id, store_->StartAttempt(a));
    RecordContext ctx;
    ctx.origin = parent.origin;
    ctx.campaign_id = id_;
    ctx.attempt_id = attempt_id;
    ctx.agent = "tuner";
    ctx.purpose = "tune";

    std::vector<EvalRequest> reqs;
    for (const auto& s : settings) {
      EvalRequest r = BaseRequest(p);
      r.source = parent.source;
      r.source_name = fmt::format("kernel {} ({})", parent_id, KnobText(s));
      r.knobs = s;
      reqs.push_back(std::move(r));
    }
    // Compile jobs in parallel; then GPU jobs, one per GPU at a time, for what compiled.
    int done = 0, ok = 0;
    std::optional<int64_t> best_eval;
    double best_time = 0;
    auto take = [&](const EvalRequest& req, const JobResult& r) -> Status {
      WS_ASSIGN_OR_RETURN(RecordedEvaluation rec, RecordJob(req, r, ctx));
      if (rec.duplicate)
        return Status::Ok();
      ++done;
      const Verdict v = rec.result.verdict;
      ok += v == Verdict::kOk || v == Verdict::kNotRun;
      if (rec.ranked && (best_time == 0 || rec.result.geomean_us < best_time)) {
        best_time = rec.result.geomean_us;
        best_eval = rec.evaluation_id;
      }
      return Status::Ok();
    };
    std::vector<JobSpec> compiles;
    for (size_t i = 0; i < reqs.size(); ++i) {
      EvalRequest r = reqs[i];
      r.compile_only = true;
      compiles.push_back(
          Job(r, JobKind::kCompile, fmt::format("c{}-a{}-s{}-compile", id_, attempt_id, i)));
    }
    std::vector<size_t> to_time;
    WS_ASSIGN_OR_RETURN(
        BatchOutcome compiled, RunJobs(compiles, true, [&](size_t i, const JobResult& r) {
          const Verdict v = r.result.verdict;
          if (compile_only_ || v == Verdict::kCompileError || v == Verdict::kPlanError) {
            EvalRequest req = reqs[i];
            req.compile_only = compile_only_ || req.compile_only;
            return take(req, r);
          }
          to_time.push_back(i);
          return Status::Ok();
        }));
    if (compiled.stopped.empty() && !to_time.empty()) {
      std::sort(to_time.begin(), to_time.end());
      std::vector<JobSpec> timed;
      for (size_t i : to_time)
        timed.push_back(Job(reqs[i], JobKind::kGpu,
                            fmt::format("c{}-a{}-s{}-gpu", id_, attempt_id, i)));
      std::vector<std::pair<size_t, JobResult>> would_win;
      WS_ASSIGN_OR_RETURN(BatchOutcome o,
                          RunJobs(timed, true, [&](size_t k, const JobResult& r) -> Status {
                            const size_t i = to_time[k];
                            if (MayNeedDeep(reqs[i], r)) {
                              would_win.push_back({i, r});  // after the batch, one at a time
                              return Status::Ok();
                            }
                            return take(reqs[i], r);
                          }));
      (void)o;
      for (const auto& [i, r] : would_win) {
        WS_ASSIGN_OR_RETURN(std::optional<JobResult> d, DeepIfWinner(reqs[i], r));
        if (!d)
          break;
        WS_RETURN_IF_ERROR(take(reqs[i], *d));
      }
    }
    std::string summary =
        fmt::format("{} settings of kernel {}, {} accepted{}", done, parent_id, ok,
                    best_time > 0 ? fmt::format(", best {:.2f} us", best_time) : "");
    WS_RETURN_IF_ERROR(store_->FinishAttempt(attempt_id, ok > 0 ? "submitted" : "no_submission",
                                             summary, best_eval));
    return summary;
  }
  p.tuner_exhausted = true;
  return std::string("every knob setting of every parent has been tried");
}

Result<std::string> Engine::WorkerAttempt(ProblemRun& p, const AgentSpec& agent) {
  WS_ASSIGN_OR_RETURN(auto candidates, Parents(p));
  std::vector<int64_t> parents = PickParents(candidates, 2, rng_());
  if (parents.empty())
    return Status::Error("{}: no parent kernel", p.spec.name);
  std::map<int64_t, double> times;
  for (const auto& c : candidates) times[c.kernel_id] = c.time_us;
  std::vector<KernelExample> examples;
  std::string parent_source;
  for (size_t i = 0; i < parents.size(); ++i) {
    WS_ASSIGN_OR_RETURN(KernelRecord k, store_->GetKernel(parents[i]));
    if (i == 0)
      parent_source = k.source;
    examples.push_back({i == 0 ? "Parent" : fmt::format("Inspiration {}", i), k.source,
                        times[k.id] > 0
                            ? fmt::format("{:.2f} us geomean over the bench shapes", times[k.id])
                            : "not timed yet",
                        LibraryClosure(k.source, KernelLibraryDir(env_.eval_opts))});
  }
  std::string board;
  for (const auto& c : candidates) {
    if (c.time_us > 0)
      board += fmt::format("- kernel {}: {:.2f} us\n", c.kernel_id, c.time_us);
  }

  AttemptRecord a;
  a.campaign_id = id_;
  a.problem = p.spec.name;
  a.agent = agent.name();
  a.parent_kernel_id = parents[0];
  WS_ASSIGN_OR_RETURN(int64_t attempt_id, store_->StartAttempt(a));
  CampaignTools tools(*this, p, attempt_id, agent, parents[0]);
  WorkerOptions wopts;
  wopts.model = agent.model;
  wopts.max_turns = config_.max_turns;
  wopts.context_tokens = config_.context_tokens;
  wopts.max_output_tokens = config_.max_output_tokens;
  WorkerBrief brief{WorkerSystemPrompt(), WorkerTaskPrompt(p.spec, p.params, examples, board)};
  WorkerOutcome o = RunWorker(*clients_.at(agent.name()), wopts, brief, tools, env_.cancel);
  std::optional<int64_t> best = tools.best_ranked_evaluation();
  if (!best)
    best = o.submitted_evaluation_id;
  std::string summary = fmt::format("{} after {} turns{}", o.status, o.turns,
                                    o.message.empty() ? "" : ": " + o.message);
  WS_RETURN_IF_ERROR(store_->FinishAttempt(attempt_id, o.status, o.message, best));
  return summary;
}

Status Engine::Review(ProblemRun& p, const ProblemView& before, const AgentSpec& agent,
                      int64_t attempt_id, const std::vector<AttemptRecord>& attempts,
                      const std::vector<EvaluationRecord>& evals) {
  ProblemView after = ComputeView(p.spec.name, "", attempts, evals);
  if (!after.best_evaluation_id || after.best_evaluation_id == before.best_evaluation_id)
    return Status::Ok();
  // A would-be winner: read it against its parent.
  const EvaluationRecord* winner = nullptr;
  for (const auto& e : evals) {
    if (e.id == *after.best_evaluation_id)
      winner = &e;
  }
  if (winner == nullptr)
    return Status::Ok();
  WS_ASSIGN_OR_RETURN(KernelRecord kernel, store_->GetKernel(winner->kernel_id));
  std::string parent_source = kernel.source;
  std::optional<int64_t> parent_id = kernel.parent_id;
  for (const auto& at : attempts) {
    if (winner->attempt_id && at.id == *winner->attempt_id && at.parent_kernel_id)
      parent_id = at.parent_kernel_id;
  }
  if (parent_id) {
    WS_ASSIGN_OR_RETURN(KernelRecord parent, store_->GetKernel(*parent_id));
    parent_source = parent.source;
  }
  ReviewVerdict v;
  if (winner->agent == "tuner") {
    v = ReviewTunerCandidate(parent_source, kernel.source, KnobsFromJson(winner->knobs_json));
  } else {
    v = ReviewRules(p.spec, kernel.source);
    auto client = clients_.find(winner->agent);
    if (!v.flagged && client != clients_.end()) {
      AgentSpec reviewer = agent;
      Result<ReviewVerdict> r =
          ReviewWithLlm(*client->second, reviewer.model, p.spec, parent_source, kernel.source,
                        config_.max_output_tokens, env_.cancel);
      if (!r.ok()) {
        v.flagged = true;
        v.reason = "the review did not happen: " + r.status().message();
      } else {
        v = *r;
        WS_RETURN_IF_ERROR(store_->AddAgentTurn(
            {id_, attempt_id, winner->agent, v.usage.input_tokens, v.usage.output_tokens,
             v.usage.cached_input_tokens, v.usage.cost_usd, "review"}));
      }
    }
  }
  if (v.flagged) {
    WS_RETURN_IF_ERROR(store_->FlagEvaluation(winner->id, v.reason));
    Show(
        fmt::format("{}: evaluation {} flagged for review: {}", p.spec.name, winner->id, v.reason));
  }
  return Status::Ok();
}

// A leader is re-timed, not a would-be winner before it is recorded: the leaderboard ranks a
// kernel by the median of its runs, so after one more run a lucky first one counts half. Whoever
// leads then is timed again if it has too few runs, a few rounds at most per attempt.
Status Engine::ConfirmLeader(ProblemRun& p, int64_t attempt_id,
                             const std::vector<EvaluationRecord>& evals) {
  if (compile_only_ || config_.confirm_runs < 2)
    return Status::Ok();
  // The GPU model the attempt's evaluations ran on (this host's, or a Slurm node's); an attempt
  // that ranked nothing has made no new leader.
  std::string gpu;
  for (const auto& e : evals) {
    if (e.attempt_id == attempt_id && IsRanked(e))
      gpu = e.gpu;
  }
  if (gpu.empty())
    return Status::Ok();
  const std::string params = json(p.params).dump();
  constexpr int kMaxRounds = 4;
  for (int round = 0; round < kMaxRounds && StopReason().empty(); ++round) {
    WS_ASSIGN_OR_RETURN(std::vector<LeaderboardEntry> board, store_->Leaderboard(p.spec.name));
    const LeaderboardEntry* top = nullptr;
    for (const auto& e : board) {
      if (e.params_json == params && e.gpu == gpu)
        top = &e;
    }
    // A flagged leader waits for a person; its runs would not settle that.
    if (top == nullptr || top->evaluations >= config_.confirm_runs || top->flagged)
      return Status::Ok();
    WS_ASSIGN_OR_RETURN(KernelRecord k, store_->GetKernel(top->kernel_id));
    EvalRequest req = BaseRequest(p);
    req.source = k.source;
    req.knobs = KnobsFromJson(top->knobs_json);
    req.source_name = fmt::format("kernel {} ({}), timed again", k.id, KnobText(req.knobs));
    RecordContext ctx;
    ctx.origin = k.origin;
    ctx.campaign_id = id_;
    ctx.attempt_id = attempt_id;
    ctx.agent = top->agent;
    ctx.purpose = "confirm";
    const double before_us = top->time_us;
    const int64_t runs = top->evaluations;
    WS_ASSIGN_OR_RETURN(RecordedEvaluation rec, Evaluate(req, ctx));
    Show(fmt::format("{}: leader kernel {} ({} run{}, {:.2f} us) timed again: {}", p.spec.name,
                     k.id, runs, runs == 1 ? "" : "s", before_us,
                     rec.ranked ? fmt::format("{:.2f} us", rec.result.geomean_us)
                                : std::string(VerdictName(rec.result.verdict))));
    if (!rec.ranked)
      return Status::Ok();  // not ok this time: its ok run stays ranked; no loop over a flake
  }
  return Status::Ok();
}

Status Engine::Run() {
  if (Status s = Prepare(); !s.ok()) {
    WS_RETURN_IF_ERROR(store_->SetCampaignStatus(id_, "failed", s.message()));
    return s;
  }
  Show("started: " + mode_);
  PlannerOptions popts;
  std::string end;
  while (true) {
    if (!(end = StopReason()).empty())
      break;
    WS_ASSIGN_OR_RETURN(std::vector<ProblemView> views, ComputeViews(*store_, id_));
    // The planner's view: exhausted when no agent can do more for a problem.
    std::vector<ProblemProgress> progress;
    for (auto& run : problems_) {
      ProblemProgress pp;
      pp.problem = run.spec.name;
      for (const auto& v : views) {
        if (v.problem == run.spec.name)
          pp = v.progress;
      }
      bool any_llm = std::any_of(config_.agents.begin(), config_.agents.end(),
                                 [](const AgentSpec& a) { return !a.is_tuner(); });
      pp.exhausted = run.tuner_exhausted && !any_llm;
      const std::string status = pp.exhausted           ? "done"
                                 : IsStalled(pp, popts) ? "stalled"
                                                        : "active";
      WS_RETURN_IF_ERROR(store_->SetCampaignProblemStatus(id_, run.spec.name, status));
      progress.push_back(pp);
    }
    const double u = std::uniform_real_distribution<double>(0, 1)(rng_);
    int pick = PickProblem(progress, popts, u);
    if (pick < 0) {
      end = "every problem is stalled or exhausted";
      break;
    }
    ProblemRun& run = problems_[static_cast<size_t>(pick)];
    ProblemView before;
    for (const auto& v : views) {
      if (v.problem == run.spec.name)
        before = v;
    }
    // The agent with the fewest attempts on this problem that can still do something.
    WS_ASSIGN_OR_RETURN(auto attempts, store_->Attempts(id_, run.spec.name));
    const AgentSpec* agent = nullptr;
    int64_t fewest = 0;
    for (const auto& a : config_.agents) {
      if (a.is_tuner() && run.tuner_exhausted)
        continue;
      int64_t n = std::count_if(attempts.begin(), attempts.end(),
                                [&](const AttemptRecord& r) { return r.agent == a.name(); });
      if (agent == nullptr || n < fewest) {
        agent = &a;
        fewest = n;
      }
    }
    if (agent == nullptr)
      continue;  // only the tuner, and it is exhausted here: the next round sees it
    Result<std::string> summary =
        agent->is_tuner() ? TunerAttempt(run) : WorkerAttempt(run, *agent);
    if (!summary.ok()) {
      end = "failed: " + summary.status().message();
      break;
    }
    WS_ASSIGN_OR_RETURN(auto after_attempts, store_->Attempts(id_, run.spec.name));
    if (!after_attempts.empty() && after_attempts.size() > attempts.size()) {
      WS_ASSIGN_OR_RETURN(auto evals, store_->CampaignEvaluations(id_, run.spec.name));
      const int64_t attempt_id = after_attempts.back().id;
      WS_RETURN_IF_ERROR(Review(run, before, *agent, attempt_id, after_attempts, evals));
      WS_RETURN_IF_ERROR(ConfirmLeader(run, attempt_id, evals));
    }
    Show(fmt::format("{} · {} · attempt {}: {}", run.spec.name, agent->name(),
                     after_attempts.size(), *summary));
  }
  WS_RETURN_IF_ERROR(FlushWall());
  const bool failed = end.rfind("failed", 0) == 0;
  const bool stopped = end.rfind("stopped", 0) == 0;
  WS_RETURN_IF_ERROR(store_->SetCampaignStatus(id_,
                                               failed    ? "failed"
                                               : stopped ? "stopped"
                                                         : "done",
                                               end));
  Show(end);
  if (failed)
    return Status::Error("campaign {}: {}", id_, end);
  return Status::Ok();
}

// ---- The worker's tools -------------------------------------------------------------------------

std::string FeedbackText(const ProblemSpec& spec, const RecordedEvaluation& rec, bool show_cases) {
  const EvalResult& r = rec.result;
  std::string t = fmt::format("verdict: {}\n", VerdictName(r.verdict));
  if (!r.message.empty())
    t += "message: " + r.message.substr(0, 4000) + "\n";
  for (const auto& k : r.compile.resources.kernels) {
    t +=
        fmt::format("kernel {}: {} registers, {} B static smem, {} B stack, {} B spilled\n", k.name,
                    k.registers, k.smem_static, k.stack_frame, k.spill_stores + k.spill_loads);
  }
  if (show_cases) {
    int hidden = 0;
    for (const auto& c : r.cases) {
      // Hidden shapes are never described: only their number.
      std::string shape;
      if (c.kind == "hidden") {
        shape = fmt::format("hidden shape #{}", hidden++);
      } else {
        for (const auto& name : spec.symbols) {
          auto it = c.shape.symbols.find(name);
          if (it != c.shape.symbols.end())
            shape += fmt::format("{}{}={}", shape.empty() ? "" : " ", name, it->second);
        }
      }
      t += fmt::format("{} {}: {}", c.kind, shape, VerdictName(c.verdict));
      if (c.timing) {
        t += fmt::format(", median {:.2f} us", c.timing->median_us);
        if (c.sol_us > 0)
          t += fmt::format(" ({:.3f} of speed-of-light)", c.sol_us / c.timing->median_us);
      }
      if (!c.message.empty() && c.verdict != Verdict::kOk)
        t += " — " + c.message.substr(0, 500);
      t += "\n";
    }
  }
  if (r.geomean_us > 0)
    t += fmt::format("geomean over bench shapes: {:.2f} us\n", r.geomean_us);
  return t;
}

// The SASS instruction mix of a cubin, from cuobjdump when it is installed.
std::string SassSummary(const std::string& cubin) {
  std::string tool = "/usr/local/cuda/bin/cuobjdump";
  if (!fs::exists(tool))
    return "SASS summary not available: cuobjdump is not installed here\n";
  SandboxSpec spec;
  spec.argv = {tool, "-sass", cubin};
  spec.limits.wall_seconds = 30;
  Result<SandboxResult> r = RunSandboxed(spec);
  if (!r.ok() || r->exit_code != 0)
    return "SASS summary not available: cuobjdump failed\n";
  std::map<std::string, int> counts;
  std::istringstream in(r->stdout_data);
  std::string line;
  int total = 0;
  while (std::getline(in, line)) {
    // "        /*0040*/                   LDG.E.128 R4, desc[UR4][R2.64] ;"
    size_t c = line.find("*/");
    if (line.find("/*") == std::string::npos || c == std::string::npos)
      continue;
    std::istringstream ops(line.substr(c + 2));
    std::string op;
    ops >> op;
    if (op.empty() || op[0] == '/' || op == "{" || op == "}")
      continue;
    if (op[0] == '@')
      ops >> op;  // predicated
    op = op.substr(0, op.find('.'));
    ++counts[op];
    ++total;
  }
  std::vector<std::pair<int, std::string>> top;
  for (const auto& [op, n] : counts) top.push_back({n, op});
  std::sort(top.rbegin(), top.rend());
  std::string t = fmt::format("SASS: {} instructions; most frequent:", total);
  for (size_t i = 0; i < top.size() && i < 20; ++i)
    t += fmt::format(" {} {}", top[i].second, top[i].first);
  return t + "\n";
}

Result<ToolFeedback> CampaignTools::Run(Action action, const std::string& source,
                                        const KnobSetting& knobs) {
  EvalRequest req = engine_.BaseRequest(problem_);
  req.source = source;
  req.source_name = fmt::format("attempt {}", attempt_id_);
  req.knobs = knobs;
  RecordContext ctx;
  ctx.origin = "agent:" + agent_.name();
  ctx.parent_kernel_id = parent_kernel_id_;
  ctx.campaign_id = engine_.id();
  ctx.attempt_id = attempt_id_;
  ctx.agent = agent_.name();
  switch (action) {
    case Action::kCompile:
    case Action::kResourceReport:
    case Action::kSassSummary:
      req.compile_only = true;
      req.include_hidden = false;
      ctx.purpose = "compile";
      break;
    case Action::kCheck:
      req.time_bench = false;
      req.include_hidden = false;
      ctx.purpose = "check";
      break;
    case Action::kTime:
      req.include_hidden = false;
      ctx.purpose = "time";
      break;
    case Action::kSubmit:
      req.include_hidden = true;  // promotion needs the hidden shapes
      ctx.purpose = "submit";
      break;
  }
  WS_ASSIGN_OR_RETURN(RecordedEvaluation rec, engine_.Evaluate(req, ctx));
  ToolFeedback fb;
  fb.verdict = std::string(VerdictName(rec.result.verdict));
  fb.evaluation_id = rec.evaluation_id;
  if (action == Action::kSassSummary) {
    fb.text = rec.result.compile.ok ? SassSummary(rec.result.compile.cubin_path)
                                    : FeedbackText(problem_.spec, rec, false);
    return fb;
  }
  fb.text = FeedbackText(problem_.spec, rec,
                         action != Action::kCompile && action != Action::kResourceReport);
  if (action == Action::kSubmit) {
    fb.accepted = rec.result.verdict == Verdict::kOk || rec.result.verdict == Verdict::kNotRun;
    if (rec.ranked && (best_time_ == 0 || rec.result.geomean_us < best_time_)) {
      best_time_ = rec.result.geomean_us;
      best_ranked_ = rec.evaluation_id;
    }
    fb.text +=
        fb.accepted ? "submission accepted\n" : "submission rejected; fix it and try again\n";
  }
  return fb;
}

void CampaignTools::RecordTurn(const Usage& usage, const std::string& stop_reason) {
  Status s = engine_.store().AddAgentTurn({engine_.id(), attempt_id_, agent_.name(),
                                           usage.input_tokens, usage.output_tokens,
                                           usage.cached_input_tokens, usage.cost_usd, stop_reason});
  if (!s.ok())
    std::fprintf(stderr, "warpsmith: recording a turn: %s\n", s.message().c_str());
}

bool CampaignTools::ShouldStop() {
  return !engine_.StopReason().empty();
}

Result<std::unique_ptr<Store>> OpenWorkspaceStore(const std::string& workspace) {
  std::error_code ec;
  fs::create_directories(workspace, ec);
  if (ec)
    return Status::Error("cannot create the workspace {}: {}", workspace, ec.message());
  return Store::Open(workspace + "/warpsmith.db");
}

}  // namespace

Result<int64_t> StartCampaign(const CampaignConfig& config, CampaignEnv& env) {
  CampaignConfig c = config;
  if (c.agents.empty())
    c.agents.push_back({"tuner", ""});
  WS_RETURN_IF_ERROR(CheckPrices(c));
  WS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenWorkspaceStore(env.workspace));
  WS_ASSIGN_OR_RETURN(int64_t id, store->CreateCampaign(CampaignConfigJson(c), ::getpid()));
  Status s = RunCampaign(id, env);
  if (!s.ok())
    return s;
  return id;
}

Status RunCampaign(int64_t campaign_id, CampaignEnv& env) {
  WS_ASSIGN_OR_RETURN(std::unique_ptr<Store> store, OpenWorkspaceStore(env.workspace));
  WS_ASSIGN_OR_RETURN(CampaignRecord rec, store->GetCampaign(campaign_id));
  WS_ASSIGN_OR_RETURN(CampaignConfig config, ParseCampaignConfig(rec.config_json));
  if (config.agents.empty())
    config.agents.push_back({"tuner", ""});
  WS_RETURN_IF_ERROR(store->ClaimCampaign(campaign_id, ::getpid()));
  if (env.eval_opts.workspace.empty() || env.eval_opts.workspace == ".warpsmith")
    env.eval_opts.workspace = env.workspace;
  Engine engine(campaign_id, std::move(config), env, std::move(store));
  return engine.Run();
}

// ---- Status -------------------------------------------------------------------------------------

namespace {

struct StatusData {
  CampaignRecord campaign;
  CampaignConfig config;
  CampaignSpend spend;
  std::vector<ProblemView> problems;
  std::vector<AgentStats> agents;
  std::vector<JobRecord> jobs;
};

// Per node: jobs by state, and the GPUs (index) that timed there.
struct NodeJobs {
  std::map<std::string, int64_t> states;
  std::map<std::string, int64_t> kinds;
  std::set<int64_t> gpus;
  int64_t retried = 0;
};

std::map<std::string, NodeJobs> JobsPerNode(const std::vector<JobRecord>& jobs) {
  std::map<std::string, NodeJobs> out;
  for (const auto& j : jobs) {
    NodeJobs& n = out[j.node.empty() ? "(not placed yet)" : j.node];
    ++n.states[j.state];
    ++n.kinds[j.kind];
    if (j.gpu_index)
      n.gpus.insert(*j.gpu_index);
    n.retried += j.tries > 1;
  }
  return out;
}

Result<StatusData> LoadStatus(Store& store, int64_t id) {
  StatusData d;
  WS_ASSIGN_OR_RETURN(d.campaign, store.GetCampaign(id));
  WS_ASSIGN_OR_RETURN(d.config, ParseCampaignConfig(d.campaign.config_json));
  WS_ASSIGN_OR_RETURN(d.spend, store.Spend(id));
  WS_ASSIGN_OR_RETURN(d.problems, ComputeViews(store, id));
  WS_ASSIGN_OR_RETURN(d.agents, store.AgentStatistics(id));
  WS_ASSIGN_OR_RETURN(d.jobs, store.Jobs(id));
  return d;
}

bool PidAlive(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

Result<std::string> CampaignStatusJson(Store& store, int64_t id) {
  WS_ASSIGN_OR_RETURN(StatusData d, LoadStatus(store, id));
  json problems = json::array();
  for (const auto& p : d.problems) {
    json j = {{"problem", p.problem},
              {"status", p.status},
              {"attempts", p.progress.attempts},
              {"evaluations", p.evaluations},
              {"gpu_seconds", p.gpu_seconds},
              {"tokens", p.tokens},
              {"dollars", p.dollars},
              {"attempts_since_improvement", p.progress.attempts_since_improvement}};
    j["best"] = nullptr;
    if (p.best_evaluation_id) {
      j["best"] = {{"time_us", p.progress.best_time_us},
                   {"sol_fraction", p.progress.best_sol_fraction},
                   {"evaluation_id", *p.best_evaluation_id},
                   {"kernel_id", *p.best_kernel_id},
                   {"agent", p.best_agent},
                   {"knobs", json::parse(p.best_knobs, nullptr, false)},
                   {"flagged", p.best_flagged},
                   {"sandbox", json::parse(p.best_sandbox, nullptr, false)},
                   {"deep", json::parse(p.best_deep, nullptr, false)}};
    }
    problems.push_back(j);
  }
  json agents = json::array();
  for (const auto& a : d.agents) {
    agents.push_back({{"agent", a.agent},
                      {"attempts", a.attempts},
                      {"verdicts", a.verdicts},
                      {"input_tokens", a.input_tokens},
                      {"output_tokens", a.output_tokens},
                      {"cost_usd", a.cost_usd}});
  }
  json nodes = json::array();
  for (const auto& [node, n] : JobsPerNode(d.jobs)) {
    nodes.push_back({{"node", node},
                     {"jobs", n.states},
                     {"kinds", n.kinds},
                     {"gpus", n.gpus},
                     {"retried", n.retried}});
  }
  json j = {{"id", d.campaign.id},
            {"status", d.campaign.status},
            {"executor", d.config.executor},
            {"nodes", nodes},
            {"message", d.campaign.message},
            {"stop_requested", d.campaign.stop_requested},
            {"process_alive", d.campaign.status == "running" && PidAlive(d.campaign.pid)},
            {"created_at", d.campaign.created_at},
            {"updated_at", d.campaign.updated_at},
            {"config", json::parse(d.campaign.config_json, nullptr, false)},
            {"budget", BudgetJson(d.config.budget)},
            {"spent", SpendJson(d.spend)},
            {"problems", problems},
            {"agents", agents}};
  return j.dump(2);
}

Result<std::string> CampaignStatusText(Store& store, int64_t id) {
  WS_ASSIGN_OR_RETURN(StatusData d, LoadStatus(store, id));
  std::string status = d.campaign.status;
  if (status == "running" && !PidAlive(d.campaign.pid))
    status = "interrupted (its process is gone; `warpsmith campaign resume` continues it)";
  std::string t = fmt::format("campaign {}: {}{}\n", d.campaign.id, status,
                              d.campaign.message.empty() ? "" : " — " + d.campaign.message);
  t += fmt::format("  problems '{}', seed {}, {}\n", d.config.problems, d.config.seed,
                   d.config.compile_only ? "compile-only" : "on the GPU where there is one");
  t += "  spend: " + Display::SpendLine(d.spend, d.config.budget) + "\n\n";
  t += fmt::format("  {:<28} {:>11} {:>7} {:>9} {:>6} {:>8} {:>8}  {:<8} {}\n", "problem",
                   "best us", "of SOL", "attempts", "evals", "GPU s", "cost $", "status",
                   "best by");
  for (const auto& p : d.problems) {
    t += fmt::format(
        "  {:<28} {:>11} {:>7} {:>9} {:>6} {:>8.1f} {:>8.2f}  {:<8} {}{}\n", p.problem,
        p.progress.best_time_us > 0 ? fmt::format("{:.2f}", p.progress.best_time_us) : "-",
        p.progress.best_sol_fraction > 0 ? fmt::format("{:.3f}", p.progress.best_sol_fraction)
                                         : "-",
        p.progress.attempts, p.evaluations, p.gpu_seconds, p.dollars, p.status,
        p.best_agent.empty() ? "" : p.best_agent + " " + p.best_knobs,
        p.best_flagged ? " [flagged]" : "");
  }
  t += fmt::format("\n  {:<28} {:>9} {:>12} {:>12} {:>9}  {}\n", "agent", "attempts", "tokens in",
                   "tokens out", "cost $", "verdicts");
  for (const auto& a : d.agents) {
    std::string verdicts;
    for (const auto& [v, n] : a.verdicts)
      verdicts += fmt::format("{}{} {}", verdicts.empty() ? "" : ", ", v, n);
    t += fmt::format("  {:<28} {:>9} {:>12} {:>12} {:>9.2f}  {}\n", a.agent, a.attempts,
                     a.input_tokens, a.output_tokens, a.cost_usd, verdicts);
  }
  if (!d.jobs.empty()) {
    t += fmt::format("\n  jobs per node ({} executor)\n", d.config.executor);
    t += fmt::format("  {:<28} {:>6} {:>8} {:>6} {:>8}  {}\n", "node", "jobs", "compile", "gpu",
                     "retried", "states; GPUs");
    for (const auto& per_node : JobsPerNode(d.jobs)) {
      const auto& node = per_node.first;
      const auto& n = per_node.second;  // not a structured binding: the lambda below reads it
      int64_t total = 0;
      std::string states;
      for (const auto& [st, c] : n.states) {
        total += c;
        states += fmt::format("{}{} {}", states.empty() ? "" : ", ", st, c);
      }
      std::string gpus;
      for (int64_t g : n.gpus) gpus += fmt::format("{}{}", gpus.empty() ? "" : ",", g);
      auto kind = [&](const char* k) {
        auto it = n.kinds.find(k);
        return it == n.kinds.end() ? int64_t{0} : it->second;
      };
      t += fmt::format("  {:<28} {:>6} {:>8} {:>6} {:>8}  {}{}\n", node, total, kind("compile"),
                       kind("gpu"), n.retried, states, gpus.empty() ? "" : "; GPUs " + gpus);
    }
  }
  return t;
}

}  // namespace ws
