#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <unistd.h>

#include "base/files.h"
#include "evaluator/internal.h"
#include "evaluator/runner/job.h"
#include "problems/init.h"

namespace ws {
namespace {

bool Has(const std::string& msg, const std::string& part) {
  return msg.find(part) != std::string::npos;
}

std::string Bf16(const std::vector<uint16_t>& bits) {
  return std::string(reinterpret_cast<const char*>(bits.data()), bits.size() * 2);
}

std::string Bf16Values(const std::vector<float>& v) {
  std::vector<uint16_t> bits;
  for (float f : v) bits.push_back(ws_f32_to_bf16(f));
  return Bf16(bits);
}

std::string F32(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 4);
}

std::string Bytes(const std::vector<uint8_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

// ---- exact
// ---------------------------------------------------------------------------------------

TEST(CheckTest, EqualBuffersPass) {
  std::string a = "abcdef";
  EXPECT_EQ(CompareExact("q", {2, 3}, 1, a, a), "");
}

TEST(CheckTest, NamesTheFirstMismatchWithCoordinates) {
  std::string want(6, '\0'), got(6, '\0');
  got[4] = '\x7e';
  std::string msg = CompareExact("q", {2, 3}, 1, got, want);
  EXPECT_NE(msg.find("q[1, 1]: got 0x7e, expected 0x00"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 of 6 elements differ"), std::string::npos) << msg;
}

TEST(CheckTest, MultiByteElementsPrintMostSignificantFirst) {
  std::string want = std::string("\x80\x3f", 2), got = std::string("\x81\x3f", 2);
  std::string msg = CompareExact("x", {1}, 2, got, want);
  EXPECT_NE(msg.find("got 0x3f81, expected 0x3f80"), std::string::npos) << msg;
}

TEST(CheckTest, SizeMismatchFails) {
  EXPECT_NE(CompareExact("q", {4}, 1, "abc", "abcd"), "");
}

// ---- ulp
// -----------------------------------------------------------------------------------------

TEST(CheckUlpTest, DistanceBoundaries) {
  const std::string want = Bf16({0x3F80, 0x3F80, 0x0000, 0x0001});
  // 1.0 vs its neighbours; +0 vs -0; smallest subnormal vs its negative (2 ulps through zero).
  const std::string got = Bf16({0x3F81, 0x3F7F, 0x8000, 0x8001});
  EXPECT_EQ(CompareUlp("y", {4}, DType::kBF16, got, want, 2), "");
  const std::string msg = CompareUlp("y", {2, 2}, DType::kBF16, got, want, 1);
  EXPECT_TRUE(Has(msg,
                  "y[1, 1]: got -9.18354962e-41 (0x8001), expected 9.18354962e-41 (0x0001): "
                  "2 ulps apart (max 1)"))
      << msg;
  EXPECT_TRUE(Has(msg, "1 of 4 elements outside 1 ulp")) << msg;
  const std::string zero = CompareUlp("y", {4}, DType::kBF16, got, want, 0);
  EXPECT_TRUE(Has(zero, "y[0]: got 1.0078125 (0x3f81), expected 1 (0x3f80): 1 ulps apart (max 0)"))
      << zero;
  EXPECT_TRUE(Has(zero, "3 of 4 elements")) << zero;  // +0 == -0 at max 0
}

TEST(CheckUlpTest, NanAndInfinities) {
  // NaN vs NaN (other payload) passes; Inf only against the same Inf, even at max 4.
  EXPECT_EQ(CompareUlp("y", {2}, DType::kBF16, Bf16({0x7FC1, 0xFF80}), Bf16({0xFFC0, 0xFF80}), 0),
            "");
  std::string msg = CompareUlp("y", {1}, DType::kBF16, Bf16({0x7F7F}), Bf16({0x7F80}), 4);
  EXPECT_TRUE(Has(msg, "infinities must match exactly")) << msg;
  msg = CompareUlp("y", {1}, DType::kBF16, Bf16({0x7F80}), Bf16({0xFF80}), 4);
  EXPECT_TRUE(Has(msg, "infinities must match exactly")) << msg;
  msg = CompareUlp("y", {1}, DType::kBF16, Bf16({0x7FC0}), Bf16({0x3F80}), 4);
  EXPECT_TRUE(Has(msg, "NaN where the reference is not")) << msg;
  msg = CompareUlp("y", {1}, DType::kBF16, Bf16({0x3F80}), Bf16({0x7FC0}), 4);
  EXPECT_TRUE(Has(msg, "not NaN where the reference is")) << msg;
}

TEST(CheckUlpTest, F32AndF16) {
  const float one = 1.0f, next = std::nextafter(1.0f, 2.0f);
  EXPECT_EQ(CompareUlp("y", {1}, DType::kF32, F32({next}), F32({one}), 1), "");
  EXPECT_TRUE(Has(CompareUlp("y", {1}, DType::kF32, F32({next}), F32({one}), 0), "1 ulps apart"));
  // f16 1.0 = 0x3C00; 0x3C03 is 3 ulps up; 0x7C00 is +Inf.
  EXPECT_EQ(CompareUlp("h", {1}, DType::kF16, Bf16({0x3C03}), Bf16({0x3C00}), 3), "");
  const std::string msg = CompareUlp("h", {1}, DType::kF16, Bf16({0x3C03}), Bf16({0x3C00}), 2);
  EXPECT_TRUE(Has(msg, "h[0]: got 1.00292969 (0x3c03), expected 1 (0x3c00): 3 ulps")) << msg;
  EXPECT_TRUE(
      Has(CompareUlp("h", {1}, DType::kF16, Bf16({0x7BFF}), Bf16({0x7C00}), 4), "infinities"));
}

TEST(CheckUlpTest, ManyFailuresReportTheWorst) {
  std::vector<uint16_t> want(100, 0x3F80), got(100, 0x3F81);
  got[77] = 0x3F90;  // 16 ulps
  const std::string msg = CompareUlp("y", {100}, DType::kBF16, Bf16(got), Bf16(want), 0);
  EXPECT_TRUE(Has(msg, "100 of 100 elements")) << msg;
  EXPECT_TRUE(Has(msg, "worst: y[77]")) << msg;
  EXPECT_TRUE(Has(msg, "16 ulps apart")) << msg;
  EXPECT_TRUE(
      Has(CompareUlp("y", {2}, DType::kBF16, Bf16({1}), Bf16({1, 1}), 0), "2 bytes written"));
}

// ---- close
// ---------------------------------------------------------------------------------------

TEST(CheckCloseTest, BoundIsInclusive) {
  // want 1, rtol 0.5, atol 0.25: bound 0.75. 1.75 is on it; 1.7578125 is one bf16 ulp beyond.
  EXPECT_EQ(CompareClose("y", {1}, DType::kBF16, Bf16Values({1.75f}), Bf16Values({1}), 0.5, 0.25),
            "");
  const std::string msg =
      CompareClose("y", {1}, DType::kBF16, Bf16Values({1.7578125f}), Bf16Values({1}), 0.5, 0.25);
  EXPECT_TRUE(
      Has(msg, "y[0]: got 1.7578125 (0x3fe1), expected 1 (0x3f80): |diff| 0.7578125 > 0.75"))
      << msg;
  EXPECT_TRUE(Has(msg, "outside atol 0.25 + rtol 0.5 * |want|")) << msg;
  // atol alone covers values near zero; rtol alone scales with |want|.
  EXPECT_EQ(CompareClose("y", {2}, DType::kF32, F32({1e-6f, -1e-6f}), F32({0, 0}), 0, 1e-6), "");
  EXPECT_NE(CompareClose("y", {1}, DType::kF32, F32({1e-6f}), F32({0}), 0.1, 0), "");
  EXPECT_EQ(CompareClose("y", {1}, DType::kF32, F32({1000.5f}), F32({1000}), 1e-3, 0), "");
}

TEST(CheckCloseTest, NanAndInfinitiesAsForUlp) {
  const float inf = INFINITY, nan = NAN;
  EXPECT_EQ(CompareClose("y", {2}, DType::kF32, F32({nan, inf}), F32({nan, inf}), 1, 1), "");
  EXPECT_TRUE(Has(CompareClose("y", {1}, DType::kF32, F32({3e38f}), F32({inf}), 1, 1),
                  "infinities must match"));
  EXPECT_TRUE(Has(CompareClose("y", {1}, DType::kF32, F32({nan}), F32({0}), 1, 1), "NaN where"));
}

// ---- gemm
// ----------------------------------------------------------------------------------------

std::vector<float> Normal(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0, 3);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(CheckGemmTest, SmallNoisePasses) {
  const std::vector<float> want = Normal(10000, 1);
  std::vector<float> got = want;
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-1e-3f, 1e-3f);
  for (float& x : got) x *= 1 + u(rng);
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{}), "");
  // bf16 outputs rounded from the same values pass too (relative error <= 2^-9).
  std::vector<float> shifted = want;
  for (float& x : shifted) x *= 1.0005f;
  EXPECT_EQ(
      CompareGemm("d", {10000}, DType::kBF16, Bf16Values(shifted), Bf16Values(want), Tolerance{}),
      "");
}

// An empty group's outputs are exact zeros; poison that decodes to a tiny value (bf16 0x2f2f is
// about 1.6e-10) is far inside the norms, so exact zeros are checked as such.
TEST(CheckGemmTest, ExactZerosMustBeWrittenAsZeros) {
  std::vector<float> want = Normal(10000, 3);
  for (int i = 5000; i < 6000; ++i) want[i] = 0.0f;  // an empty group
  std::vector<float> got = want;
  got[5500] = -0.0f;  // a computed zero may carry either sign
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{}), "");
  std::string got_bf16 = Bf16Values(want), want_bf16 = got_bf16;
  got_bf16[2 * 5100] = 0x2f;  // the poison byte pattern of an unwritten element
  got_bf16[2 * 5100 + 1] = 0x2f;
  const std::string diff =
      CompareGemm("d", {100, 100}, DType::kBF16, got_bf16, want_bf16, Tolerance{});
  EXPECT_NE(diff.find("d[51, 0]"), std::string::npos) << diff;
  EXPECT_NE(diff.find("exactly 0"), std::string::npos) << diff;
}

// A lone exact zero of the reference is an fp32 sum that cancelled; another summation order
// gives a tiny value there, which the element rule accepts (seen on the H200: cuBLASLt and the
// starting kernel against the fp32 GPU reference at 16384x7168x2048).
TEST(CheckGemmTest, LoneExactZeroIsJudgedByTheElementRule) {
  std::vector<float> want = Normal(10000, 5);
  want[4321] = 0.0f;
  std::vector<float> got = want;
  got[4321] = 3.1e-6f;
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{}), "");
  got[4321] = 0.5f;  // far off: the element rule still catches it
  EXPECT_TRUE(Has(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{}),
                  "d[43, 21]"));
}

TEST(CheckGemmTest, RelativeFrobenius) {
  const std::vector<float> want = Normal(10000, 1);
  std::vector<float> got = want;
  for (float& x : got) x *= 1.01f;  // 1% everywhere: rel 1e-2 > 3e-3
  const std::string msg =
      CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{});
  EXPECT_TRUE(Has(msg, "d: relative Frobenius error 0.0099")) << msg;
  EXPECT_TRUE(Has(msg, "> 0.003")) << msg;
  EXPECT_TRUE(Has(msg, "largest |diff|")) << msg;
  Tolerance loose;
  loose.rel_frobenius = 0.02;
  loose.elem_rtol = 0.02;
  loose.worst_rms = 1;
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), loose), "");
}

// A bf16 output rounded to the neighbouring value (a sum near a rounding midpoint) is one spacing
// off: at 10 rms that is beyond worst_rms alone, and still correct. Two spacings are not.
TEST(CheckGemmTest, WorstRmsAllowsOneOutputSpacing) {
  std::vector<float> want = Normal(10000, 5);
  for (float& x : want) x = ws_bf16_to_f32(ws_f32_to_bf16(x));
  want[777] = 32.0f;  // about 10 rms (3); bf16 spacing 0.25 here, beyond 0.05 rms
  std::vector<float> got = want;
  got[777] = 32.25f;
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kBF16, Bf16Values(got), Bf16Values(want), Tolerance{}), "");
  got[777] = 32.5f;
  const std::string msg =
      CompareGemm("d", {100, 100}, DType::kBF16, Bf16Values(got), Bf16Values(want), Tolerance{});
  EXPECT_TRUE(Has(msg, "beyond worst_rms 0.05")) << msg;
  EXPECT_TRUE(Has(msg, "at d[7, 77]")) << msg;
}

TEST(CheckGemmTest, OneWildElementFailsWorstRms) {
  const std::vector<float> want = Normal(10000, 3);
  double sq = 0;
  for (float x : want) sq += x * x;
  const double rms = std::sqrt(sq / want.size());
  std::vector<float> got = want;
  got[4321] += static_cast<float>(0.1 * rms);  // Frobenius: 0.1 / sqrt(10000) = 1e-3, passes
  const std::string msg =
      CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{});
  EXPECT_TRUE(Has(msg, "at d[43, 21]")) << msg;
  EXPECT_TRUE(Has(msg, "beyond worst_rms 0.05")) << msg;
  got[4321] = want[4321] + static_cast<float>(0.04 * rms);  // within worst_rms; one element out
  EXPECT_EQ(CompareGemm("d", {100, 100}, DType::kF32, F32(got), F32(want), Tolerance{}), "");
}

TEST(CheckGemmTest, ElementFraction) {
  std::vector<float> want(10000, 1.0f);
  for (int i = 0; i < 10000; i += 2) want[i] = -1.0f;  // rms 1
  std::vector<float> got = want;
  // |diff| 0.02 > 2^-7 * 1 + 2^-8 * 1 = 0.0117 on two elements: 2 > 0.0001 * 10000 = 1.
  got[11] += 0.02f;
  got[21] -= 0.02f;
  const std::string msg = CompareGemm("d", {10000}, DType::kF32, F32(got), F32(want), Tolerance{});
  EXPECT_TRUE(Has(msg, "2 of 10000 elements (0.02%) exceed")) << msg;
  EXPECT_TRUE(Has(msg, "d[11]: got 1.01999998, expected 1")) << msg;
  got[21] = want[21];  // one element: exactly the allowed count
  EXPECT_EQ(CompareGemm("d", {10000}, DType::kF32, F32(got), F32(want), Tolerance{}), "");
}

TEST(CheckGemmTest, NonFiniteAndZeroReferences) {
  std::vector<float> want = Normal(100, 4), got = want;
  got[5] = NAN;
  EXPECT_TRUE(
      Has(CompareGemm("d", {100}, DType::kF32, F32(got), F32(want), Tolerance{}), "d[5]: got nan"));
  got[5] = INFINITY;
  EXPECT_TRUE(Has(CompareGemm("d", {100}, DType::kF32, F32(got), F32(want), Tolerance{}),
                  "infinities must match"));
  const std::vector<float> zeros(64, 0.0f);
  EXPECT_EQ(CompareGemm("d", {64}, DType::kF32, F32(zeros), F32(zeros), Tolerance{}), "");
  std::vector<float> bump = zeros;
  bump[3] = 1e-30f;
  EXPECT_TRUE(Has(CompareGemm("d", {64}, DType::kF32, F32(bump), F32(zeros), Tolerance{}),
                  "where the reference's whole row is exactly 0"));
  EXPECT_EQ(CompareGemm("d", {0}, DType::kF32, "", "", Tolerance{}), "");
}

// ---- mx_data / mx_scales
// -------------------------------------------------------------------------

// An E4M3 code's value (finite codes only).
double E4m3(uint8_t c) {
  const int e = (c >> 3) & 15, m = c & 7;
  const double v = e == 0 ? std::ldexp(m, -9) : std::ldexp(8 + m, e - 10);
  return (c & 0x80) ? -v : v;
}

struct MxCase {
  std::vector<uint8_t> data, scales;  // [2, 64] e4m3 and [2, 2] e8m0
};

MxCase MakeMx() {
  MxCase c;
  for (int i = 0; i < 128; ++i) c.data.push_back(ws_f32_to_e4m3(static_cast<float>(i % 13) - 6.5f));
  c.scales = {120, 127, 130, 127};
  return c;
}

std::string Mx(const MxCase& got, const MxCase& want, const Tolerance& tol) {
  return CompareMx("q", "s", {2, 64}, DType::kFP8E4M3, Bytes(got.data), Bytes(want.data),
                   Bytes(got.scales), Bytes(want.scales), tol);
}

Tolerance MxTol(int64_t max_ulp = 1, double fraction = 0.001) {
  Tolerance t;
  t.kind = ToleranceKind::kMxData;
  t.max_ulp = max_ulp;
  t.scale_mismatch_fraction = fraction;
  return t;
}

TEST(CheckMxTest, EqualAndUlpBoundaries) {
  const MxCase want = MakeMx();
  EXPECT_EQ(Mx(want, want, MxTol(0)), "");
  MxCase got = want;
  MxCase w2 = want;
  w2.data[97] = 0x44;   // 3.0 (0x44 = 0 1000 100: 2^1 * 1.5)
  got.data[97] = 0x45;  // 3.25: one ulp up
  EXPECT_EQ(Mx(got, w2, MxTol(1)), "");
  got.data[97] = 0x46;  // 3.5: two ulps
  const std::string msg = Mx(got, w2, MxTol(1));
  EXPECT_TRUE(Has(msg,
                  "q[1, 33]: got 0x46 * 2^(127 - 127) = 3.5, expected 0x44 * 2^(127 - 127) = 3:"
                  " 2 ulps apart at scale 0x7f (max 1)"))
      << msg;
}

TEST(CheckMxTest, ScaleOffByOneComparesAtTheLargerScale) {
  MxCase want = MakeMx(), got = MakeMx();
  // Block (0, 1) at scale 127 holds 3.25 (0x45); the candidate chose scale 128 and 1.5 (0x3c) = 3.0
  // there: on the larger scale's grid 1.625 vs 1.5, one ulp (0.125).
  want.data[40] = 0x45;
  got.scales[1] = 128;
  for (int j = 32; j < 64; ++j) {
    got.data[j] = ws_f32_to_e4m3(static_cast<float>(E4m3(want.data[j])) / 2);
  }
  got.data[40] = 0x3C;
  EXPECT_EQ(Mx(got, want, MxTol(1)), "");
  EXPECT_TRUE(Has(Mx(got, want, MxTol(0)), "q[0, 40]")) << Mx(got, want, MxTol(0));
  // No mismatching block allowed at fraction 0.
  const std::string none = Mx(got, want, MxTol(1, 0));
  EXPECT_TRUE(Has(none,
                  "s: 1 of 4 block scales differ by one, more than the allowed 0; first: "
                  "s[0, 1] (elements 32..63 of q): got 0x80, expected 0x7f"))
      << none;
  // Two blocks off by one: more than max(1, 0.001 * 4).
  got.scales[3] = 126;
  for (int j = 96; j < 128; ++j)
    got.data[j] = ws_f32_to_e4m3(static_cast<float>(E4m3(want.data[j])) * 2);
  const std::string two = Mx(got, want, MxTol(1));
  EXPECT_TRUE(Has(two, "2 of 4 block scales differ by one")) << two;
  EXPECT_EQ(Mx(got, want, MxTol(1, 0.5)), "");
}

TEST(CheckMxTest, ScalesTwoApartNanAndSizes) {
  const MxCase want = MakeMx();
  MxCase got = want;
  got.scales[2] = 132;
  const std::string msg = Mx(got, want, MxTol(1, 1));
  EXPECT_TRUE(Has(msg, "s[1, 0] (elements 0..31 of q): got 0x84, expected 0x82")) << msg;
  got = want;
  got.scales[0] = 0xFF;  // NaN scale only on one side
  EXPECT_TRUE(Has(Mx(got, want, MxTol(1, 1)), "got 0xff, expected 0x78"));
  // NaN scales on both sides: every element NaN, the data bytes do not matter.
  MxCase w2 = want;
  w2.scales[0] = 0xFF;
  got.data[3] ^= 0x11;
  EXPECT_EQ(Mx(got, w2, MxTol(0, 0)), "");
  // A NaN element (0x7f or 0xff) only against NaN.
  got = want;
  w2 = want;
  w2.data[5] = 0x7F;
  got.data[5] = 0xFF;
  EXPECT_EQ(Mx(got, w2, MxTol(0, 0)), "");
  got.data[5] = 0x7E;
  EXPECT_TRUE(Has(Mx(got, w2, MxTol(4, 0)), "not NaN where the reference is"))
      << Mx(got, w2, MxTol(4, 0));
  got = want;
  got.scales.pop_back();
  EXPECT_TRUE(Has(Mx(got, want, MxTol()), "s: 3 bytes written back, 4 expected"));
}

TEST(CheckMxTest, E5m2InfinitiesAndRaggedRows) {
  // E5M2: 0x7c = +Inf, 0x7b = 57344. Rows of 40: blocks 32 + 8.
  const std::vector<uint8_t> want = {0x7C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
                                     0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
                                     0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C,
                                     0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3C, 0x3D};
  std::vector<uint8_t> got = want;
  const std::vector<uint8_t> scales = {127, 127};
  EXPECT_EQ(CompareMx("q", "s", {1, 40}, DType::kFP8E5M2, Bytes(got), Bytes(want), Bytes(scales),
                      Bytes(scales), MxTol(0)),
            "");
  got[0] = 0x7B;
  EXPECT_TRUE(Has(CompareMx("q", "s", {1, 40}, DType::kFP8E5M2, Bytes(got), Bytes(want),
                            Bytes(scales), Bytes(scales), MxTol(4)),
                  "infinities must match exactly"));
  got = want;
  got[39] = 0x3E;  // the ragged last block: one e5m2 ulp off
  const std::string msg = CompareMx("q", "s", {1, 40}, DType::kFP8E5M2, Bytes(got), Bytes(want),
                                    Bytes(scales), Bytes(scales), MxTol(0));
  EXPECT_TRUE(Has(msg, "q[0, 39]")) << msg;
  EXPECT_TRUE(Has(msg, "1 ulps apart")) << msg;
}

// ---- CheckOutputs
// --------------------------------------------------------------------------------

ProblemSpec TinySpec() {
  ProblemSpec s;
  s.name = "tiny";
  s.symbols = {"N"};
  s.tensors = {{"x", DType::kF32, {"N"}, TensorRole::kInput, {}},
               {"y", DType::kF32, {"N"}, TensorRole::kOutput, {}},
               {"z", DType::kF32, {"N"}, TensorRole::kOutput, {}}};
  return s;
}

// y exact, z within 10%.
ProblemSpec ExactAndCloseSpec() {
  ProblemSpec spec = TinySpec();
  spec.tolerance["y"] = Tolerance{};
  Tolerance close;
  close.kind = ToleranceKind::kClose;
  close.rtol = 0.1;
  spec.tolerance["z"] = close;
  return spec;
}

HostTensor T(DType dtype, std::vector<int64_t> dims, const std::string& bytes) {
  return HostTensor{dtype, std::move(dims), std::vector<uint8_t>(bytes.begin(), bytes.end())};
}

int g_custom_calls = 0;
std::string SeesInputs(const CustomCheck& c) {
  ++g_custom_calls;
  if (c.inputs.count("x") == 0)
    return "no x";
  if (c.options.at("limit") != 2)
    return "no options";
  float x0, y0;
  std::memcpy(&x0, c.inputs.at("x").bytes.data(), 4);
  std::memcpy(&y0, c.got.at("y").bytes.data(), 4);
  if (y0 > x0 * c.options.at("limit")) {
    return fmt::format("y[0]: got {}, more than {} * x[0] = {}", y0, c.options.at("limit"), x0);
  }
  return "";
}

TEST(CheckOutputsTest, EachKindByItsTolerance) {
  const ProblemSpec spec = ExactAndCloseSpec();
  const TensorMap want = {{"y", T(DType::kF32, {2}, F32({1, 2}))},
                          {"z", T(DType::kF32, {2}, F32({1, 2}))}};
  TensorMap got = {{"y", T(DType::kF32, {2}, F32({1, 2}))},
                   {"z", T(DType::kF32, {2}, F32({1.05f, 2.1f}))}};
  const auto no_inputs = []() -> Result<TensorMap> { return Status::Error("not needed"); };
  auto r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");
  got["z"] = T(DType::kF32, {2}, F32({1.05f, 2.5f}));
  r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "z[1]: got 2.5")) << *r;
  got["y"] = T(DType::kF32, {2}, F32({1, 3}));
  r = CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs);
  EXPECT_TRUE(Has(*r, "y[1]: got 0x40400000, expected 0x40000000")) << *r;  // y first, exact
  got.erase("y");
  EXPECT_EQ(*CheckOutputs(spec, {{"N", 2}}, {}, got, want, no_inputs),
            "output 'y' was not written back");
}

TEST(CheckOutputsTest, CustomCheckerGetsInputsOptionsAndRunsOncePerCase) {
  ScopedCustomChecker reg("sees_inputs", &SeesInputs);
  ProblemSpec spec = TinySpec();
  Tolerance custom;
  custom.kind = ToleranceKind::kCustom;
  custom.checker = "sees_inputs";
  custom.options["limit"] = 2;
  spec.tolerance["y"] = custom;
  spec.tolerance["z"] = custom;
  const TensorMap want = {{"y", T(DType::kF32, {1}, F32({1}))},
                          {"z", T(DType::kF32, {1}, F32({1}))}};
  TensorMap got = want;
  int regenerations = 0;
  const auto inputs = [&]() -> Result<TensorMap> {
    ++regenerations;
    return TensorMap{{"x", T(DType::kF32, {1}, F32({4}))}};
  };
  g_custom_calls = 0;
  auto r = CheckOutputs(spec, {{"N", 1}}, {}, got, want, inputs);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");
  EXPECT_EQ(g_custom_calls, 1);
  EXPECT_EQ(regenerations, 1);
  got["y"] = T(DType::kF32, {1}, F32({9}));
  r = CheckOutputs(spec, {{"N", 1}}, {}, got, want, inputs);
  EXPECT_EQ(*r, "y[0]: got 9, more than 2 * x[0] = 4");

  spec.tolerance["y"].checker = spec.tolerance["z"].checker = "nobody";
  r = CheckOutputs(spec, {{"N", 1}}, {}, got, want, inputs);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status().message(), "no custom checker registered as 'nobody'"));
  EXPECT_EQ(FindCustomChecker("nobody"), nullptr);
}

TEST(CheckOutputsTest, MxPairCheckedThroughTheDataEntry) {
  ProblemSpec spec;
  spec.name = "mx";
  spec.tensors = {{"q", DType::kFP8E4M3, {"64"}, TensorRole::kOutput, {}},
                  {"s", DType::kE8M0, {"2"}, TensorRole::kOutput, {}}};
  Tolerance data = MxTol(0, 0);
  data.partner = "s";
  Tolerance scales;
  scales.kind = ToleranceKind::kMxScales;
  scales.partner = "q";
  spec.tolerance = {{"q", data}, {"s", scales}};
  const MxCase m = MakeMx();
  const std::vector<uint8_t> q(m.data.begin(), m.data.begin() + 64);
  const TensorMap want = {{"q", T(DType::kFP8E4M3, {64}, Bytes(q))},
                          {"s", T(DType::kE8M0, {2}, Bytes({127, 127}))}};
  TensorMap got = want;
  const auto none = []() -> Result<TensorMap> { return TensorMap{}; };
  EXPECT_EQ(*CheckOutputs(spec, {}, {}, got, want, none), "");
  got["s"] = T(DType::kE8M0, {2}, Bytes({127, 125}));
  const std::string msg = *CheckOutputs(spec, {}, {}, got, want, none);
  EXPECT_TRUE(Has(msg, "s[1] (elements 32..63 of q): got 0x7d, expected 0x7f")) << msg;
}

TEST(CompareDumpsTest, ComparesTheRunnersDumpFilesInPlace) {
  const ProblemSpec spec = ExactAndCloseSpec();
  const std::string dir = testing::TempDir() + "/ws_compare_dumps_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string cand = dir + "/cand", ref = dir + "/ref";
  const auto dump = [](const std::string& prefix, const std::string& tag, const char* tensor,
                       const std::string& bytes) {
    ASSERT_TRUE(WriteFileAtomic(DumpPath(prefix, tag, tensor), bytes).ok());
  };
  const SymbolTable n3 = {{"N", 3}};
  dump(ref, "check", "y", F32({1, 2, 3}));
  dump(ref, "check", "z", F32({1, 2, 3}));
  dump(cand, "audit", "y", F32({1, 2, 3}));
  dump(cand, "audit", "z", F32({1.05f, 2, 3.2f}));
  const auto compare = [&] { return CompareDumps(spec, n3, {}, 1, cand, "audit", ref, {}); };
  auto r = compare();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");

  dump(cand, "audit", "z", F32({1.05f, 2, 3.5f}));
  r = compare();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, "z[2]: got 3.5")) << *r;
  EXPECT_EQ(*CompareDumps(spec, n3, {}, 1, cand, "audit", ref, {"z"}), "") << "z is digested";

  dump(cand, "audit", "y", F32({1, 2}));
  EXPECT_TRUE(Has(*compare(), "y: 8 bytes written back, 12 expected")) << *compare();
  dump(cand, "audit", "y", "");
  EXPECT_TRUE(Has(*compare(), "y: 0 bytes written back, 12 expected")) << *compare();
  std::filesystem::remove(DumpPath(cand, "audit", "y"));
  EXPECT_EQ(*compare(), "output 'y' was not written back");

  dump(cand, "audit", "y", F32({1, 2, 3}));
  std::filesystem::remove(DumpPath(ref, "check", "z"));
  r = compare();
  ASSERT_FALSE(r.ok()) << "a missing reference dump is not the candidate's fault";
  EXPECT_TRUE(Has(r.status().message(), "ref.check.z.bin")) << r.status().message();
  std::filesystem::remove_all(dir);
}

// Audited and last runs of large outputs come back as keyed samples of their rows: the checker
// compares those rows where they lie in the dump and names the tensor's own coordinates.
TEST(CompareDumpsTest, SampledRowsAreCheckedAsTheTensorsRows) {
  ProblemSpec spec;
  spec.name = "sampled";
  spec.symbols = {"R", "L"};
  spec.tensors = {{"x", DType::kF32, {"L"}, TensorRole::kInput, {}},
                  {"c", DType::kF32, {"R", "L"}, TensorRole::kOutput, {}}};
  Tolerance gemm;
  gemm.kind = ToleranceKind::kGemm;
  spec.tolerance["c"] = gemm;
  const SymbolTable rl = {{"R", 64}, {"L", 4}};
  const std::string dir = testing::TempDir() + "/ws_sampled_dumps_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  const std::string cand = dir + "/cand", ref = dir + "/ref";
  SampledOutputs sample;
  sample.key = 0x5eed;
  sample.every = 4;
  sample.row_bytes = {{"c", 16}};
  const std::vector<int64_t> rows = runner::SampledRows(sample.key, 64, sample.every);
  ASSERT_GE(rows.size(), 4u);
  std::vector<float> kept;
  for (int64_t r : rows) {
    for (int l = 0; l < 4; ++l) kept.push_back(1.0f + 0.01f * static_cast<float>(r * 4 + l));
  }
  ASSERT_TRUE(WriteFileAtomic(DumpPath(ref, "check", "c"), F32(kept)).ok());
  ASSERT_TRUE(WriteFileAtomic(DumpPath(cand, "last", "c"), F32(kept)).ok());
  const auto compare = [&] {
    return CompareDumps(spec, rl, {}, 1, cand, "last", ref, {}, &sample);
  };
  auto r = compare();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, "");

  // A wrong element in the third kept row is reported at that row of c, not of the sample.
  std::vector<float> bad = kept;
  bad[2 * 4 + 1] = 100.0f;
  ASSERT_TRUE(WriteFileAtomic(DumpPath(cand, "last", "c"), F32(bad)).ok());
  r = compare();
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(Has(*r, fmt::format("c[{}, 1]", rows[2]))) << *r;
  EXPECT_TRUE(Has(*r, fmt::format("checked on {} of its 64 rows", rows.size()))) << *r;
  // Without the sample the reference's bytes are the wrong size for c: the evaluator's error.
  r = CompareDumps(spec, rl, {}, 1, cand, "last", ref, {});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status().message(), "bytes of the 'c', 1024 expected"))
      << r.status().message();

  // A whole tensor where a sample was asked is the candidate's wrong size; a reference sample of
  // another size is the evaluator's error.
  ASSERT_TRUE(WriteFileAtomic(DumpPath(cand, "last", "c"), F32(std::vector<float>(256, 1))).ok());
  EXPECT_TRUE(Has(*compare(), "bytes written back")) << *compare();
  ASSERT_TRUE(WriteFileAtomic(DumpPath(ref, "check", "c"), F32({1, 2, 3, 4})).ok());
  r = compare();
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Has(r.status().message(), "sampled rows")) << r.status().message();
  std::filesystem::remove_all(dir);
}

TEST(CompareGemmTest, RowsNameTheTensorsCoordinates) {
  std::vector<float> want(8, 1.0f), got = want;
  got[5] = -3;  // element 1 of the second row held: row 7 of the tensor
  const std::vector<int64_t> rows = {2, 7};
  const std::string msg =
      CompareGemm("d", {9, 4}, DType::kF32, F32(got), F32(want), Tolerance{}, 5, &rows);
  EXPECT_TRUE(Has(msg, "d[7, 1]")) << msg;
  const std::string ulp = CompareUlp("d", {9, 4}, DType::kF32, F32(got), F32(want), 1, 5, &rows);
  EXPECT_TRUE(Has(ulp, "d[7, 1]")) << ulp;
}

// ---- Chunked, parallel comparisons
// ---------------------------------------------------------------

TEST(CheckThreadsTest, EnvironmentAndOverride) {
  ::unsetenv("WARPSMITH_CHECK_THREADS");
  EXPECT_GE(CheckThreads(), 1);
  ::setenv("WARPSMITH_CHECK_THREADS", "3", 1);
  EXPECT_EQ(CheckThreads(), 3);
  {
    ScopedCheckThreads one(1);
    EXPECT_EQ(CheckThreads(), 1);
  }
  EXPECT_EQ(CheckThreads(), 3);
  ::setenv("WARPSMITH_CHECK_THREADS", "zero", 1);  // not a count: the hardware's
  EXPECT_GE(CheckThreads(), 1);
  ::unsetenv("WARPSMITH_CHECK_THREADS");
}

TEST(CheckThreadsTest, RunChunksRunsEachOnceOnSeveralThreads) {
  ScopedCheckThreads threads(7);
  std::vector<std::atomic<int>> runs(300);
  std::atomic<int> arrived{0};
  std::mutex mu;
  std::set<std::thread::id> ids;
  RunChunks(300, [&](int64_t c) {
    if (c < 2) {
      // The first two chunks wait for each other: only two threads get both through at once.
      ++arrived;
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (arrived < 2 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    }
    ++runs[c];
    std::lock_guard<std::mutex> lock(mu);
    ids.insert(std::this_thread::get_id());
  });
  for (int c = 0; c < 300; ++c) EXPECT_EQ(runs[c], 1) << c;
  EXPECT_GE(ids.size(), 2u);
  EXPECT_THROW(RunChunks(50,
                         [](int64_t c) {
                           if (c == 33)
                             throw std::runtime_error("chunk 33");
                         }),
               std::runtime_error);
}

// Large inputs (past the parallel threshold) with mismatches planted at the first element, the
// middle, and either side of chunk boundaries: every thread count must give the serial message.
constexpr int64_t kBig = int64_t{1} << 21;            // 256 chunks of 8192
constexpr int64_t kRagged = (int64_t{1} << 21) + 77;  // 77 chunks of 8193, then of 8192

// The first element, either side of the first, middle and last chunk boundaries, the last one.
std::vector<int64_t> Plants(int64_t n) {
  const auto boundary = [n](int64_t c) { return c * (n / 256) + std::min<int64_t>(c, n % 256); };
  return {0,
          1,
          boundary(1) - 1,
          boundary(1),
          boundary(1) + 1,
          boundary(128) - 1,
          boundary(128),
          boundary(128) + 1,
          boundary(255) - 1,
          boundary(255),
          boundary(255) + 1,
          n - 1};
}

// Runs `compare` at 1, 2, 7 and 16 threads; expects one message, which it returns.
std::string SameOnAnyThreadCount(const std::function<std::string()>& compare) {
  std::string serial;
  {
    ScopedCheckThreads threads(1);
    serial = compare();
  }
  for (int t : {2, 7, 16}) {
    ScopedCheckThreads threads(t);
    EXPECT_EQ(compare(), serial) << t << " threads";
  }
  return serial;
}

// The planted subsets each test tries: all, the boundaries alone, the last few alone.
std::vector<std::vector<int64_t>> PlantSets(int64_t n) {
  const std::vector<int64_t> all = Plants(n);
  return {all, {all[3], all[4]}, {all[2]}, {all[9], all[10], all[11]}, {all[11]}, {}};
}

TEST(CheckParallelTest, ExactMatchesSerial) {
  for (int64_t n : {kBig, kRagged}) {
    std::mt19937 rng(11);
    std::vector<uint16_t> want(n);
    for (auto& x : want) x = static_cast<uint16_t>(rng());
    for (const auto& plants : PlantSets(n)) {
      std::vector<uint16_t> got = want;
      for (int64_t i : plants) got[i] ^= 0x0101;
      for (int reports : {1, 5, 100}) {
        const std::string msg = SameOnAnyThreadCount(
            [&] { return CompareExact("q", {n}, 2, Bf16(got), Bf16(want), reports); });
        if (plants.empty()) {
          EXPECT_EQ(msg, "");
        } else {
          EXPECT_TRUE(Has(msg, fmt::format("q[{}]: got", plants[0]))) << msg;
          EXPECT_TRUE(Has(msg, fmt::format("({} of {} elements differ)", plants.size(), n))) << msg;
        }
      }
    }
  }
}

// bf16 values near 1 with up to 1 ulp of noise; plants far out (the worst among them chosen).
TEST(CheckParallelTest, UlpAndCloseMatchSerial) {
  for (int64_t n : {kBig, kRagged}) {
    std::mt19937 rng(12);
    std::vector<uint16_t> want(n), noisy(n);
    for (int64_t i = 0; i < n; ++i) {
      want[i] = static_cast<uint16_t>(0x3F00 + rng() % 0x100);
      noisy[i] = static_cast<uint16_t>(want[i] + static_cast<int>(rng() % 3) - 1);
    }
    for (const auto& plants : PlantSets(n)) {
      std::vector<uint16_t> got = noisy;
      for (size_t k = 0; k < plants.size(); ++k) {
        got[plants[k]] = static_cast<uint16_t>(want[plants[k]] + 4 + k % 3);  // ties for worst
      }
      if (plants.size() > 2)
        got[plants[1]] = 0x7FC0;  // NaN: the worst
      for (int reports : {1, 5}) {
        const std::string ulp = SameOnAnyThreadCount(
            [&] { return CompareUlp("y", {n}, DType::kBF16, Bf16(got), Bf16(want), 1, reports); });
        const std::string close = SameOnAnyThreadCount([&] {
          return CompareClose("y", {n}, DType::kBF16, Bf16(got), Bf16(want), 0.01, 0, reports);
        });
        if (plants.empty()) {
          EXPECT_EQ(ulp, "");
          EXPECT_EQ(close, "");
          continue;
        }
        const std::string where = fmt::format("y[{}]", plants[0]);
        EXPECT_TRUE(Has(ulp, where)) << ulp;
        EXPECT_TRUE(Has(ulp, fmt::format("{} of {} elements", plants.size(), n))) << ulp;
        EXPECT_TRUE(Has(close, where)) << close;
        if (plants.size() > static_cast<size_t>(reports)) {
          EXPECT_TRUE(Has(ulp, "; worst: ")) << ulp;
        }
      }
    }
  }
}

TEST(CheckParallelTest, GemmMatchesSerial) {
  const int64_t n = 3001 * 699;  // ragged chunks; rows straddle chunk boundaries
  std::mt19937 rng(13);
  std::normal_distribution<float> normal(0, 3);
  std::uniform_real_distribution<float> u(-1e-3f, 1e-3f);
  std::vector<float> want(n), noisy(n);
  for (int64_t i = 0; i < n; ++i) {
    want[i] = normal(rng);
    noisy[i] = want[i] * (1 + u(rng));
  }
  const std::vector<int64_t> dims = {699, 3001};
  const auto gemm = [&](const std::vector<float>& g, const std::vector<float>& w,
                        const Tolerance& tol) {
    return SameOnAnyThreadCount(
        [&] { return CompareGemm("d", dims, DType::kF32, F32(g), F32(w), tol); });
  };
  EXPECT_EQ(gemm(noisy, want, Tolerance{}), "");
  // Elements outside the bound: more than 0.01% fail; the first five are named.
  for (const auto& plants : PlantSets(n)) {
    std::vector<float> got = noisy;
    for (int64_t i : plants) got[i] = want[i] + (want[i] > 0 ? 0.2f : -0.2f);
    Tolerance loose;  // only the element fraction can fail
    loose.worst_rms = 100;
    loose.elem_fraction = 1;
    const std::string msg = gemm(got, want, loose);
    if (plants.empty()) {
      EXPECT_EQ(msg, "");
    } else {
      EXPECT_TRUE(Has(msg, fmt::format("{} of {} elements", plants.size(), n))) << msg;
      EXPECT_TRUE(Has(msg, fmt::format("d[{}, {}]", plants[0] / 3001, plants[0] % 3001))) << msg;
    }
    EXPECT_EQ(gemm(got, want, Tolerance{}).empty(), plants.empty());  // worst_rms
  }
  // Relative Frobenius: a 1% error everywhere (the chunked norm sums).
  std::vector<float> scaled = want;
  for (float& x : scaled) x *= 1.01f;
  EXPECT_TRUE(Has(gemm(scaled, want, Tolerance{}), "relative Frobenius error 0.0099"));
  // Non-finite results and rows of exact zeros fail on their first element; the lowest wins.
  const std::vector<int64_t> plants = Plants(n);
  for (size_t k = plants.size(); k-- > 0;) {
    std::vector<float> got = noisy, zeroed = want;
    if (k + 1 < plants.size()) {
      // A zero row at the next plant, where the candidate wrote a tiny value.
      const int64_t row = plants[k + 1] / 3001;
      for (int64_t j = row * 3001; j < (row + 1) * 3001; ++j) zeroed[j] = got[j] = 0.0f;
      got[plants[k + 1]] = 1e-20f;
    }
    got[plants[k]] = NAN;
    const std::string msg = gemm(got, zeroed, Tolerance{});
    EXPECT_TRUE(Has(msg, fmt::format("d[{}, {}]: got nan", plants[k] / 3001, plants[k] % 3001)))
        << msg;
    if (k + 1 < plants.size()) {
      got[plants[k]] = zeroed[plants[k]];  // without the NaN, the zero row fails
      const std::string zero = gemm(got, zeroed, Tolerance{});
      EXPECT_TRUE(
          Has(zero, fmt::format("d[{}, {}]: got ", plants[k + 1] / 3001, plants[k + 1] % 3001)))
          << zero;
      EXPECT_TRUE(Has(zero, "whole row is exactly 0")) << zero;
    }
  }
}

TEST(CheckParallelTest, MxMatchesSerial) {
  const int64_t last = 4096, rows = 512, per_row = last / 32, n = rows * last;
  std::mt19937 rng(14);
  std::vector<uint8_t> want(n), scales(rows * per_row);
  for (auto& c : want) c = static_cast<uint8_t>(rng() % 0x7E);  // finite e4m3 magnitudes
  for (auto& s : scales) s = static_cast<uint8_t>(120 + rng() % 10);
  const std::vector<int64_t> plants = Plants(n);
  const auto mx = [&](const std::vector<uint8_t>& gd, const std::vector<uint8_t>& gs,
                      const Tolerance& tol, int reports) {
    return SameOnAnyThreadCount([&] {
      return CompareMx("q", "s", {rows, last}, DType::kFP8E4M3, Bytes(gd), Bytes(want), Bytes(gs),
                       Bytes(scales), tol, reports);
    });
  };
  for (const auto& set : PlantSets(n)) {
    std::vector<uint8_t> got = want, got_scales = scales;
    for (size_t k = 0; k < set.size(); ++k) {
      const int64_t i = set[k];
      if (k % 3 == 2) {
        got_scales[i / 32] = static_cast<uint8_t>(scales[i / 32] + 2);  // a bad scale
      } else {
        got[i] = static_cast<uint8_t>(want[i] < 0x70 ? want[i] + 3 : want[i] - 3);  // 3 ulps
      }
    }
    for (int reports : {1, 5, 100}) {
      const std::string msg = mx(got, got_scales, MxTol(1), reports);
      if (set.empty()) {
        EXPECT_EQ(msg, "");
      } else {
        EXPECT_TRUE(Has(msg, "mismatches)")) << msg;
      }
    }
  }
  // Scales off by one (data rescaled): more blocks than the fraction allows; the first named.
  std::vector<uint8_t> got_scales = scales, got = want;
  std::set<int64_t> blocks;
  for (int64_t i : plants) {
    blocks.insert(i / 32);
    const int64_t b = i / 32;
    got_scales[b] = static_cast<uint8_t>(scales[b] + 1);
    for (int64_t j = b * 32; j < b * 32 + 32; ++j)
      got[j] = ws_f32_to_e4m3(static_cast<float>(E4m3(want[j])) / 2);
  }
  const std::string off = mx(got, got_scales, MxTol(1, 1e-6), 5);
  EXPECT_TRUE(Has(off, fmt::format("s: {} of 65536 block scales differ by one", blocks.size())))
      << off;
  EXPECT_TRUE(Has(off, "first: s[0, 0]")) << off;
  EXPECT_EQ(mx(got, got_scales, MxTol(1, 0.01), 5), "");
}

}  // namespace
}  // namespace ws
