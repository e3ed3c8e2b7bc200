// CPU reference for mxfp8_quantize_rowwise: the rules of spec.json, exactly. bf16 values are raw
// uint16 bit patterns; q is E4M3 bytes; scales are E8M0 bytes.
#pragma once

#include <cstdint>

namespace ws::mxfp8 {

enum class Rounding { kRceil = 0, kFloor = 1 };  // indices match the spec's "rounding" values

/// One 32-element block: writes 32 q bytes and one scale byte.
void QuantizeBlock(const uint16_t* x, Rounding rounding, uint8_t* q, uint8_t* scale);

/// x [M,K] row-major -> q [M,K], scales [M,K/32]. K must be a multiple of 32.
void QuantizeRowwise(const uint16_t* x, int64_t m, int64_t k, Rounding rounding, uint8_t* q,
                     uint8_t* scales);

/// E8M0 scale byte for a block's amax (fp32), per the rounding mode (NaN handling excluded: the
/// caller checks NaN first).
uint8_t ScaleFromAmax(float amax, Rounding rounding);

/// fp32 -> E4M3 with round-to-nearest-even, saturating to +-448 (Inf too), NaN -> 0x7F/0xFF.
uint8_t FloatToE4M3(float v);

}  // namespace ws::mxfp8
