#include "problems/mxfp8_dequantize/reference.h"

#include <bit>

namespace ws::mxfp8 {
namespace {

constexpr int kBlock = 32;
constexpr uint8_t kE8M0NaN = 0xFF;

}  // namespace

float E4M3ToFloat(uint8_t q) {
  const uint32_t sign = static_cast<uint32_t>(q & 0x80u) << 24;
  const uint32_t e = (q >> 3) & 0xFu;
  const uint32_t m = q & 7u;
  if (e == 0) {
    // m * 2^-9: exact, and 2^-9 is built from bits (exponent field 118).
    const float mag = static_cast<float>(m) * std::bit_cast<float>(118u << 23);
    return std::bit_cast<float>(std::bit_cast<uint32_t>(mag) | sign);
  }
  // (1 + m/8) * 2^(e-7): fp32 exponent field e - 7 + 127, mantissa m in the top 3 bits.
  return std::bit_cast<float>(sign | ((e + 120u) << 23) | (m << 20));
}

float E8M0ToFloat(uint8_t s) {
  return std::bit_cast<float>(s == 0 ? 0x00400000u : static_cast<uint32_t>(s) << 23);
}

uint16_t FloatToBf16(float v) {
  uint32_t b = std::bit_cast<uint32_t>(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u)
    return kBf16NaN;
  // NOTE: adding 0x7FFF plus the kept lsb rounds to nearest even; a carry out of the mantissa
  // moves to the next exponent, and from the largest finite value to Inf.
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<uint16_t>(b >> 16);
}

uint16_t DequantizeElement(uint8_t q, uint8_t scale) {
  if (scale == kE8M0NaN || (q & 0x7Fu) == 0x7Fu)
    return kBf16NaN;
  return FloatToBf16(E4M3ToFloat(q) * E8M0ToFloat(scale));
}

void DequantizeRowwise(const uint8_t* q, const uint8_t* scales, int64_t m, int64_t k,
                       uint16_t* y) {
  const int64_t blocks = k / kBlock;
  for (int64_t row = 0; row < m; ++row) {
    for (int64_t col = 0; col < k; ++col) {
      const int64_t i = row * k + col;
      y[i] = DequantizeElement(q[i], scales[row * blocks + col / kBlock]);
    }
  }
}

}  // namespace ws::mxfp8
