// The plain MXFP8 block quantizers of the quantizer baselines and starting kernels (namespace
// ws::mx_naive): one thread quantizes one block of 32 elements on its own, no lane cooperation.
//  - Baselines: amax in fp32 (a NaN flag beside it), the E8M0 scale from the bits of amax / 448
//    (rceil) or from ilogbf (floor), cuda_fp8.h's saturating E4M3 conversion per element.
//  - Starting kernels: amax on the bf16 magnitude bits (integer order is magnitude order, NaNs
//    above +Inf), 32 values read from shared memory at a stride, packed into 8 words.
// The fast kernels use ws/mx.cuh and ws/mx_block.cuh instead.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp8.h>

namespace ws {
namespace mx_naive {

constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned char kScaleNaN = 0xFF;
constexpr unsigned char kE4M3NaN = 0x7F;

// ---- The baselines: fp32 values ----
// NOTE: plain __device__, as in the baselines: __forceinline__ changes the SwiGLU baselines'
// sm_100a SASS.

/// E8M0 scale of a block from its amax and NaN flag; kFloor: OCP floor, else RCEIL.
template <bool kFloor>
__device__ int block_scale(float amax, bool has_nan) {
  if (has_nan) return kScaleNaN;
  if (kFloor) {
    // OCP: floor(log2(amax)) - emax(E4M3) = 8, biased by 127, clamped.
    if (isinf(amax)) return kScaleNaN;
    if (amax == 0.0f) return 0;
    return min(max(ilogbf(amax) - 8 + 127, 0), 254);
  }
  // RCEIL: round amax / 448 up to a power of two.
  const float d = __fmul_rn(amax, 1.0f / 448.0f);
  const unsigned bits = __float_as_uint(d);
  const int e = static_cast<int>(bits >> 23);
  const unsigned mant = bits & 0x7FFFFF;
  if (isinf(d)) return 254;
  if (e == 0) return mant > 0x400000 ? 1 : 0;  // subnormal d
  return min(e + (mant != 0 ? 1 : 0), 254);
}

/// One block: element i at x[i * x_stride], q[i]; writes the scale to *scale.
template <bool kFloor>
__device__ void quantize_block(const __nv_bfloat16* __restrict__ x, long long x_stride,
                               __nv_fp8_storage_t* __restrict__ q, unsigned char* scale) {
  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    v[i] = __bfloat162float(x[i * x_stride]);
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const int s = block_scale<kFloor>(amax, has_nan);
  *scale = static_cast<unsigned char>(s);
  if (s == kScaleNaN) {
    for (int i = 0; i < kBlock; ++i) q[i] = kE4M3NaN;
    return;
  }
  const float r = ldexpf(1.0f, 127 - s);  // 2^-127 is subnormal: needs no flush-to-zero
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
}

/// Quantizes the 32 values v into q[0..31]; returns the scale.
template <bool kFloor>
__device__ int quantize32(const float (&v)[kBlock], __nv_fp8_storage_t* q) {
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const int s = block_scale<kFloor>(amax, has_nan);
  if (s == kScaleNaN) {
    for (int i = 0; i < kBlock; ++i) q[i] = kE4M3NaN;
    return s;
  }
  const float r = ldexpf(1.0f, 127 - s);
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
  return s;
}

// ---- The starting kernels: bf16 bits in shared memory ----

constexpr unsigned kE4M3NaNx4 = 0x7F7F7F7Fu;
constexpr unsigned kBf16Inf = 0x7F80u;

/// RCEIL scale from the bf16 bits of amax (NaN and Inf handled by the caller).
__device__ __forceinline__ unsigned rceil_scale_bits(unsigned amax_bits) {
  const float d = __fmul_rn(__uint_as_float(amax_bits << 16), 1.0f / 448.0f);
  const unsigned bits = __float_as_uint(d);
  const unsigned e = bits >> 23;
  const unsigned mant = bits & 0x7FFFFFu;
  if (e == 0xFF) return 254;                      // d = +Inf
  if (e == 0) return mant > 0x400000u ? 1u : 0u;  // subnormal d: 2^-127 is 0x400000 * 2^-149
  return min(e + (mant != 0 ? 1u : 0u), 254u);
}

/// OCP floor scale from amax's bf16 exponent.
__device__ __forceinline__ unsigned floor_scale_bits(unsigned amax_bits) {
  return static_cast<unsigned>(max(static_cast<int>(amax_bits >> 7) - 8, 0));
}

/// Two E4M3 bytes (lo in the low byte); kPackedCvt: one cvt.rn.satfinite.e4m3x2.f32, else
/// cuda_fp8.h per element.
template <bool kPackedCvt>
__device__ __forceinline__ unsigned to_e4m3x2(float lo, float hi) {
  if constexpr (kPackedCvt) {
    unsigned short d;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
    return d;
  } else {
    return static_cast<unsigned>(__nv_cvt_float_to_fp8(lo, __NV_SATFINITE, __NV_E4M3)) |
           static_cast<unsigned>(__nv_cvt_float_to_fp8(hi, __NV_SATFINITE, __NV_E4M3)) << 8;
  }
}

__device__ __forceinline__ float bf16_at(const unsigned short* s, int i, int stride) {
  return __uint_as_float(static_cast<unsigned>(s[i * stride]) << 16);
}

/// Quantizes the 32 shared-memory values s[i * stride] into qw (byte i in qw[i / 4]); returns S.
template <bool kFloor, bool kPackedCvt>
__device__ __forceinline__ unsigned quantize32_bits(const unsigned short* s, int stride,
                                                    unsigned (&qw)[8]) {
  unsigned amax = 0;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) amax = max(amax, s[i * stride] & 0x7FFFu);
  const bool special = kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
  const unsigned sc =
      special ? kScaleNaN : (kFloor ? floor_scale_bits(amax) : rceil_scale_bits(amax));
  const unsigned r_exp = special ? 127u : 254u - sc;  // 2^(127-S); S = 254 gives a subnormal
  const float r = __uint_as_float(r_exp != 0 ? r_exp << 23 : 0x00400000u);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const unsigned lo = to_e4m3x2<kPackedCvt>(__fmul_rn(bf16_at(s, 4 * j, stride), r),
                                              __fmul_rn(bf16_at(s, 4 * j + 1, stride), r));
    const unsigned hi = to_e4m3x2<kPackedCvt>(__fmul_rn(bf16_at(s, 4 * j + 2, stride), r),
                                              __fmul_rn(bf16_at(s, 4 * j + 3, stride), r));
    qw[j] = special ? kE4M3NaNx4 : lo | hi << 16;
  }
  return sc;
}

/// 32 bytes to a 16-byte aligned destination.
__device__ __forceinline__ void store32(unsigned char* dst, const unsigned (&qw)[8]) {
  reinterpret_cast<uint4*>(dst)[0] = make_uint4(qw[0], qw[1], qw[2], qw[3]);
  reinterpret_cast<uint4*>(dst)[1] = make_uint4(qw[4], qw[5], qw[6], qw[7]);
}

}  // namespace mx_naive
}  // namespace ws
