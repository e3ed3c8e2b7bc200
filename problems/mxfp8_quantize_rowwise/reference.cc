#include "problems/mxfp8_quantize_rowwise/reference.h"

#include <algorithm>
#include <bit>
#include <cstring>

namespace ws::mxfp8 {
namespace {

constexpr int kBlock = 32;
constexpr uint8_t kE4M3Max = 0x7E;  // 448
constexpr uint8_t kE4M3NaN = 0x7F;
constexpr uint8_t kE8M0NaN = 0xFF;

float Bf16ToFloat(uint16_t b) {
  return std::bit_cast<float>(static_cast<uint32_t>(b) << 16);
}

// 2^(127 - s) for s in [0, 254]; s = 254 gives 2^-127, an fp32 subnormal.
float ScaleReciprocal(int s) {
  const int biased = 254 - s;
  const uint32_t bits = biased >= 1 ? static_cast<uint32_t>(biased) << 23 : 0x00400000u;
  return std::bit_cast<float>(bits);
}

// floor(log2(|v|)) of a finite non-zero fp32, from the bits (subnormals included).
int FloorLog2(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v) & 0x7FFFFFFFu;
  const int e = static_cast<int>(bits >> 23);
  if (e != 0)
    return e - 127;
  return (31 - std::countl_zero(bits)) - 149;  // subnormal: value = mantissa * 2^-149
}

}  // namespace

uint8_t FloatToE4M3(float v) {
  const uint32_t bits = std::bit_cast<uint32_t>(v);
  const uint8_t sign = static_cast<uint8_t>((bits >> 31) << 7);
  const uint32_t abs = bits & 0x7FFFFFFFu;
  if (abs > 0x7F800000u)
    return sign | kE4M3NaN;
  if (abs == 0x7F800000u)
    return sign | kE4M3Max;
  if (abs == 0)
    return sign;

  const int e = static_cast<int>(abs >> 23);
  const int e_eff = e == 0 ? 1 : e;  // subnormal fp32 share exponent 2^-126
  const uint32_t sig =
      (abs & 0x7FFFFFu) | (e == 0 ? 0u : 0x800000u);  // value = sig * 2^(e_eff-150)
  const int unbiased = e_eff - 127;
  if (unbiased > 8)
    return sign | kE4M3Max;  // >= 512: saturates

  // The E4M3 quantum: 2^(exp-3) for normals, 2^-9 below 2^-6 (subnormals).
  const int q_exp = std::max(unbiased, -6) - 3;
  const int shift = q_exp - (e_eff - 150);  // >= 20
  uint32_t r = 0;
  if (shift < 25) {  // otherwise the value is below half the quantum: rounds to 0
    r = sig >> shift;
    const uint32_t rem = sig & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1u)))
      ++r;
  }
  // NOTE: one formula covers normals and subnormals (q_exp = -9 gives code = r), and a carry from
  // r = 16 rolls into the next exponent by itself.
  const int code = (q_exp + 9) * 8 + static_cast<int>(r);
  return sign | static_cast<uint8_t>(std::min(code, static_cast<int>(kE4M3Max)));
}

uint8_t ScaleFromAmax(float amax, Rounding rounding) {
  const uint32_t abits = std::bit_cast<uint32_t>(amax) & 0x7FFFFFFFu;
  if (rounding == Rounding::kFloor) {
    if (abits == 0x7F800000u)
      return kE8M0NaN;
    if (abits == 0)
      return 0;
    return static_cast<uint8_t>(std::clamp(FloorLog2(amax) - 8 + 127, 0, 254));
  }
  const float d = std::bit_cast<float>(abits) * (1.0f / 448.0f);
  const uint32_t dbits = std::bit_cast<uint32_t>(d);
  if (dbits == 0x7F800000u)
    return 254;
  const int e = static_cast<int>(dbits >> 23);
  const uint32_t mant = dbits & 0x7FFFFFu;
  int s;
  if (e == 0) {
    // d = mant * 2^-149 < 2^-126: 2^-127 covers it up to mant = 2^22, else 2^-126 does.
    s = mant > 0x400000u ? 1 : 0;
  } else {
    s = e + (mant != 0 ? 1 : 0);
  }
  return static_cast<uint8_t>(std::min(s, 254));
}

void QuantizeBlock(const uint16_t* x, Rounding rounding, uint8_t* q, uint8_t* scale) {
  float amax = 0.0f;
  bool nan = false;
  for (int i = 0; i < kBlock; ++i) {
    const uint16_t a = x[i] & 0x7FFFu;
    if (a > 0x7F80u)
      nan = true;
    amax = std::max(amax, Bf16ToFloat(a));
  }
  const uint8_t s = nan ? kE8M0NaN : ScaleFromAmax(amax, rounding);
  *scale = s;
  if (s == kE8M0NaN) {
    std::memset(q, kE4M3NaN, kBlock);
    return;
  }
  const float r = ScaleReciprocal(s);
  for (int i = 0; i < kBlock; ++i) q[i] = FloatToE4M3(Bf16ToFloat(x[i]) * r);
}

void QuantizeRowwise(const uint16_t* x, int64_t m, int64_t k, Rounding rounding, uint8_t* q,
                     uint8_t* scales) {
  const int64_t blocks = k / kBlock;
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t off = row * k + b * kBlock;
      QuantizeBlock(x + off, rounding, q + off, scales + row * blocks + b);
    }
  }
}

}  // namespace ws::mxfp8
