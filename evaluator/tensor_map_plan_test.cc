// Plans with TMA tensor maps and programmatic dependent launch: parsing, validation against a
// problem, resolution per shape, and the runner job the evaluator writes for them, read back by
// the runner's own parser (evaluator -> runner round trip).
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/evaluator.h"
#include "evaluator/internal.h"
#include "evaluator/runner/job.h"

namespace ws {
namespace {

using json = nlohmann::json;

ProblemSpec GemmSpec() {
  ProblemSpec s;
  s.name = "g";
  s.symbols = {"M", "N", "K"};
  s.tensors = {{"a", DType::kBF16, {"M", "K"}, TensorRole::kInput, {}},
               {"b", DType::kFP8E4M3, {"N", "K"}, TensorRole::kInput, {}},
               {"d", DType::kF32, {"M", "N"}, TensorRole::kOutput, {}}};
  return s;
}

const SymbolTable kShape = {{"M", 256}, {"N", 128}, {"K", 512}};

std::string Source(const std::string& maps, const std::string& args = R"("tma_a", "d")",
                   const std::string& extra = "") {
  return R"(/* warpsmith:plan
{ "knobs": { "BM": [64, 128], "BK": [64] },
  "tensor_maps": )" +
         maps + R"(,
  "launch": [ { "kernel": "gemm", "grid": ["M / BM"], "block": [128], )" +
         extra + R"("args": [)" + args + R"(] } ] }
*/
extern "C" __global__ void gemm() {}
)";
}

const char kMapA[] = R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["BK", "BM"],
                         "swizzle": 128, "oob_fill": "zero", "l2_promotion": 256 } })";

TEST(TensorMapPlanTest, ParsesValidatesAndResolves) {
  auto plan = ParsePlan(Source(kMapA, R"("tma_a", "d", "M")", R"("pdl": true, )"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_EQ(plan->tensor_maps.size(), 1u);
  const PlanTensorMap& m = plan->tensor_maps.at("tma_a");
  EXPECT_EQ(m.tensor, "a");
  EXPECT_EQ(m.dims, (std::vector<std::string>{"K", "M"}));
  EXPECT_EQ(m.box, (std::vector<std::string>{"BK", "BM"}));
  EXPECT_EQ(m.swizzle, 128);
  EXPECT_EQ(m.l2_promotion, 256);
  EXPECT_FALSE(m.oob_nan);
  EXPECT_EQ(plan->launches[0].args[0].kind, PlanArg::Kind::kTensorMap);
  EXPECT_EQ(plan->launches[0].pdl, "1");
  ASSERT_TRUE(ValidatePlan(*plan, GemmSpec()).ok());

  auto rp = ResolvePlan(*plan, GemmSpec(), kShape, {{"BM", 128}}, {});
  ASSERT_TRUE(rp.ok()) << rp.status().message();
  const ResolvedTensorMap& rm = rp->tensor_maps.at("tma_a");
  EXPECT_EQ(rm.tensor, "a");
  EXPECT_EQ(rm.spec.rank, 2);
  EXPECT_EQ(rm.spec.dims[0], 512);
  EXPECT_EQ(rm.spec.dims[1], 256);
  EXPECT_EQ(rm.spec.box[0], 64);
  EXPECT_EQ(rm.spec.box[1], 128);
  EXPECT_EQ(rm.spec.element_strides[1], 1);
  EXPECT_EQ(rp->launches[0].args[0].kind, PlanArg::Kind::kTensorMap);
  EXPECT_EQ(rp->launches[0].args[0].tensor, "tma_a");
  EXPECT_TRUE(rp->launches[0].pdl);
}

// The job the evaluator writes for a plan with maps is what the runner's parser accepts, with
// the same numbers, and the encoding the runner computes from it is the expected one.
TEST(TensorMapPlanTest, JobRoundTripsThroughTheRunnersParser) {
  auto plan = ParsePlan(Source(
      R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": ["BK", "BM"], "swizzle": 128,
                      "oob_fill": "nan", "l2_promotion": 64, "element_strides": [1, 2] },
           "tma_b": { "tensor": "b", "dims": ["K", "N"], "box": [128, 32] } })",
      R"("tma_a", "tma_b", "d", "tma_a")", R"("pdl": true, )"));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_TRUE(ValidatePlan(*plan, GemmSpec()).ok());
  auto rp = ResolvePlan(*plan, GemmSpec(), kShape, {}, {});
  ASSERT_TRUE(rp.ok()) << rp.status().message();
  auto tensors = TensorsJson(GemmSpec(), kShape);
  ASSERT_TRUE(tensors.ok()) << tensors.status().message();
  json job = {{"cubin", "/k.cubin"},
              {"result", "/r.json"},
              {"cases",
               {{{"id", "c"},
                 {"launches", LaunchesJson(*rp)},
                 {"tensors", *tensors},
                 {"input_seeds", {1, 2}},
                 {"timing", nullptr}}}}};
  auto parsed = runner::ParseJob(job.dump());
  ASSERT_TRUE(parsed.ok()) << parsed.status().message() << "\n" << job.dump(2);
  const runner::LaunchJob& l = parsed->cases[0].launches[0];
  EXPECT_TRUE(l.pdl);
  ASSERT_EQ(l.args.size(), 4u);
  const runner::ArgJob& a = l.args[0];
  ASSERT_EQ(a.kind, runner::ArgJob::Kind::kTensorMap);
  EXPECT_EQ(a.map_name, "tma_a");
  EXPECT_EQ(a.tensor, 0);
  EXPECT_EQ(a.encoding.data_type, runner::kTmaBfloat16);
  EXPECT_EQ(a.encoding.rank, 2u);
  EXPECT_EQ(a.encoding.global_dim[0], 512u);
  EXPECT_EQ(a.encoding.global_dim[1], 256u);
  EXPECT_EQ(a.encoding.global_strides[0], 1024u);  // 512 bf16
  EXPECT_EQ(a.encoding.box_dim[0], 64u);
  EXPECT_EQ(a.encoding.box_dim[1], 64u);  // BM's default
  EXPECT_EQ(a.encoding.element_strides[1], 2u);
  EXPECT_EQ(a.encoding.swizzle, 3);       // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(a.encoding.l2_promotion, 1);  // CU_TENSOR_MAP_L2_PROMOTION_L2_64B
  EXPECT_EQ(a.encoding.oob_fill, 1);      // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
  const runner::ArgJob& b = l.args[1];
  ASSERT_EQ(b.kind, runner::ArgJob::Kind::kTensorMap);
  EXPECT_EQ(b.tensor, 1);
  EXPECT_EQ(b.encoding.data_type, runner::kTmaUint8);
  EXPECT_EQ(b.encoding.global_strides[0], 512u);
  EXPECT_EQ(b.encoding.swizzle, 0);
  EXPECT_EQ(l.args[2].kind, runner::ArgJob::Kind::kTensor);
  EXPECT_EQ(l.args[3].map_name, "tma_a");
}

struct BadMap {
  std::string maps;
  std::string args;
  const char* expected;  // a substring of the error
};

class TensorMapPlanErrorTest : public testing::TestWithParam<BadMap> {};

TEST_P(TensorMapPlanErrorTest, NamesTheField) {
  auto plan = ParsePlan(Source(GetParam().maps, GetParam().args));
  Status s = plan.ok() ? ValidatePlan(*plan, GemmSpec()) : plan.status();
  if (s.ok()) s = ResolvePlan(*plan, GemmSpec(), kShape, {}, {}).status();
  ASSERT_FALSE(s.ok()) << GetParam().maps;
  EXPECT_NE(s.message().find(GetParam().expected), std::string::npos) << s.message();
}

const std::string kArgs = R"("tma_a", "d")";

INSTANTIATE_TEST_SUITE_P(
    Table, TensorMapPlanErrorTest,
    testing::Values(
        BadMap{R"([1])", kArgs, "tensor_maps: expected an object"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "swizle": 128 } })",
               kArgs, "tensor_maps.tma_a.swizle: unknown field"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "swizzle": 96 } })",
               kArgs, "tensor_maps.tma_a.swizzle: 96 is not one of 0, 32, 64, 128"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "l2_promotion": 32 } })",
               kArgs, "tensor_maps.tma_a.l2_promotion: 32 is not one of"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "oob_fill": "inf" } })",
               kArgs, "tensor_maps.tma_a.oob_fill"},
        BadMap{R"({ "tma_a": { "tensor": "z", "dims": ["K", "M"], "box": [64, 64] } })", kArgs,
               "tensor_maps.tma_a.tensor: the problem has no tensor 'z'"},
        BadMap{R"({ "tma_a": { "dims": ["K", "M"], "box": [64, 64] } })", kArgs,
               "tensor_maps.tma_a.tensor"},
        BadMap{R"({ "tma_a": { "tensor": "a", "box": [64, 64] } })", kArgs,
               "tensor_maps.tma_a.dims: missing"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": [1, 1, 1, 1, 1, 1], "box": [1, 1, 1, 1, 1, 1] } })",
               kArgs, "tensor_maps.tma_a.dims: expected an array of 1 to 5"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64] } })", kArgs,
               "tensor_maps.tma_a.box: 1 extents for 2 dims"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "element_strides": [1] } })",
               kArgs, "tensor_maps.tma_a.element_strides: 1 strides for 2 dims"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "Q"], "box": [64, 64] } })", kArgs,
               "tensor_maps.tma_a.dims[1]: unknown name 'Q'"},
        BadMap{R"({ "a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64] } })", R"("a", "d")",
               "tensor_maps.a: clashes with a tensor"},
        BadMap{R"({ "K": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64] } })", R"("K", "d")",
               "tensor_maps.K: clashes"},
        BadMap{R"({ "BM": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64] } })", kArgs,
               "tensor_maps.BM: the name is already a knob"},
        BadMap{R"({ "workspace": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64] } })", kArgs,
               "tensor_maps.workspace"},
        // Shape-dependent checks, at ResolvePlan.
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [512, 64] } })", kArgs,
               "tensor_maps.tma_a.box[0] = 512 is outside [1, 256]"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [0, 64] } })", kArgs,
               "tensor_maps.tma_a.box[0] = 0"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [4, 64] } })", kArgs,
               "tensor_maps.tma_a.box[0] = 4: 8 bytes, not a multiple of 16"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [128, 64], "swizzle": 128 } })",
               kArgs, "more than the 128-byte swizzle span"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64], "swizzle": 64 } })",
               kArgs, "more than the 64-byte swizzle span"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "N"], "box": [64, 64] } })", kArgs,
               "tensor_maps.tma_a.dims: the product is 65536, the tensor has 131072 elements"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K * M"], "box": [64], "element_strides": [9] } })",
               kArgs, "tensor_maps.tma_a.element_strides[0] = 9"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": [4, "K * M / 4"], "box": [8, 64] } })", kArgs,
               "the stride of dimension 1 is 8 bytes"},
        BadMap{R"({ "tma_a": { "tensor": "b", "dims": ["K", "N"], "box": [64, 64], "oob_fill": "nan" } })",
               kArgs, "oob_fill: \"nan\" needs a bf16, f16 or f32 tensor"},
        BadMap{R"({ "tma_a": { "tensor": "a", "dims": ["K", "M"], "box": [64, 64] } })",
               R"({"i64": "tma_a"}, "d")", "unknown name 'tma_a'"}));

TEST(TensorMapPlanTest, PdlMustBeABooleanOrAnExpression) {
  auto plan = ParsePlan(Source(kMapA, R"("tma_a", "d")", R"("pdl": 1, )"));
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("launch[0].pdl: expected true, false or an expression"),
            std::string::npos)
      << plan.status().message();
}

// A shape with M = 0 leaves tensor 'a' empty: its map resolves (the runner passes zeros).
TEST(TensorMapPlanTest, AnEmptyTensorResolves) {
  auto plan = ParsePlan(Source(kMapA, R"("tma_a", "d")").replace(
      Source(kMapA).find("\"M / BM\""), 8, "1       "));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  auto rp = ResolvePlan(*plan, GemmSpec(), {{"M", 0}, {"N", 128}, {"K", 512}}, {}, {});
  ASSERT_TRUE(rp.ok()) << rp.status().message();
  EXPECT_EQ(rp->tensor_maps.at("tma_a").spec.dims[1], 0);
}

}  // namespace
}  // namespace ws
