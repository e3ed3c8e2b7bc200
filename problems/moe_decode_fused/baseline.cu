/* warpsmith:plan
{ "knobs":  { "WARPS": [8] },
  "launch": [ { "kernel": "sm90_moe_decode_gate_up_warp",
                "grid": ["ceil_div(T * TOPK * I, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args": ["x", "topk_ids", "w13", "workspace", "T", "TOPK", "H", "I"] },
              { "kernel": "sm90_moe_decode_down_warp",
                "grid": ["ceil_div(T * H, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args": ["topk_ids", "topk_weights", "w2", "workspace", "y", "T", "TOPK", "H",
                         "I"] } ],
  "workspace": { "bytes": "2 * T * TOPK * I", "zero": false } }
*/
// Baseline for moe_decode_fused: a first CUDA port of "gate/up GEMV, silu_and_mul, down GEMV,
// weighted sum": one warp per output row, lanes striding over the row with scalar bf16 loads
// (coalesced), a shuffle reduction, h = silu(g) * u stored as bf16 like silu_and_mul's output.
// Correct, not tuned: each (token, slot) pair re-reads its expert's weights, so a batch that
// shares experts reads them many times; scalar loads; two launches.

#include <cuda_bf16.h>

#ifndef WARPS
#define WARPS 8
#endif

namespace {

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

}  // namespace

// h [T, TOPK, I] bf16: warp w handles row r of slot (t, j).
extern "C" __global__ void sm90_moe_decode_gate_up_warp(const __nv_bfloat16* x,
                                                        const int* topk_ids,
                                                        const __nv_bfloat16* w13,
                                                        __nv_bfloat16* h, int T, int TOPK, int H,
                                                        int I) {
  const long long w = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (w >= static_cast<long long>(T) * TOPK * I) return;
  const long long r = w % I, tj = w / I, t = tj / TOPK;
  const long long e = topk_ids[tj];
  const __nv_bfloat16* gate = w13 + (e * 2 * I + r) * H;
  const __nv_bfloat16* up = gate + static_cast<long long>(I) * H;
  float g = 0.0f, u = 0.0f;
  for (long long c = lane; c < H; c += 32) {
    const float xv = __bfloat162float(x[t * H + c]);
    g += __bfloat162float(gate[c]) * xv;
    u += __bfloat162float(up[c]) * xv;
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) h[w] = __float2bfloat16_rn(g / (1.0f + __expf(-g)) * u);
}

// y [T, H]: warp w handles output element (t, c), summing over the slots j and rows r.
extern "C" __global__ void sm90_moe_decode_down_warp(const int* topk_ids, const float* topk_weights,
                                                     const __nv_bfloat16* w2,
                                                     const __nv_bfloat16* h, __nv_bfloat16* y,
                                                     int T, int TOPK, int H, int I) {
  const long long w = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (w >= static_cast<long long>(T) * H) return;
  const long long c = w % H, t = w / H;
  float acc = 0.0f;
  for (long long j = 0; j < TOPK; ++j) {
    const long long e = topk_ids[t * TOPK + j];
    const __nv_bfloat16* row = w2 + (e * H + c) * I;
    const __nv_bfloat16* hv = h + (t * TOPK + j) * I;
    float d = 0.0f;
    for (long long r = lane; r < I; r += 32) {
      d += __bfloat162float(row[r]) * __bfloat162float(hv[r]);
    }
    acc += topk_weights[t * TOPK + j] * warp_sum(d);
  }
  if (lane == 0) y[w] = __float2bfloat16_rn(acc);
}
