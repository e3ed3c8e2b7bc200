// The LLM clients against the loopback fixture server (tests/fixture): protocol conformance of our
// clients, both providers, streamed and not. These say nothing about live provider behaviour.
#include <stdlib.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agents/agents.h"
#include "agents/llm_http.h"
#include "tests/fixture/fixture_server.h"

namespace ws {
namespace {

using fixture::FixtureOptions;
using fixture::FixtureServer;
using fixture::RecordedRequest;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::unique_ptr<FixtureServer> Serve(const json& script, FixtureOptions opts = {}) {
  auto s = FixtureServer::Start(script, opts);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

struct Mode {
  std::string provider;
  bool stream;
};

std::string ModeName(const testing::TestParamInfo<Mode>& m) {
  return m.param.provider + (m.param.stream ? "Streamed" : "Plain");
}

LlmConfig Config(const Mode& m, const FixtureServer& s) {
  LlmConfig cfg;
  cfg.provider = m.provider;
  cfg.model = "fixture-model";
  cfg.base_url = m.provider == "openai" ? s.openai_base_url() : s.anthropic_base_url();
  cfg.api_key = "test-key";
  cfg.stream = m.stream;
  cfg.max_attempts = 4;
  cfg.initial_backoff_s = 0.01;  // tiny backoffs: the tests wait only where retry-after says so
  cfg.max_backoff_s = 0.05;
  cfg.connect_timeout_s = 5;
  cfg.stall_timeout_s = 0.5;
  cfg.total_timeout_s = 30;
  return cfg;
}

std::unique_ptr<LlmClient> Client(const LlmConfig& cfg) {
  auto c = MakeLlmClient(cfg);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

ChatRequest Hello() {
  ChatRequest req;
  req.messages = {{ChatMessage::Role::kSystem, "You write CUDA kernels.", {}, ""},
                  {ChatMessage::Role::kUser, "Say hello.", {}, ""}};
  req.max_output_tokens = 512;
  req.temperature = 0.5;
  return req;
}

json Body(const RecordedRequest& r) {
  return json::parse(r.body);
}

std::string Header(const RecordedRequest& r, const std::string& name) {
  auto it = r.headers.find(name);
  return it == r.headers.end() ? "" : it->second;
}

class LlmClientTest : public testing::TestWithParam<Mode> {
 protected:
  bool openai() const { return GetParam().provider == "openai"; }
};

INSTANTIATE_TEST_SUITE_P(Modes, LlmClientTest,
                         testing::Values(Mode{"openai", true}, Mode{"openai", false},
                                         Mode{"anthropic", true}, Mode{"anthropic", false}),
                         ModeName);

TEST_P(LlmClientTest, TextReplyWithUsageAndCost) {
  auto server = Serve(json::parse(R"([{"text": "Hello there, kernel writer.",
      "usage": {"input_tokens": 1200, "output_tokens": 300, "cached_input_tokens": 200}}])"));
  LlmConfig cfg = Config(GetParam(), *server);
  cfg.prices = {2.0, 10.0, 0.5};
  auto client = Client(cfg);
  EXPECT_EQ(client->provider(), GetParam().provider);
  auto resp = client->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.role, ChatMessage::Role::kAssistant);
  EXPECT_EQ(resp->message.content, "Hello there, kernel writer.");
  EXPECT_TRUE(resp->message.tool_calls.empty());
  EXPECT_EQ(resp->stop_reason, "stop");
  EXPECT_EQ(resp->attempts, 1);
  EXPECT_EQ(resp->usage.input_tokens, 1200);
  EXPECT_EQ(resp->usage.output_tokens, 300);
  EXPECT_EQ(resp->usage.cached_input_tokens, 200);
  EXPECT_NEAR(resp->usage.cost_usd, (1000 * 2.0 + 200 * 0.5 + 300 * 10.0) / 1e6, 1e-12);

  auto reqs = server->requests();
  ASSERT_EQ(reqs.size(), 1u);
  json body = Body(reqs[0]);
  EXPECT_EQ(body["model"], "fixture-model");
  EXPECT_EQ(body.value("stream", false), GetParam().stream);
  EXPECT_DOUBLE_EQ(body["temperature"].get<double>(), 0.5);
  if (openai()) {
    EXPECT_EQ(reqs[0].target, "/v1/chat/completions");
    EXPECT_EQ(Header(reqs[0], "authorization"), "Bearer test-key");
    EXPECT_EQ(body["max_tokens"], 512);  // not api.openai.com: the older name servers know
    ASSERT_EQ(body["messages"].size(), 2u);
    EXPECT_EQ(body["messages"][0]["role"], "system");
    EXPECT_EQ(body["messages"][0]["content"], "You write CUDA kernels.");
    EXPECT_EQ(body["messages"][1]["role"], "user");
    if (GetParam().stream) {
      EXPECT_EQ(body["stream_options"]["include_usage"], true);
    }
  } else {
    EXPECT_EQ(reqs[0].target, "/v1/messages");
    EXPECT_EQ(Header(reqs[0], "x-api-key"), "test-key");
    EXPECT_EQ(Header(reqs[0], "anthropic-version"), "2023-06-01");
    EXPECT_EQ(body["max_tokens"], 512);
    EXPECT_EQ(body["system"], "You write CUDA kernels.");
    ASSERT_EQ(body["messages"].size(), 1u);
    EXPECT_EQ(body["messages"][0]["role"], "user");
    EXPECT_EQ(body["messages"][0]["content"][0]["text"], "Say hello.");
  }
}

TEST_P(LlmClientTest, PromptCacheWritesAndReadsArePricedApart) {
  auto server = Serve(json::parse(R"([{"text": "cached", "usage": {"input_tokens": 5000,
      "output_tokens": 100, "cached_input_tokens": 3000, "cache_write_input_tokens": 1500}}])"));
  LlmConfig cfg = Config(GetParam(), *server);
  cfg.prices = {3.0, 15.0, 0.3, 3.75};
  ChatRequest req = Hello();
  req.cache_prompt = true;
  auto resp = Client(cfg)->Chat(req, nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->usage.input_tokens, 5000);
  EXPECT_EQ(resp->usage.cached_input_tokens, 3000);
  // OpenAI reports no cache writes: its cache costs nothing extra to fill.
  const int64_t written = openai() ? 0 : 1500;
  EXPECT_EQ(resp->usage.cache_write_input_tokens, written);
  EXPECT_NEAR(resp->usage.cost_usd,
              ((5000 - 3000 - written) * 3.0 + 3000 * 0.3 + written * 3.75 + 100 * 15.0) / 1e6,
              1e-12);
  const json body = Body(server->requests().at(0));
  if (openai()) {
    EXPECT_EQ(body.dump().find("cache_control"), std::string::npos) << "OpenAI caches by itself";
  } else {
    // Breakpoints on the system prompt and at the end of the conversation.
    const json ephemeral = {{"type", "ephemeral"}};
    ASSERT_TRUE(body["system"].is_array()) << body.dump();
    EXPECT_EQ(body["system"][0]["text"], "You write CUDA kernels.");
    EXPECT_EQ(body["system"][0]["cache_control"], ephemeral);
    EXPECT_EQ(body["messages"].back()["content"].back()["cache_control"], ephemeral);
    const std::string text = body.dump();
    int breakpoints = 0;
    for (size_t at = 0; (at = text.find("cache_control", at)) != std::string::npos; ++at)
      ++breakpoints;
    EXPECT_EQ(breakpoints, 2) << "Anthropic allows 4; two cover the whole prefix";
  }
}

TEST(LlmClientOpenAiTest, AModelThatRefusesATemperatureGetsNone) {
  // OpenAI's reasoning models take only their default temperature.
  const json refusal = {{"error",
                         {{"message", "Unsupported value: 'temperature' does not support 0.5 with "
                                      "this model. Only the default (1) value is supported."},
                          {"type", "invalid_request_error"},
                          {"param", "temperature"},
                          {"code", "unsupported_value"}}}};
  auto server = Serve(json::array({{{"fault", "bad_request"}, {"body", refusal.dump()}},
                                   {{"text", "first"}},
                                   {{"text", "second"}},
                                   {{"fault", "bad_request"}}}));
  auto client = Client(Config({"openai", false}, *server));
  auto resp = client->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "first");
  EXPECT_EQ(resp->attempts, 2);
  resp = client->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "second");
  EXPECT_EQ(resp->attempts, 1) << "the client remembers";
  // Any other bad request stays final.
  resp = client->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(IsFinalLlmError(resp.status())) << resp.status().message();
  const auto reqs = server->requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_DOUBLE_EQ(Body(reqs[0])["temperature"].get<double>(), 0.5);
  for (size_t i = 1; i < reqs.size(); ++i)
    EXPECT_FALSE(Body(reqs[i]).contains("temperature")) << i;
}

TEST(PricesTest, ParsesTwoToFourPricesAndRefusesTheRest) {
  auto p = ParsePrices("3,15,0.3,3.75");
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p->input_per_mtok, 3);
  EXPECT_DOUBLE_EQ(p->output_per_mtok, 15);
  EXPECT_DOUBLE_EQ(p->cached_input_per_mtok, 0.3);
  EXPECT_DOUBLE_EQ(p->cache_write_per_mtok, 3.75);
  p = ParsePrices("2,8");
  ASSERT_TRUE(p.ok());
  EXPECT_DOUBLE_EQ(p->cached_input_per_mtok, 0);
  EXPECT_TRUE(ParsePrices("0,0").ok()) << "a local server's tokens are free";
  for (const char* bad : {"", "3", "3,", ",3", "3,15,1,1,1", "3,-1", "3,x", "3,15 ", "nan,1",
                          "inf,1"}) {
    EXPECT_FALSE(ParsePrices(bad).ok()) << "'" << bad << "'";
  }
  EXPECT_NE(ParsePrices("3").status().message().find("IN,OUT"), std::string::npos);
}

TEST(PricesTest, CacheReadsAndWritesFallBackToTheInputPrice) {
  Usage u{.input_tokens = 1000, .output_tokens = 10, .cached_input_tokens = 600,
          .cache_write_input_tokens = 300};
  EXPECT_NEAR(llm::CostUsd(u, {2, 10}), (1000 * 2.0 + 10 * 10.0) / 1e6, 1e-15);
  EXPECT_NEAR(llm::CostUsd(u, {2, 10, 0.2, 2.5}),
              (100 * 2.0 + 600 * 0.2 + 300 * 2.5 + 10 * 10.0) / 1e6, 1e-15);
  u.cache_write_input_tokens = 5000;  // more than the prompt: capped, never negative
  EXPECT_NEAR(llm::CostUsd(u, {2, 10, 0.2, 2.5}), (600 * 0.2 + 400 * 2.5 + 10 * 10.0) / 1e6,
              1e-15);
}

TEST_P(LlmClientTest, StreamSplitIntoTinyChunksAssemblesTheSameReply) {
  // 7-byte HTTP chunks, 1 ms apart: events and JSON arrive cut at every kind of place.
  auto server = Serve(json::parse(R"([{"text": "split\nacross \"many\" chunks", "split": 7,
      "delay_ms": 1, "tool_calls": [{"name": "time", "arguments": {"shape": [4096, 7168]}}]}])"));
  auto resp = Client(Config(GetParam(), *server))->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "split\nacross \"many\" chunks");
  ASSERT_EQ(resp->message.tool_calls.size(), 1u);
  EXPECT_EQ(json::parse(resp->message.tool_calls[0].arguments_json)["shape"][1], 7168);
}

TEST_P(LlmClientTest, ToolCallRoundTrip) {
  auto server = Serve(json::parse(R"([
    {"text": "Let me compile it.", "tool_calls": [{"name": "compile",
       "arguments": {"source": "__global__ void k() {}\n", "arch": "sm_90a"}}]},
    {"text": "It compiles."}])"));
  auto client = Client(Config(GetParam(), *server));
  ChatRequest req = Hello();
  req.tools = {
      {"compile", "Compiles a kernel",
       R"({"type":"object","properties":{"source":{"type":"string"}},"required":["source"]})"}};
  auto first = client->Chat(req, nullptr);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->stop_reason, "tool_calls");
  EXPECT_EQ(first->message.content, "Let me compile it.");
  ASSERT_EQ(first->message.tool_calls.size(), 1u);
  const ToolCall& call = first->message.tool_calls[0];
  EXPECT_EQ(call.name, "compile");
  EXPECT_FALSE(call.id.empty());
  json args = json::parse(call.arguments_json);
  EXPECT_EQ(args["source"], "__global__ void k() {}\n");
  EXPECT_EQ(args["arch"], "sm_90a");

  req.messages.push_back(first->message);
  ChatMessage result;
  result.role = ChatMessage::Role::kTool;
  result.tool_call_id = call.id;
  result.content = "compiled: 0 errors, 32 registers";
  req.messages.push_back(result);
  auto second = client->Chat(req, nullptr);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(second->message.content, "It compiles.");

  auto reqs = server->requests();
  ASSERT_EQ(reqs.size(), 2u);
  json b1 = Body(reqs[0]), b2 = Body(reqs[1]);
  if (openai()) {
    EXPECT_EQ(b1["tools"][0]["type"], "function");
    EXPECT_EQ(b1["tools"][0]["function"]["name"], "compile");
    EXPECT_EQ(b1["tools"][0]["function"]["parameters"]["required"][0], "source");
    const json& msgs = b2["messages"];
    ASSERT_EQ(msgs.size(), 4u);
    EXPECT_EQ(msgs[2]["role"], "assistant");
    EXPECT_EQ(msgs[2]["tool_calls"][0]["id"], call.id);
    EXPECT_EQ(msgs[2]["tool_calls"][0]["function"]["name"], "compile");
    EXPECT_EQ(json::parse(msgs[2]["tool_calls"][0]["function"]["arguments"].get<std::string>()),
              args);
    EXPECT_EQ(msgs[3]["role"], "tool");
    EXPECT_EQ(msgs[3]["tool_call_id"], call.id);
    EXPECT_EQ(msgs[3]["content"], "compiled: 0 errors, 32 registers");
  } else {
    EXPECT_EQ(b1["tools"][0]["name"], "compile");
    EXPECT_EQ(b1["tools"][0]["input_schema"]["required"][0], "source");
    const json& msgs = b2["messages"];
    ASSERT_EQ(msgs.size(), 3u);
    EXPECT_EQ(msgs[1]["role"], "assistant");
    EXPECT_EQ(msgs[1]["content"][0]["type"], "text");
    EXPECT_EQ(msgs[1]["content"][1]["type"], "tool_use");
    EXPECT_EQ(msgs[1]["content"][1]["id"], call.id);
    EXPECT_EQ(msgs[1]["content"][1]["input"], args);
    EXPECT_EQ(msgs[2]["role"], "user");
    EXPECT_EQ(msgs[2]["content"][0]["type"], "tool_result");
    EXPECT_EQ(msgs[2]["content"][0]["tool_use_id"], call.id);
    EXPECT_EQ(msgs[2]["content"][0]["content"], "compiled: 0 errors, 32 registers");
  }
}

TEST_P(LlmClientTest, TransientFaultsAreRetried) {
  for (const char* fault :
       {R"({"fault": "rate_limit", "retry_after": "0"})", R"({"fault": "overloaded"})",
        R"({"fault": "server_error"})", R"({"fault": "server_error", "status": 503})",
        R"({"fault": "error_after_200"})", R"({"fault": "stall"})", R"({"fault": "drop"})",
        R"({"fault": "malformed_json"})"}) {
    SCOPED_TRACE(fault);
    auto server = Serve(json::array({json::parse(fault), {{"text", "ok after the fault"}}}));
    auto client = Client(Config(GetParam(), *server));
    auto resp = client->Chat(Hello(), nullptr);
    ASSERT_TRUE(resp.ok()) << resp.status().message();
    EXPECT_EQ(resp->message.content, "ok after the fault");  // nothing of the cut reply leaks
    EXPECT_EQ(resp->attempts, 2);
    EXPECT_EQ(server->requests().size(), 2u);
  }
}

TEST_P(LlmClientTest, FinalErrorsAreNotRetried) {
  struct Case {
    const char* fault;
    const char* says;
  };
  for (const Case& c : {Case{"insufficient_quota", "quota exhausted"},
                        Case{"auth", "check the API key"}, Case{"bad_request", "HTTP 400"}}) {
    SCOPED_TRACE(c.fault);
    auto server = Serve(json::array({{{"fault", c.fault}}, {{"text", "never sent"}}}));
    auto client = Client(Config(GetParam(), *server));
    auto resp = client->Chat(Hello(), nullptr);
    ASSERT_FALSE(resp.ok());
    EXPECT_TRUE(IsFinalLlmError(resp.status())) << resp.status().message();
    EXPECT_NE(resp.status().message().find("final"), std::string::npos);
    EXPECT_NE(resp.status().message().find(c.says), std::string::npos) << resp.status().message();
    EXPECT_EQ(server->requests().size(), 1u);
  }
}

TEST_P(LlmClientTest, MalformedJsonTwiceIsFinal) {
  auto server = Serve(json::parse(R"([{"fault": "malformed_json", "repeat": 2}, {"text": "x"}])"));
  auto resp = Client(Config(GetParam(), *server))->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(IsFinalLlmError(resp.status())) << resp.status().message();
  EXPECT_NE(resp.status().message().find("malformed JSON"), std::string::npos);
  EXPECT_EQ(server->requests().size(), 2u);
}

TEST_P(LlmClientTest, GivesUpAfterMaxAttemptsWithoutSayingFinal) {
  auto server = Serve(json::parse(R"([{"fault": "overloaded", "repeat": 5}])"));
  LlmConfig cfg = Config(GetParam(), *server);
  cfg.max_attempts = 3;
  auto resp = Client(cfg)->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_FALSE(IsFinalLlmError(resp.status())) << resp.status().message();
  EXPECT_NE(resp.status().message().find("gave up after 3 attempts"), std::string::npos);
  EXPECT_NE(resp.status().message().find("529"), std::string::npos) << resp.status().message();
  EXPECT_EQ(server->requests().size(), 3u);
}

TEST_P(LlmClientTest, RetryAfterIsHonoured) {
  auto server = Serve(json::parse(R"([{"fault": "rate_limit", "retry_after": "1"},
                                      {"fault": "rate_limit", "retry_after": null,
                                       "retry_after_ms": 300},
                                      {"text": "ok"}])"));
  auto resp = Client(Config(GetParam(), *server))->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->attempts, 3);
  auto reqs = server->requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_GE(Seconds(reqs[1].received - reqs[0].received), 0.95);
  EXPECT_GE(Seconds(reqs[2].received - reqs[1].received), 0.28);
  EXPECT_LT(Seconds(reqs[2].received - reqs[1].received), 0.9);
}

TEST(LlmClientOpenAiTest, RetryAfterAsAnHttpDateIsHonoured) {
  std::time_t at = std::time(nullptr) + 2;
  std::tm tm;
  gmtime_r(&at, &tm);
  char date[64];
  std::strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
  auto server =
      Serve(json::array({{{"fault", "rate_limit"}, {"retry_after", date}}, {{"text", "ok"}}}));
  auto resp = Client(Config({"openai", true}, *server))->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  auto reqs = server->requests();
  ASSERT_EQ(reqs.size(), 2u);
  double gap = Seconds(reqs[1].received - reqs[0].received);
  EXPECT_GE(gap, 0.9);  // the date is 1-2 s ahead at whole-second resolution
  EXPECT_LT(gap, 3.5);
}

TEST_P(LlmClientTest, BadToolArgumentsComeBackAsTheModelWroteThem) {
  const std::string raw = R"({"source": "__global__ void k( {)";
  json script =
      json::array({{{"tool_calls", json::array({{{"name", "compile"}, {"arguments", raw}}})}},
                   {{"text", "sorry"}}});
  auto server = Serve(script);
  auto client = Client(Config(GetParam(), *server));
  ChatRequest req = Hello();
  req.tools = {{"compile", "Compiles a kernel", R"({"type":"object"})"}};
  auto resp = client->Chat(req, nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  ASSERT_EQ(resp->message.tool_calls.size(), 1u);
  EXPECT_EQ(resp->message.tool_calls[0].arguments_json, raw);
  // The worker answers with an error; the broken call must still be sendable back.
  req.messages.push_back(resp->message);
  req.messages.push_back({ChatMessage::Role::kTool,
                          "error: arguments are not JSON",
                          {},
                          resp->message.tool_calls[0].id});
  auto again = client->Chat(req, nullptr);
  ASSERT_TRUE(again.ok()) << again.status().message();
  json b2 = Body(server->requests()[1]);
  if (openai()) {
    EXPECT_EQ(b2["messages"][2]["tool_calls"][0]["function"]["arguments"], raw);
  } else {
    EXPECT_EQ(b2["messages"][1]["content"][0]["input"]["_unparsed_arguments"], raw);
  }
}

TEST_P(LlmClientTest, StallIsCutWithinTheTimeoutAndRetried) {
  auto server = Serve(json::parse(R"([{"fault": "stall"}, {"text": "awake"}])"));
  auto client = Client(Config(GetParam(), *server));  // stall_timeout_s = 0.5
  auto t0 = Clock::now();
  auto resp = client->Chat(Hello(), nullptr);
  double took = Seconds(Clock::now() - t0);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "awake");
  EXPECT_EQ(resp->attempts, 2);
  EXPECT_GE(took, 0.45);
  EXPECT_LT(took, 2.0);
}

TEST_P(LlmClientTest, CancelStopsAnInFlightCall) {
  // The server waits 10 s before answering; the stall timer is set longer than that.
  auto server = Serve(json::parse(R"([{"text": "too late", "latency_ms": 10000}])"));
  LlmConfig cfg = Config(GetParam(), *server);
  cfg.stall_timeout_s = 60;
  auto client = Client(cfg);
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    cancel.cancelled = true;
  });
  auto t0 = Clock::now();
  auto resp = client->Chat(Hello(), &cancel);
  double took = Seconds(Clock::now() - t0);
  canceller.join();
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("cancelled"), std::string::npos)
      << resp.status().message();
  EXPECT_FALSE(IsFinalLlmError(resp.status()));
  EXPECT_LT(took, 1.0);
  server->Stop();
}

TEST_P(LlmClientTest, CancelStopsTheBackoffWait) {
  auto server =
      Serve(json::parse(R"([{"fault": "rate_limit", "retry_after": "30"}, {"text": "x"}])"));
  auto client = Client(Config(GetParam(), *server));
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel.cancelled = true;
  });
  auto t0 = Clock::now();
  auto resp = client->Chat(Hello(), &cancel);
  canceller.join();
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("cancelled"), std::string::npos);
  EXPECT_LT(Seconds(Clock::now() - t0), 1.0);
  EXPECT_EQ(server->requests().size(), 1u);
}

TEST_P(LlmClientTest, EightThreadsShareOneClient) {
  auto server = Serve(json::parse(R"([{"fault": "server_error", "repeat": 4},
                                      {"fault": "rate_limit", "retry_after": "0", "repeat": 4},
                                      {"text": "same answer",
                                       "usage": {"input_tokens": 7, "output_tokens": 3},
                                       "repeat": 32}])"));
  LlmConfig cfg = Config(GetParam(), *server);
  cfg.prices = {1.0, 1.0, 1.0};
  auto client = Client(cfg);
  std::atomic<int> ok{0}, attempts{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 4; ++i) {
        auto resp = client->Chat(Hello(), nullptr);
        if (resp.ok() && resp->message.content == "same answer" && resp->usage.input_tokens == 7) {
          ++ok;
          attempts += resp->attempts;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(ok.load(), 32);
  EXPECT_EQ(attempts.load(), 40);
  EXPECT_EQ(server->requests().size(), 40u);
}

// ---- Transcripts with real kernels --------------------------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Transcript(const std::string& name) {
  return std::string(WS_SOURCE_DIR) + "/tests/fixture/transcripts/" + name;
}

std::string LastCudaBlock(const std::string& text) {
  size_t at = text.rfind("```cuda\n");
  if (at == std::string::npos)
    return "";
  size_t begin = at + 8, end = text.find("```", begin);
  return text.substr(begin, end - begin);
}

TEST_P(LlmClientTest, WorkerTranscriptCompilesThenSubmitsTheKernel) {
  auto script = fixture::LoadTranscript(Transcript("worker_compile_submit.json"), WS_SOURCE_DIR);
  ASSERT_TRUE(script.ok()) << script.status().message();
  const std::string kernel =
      ReadFile(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/baseline.cu");
  ASSERT_FALSE(kernel.empty());
  auto server = Serve(*script);
  auto client = Client(Config(GetParam(), *server));
  ChatRequest req = Hello();
  req.tools = {{"compile", "Compiles a candidate", R"({"type":"object"})"},
               {"submit", "Submits a candidate", R"({"type":"object"})"}};
  std::vector<std::string> called;
  for (int turn = 0; turn < 5; ++turn) {
    auto resp = client->Chat(req, nullptr);
    ASSERT_TRUE(resp.ok()) << resp.status().message();
    req.messages.push_back(resp->message);
    if (resp->message.tool_calls.empty())
      break;
    for (const ToolCall& c : resp->message.tool_calls) {
      called.push_back(c.name);
      EXPECT_EQ(json::parse(c.arguments_json)["source"], kernel) << c.name;
      req.messages.push_back({ChatMessage::Role::kTool, c.name + ": ok", {}, c.id});
    }
  }
  EXPECT_EQ(called, (std::vector<std::string>{"compile", "submit"}));
  EXPECT_EQ(server->turns_served(), 3);
}

TEST_P(LlmClientTest, PlainAnswerTranscriptEndsWithTheKernel) {
  auto script = fixture::LoadTranscript(Transcript("plain_answer.json"), WS_SOURCE_DIR);
  ASSERT_TRUE(script.ok()) << script.status().message();
  auto server = Serve(*script);
  auto resp = Client(Config(GetParam(), *server))->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(LastCudaBlock(resp->message.content),
            ReadFile(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/baseline.cu"));
}

// ---- One provider or none -----------------------------------------------------------------------

TEST(LlmClientAnthropicTest, ErrorEventAfter200IsRetriedAndItsTokensCounted) {
  auto server = Serve(json::parse(R"([
      {"fault": "error_after_200", "usage": {"input_tokens": 50}},
      {"text": "complete", "usage": {"input_tokens": 100, "output_tokens": 20}}])"));
  auto resp = Client(Config({"anthropic", true}, *server))->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "complete");
  EXPECT_EQ(resp->attempts, 2);
  EXPECT_EQ(resp->usage.input_tokens, 150);  // the cut attempt's input was reported: count it
  EXPECT_EQ(resp->usage.output_tokens, 20 + 1);
}

TEST(LlmClientAnthropicTest, ErrorEventThatIsNotTransientIsFinal) {
  auto server = Serve(json::parse(R"([
      {"fault": "error_after_200", "error_type": "invalid_request_error", "message": "too long"},
      {"text": "never sent"}])"));
  auto resp = Client(Config({"anthropic", true}, *server))->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(IsFinalLlmError(resp.status())) << resp.status().message();
  EXPECT_NE(resp.status().message().find("invalid_request_error"), std::string::npos);
  EXPECT_EQ(server->requests().size(), 1u);
}

TEST(LlmClientOpenAiTest, LocalServerNeedsNoKey) {
  unsetenv("OPENAI_API_KEY");
  auto server = Serve(json::parse(R"([{"text": "local hello"}])"));
  LlmConfig cfg = Config({"openai", true}, *server);
  cfg.api_key.clear();
  auto resp = Client(cfg)->Chat(Hello(), nullptr);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(resp->message.content, "local hello");
  EXPECT_EQ(Header(server->requests()[0], "authorization"), "");
}

TEST(LlmClientOpenAiTest, KeyComesFromTheEnvironment) {
  setenv("OPENAI_API_KEY", "from-env", 1);
  FixtureOptions opts;
  opts.api_key = "from-env";
  auto server = Serve(json::parse(R"([{"text": "authorized"}])"), opts);
  LlmConfig cfg = Config({"openai", false}, *server);
  cfg.api_key.clear();
  auto resp = Client(cfg)->Chat(Hello(), nullptr);
  unsetenv("OPENAI_API_KEY");
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(Header(server->requests()[0], "authorization"), "Bearer from-env");
}

TEST(LlmClientOpenAiTest, WrongKeyIsFinal) {
  FixtureOptions opts;
  opts.api_key = "right";
  auto server = Serve(json::parse(R"([{"text": "x"}])"), opts);
  auto resp = Client(Config({"openai", true}, *server))->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(IsFinalLlmError(resp.status())) << resp.status().message();
  EXPECT_NE(resp.status().message().find("401"), std::string::npos);
}

TEST(MakeLlmClientTest, NamesTheMissingKeyOrUnknownProvider) {
  unsetenv("OPENAI_API_KEY");
  unsetenv("ANTHROPIC_API_KEY");
  LlmConfig cfg;
  cfg.provider = "openai";
  auto c = MakeLlmClient(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("OPENAI_API_KEY"), std::string::npos);
  cfg.provider = "anthropic";
  c = MakeLlmClient(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("ANTHROPIC_API_KEY"), std::string::npos);
  cfg.provider = "bogus";
  c = MakeLlmClient(cfg);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("bogus"), std::string::npos);
}

TEST(LlmClientOpenAiTest, BadToolSchemaFailsBeforeSending) {
  auto server = Serve(json::parse(R"([{"text": "x"}])"));
  ChatRequest req = Hello();
  req.tools = {{"compile", "", "{not json"}};
  auto resp = Client(Config({"openai", true}, *server))->Chat(req, nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_TRUE(IsFinalLlmError(resp.status()));
  EXPECT_NE(resp.status().message().find("compile"), std::string::npos);
  EXPECT_TRUE(server->requests().empty());
}

TEST(LlmClientOpenAiTest, ConnectionRefusedIsRetriedThenNotFinal) {
  uint16_t port;
  {
    auto server = Serve(json::parse(R"([{"text": "x"}])"));
    port = server->port();
  }
  LlmConfig cfg;
  cfg.provider = "openai";
  cfg.model = "m";
  cfg.base_url = "http://127.0.0.1:" + std::to_string(port) + "/v1";
  cfg.max_attempts = 2;
  cfg.initial_backoff_s = 0.01;
  auto resp = Client(cfg)->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_FALSE(IsFinalLlmError(resp.status()));
  EXPECT_NE(resp.status().message().find("connection"), std::string::npos)
      << resp.status().message();
  EXPECT_NE(resp.status().message().find("2 attempts"), std::string::npos);
}

TEST(FixtureServerTest, RejectsABadScript) {
  EXPECT_FALSE(FixtureServer::Start(json::parse(R"([{"fault": "gremlins"}])")).ok());
  EXPECT_FALSE(FixtureServer::Start(json::parse(R"([{"usage": {}}])")).ok());
  EXPECT_FALSE(FixtureServer::Start(json::parse(R"({"not": "turns"})")).ok());
}

TEST(FixtureServerTest, ScriptExhaustedIsAFinal400) {
  auto server = Serve(json::parse(R"([{"text": "only one"}])"));
  auto client = Client(Config({"anthropic", true}, *server));
  ASSERT_TRUE(client->Chat(Hello(), nullptr).ok());
  auto resp = client->Chat(Hello(), nullptr);
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("script exhausted"), std::string::npos);
}

}  // namespace
}  // namespace ws
