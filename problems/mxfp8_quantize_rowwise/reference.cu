/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_rowwise_naive",
                "grid":  ["ceil_div(M * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] } ] }
*/
// Trusted GPU reference for mxfp8_quantize_rowwise: one thread per 32-element block, the rules of
// reference.h spelled out with integer bit logic. No hardware conversions: the only floating-point
// operations are the two fp32 multiplies the rules name (amax * fp32(1/448) and x * 2^(127-S)),
// issued as mul.rn.f32 without flush-to-zero. Slow by design; never tune this file.
//
// Checked byte for byte against problems/mxfp8_quantize_rowwise/reference.cc on device-generated
// inputs by `warpsmith problems verify` (and the GPU test GpuReferenceMatchesTheCpuReference).

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/mx_rules.cuh"

// x (M,K) bf16 bits, q (M,K) e4m3, scales (M,K/32) e8m0; one thread per 32-element block.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_rowwise_naive(const unsigned short* x,
                                                                  unsigned char* q,
                                                                  unsigned char* scales, int M,
                                                                  int K) {
  const long long num_blocks = static_cast<long long>(M) * (K / kBlock);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= num_blocks) return;
  const unsigned short* xb = x + b * kBlock;  // (32)
  unsigned char* qb = q + b * kBlock;         // (32)

  unsigned amax = 0;  // bf16 magnitude bits
  bool nan = false;
  for (int i = 0; i < kBlock; ++i) {
    const unsigned a = xb[i] & 0x7FFFu;
    if (a > 0x7F80u) nan = true;
    else if (a > amax) amax = a;
  }

  unsigned s;
  if (nan) {
    s = kE8M0NaN;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    s = amax == 0x7F80u ? kE8M0NaN : scale_floor(amax);
  } else {
    s = scale_rceil(amax);
  }
  scales[b] = static_cast<unsigned char>(s);

  if (s == kE8M0NaN) {
    for (int i = 0; i < kBlock; ++i) qb[i] = kE4M3NaN;
    return;
  }
  const float r = bits_to_float(s == 254 ? 0x00400000u : (254u - s) << 23);  // 2^(127-S)
  for (int i = 0; i < kBlock; ++i) {
    const float v = bits_to_float(static_cast<unsigned>(xb[i]) << 16);
    qb[i] = static_cast<unsigned char>(e4m3_from_f32(mul_f32(v, r)));
  }
}
