// The tolerant JSON reads under both wire protocols: any number a server sends reads as an
// integer or as 0, never through an undefined conversion, and token counts cannot go negative or
// overflow a sum. (fuzz_llm found a stream whose block index was 3.3e39.)
#include "agents/llm_json.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "agents/llm_http.h"
#include "agents/sse.h"

namespace ws::llm {
namespace {

TEST(LlmJsonTest, IntReadsEveryNumberOrZero) {
  const json j = json::parse(R"({"a": 7, "b": -3, "c": 12.9, "d": 3.3e39, "e": -1e300,
                                "f": 18446744073709551615, "g": 9223372036854775807,
                                "h": "5", "i": null, "j": true})");
  EXPECT_EQ(Int(j, "a"), 7);
  EXPECT_EQ(Int(j, "b"), -3);
  EXPECT_EQ(Int(j, "c"), 12);
  EXPECT_EQ(Int(j, "d"), 0);  // no int64_t holds it
  EXPECT_EQ(Int(j, "e"), 0);
  EXPECT_EQ(Int(j, "f"), 0);
  EXPECT_EQ(Int(j, "g"), INT64_MAX);
  EXPECT_EQ(Int(j, "h"), 0);  // not a number
  EXPECT_EQ(Int(j, "i"), 0);
  EXPECT_EQ(Int(j, "j"), 0);
  EXPECT_EQ(Int(j, "absent"), 0);
  EXPECT_EQ(Int(json::array({1}), "a"), 0);
}

TEST(LlmJsonTest, CountsAreClampedToASafeRange) {
  const json j = json::parse(R"({"neg": -5, "big": 9223372036854775807, "ok": 1234})");
  EXPECT_EQ(Count(j, "neg"), 0);
  EXPECT_EQ(Count(j, "big"), int64_t{1} << 50);
  EXPECT_EQ(Count(j, "ok"), 1234);
}

TEST(LlmJsonTest, HostileUsageNeitherLowersNorOverflowsTheSpend) {
  const std::string openai =
      R"({"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant",)"
      R"("content":"x"}}],"usage":{"prompt_tokens":-1000,"completion_tokens":1e40,)"
      R"("prompt_tokens_details":{"cached_tokens":9223372036854775807}}})";
  AttemptError err;
  auto r = MakeOpenAiProtocol("https://api.openai.com/v1", "k", true)->ParseBody(openai, &err);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->usage.input_tokens, 0);
  EXPECT_EQ(r->usage.output_tokens, 0);
  EXPECT_EQ(r->usage.cached_input_tokens, int64_t{1} << 50);

  const std::string anthropic =
      R"({"id":"m","type":"message","role":"assistant","stop_reason":"end_turn",)"
      R"("content":[{"type":"text","text":"x"}],"usage":{"input_tokens":9223372036854775807,)"
      R"("cache_creation_input_tokens":9223372036854775807,)"
      R"("cache_read_input_tokens":9223372036854775807,"output_tokens":-7}})";
  r = MakeAnthropicProtocol("https://api.anthropic.com", "k")->ParseBody(anthropic, &err);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->usage.input_tokens, 3 * (int64_t{1} << 50));
  EXPECT_EQ(r->usage.output_tokens, 0);
}

// fuzz_llm's input: a block index no int64_t holds. Its start and its delta must name the same
// block, so the call keeps its arguments.
TEST(LlmJsonTest, AStreamBlockIndexBeyondInt64KeepsItsToolCall) {
  const std::string huge = "3333333333333303333333333333333333333332";
  const std::string stream =
      "event: content_block_start\n"
      R"(data: {"type":"content_block_start","index":)" + huge +
      R"(,"content_block":{"type":"tool_use","id":"t","name":"compile","input":{}}})"
      "\n\nevent: content_block_delta\n"
      R"(data: {"type":"content_block_delta","index":)" + huge +
      R"(,"delta":{"type":"input_json_delta","partial_json":"{\"source\":1}"}})"
      "\n\nevent: message_stop\n"
      R"(data: {"type":"message_stop"})"
      "\n\n";
  auto assembler = MakeAnthropicProtocol("https://api.anthropic.com", "k")->NewStream();
  SseParser parser;
  parser.Feed(stream, [&](const SseEvent& ev) { return !assembler->OnEvent(ev).has_value(); });
  AttemptError err;
  auto r = assembler->Finish(&err);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->message.tool_calls.size(), 1u);
  EXPECT_EQ(r->message.tool_calls[0].name, "compile");
  EXPECT_EQ(r->message.tool_calls[0].arguments_json, R"({"source":1})");
}

}  // namespace
}  // namespace ws::llm
