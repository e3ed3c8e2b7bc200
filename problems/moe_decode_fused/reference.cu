/* warpsmith:plan
{ "knobs":  { "THREADS": [128] },
  "launch": [ { "kernel": "sm90_moe_decode_gate_up_reference",
                "grid": ["ceil_div(T * TOPK * I, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args": ["x", "topk_ids", "w13", "workspace", "T", "TOPK", "H", "I"] },
              { "kernel": "sm90_moe_decode_down_reference",
                "grid": ["ceil_div(T * H, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args": ["topk_ids", "topk_weights", "w2", "workspace", "y", "T", "TOPK", "H",
                         "I"] } ],
  "workspace": { "bytes": "4 * T * TOPK * I", "zero": false } }
*/
// Trusted GPU reference for moe_decode_fused: the rules of spec.json, one thread per output value,
// fp32 throughout. Kernel 1: one thread per (token t, routed slot j, row r < I) computes the gate
// and up dot products over H in order and h = silu(g) * u (kept in fp32, in the workspace).
// Kernel 2: one thread per (t, c < H) sums topk_weights[t,j] * (w2[e] row c . h[t,j]) over j and
// rounds once to bf16. Slow by design (uncoalesced row reads); never tune this file. Checked
// against the fp64 CPU reference by `warpsmith problems verify`.

#include <cuda_bf16.h>

#ifndef THREADS
#define THREADS 128
#endif

namespace {

__device__ __forceinline__ float bf16_value(const __nv_bfloat16* p, long long i) {
  return __bfloat162float(p[i]);
}

}  // namespace

// h [T, TOPK, I] fp32 = silu(w13[e, r] . x[t]) * (w13[e, I + r] . x[t]), e = topk_ids[t, j].
extern "C" __global__ void sm90_moe_decode_gate_up_reference(const __nv_bfloat16* x,
                                                             const int* topk_ids,
                                                             const __nv_bfloat16* w13, float* h,
                                                             int T, int TOPK, int H, int I) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(T) * TOPK * I) return;
  const long long r = i % I, tj = i / I, t = tj / TOPK;
  const long long e = topk_ids[tj];
  const __nv_bfloat16* gate = w13 + (e * 2 * I + r) * H;
  const __nv_bfloat16* up = w13 + (e * 2 * I + I + r) * H;
  float g = 0.0f, u = 0.0f;
  for (long long c = 0; c < H; ++c) {
    const float xv = bf16_value(x, t * H + c);
    g = fmaf(bf16_value(gate, c), xv, g);
    u = fmaf(bf16_value(up, c), xv, u);
  }
  h[i] = g / (1.0f + expf(-g)) * u;
}

// y [T, H] bf16 = sum_j topk_weights[t, j] * (w2[e, c] . h[t, j]).
extern "C" __global__ void sm90_moe_decode_down_reference(const int* topk_ids,
                                                          const float* topk_weights,
                                                          const __nv_bfloat16* w2, const float* h,
                                                          __nv_bfloat16* y, int T, int TOPK, int H,
                                                          int I) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(T) * H) return;
  const long long c = i % H, t = i / H;
  float acc = 0.0f;
  for (long long j = 0; j < TOPK; ++j) {
    const long long e = topk_ids[t * TOPK + j];
    const __nv_bfloat16* row = w2 + (e * H + c) * I;
    const float* hv = h + (t * TOPK + j) * I;
    float d = 0.0f;
    for (long long r = 0; r < I; ++r) d = fmaf(bf16_value(row, r), hv[r], d);
    acc = fmaf(topk_weights[t * TOPK + j], d, acc);
  }
  y[i] = __float2bfloat16_rn(acc);
}
