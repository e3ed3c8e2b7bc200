/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_rows_naive",
                "grid":  ["ceil_div(M * (2 * I / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q", "scales", "M", "I"] },
              { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_cols_naive",
                "grid":  ["ceil_div(2 * I * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q_t", "scales_t", "M", "I"] } ] }
*/
// Trusted GPU reference for swiglu_quantize_bwd: one thread per 32-element block of dhpre, rowwise
// then columnwise. Each thread computes its 32 gradients in double exactly as reference.cc does
// (explicitly rounded operations in the same order, no contraction; exp from libdevice, which may
// differ from the C library's in the last bit of a double, far below the fp32 and bf16 roundings
// that follow), then quantizes them by the block rules of mxfp8_quantize_rowwise's reference.cu
// (integer bit logic). Slow by design; never tune this file.

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
// dgate (which = 0) or dup (which = 1) of one element (reference.cc's SwigluBackward).
__device__ unsigned short swiglu_backward(unsigned short g_bits, unsigned short u_bits,
                                          unsigned short da_bits, int which) {
  const double g = bf16_value(g_bits), u = bf16_value(u_bits), da = bf16_value(da_bits);
  if (WS_VARIANT == WS_VARIANT_STANDARD) {
    const double s = sigmoid_d(g);
    if (which == 1) return round_bf16(__dmul_rn(da, __dmul_rn(g, s)));
    const double ds = __dmul_rn(s, __dadd_rn(1.0, __dmul_rn(g, __dadd_rn(1.0, -s))));
    return round_bf16(__dmul_rn(__dmul_rn(da, u), ds));
  }
  const double gc = clamp_max_d(g, kLimit), uc = clamp_d(u, -kLimit, kLimit);
  const double s = sigmoid_d(__dmul_rn(kAlpha, gc));
  if (which == 1) {
    const bool pass_u = u >= -kLimit && u <= kLimit;  // false for NaN
    return pass_u ? round_bf16(__dmul_rn(da, __dmul_rn(gc, s))) : 0;
  }
  if (!(g <= kLimit)) return 0;
  const double ds =
      __dmul_rn(s, __dadd_rn(1.0, __dmul_rn(__dmul_rn(kAlpha, gc), __dadd_rn(1.0, -s))));
  return round_bf16(__dmul_rn(__dmul_rn(da, __dadd_rn(uc, 1.0)), ds));
}

// dhpre[m][c] for c in [0, 2I).
__device__ unsigned short dh_at(const unsigned short* hpre, const unsigned short* da, long long m,
                                long long c, int I) {
  const long long i = c < I ? c : c - I;
  return swiglu_backward(hpre[m * 2 * I + i], hpre[m * 2 * I + I + i], da[m * I + i],
                         c < I ? 0 : 1);
}
}  // namespace

// hpre (M,2I), da (M,I) bf16 bits; q (M,2I), scales (M,2I/32). Thread: row t / (2I/32), block
// t % (2I/32).
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_rows_naive(
    const unsigned short* hpre, const unsigned short* da, unsigned char* q, unsigned char* scales,
    int M, int I) {
  const long long blocks = 2LL * I / kBlock;  // per row
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * blocks) return;
  const long long m = t / blocks, b = t % blocks;
  unsigned short v[kBlock];
  for (int j = 0; j < kBlock; ++j) v[j] = dh_at(hpre, da, m, b * kBlock + j, I);
  scales[t] = static_cast<unsigned char>(quantize_block(v, 1, q + m * 2 * I + b * kBlock, 1));
}

// hpre (M,2I), da (M,I); q_t (2I,M), scales_t (2I,M/32). Thread: column t % 2I, block t / 2I.
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_cols_naive(
    const unsigned short* hpre, const unsigned short* da, unsigned char* q_t,
    unsigned char* scales_t, int M, int I) {
  const long long blocks = M / kBlock;
  const long long cols = 2LL * I;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * cols) return;
  const long long c = t % cols, b = t / cols;
  unsigned short v[kBlock];
  for (int j = 0; j < kBlock; ++j) v[j] = dh_at(hpre, da, b * kBlock + j, c, I);
  scales_t[c * blocks + b] =
      static_cast<unsigned char>(quantize_block(v, 1, q_t + c * M + b * kBlock, 1));
}
