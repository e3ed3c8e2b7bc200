#include "agents/prompts.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ws {
namespace {

using testing::HasSubstr;

ProblemSpec Spec() {
  ProblemSpec s;
  s.name = "p";
  s.description = "a problem";
  s.symbols = {"M"};
  return s;
}

TEST(PromptsTest, TheTaskShowsEachLibraryHeaderOnceAfterTheKernels) {
  const std::string header = "#pragma once\n__device__ int ws_one() { return 1; }\n";
  std::vector<KernelExample> kernels = {
      {"Parent", "#include \"ws/one.cuh\"\nPARENT", "1 us", {{"ws/one.cuh", header}}},
      {"Inspiration 1", "#include \"ws/one.cuh\"\nOTHER", "2 us", {{"ws/one.cuh", header}}},
      {"Inspiration 2", "PLAIN", "3 us", {}}};
  const std::string t = WorkerTaskPrompt(Spec(), {}, kernels, "");
  EXPECT_THAT(t, HasSubstr("## Device library: ws/one.cuh"));
  const size_t first = t.find("ws_one()");
  ASSERT_NE(first, std::string::npos);
  EXPECT_EQ(t.find("ws_one()", first + 1), std::string::npos) << "the header twice";
  EXPECT_GT(first, t.find("PLAIN")) << "after the kernels";
  EXPECT_THAT(WorkerSystemPrompt(), HasSubstr("#include \"ws/NAME.cuh\""));
  // Without library headers there is no library section.
  EXPECT_EQ(WorkerTaskPrompt(Spec(), {}, {{"Parent", "PLAIN", "", {}}}, "").find("Device library"),
            std::string::npos);
}

}  // namespace
}  // namespace ws
