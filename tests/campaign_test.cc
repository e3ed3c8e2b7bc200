// Campaigns end to end, without a GPU: the tuner over the real evaluator in compile-only mode; the
// planner and tuner against a fake evaluator with times; a campaign killed with SIGKILL and
// resumed; LLM workers against a scripted client (tool calls, malformed arguments, a failing
// endpoint, a reviewer's flag).
#include "orchestrator/campaign.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "orchestrator/store.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kSourceDir = WS_SOURCE_DIR;

// A small kernel with a 5 x 5 x 5 knob space (guided search) for fake-evaluator campaigns.
constexpr const char* kKnobKernel = R"P(/* warpsmith:plan
{ "knobs":  { "A": [2, 0, 1, 3, 4], "B": [2, 0, 1, 3, 4], "C": [2, 0, 1, 3, 4] },
  "launch": [ { "kernel": "k", "grid": ["ceil_div(M * K, 256)"], "block": ["256"],
                "smem": "0", "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void k(const unsigned short* x, unsigned char* q, unsigned char* s, int M,
                             int K) {}
)P";

// The fake evaluator's cost model: the time is minimal (base) at A=4, B=1, C=3.
double FakeTime(const std::string& problem, const std::map<std::string, int64_t>& knobs) {
  const double base = problem == "near" ? 10.0 : 30.0;
  auto get = [&](const char* k) {
    auto it = knobs.find(k);
    return it == knobs.end() ? 2.0 : static_cast<double>(it->second);
  };
  return base + (get("A") - 4) * (get("A") - 4) * 0.5 + (get("B") - 1) * (get("B") - 1) +
         (get("C") - 3) * (get("C") - 3) * 0.25;
}

// Fake results with times: compile-only requests are not run; full ones are ok, timed by
// FakeTime, with "speed-of-light" at 9.5 us for "near" and 10 us for "far".
Result<EvalResult> FakeEvaluate(const EvalRequest& req, const EvaluatorOptions&) {
  EvalResult r;
  Result<Plan> plan = ParsePlan(req.source);
  if (!plan.ok()) {
    r.verdict = Verdict::kPlanError;
    r.message = plan.status().message();
    return r;
  }
  for (const auto& [k, values] : plan->knobs) {
    auto it = req.knobs.find(k);
    r.knobs[k] = it == req.knobs.end() ? values.front() : it->second;
  }
  r.compile.ok = true;
  if (req.compile_only) {
    r.verdict = Verdict::kNotRun;
    r.message = "compile only (fake)";
    return r;
  }
  r.verdict = Verdict::kOk;
  r.ran_on_gpu = true;
  r.device = req.device;
  r.geomean_us = FakeTime(req.spec->name, r.knobs);
  r.sol_fraction = (req.spec->name == "near" ? 9.5 : 10.0) / r.geomean_us;
  return r;
}

DeviceInfo FakeDevice() {
  DeviceInfo d;
  d.name = "Fake GPU";
  d.arch = "sm_90a";
  d.driver = "0";
  return d;
}

// Replays a script of replies (or failures) shared by every client made from it.
struct Script {
  std::mutex mu;
  std::deque<Result<ChatResponse>> replies;
  std::vector<ChatRequest> requests;
};

class ScriptedClient : public LlmClient {
 public:
  explicit ScriptedClient(std::shared_ptr<Script> s) : s_(std::move(s)) {}
  Result<ChatResponse> Chat(const ChatRequest& req, const CancelToken*) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->requests.push_back(req);
    if (s_->replies.empty())
      return Status::Error("HTTP 503 from the fake endpoint (script exhausted)");
    Result<ChatResponse> r = s_->replies.front();
    s_->replies.pop_front();
    return r;
  }
  std::string provider() const override { return "openai"; }

 private:
  std::shared_ptr<Script> s_;
};

ChatResponse ToolReply(const std::string& name, const std::string& args) {
  ChatResponse r;
  r.message.role = ChatMessage::Role::kAssistant;
  r.message.tool_calls.push_back({"call_" + name, name, args});
  r.usage = {.input_tokens = 1000, .output_tokens = 200, .cost_usd = 0.01};
  r.stop_reason = "tool_calls";
  return r;
}

ChatResponse TextReply(const std::string& text) {
  ChatResponse r;
  r.message.role = ChatMessage::Role::kAssistant;
  r.message.content = text;
  r.usage = {.input_tokens = 500, .output_tokens = 20, .cost_usd = 0.005};
  r.stop_reason = "stop";
  return r;
}

class CampaignTest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("ws_campaign_" + std::to_string(::getpid()) + "_" +
            testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A problem set of copies of mxfp8_quantize_rowwise under other names, each seeded with
  // kKnobKernel as its hand-tuned kernel.
  void MakeProblems(const std::vector<std::string>& names) {
    const fs::path src = kSourceDir + "/problems/mxfp8_quantize_rowwise";
    for (const auto& name : names) {
      fs::path p = dir_ / "problems" / name;
      fs::create_directories(p);
      for (const char* f : {"reference.cu", "baseline.cu", "starting.cu"})
        fs::copy_file(src / f, p / f);
      std::ifstream in(src / "spec.json");
      json spec = json::parse(in);
      spec["name"] = name;
      std::ofstream(p / "spec.json") << spec.dump(2);
      fs::create_directories(dir_ / "kernels" / name);
      std::ofstream(dir_ / "kernels" / name / "kernel.cu") << kKnobKernel;
    }
  }

  CampaignEnv FakeEnv() {
    CampaignEnv env;
    env.workspace = (dir_ / "ws").string();
    env.problems_dir = (dir_ / "problems").string();
    env.kernels_dir = (dir_ / "kernels").string();
    env.eval_opts.workspace = env.workspace;
    env.evaluate = FakeEvaluate;
    env.probe_device = false;
    env.device = FakeDevice();
    env.out = nullptr;
    return env;
  }

  CampaignEnv RealCompileOnlyEnv() {
    CampaignEnv env;
    env.workspace = (dir_ / "ws").string();
    env.problems_dir = kSourceDir + "/problems";
    env.kernels_dir = kSourceDir + "/kernels";
    env.eval_opts.workspace = env.workspace;
    env.eval_opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
    env.out = nullptr;
    return env;
  }

  std::unique_ptr<Store> OpenStore() {
    auto s = Store::Open((dir_ / "ws" / "warpsmith.db").string());
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  fs::path dir_;
};

// The README's first command, in CI: a tuner campaign over the real evaluator, compile-only.
TEST_F(CampaignTest, TunerCampaignCompileOnlyEndToEnd) {
  CampaignConfig c;
  c.problems = "mxfp8_quantize_row*";  // a glob that picks the one problem the checks below name
  c.compile_only = true;
  c.budget.evaluations = 10;
  c.tuner_batch = 4;
  CampaignEnv env = RealCompileOnlyEnv();
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto campaign = store->GetCampaign(*id);
  ASSERT_TRUE(campaign.ok());
  EXPECT_EQ(campaign->status, "done");
  EXPECT_NE(campaign->message.find("evaluations 10/10"), std::string::npos) << campaign->message;
  auto evals = store->CampaignEvaluations(*id, "");
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 10u);
  std::set<std::string> knobs;
  for (const auto& e : *evals) {
    EXPECT_EQ(e.verdict, "not_run") << e.message;  // compiled, plan valid, nothing ran
    EXPECT_EQ(e.agent, "tuner");
    EXPECT_EQ(e.time_us, 0);
    knobs.insert(e.knobs_json);
  }
  EXPECT_EQ(knobs.size(), 10u) << "the tuner never repeats a setting";
  // The seed is the hand-tuned kernel.
  auto seed = store->GetKernel((*evals)[0].kernel_id);
  ASSERT_TRUE(seed.ok());
  EXPECT_NE(seed->origin.find("kernels/mxfp8_quantize_rowwise/kernel.cu"), std::string::npos)
      << seed->origin;
  EXPECT_TRUE(store->Leaderboard("")->empty()) << "nothing that did not run may be ranked";

  auto status = CampaignStatusJson(*store, *id);
  ASSERT_TRUE(status.ok()) << status.status().message();
  json j = json::parse(*status);
  EXPECT_EQ(j["spent"]["evaluations"], 10);
  EXPECT_EQ(j["budget"]["evaluations"], 10);
  ASSERT_EQ(j["agents"].size(), 1u);
  EXPECT_EQ(j["agents"][0]["agent"], "tuner");
  EXPECT_EQ(j["agents"][0]["verdicts"]["not_run"], 10);
  EXPECT_EQ(j["agents"][0]["attempts"], 3);  // 4 + 4 + 2
  EXPECT_EQ(j["problems"][0]["problem"], "mxfp8_quantize_rowwise");
  EXPECT_TRUE(CampaignStatusText(*store, *id).ok());
}

// A run timed with other than the protocol's iteration count (`eval --iterations`, for quick
// tables of slow baselines) or on fixed inputs (`eval --input-seed`) is kept but never ranked;
// the same result timed by the protocol on fresh inputs is.
TEST_F(CampaignTest, ResultsTimedOutsideTheProtocolAreNotRanked) {
  auto spec = LoadProblem(kSourceDir + "/problems/mxfp8_quantize_rowwise/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  fs::create_directories(dir_ / "ws");
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  EvalRequest req;
  req.spec = &*spec;
  req.source = kKnobKernel;
  req.include_hidden = true;
  EvalResult r;
  r.verdict = Verdict::kOk;
  r.device = FakeDevice();
  r.ran_on_gpu = true;
  r.geomean_us = 100;
  r.sol_fraction = 0.9;
  req.timing_iterations = 20;
  auto quick = RecordEvaluation(*store, req, r, RecordContext{}, 1);
  ASSERT_TRUE(quick.ok()) << quick.status().message();
  EXPECT_FALSE(quick->ranked);
  EXPECT_TRUE(store->Leaderboard("")->empty());
  req.timing_iterations = 0;
  req.include_bench = false;  // e.g. a deep-mode check of the test shapes
  auto unbenched = RecordEvaluation(*store, req, r, RecordContext{}, 1);
  ASSERT_TRUE(unbenched.ok()) << unbenched.status().message();
  EXPECT_FALSE(unbenched->ranked);
  EXPECT_TRUE(store->Leaderboard("")->empty());
  req.include_bench = true;
  req.input_seed = 7;  // a paired comparison's fixed inputs (`eval --input-seed`)
  auto paired = RecordEvaluation(*store, req, r, RecordContext{}, 1);
  ASSERT_TRUE(paired.ok()) << paired.status().message();
  EXPECT_FALSE(paired->ranked);
  EXPECT_TRUE(store->Leaderboard("")->empty());
  req.input_seed.reset();
  auto full = RecordEvaluation(*store, req, r, RecordContext{}, 1);
  ASSERT_TRUE(full.ok()) << full.status().message();
  EXPECT_TRUE(full->ranked);
  EXPECT_EQ(store->Leaderboard("")->size(), 1u);
}

// The planner with a fake evaluator: the problem far from speed-of-light gets most of the
// budget, the tuner finds the fake cost model's optimum, and only evaluations with hidden shapes
// are ranked.
TEST_F(CampaignTest, PlannerSpendsWhereTheHeadroomIs) {
  MakeProblems({"far", "near"});
  CampaignConfig c;
  c.budget.evaluations = 120;
  c.tuner_batch = 6;
  CampaignEnv env = FakeEnv();
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto far = store->CampaignEvaluations(*id, "far");
  auto near = store->CampaignEvaluations(*id, "near");
  ASSERT_TRUE(far.ok() && near.ok());
  EXPECT_EQ(far->size() + near->size(), 120u);
  // While both are active, most evaluations go to the problem with the headroom; once "far"
  // sits at its optimum and stalls, the rest goes to "near".
  auto all = store->CampaignEvaluations(*id, "");
  ASSERT_TRUE(all.ok());
  int first_far = 0, first_near = 0;
  for (size_t i = 0; i < 48 && i < all->size(); ++i)
    ((*all)[i].problem == "far" ? first_far : first_near)++;
  EXPECT_GT(first_far, 2 * first_near) << first_far << " vs " << first_near;
  EXPECT_GT(near->size(), 0u);

  auto lb = store->Leaderboard("far");
  ASSERT_TRUE(lb.ok());
  ASSERT_EQ(lb->size(), 1u);
  EXPECT_DOUBLE_EQ((*lb)[0].time_us, 30.0);  // the optimum of FakeTime
  EXPECT_EQ(json::parse((*lb)[0].knobs_json), json({{"A", 4}, {"B", 1}, {"C", 3}}));
  EXPECT_EQ((*lb)[0].agent, "tuner");
  EXPECT_FALSE((*lb)[0].flagged) << (*lb)[0].flag_reason;  // the reviewer's rule check passed
  double gpu = 0;
  for (const auto& e : *far) gpu += e.gpu_seconds;
  EXPECT_GE(gpu, 0);
}

// --confirm-runs: the seed's first run is lucky (0.75x its time). With confirmation its later
// runs bring its median back to its true time and the tuner's best setting leads, timed as often
// as asked; without it the lucky run holds first place.
TEST_F(CampaignTest, ALuckyRunDoesNotHoldFirstPlace) {
  MakeProblems({"far"});
  const std::map<std::string, int64_t> seed = {{"A", 2}, {"B", 2}, {"C", 2}};
  for (int confirm : {3, 0}) {
    SCOPED_TRACE(confirm);
    fs::remove_all(dir_ / "ws");
    CampaignConfig c;
    c.budget.evaluations = 60;
    c.tuner_batch = 6;
    c.confirm_runs = confirm;
    CampaignEnv env = FakeEnv();
    auto timed = std::make_shared<int>(0);
    env.evaluate = [timed](const EvalRequest& req, const EvaluatorOptions& o) {
      Result<EvalResult> r = FakeEvaluate(req, o);
      if (r.ok() && r->verdict == Verdict::kOk && (*timed)++ == 0) {
        r->geomean_us *= 0.75;
        r->sol_fraction /= 0.75;
      }
      return r;
    };
    Result<int64_t> id = StartCampaign(c, env);
    ASSERT_TRUE(id.ok()) << id.status().message();
    auto store = OpenStore();
    ASSERT_NE(store, nullptr);
    auto lb = store->Leaderboard("far");
    ASSERT_TRUE(lb.ok() && lb->size() == 1u);
    const LeaderboardEntry& top = (*lb)[0];
    const auto knobs = json::parse(top.knobs_json).get<std::map<std::string, int64_t>>();
    // `campaign status` names the same best, at the same median.
    auto status = CampaignStatusJson(*store, *id);
    ASSERT_TRUE(status.ok());
    const json best = json::parse(*status)["problems"][0]["best"];
    EXPECT_EQ(best["evaluation_id"], top.evaluation_id);
    EXPECT_DOUBLE_EQ(best["time_us"].get<double>(), top.time_us);
    if (confirm == 0) {
      EXPECT_EQ(knobs, seed);
      EXPECT_DOUBLE_EQ(top.time_us, FakeTime("far", seed) * 0.75);
      EXPECT_EQ(top.evaluations, 1);
      continue;
    }
    EXPECT_NE(knobs, seed);
    EXPECT_GE(top.evaluations, 3);
    EXPECT_DOUBLE_EQ(top.time_us, FakeTime("far", knobs));
    // The seed was timed to three runs while it led: median 33.25 us, its true time.
    auto evals = store->CampaignEvaluations(*id, "far");
    ASSERT_TRUE(evals.ok());
    int seed_runs = 0, confirms = 0;
    for (const auto& e : *evals) {
      if (e.verdict == "ok" && e.time_us > 0 &&
          json::parse(e.knobs_json).get<std::map<std::string, int64_t>>() == seed)
        ++seed_runs;
      confirms += e.purpose == "confirm";
    }
    EXPECT_EQ(seed_runs, 3);
    EXPECT_GE(confirms, 4);  // two for the seed, two for the leader
    EXPECT_LE(evals->size(), 60u) << "confirmations count against the budget";
  }
}

// knob_scope reaches the tuner: a knob that only the floor setting reads stays at its default in
// an rceil campaign, so the 5 x 3 space is searched as its 5 distinct binaries.
TEST_F(CampaignTest, TunerHoldsOutOfScopeKnobsAtTheirDefaults) {
  MakeProblems({"far"});
  std::ofstream(dir_ / "kernels" / "far" / "kernel.cu") << R"P(/* warpsmith:plan
{ "knobs":  { "A": [2, 0, 1, 3, 4], "Z": [0, 1, 2] },
  "knob_scope": { "Z": "rounding == 1" },
  "launch": [ { "kernel": "k", "grid": ["ceil_div(M * K, 256)"], "block": ["256"],
                "smem": "0", "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void k(const unsigned short* x, unsigned char* q, unsigned char* s, int M,
                             int K) {}
)P";
  CampaignConfig c;
  c.budget.evaluations = 15;
  c.tuner_batch = 5;
  CampaignEnv env = FakeEnv();
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto evals = store->CampaignEvaluations(*id, "far");
  ASSERT_TRUE(evals.ok());
  std::set<std::string> settings;
  for (const auto& e : *evals) {
    if (e.agent != "tuner")
      continue;
    json k = json::parse(e.knobs_json);
    EXPECT_EQ(k.value("Z", 0), 0) << e.knobs_json;
    settings.insert(e.knobs_json);
  }
  EXPECT_EQ(settings.size(), 5u) << "every A, with Z at its default";
}

// kill -9 mid-campaign: every committed evaluation survives, resume counts the spent budget
// from the store and continues the search without repeating a setting.
TEST_F(CampaignTest, KillAndResume) {
  MakeProblems({"far"});
  CampaignConfig c;
  c.budget.evaluations = 30;
  c.tuner_batch = 5;
  c.compile_threads = 2;

  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child never returns into GoogleTest.
    CampaignEnv env = FakeEnv();
    env.evaluate = [](const EvalRequest& req, const EvaluatorOptions& o) -> Result<EvalResult> {
      if (!req.compile_only)
        std::this_thread::sleep_for(std::chrono::milliseconds(40));
      return FakeEvaluate(req, o);
    };
    Result<int64_t> id = StartCampaign(c, env);
    ::_exit(id.ok() ? 0 : 1);
  }
  // Wait for some committed evaluations, then kill it mid-step.
  int64_t before = 0;
  for (int i = 0; i < 400 && before < 12; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    auto s = Store::Open((dir_ / "ws" / "warpsmith.db").string());
    if (!s.ok())
      continue;
    auto latest = (*s)->LatestCampaign();
    if (latest.ok() && *latest) {
      auto spend = (*s)->Spend((*latest)->id);
      if (spend.ok())
        before = spend->evaluations;
    }
  }
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto latest = store->LatestCampaign();
  ASSERT_TRUE(latest.ok() && *latest);
  const int64_t id = (*latest)->id;
  EXPECT_EQ((*latest)->status, "running");  // as the killed process left it
  auto killed = store->CampaignEvaluations(id, "");
  ASSERT_TRUE(killed.ok());
  ASSERT_GE(killed->size(), static_cast<size_t>(before));
  ASSERT_LT(killed->size(), 30u);

  CampaignEnv env = FakeEnv();
  ASSERT_TRUE(RunCampaign(id, env).ok());

  auto after = store->CampaignEvaluations(id, "");
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->size(), 30u) << "the budget continues from what the store holds";
  for (size_t i = 0; i < killed->size(); ++i) {
    EXPECT_EQ((*after)[i].id, (*killed)[i].id);
    EXPECT_EQ((*after)[i].knobs_json, (*killed)[i].knobs_json);
  }
  std::set<std::string> settings;
  size_t tuned = 0;  // the leader's confirmations (--confirm-runs) repeat a setting on purpose
  for (const auto& e : *after) {
    if (e.purpose != "confirm") {
      settings.insert(e.knobs_json);
      ++tuned;
    }
  }
  EXPECT_EQ(settings.size(), tuned) << "resume does not repeat settings";
  EXPECT_LT(tuned, after->size()) << "the leader was timed again";
  EXPECT_EQ(store->GetCampaign(id)->status, "done");
  EXPECT_NE(store->GetCampaign(id)->message.find("evaluations 30/30"), std::string::npos);
  auto attempts = store->Attempts(id, "");
  ASSERT_TRUE(attempts.ok());
  for (const auto& a : *attempts) EXPECT_NE(a.status, "running");
}

// An LLM worker against a scripted endpoint: a malformed tool call, a timing run (not ranked:
// no hidden shapes), an accepted submission (ranked), the reviewer's flag; then the endpoint
// fails: each attempt ends with the error recorded, the campaign goes on until the problem
// stalls, and tokens and cost are accounted per agent.
TEST_F(CampaignTest, LlmWorkerAgainstAScriptedEndpoint) {
  MakeProblems({"far"});
  auto script = std::make_shared<Script>();
  std::string good = kKnobKernel;
  script->replies.push_back(ToolReply("compile", "{\"source\": 12"));  // malformed
  script->replies.push_back(ToolReply("time", json{{"source", good}}.dump()));
  script->replies.push_back(
      ToolReply("submit", json{{"source", good}, {"knobs", {{"A", 4}}}}.dump()));
  script->replies.push_back(
      TextReply("Looks fine, but it reads %globaltimer?\nVERDICT: flag: "
                "suspicious timer use"));
  // Then the script runs dry: every further call fails like a dead endpoint.

  CampaignConfig c;
  c.agents = {*ParseAgent("openai:fake-model")};
  c.base_url = "http://127.0.0.1:1";
  c.prices["openai:fake-model"] = {2, 8, 0.5};
  c.budget.evaluations = 50;
  c.budget.wall_seconds = 60;
  CampaignEnv env = FakeEnv();
  env.make_client = [&](const AgentSpec& a,
                        const LlmConfig& cfg) -> Result<std::unique_ptr<LlmClient>> {
    EXPECT_EQ(a.model, "fake-model");
    EXPECT_EQ(cfg.model, "fake-model");
    EXPECT_EQ(cfg.base_url, "http://127.0.0.1:1");
    EXPECT_DOUBLE_EQ(cfg.prices.output_per_mtok, 8) << "the client prices the tokens";
    return std::unique_ptr<LlmClient>(new ScriptedClient(script));
  };
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();

  auto store = OpenStore();
  ASSERT_NE(store, nullptr);
  auto campaign = store->GetCampaign(*id);
  EXPECT_EQ(campaign->status, "done");
  EXPECT_NE(campaign->message.find("stalled"), std::string::npos) << campaign->message;

  auto evals = store->CampaignEvaluations(*id, "");
  ASSERT_TRUE(evals.ok());
  // The malformed call never reached the evaluator; the flagged leader is not timed again.
  ASSERT_EQ(evals->size(), 2u);
  EXPECT_EQ((*evals)[0].purpose, "time");
  EXPECT_EQ((*evals)[0].time_us, 0) << "without hidden shapes nothing is ranked";
  EXPECT_EQ((*evals)[1].purpose, "submit");
  EXPECT_DOUBLE_EQ((*evals)[1].time_us, FakeTime("far", {{"A", 4}, {"B", 2}, {"C", 2}}));
  EXPECT_TRUE((*evals)[1].flagged);
  EXPECT_NE((*evals)[1].flag_reason.find("suspicious timer"), std::string::npos);

  auto attempts = store->Attempts(*id, "");
  ASSERT_TRUE(attempts.ok());
  ASSERT_GE(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[0].status, "submitted");
  EXPECT_EQ((*attempts)[0].best_evaluation_id, (*evals)[1].id);
  EXPECT_EQ((*attempts)[1].status, "error");
  EXPECT_NE((*attempts)[1].message.find("HTTP 503"), std::string::npos) << (*attempts)[1].message;

  // The model saw the evaluator's feedback and an error for the malformed call, never a
  // hidden shape's dimensions.
  ASSERT_GE(script->requests.size(), 3u);
  const auto& third = script->requests[2].messages;
  bool saw_error = false;
  for (const auto& m : third) {
    if (m.role == ChatMessage::Role::kTool && m.content.find("error:") == 0)
      saw_error = true;
  }
  EXPECT_TRUE(saw_error);
  EXPECT_EQ(script->requests[0].messages[1].content.find("hidden\":"), std::string::npos);
  EXPECT_NE(script->requests[0].messages[1].content.find("Hidden shapes: 5"), std::string::npos);

  auto status = CampaignStatusJson(*store, *id);
  ASSERT_TRUE(status.ok());
  json j = json::parse(*status);
  ASSERT_EQ(j["agents"].size(), 1u);
  const json& a = j["agents"][0];
  EXPECT_EQ(a["agent"], "openai:fake-model");
  EXPECT_EQ(a["attempts"], static_cast<int64_t>(attempts->size()));
  EXPECT_EQ(a["input_tokens"], 3 * 1000 + 500);  // three worker turns and the review
  EXPECT_EQ(a["output_tokens"], 3 * 200 + 20);
  EXPECT_NEAR(a["cost_usd"].get<double>(), 0.035, 1e-9);
  EXPECT_EQ(a["verdicts"]["ok"], 2);
  EXPECT_TRUE(j["problems"][0]["best"]["flagged"].get<bool>());
  // The review is counted to the problem whose winner it read.
  EXPECT_EQ(j["problems"][0]["tokens"], 3 * 1200 + 520);
  EXPECT_NEAR(j["problems"][0]["dollars"].get<double>(), 0.035, 1e-9);
  auto text = CampaignStatusText(*store, *id);
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("cost $"), std::string::npos) << *text;
}

TEST_F(CampaignTest, ADollarsBudgetNeedsEveryLlmAgentsPrice) {
  CampaignConfig c;
  c.agents = {*ParseAgent("tuner"), *ParseAgent("openai:m"), *ParseAgent("anthropic:a")};
  c.budget.dollars = 5;
  c.compile_only = true;
  CampaignEnv env = FakeEnv();
  env.make_client = [](const AgentSpec&, const LlmConfig&) -> Result<std::unique_ptr<LlmClient>> {
    return Status::Error("not reached");
  };
  c.prices["openai:m"] = *ParsePrices("2,8");
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_FALSE(id.ok()) << "anthropic:a would spend dollars no budget counts";
  EXPECT_NE(id.status().message().find("--price anthropic:a=IN,OUT"), std::string::npos)
      << id.status().message();
  c.prices["anthropic:b"] = *ParsePrices("3,15");
  id = StartCampaign(c, env);
  ASSERT_FALSE(id.ok());
  EXPECT_NE(id.status().message().find("--price anthropic:b: not an agent of this campaign"),
            std::string::npos)
      << id.status().message();
  EXPECT_FALSE(fs::exists(dir_ / "ws" / "warpsmith.db")) << "refused before anything was recorded";
}

TEST(PriceTest, AnAgentsPricesAndOutputLimitTravelWithTheCampaign) {
  auto p = ParseAgentPrice("anthropic:claude-x=3,15,0.3,3.75");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->first, "anthropic:claude-x");
  EXPECT_DOUBLE_EQ(p->second.cache_write_per_mtok, 3.75);
  for (const char* bad : {"anthropic:claude-x", "=1,2", "tuner=1,2", "gemini:x=1,2",
                          "openai:m=1", "openai:m=1,2,3,4,5"}) {
    EXPECT_FALSE(ParseAgentPrice(bad).ok()) << bad;
  }
  EXPECT_NE(ParseAgentPrice("openai:m=1").status().message().find("--price openai:m"),
            std::string::npos);

  CampaignConfig c;
  c.agents = {*ParseAgent("anthropic:claude-x")};
  c.prices[p->first] = p->second;
  c.max_output_tokens = 32768;
  auto round = ParseCampaignConfig(CampaignConfigJson(c));
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_EQ(round->max_output_tokens, 32768);
  EXPECT_FALSE(ParseCampaignConfig(R"({"max_output_tokens": 100})").ok());
  ASSERT_EQ(round->prices.count("anthropic:claude-x"), 1u) << "a resumed campaign keeps them";
  const Prices& q = round->prices.at("anthropic:claude-x");
  EXPECT_DOUBLE_EQ(q.input_per_mtok, 3);
  EXPECT_DOUBLE_EQ(q.output_per_mtok, 15);
  EXPECT_DOUBLE_EQ(q.cached_input_per_mtok, 0.3);
  EXPECT_DOUBLE_EQ(q.cache_write_per_mtok, 3.75);
  EXPECT_FALSE(ParseCampaignConfig(R"({"prices": {"openai:m": [1, 2]}})").ok());
}

TEST(BudgetTest, ParsesKeysAndDurations) {
  auto b = ParseBudget("evaluations=40,tokens=2e6,dollars=5.5,gpu=10m,wall=1h");
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(*b->evaluations, 40);
  EXPECT_EQ(*b->tokens, 2000000);
  EXPECT_DOUBLE_EQ(*b->dollars, 5.5);
  EXPECT_DOUBLE_EQ(*b->gpu_seconds, 600);
  EXPECT_DOUBLE_EQ(*b->wall_seconds, 3600);
  EXPECT_FALSE(ParseBudget("evaluations").ok());
  EXPECT_FALSE(ParseBudget("bananas=3").ok());
  EXPECT_FALSE(ParseBudget("wall=-1m").ok());
  EXPECT_TRUE(ParseBudget("").ok());

  CampaignSpend s;
  s.evaluations = 40;
  EXPECT_EQ(BudgetExhausted(*b, s), "evaluations 40/40");
  s.evaluations = 3;
  EXPECT_EQ(BudgetExhausted(*b, s), "");
  s.wall_seconds = 3600;
  EXPECT_NE(BudgetExhausted(*b, s).find("wall time"), std::string::npos);

  EXPECT_TRUE(ParseAgent("tuner").ok());
  EXPECT_EQ(ParseAgent("anthropic:claude-x")->name(), "anthropic:claude-x");
  EXPECT_FALSE(ParseAgent("openai").ok());
  EXPECT_FALSE(ParseAgent("gemini:x").ok());

  CampaignConfig c;
  c.agents = {*ParseAgent("openai:m")};
  c.budget = *b;
  auto round = ParseCampaignConfig(CampaignConfigJson(c));
  ASSERT_TRUE(round.ok()) << round.status().message();
  EXPECT_EQ(round->agents[0].name(), "openai:m");
  EXPECT_EQ(*round->budget.tokens, 2000000);
}

}  // namespace
}  // namespace ws
