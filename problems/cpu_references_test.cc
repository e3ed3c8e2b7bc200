#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/mxfp8_quantize_rowwise/reference.h"
#include "problems/problems.h"

namespace ws {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_rowwise/spec.json";

class CpuReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto spec = LoadProblem(kSpec);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    spec_ = *spec;
  }

  // x [m, k] of bf16 patterns: a mix of values whose blocks differ between rceil and floor.
  static HostTensor MakeX(int64_t m, int64_t k) {
    HostTensor x{DType::kBF16, {m, k}, std::vector<uint8_t>(m * k * 2)};
    for (int64_t i = 0; i < m * k; ++i) {
      const uint16_t v =
          static_cast<uint16_t>(0x3F00 + (i * 2654435761u) % 0x0900) | ((i & 1) ? 0x8000 : 0);
      x.bytes[2 * i] = static_cast<uint8_t>(v & 0xFF);
      x.bytes[2 * i + 1] = static_cast<uint8_t>(v >> 8);
    }
    return x;
  }

  SymbolTable Symbols(int64_t m, int64_t k, const std::map<std::string, std::string>& params) {
    return BindSymbols(spec_, Shape{{{"M", m}, {"K", k}}, ""}, params);
  }

  ProblemSpec spec_;
};

TEST_F(CpuReferenceTest, Registry) {
  EXPECT_NE(FindCpuReference("mxfp8_quantize_rowwise"), nullptr);
  EXPECT_EQ(FindCpuReference("nope"), nullptr);
}

TEST_F(CpuReferenceTest, MatchesDirectCallForBothRoundings) {
  constexpr int64_t kM = 5, kK = 96;
  const HostTensor x = MakeX(kM, kK);
  std::vector<uint16_t> words(kM * kK);
  for (int64_t i = 0; i < kM * kK; ++i) words[i] = x.bytes[2 * i] | (x.bytes[2 * i + 1] << 8);
  std::vector<uint8_t> scales_by_mode[2];
  for (const auto& [name, mode] :
       {std::pair{"rceil", mxfp8::Rounding::kRceil}, std::pair{"floor", mxfp8::Rounding::kFloor}}) {
    const std::map<std::string, std::string> params = {{"rounding", name}};
    const auto out = RunCpuReference(spec_, Symbols(kM, kK, params), params, {{"x", x}});
    ASSERT_TRUE(out.ok()) << out.status().message();
    std::vector<uint8_t> q(kM * kK), scales(kM * kK / 32);
    mxfp8::QuantizeRowwise(words.data(), kM, kK, mode, q.data(), scales.data());
    const HostTensor& got_q = out->at("q");
    const HostTensor& got_s = out->at("scales");
    EXPECT_EQ(got_q.dtype, DType::kFP8E4M3);
    EXPECT_EQ(got_q.dims, (std::vector<int64_t>{kM, kK}));
    EXPECT_EQ(got_s.dtype, DType::kE8M0);
    EXPECT_EQ(got_s.dims, (std::vector<int64_t>{kM, kK / 32}));
    EXPECT_EQ(got_q.bytes, q) << name;
    EXPECT_EQ(got_s.bytes, scales) << name;
    scales_by_mode[mode == mxfp8::Rounding::kFloor] = scales;
  }
  EXPECT_NE(scales_by_mode[0], scales_by_mode[1]) << "inputs should tell the modes apart";
}

TEST_F(CpuReferenceTest, RejectsBadInputs) {
  const auto params = *ResolveParams(spec_, {});
  const SymbolTable symbols = Symbols(2, 64, params);
  HostTensor good = MakeX(2, 64);
  HostTensor wrong_dtype = good;
  wrong_dtype.dtype = DType::kF16;
  HostTensor wrong_dims = good;
  wrong_dims.dims = {4, 32};
  HostTensor short_bytes = good;
  short_bytes.bytes.pop_back();
  struct Case {
    TensorMap inputs;
    const char* want;
  };
  const Case cases[] = {
      {{}, "input 'x' missing"},
      {{{"x", wrong_dtype}}, "input 'x' is f16, the spec says bf16"},
      {{{"x", wrong_dims}}, "input 'x' has dims [4, 32], the spec says [2, 64]"},
      {{{"x", short_bytes}}, "holds 255 bytes, its dims need 256"},
      {{{"x", good}, {"q", good}}, "'q' is not an input tensor"},
      {{{"x", good}, {"y", good}}, "'y' is not an input tensor"},
  };
  for (const Case& c : cases) {
    const auto r = RunCpuReference(spec_, symbols, params, c.inputs);
    ASSERT_FALSE(r.ok()) << c.want;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace ws
