#include "problems/mxfp8_quantize_expert_weights/reference.h"

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "problems/mxfp8_quantize_dual/reference.h"
#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec =
    std::string(WS_SOURCE_DIR) + "/problems/mxfp8_quantize_expert_weights/spec.json";

Result<TensorMap> RunReference(const ProblemSpec& spec, int64_t e, int64_t n, int64_t k,
                      const std::vector<uint16_t>& w, const std::string& rounding) {
  HostTensor wt{DType::kBF16, {e, n, k}, {}};
  StoreBf16Words(w, wt);
  const std::map<std::string, std::string> params = {{"rounding", rounding}};
  const SymbolTable symbols =
      BindSymbols(spec, Shape{{{"E", e}, {"N", n}, {"K", k}}, ""}, params);
  return RunCpuReference(spec, symbols, params, {{"w", wt}});
}

// Two experts of [32, 64]: expert 0 all 1.0, expert 1 all 2^10 except a -Inf at (n 3, k 40).
TEST(QuantizeExpertWeightsTest, WorkedExample) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  constexpr int64_t kE = 2, kN = 32, kK = 64;
  std::vector<uint16_t> w(kE * kN * kK, 0x3F80);
  for (int64_t i = kN * kK; i < 2 * kN * kK; ++i) w[i] = 0x4480;  // 2^10
  w[kN * kK + 3 * kK + 40] = 0xFF80;                               // -Inf
  for (const char* rounding : {"rceil", "floor"}) {
    const bool floor = std::string(rounding) == "floor";
    auto out = RunReference(*spec, kE, kN, kK, w, rounding);
    ASSERT_TRUE(out.ok()) << out.status().message();
    const auto& s_k = out->at("s_k").bytes;  // [2, 32, 2]
    const auto& s_n = out->at("s_n").bytes;  // [2, 64, 1]
    const auto& q_k = out->at("q_k").bytes;  // [2, 32, 64]
    const auto& q_n = out->at("q_n").bytes;  // [2, 64, 32]
    ASSERT_EQ(s_k.size(), 128u);
    ASSERT_EQ(s_n.size(), 128u);
    // Expert 0: amax 1.0 everywhere, S = 119, q = 2^8 (0x78), in both copies.
    for (int i = 0; i < 64; ++i) EXPECT_EQ(s_k[i], 119) << rounding << " s_k " << i;
    for (int i = 0; i < 64; ++i) EXPECT_EQ(s_n[i], 119) << rounding << " s_n " << i;
    for (int i = 0; i < 2048; ++i) ASSERT_EQ(q_k[i], 0x78) << i;
    for (int i = 0; i < 2048; ++i) ASSERT_EQ(q_n[i], 0x78) << i;
    // Expert 1: amax 2^10, S = 129; the -Inf's row block (n 3, block 1) and column block (k 40)
    // get rceil S = 254 (-Inf * 2^-127 saturates to -448, 2^10 * 2^-127 rounds to 0) or, under
    // floor, the NaN scale.
    const uint8_t inf_scale = floor ? 0xFF : 254;
    for (int n = 0; n < kN; ++n) {
      for (int b = 0; b < 2; ++b) {
        EXPECT_EQ(s_k[64 + n * 2 + b], n == 3 && b == 1 ? inf_scale : 129) << n << " " << b;
      }
    }
    for (int k = 0; k < kK; ++k) EXPECT_EQ(s_n[64 + k], k == 40 ? inf_scale : 129) << k;
    EXPECT_EQ(q_k[2048 + 0], 0x78);
    EXPECT_EQ(q_k[2048 + 3 * 64 + 40], floor ? 0x7F : 0xFE);
    EXPECT_EQ(q_k[2048 + 3 * 64 + 41], floor ? 0x7F : 0x00);
    EXPECT_EQ(q_n[2048 + 40 * 32 + 3], floor ? 0x7F : 0xFE);  // q_n[1][k 40][n 3]
    EXPECT_EQ(q_n[2048 + 40 * 32 + 4], floor ? 0x7F : 0x00);
    EXPECT_EQ(q_n[2048 + 39 * 32 + 3], 0x78);
  }
}

TEST(QuantizeExpertWeightsTest, EachExpertIsTheDualQuantizer) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  constexpr int64_t kE = 3, kN = 64, kK = 96;
  std::mt19937 rng(5);
  std::vector<uint16_t> w(kE * kN * kK);
  for (auto& v : w) v = static_cast<uint16_t>(rng());
  auto out = RunReference(*spec, kE, kN, kK, w, "rceil");
  ASSERT_TRUE(out.ok()) << out.status().message();
  const int64_t el = kN * kK;
  for (int64_t e = 0; e < kE; ++e) {
    std::vector<uint8_t> q(el), s(el / 32), q_t(el), s_t(el / 32);
    QuantizeDual(w.data() + e * el, kN, kK, Rounding::kRceil, q.data(), s.data(), q_t.data(),
                 s_t.data());
    const auto slice = [&](const char* name, int64_t size) {
      const auto& b = out->at(name).bytes;
      return std::vector<uint8_t>(b.begin() + e * size, b.begin() + (e + 1) * size);
    };
    EXPECT_EQ(slice("q_k", el), q) << e;
    EXPECT_EQ(slice("s_k", el / 32), s) << e;
    EXPECT_EQ(slice("q_n", el), q_t) << e;
    EXPECT_EQ(slice("s_n", el / 32), s_t) << e;
  }
}

}  // namespace
}  // namespace ws::mxfp8
