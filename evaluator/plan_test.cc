#include <gtest/gtest.h>

#include "evaluator/evaluator.h"

namespace ws {
namespace {

ProblemSpec QuantizeSpec() {
  ProblemSpec s;
  s.name = "q";
  s.symbols = {"M", "K"};
  s.params = {{"rounding", {"rceil", "floor"}, "rceil"}};
  s.tensors = {{"x", DType::kBF16, {"M", "K"}, TensorRole::kInput, {}},
               {"q", DType::kFP8E4M3, {"M", "K"}, TensorRole::kOutput, {}},
               {"scales", DType::kE8M0, {"M", "K / 32"}, TensorRole::kOutput, {}}};
  return s;
}

constexpr char kGood[] = R"P(/* warpsmith:plan
{ "knobs": { "ROWS": [4, 8] },
  "launch": [ { "kernel": "quant", "grid": ["ceil_div(M, ROWS)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K", {"i64": "M * K"}, "workspace"] } ],
  "workspace": { "bytes": "M * 4", "zero": true } }
*/
extern "C" __global__ void quant() {}
)P";

TEST(PlanTest, ParsesAndResolves) {
  auto plan = ParsePlan(kGood);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ProblemSpec spec = QuantizeSpec();
  ASSERT_TRUE(ValidatePlan(*plan, spec).ok());
  auto rp = ResolvePlan(*plan, spec, {{"M", 37}, {"K", 64}, {"rounding", 0}}, {{"ROWS", 8}}, {});
  ASSERT_TRUE(rp.ok()) << rp.status().message();
  ASSERT_EQ(rp->launches.size(), 1u);
  const ResolvedLaunch& l = rp->launches[0];
  EXPECT_EQ(l.grid[0], 5);
  EXPECT_EQ(l.block[0], 256);
  EXPECT_EQ(l.cluster[0], 1);
  ASSERT_EQ(l.args.size(), 7u);
  EXPECT_EQ(l.args[0].kind, PlanArg::Kind::kTensor);
  EXPECT_EQ(l.args[0].tensor, "x");
  EXPECT_EQ(l.args[3].kind, PlanArg::Kind::kI32);
  EXPECT_EQ(l.args[3].value, 37);
  EXPECT_EQ(l.args[5].kind, PlanArg::Kind::kI64);
  EXPECT_EQ(l.args[5].value, 37 * 64);
  EXPECT_EQ(l.args[6].kind, PlanArg::Kind::kWorkspace);
  EXPECT_EQ(rp->workspace_bytes, 148);
  EXPECT_TRUE(rp->workspace_zero);
}

TEST(PlanTest, DefaultKnobIsTheFirstValue) {
  auto plan = ParsePlan(kGood);
  ASSERT_TRUE(plan.ok());
  auto rp = ResolvePlan(*plan, QuantizeSpec(), {{"M", 37}, {"K", 64}}, {}, {});
  ASSERT_TRUE(rp.ok());
  EXPECT_EQ(rp->launches[0].grid[0], 10);
}

struct BadPlan {
  const char* body;
  const char* expected;  // a substring of the error
};

class PlanErrorTest : public testing::TestWithParam<BadPlan> {};

TEST_P(PlanErrorTest, NamesTheField) {
  std::string src = std::string("/* warpsmith:plan\n") + GetParam().body + "\n*/\n";
  auto plan = ParsePlan(src);
  Status s = plan.ok() ? ValidatePlan(*plan, QuantizeSpec()) : plan.status();
  if (s.ok()) {
    auto rp = ResolvePlan(*plan, QuantizeSpec(), {{"M", 1000}, {"K", 64}}, {}, {});
    s = rp.status();
  }
  ASSERT_FALSE(s.ok()) << GetParam().body;
  EXPECT_NE(s.message().find(GetParam().expected), std::string::npos) << s.message();
}

INSTANTIATE_TEST_SUITE_P(
    Table, PlanErrorTest,
    testing::Values(
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ], )",
                "not valid JSON"},
        BadPlan{R"({ "launch": [] })", "launch: expected a non-empty array"},
        BadPlan{R"({ "lunch": [] })", "unknown field 'lunch'"},
        BadPlan{R"({ "launch": [ { "grid": [1], "block": [1], "args": [] } ] })", "launch[0].kernel"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "args": [] } ] })",
                "launch[0].block: missing"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": ["N"], "block": [1], "args": [] } ] })",
                "launch[0].grid[0]: unknown name 'N'"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [2048], "args": [] } ] })",
                "launch[0].block[0] = 2048"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": ["M - 1000"], "block": [1], "args": [] } ] })",
                "launch[0].grid[0] = 0"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [32, 32, 2], "args": [] } ] })",
                "exceeds the limit 1024"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "smem": "1 << 40", "args": [] } ] })",
                "launch[0].smem"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [3], "block": [1], "cluster": [2], "args": [] } ] })",
                "not a multiple of cluster"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": ["M * 9223372036854775807"] } ] })",
                "launch[0].args[0]"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": ["M * 100000000"] } ] })",
                "does not fit in int32"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [[1]] } ] })",
                "launch[0].args[0]: expected a tensor name"},
        BadPlan{R"({ "knobs": { "M": [1] }, "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ] })",
                "knobs.M: clashes"},
        BadPlan{R"({ "knobs": { "T": [] }, "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ] })",
                "knobs.T"},
        BadPlan{R"({ "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ], "workspace": { "bytes": "1 << 50" } })",
                "workspace.bytes"}));

TEST(PlanTest, MissingPlanIsAnError) {
  auto plan = ParsePlan("extern \"C\" __global__ void k() {}");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("no launch plan"), std::string::npos);
}

TEST(PlanTest, UndeclaredKnobOverrideIsAnError) {
  auto plan = ParsePlan(kGood);
  ASSERT_TRUE(plan.ok());
  auto rp = ResolvePlan(*plan, QuantizeSpec(), {{"M", 1}, {"K", 32}}, {{"ROWS", 3}}, {});
  ASSERT_FALSE(rp.ok());
  EXPECT_NE(rp.status().message().find("knobs.ROWS: 3"), std::string::npos);
}

}  // namespace
}  // namespace ws
