/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512, 1024], "ELEMS_PER_THREAD": [1, 2, 4, 8, 16, 32],
              "VECTOR_BYTES": [1, 2, 4, 8, 16] },
  "launch": [ { "kernel": "sm90_mxfp8_bf16_dequantize_vectorized",
                "grid":  ["ceil_div(M * K, ELEMS_PER_THREAD * THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["q", "scales", "y", "M", "K"] } ] }
*/
// Starting kernel for mxfp8_dequantize: the baseline's arithmetic (cuda_fp8.h decode, fp32
// multiply by 2^(S-127) built from bits, __float2bfloat16_rn, explicit 0x7FC0 for NaN q and scale
// 0xFF) with the data layout made tunable:
//
//  - Each thread handles ELEMS_PER_THREAD consecutive elements (a divisor of 32, so they share one
//    scale byte: one scale load per thread).
//  - q is read in VECTOR_BYTES-wide loads (1: one byte at a time, 16: sixteen) and y written in
//    2 * VECTOR_BYTES-wide stores (a 32-byte store is two 16-byte ones). A VECTOR_BYTES above
//    ELEMS_PER_THREAD is capped at it.
//  - One thread per ELEMS_PER_THREAD elements, no grid-stride loop: a large plain grid.
//
// The defaults (THREADS=256, ELEMS_PER_THREAD=1, VECTOR_BYTES=1) are the baseline's layout. The
// kernel is memory-bound at 3.03 bytes per element; wider loads and stores (VECTOR_BYTES 8-16 with
// ELEMS_PER_THREAD 16-32) should be much closer to the bandwidth than byte loads and 2-byte stores.
// (Expectations, not yet measured on the H200.)
//
// Evaluate: build/warpsmith eval mxfp8_dequantize problems/mxfp8_dequantize/starting.cu
//   [--knob ELEMS_PER_THREAD=16 --knob VECTOR_BYTES=16 ...]

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#ifndef THREADS
#define THREADS 256
#endif
#ifndef ELEMS_PER_THREAD
#define ELEMS_PER_THREAD 1
#endif
#ifndef VECTOR_BYTES
#define VECTOR_BYTES 1
#endif

namespace {

constexpr int kThreads = THREADS;
constexpr int kBlockElems = 32;          // elements per E8M0 scale
constexpr int kElems = ELEMS_PER_THREAD;
// q bytes (elements) per load: VECTOR_BYTES, capped at ELEMS_PER_THREAD so every knob setting builds.
constexpr int kVec = VECTOR_BYTES < ELEMS_PER_THREAD ? VECTOR_BYTES : ELEMS_PER_THREAD;
constexpr int kLoads = kElems / kVec;
constexpr unsigned short kBf16NaN = 0x7FC0;

static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
static_assert(kElems >= 1 && kElems <= 32 && kBlockElems % kElems == 0, "a divisor of 32");
static_assert(kVec == 1 || kVec == 2 || kVec == 4 || kVec == 8 || kVec == 16, "load width");

// Load kVec q bytes into b[0, kVec).
__device__ __forceinline__ void load_q(const unsigned char* __restrict__ src, unsigned char* b) {
  if constexpr (kVec == 16) {
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int j = 0; j < 16; ++j) b[j] = static_cast<unsigned char>(w[j / 4] >> (8 * (j % 4)));
  } else if constexpr (kVec == 8) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    const unsigned w[2] = {v.x, v.y};
#pragma unroll
    for (int j = 0; j < 8; ++j) b[j] = static_cast<unsigned char>(w[j / 4] >> (8 * (j % 4)));
  } else if constexpr (kVec == 4) {
    const unsigned w = *reinterpret_cast<const unsigned*>(src);
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = static_cast<unsigned char>(w >> (8 * j));
  } else if constexpr (kVec == 2) {
    const unsigned short w = *reinterpret_cast<const unsigned short*>(src);
    b[0] = static_cast<unsigned char>(w);
    b[1] = static_cast<unsigned char>(w >> 8);
  } else {
    b[0] = *src;
  }
}

// Store kVec bf16 results (h[j] the bits of element j) as 2 * kVec bytes.
__device__ __forceinline__ void store_y(unsigned short* __restrict__ dst, const unsigned short* h) {
  if constexpr (kVec >= 8) {
#pragma unroll
    for (int j = 0; j < kVec; j += 8) {  // one 16-byte store per 8 elements
      *reinterpret_cast<uint4*>(dst + j) =
          make_uint4(h[j] | (static_cast<unsigned>(h[j + 1]) << 16),
                     h[j + 2] | (static_cast<unsigned>(h[j + 3]) << 16),
                     h[j + 4] | (static_cast<unsigned>(h[j + 5]) << 16),
                     h[j + 6] | (static_cast<unsigned>(h[j + 7]) << 16));
    }
  } else if constexpr (kVec == 4) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(h[0] | (static_cast<unsigned>(h[1]) << 16),
                                                h[2] | (static_cast<unsigned>(h[3]) << 16));
  } else if constexpr (kVec == 2) {
    *reinterpret_cast<unsigned*>(dst) = h[0] | (static_cast<unsigned>(h[1]) << 16);
  } else {
    *dst = h[0];
  }
}

__device__ __forceinline__ unsigned short dequantize(unsigned char qi, unsigned s, float scale) {
  if (s == 0xFFu || (qi & 0x7F) == 0x7F) return kBf16NaN;
  const float v = __half2float(__half(__nv_cvt_fp8_to_halfraw(qi, __NV_E4M3)));
  return __bfloat16_as_ushort(__float2bfloat16_rn(__fmul_rn(v, scale)));
}

}  // namespace

// q (M,K) e4m3, scales (M,K/32) e8m0, y (M,K) bf16 bits, row-major. K % 32 == 0, so the blocks of
// 32 elements run flat through memory and element i's scale is scales[i / 32].
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_mxfp8_bf16_dequantize_vectorized(const unsigned char* __restrict__ q,
                                          const unsigned char* __restrict__ scales,
                                          unsigned short* __restrict__ y, int M, int K) {
  const long long n = static_cast<long long>(M) * K;
  const long long first = (static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x) * kElems;
  if (first >= n) return;  // n is a multiple of 32, so a thread is wholly in or out
  const unsigned s = scales[first / kBlockElems];
  const float scale = __uint_as_float(s == 0 ? 0x00400000u : s << 23);  // 2^(S-127)
#pragma unroll
  for (int l = 0; l < kLoads; ++l) {
    unsigned char b[kVec];
    load_q(q + first + l * kVec, b);
    unsigned short h[kVec];
#pragma unroll
    for (int j = 0; j < kVec; ++j) h[j] = dequantize(b[j], s, scale);
    store_y(y + first + l * kVec, h);
  }
}
