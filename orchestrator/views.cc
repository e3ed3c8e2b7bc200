#include "orchestrator/views.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/files.h"
#include "orchestrator/campaign.h"
#include "orchestrator/diff.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json ParseOr(const std::string& text, json fallback) {
  json j = json::parse(text, nullptr, false);
  return j.is_discarded() ? fallback : j;
}

json Opt(const std::optional<int64_t>& v) {
  return v ? json(*v) : json(nullptr);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Problem names come from URLs: only names a problem folder could have reach the file system.
bool SafeName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.')
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// The problem set's baseline.cu text; empty when the problem has none on disk.
std::string BaselineSource(const std::string& problems_dir, const std::string& problem) {
  if (problems_dir.empty() || !SafeName(problem))
    return "";
  auto text = ReadFile(fs::path(problems_dir) / problem / "baseline.cu");
  return text.ok() ? *text : "";
}

// A problem's evaluations and the kernels behind them, loaded once per view.
class ProblemData {
 public:
  static Result<ProblemData> Load(Store& store, const std::string& problem,
                                  const std::string& problems_dir) {
    ProblemData d;
    d.store_ = &store;
    d.baseline_source_ = BaselineSource(problems_dir, problem);
    WS_ASSIGN_OR_RETURN(d.evals_, store.Evaluations(problem, 0));
    std::reverse(d.evals_.begin(), d.evals_.end());  // oldest first
    return d;
  }

  const std::vector<EvaluationRecord>& evaluations() const { return evals_; }
  const std::string& baseline_source() const { return baseline_source_; }

  const EvaluationRecord* Find(int64_t evaluation_id) const {
    for (const auto& e : evals_) {
      if (e.id == evaluation_id)
        return &e;
    }
    return nullptr;
  }

  Result<const KernelRecord*> Kernel(int64_t id) {
    auto it = kernels_.find(id);
    if (it == kernels_.end()) {
      WS_ASSIGN_OR_RETURN(KernelRecord k, store_->GetKernel(id));
      it = kernels_.emplace(id, std::move(k)).first;
    }
    return &it->second;
  }

  // A baseline kernel: the problem set's baseline.cu, evaluated with `warpsmith eval`.
  Result<bool> IsBaseline(int64_t kernel_id) {
    WS_ASSIGN_OR_RETURN(const KernelRecord* k, Kernel(kernel_id));
    if (!baseline_source_.empty() && k->source == baseline_source_)
      return true;
    return EndsWith(k->origin, "/baseline.cu") || k->origin == "file:baseline.cu";
  }

  // The fastest ok, timed baseline evaluation on this GPU with these params.
  Result<const EvaluationRecord*> Baseline(const std::string& gpu, const std::string& params) {
    const EvaluationRecord* best = nullptr;
    for (const auto& e : evals_) {
      if (e.verdict != "ok" || e.time_us <= 0 || e.gpu != gpu || e.params_json != params)
        continue;
      WS_ASSIGN_OR_RETURN(bool base, IsBaseline(e.kernel_id));
      if (base && (!best || e.time_us < best->time_us))
        best = &e;
    }
    return best;
  }

 private:
  Store* store_ = nullptr;
  std::string baseline_source_;
  std::vector<EvaluationRecord> evals_;
  std::map<int64_t, KernelRecord> kernels_;
};

// Why a person should look at this evaluation before trusting its time.
json Suspicion(const EvaluationRecord& e) {
  json flags = json::array();
  if (e.sol_fraction > 1.0) {
    flags.push_back({{"flag", "faster_than_speed_of_light"},
                     {"detail", fmt::format("{:.3f} of speed-of-light: the timing or the check "
                                            "cannot be right",
                                            e.sol_fraction)}});
  } else if (e.sol_fraction >= kNearSolFraction) {
    flags.push_back({{"flag", "near_speed_of_light"},
                     {"detail", fmt::format("{:.3f} of speed-of-light", e.sol_fraction)}});
  }
  for (const auto& t : e.timings) {
    if (t.median_us > 0 && t.stdev_us / t.median_us > kHighVarianceCv) {
      flags.push_back({{"flag", "high_variance"},
                       {"detail", fmt::format("shape {}: stdev {:.3g} us on a median of {:.3g} us",
                                              t.shape_json, t.stdev_us, t.median_us)}});
    }
  }
  if (e.flagged)
    flags.push_back({{"flag", "reviewer"}, {"detail", e.flag_reason}});
  return flags;
}

json TimingsJson(const EvaluationRecord& e) {
  json out = json::array();
  for (const auto& t : e.timings) {
    out.push_back({{"shape", ParseOr(t.shape_json, t.shape_json)},
                   {"kind", t.kind},
                   {"median_us", t.median_us},
                   {"p90_us", t.p90_us},
                   {"min_us", t.min_us},
                   {"stdev_us", t.stdev_us},
                   {"iterations", t.iterations},
                   {"sol_us", t.sol_us}});
  }
  return out;
}

json EvaluationJson(const EvaluationRecord& e, bool with_detail) {
  json j = {{"evaluation_id", e.id},
            {"kernel_id", e.kernel_id},
            {"verdict", e.verdict},
            {"message", e.message},
            {"gpu", e.gpu},
            {"arch", e.arch},
            {"params", ParseOr(e.params_json, json::object())},
            {"knobs", ParseOr(e.knobs_json, json::object())},
            {"time_us", e.time_us},
            {"sol_fraction", e.sol_fraction},
            {"agent", e.agent},
            {"campaign_id", Opt(e.campaign_id)},
            {"attempt_id", Opt(e.attempt_id)},
            {"purpose", e.purpose},
            {"gpu_seconds", e.gpu_seconds},
            {"flagged", e.flagged},
            {"flag_reason", e.flag_reason},
            {"created_at", e.created_at}};
  if (with_detail) {
    j["driver"] = e.driver;
    j["resources"] = ParseOr(e.resources_json, e.resources_json);
    j["sandbox"] = ParseOr(e.sandbox_json, json::object());
    j["deep"] = ParseOr(e.deep_json, json::object());
    j["timings"] = TimingsJson(e);
    j["suspicion"] = Suspicion(e);
  }
  return j;
}

Result<json> AgentStatsJson(Store& store, const std::string& name,
                            const std::vector<AgentStats>& agents) {
  for (const auto& a : agents) {
    if (a.agent == name) {
      return json{{"attempts", a.attempts},
                  {"verdicts", a.verdicts},
                  {"input_tokens", a.input_tokens},
                  {"output_tokens", a.output_tokens},
                  {"cost_usd", a.cost_usd}};
    }
  }
  return json(nullptr);
}

Result<json> LeaderboardRows(Store& store, const std::string& problem,
                             const std::string& problems_dir) {
  WS_ASSIGN_OR_RETURN(auto rows, store.Leaderboard(problem));
  WS_ASSIGN_OR_RETURN(auto agents, store.AgentStatistics(std::nullopt));
  std::map<std::string, ProblemData> data;
  json arr = json::array();
  for (const auto& r : rows) {
    auto it = data.find(r.problem);
    if (it == data.end()) {
      WS_ASSIGN_OR_RETURN(ProblemData d, ProblemData::Load(store, r.problem, problems_dir));
      it = data.emplace(r.problem, std::move(d)).first;
    }
    ProblemData& d = it->second;
    WS_ASSIGN_OR_RETURN(json stats, AgentStatsJson(store, r.agent, agents));
    json row = {{"problem", r.problem},
                {"params", ParseOr(r.params_json, json::object())},
                {"gpu", r.gpu},
                {"time_us", r.time_us},
                {"evaluations", r.evaluations},
                {"fastest_us", r.fastest_us},
                {"slowest_us", r.slowest_us},
                {"sol_fraction", r.sol_fraction},
                {"kernel_id", r.kernel_id},
                {"evaluation_id", r.evaluation_id},
                {"kernel_hash", r.kernel_hash},
                {"origin", r.origin},
                {"knobs", ParseOr(r.knobs_json, json::object())},
                {"agent", r.agent},
                {"agent_stats", stats},
                {"flagged", r.flagged},
                {"flag_reason", r.flag_reason},
                {"sandbox", ParseOr(r.sandbox_json, json::object())},
                {"deep", ParseOr(r.deep_json, json::object())},
                {"created_at", r.created_at}};
    const EvaluationRecord* e = d.Find(r.evaluation_id);
    row["campaign_id"] = e ? Opt(e->campaign_id) : json(nullptr);
    row["suspicion"] = e ? Suspicion(*e) : json::array();
    WS_ASSIGN_OR_RETURN(const EvaluationRecord* base, d.Baseline(r.gpu, r.params_json));
    row["baseline"] = nullptr;
    row["speedup"] = nullptr;
    if (base) {
      row["baseline"] = {
          {"evaluation_id", base->id}, {"kernel_id", base->kernel_id}, {"time_us", base->time_us}};
      if (r.time_us > 0)
        row["speedup"] = base->time_us / r.time_us;
    }
    arr.push_back(row);
  }
  return arr;
}

}  // namespace

std::string PlanText(const std::string& source) {
  const std::string open = "/* warpsmith:plan";
  size_t b = source.find(open);
  if (b == std::string::npos)
    return "";
  b += open.size();
  size_t e = source.find("*/", b);
  if (e == std::string::npos)
    return "";
  std::string text = source.substr(b, e - b);
  size_t first = text.find_first_not_of(" \t\r\n");
  size_t last = text.find_last_not_of(" \t\r\n");
  return first == std::string::npos ? "" : text.substr(first, last - first + 1);
}

Result<json> LeaderboardJson(Store& store, const std::string& problem,
                             const std::string& problems_dir) {
  return LeaderboardRows(store, problem, problems_dir);
}

Result<std::optional<json>> ProblemJson(Store& store, const std::string& problem,
                                        const std::string& problems_dir) {
  if (!SafeName(problem))
    return std::optional<json>();
  WS_ASSIGN_OR_RETURN(ProblemData d, ProblemData::Load(store, problem, problems_dir));
  const bool in_set =
      !problems_dir.empty() && fs::exists(fs::path(problems_dir) / problem / "spec.json");
  if (d.evaluations().empty() && !in_set)
    return std::optional<json>();
  json j = {{"problem", problem},
            {"in_problem_set", in_set},
            {"has_baseline_source", !d.baseline_source().empty()}};
  WS_ASSIGN_OR_RETURN(j["leaderboard"], LeaderboardRows(store, problem, problems_dir));
  json candidates = json::array();
  struct Group {
    std::string gpu, params;
    json points = json::array();
    int64_t n = 0;
    double spend = 0, best = 0, sol_us = 0;
  };
  std::vector<Group> groups;
  for (const auto& e : d.evaluations()) {
    json c = EvaluationJson(e, false);
    WS_ASSIGN_OR_RETURN(bool base, d.IsBaseline(e.kernel_id));
    c["baseline"] = base;
    c["suspicion"] = Suspicion(e);
    candidates.push_back(c);
    if (e.gpu.empty())
      continue;  // compile-only: no time, no GPU spend
    auto g = std::find_if(groups.begin(), groups.end(), [&](const Group& x) {
      return x.gpu == e.gpu && x.params == e.params_json;
    });
    if (g == groups.end()) {
      groups.push_back({e.gpu, e.params_json});
      g = groups.end() - 1;
    }
    ++g->n;
    g->spend += e.gpu_seconds;
    if (e.verdict == "ok" && e.time_us > 0 && (g->best == 0 || e.time_us < g->best)) {
      g->best = e.time_us;
      // sol_fraction is the geomean of T_SOL / T, so T * fraction is the geomean T_SOL.
      if (e.sol_fraction > 0)
        g->sol_us = e.time_us * e.sol_fraction;
    }
    g->points.push_back({{"evaluations", g->n},
                         {"gpu_seconds", g->spend},
                         {"best_time_us", g->best > 0 ? json(g->best) : json(nullptr)},
                         // The evaluation's own time: a campaign's progress shows even under
                         // an earlier, faster kernel.
                         {"time_us", e.verdict == "ok" && e.time_us > 0 ? json(e.time_us)
                                                                        : json(nullptr)},
                         {"evaluation_id", e.id}});
  }
  j["candidates"] = candidates;
  json series = json::array();
  for (auto& g : groups) {
    WS_ASSIGN_OR_RETURN(const EvaluationRecord* base, d.Baseline(g.gpu, g.params));
    series.push_back({{"gpu", g.gpu},
                      {"params", ParseOr(g.params, json::object())},
                      {"baseline_time_us", base ? json(base->time_us) : json(nullptr)},
                      {"sol_us", g.sol_us > 0 ? json(g.sol_us) : json(nullptr)},
                      {"points", g.points}});
  }
  j["series"] = series;
  return std::optional<json>(j);
}

Result<std::optional<json>> KernelJson(Store& store, int64_t id, const std::string& problems_dir) {
  auto kr = store.GetKernel(id);
  if (!kr.ok())
    return std::optional<json>();  // the store says only "no kernel with id"
  const KernelRecord& k = *kr;
  WS_ASSIGN_OR_RETURN(ProblemData d, ProblemData::Load(store, k.problem, problems_dir));
  json j = {
      {"kernel_id", k.id},  {"problem", k.problem},          {"hash", k.hash},
      {"origin", k.origin}, {"parent_id", Opt(k.parent_id)}, {"campaign_id", Opt(k.campaign_id)},
      {"agent", k.agent},   {"created_at", k.created_at},    {"source", k.source},
      {"library_headers", k.library_headers}};
  const std::string plan = PlanText(k.source);
  j["plan"] = {{"text", plan}, {"json", plan.empty() ? json(nullptr) : ParseOr(plan, nullptr)}};
  j["parent"] = nullptr;
  j["diff_parent"] = nullptr;
  if (k.parent_id) {
    auto parent = store.GetKernel(*k.parent_id);
    if (parent.ok()) {
      j["parent"] = {{"kernel_id", parent->id}, {"hash", parent->hash}, {"origin", parent->origin}};
      j["diff_parent"] = UnifiedDiff(parent->source, k.source, fmt::format("kernel {}", parent->id),
                                     fmt::format("kernel {}", k.id));
    }
  }
  j["diff_baseline"] = nullptr;
  if (!d.baseline_source().empty()) {
    j["diff_baseline"] = UnifiedDiff(d.baseline_source(), k.source,
                                     fmt::format("problems/{}/baseline.cu", k.problem),
                                     fmt::format("kernel {}", k.id));
  }
  json evals = json::array(), suspicion = json::array();
  std::map<std::string, int64_t> verdicts;
  json resources = nullptr, sandbox = json::object(), deep = json::object();
  bool compiled = false;
  for (auto it = d.evaluations().rbegin(); it != d.evaluations().rend(); ++it) {  // newest first
    const EvaluationRecord& e = *it;
    if (e.kernel_id != k.id)
      continue;
    evals.push_back(EvaluationJson(e, true));
    ++verdicts[e.verdict];
    compiled = compiled || e.verdict != "compile_error";
    if (resources.is_null() && e.resources_json != "{}" && !e.resources_json.empty())
      resources = ParseOr(e.resources_json, e.resources_json);
    if (e.verdict == "ok") {
      for (auto& s : Suspicion(e)) {
        s["evaluation_id"] = e.id;
        suspicion.push_back(s);
      }
      if (sandbox.empty())
        sandbox = ParseOr(e.sandbox_json, json::object());
      if (deep.empty())
        deep = ParseOr(e.deep_json, json::object());
    } else if (e.flagged) {
      suspicion.push_back(
          {{"flag", "reviewer"}, {"detail", e.flag_reason}, {"evaluation_id", e.id}});
    }
  }
  j["evaluations"] = evals;
  j["resources"] = resources;
  // What the kernel has passed: verdict counts, and of its newest ok evaluation the sandbox it
  // ran in and the deep-mode tools.
  j["checks"] = {{"verdicts", verdicts},
                 {"compiled", !evals.empty() && compiled},
                 {"verified", verdicts.count("ok") > 0},
                 {"sandbox", sandbox},
                 {"deep", deep}};
  j["suspicion"] = suspicion;
  return std::optional<json>(j);
}

Result<std::optional<json>> CampaignJson(Store& store, int64_t id) {
  WS_ASSIGN_OR_RETURN(auto all, store.Campaigns());
  if (std::none_of(all.begin(), all.end(), [&](const CampaignRecord& c) { return c.id == id; }))
    return std::optional<json>();
  WS_ASSIGN_OR_RETURN(std::string text, CampaignStatusJson(store, id));
  json j = ParseOr(text, json::object());
  WS_ASSIGN_OR_RETURN(auto evals, store.CampaignEvaluations(id, ""));
  std::map<std::string, std::pair<int64_t, double>> by_agent;
  for (const auto& e : evals) {
    auto& [n, s] = by_agent[e.agent];
    ++n;
    s += e.gpu_seconds;
  }
  json spend = json::array();
  for (const auto& [agent, v] : by_agent) {
    spend.push_back({{"agent", agent}, {"evaluations", v.first}, {"gpu_seconds", v.second}});
  }
  j["spend_by_agent"] = spend;
  WS_ASSIGN_OR_RETURN(auto attempts, store.Attempts(id, ""));
  json recent = json::array();
  const size_t keep = 50;
  for (size_t i = attempts.size() > keep ? attempts.size() - keep : 0; i < attempts.size(); ++i) {
    const AttemptRecord& a = attempts[i];
    recent.push_back({{"attempt_id", a.id},
                      {"problem", a.problem},
                      {"agent", a.agent},
                      {"parent_kernel_id", Opt(a.parent_kernel_id)},
                      {"status", a.status},
                      {"message", a.message},
                      {"best_evaluation_id", Opt(a.best_evaluation_id)},
                      {"started_at", a.started_at},
                      {"finished_at", a.finished_at}});
  }
  j["recent_attempts"] = recent;
  j["attempts_total"] = attempts.size();
  return std::optional<json>(j);
}

Result<json> CampaignsJson(Store& store) {
  WS_ASSIGN_OR_RETURN(auto all, store.Campaigns());
  std::sort(all.begin(), all.end(),
            [](const CampaignRecord& a, const CampaignRecord& b) { return a.id > b.id; });
  json arr = json::array();
  for (const auto& c : all) {
    WS_ASSIGN_OR_RETURN(CampaignSpend s, store.Spend(c.id));
    arr.push_back({{"id", c.id},
                   {"status", c.status},
                   {"message", c.message},
                   {"stop_requested", c.stop_requested},
                   {"created_at", c.created_at},
                   {"updated_at", c.updated_at},
                   {"spent",
                    {{"evaluations", s.evaluations},
                     {"tokens", s.tokens},
                     {"dollars", s.dollars},
                     {"gpu_seconds", s.gpu_seconds},
                     {"wall_seconds", s.wall_seconds}}}});
  }
  return arr;
}

}  // namespace ws
