/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_colwise_naive",
                "grid":  ["ceil_div(K * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// Trusted GPU reference for mxfp8_quantize_colwise: one thread per (column, 32-row block), the
// block rules of mxfp8_quantize_rowwise's reference.cu (integer bit logic, only the two fp32
// multiplies the rules name, as mul.rn.f32 without flush-to-zero) applied with a stride of K.
// Slow by design; never tune this file. Checked byte for byte against reference.cc by
// `warpsmith problems verify mxfp8_quantize_colwise`.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/mx_rules.cuh"

// x (M,K) bf16 bits; q_t (K,M) e4m3; scales_t (K,M/32) e8m0. Thread t: column t % K, block t / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_colwise_naive(const unsigned short* x,
                                                                  unsigned char* q_t,
                                                                  unsigned char* scales_t, int M,
                                                                  int K) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * K) return;
  const long long k = t % K, b = t / K;
  scales_t[k * blocks + b] = static_cast<unsigned char>(
      quantize_block(x + b * kBlock * K + k, K, q_t + k * M + b * kBlock, 1));
}
