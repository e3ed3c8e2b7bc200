// warpsmith device library: MXFP8 arithmetic shared by the hand-tuned quantizers (OCP MX v1.0).
// E4M3 is OCP FN (max 448, S.1111.111 NaN); an E8M0 scale S means 2^(S-127), 0xFF is NaN.
// Every function is exact to the problem specs' definitions; the specs' CPU references are the
// judge, and the trusted GPU references do not include this file.
#pragma once

namespace ws {
namespace mx {

constexpr unsigned kE8M0NaN = 0xFF;
constexpr unsigned kE4M3NaNx4 = 0x7F7F7F7Fu;  // four E4M3 NaN bytes
constexpr unsigned kBf16Inf = 0x7F80u;         // bf16 bits of +Inf
constexpr float kInvE4M3Max = 1.0f / 448.0f;

// Per-lane max of two packed pairs of u16 (bf16 magnitudes order as integers, NaN above Inf).
__device__ __forceinline__ unsigned max_u16x2(unsigned a, unsigned b) {
  unsigned d;
  asm("max.u16x2 %0, %1, %2;" : "=r"(d) : "r"(a), "r"(b));
  return d;
}

// An explicit mul.rn.f32, never .ftz: the scale 2^-127 and amax/448 can be subnormal.
__device__ __forceinline__ float mul_rn_no_ftz(float a, float b) {
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// Two fp32 -> two E4M3 bytes (RNE, saturating to +-448), lo in the low byte.
__device__ __forceinline__ unsigned cvt_e4m3x2(float lo, float hi) {
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
}

// The smallest S in [0,254] with 2^(S-127) >= d, for d >= 0 (+Inf included), from d's bits:
// what cvt.rp.satfinite.ue8m0x2.f32 computes in hardware from sm_100 on.
__device__ __forceinline__ unsigned rceil_from_bits(float d) {
  const unsigned bits = __float_as_uint(d);
  const unsigned e = bits >> 23;  // d >= 0
  const unsigned mant = bits & 0x7FFFFFu;
  if (e == 0xFF) return 254;                    // d = +Inf
  if (e == 0) return mant > 0x400000u ? 1 : 0;  // subnormal d: 2^-127 covers up to 2^22 * 2^-149
  return min(e + (mant != 0 ? 1u : 0u), 254u);
}

// rceil_from_bits without branches: d <= 2^-127 (bits <= 0x400000) gives 0; otherwise adding
// 2^23 - 1 carries into the exponent exactly when the mantissa is nonzero (+Inf gives 255, then
// 254). Equal to rceil_from_bits for every d in [0, +Inf] (checked over all 2^31 patterns).
__device__ __forceinline__ unsigned rceil_from_bits_select(float d) {
  const unsigned bits = __float_as_uint(d);
  return bits <= 0x400000u ? 0u : min((bits + 0x7FFFFFu) >> 23, 254u);
}

// E8M0 rceil scale of a finite, non-NaN amax (bf16 bits): the smallest S in [0,254] with
// 2^(S-127) >= amax * fp32(1/448).
// kSelect: sm_90a computes it with rceil_from_bits_select (no branches).
template <bool kSelect = false>
__device__ __forceinline__ unsigned rceil_scale(unsigned amax_bf16) {
  const float d = mul_rn_no_ftz(__uint_as_float(amax_bf16 << 16), kInvE4M3Max);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  // Round toward +Inf to a power of two; satfinite maps +Inf to 0xFE; d = 0 gives 0x00.
  unsigned short pair;
  asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(d));
  return pair & 0xFFu;
#else
  return kSelect ? rceil_from_bits_select(d) : rceil_from_bits(d);
#endif
}

// rceil_scale of two amax values at once, a in bits 0..7, b in bits 8..15: on sm_100a one
// conversion serves both.
__device__ __forceinline__ unsigned rceil_scale_x2(unsigned amax_a, unsigned amax_b) {
  const float da = mul_rn_no_ftz(__uint_as_float(amax_a << 16), kInvE4M3Max);
  const float db = mul_rn_no_ftz(__uint_as_float(amax_b << 16), kInvE4M3Max);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
  unsigned short pair;
  asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(db), "f"(da));
  return pair;
#else
  return rceil_from_bits(da) | (rceil_from_bits(db) << 8);
#endif
}

// E8M0 floor scale of a finite, non-NaN amax (bf16 bits): clamp(floor(log2(amax)) - 8 + 127, 0,
// 254). bf16 subnormals (exponent field 0) have floor(log2) <= -127 and clamp to 0 like amax = 0.
__device__ __forceinline__ unsigned floor_scale(unsigned amax_bf16) {
  return static_cast<unsigned>(max(static_cast<int>(amax_bf16 >> 7) - 8, 0));
}

// A block whose amax (bf16 magnitude bits) is NaN, or Inf under floor rounding, gets the NaN
// scale and all-NaN elements; under rceil an Inf amax gives 0xFE and saturated elements.
template <bool kFloor>
__device__ __forceinline__ bool is_special(unsigned amax_bf16) {
  return kFloor ? amax_bf16 >= kBf16Inf : amax_bf16 > kBf16Inf;
}

// The E8M0 scale of a block from its amax (bf16 magnitude bits, NaN above Inf): kE8M0NaN with
// *special set for a special block (see is_special), else floor_scale or rceil_scale.
// kSelect: rceil_scale<true> (no branches on sm_90a).
template <bool kFloor, bool kSelect = false>
__device__ __forceinline__ unsigned block_scale(unsigned amax, bool* special) {
  // NOTE: the test spelled out, not is_special(): the kernels' SASS was verified in this form.
  *special = kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
  return *special ? kE8M0NaN : (kFloor ? floor_scale(amax) : rceil_scale<kSelect>(amax));
}

// 2^(127-S) as fp32, S in [0,254]: the factor that quantizes; S = 254 gives the subnormal 2^-127.
__device__ __forceinline__ float scale_reciprocal(unsigned s) {
  const unsigned biased = 254u - s;
  return __uint_as_float(biased != 0 ? biased << 23 : 0x00400000u);
}

}  // namespace mx
}  // namespace ws
