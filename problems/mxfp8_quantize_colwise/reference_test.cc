#include "problems/mxfp8_quantize_colwise/reference.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_colwise/spec.json";

HostTensor Bf16Tensor(const std::vector<uint16_t>& words, std::vector<int64_t> dims) {
  HostTensor t{DType::kBF16, std::move(dims), {}};
  StoreBf16Words(words, t);
  return t;
}

// A 64 x 3 matrix, two blocks per column, each block one edge case; every value hand-derived
// from the block rules (see mxfp8_quantize_rowwise's tests for the derivations).
struct Worked {
  std::vector<uint16_t> x = std::vector<uint16_t>(64 * 3, 0);
  Worked() {
    auto at = [&](int r, int c) -> uint16_t& { return x[r * 3 + c]; };
    at(0, 0) = 0x3F80;   // 1.0 \ column 0, block 0: amax 1, S = 119 either way, q = x * 2^8
    at(1, 0) = 0x3F00;   // 0.5 /
    at(7, 0) = 0xBF80;   // -1.0
    at(5, 2) = 0x7FC0;   // column 2, block 0: NaN
    at(33, 0) = 0x43E1;  // 450 \ column 0, block 1: rceil S = 128 (x / 2), floor S = 127
    at(40, 0) = 0x43E0;  // 448 /
    at(50, 1) = 0x7F80;  // column 1, block 1: +Inf (rceil S = 254, floor NaN block)
    at(51, 1) = 0x3F80;  // 1.0, under S = 254: 2^-127 rounds to 0
    at(63, 2) = 0x0001;  // column 2, block 1: bf16 subnormal 2^-133, S = 0, q = 2^-6
  }
};

TEST(QuantizeColwiseTest, WorkedExampleRceil) {
  const Worked w;
  std::vector<uint8_t> q_t(3 * 64, 0xAA), s_t(3 * 2, 0xAA);
  QuantizeColwiseTransposed(w.x.data(), 64, 3, Rounding::kRceil, q_t.data(), s_t.data());
  // scales_t [K=3, M/32=2]: row c holds column c's blocks.
  EXPECT_EQ(s_t, (std::vector<uint8_t>{119, 128, 0, 254, 0xFF, 0}));
  std::vector<uint8_t> want(3 * 64, 0x00);
  want[0 * 64 + 0] = 0x78;
  want[0 * 64 + 1] = 0x70;
  want[0 * 64 + 7] = 0xF8;
  want[0 * 64 + 33] = 0x76;                              // 450 / 2 = 225 -> 224
  want[0 * 64 + 40] = 0x76;                              // 448 / 2 = 224
  want[1 * 64 + 50] = 0x7E;                              // Inf * 2^-127 saturates
  for (int r = 0; r < 32; ++r) want[2 * 64 + r] = 0x7F;  // the NaN block
  want[2 * 64 + 63] = 0x08;
  EXPECT_EQ(q_t, want);
}

TEST(QuantizeColwiseTest, WorkedExampleFloor) {
  const Worked w;
  std::vector<uint8_t> q_t(3 * 64, 0xAA), s_t(3 * 2, 0xAA);
  QuantizeColwiseTransposed(w.x.data(), 64, 3, Rounding::kFloor, q_t.data(), s_t.data());
  EXPECT_EQ(s_t, (std::vector<uint8_t>{119, 127, 0, 0xFF, 0xFF, 0}));
  EXPECT_EQ(q_t[0 * 64 + 33], 0x7E);  // 450 saturates at S = 127
  EXPECT_EQ(q_t[0 * 64 + 40], 0x7E);
  for (int r = 32; r < 64; ++r) EXPECT_EQ(q_t[1 * 64 + r], 0x7F) << r;  // Inf: NaN block
  EXPECT_EQ(q_t[1 * 64 + 31], 0x00);  // block 0 of column 1 is zeros
}

// Colwise of x equals rowwise of x's transpose, on random bit patterns (NaN, Inf, subnormals).
TEST(QuantizeColwiseTest, EqualsRowwiseOfTheTranspose) {
  constexpr int64_t kM = 96, kK = 40;
  std::mt19937 rng(7);
  std::vector<uint16_t> x(kM * kK), xt(kK * kM);
  for (int64_t r = 0; r < kM; ++r) {
    for (int64_t c = 0; c < kK; ++c) {
      // Mostly one exponent range per column so blocks are not all dominated by one huge value.
      uint16_t v = static_cast<uint16_t>(rng());
      if (rng() % 8 != 0)
        v = static_cast<uint16_t>((v & 0x807F) | ((100 + c) << 7));
      x[r * kK + c] = v;
      xt[c * kM + r] = v;
    }
  }
  for (Rounding mode : {Rounding::kRceil, Rounding::kFloor}) {
    std::vector<uint8_t> q_t(kK * kM), s_t(kK * kM / 32), q_r(kK * kM), s_r(kK * kM / 32);
    QuantizeColwiseTransposed(x.data(), kM, kK, mode, q_t.data(), s_t.data());
    QuantizeRowwise(xt.data(), kK, kM, mode, q_r.data(), s_r.data());
    EXPECT_EQ(q_t, q_r);
    EXPECT_EQ(s_t, s_r);
  }
}

TEST(QuantizeColwiseTest, RegisteredReferenceFollowsTheSpec) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const Worked w;
  const TensorMap inputs = {{"x", Bf16Tensor(w.x, {64, 3})}};
  for (const char* rounding : {"rceil", "floor"}) {
    const std::map<std::string, std::string> params = {{"rounding", rounding}};
    const Shape shape{{{"M", 64}, {"K", 3}}, ""};
    // K = 3 breaks the spec's constraints but not the reference: call it directly.
    TensorMap outputs = {{"q_t", HostTensor{DType::kFP8E4M3, {3, 64}, std::vector<uint8_t>(192)}},
                         {"scales_t", HostTensor{DType::kE8M0, {3, 2}, std::vector<uint8_t>(6)}}};
    ASSERT_TRUE(
        QuantizeColwiseReference(*spec, BindSymbols(*spec, shape, params), params, inputs, outputs)
            .ok());
    std::vector<uint8_t> q_t(192), s_t(6);
    QuantizeColwiseTransposed(
        w.x.data(), 64, 3, std::string(rounding) == "floor" ? Rounding::kFloor : Rounding::kRceil,
        q_t.data(), s_t.data());
    EXPECT_EQ(outputs.at("q_t").bytes, q_t) << rounding;
    EXPECT_EQ(outputs.at("scales_t").bytes, s_t) << rounding;
  }
  // Through the registry, at a valid shape.
  const std::map<std::string, std::string> params = {{"rounding", "rceil"}};
  const SymbolTable symbols = BindSymbols(*spec, Shape{{{"M", 32}, {"K", 32}}, ""}, params);
  std::vector<uint16_t> ones(32 * 32, 0x3F80);
  auto out = RunCpuReference(*spec, symbols, params, {{"x", Bf16Tensor(ones, {32, 32})}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->at("scales_t").bytes, std::vector<uint8_t>(32, 119));
  EXPECT_EQ(out->at("q_t").bytes, std::vector<uint8_t>(32 * 32, 0x78));
}

TEST(QuantizeColwiseTest, RejectsRaggedM) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  const std::map<std::string, std::string> params;
  TensorMap outputs = {{"q_t", HostTensor{}}, {"scales_t", HostTensor{}}};
  const TensorMap inputs = {{"x", Bf16Tensor(std::vector<uint16_t>(48 * 32), {48, 32})}};
  const Status s = QuantizeColwiseReference(*spec, {{"M", 48}, {"K", 32}, {"rounding", 0}}, params,
                                            inputs, outputs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("multiple of 32"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ws::mxfp8
