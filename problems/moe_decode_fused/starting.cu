/* warpsmith:plan
{ "knobs":  { "WARPS": [8, 4, 16], "VEC": [8, 4, 2, 1] },
  "launch": [ { "kernel": "sm90_moe_decode_gate_up_vec",
                "grid": ["ceil_div(T * TOPK * I, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args": ["x", "topk_ids", "w13", "workspace", "T", "TOPK", "H", "I"] },
              { "kernel": "sm90_moe_decode_down_vec",
                "grid": ["ceil_div(T * H, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args": ["topk_ids", "topk_weights", "w2", "workspace", "y", "T", "TOPK", "H",
                         "I"] } ],
  "workspace": { "bytes": "4 * T * TOPK * I", "zero": false } }
*/
// Starting kernel for moe_decode_fused: the baseline's structure (one warp per output row of the
// gate/up GEMVs, then one warp per output element of the down GEMV) with h kept in fp32 and the
// loads made tunable:
//  - VEC bf16 elements per lane per load (8: 16-byte loads; H and I are multiples of 8);
//  - WARPS warps per block.
// The weights dominate the bytes: a faster kernel reads each routed expert's weights once per
// batch (all tokens routed to it share the read), keeps h on chip, and fuses the two GEMVs.
//
// Evaluate:
//   build/warpsmith eval moe_decode_fused problems/moe_decode_fused/starting.cu --knob VEC=8

#include <cuda_bf16.h>

#ifndef WARPS
#define WARPS 8
#endif
#ifndef VEC
#define VEC 8
#endif

namespace {

static_assert(VEC == 1 || VEC == 2 || VEC == 4 || VEC == 8, "bf16 elements per load");

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, o);
  return v;
}

// VEC consecutive bf16 values at p (aligned to VEC elements) as floats.
__device__ __forceinline__ void load_vec(const __nv_bfloat16* p, float* out) {
  if constexpr (VEC == 8) {
    const uint4 v = *reinterpret_cast<const uint4*>(p);
    const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      out[2 * i] = __uint_as_float(w[i] << 16);
      out[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
  } else if constexpr (VEC == 4) {
    const uint2 v = *reinterpret_cast<const uint2*>(p);
    const unsigned w[2] = {v.x, v.y};
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      out[2 * i] = __uint_as_float(w[i] << 16);
      out[2 * i + 1] = __uint_as_float(w[i] & 0xFFFF0000u);
    }
  } else if constexpr (VEC == 2) {
    const unsigned w = *reinterpret_cast<const unsigned*>(p);
    out[0] = __uint_as_float(w << 16);
    out[1] = __uint_as_float(w & 0xFFFF0000u);
  } else {
    out[0] = __bfloat162float(*p);
  }
}

}  // namespace

// h [T, TOPK, I] fp32: warp w handles row r of slot (t, j).
extern "C" __global__ void __launch_bounds__(32 * WARPS)
    sm90_moe_decode_gate_up_vec(const __nv_bfloat16* __restrict__ x,
                                const int* __restrict__ topk_ids,
                                const __nv_bfloat16* __restrict__ w13, float* __restrict__ h,
                                int T, int TOPK, int H, int I) {
  const long long w = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (w >= static_cast<long long>(T) * TOPK * I) return;
  const long long r = w % I, tj = w / I, t = tj / TOPK;
  const long long e = topk_ids[tj];
  const __nv_bfloat16* gate = w13 + (e * 2 * I + r) * H;
  const __nv_bfloat16* up = gate + static_cast<long long>(I) * H;
  const __nv_bfloat16* xt = x + t * H;
  float g = 0.0f, u = 0.0f;
  for (long long c = lane * VEC; c < H; c += 32 * VEC) {
    float xv[VEC], gv[VEC], uv[VEC];
    load_vec(xt + c, xv);
    load_vec(gate + c, gv);
    load_vec(up + c, uv);
#pragma unroll
    for (int i = 0; i < VEC; ++i) {
      g = fmaf(gv[i], xv[i], g);
      u = fmaf(uv[i], xv[i], u);
    }
  }
  g = warp_sum(g);
  u = warp_sum(u);
  if (lane == 0) h[w] = g / (1.0f + __expf(-g)) * u;
}

// y [T, H]: warp w handles output element (t, c), summing over the slots j and rows r.
extern "C" __global__ void __launch_bounds__(32 * WARPS)
    sm90_moe_decode_down_vec(const int* __restrict__ topk_ids,
                             const float* __restrict__ topk_weights,
                             const __nv_bfloat16* __restrict__ w2, const float* __restrict__ h,
                             __nv_bfloat16* __restrict__ y, int T, int TOPK, int H, int I) {
  const long long w = static_cast<long long>(blockIdx.x) * WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (w >= static_cast<long long>(T) * H) return;
  const long long c = w % H, t = w / H;
  float acc = 0.0f;
  for (long long j = 0; j < TOPK; ++j) {
    const long long e = topk_ids[t * TOPK + j];
    const __nv_bfloat16* row = w2 + (e * H + c) * I;
    const float* hv = h + (t * TOPK + j) * I;
    float d = 0.0f;
    for (long long r = lane * VEC; r < I; r += 32 * VEC) {
      float wv[VEC];
      load_vec(row + r, wv);
#pragma unroll
      for (int i = 0; i < VEC; ++i) d = fmaf(wv[i], hv[r + i], d);
    }
    acc = fmaf(topk_weights[t * TOPK + j], warp_sum(d), acc);
  }
  if (lane == 0) y[w] = __float2bfloat16_rn(acc);
}
