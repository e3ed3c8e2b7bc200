// Library baselines in the runner's job: the "library" field parses and is checked against its
// tensors (library_baselines_gpu_test.cc runs the calls).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/runner/job.h"
#include "evaluator/runner/library_baselines_test_util.h"
#include "problems/init.h"

namespace ws::runner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

TEST(LibraryJobTest, ParsesAndValidates) {
  auto job = ParseJob(GemmJob("fp8_rowwise_gemm", 3, 16, 32, "/tmp").dump());
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->cubin, "");
  const CaseJob& c = job->cases[0];
  ASSERT_TRUE(c.library.has_value());
  EXPECT_EQ(c.library->op, "fp8_rowwise_gemm");
  EXPECT_EQ(c.library->m, 3);
  EXPECT_EQ(c.library->n, 16);
  EXPECT_EQ(c.library->k, 32);
  EXPECT_EQ(c.library->tensors, (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(ValidateLibraryJob(*c.library, c.tensors).ok());

  // Wrong element count (K says 64), wrong dtype, wrong arity, unknown op.
  LibraryJob bad = *c.library;
  bad.k = 64;
  EXPECT_FALSE(ValidateLibraryJob(bad, c.tensors).ok());
  bad = *c.library;
  bad.op = "bf16_gemm";
  EXPECT_NE(ValidateLibraryJob(bad, c.tensors).message().find("takes 3 tensors"),
            std::string::npos);
  bad.tensors = {0, 1, 4};
  EXPECT_NE(ValidateLibraryJob(bad, c.tensors).message().find("dtype code"), std::string::npos);
  bad.op = "nope";
  EXPECT_NE(ValidateLibraryJob(bad, c.tensors).message().find("unknown library op"),
            std::string::npos);
}

TEST(LibraryJobTest, RejectsLaunchesTogetherWithALibraryCallAndUnknownTensors) {
  json j = GemmJob("bf16_gemm", 2, 16, 16, "/tmp");
  j["cases"][0]["launches"] = json::array(
      {{{"kernel", "k"}, {"grid", {1}}, {"block", {1}}, {"args", json::array()}}});
  auto job = ParseJob(j.dump());
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("not both"), std::string::npos);
  j = GemmJob("bf16_gemm", 2, 16, 16, "/tmp");
  j["cases"][0]["library"]["tensors"][1] = "Z";
  job = ParseJob(j.dump());
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("unknown tensor 'Z'"), std::string::npos);
  // The call must fit its tensors: K = 32 would read past A and B.
  j = GemmJob("bf16_gemm", 2, 16, 16, "/tmp");
  j["cases"][0]["library"]["k"] = 32;
  job = ParseJob(j.dump());
  ASSERT_FALSE(job.ok());
  EXPECT_NE(job.status().message().find("cases[0].library"), std::string::npos)
      << job.status().message();
}

}  // namespace
}  // namespace ws::runner
