// EvalRequest::bench_where (`warpsmith eval --bench-where`): which bench shapes an evaluation
// takes, seen without a GPU through a plan that resolves only at some of them.
#include <unistd.h>

#include <filesystem>
#include <string>

#include <gtest/gtest.h>

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

  // A candidate whose one launch exists only at M <= 30000: of the bench shapes (M 131072,
  // 131072, 65536, 16384) only the last has a launch, so any other one taken is a plan error
  // before anything compiles.
  EvalRequest Request() {
    const std::string source = R"src(/* warpsmith:plan
{ "launch": [ { "kernel": "quantize_small", "when": "M <= 30000",
                "grid": ["ceil_div(M * K, 256)"], "block": ["256"], "smem": "0",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void quantize_small(const unsigned short* x, unsigned char* q,
                                          unsigned char* scales, int M, int K) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < static_cast<long long>(M) * K) q[i] = static_cast<unsigned char>(x[i] >> 8);
  if (i < static_cast<long long>(M) * K / 32) scales[i] = 127;
}
)src";
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
  req.bench_where = "M <= 30000";
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
