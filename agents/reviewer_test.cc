#include "agents/reviewer.h"

#include <gtest/gtest.h>

#include <deque>

namespace ws {
namespace {

constexpr const char* kParent = R"P(/* warpsmith:plan
{ "knobs": { "T": [256, 128] },
  "launch": [ { "kernel": "k", "grid": ["ceil_div(M, T)"], "block": ["T"], "args": ["x", "M"] } ] }
*/
extern "C" __global__ void k(const float* x, int M) {}
)P";

// Answers with the given replies in turn and remembers the requests.
class ReplyingClient : public LlmClient {
 public:
  std::deque<ChatResponse> replies;
  std::vector<ChatRequest> requests;
  Result<ChatResponse> Chat(const ChatRequest& req, const CancelToken*) override {
    requests.push_back(req);
    if (replies.empty())
      return Status::Error("no more replies");
    ChatResponse r = replies.front();
    replies.pop_front();
    return r;
  }
  std::string provider() const override { return "fake"; }
};

ChatResponse Answer(const std::string& text, const std::string& stop) {
  ChatResponse r;
  r.message.role = ChatMessage::Role::kAssistant;
  r.message.content = text;
  r.stop_reason = stop;
  return r;
}

TEST(ReviewerTest, TheLastVerdictLineCountsAndACutReplySaysItWasCut) {
  ProblemSpec spec;
  spec.name = "p";
  ReplyingClient llm;
  llm.replies = {Answer("Reading it.\nVERDICT: flag: odd\nOn reflection:\nVERDICT: ok", "stop"),
                 Answer("VERDICT: flag: reads %globaltimer", "stop"),
                 Answer("The kernel first loads", "length"),
                 Answer("I cannot tell.", "stop")};
  auto v = ReviewWithLlm(llm, "m", spec, kParent, kParent, 4096, nullptr);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_FALSE(v->flagged) << v->reason;
  EXPECT_EQ(llm.requests[0].max_output_tokens, 4096);
  v = ReviewWithLlm(llm, "m", spec, kParent, kParent, 4096, nullptr);
  EXPECT_TRUE(v->flagged);
  EXPECT_EQ(v->reason, "reviewer: reads %globaltimer");
  v = ReviewWithLlm(llm, "m", spec, kParent, kParent, 4096, nullptr);
  EXPECT_TRUE(v->flagged);
  EXPECT_NE(v->reason.find("cut at the output limit (4096 tokens)"), std::string::npos)
      << v->reason;
  v = ReviewWithLlm(llm, "m", spec, kParent, kParent, 4096, nullptr);
  EXPECT_TRUE(v->flagged);
  EXPECT_EQ(v->reason, "the reviewer gave no verdict line");
  EXPECT_FALSE(ReviewWithLlm(llm, "m", spec, kParent, kParent, 4096, nullptr).ok());
}

TEST(ReviewerTest, TunerCandidateMustBeTheParentModuloKnobs) {
  EXPECT_FALSE(ReviewTunerCandidate(kParent, kParent, {{"T", 128}}).flagged);
  // Reordered knob lists are the same kernel.
  std::string reordered = kParent;
  reordered.replace(reordered.find("[256, 128]"), 10, "[128, 256]");
  EXPECT_FALSE(ReviewTunerCandidate(kParent, reordered, {{"T", 128}}).flagged);

  std::string code = std::string(kParent) + "// extra\n";
  auto v = ReviewTunerCandidate(kParent, code, {});
  EXPECT_TRUE(v.flagged);
  EXPECT_NE(v.reason.find("device code differs"), std::string::npos) << v.reason;

  std::string launch = kParent;
  launch.replace(launch.find("ceil_div(M, T)"), 14, "ceil_div(M, 64)");
  EXPECT_TRUE(ReviewTunerCandidate(kParent, launch, {}).flagged);
  EXPECT_TRUE(ReviewTunerCandidate(kParent, kParent, {{"T", 512}}).flagged);
  EXPECT_TRUE(ReviewTunerCandidate(kParent, kParent, {{"U", 1}}).flagged);
}

TEST(ReviewerTest, RulesCatchTimersAndBenchShapeSpecialization) {
  ProblemSpec spec;
  spec.symbols = {"M", "K"};
  Shape bench;
  bench.symbols = {{"M", 131072}, {"K", 7168}};
  spec.bench_shapes = {bench};
  EXPECT_FALSE(ReviewRules(spec, kParent).flagged);
  std::string timer = std::string(kParent) + "// asm(\"mov.u64 %0, %globaltimer;\")\n";
  EXPECT_TRUE(ReviewRules(spec, timer).flagged);
  std::string special =
      std::string(kParent) + "__device__ bool fast(int K) { return K == 7168; }\n";
  auto v = ReviewRules(spec, special);
  EXPECT_TRUE(v.flagged);
  EXPECT_NE(v.reason.find("7168"), std::string::npos) << v.reason;
}

}  // namespace
}  // namespace ws
