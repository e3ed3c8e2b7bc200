// A compile-only campaign end to end against the loopback fixture server, for both providers: the
// real `warpsmith` binary runs `campaign start --agent PROVIDER:fixture-model --base-url ...
// --compile-only` against tests/fixture/transcripts/campaign_compile_only_faults.json (a 429 with
// retry-after 0, a tool call with malformed arguments, a kernel that does not compile, the
// baseline compiled and submitted). Checked: the exit status, `campaign status --json` (attempts,
// verdicts, tokens, cost), the empty leaderboard, and what the client sent the fixture (the key,
// the retry, every tool result sent back under its call's id). No GPU, loopback only.
#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sandbox/sandbox.h"
#include "tests/fixture/fixture_server.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kKey = "fixture-key";
constexpr const char* kProblem = "mxfp8_quantize_rowwise";

struct Provider {
  std::string name;  // "openai", "anthropic"
  std::string key_env;
  std::string path;  // where its requests go on the fixture
};

void PrintTo(const Provider& p, std::ostream* os) {
  *os << p.name;
}

std::string ParamName(const testing::TestParamInfo<Provider>& info) {
  return info.param.name;
}

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// One exchange as the client sent it back: the ids of the tool calls in the last assistant
// message, and the tool results that follow it (id, text).
struct ToolExchange {
  std::vector<std::string> call_ids;
  std::vector<std::pair<std::string, std::string>> results;
};

std::string Text(const json& content) {
  if (content.is_string())
    return content.get<std::string>();
  std::string t;  // Anthropic's content may be a list of text blocks
  if (content.is_array()) {
    for (const auto& b : content)
      if (b.is_object() && b.value("type", "") == "text")
        t += b.value("text", "");
  }
  return t;
}

ToolExchange LastToolExchange(const json& body, const std::string& provider) {
  ToolExchange x;
  const json& msgs = body.at("messages");
  size_t last = msgs.size();
  for (size_t i = 0; i < msgs.size(); ++i)
    if (msgs[i].value("role", "") == "assistant")
      last = i;
  if (last == msgs.size())
    return x;
  const json& a = msgs[last];
  if (provider == "openai") {
    for (const auto& c : a.value("tool_calls", json::array()))
      x.call_ids.push_back(c.value("id", ""));
    for (size_t i = last + 1; i < msgs.size(); ++i) {
      if (msgs[i].value("role", "") == "tool")
        x.results.emplace_back(msgs[i].value("tool_call_id", ""), Text(msgs[i]["content"]));
    }
  } else {
    if (a.contains("content") && a["content"].is_array()) {
      for (const auto& b : a["content"])
        if (b.value("type", "") == "tool_use")
          x.call_ids.push_back(b.value("id", ""));
    }
    for (size_t i = last + 1; i < msgs.size(); ++i) {
      if (msgs[i].value("role", "") != "user" || !msgs[i]["content"].is_array())
        continue;
      for (const auto& b : msgs[i]["content"]) {
        if (b.value("type", "") == "tool_result")
          x.results.emplace_back(b.value("tool_use_id", ""), Text(b["content"]));
      }
    }
  }
  return x;
}

class CampaignFixtureTest : public testing::TestWithParam<Provider> {
 protected:
  void SetUp() override {
    dir_ = fs::path(testing::TempDir()) /
           ("ws_campaign_fixture_" + std::to_string(::getpid()) + "_" + GetParam().name);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  CliRun Warpsmith(std::vector<std::string> args) {
    SandboxSpec spec;
    spec.argv = {std::string(WS_BINARY_DIR) + "/warpsmith", "--workspace", (dir_ / "ws").string(),
                 "--problems-dir", std::string(WS_SOURCE_DIR) + "/problems"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    // The fixture's key; and loopback must never go through a proxy.
    spec.env_set = {{GetParam().key_env, kKey},
                    {"no_proxy", "127.0.0.1,localhost"},
                    {"NO_PROXY", "127.0.0.1,localhost"}};
    spec.limits.wall_seconds = 60;
    auto r = RunSandboxed(spec);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok())
      return {};
    EXPECT_FALSE(r->signaled) << r->Describe() << "\n" << r->stdout_data << r->stderr_data;
    EXPECT_FALSE(r->timed_out) << r->Describe();
    return {r->signaled ? -1 : r->exit_code, r->stdout_data, r->stderr_data};
  }

  fs::path dir_;
};

TEST_P(CampaignFixtureTest, CompileOnlyCampaignEndToEnd) {
  const Provider& p = GetParam();
  auto script = fixture::LoadTranscript(
      std::string(WS_SOURCE_DIR) + "/tests/fixture/transcripts/campaign_compile_only_faults.json",
      WS_SOURCE_DIR);
  ASSERT_TRUE(script.ok()) << script.status().message();
  fixture::FixtureOptions fopts;
  fopts.api_key = kKey;
  auto server = fixture::FixtureServer::Start(*script, fopts);
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string base_url =
      p.name == "openai" ? (*server)->openai_base_url() : (*server)->anthropic_base_url();

  CliRun start =
      Warpsmith({"campaign", "start", "--problems", kProblem, "--agent", p.name + ":fixture-model",
                 "--base-url", base_url, "--price", p.name + ":fixture-model=2,10,0.5,2.5",
                 "--budget", "evaluations=3,dollars=100", "--compile-only"});
  ASSERT_EQ(start.exit_code, 0) << start.out << start.err;
  (*server)->Stop();

  // ---- What the store says -----------------------------------------------------------------
  CliRun status = Warpsmith({"campaign", "status", "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  json j = json::parse(status.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << status.out;
  EXPECT_EQ(j["status"], "done") << j["message"];
  EXPECT_NE(j["message"].get<std::string>().find("evaluations 3/3"), std::string::npos)
      << j["message"];
  EXPECT_EQ(j["config"]["compile_only"], true);
  EXPECT_EQ(j["spent"]["evaluations"], 3);
  EXPECT_EQ(j["spent"]["gpu_seconds"], 0);

  ASSERT_EQ(j["agents"].size(), 1u) << j["agents"].dump();
  const json& a = j["agents"][0];
  EXPECT_EQ(a["agent"], p.name + ":fixture-model");
  EXPECT_EQ(a["attempts"], 1);
  // The malformed call never reached the evaluator; the broken kernel did and failed to
  // compile; the baseline's compile and its submission were compiled and not run.
  EXPECT_EQ(a["verdicts"], json({{"compile_error", 1}, {"not_run", 2}})) << a.dump();
  // The four answered turns of the transcript (the 429 carries no usage). Input tokens include
  // the cached ones (Anthropic sends those apart, as cache_read_input_tokens).
  EXPECT_EQ(a["input_tokens"], 2000 + 2200 + 2600 + 3600);
  EXPECT_EQ(a["output_tokens"], 40 + 120 + 900 + 850);
  // At --price 2,10,0.5,2.5: cache reads at 0.5, writes (Anthropic reports them; OpenAI's cache
  // costs nothing to fill) at 2.5, the rest of the input at 2, output at 10 USD per million.
  const double read = 2000 + 2200 + 2600;
  const double written = p.name == "anthropic" ? 2000 + 200 + 400 + 1000 : 0;
  const double cost = ((2000 + 2200 + 2600 + 3600 - read - written) * 2 + read * 0.5 +
                       written * 2.5 + (40 + 120 + 900 + 850) * 10) /
                      1e6;
  EXPECT_NEAR(a["cost_usd"].get<double>(), cost, 1e-12);
  EXPECT_EQ(j["spent"]["tokens"], 2000 + 2200 + 2600 + 3600 + 40 + 120 + 900 + 850);
  EXPECT_NEAR(j["spent"]["dollars"].get<double>(), cost, 1e-12);

  ASSERT_EQ(j["problems"].size(), 1u);
  EXPECT_EQ(j["problems"][0]["problem"], kProblem);
  EXPECT_EQ(j["problems"][0]["attempts"], 1);
  EXPECT_EQ(j["problems"][0]["evaluations"], 3);
  EXPECT_EQ(j["problems"][0]["tokens"], j["spent"]["tokens"]) << "one problem: all of it";
  EXPECT_NEAR(j["problems"][0]["dollars"].get<double>(), cost, 1e-12);
  EXPECT_TRUE(j["problems"][0]["best"].is_null()) << "compile-only: nothing is ranked";

  CliRun board = Warpsmith({"leaderboard", "--json"});
  ASSERT_EQ(board.exit_code, 0) << board.err;
  EXPECT_EQ(json::parse(board.out, nullptr, false), json::array()) << board.out;

  // ---- What the client sent --------------------------------------------------------------
  // The 429 and its retry, then one request per tool exchange; nothing after the accepted
  // submission spent the budget.
  const auto reqs = (*server)->requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ((*server)->turns_served(), 5);
  std::vector<json> bodies;
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(reqs[i].method, "POST");
    EXPECT_EQ(reqs[i].target, p.path);
    EXPECT_EQ(reqs[i].turn, static_cast<int>(i));
    if (p.name == "openai") {
      EXPECT_EQ(reqs[i].headers.count("authorization") ? reqs[i].headers.at("authorization") : "",
                std::string("Bearer ") + kKey);
    } else {
      EXPECT_EQ(reqs[i].headers.count("x-api-key") ? reqs[i].headers.at("x-api-key") : "", kKey);
    }
    bodies.push_back(json::parse(reqs[i].body, nullptr, false));
    ASSERT_FALSE(bodies.back().is_discarded());
    EXPECT_EQ(bodies.back()["model"], "fixture-model");
  }
  // The retry after the 429 is the same request.
  EXPECT_EQ(bodies[0], bodies[1]);
  if (p.name == "anthropic") {
    // The worker's turns mark the prompt for Anthropic's cache: the system prompt and the end of
    // the conversation, so each turn reads the previous one's prefix.
    for (const json& b : bodies) {
      EXPECT_EQ(b["system"][0]["cache_control"]["type"], "ephemeral") << b["system"].dump();
      EXPECT_EQ(b["messages"].back()["content"].back()["cache_control"]["type"], "ephemeral");
    }
  }
  // The task names the problem (never a hidden shape's dimensions); the tools are offered.
  const std::string first = bodies[0]["messages"].dump() + bodies[0].value("system", json()).dump();
  EXPECT_NE(first.find(kProblem), std::string::npos);
  EXPECT_NE(first.find("Hidden shapes: "), std::string::npos);
  std::vector<std::string> tools;
  for (const auto& t : bodies[0]["tools"])
    tools.push_back((p.name == "openai" ? t["function"]["name"] : t["name"]).get<std::string>());
  for (const char* t : {"compile", "check", "time", "resource_report", "sass_summary", "submit"})
    EXPECT_NE(std::find(tools.begin(), tools.end(), t), tools.end()) << t;

  // Every tool call's result goes back under its call's id, with the evaluator's feedback.
  const std::vector<std::pair<int, std::vector<std::string>>> expected = {
      {2, {"error: ", "not a JSON object"}},
      {3, {"verdict: compile_error", "fixture_undefined_function"}},
      {4, {"verdict: not_run", "registers"}},
  };
  for (const auto& [i, needles] : expected) {
    SCOPED_TRACE("request " + std::to_string(i));
    ToolExchange x = LastToolExchange(bodies[i], p.name);
    ASSERT_EQ(x.call_ids.size(), 1u) << bodies[i]["messages"].dump();
    ASSERT_EQ(x.results.size(), 1u) << "the tool result was not sent back";
    EXPECT_FALSE(x.call_ids[0].empty());
    EXPECT_EQ(x.results[0].first, x.call_ids[0]);
    for (const auto& n : needles)
      EXPECT_NE(x.results[0].second.find(n), std::string::npos)
          << n << " in: " << x.results[0].second;
    // The conversation grows: the earlier exchanges are still there.
    EXPECT_EQ(bodies[i]["messages"].size(), bodies[i - 1]["messages"].size() + 2);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Providers, CampaignFixtureTest,
    testing::Values(Provider{"openai", "OPENAI_API_KEY", "/v1/chat/completions"},
                    Provider{"anthropic", "ANTHROPIC_API_KEY", "/v1/messages"}),
    ParamName);

}  // namespace
}  // namespace ws
