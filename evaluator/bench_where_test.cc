// EvalRequest::bench_where (`warpsmith eval --bench-where`): which bench shapes an evaluation
// takes, seen without a GPU through a plan that resolves only at some of them.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "base/files.h"
#include "evaluator/evaluator.h"
#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

class BenchWhereTest : public testing::Test {
 protected:
  void SetUp() override {
    auto s = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json");
    ASSERT_TRUE(s.ok()) << s.status().message();
    spec_ = std::move(*s);
    opts_.workspace = testing::TempDir() + "/ws_bench_where_" + std::to_string(::getpid());
    opts_.runner = std::string(WS_BINARY_DIR) + "/ws_runner";
    opts_.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  }
  void TearDown() override { fs::remove_all(opts_.workspace); }

  // The hand-tuned quantizer with its one launch limited to M <= 20000: of the bench shapes
  // (M 131072, 131072, 65536, 16384) only the last has a launch, so any other one taken is a
  // plan error before anything compiles.
  EvalRequest Request() {
    std::string source =
        ReadFile(std::string(WS_SOURCE_DIR) + "/kernels/mxfp8_quantize_rowwise/kernel.cu").value();
    const std::string anchor = "\"kernel\": \"sm90_bf16_mxfp8_quantize_rowwise\",";
    const size_t at = source.find(anchor);
    EXPECT_NE(at, std::string::npos);
    if (at != std::string::npos) source.insert(at + anchor.size(), " \"when\": \"M <= 20000\",");
    EvalRequest req;
    req.spec = &spec_;
    req.source = source;
    req.params = {{"rounding", "rceil"}};
    req.compile_only = true;
    return req;
  }

  ProblemSpec spec_;
  EvaluatorOptions opts_;
};

TEST_F(BenchWhereTest, EveryBenchShapeWithoutIt) {
  auto r = Evaluate(Request(), opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kPlanError);
  EXPECT_NE(r->message.find("bench shape"), std::string::npos) << r->message;
}

TEST_F(BenchWhereTest, OnlyTheShapesWhereItHolds) {
  EvalRequest req = Request();
  req.bench_where = "M <= 20000";
  auto r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kNotRun) << r->message;  // compiled, plan valid everywhere taken

  req.bench_where = "M <= 65536";  // takes 65536x5120 too, which has no launch
  r = Evaluate(req, opts_);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->verdict, Verdict::kPlanError);
  EXPECT_NE(r->message.find("M=65536"), std::string::npos) << r->message;
}

TEST_F(BenchWhereTest, AnExpressionThatSelectsNothingOrDoesNotParseIsAnError) {
  EvalRequest req = Request();
  req.bench_where = "M > 1000000";
  auto r = Evaluate(req, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("none of"), std::string::npos) << r.status().message();

  req.bench_where = "Q < 3";
  r = Evaluate(req, opts_);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("unknown name 'Q'"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace ws
