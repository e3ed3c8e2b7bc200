/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_rows_naive",
                "grid":  ["ceil_div(M * (I / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "q", "scales", "M", "I"] },
              { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_cols_naive",
                "grid":  ["ceil_div(I * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "q_t", "scales_t", "M", "I"] } ] }
*/
// Trusted GPU reference for swiglu_quantize_fwd: one thread per 32-element block of A, rowwise
// then columnwise. Each thread computes its 32 values of A in double exactly as reference.cc does
// (explicitly rounded operations, no contraction; exp from libdevice, which may differ from the C
// library's in the last bit of a double, far below the fp32 and bf16 roundings that follow), then
// quantizes them by the block rules of mxfp8_quantize_rowwise's reference.cu (integer bit logic).
// Slow by design; never tune this file.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/mx_rules.cuh"
#include "ref/swiglu_math.cuh"

namespace {

// A = act(g, u) as bf16 bits (reference.cc's SwigluForward).
__device__ unsigned short swiglu_forward(unsigned short g_bits, unsigned short u_bits) {
  const double g = bf16_value(g_bits), u = bf16_value(u_bits);
  if (WS_VARIANT == WS_VARIANT_STANDARD) return round_bf16(__dmul_rn(__dmul_rn(g, sigmoid_d(g)), u));
  const double gc = clamp_max_d(g, kLimit), uc = clamp_d(u, -kLimit, kLimit);
  return round_bf16(
      __dmul_rn(__dmul_rn(gc, sigmoid_d(__dmul_rn(kAlpha, gc))), __dadd_rn(uc, 1.0)));
}
}  // namespace

// hpre (M,2I) bf16 bits; q (M,I), scales (M,I/32). Thread: row t / (I/32), block t % (I/32).
extern "C" __global__ void sm90_bf16_swiglu_mxfp8_quantize_rows_naive(const unsigned short* hpre,
                                                                      unsigned char* q,
                                                                      unsigned char* scales,
                                                                      int M, int I) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * (I / kBlock)) return;
  const long long m = t / (I / kBlock), b = t % (I / kBlock);
  unsigned short a[kBlock];
  for (int j = 0; j < kBlock; ++j) {
    const long long i = b * kBlock + j;
    a[j] = swiglu_forward(hpre[m * 2 * I + i], hpre[m * 2 * I + I + i]);
  }
  scales[t] = static_cast<unsigned char>(quantize_block(a, 1, q + m * I + b * kBlock, 1));
}

// hpre (M,2I); q_t (I,M), scales_t (I,M/32). Thread: column t % I, block t / I.
extern "C" __global__ void sm90_bf16_swiglu_mxfp8_quantize_cols_naive(const unsigned short* hpre,
                                                                      unsigned char* q_t,
                                                                      unsigned char* scales_t,
                                                                      int M, int I) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * I) return;
  const long long i = t % I, b = t / I;
  unsigned short a[kBlock];
  for (int j = 0; j < kBlock; ++j) {
    const long long m = b * kBlock + j;
    a[j] = swiglu_forward(hpre[m * 2 * I + i], hpre[m * 2 * I + I + i]);
  }
  scales_t[i * blocks + b] =
      static_cast<unsigned char>(quantize_block(a, 1, q_t + i * M + b * kBlock, 1));
}
