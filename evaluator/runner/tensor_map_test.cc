// The tensor-map encoding (the exact arguments of cuTensorMapEncodeTiled) and the job's
// tensor-map arguments, without a GPU.
#include "evaluator/runner/tensor_map.h"

#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/runner/job.h"

namespace ws::runner {
namespace {

using json = nlohmann::json;

TensorMapSpec Map(std::initializer_list<int64_t> dims, std::initializer_list<int64_t> box) {
  TensorMapSpec m;
  m.rank = static_cast<int>(dims.size());
  int d = 0;
  for (int64_t v : dims) m.dims[d++] = v;
  d = 0;
  for (int64_t v : box) m.box[d++] = v;
  return m;
}

TEST(TensorMapEncodingTest, TwoDimensionalBf16) {
  TensorMapSpec m = Map({4096, 1024}, {64, 128});  // [M=1024, K=4096] row-major, K innermost
  m.swizzle = 128;
  m.l2_promotion = 256;
  auto e = ComputeTensorMapEncoding(kWsDtypeBF16, 4096 * 1024, m);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_FALSE(e->empty);
  EXPECT_EQ(e->data_type, kTmaBfloat16);
  EXPECT_EQ(e->rank, 2u);
  EXPECT_EQ(e->global_dim[0], 4096u);
  EXPECT_EQ(e->global_dim[1], 1024u);
  EXPECT_EQ(e->global_strides[0], 8192u);
  EXPECT_EQ(e->box_dim[0], 64u);
  EXPECT_EQ(e->box_dim[1], 128u);
  EXPECT_EQ(e->element_strides[0], 1u);
  EXPECT_EQ(e->element_strides[1], 1u);
  EXPECT_EQ(e->interleave, 0);
  EXPECT_EQ(e->swizzle, 3);
  EXPECT_EQ(e->l2_promotion, 3);
  EXPECT_EQ(e->oob_fill, 0);
}

TEST(TensorMapEncodingTest, ThreeDimensionalF32StridesAccumulate) {
  TensorMapSpec m = Map({8, 3, 5}, {4, 3, 1});
  m.element_strides[0] = 2;
  m.oob_nan = true;
  m.swizzle = 32;
  m.l2_promotion = 128;
  auto e = ComputeTensorMapEncoding(kWsDtypeF32, 8 * 3 * 5, m);
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_EQ(e->data_type, kTmaFloat32);
  EXPECT_EQ(e->global_strides[0], 32u);  // 8 * 4 bytes
  EXPECT_EQ(e->global_strides[1], 96u);  // 8 * 3 * 4 bytes
  EXPECT_EQ(e->global_strides[2], 0u);   // unused
  EXPECT_EQ(e->element_strides[0], 2u);
  EXPECT_EQ(e->swizzle, 1);
  EXPECT_EQ(e->l2_promotion, 2);
  EXPECT_EQ(e->oob_fill, 1);
}

TEST(TensorMapEncodingTest, DtypesMapToTmaTypes) {
  const std::pair<int, int> cases[] = {
      {kWsDtypeF16, kTmaFloat16},    {kWsDtypeFP8E4M3, kTmaUint8}, {kWsDtypeFP8E5M2, kTmaUint8},
      {kWsDtypeE8M0, kTmaUint8},     {kWsDtypeU8, kTmaUint8},      {kWsDtypeI32, kTmaInt32},
      {kWsDtypeI64, kTmaInt64}};
  for (auto [dtype, tma] : cases) {
    // 16 bytes of innermost box whatever the element size.
    TensorMapSpec m = Map({64, 2}, {16 / ws_dtype_size(dtype), 1});
    auto e = ComputeTensorMapEncoding(dtype, 128, m);
    ASSERT_TRUE(e.ok()) << dtype << ": " << e.status().message();
    EXPECT_EQ(e->data_type, tma) << dtype;
    EXPECT_EQ(e->global_strides[0], static_cast<uint64_t>(64 * ws_dtype_size(dtype)));
  }
}

TEST(TensorMapEncodingTest, EmptyTensorEncodesNothing) {
  auto e = ComputeTensorMapEncoding(kWsDtypeBF16, 0, Map({100, 0}, {8, 1}));
  ASSERT_TRUE(e.ok()) << e.status().message();
  EXPECT_TRUE(e->empty);
}

TEST(TensorMapEncodingTest, Errors) {
  struct Case {
    int dtype;
    int64_t numel;
    TensorMapSpec map;
    const char* expected;
  };
  TensorMapSpec swz = Map({64, 2}, {64, 1});
  swz.swizzle = 64;
  TensorMapSpec bad_swizzle = Map({64, 2}, {8, 1});
  bad_swizzle.swizzle = 16;
  TensorMapSpec nan_u8 = Map({64, 2}, {16, 1});
  nan_u8.oob_nan = true;
  TensorMapSpec es = Map({64, 2}, {8, 1});
  es.element_strides[1] = 0;
  TensorMapSpec six = Map({1}, {1});
  six.rank = 6;
  const Case cases[] = {
      {kWsDtypeBF16, 100, Map({64, 2}, {8, 1}), "the product is 128, the tensor has 100"},
      {kWsDtypeBF16, 128, Map({64, 2}, {300, 1}), "box[0] = 300 is outside [1, 256]"},
      {kWsDtypeBF16, 128, Map({64, 2}, {4, 1}), "box[0] = 4: 8 bytes, not a multiple of 16"},
      {kWsDtypeBF16, 128, swz, "more than the 64-byte swizzle span"},
      {kWsDtypeBF16, 128, bad_swizzle, "swizzle: 16 is not one of"},
      {kWsDtypeU8, 128, nan_u8, "oob_fill"},
      {kWsDtypeBF16, 128, es, "element_strides[1] = 0"},
      {kWsDtypeBF16, 6, Map({3, 2}, {8, 1}), "stride of dimension 1 is 6 bytes"},
      {kWsDtypeBF16, 1, six, "dims: 6 dimensions"},
      {kWsDtypeBF16, 128, Map({-64, -2}, {8, 1}), "dims[0] = -64 is negative"},
      {42, 128, Map({64, 2}, {8, 1}), "no TMA data type"},
  };
  for (const Case& c : cases) {
    auto e = ComputeTensorMapEncoding(c.dtype, c.numel, c.map);
    ASSERT_FALSE(e.ok()) << c.expected;
    EXPECT_NE(e.status().message().find(c.expected), std::string::npos) << e.status().message();
  }
}

json JobWithArg(const json& arg) {
  return {{"cubin", "/k.cubin"},
          {"result", "/r.json"},
          {"cases",
           {{{"id", "c"},
             {"launches",
              {{{"kernel", "k"}, {"grid", {1}}, {"block", {32}}, {"pdl", true}, {"args", {arg}}}}},
             {"tensors",
              {{{"name", "x"}, {"dtype", "bf16"}, {"numel", 64 * 32}, {"role", "input"}},
               {{"name", "y"}, {"dtype", "bf16"}, {"numel", 64 * 32}, {"role", "output"}}}},
             {"input_seeds", {7}}}}}};
}

TEST(TensorMapJobTest, ParsesATensorMapArgument) {
  auto job = ParseJob(JobWithArg({{"tensor_map",
                                   {{"name", "tma_y"},
                                    {"tensor", "y"},
                                    {"dims", {64, 32}},
                                    {"box", {64, 16}},
                                    {"swizzle", 128},
                                    {"oob_fill", "zero"},
                                    {"l2_promotion", 0}}}})
                          .dump());
  ASSERT_TRUE(job.ok()) << job.status().message();
  const LaunchJob& l = job->cases[0].launches[0];
  EXPECT_TRUE(l.pdl);
  const ArgJob& a = l.args[0];
  EXPECT_EQ(a.kind, ArgJob::Kind::kTensorMap);
  EXPECT_EQ(a.tensor, 1);
  EXPECT_EQ(a.map_name, "tma_y");
  EXPECT_EQ(a.encoding.global_strides[0], 128u);
  EXPECT_EQ(a.encoding.box_dim[1], 16u);
  EXPECT_EQ(a.encoding.swizzle, 3);
}

TEST(TensorMapJobTest, RejectsBadMaps) {
  const std::pair<json, const char*> cases[] = {
      {{{"tensor", "z"}, {"dims", {64, 32}}, {"box", {64, 16}}}, "tensor: unknown tensor 'z'"},
      {{{"tensor", "x"}, {"dims", {64, 32}}, {"box", {64}}}, "box: 1 extents for 2 dims"},
      {{{"tensor", "x"}, {"dims", {64, 32}}, {"box", {64, 16}}, {"extra", 1}},
       "tensor_map.extra: unknown field"},
      {{{"tensor", "x"}, {"dims", {64, 16}}, {"box", {64, 16}}},
       "args[0].tensor_map.dims: the product is 1024, the tensor has 2048 elements"},
      {{{"tensor", "x"}, {"dims", {64, 32}}, {"box", {64, 16}}, {"swizzle", 48}}, "swizzle: 48"},
      {{{"tensor", "x"}, {"dims", {64, 32}}, {"box", {64, 16}}, {"oob_fill", "one"}},
       "oob_fill: 'one'"},
      {{{"tensor", "x"}, {"dims", {64, 32}}, {"box", {64, 300}}}, "box[1]: 300 is out of range"},
  };
  for (const auto& [map, expected] : cases) {
    auto job = ParseJob(JobWithArg({{"tensor_map", map}}).dump());
    ASSERT_FALSE(job.ok()) << expected;
    EXPECT_NE(job.status().message().find(expected), std::string::npos) << job.status().message();
  }
}

}  // namespace
}  // namespace ws::runner
