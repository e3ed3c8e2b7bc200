/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512], "COLS": [1, 2, 4, 8], "STORE_BYTES": [1, 4, 16],
              "CONVERT": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_colwise_columns",
                "grid":  ["ceil_div((K / COLS) * (M / 32), THREADS)"], "block": ["THREADS"],
                "smem": "0",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// Starting kernel for mxfp8_quantize_colwise: the baseline's layout (one thread per 32-row block,
// neighbouring threads on neighbouring columns) with the widths made tunable:
//
//  - COLS: each thread owns COLS adjacent columns of one 32-row block and reads each of the 32
//    rows as one 2*COLS-byte vector (a warp load covers 64*COLS contiguous bytes of a row).
//  - STORE_BYTES: each column's 32 E4M3 bytes (one 32-byte run of a q_t row) go out as 1-, 4- or
//    16-byte stores.
//  - CONVERT 0: cuda_fp8.h's __nv_cvt_float_to_fp8 per element; 1: the packed
//    cvt.rn.satfinite.e4m3x2.f32, both RNE + satfinite.
//
// Scale rules as the baseline: amax on the bf16 magnitude bits (integer order is magnitude order,
// NaNs above +Inf); rceil from the bits of d = amax * fp32(1/448); floor from amax's exponent.
// The defaults are the baseline's layout. Expected better: COLS 4-8 with STORE_BYTES 16 (full
// 32-byte sectors on both sides), at the price of registers (COLS 8 holds 128 words of x, and
// spills under THREADS 512, whose launch bound caps a thread at 128 registers). The
// rows of q_t a warp writes are M bytes apart: a shared-memory transpose that makes stores
// contiguous along M is the next step, beyond this kernel's knobs.

#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef COLS
#define COLS 1
#endif
#ifndef STORE_BYTES
#define STORE_BYTES 1
#endif
#ifndef CONVERT
#define CONVERT 0
#endif

namespace {

constexpr int kThreads = THREADS;
constexpr int kBlock = 32;                         // rows per E8M0 scale
constexpr int kCols = COLS;                        // columns per thread
constexpr int kWords = kCols >= 2 ? kCols / 2 : 1; // x of one row as bf16 pairs
constexpr int kStoreBytes = STORE_BYTES;
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;

static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
static_assert(kCols == 1 || kCols == 2 || kCols == 4 || kCols == 8, "COLS divides 32");
static_assert(kStoreBytes == 1 || kStoreBytes == 4 || kStoreBytes == 16, "store width");

constexpr unsigned kScaleNaN = 0xFF;
constexpr unsigned kE4M3NaNx4 = 0x7F7F7F7Fu;
constexpr unsigned kBf16Inf = 0x7F80u;

// Row i of this thread's columns: one vector load of 2 * kCols bytes.
__device__ __forceinline__ void load_row(const unsigned short* __restrict__ src,
                                         unsigned (&w)[kWords]) {
  if constexpr (kCols == 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
  } else if constexpr (kCols == 4) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    w[0] = v.x;
    w[1] = v.y;
  } else if constexpr (kCols == 2) {
    w[0] = *reinterpret_cast<const unsigned*>(src);
  } else {
    w[0] = *src;
  }
}

// Column c's bf16 bits in row word array w.
__device__ __forceinline__ unsigned column_bits(const unsigned (&w)[kWords], int c) {
  return (w[c / 2] >> (16 * (c % 2))) & 0xFFFFu;
}

__device__ __forceinline__ unsigned rceil_scale(unsigned amax_bits) {
  const float d = __fmul_rn(__uint_as_float(amax_bits << 16), 1.0f / 448.0f);
  const unsigned bits = __float_as_uint(d);
  const unsigned e = bits >> 23;
  const unsigned mant = bits & 0x7FFFFFu;
  if (e == 0xFF) return 254;                      // d = +Inf
  if (e == 0) return mant > 0x400000u ? 1u : 0u;  // subnormal d
  return min(e + (mant != 0 ? 1u : 0u), 254u);
}

__device__ __forceinline__ unsigned floor_scale(unsigned amax_bits) {
  return static_cast<unsigned>(max(static_cast<int>(amax_bits >> 7) - 8, 0));
}

__device__ __forceinline__ unsigned to_e4m3x2(float lo, float hi) {
#if CONVERT == 1
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<unsigned>(__nv_cvt_float_to_fp8(lo, __NV_SATFINITE, __NV_E4M3)) |
         static_cast<unsigned>(__nv_cvt_float_to_fp8(hi, __NV_SATFINITE, __NV_E4M3)) << 8;
#endif
}

// 32 bytes (qw[0] holds bytes 0..3) to dst, 32-byte aligned, kStoreBytes at a time.
__device__ __forceinline__ void store32(unsigned char* __restrict__ dst, const unsigned (&qw)[8]) {
  if constexpr (kStoreBytes == 16) {
    reinterpret_cast<uint4*>(dst)[0] = make_uint4(qw[0], qw[1], qw[2], qw[3]);
    reinterpret_cast<uint4*>(dst)[1] = make_uint4(qw[4], qw[5], qw[6], qw[7]);
  } else if constexpr (kStoreBytes == 4) {
#pragma unroll
    for (int j = 0; j < 8; ++j) reinterpret_cast<unsigned*>(dst)[j] = qw[j];
  } else {
#pragma unroll
    for (int j = 0; j < 32; ++j) dst[j] = static_cast<unsigned char>(qw[j / 4] >> (8 * (j % 4)));
  }
}

}  // namespace

// x (M,K) bf16 bits; q_t (K,M) e4m3; scales_t (K,M/32) e8m0. M % 32 == 0 and K % 32 == 0, so
// column groups never straddle a row and each q_t run of 32 bytes is 32-byte aligned.
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_bf16_mxfp8_quantize_colwise_columns(const unsigned short* __restrict__ x,
                                             unsigned char* __restrict__ q_t,
                                             unsigned char* __restrict__ scales_t, int M, int K) {
  const long long groups = K / kCols;
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (t >= groups * blocks) return;
  const long long k0 = (t % groups) * kCols, b = t / groups;

  unsigned w[kBlock][kWords];
#pragma unroll
  for (int i = 0; i < kBlock; ++i) load_row(x + (b * kBlock + i) * K + k0, w[i]);

#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    unsigned amax = 0;
#pragma unroll
    for (int i = 0; i < kBlock; ++i) amax = max(amax, column_bits(w[i], c) & 0x7FFFu);
    const bool special = kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
    const unsigned s = special ? kScaleNaN : (kFloor ? floor_scale(amax) : rceil_scale(amax));
    const unsigned r_exp = special ? 127u : 254u - s;
    const float r = __uint_as_float(r_exp != 0 ? r_exp << 23 : 0x00400000u);

    unsigned qw[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const unsigned lo = to_e4m3x2(__fmul_rn(__uint_as_float(column_bits(w[4 * j], c) << 16), r),
                                    __fmul_rn(__uint_as_float(column_bits(w[4 * j + 1], c) << 16), r));
      const unsigned hi = to_e4m3x2(__fmul_rn(__uint_as_float(column_bits(w[4 * j + 2], c) << 16), r),
                                    __fmul_rn(__uint_as_float(column_bits(w[4 * j + 3], c) << 16), r));
      qw[j] = special ? kE4M3NaNx4 : lo | hi << 16;
    }
    store32(q_t + (k0 + c) * M + b * kBlock, qw);
    scales_t[(k0 + c) * blocks + b] = static_cast<unsigned char>(s);
  }
}
