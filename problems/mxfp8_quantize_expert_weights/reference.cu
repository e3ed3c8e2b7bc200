/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights_rows_naive",
                "grid":  ["ceil_div(E * N * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["w", "q_k", "s_k", "E * N", "K"] },
              { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights_cols_naive",
                "grid":  ["ceil_div(E * K * (N / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["w", "q_n", "s_n", "E", "N", "K"] } ] }
*/
// Trusted GPU reference for mxfp8_quantize_expert_weights: the along-K copy is the rowwise
// reference over all E * N rows; the along-N copy is the colwise reference per expert. One thread
// per 32-element block, the block rules of mxfp8_quantize_rowwise's reference.cu (integer bit
// logic, only the two fp32 multiplies the rules name, as mul.rn.f32 without flush-to-zero). Slow
// by design; never tune this file. Checked byte for byte against reference.cc by
// `warpsmith problems verify mxfp8_quantize_expert_weights`.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/mx_rules.cuh"

// w (R,K) bf16 bits with R = E * N rows; q_k (R,K), s_k (R,K/32). Thread b: the b-th block.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_expert_weights_rows_naive(
    const unsigned short* w, unsigned char* q_k, unsigned char* s_k, int R, int K) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= static_cast<long long>(R) * (K / kBlock)) return;
  s_k[b] = static_cast<unsigned char>(quantize_block(w + b * kBlock, 1, q_k + b * kBlock, 1));
}

// w (E,N,K); q_n (E,K,N), s_n (E,K,N/32). Thread t: expert t / (K * N/32), then within the
// expert column r % K, block r / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_expert_weights_cols_naive(
    const unsigned short* w, unsigned char* q_n, unsigned char* s_n, int E, int N, int K) {
  const long long blocks = N / kBlock;
  const long long per_expert = blocks * K;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= per_expert * E) return;
  const long long e = t / per_expert, r = t % per_expert;
  const long long k = r % K, b = r / K;
  const long long elems = static_cast<long long>(N) * K;
  s_n[e * per_expert + k * blocks + b] = static_cast<unsigned char>(quantize_block(
      w + e * elems + b * kBlock * K + k, K, q_n + e * elems + k * N + b * kBlock, 1));
}
