#include "problems/bf16_gemm/reference.h"

#include <algorithm>
#include <ctime>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "problems/bf16_gemm/gemm_common.h"
#include "problems/problems.h"

namespace ws::gemm {
namespace {

TEST(GemmCommonTest, DoubleToBf16RoundsOnceToNearestEven) {
  const std::pair<double, uint16_t> cases[] = {
      {1.0, 0x3F80},
      {-2.0, 0xC000},
      {0.0, 0x0000},
      {-0.0, 0x8000},
      {1.0 + 0x1p-8, 0x3F80},                // half an ulp: tie, to even (mantissa 0)
      {1.0 + 0x1p-8 + 0x1p-30, 0x3F81},      // just above the tie
      {1.0 + 3 * 0x1p-8, 0x3F82},            // 1.5 ulps: tie, to even (mantissa 2)
      {17.0, 0x4188},
      {0x1p-126, 0x0080},                    // smallest normal
      {0x1p-133, 0x0001},                    // smallest subnormal
      {0x1p-134, 0x0000},                    // half the smallest subnormal: tie, to 0
      {3 * 0x1p-134, 0x0002},                // 1.5 quanta: tie, to even 2
      {-5 * 0x1p-135, 0x8001},               // 1.25 quanta
      {0x1p127 * (2 - 0x1p-7), 0x7F7F},      // largest finite
      {0x1p127 * (2 - 0x1p-8), 0x7F80},      // its tie with 2^128: to even, which is Inf
      {-0x1p128, 0xFF80},
      {std::numeric_limits<double>::infinity(), 0x7F80},
      {std::numeric_limits<double>::quiet_NaN(), 0x7FC0},
  };
  for (const auto& [v, bits] : cases) EXPECT_EQ(DoubleToBf16(v), bits) << v;
}

TEST(GemmCommonTest, FormatDecoding) {
  EXPECT_EQ(Bf16ToDouble(0x3F80), 1.0);
  EXPECT_EQ(Bf16ToDouble(0x0001), 0x1p-133);
  EXPECT_EQ(E4M3ToDouble(0x38), 1.0);
  EXPECT_EQ(E4M3ToDouble(0x7E), 448.0);
  EXPECT_EQ(E4M3ToDouble(0xFE), -448.0);
  EXPECT_EQ(E4M3ToDouble(0x01), 0x1p-9);
  EXPECT_EQ(E4M3ToDouble(0x08), 0x1p-6);
  EXPECT_TRUE(std::signbit(E4M3ToDouble(0x80)));
  EXPECT_TRUE(std::isnan(E4M3ToDouble(0x7F)));
  EXPECT_TRUE(std::isnan(E4M3ToDouble(0xFF)));
  EXPECT_EQ(E8M0ToDouble(127), 1.0);
  EXPECT_EQ(E8M0ToDouble(0), 0x1p-127);
  EXPECT_EQ(E8M0ToDouble(254), 0x1p127);
  EXPECT_TRUE(std::isnan(E8M0ToDouble(0xFF)));
}

TEST(GemmCommonTest, GroupStartsValidates) {
  auto ok = GroupStarts({2, 2, 5}, 5, 1);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int64_t>{0, 2, 2, 5}));
  EXPECT_FALSE(GroupStarts({3, 2, 5}, 5, 1).ok());     // decreasing
  EXPECT_FALSE(GroupStarts({2, 4}, 5, 1).ok());        // does not reach the total
  EXPECT_FALSE(GroupStarts({-1, 5}, 5, 1).ok());       // negative
  EXPECT_FALSE(GroupStarts({16, 48}, 48, 32).ok());    // not aligned
  EXPECT_TRUE(GroupStarts({0, 0, 0}, 0, 32).ok());     // all empty
}

uint16_t B(double v) { return DoubleToBf16(v); }

TEST(Bf16GemmTest, WorkedExample) {
  // A = [[1,2],[3,4]], B = [[5,6],[7,8]]: D = A B^T = [[17,23],[39,53]].
  const std::vector<uint16_t> a = {B(1), B(2), B(3), B(4)}, b = {B(5), B(6), B(7), B(8)};
  std::vector<uint16_t> d(4);
  Bf16Gemm(a.data(), b.data(), 2, 2, 2, d.data());
  EXPECT_EQ(d, (std::vector<uint16_t>{0x4188, 0x41B8, 0x421C, 0x4254}));
}

TEST(Bf16GemmTest, TheSumIsExactThenRoundedOnce) {
  // 2^24 + 1 - 2^24: a float accumulator loses the 1, the reference keeps it.
  const std::vector<uint16_t> a = {B(0x1p24), B(1), B(-0x1p24)}, b = {B(1), B(1), B(1)};
  uint16_t d = 0;
  Bf16Gemm(a.data(), b.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F80);
  // 1 + 2^-8 is a bf16 tie (to 1.0); 1 + 2^-8 + 2^-20 is not (up).
  const std::vector<uint16_t> a2 = {B(1), B(0x1p-8), B(0x1p-20)}, b2 = {B(1), B(1), B(0)};
  Bf16Gemm(a2.data(), b2.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F80);
  const std::vector<uint16_t> b3 = {B(1), B(1), B(1)};
  Bf16Gemm(a2.data(), b3.data(), 1, 1, 3, &d);
  EXPECT_EQ(d, 0x3F81);
}

TEST(Bf16GemmTest, SpecialValues) {
  uint16_t d = 0;
  const uint16_t nan = 0x7FC0, inf = 0x7F80;
  std::vector<uint16_t> a = {nan, B(1)}, b = {B(1), B(1)};
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7FC0);
  a = {inf, B(1)};
  b = {B(0), B(1)};  // Inf * 0 is NaN
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7FC0);
  a = {B(0x1p127), B(0x1p127)};
  b = {B(2), B(2)};  // overflows bf16
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x7F80);
  a = {B(0x1p-100), B(0)};
  b = {B(0x1p-33), B(0)};  // 2^-133: a bf16 subnormal
  Bf16Gemm(a.data(), b.data(), 1, 1, 2, &d);
  EXPECT_EQ(d, 0x0001);
}

// Against an independent long-double model on odd sizes, row/column placement included.
TEST(Bf16GemmTest, MatchesALongDoubleModel) {
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  const int64_t m = 5, n = 7, k = 33;
  std::vector<uint16_t> a(m * k), b(n * k), d(m * n);
  for (auto& v : a) v = B(nd(rng));
  for (auto& v : b) v = B(nd(rng));
  Bf16Gemm(a.data(), b.data(), m, n, k, d.data());
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      long double s = 0;
      for (int64_t x = 0; x < k; ++x) {
        s += static_cast<long double>(Bf16ToDouble(a[i * k + x])) * Bf16ToDouble(b[j * k + x]);
      }
      EXPECT_EQ(d[i * n + j], DoubleToBf16(static_cast<double>(s))) << i << "," << j;
    }
  }
}

// ---- Every GEMM problem's registered reference on inputs generated as the runner does -----------

// A CPU reference at a test or hidden shape judges every evaluation, so it must stay cheap: a
// second in an optimized build; ten in a Debug or AddressSanitizer build, which run it 3-10x slower.
#if defined(__OPTIMIZE__) && !defined(__SANITIZE_ADDRESS__)
constexpr double kReferenceBudgetS = 1.0;
#else
constexpr double kReferenceBudgetS = 10.0;
#endif

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Runs the registered reference at every test and hidden shape in every parameter value: it must
// succeed within kReferenceBudgetS, give finite, non-zero outputs, and the routed problems' inputs must
// exercise empty and very uneven groups.
TEST(GemmProblemsTest, ReferencesRunOnGeneratedInputsAtEveryTestAndHiddenShape) {
  const char* kProblems[] = {"bf16_gemm",
                             "fp8_rowwise_gemm",
                             "bf16_grouped_gemm",
                             "mxfp8_grouped_gemm_fwd",
                             "mxfp8_grouped_gemm_dgrad",
                             "mxfp8_grouped_gemm_wgrad",
                             "fp8_blockwise_grouped_gemm",
                             "moe_decode_fused"};
  for (const char* name : kProblems) {
    auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/" + name + "/spec.json");
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    std::vector<std::map<std::string, std::string>> settings = {{}};
    if (const ParamSpec* p = spec->FindParam("form")) {
      settings.clear();
      for (const auto& v : p->values) settings.push_back({{"form", v}});
    }
    bool saw_empty = false, saw_uneven = false;
    for (const auto& params : settings) {
      for (const auto* list : {&spec->test_shapes, &spec->hidden_shapes}) {
        for (const Shape& shape : *list) {
          const std::string where = std::string(name) + " " + ShapeText(*spec, shape);
          const SymbolTable sym = BindSymbols(*spec, shape, params);
          auto in = GenerateInputs(*spec, sym, 1234);
          ASSERT_TRUE(in.ok()) << where << ": " << in.status().message();
          // This thread's CPU time, not wall time: ctest -j runs many tests on few cores.
          const double t0 = ThreadCpuSeconds();
          auto out = RunCpuReference(*spec, sym, params, *in);
          const double s = ThreadCpuSeconds() - t0;
          ASSERT_TRUE(out.ok()) << where << ": " << out.status().message();
          EXPECT_LT(s, kReferenceBudgetS) << where;
          // Weight gradients have one block per group: exactly the empty groups' blocks are 0.
          const bool per_group = std::string(name) == "mxfp8_grouped_gemm_wgrad" ||
                                 (params.count("form") && params.at("form") == "wgrad");
          for (const auto& [oname, t] : *out) {
            const int64_t groups = per_group ? in->at("offs").numel() : 1;
            const int64_t block = t.numel() / groups;
            for (int64_t g = 0; g < groups; ++g) {
              int64_t nonzero = 0;
              for (int64_t i = g * block; i < (g + 1) * block; ++i) {
                const double v = t.dtype == DType::kF32 ? LoadF32(t.bytes, i)
                                                        : Bf16ToDouble(LoadU16(t.bytes, i));
                ASSERT_TRUE(std::isfinite(v)) << where << " " << oname << "[" << i << "]";
                nonzero += v != 0;
              }
              const int64_t rows = per_group ? LoadI32(in->at("offs").bytes, g) -
                                                   (g ? LoadI32(in->at("offs").bytes, g - 1) : 0)
                                             : 1;
              if (rows == 0) {
                EXPECT_EQ(nonzero, 0) << where << " " << oname << " group " << g;
              } else {
                EXPECT_GT(nonzero, block / 2) << where << " " << oname << " group " << g;
              }
            }
          }
          if (in->count("offs")) {
            const HostTensor& offs = in->at("offs");
            int64_t prev = 0, smallest = INT64_MAX, largest = 0;
            for (int64_t g = 0; g < offs.numel(); ++g) {
              const int64_t size = LoadI32(offs.bytes, g) - prev;
              prev += size;
              saw_empty |= size == 0;
              if (size > 0) smallest = std::min(smallest, size), largest = std::max(largest, size);
            }
            saw_uneven |= largest >= 4 * smallest && smallest != INT64_MAX;
          }
        }
      }
    }
    if (spec->FindTensor("offs")) {
      EXPECT_TRUE(saw_empty) << name << ": no test or hidden shape has an empty group";
      EXPECT_TRUE(saw_uneven) << name << ": no test or hidden shape has groups 4x apart";
    }
  }
}

}  // namespace
}  // namespace ws::gemm
