// The quantizers' BF16_MUL path (ws::mx::mul_bf16x2 in kernels/include/ws/mx.cuh) multiplies a
// bf16 element by its block's 2^(127-S) in bf16 and converts that to E4M3, where the spec's
// arithmetic multiplies in fp32. The two agree when the bf16 product is exact, and a product too
// small for a normal bf16 is an E4M3 zero of the same sign either way. This walks every finite
// bf16 with every scale a block holding it can have (its scaled magnitude below 2^9, the floor
// rule's bound; rceil's is 448) and holds the two paths to the same byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "problems/mxfp8_quantize_rowwise/reference.h"

namespace {

float Bf16ToFloat(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// v rounded to bf16 (8 significant bits, subnormals down to 2^-133), nearest even; v is far
// below bf16's overflow here.
double RoundToBf16(double v) {
  if (v == 0.0) return v;
  int e;
  std::frexp(v, &e);  // |v| in [2^(e-1), 2^e)
  const double quantum = std::ldexp(1.0, std::max(e - 1, -126) - 7);
  return std::nearbyint(v / quantum) * quantum;  // the default rounding mode: to nearest even
}

TEST(Bf16ScaleMultiplyTest, MatchesTheFp32PathForEveryReachableElementAndScale) {
  using ws::mxfp8::FloatToE4M3;
  long long checked = 0, below_normal = 0;
  for (uint32_t bits = 0; bits <= 0xFFFF; ++bits) {
    const float x = Bf16ToFloat(static_cast<uint16_t>(bits));
    if (!std::isfinite(x)) continue;  // NaN and Inf blocks take the special path
    for (int s = 0; s <= 254; ++s) {
      const double exact = std::ldexp(static_cast<double>(x), 127 - s);
      if (std::fabs(exact) >= 512.0) continue;  // no block holding x has this scale
      const float fp32_path = static_cast<float>(exact);  // mul.rn.f32 of x and 2^(127-S)
      const float bf16_path = static_cast<float>(RoundToBf16(exact));
      if (exact != 0.0 && std::fabs(exact) < 0x1p-126) ++below_normal;
      ASSERT_EQ(FloatToE4M3(bf16_path), FloatToE4M3(fp32_path))
          << "bf16 0x" << std::hex << bits << std::dec << " S " << s << " (x 2^(127-S) = "
          << exact << ")";
      ++checked;
    }
  }
  EXPECT_GT(checked, 8'000'000);
  EXPECT_GT(below_normal, 100'000) << "the walk must reach the products bf16 cannot hold exactly";
}

}  // namespace
