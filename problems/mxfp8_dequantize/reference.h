// CPU reference for mxfp8_dequantize: the rules of spec.json, exactly. q is E4M3 bytes, scales are
// E8M0 bytes (one per 32 consecutive elements of a row), y is raw bf16 bit patterns.
#pragma once

#include <cstdint>

namespace ws::mxfp8 {

/// The canonical bf16 NaN every NaN result is written as.
inline constexpr uint16_t kBf16NaN = 0x7FC0;

/// One element: bf16_rne(float(e4m3(q)) * 2^(scale-127)); scale 0xFF or a NaN q gives 0x7FC0.
uint16_t DequantizeElement(uint8_t q, uint8_t scale);

/// q [M,K], scales [M,K/32] -> y [M,K], row-major. K must be a multiple of 32.
void DequantizeRowwise(const uint8_t* q, const uint8_t* scales, int64_t m, int64_t k,
                       uint16_t* y);

/// The exact fp32 value of a non-NaN E4M3 byte (the caller checks NaN first).
float E4M3ToFloat(uint8_t q);

/// 2^(s-127) as fp32 for s in [0, 254]; s = 0 gives the subnormal 2^-127.
float E8M0ToFloat(uint8_t s);

/// fp32 -> bf16 bits, round to nearest even (subnormals kept, overflow to +-Inf); NaN -> 0x7FC0.
uint16_t FloatToBf16(float v);

}  // namespace ws::mxfp8
