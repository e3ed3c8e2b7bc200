#include "problems/moe_unpermute_combine/reference.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::moe {
namespace {

// bf16 bits of an fp32 value that bf16 holds exactly.
uint16_t B(float v) {
  return static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
}

TEST(CombineElementTest, WorkedValues) {
  const float w[] = {0.5f, 0.25f};
  const uint16_t rows[] = {B(2.0f), B(4.0f)};
  EXPECT_EQ(CombineElement(w, rows, 2, nullptr), 0x4000);  // 1 + 1 = 2
  const uint16_t one = B(1.0f);
  EXPECT_EQ(CombineElement(w, rows, 2, &one), 0x4040);     // + 1 = 3
  EXPECT_EQ(CombineElement(w, rows, 1, nullptr), 0x3F80);  // K = 1: 0.5 * 2
}

TEST(CombineElementTest, FusedMultiplyAdd) {
  // acc = 1, then fma(1 + 2^-23, 1 + 2^-7, 1) = 2 + 2^-7 + 2^-23 + 2^-30, rounded once to fp32:
  // 2 + 2^-7 + 2^-22; that is above bf16's halfway point 2 + 2^-7, so y = 2 + 2^-6 (0x4001).
  // A separate multiply and add would give 2 + 2^-7 in fp32, a tie that rounds to 2 (0x4000).
  const float w[] = {1.0f, std::bit_cast<float>(0x3F800001u)};
  const uint16_t rows[] = {B(1.0f), 0x3F81};  // 1, 1 + 2^-7
  EXPECT_EQ(CombineElement(w, rows, 2, nullptr), 0x4001);
}

TEST(CombineElementTest, SlotOrder) {
  // 2^24 + 1 rounds back to 2^24 in fp32, so in slot order 2^24, 1, -2^24 sum to 0; any other
  // order (1 last, or the large pair first) would give 1.
  const float w[] = {1.0f, 1.0f, 1.0f};
  const uint16_t rows[] = {0x4B80, B(1.0f), 0xCB80};
  EXPECT_EQ(CombineElement(w, rows, 3, nullptr), 0x0000);
  const uint16_t reordered[] = {0x4B80, 0xCB80, B(1.0f)};
  EXPECT_EQ(CombineElement(w, reordered, 3, nullptr), 0x3F80);
  // The shared expert comes after the routed sum: 0 + 1.
  const uint16_t one = B(1.0f);
  EXPECT_EQ(CombineElement(w, rows, 3, &one), 0x3F80);
}

TEST(CombineElementTest, ZerosSignsAndRounding) {
  const float w1[] = {1.0f};
  const uint16_t neg_zero[] = {0x8000};
  EXPECT_EQ(CombineElement(w1, neg_zero, 1, nullptr), 0x0000);  // acc starts at +0
  const float wneg[] = {-1.0f};
  const uint16_t zero[] = {0x0000};
  EXPECT_EQ(CombineElement(wneg, zero, 1, nullptr), 0x0000);  // fma(-1, +0, +0) = +0
  const uint16_t nz = 0x8000;
  EXPECT_EQ(CombineElement(wneg, zero, 1, &nz), 0x0000);  // +0 + -0 = +0
  // bf16 rounding: 1 + 2^-8 is a tie (to even, 1.0); 1 + 3 * 2^-8 is a tie (to even, 1 + 2^-6).
  const float w_tie[] = {1.0f + 1.0f / 256};
  const uint16_t row_one[] = {B(1.0f)};
  EXPECT_EQ(CombineElement(w_tie, row_one, 1, nullptr), 0x3F80);
  const float w_tie2[] = {1.0f + 3.0f / 256};
  EXPECT_EQ(CombineElement(w_tie2, row_one, 1, nullptr), 0x3F82);
  const float w_up[] = {1.0f + 1.0f / 256 + 1.0f / 65536};
  EXPECT_EQ(CombineElement(w_up, row_one, 1, nullptr), 0x3F81);
  // Subnormal bf16 results are kept: 2^-130 = 8 quanta of 2^-133.
  const float w_small[] = {std::ldexp(1.0f, -10)};
  const uint16_t row_small[] = {B(std::ldexp(1.0f, -120))};
  EXPECT_EQ(CombineElement(w_small, row_small, 1, nullptr), 0x0008);
  // Beyond fp32's range: +Inf.
  const float w2[] = {2.0f};
  const uint16_t big[] = {0x7F7F};
  EXPECT_EQ(CombineElement(w2, big, 1, nullptr), 0x7F80);
  // bf16 max plus a little stays finite only below the rounding threshold: 0x7F7F + 0x7F7F * 2^-9
  const float w_near[] = {1.0f + 1.0f / 512};
  EXPECT_EQ(CombineElement(w_near, big, 1, nullptr), 0x7F7F);
}

TEST(UnpermuteCombineTest, GathersByRow) {
  // y_p has 4 rows of H = 2; two tokens, K = 2. Token 0 takes rows 3 and 0, token 1 rows 1 and 3.
  const std::vector<uint16_t> y_p = {B(1.0f),  B(2.0f), B(4.0f),  B(8.0f),
                                     B(-1.0f), B(0.5f), B(16.0f), B(32.0f)};
  const std::vector<float> w = {0.5f, 2.0f, 0.25f, 1.0f};
  const std::vector<int32_t> slot_row = {3, 0, 1, 3};
  const std::vector<uint16_t> shared = {B(1.0f), B(1.0f), B(-1.0f), B(0.0f)};
  std::vector<uint16_t> y(4);
  UnpermuteCombine(y_p.data(), w.data(), slot_row.data(), nullptr, 2, 2, 2, y.data());
  EXPECT_EQ(y, (std::vector<uint16_t>{B(10.0f), B(20.0f), B(17.0f), B(34.0f)}));
  UnpermuteCombine(y_p.data(), w.data(), slot_row.data(), shared.data(), 2, 2, 2, y.data());
  EXPECT_EQ(y, (std::vector<uint16_t>{B(11.0f), B(21.0f), B(16.0f), B(34.0f)}));
}

// Against a model that sums in double: one rounding to fp32 per step, so the two agree to within
// bf16 rounding; they must agree exactly when every product and partial sum is exact in fp32.
TEST(UnpermuteCombineTest, AgreesWithExactSumsWhenNothingRounds) {
  std::mt19937_64 rng(1);
  const int t = 50, k = 8, h = 64, m = 300;
  std::vector<uint16_t> y_p(m * h);
  for (auto& v : y_p) v = B(static_cast<float>(static_cast<int>(rng() % 64) - 32));  // integers
  std::vector<float> w(t * k);
  for (auto& v : w) v = static_cast<float>(rng() % 8) / 8.0f;  // eighths
  std::vector<int32_t> slot_row(t * k);
  for (auto& r : slot_row) r = static_cast<int32_t>(rng() % m);
  std::vector<uint16_t> y(t * h);
  UnpermuteCombine(y_p.data(), w.data(), slot_row.data(), nullptr, t, k, h, y.data());
  for (int tok = 0; tok < t; ++tok) {
    for (int c = 0; c < h; ++c) {
      double sum = 0;
      for (int j = 0; j < k; ++j) {
        sum +=
            w[tok * k + j] *
            std::bit_cast<float>(static_cast<uint32_t>(y_p[slot_row[tok * k + j] * h + c]) << 16);
      }
      // |sum| < 8 * 32 with 3 fractional bits: exact in bf16 only when <= 8 significant bits.
      const float f = static_cast<float>(sum);
      const uint32_t bits = std::bit_cast<uint32_t>(f);
      if ((bits & 0xFFFF) == 0)
        EXPECT_EQ(y[tok * h + c], bits >> 16);
      else
        EXPECT_NEAR(std::bit_cast<float>(static_cast<uint32_t>(y[tok * h + c]) << 16), f,
                    std::fabs(f) / 256);
    }
  }
}

int64_t PaddedRows(const SymbolTable& s) {
  const int64_t slots = s.at("T") * s.at("K"), a = s.at("A");
  return (slots + std::min(s.at("E"), slots) * (a - 1) + a - 1) / a * a;
}

// The registered reference on inputs generated as the runner does, at every test and hidden
// shape, with and without the shared expert: one element recomputed by hand, and the shared
// expert changes the result.
TEST(MoeUnpermuteCombineSpecTest, GeneratedInputsEveryShape) {
  auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/moe_unpermute_combine/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  int tested = 0;
  for (const auto* shapes : {&spec->test_shapes, &spec->hidden_shapes}) {
    for (const Shape& shape : *shapes) {
      const std::string where = ShapeText(*spec, shape);
      const std::map<std::string, std::string> none = {{"shared", "none"}},
                                               add = {{"shared", "add"}};
      const SymbolTable sym = BindSymbols(*spec, shape, none);
      const int64_t t = sym.at("T"), h = sym.at("H"), k = sym.at("K");
      if (PaddedRows(sym) * h > (int64_t{1} << 21))
        continue;  // generating inputs on the host is slow; the small shapes cover the rules
      ++tested;
      auto in = GenerateInputs(*spec, sym, 99 + t);
      ASSERT_TRUE(in.ok()) << in.status().message();
      auto y0 = RunCpuReference(*spec, sym, none, *in);
      auto y1 = RunCpuReference(*spec, BindSymbols(*spec, shape, add), add, *in);
      ASSERT_TRUE(y0.ok() && y1.ok()) << where;
      std::vector<uint16_t> a(t * h), b(t * h), y_p(in->at("y_p").bytes.size() / 2), shared(t * h);
      std::memcpy(a.data(), y0->at("y").bytes.data(), a.size() * 2);
      std::memcpy(b.data(), y1->at("y").bytes.data(), b.size() * 2);
      std::memcpy(y_p.data(), in->at("y_p").bytes.data(), y_p.size() * 2);
      std::memcpy(shared.data(), in->at("y_shared").bytes.data(), shared.size() * 2);
      std::vector<float> w(t * k);
      std::vector<int32_t> rows(t * k);
      std::memcpy(w.data(), in->at("w").bytes.data(), w.size() * 4);
      std::memcpy(rows.data(), in->at("slot_row").bytes.data(), rows.size() * 4);
      // The last element, by hand.
      const int64_t tok = t - 1, c = h - 1;
      float acc = 0.0f;
      for (int64_t j = 0; j < k; ++j) {
        acc = std::fma(
            w[tok * k + j],
            std::bit_cast<float>(static_cast<uint32_t>(y_p[rows[tok * k + j] * h + c]) << 16), acc);
      }
      const uint32_t bits = std::bit_cast<uint32_t>(acc);
      EXPECT_EQ(a[tok * h + c], (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16) << where;
      int64_t differ = 0;
      for (int64_t i = 0; i < t * h; ++i) differ += a[i] != b[i];
      EXPECT_GT(differ, t * h / 2) << where;
    }
  }
  EXPECT_GE(tested, 5);
}

}  // namespace
}  // namespace ws::moe
