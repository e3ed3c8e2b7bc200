// Trusted reference library: bf16 bit patterns to fp32 and back, the CPU references' FloatToBf16
// rounding (nearest even; any NaN becomes 0x7FC0), done on the bits. Everything is in an anonymous
// namespace: each reference is one translation unit.
#pragma once

namespace {

// fp32 -> bf16 bits, round to nearest even (a carry moves to the next binade, or to Inf);
// NaN -> 0x7FC0.
__device__ unsigned short bf16_rne(float v) {
  unsigned b = __float_as_uint(v);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  b += 0x7FFFu + ((b >> 16) & 1u);
  return static_cast<unsigned short>(b >> 16);
}

// The exact fp32 value of bf16 bits.
__device__ float bf16_float(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

}  // namespace
