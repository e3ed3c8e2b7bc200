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

// "when" picks launches by shape: the small-M path below M = 64, the main kernel from there;
// a skipped launch is left out whole (its grid may be 0 there), and no launch at all is an error.
TEST(PlanTest, WhenPicksLaunchesByShape) {
  constexpr char kTwoPaths[] = R"P(/* warpsmith:plan
{ "knobs": { "SMALL": [64, 0] },
  "launch": [ { "kernel": "small", "grid": ["ceil_div(M, 8) * (M < SMALL)"], "block": [128],
                "when": "M < SMALL", "args": ["x", "q", "scales", "M", "K"] },
              { "kernel": "big", "grid": ["ceil_div(M, 128)"], "block": [256], "pdl": true,
                "when": "M >= SMALL", "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void small() {}
extern "C" __global__ void big() {}
)P";
  auto plan = ParsePlan(kTwoPaths);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ProblemSpec spec = QuantizeSpec();
  ASSERT_TRUE(ValidatePlan(*plan, spec).ok());
  auto small = ResolvePlan(*plan, spec, {{"M", 16}, {"K", 64}}, {}, {});
  ASSERT_TRUE(small.ok()) << small.status().message();
  ASSERT_EQ(small->launches.size(), 1u);
  EXPECT_EQ(small->launches[0].kernel, "small");
  EXPECT_EQ(small->launches[0].grid[0], 2);
  auto big = ResolvePlan(*plan, spec, {{"M", 1000}, {"K", 64}}, {}, {});
  ASSERT_TRUE(big.ok()) << big.status().message();
  ASSERT_EQ(big->launches.size(), 1u);
  EXPECT_EQ(big->launches[0].kernel, "big");
  EXPECT_EQ(big->launches[0].grid[0], 8);
  // With the small path switched off every shape takes the big kernel.
  auto off = ResolvePlan(*plan, spec, {{"M", 16}, {"K", 64}}, {{"SMALL", 0}}, {});
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_EQ(off->launches[0].kernel, "big");

  std::string none = kTwoPaths;
  none.replace(none.find("\"M >= SMALL\""), 12, "\"M > 4096\"");
  auto gap = ParsePlan(none);
  ASSERT_TRUE(gap.ok()) << gap.status().message();
  auto r = ResolvePlan(*gap, spec, {{"M", 100}, {"K", 64}}, {}, {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("nothing would run"), std::string::npos)
      << r.status().message();
  // A library baseline's plan has no launches to skip: it resolves to none, without an error.
  Plan library;
  library.workspace_bytes = "0";
  auto lib = ResolvePlan(library, spec, {{"M", 100}, {"K", 64}}, {}, {});
  ASSERT_TRUE(lib.ok()) << lib.status().message();
  EXPECT_TRUE(lib->launches.empty());
  // Its expression is checked like any other: unknown names are plan errors.
  std::string unknown = kTwoPaths;
  unknown.replace(unknown.find("\"M < SMALL\", \"args\""), 11, "\"M < BIGGS\"");
  auto bad = ParsePlan(unknown);
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  Status v = ValidatePlan(*bad, spec);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("launch[0].when"), std::string::npos) << v.message();
}

// "pdl" may be an expression: on where it is nonzero at the shape and knobs; unknown names in it
// are plan errors like any other expression's.
TEST(PlanTest, PdlMayBeAnExpression) {
  constexpr char kPdl[] = R"P(/* warpsmith:plan
{ "knobs": { "PDL": [1, 0] },
  "launch": [ { "kernel": "pre", "grid": [1], "block": [32], "args": ["x", "M"] },
              { "kernel": "main", "grid": [1], "block": [32], "pdl": "PDL && M < 64",
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void pre() {}
extern "C" __global__ void main() {}
)P";
  auto plan = ParsePlan(kPdl);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ProblemSpec spec = QuantizeSpec();
  ASSERT_TRUE(ValidatePlan(*plan, spec).ok());
  auto on = ResolvePlan(*plan, spec, {{"M", 16}, {"K", 64}}, {}, {});
  ASSERT_TRUE(on.ok()) << on.status().message();
  EXPECT_FALSE(on->launches[0].pdl);
  EXPECT_TRUE(on->launches[1].pdl);
  auto big = ResolvePlan(*plan, spec, {{"M", 640}, {"K", 64}}, {}, {});
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_FALSE(big->launches[1].pdl);
  auto off = ResolvePlan(*plan, spec, {{"M", 16}, {"K", 64}}, {{"PDL", 0}}, {});
  ASSERT_TRUE(off.ok()) << off.status().message();
  EXPECT_FALSE(off->launches[1].pdl);

  std::string unknown = kPdl;
  unknown.replace(unknown.find("PDL && M"), 3, "PDQ");
  auto bad = ParsePlan(unknown);
  ASSERT_TRUE(bad.ok()) << bad.status().message();
  Status v = ValidatePlan(*bad, spec);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.message().find("launch[1].pdl"), std::string::npos) << v.message();
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
                "workspace.bytes"},
        BadPlan{R"({ "knobs": { "R": [1] }, "knob_scope": { "S": "rounding == 0" }, "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ] })",
                "knob_scope.S: not a knob"},
        BadPlan{R"({ "knobs": { "R": [1] }, "knob_scope": { "R": 1 }, "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ] })",
                "knob_scope.R: expected an expression"},
        BadPlan{R"({ "knobs": { "R": [1] }, "knob_scope": { "R": "M > 4" }, "launch": [ { "kernel": "k", "grid": [1], "block": [1], "args": [] } ] })",
                "knob_scope.R: unknown name 'M'"}));

// knob_scope: a knob the parameter setting ignores is held to its default for the tuner.
TEST(PlanTest, KnobScopeHoldsIgnoredKnobsToTheirDefault) {
  constexpr char kScoped[] = R"P(/* warpsmith:plan
{ "knobs": { "ROWS": [4, 8], "FLOOR_UNROLL": [2, 1, 4] },
  "knob_scope": { "FLOOR_UNROLL": "rounding == 1" },
  "launch": [ { "kernel": "quant", "grid": ["ceil_div(M, ROWS)"], "block": [256],
                "args": ["x", "q", "scales", "M", "K"] } ] }
*/
extern "C" __global__ void quant() {}
)P";
  auto plan = ParsePlan(kScoped);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ProblemSpec spec = QuantizeSpec();
  ASSERT_TRUE(ValidatePlan(*plan, spec).ok());
  auto rceil = ScopedKnobs(*plan, spec, {});  // the default, rceil
  ASSERT_TRUE(rceil.ok()) << rceil.status().message();
  EXPECT_EQ(rceil->at("FLOOR_UNROLL"), std::vector<int64_t>{2});
  EXPECT_EQ(rceil->at("ROWS"), (std::vector<int64_t>{4, 8}));  // unscoped: searched everywhere
  auto floor = ScopedKnobs(*plan, spec, {{"rounding", "floor"}});
  ASSERT_TRUE(floor.ok()) << floor.status().message();
  EXPECT_EQ(floor->at("FLOOR_UNROLL"), (std::vector<int64_t>{2, 1, 4}));
  auto bad = ScopedKnobs(*plan, spec, {{"rounding", "up"}});
  EXPECT_FALSE(bad.ok());
  // A scoped-out knob still resolves when set: the plan stays valid, the kernel ignores it.
  EXPECT_TRUE(ResolvePlan(*plan, spec, {{"M", 8}, {"K", 32}, {"rounding", 0}},
                          {{"FLOOR_UNROLL", 4}}, {}).ok());
}

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
