/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_dual_rowwise",
                "grid":  ["ceil_div(M * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] },
              { "kernel": "sm90_bf16_mxfp8_quantize_dual_colwise",
                "grid":  ["ceil_div(K * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// Baseline for mxfp8_quantize_dual: what a competent CUDA user writes first, the two
// single-orientation kernels back to back (x is read twice). Rowwise: one thread per 32-element
// row block, scalar loads. Colwise: one thread per (column, 32-row block), neighbouring threads on
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

// x (M,K); q (M,K), scales (M,K/32). Thread b: the b-th 32-element block in memory order.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_dual_rowwise(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q,
    unsigned char* __restrict__ scales, int M, int K) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= static_cast<long long>(M) * (K / kBlock)) return;
  quantize_block<kFloor>(x + b * kBlock, 1, q + b * kBlock, scales + b);
}

// x (M,K); q_t (K,M), scales_t (K,M/32). Thread t: column t % K, block t / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_dual_colwise(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q_t,
    unsigned char* __restrict__ scales_t, int M, int K) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * K) return;
  const long long k = t % K, b = t / K;
  quantize_block<kFloor>(x + b * kBlock * K + k, K, q_t + k * M + b * kBlock,
                         scales_t + k * blocks + b);
}
