#include "problems/mxfp8_quantize_dual/reference.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec = std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_dual/spec.json";

// A 32 x 64 matrix where the two orientations disagree: row 0 holds 448 at column 0 and a NaN at
// column 40; everything else is 1.0 in column 1 and zeros.
TEST(QuantizeDualTest, WorkedExample) {
  constexpr int kM = 32, kK = 64;
  std::vector<uint16_t> x(kM * kK, 0);
  x[0] = 0x43E0;   // 448: row block (0,0) and column block (0,0) both get S = 127 (rceil)
  x[40] = 0x7FC0;  // NaN: row block (0,1) and column block (40,0) are NaN blocks
  for (int r = 0; r < kM; ++r) x[r * kK + 1] = 0x3F80;  // column 1: all 1.0
  std::vector<uint8_t> q(kM * kK), s(kM * 2), q_t(kK * kM), s_t(kK);
  QuantizeDual(x.data(), kM, kK, Rounding::kRceil, q.data(), s.data(), q_t.data(), s_t.data());
  // Rows: row 0 = {448, 1.0, 0...} | {NaN ...}: S = 127 then 0xFF; rows 1..31 have amax 1.0 in
  // block 0 (S = 119) and zeros in block 1 (S = 0).
  EXPECT_EQ(s[0], 127);
  EXPECT_EQ(s[1], 0xFF);
  for (int r = 1; r < kM; ++r) {
    EXPECT_EQ(s[2 * r], 119) << r;
    EXPECT_EQ(s[2 * r + 1], 0) << r;
    EXPECT_EQ(q[r * kK + 1], 0x78) << r;  // 1.0 * 2^8
  }
  EXPECT_EQ(q[0], 0x7E);
  EXPECT_EQ(q[1], 0x38);  // 1.0 at S = 127
  for (int c = 32; c < 64; ++c) EXPECT_EQ(q[c], 0x7F) << c;
  // Columns: column 0 holds 448 (S = 127), column 1 all 1.0 (S = 119), column 40 a NaN, the
  // others zeros.
  for (int c = 0; c < kK; ++c) {
    const uint8_t want = c == 0 ? 127 : c == 1 ? 119 : c == 40 ? 0xFF : 0;
    EXPECT_EQ(s_t[c], want) << c;
  }
  EXPECT_EQ(q_t[0], 0x7E);
  for (int r = 0; r < kM; ++r) {
    EXPECT_EQ(q_t[1 * kM + r], 0x78) << r;
    EXPECT_EQ(q_t[40 * kM + r], 0x7F) << r;
    EXPECT_EQ(q_t[2 * kM + r], 0x00) << r;
  }
}

// The registered reference equals the two single-orientation quantizers on every test shape's
// worth of random bits, for both roundings.
TEST(QuantizeDualTest, RegisteredReferenceMatchesRowwiseAndColwise) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  constexpr int64_t kM = 96, kK = 160;
  std::mt19937 rng(11);
  std::vector<uint16_t> x(kM * kK);
  for (auto& v : x) v = static_cast<uint16_t>(rng());
  HostTensor xt{DType::kBF16, {kM, kK}, {}};
  StoreBf16Words(x, xt);
  for (const char* rounding : {"rceil", "floor"}) {
    const std::map<std::string, std::string> params = {{"rounding", rounding}};
    const SymbolTable symbols = BindSymbols(*spec, Shape{{{"M", kM}, {"K", kK}}, ""}, params);
    auto out = RunCpuReference(*spec, symbols, params, {{"x", xt}});
    ASSERT_TRUE(out.ok()) << out.status().message();
    const Rounding mode = std::string(rounding) == "floor" ? Rounding::kFloor : Rounding::kRceil;
    std::vector<uint8_t> q(kM * kK), s(kM * kK / 32), q_t(kM * kK), s_t(kM * kK / 32);
    QuantizeRowwise(x.data(), kM, kK, mode, q.data(), s.data());
    QuantizeColwiseTransposed(x.data(), kM, kK, mode, q_t.data(), s_t.data());
    EXPECT_EQ(out->at("q").bytes, q) << rounding;
    EXPECT_EQ(out->at("scales").bytes, s) << rounding;
    EXPECT_EQ(out->at("q_t").bytes, q_t) << rounding;
    EXPECT_EQ(out->at("scales_t").bytes, s_t) << rounding;
  }
}

TEST(QuantizeDualTest, RejectsRaggedShapes) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  TensorMap outputs;
  const Status s = QuantizeDualReference(*spec, {{"M", 32}, {"K", 48}}, {}, {}, outputs);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("multiples of 32"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace ws::mxfp8
