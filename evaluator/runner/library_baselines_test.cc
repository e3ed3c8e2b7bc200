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
#include "problems/init.h"

namespace ws::runner {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

json GemmJob(const std::string& op, int64_t m, int64_t n, int64_t k, const std::string& dir) {
  const bool fp8 = op == "fp8_rowwise_gemm";
  const std::string in = fp8 ? "fp8_e4m3" : "bf16";
  json tensors = json::array(
      {{{"name", "A"}, {"dtype", in}, {"numel", m * k}, {"role", "input"},
        {"init", {{"dist", "normal"}, {"mean", 0}, {"stddev", 1}}}},
       {{"name", "B"}, {"dtype", in}, {"numel", n * k}, {"role", "input"},
        {"init", {{"dist", "normal"}, {"mean", 0}, {"stddev", 1}}}}});
  json names = json::array({"A", "B"});
  if (fp8) {
    // Scales far from 1 and different per row and column, so a swap shows.
    tensors.push_back({{"name", "a_scale"}, {"dtype", "f32"}, {"numel", m}, {"role", "input"},
                       {"init", {{"dist", "uniform"}, {"lo", 0.25}, {"hi", 4}}}});
    tensors.push_back({{"name", "b_scale"}, {"dtype", "f32"}, {"numel", n}, {"role", "input"},
                       {"init", {{"dist", "uniform"}, {"lo", 0.001}, {"hi", 0.01}}}});
    names.push_back("a_scale");
    names.push_back("b_scale");
  }
  tensors.push_back({{"name", "D"}, {"dtype", "bf16"}, {"numel", m * n}, {"role", "output"}});
  names.push_back("D");
  json c = {{"id", op},
            {"launches", json::array()},
            {"library", {{"op", op}, {"m", m}, {"n", n}, {"k", k}, {"tensors", names}}},
            {"workspace", {{"bytes", 32 << 20}, {"zero", false}}},
            {"tensors", tensors},
            {"input_seeds", {12345, 678}},
            {"poison", 0x7F},
            {"timing", {{"warmup", 2}, {"iterations", 6}, {"l2_flush_bytes", 1 << 20},
                        {"audit_iteration", 3}, {"graph", true}}},
            {"dump", dir + "/" + op},
            {"dump_inputs", true}};
  return {{"cubin", ""}, {"result", dir + "/result.json"}, {"cases", {c}}};
}

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
