// The runner's device code (problems/init.h + digest.h + runner_kernels.cu) compiles with NVRTC,
// cleanly, for every architecture we target. Needs NVRTC only, no GPU.
#include "evaluator/runner/helpers_compile.h"

#include <cstring>
#include <set>
#include <string>

#include <gtest/gtest.h>

namespace ws::runner {
namespace {

TEST(RunnerKernelsTest, SourceHasNoIncludes) {
  // NVRTC gets no include path: init.h must stay self-contained.
  EXPECT_EQ(HelperSource().find("#include"), std::string::npos);
  EXPECT_NE(HelperSource().find("ws_init_element"), std::string::npos);
  EXPECT_NE(HelperSource().find("ws_guard_check"), std::string::npos);
  EXPECT_NE(HelperSource().find("void ws_digest("), std::string::npos);
  EXPECT_NE(HelperSource().find("ws_digest_term"), std::string::npos);
}

TEST(RunnerKernelsTest, CompilesCleanlyForHopperAndBlackwell) {
  for (int cc : {90, 100}) {
    std::string log;
    auto cubin = CompileHelpers(cc, &log);
    ASSERT_TRUE(cubin.ok()) << cubin.status().message();
    EXPECT_GT(cubin->size(), 1000u);
    EXPECT_EQ(log, "") << "sm_" << cc;
  }
}

// The cubins built in (ws_prebuild_helpers) are what the runner would compile at start: the
// same bytes, for Hopper and Blackwell at least.
TEST(RunnerKernelsTest, PrebuiltCubinsMatchTheRuntimeCompile) {
  std::set<int> ccs;
  for (const PrebuiltHelpers& p : PrebuiltHelperTable()) {
    ccs.insert(p.cc);
    auto cubin = CompileHelpers(p.cc);
    ASSERT_TRUE(cubin.ok()) << cubin.status().message();
    ASSERT_EQ(cubin->size(), p.size) << "sm_" << p.cc;
    EXPECT_EQ(std::memcmp(cubin->data(), p.cubin, p.size), 0) << "sm_" << p.cc;
  }
  EXPECT_TRUE(ccs.count(90) && ccs.count(100)) << ccs.size() << " prebuilt capabilities";
}

}  // namespace
}  // namespace ws::runner
