#include "agents/reviewer.h"

#include <gtest/gtest.h>

namespace ws {
namespace {

constexpr const char* kParent = R"P(/* warpsmith:plan
{ "knobs": { "T": [256, 128] },
  "launch": [ { "kernel": "k", "grid": ["ceil_div(M, T)"], "block": ["T"], "args": ["x", "M"] } ] }
*/
extern "C" __global__ void k(const float* x, int M) {}
)P";

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
