/* warpsmith:plan
{ "knobs":  { "WARPS": [4] },
  "launch": [ { "kernel": "router_counts_zero",
                "grid":  ["ceil_div(E, 256)"], "block": [256], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_softmax_warp_per_row",
                "grid":  ["ceil_div(T, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "idx", "w", "counts", "T", "E", "K"] } ] }
*/
// Baseline for router_topk_softmax: the kernel a competent CUDA user writes first. One warp per
// row; lane l owns experts l, l + 32, ... (E <= 1024, so at most 32 per lane, one bit each in a
// "taken" mask). K rounds of: each lane's best untaken logit, then a warp argmax by shuffles
// (larger logit, equal logits: lower id). Selection on the logits is exact (softmax is increasing).
// Weights in fp32: expf(l - max) over the chosen (renormalize) or over the row (softmax). Counts by
// one global atomicAdd per choice, after a launch that zeroes them. Correct, not tuned: logits are
// re-read from memory on every round, and every choice is a global atomic.

#if !defined(WS_WEIGHTS) || !defined(WS_WEIGHTS_RENORMALIZE)
#error "compile with the problem's parameters (-DWS_WEIGHTS=..., -DWS_WEIGHTS_RENORMALIZE=0)"
#endif
#ifndef WARPS
#define WARPS 4
#endif

extern "C" __global__ void router_counts_zero(int* counts, int E) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E)
    counts[i] = 0;
}

// logits (T,E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32.
extern "C" __global__ void router_topk_softmax_warp_per_row(const float* __restrict__ logits,
                                                            int* __restrict__ idx,
                                                            float* __restrict__ w,
                                                            int* __restrict__ counts, int T, int E,
                                                            int K) {
  const int lane = threadIdx.x % 32;
  const int row = blockIdx.x * WARPS + threadIdx.x / 32;
  if (row >= T)
    return;  // whole warps leave together
  const float* l = logits + static_cast<long long>(row) * E;
  unsigned taken = 0;  // bit i: expert lane + 32 i chosen
  float top = 0.0f;    // the row max (the first choice)
  float sum = 0.0f;    // renormalize: sum of expf(l - max) over the chosen so far
  float my_p = 0.0f;   // lane j < K: expf(l_j - max) of slot j
  int my_id = 0;
  for (int j = 0; j < K; ++j) {
    float best = -__int_as_float(0x7F800000);  // -Inf
    int best_id = 0x7FFFFFFF;
    for (int i = 0; lane + 32 * i < E; ++i) {
      if ((taken >> i) & 1u)
        continue;
      const float v = l[lane + 32 * i];
      if (v > best) {  // ascending ids per lane: the first of equal values is the lower id
        best = v;
        best_id = lane + 32 * i;
      }
    }
    for (int off = 16; off > 0; off >>= 1) {
      const float ov = __shfl_xor_sync(0xFFFFFFFFu, best, off);
      const int oid = __shfl_xor_sync(0xFFFFFFFFu, best_id, off);
      if (ov > best || (ov == best && oid < best_id)) {
        best = ov;
        best_id = oid;
      }
    }
    if (best_id % 32 == lane)
      taken |= 1u << (best_id / 32);
    if (j == 0)
      top = best;
    const float p = expf(best - top);
    sum += p;
    if (lane == j) {
      my_p = p;
      my_id = best_id;
    }
  }
#if WS_WEIGHTS != WS_WEIGHTS_RENORMALIZE
  sum = 0.0f;
  for (int i = lane; i < E; i += 32) sum += expf(l[i] - top);
  for (int off = 16; off > 0; off >>= 1) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, off);
#endif
  if (lane < K) {
    idx[static_cast<long long>(row) * K + lane] = my_id;
    w[static_cast<long long>(row) * K + lane] = my_p / sum;
    atomicAdd(&counts[my_id], 1);
  }
}
