// warpsmith device library: bf16 bit manipulation on packed 32-bit words (two bf16 per word,
// element 0 in the low half). bf16 -> fp32 is exact (a shift); fp32 -> bf16 rounds once (RNE).
#pragma once

namespace ws {

/// The low / high bf16 of a packed pair, as fp32 (exact).
__device__ __forceinline__ float bf16_lo(unsigned w) {
  return __uint_as_float(w << 16);
}
__device__ __forceinline__ float bf16_hi(unsigned w) {
  return __uint_as_float(w & 0xFFFF0000u);
}

/// Two fp32 -> packed bf16 (RNE, subnormals kept, NaN stays NaN), lo in the low half.
__device__ __forceinline__ unsigned cvt_bf16x2(float lo, float hi) {
  unsigned d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

}  // namespace ws
