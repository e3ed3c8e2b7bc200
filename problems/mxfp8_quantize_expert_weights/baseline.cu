/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights_along_k",
                "grid":  ["ceil_div(E * N * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["w", "q_k", "s_k", "E * N", "K"] },
              { "kernel": "sm90_bf16_mxfp8_quantize_expert_weights_along_n",
                "grid":  ["ceil_div(E * K * (N / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["w", "q_n", "s_n", "E", "N", "K"] } ] }
*/
// Baseline for mxfp8_quantize_expert_weights: what a competent CUDA user writes first, two
// kernels (w is read twice). Along K: one thread per 32-element row block over all E * N rows,
// scalar loads. Along N: one thread per (expert, column, 32-row block), neighbouring threads on
// neighbouring columns. amax in fp32, the E8M0 scale from the bits, cuda_fp8.h's saturating E4M3
// conversion. Correct, not tuned.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "ws/mx_naive.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
using ws::mx_naive::quantize_block;
}  // namespace

// w (R,K) with R = E * N rows; q_k (R,K), s_k (R,K/32). Thread b: the b-th block in memory.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_expert_weights_along_k(
    const __nv_bfloat16* __restrict__ w, __nv_fp8_storage_t* __restrict__ q_k,
    unsigned char* __restrict__ s_k, int R, int K) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= static_cast<long long>(R) * (K / kBlock)) return;
  quantize_block<kFloor>(w + b * kBlock, 1, q_k + b * kBlock, s_k + b);
}

// w (E,N,K); q_n (E,K,N), s_n (E,K,N/32). Thread t: expert t / (K * N/32), then column r % K,
// block r / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_expert_weights_along_n(
    const __nv_bfloat16* __restrict__ w, __nv_fp8_storage_t* __restrict__ q_n,
    unsigned char* __restrict__ s_n, int E, int N, int K) {
  const long long blocks = N / kBlock;
  const long long per_expert = blocks * K;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= per_expert * E) return;
  const long long e = t / per_expert, r = t % per_expert;
  const long long k = r % K, b = r / K;
  const long long elems = static_cast<long long>(N) * K;
  quantize_block<kFloor>(w + e * elems + b * kBlock * K + k, K,
                         q_n + e * elems + k * N + b * kBlock,
                         s_n + e * per_expert + k * blocks + b);
}
