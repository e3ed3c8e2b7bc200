#include "agents/worker.h"

#include <deque>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace ws {
namespace {

// Replays scripted replies (or errors) and remembers every request.
class ScriptedClient : public LlmClient {
 public:
  void Reply(ChatMessage m,
             Usage u = {.input_tokens = 100, .output_tokens = 10, .cost_usd = 0.01}) {
    ChatResponse r;
    r.message = std::move(m);
    r.message.role = ChatMessage::Role::kAssistant;
    r.usage = u;
    r.stop_reason = r.message.tool_calls.empty() ? "stop" : "tool_calls";
    script_.push_back(r);
  }
  void Fail(std::string why) { script_.push_back(Status::Error("{}", why)); }
  // The replies at these indices stopped at the output limit.
  void CutReplies(const std::vector<size_t>& which) {
    for (size_t i : which) script_.at(i)->stop_reason = "length";
  }

  Result<ChatResponse> Chat(const ChatRequest& req, const CancelToken*) override {
    requests.push_back(req);
    if (script_.empty())
      return Status::Error("script exhausted");
    Result<ChatResponse> r = script_.front();
    script_.pop_front();
    return r;
  }
  std::string provider() const override { return "fake"; }

  std::vector<ChatRequest> requests;

 private:
  std::deque<Result<ChatResponse>> script_;
};

// Accepts a submission whose source contains "GOOD"; remembers every call.
class FakeTools : public WorkerTools {
 public:
  Result<ToolFeedback> Run(Action action, const std::string& source, const KnobSetting&) override {
    calls.push_back({action, source});
    ToolFeedback fb;
    const bool good = source.find("GOOD") != std::string::npos;
    fb.verdict = good ? "ok" : "wrong_answer";
    fb.text = good ? "verdict: ok\n" : "verdict: wrong_answer\nhidden shape #1: wrong_answer\n";
    if (action == Action::kSubmit) {
      fb.accepted = good;
      fb.evaluation_id = 42;
    }
    return fb;
  }
  void RecordTurn(const Usage& u, const std::string&) override {
    tokens += u.input_tokens + u.output_tokens;
  }
  bool ShouldStop() override { return stop; }

  std::vector<std::pair<Action, std::string>> calls;
  int64_t tokens = 0;
  bool stop = false;
};

ChatMessage Call(const std::string& id, const std::string& name, const std::string& args) {
  ChatMessage m;
  m.tool_calls.push_back({id, name, args});
  return m;
}

std::string SourceArgs(const std::string& source) {
  return nlohmann::json{{"source", source}}.dump();
}

WorkerOptions Opts() {
  WorkerOptions o;
  o.model = "m";
  o.max_turns = 6;
  return o;
}

TEST(WorkerTest, ToolLoopThenSubmit) {
  ScriptedClient llm;
  llm.Reply(Call("c1", "compile", SourceArgs("v1")));
  llm.Reply(Call("c2", "time", SourceArgs("v1")));
  llm.Reply(Call("c3", "submit", SourceArgs("v1")));       // rejected: feedback, go on
  llm.Reply(Call("c4", "submit", SourceArgs("GOOD v2")));  // accepted: done
  FakeTools tools;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "submitted") << o.message;
  EXPECT_EQ(o.submitted_evaluation_id, 42);
  EXPECT_EQ(o.turns, 4);
  EXPECT_EQ(o.usage.input_tokens, 400);
  EXPECT_EQ(tools.tokens, 440);
  ASSERT_EQ(tools.calls.size(), 4u);
  EXPECT_EQ(tools.calls[0].first, WorkerTools::Action::kCompile);
  EXPECT_EQ(tools.calls[1].first, WorkerTools::Action::kTime);
  // Every turn after the first sees the evaluator's feedback on the last call.
  const ChatRequest& last = llm.requests.back();
  ASSERT_GE(last.messages.size(), 2u);
  EXPECT_EQ(last.messages.back().role, ChatMessage::Role::kTool);
  EXPECT_EQ(last.messages.back().tool_call_id, "c3");
  EXPECT_NE(last.messages.back().content.find("hidden shape #1"), std::string::npos);
  EXPECT_EQ(last.tools.size(), 6u);
}

TEST(WorkerTest, PlainAnswerWithACudaBlockIsASubmission) {
  ScriptedClient llm;
  ChatMessage m;
  m.content = "Here is a draft:\n```cuda\nold\n```\nand the final one:\n```cuda\nGOOD final\n```\n";
  llm.Reply(m);
  FakeTools tools;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "submitted");
  ASSERT_EQ(tools.calls.size(), 1u);
  EXPECT_EQ(tools.calls[0].first, WorkerTools::Action::kSubmit);
  EXPECT_EQ(tools.calls[0].second, "GOOD final\n");
}

TEST(WorkerTest, MalformedArgumentsAndUnknownToolsGetAnErrorBack) {
  ScriptedClient llm;
  llm.Reply(Call("c1", "compile", "{\"source\": \"unterminated"));
  llm.Reply(Call("c2", "compile", "{\"knobs\": {}}"));
  llm.Reply(Call("c3", "format_disk", SourceArgs("x")));
  llm.Reply(Call("c4", "submit", R"({"source": "GOOD", "knobs": {"T": "big"}})"));
  llm.Reply(Call("c5", "submit", R"({"source": "GOOD", "knobs": {"T": 128}})"));
  FakeTools tools;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "submitted");
  ASSERT_EQ(tools.calls.size(), 1u);  // only the well-formed submit reached the evaluator
  const auto& msgs = llm.requests.back().messages;
  std::vector<std::string> errors;
  for (const auto& m : msgs) {
    if (m.role == ChatMessage::Role::kTool)
      errors.push_back(m.content);
  }
  ASSERT_EQ(errors.size(), 4u);
  EXPECT_NE(errors[0].find("not a JSON object"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("needs \"source\""), std::string::npos) << errors[1];
  EXPECT_NE(errors[2].find("unknown tool"), std::string::npos) << errors[2];
  EXPECT_NE(errors[3].find("must be an integer"), std::string::npos) << errors[3];
}

TEST(WorkerTest, AReplyCutAtTheOutputLimitIsNotSubmitted) {
  ScriptedClient llm;
  ChatMessage draft;
  draft.content = "A draft:\n```cuda\nGOOD draft\n```\nThe final one:\n```cuda\nGOOD fin";
  llm.Reply(draft);
  llm.Reply(Call("c1", "compile", "{\"source\": \"GOOD but cut"));
  llm.Reply(Call("c2", "submit", SourceArgs("GOOD final")));
  llm.CutReplies({0, 1});
  FakeTools tools;
  WorkerOptions opts = Opts();
  opts.max_output_tokens = 4096;
  WorkerOutcome o = RunWorker(llm, opts, {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "submitted") << o.message;
  ASSERT_EQ(tools.calls.size(), 1u) << "neither the earlier draft nor the cut call reached it";
  EXPECT_EQ(tools.calls[0].second, "GOOD final");
  ASSERT_EQ(llm.requests.size(), 3u);
  const ChatMessage& after_text = llm.requests[1].messages.back();
  EXPECT_EQ(after_text.role, ChatMessage::Role::kUser);
  EXPECT_NE(after_text.content.find("cut off at the output limit (4096 tokens)"),
            std::string::npos)
      << after_text.content;
  const ChatMessage& after_call = llm.requests[2].messages.back();
  EXPECT_EQ(after_call.role, ChatMessage::Role::kTool);
  EXPECT_NE(after_call.content.find("not a JSON object"), std::string::npos) << after_call.content;
  EXPECT_NE(after_call.content.find("cut off"), std::string::npos) << after_call.content;
}

TEST(WorkerTest, FailingEndpointEndsTheAttemptWithAnError) {
  ScriptedClient llm;
  llm.Reply(Call("c1", "compile", SourceArgs("v1")));
  llm.Fail("HTTP 500 after 6 attempts");
  FakeTools tools;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "error");
  EXPECT_NE(o.message.find("HTTP 500"), std::string::npos) << o.message;
  EXPECT_EQ(o.turns, 1);
}

TEST(WorkerTest, NoCodeTwiceIsNoSubmission) {
  ScriptedClient llm;
  ChatMessage m;
  m.content = "I would vectorize the loads.";
  llm.Reply(m);
  llm.Reply(m);
  FakeTools tools;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "no_submission");
  EXPECT_EQ(llm.requests.size(), 2u);
}

TEST(WorkerTest, StopsWhenTheBudgetIsSpent) {
  ScriptedClient llm;
  FakeTools tools;
  tools.stop = true;
  WorkerOutcome o = RunWorker(llm, Opts(), {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(o.status, "stopped");
  EXPECT_TRUE(llm.requests.empty());
}

TEST(WorkerTest, ContextStaysWithinTheBudget) {
  ScriptedClient llm;
  const std::string big(40000, 'x');  // ~10k tokens per source
  for (int i = 0; i < 5; ++i) llm.Reply(Call("c" + std::to_string(i), "time", SourceArgs(big)));
  llm.Reply(Call("c9", "submit", SourceArgs("GOOD")));
  FakeTools tools;
  WorkerOptions o = Opts();
  o.context_tokens = 30000;
  o.max_output_tokens = 4000;
  WorkerOutcome out = RunWorker(llm, o, {"sys", "task"}, tools, nullptr);
  EXPECT_EQ(out.status, "submitted");
  for (const auto& req : llm.requests) EXPECT_LE(EstimateTokens(req.messages), 26000);
  // The newest call is still whole.
  const auto& last = llm.requests.back().messages;
  EXPECT_EQ(last[last.size() - 2].tool_calls[0].arguments_json, SourceArgs(big));
}

TEST(WorkerTest, LastCudaBlock) {
  EXPECT_EQ(LastCudaBlock("no code"), std::nullopt);
  EXPECT_EQ(LastCudaBlock("```python\nx\n```"), std::nullopt);
  EXPECT_EQ(*LastCudaBlock("```cuda\na\n```\n```cu\nb\n```"), "b\n");
  EXPECT_EQ(LastCudaBlock("```cuda\nunclosed"), std::nullopt);
}

}  // namespace
}  // namespace ws
