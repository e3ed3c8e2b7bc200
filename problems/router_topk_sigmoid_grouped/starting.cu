/* warpsmith:plan
{ "knobs":  { "WARPS": [4, 1, 2, 8], "BLOCK_COUNTS": [0, 1], "FAST_EXP": [0, 1] },
  "launch": [ { "kernel": "router_counts_zero",
                "grid":  ["ceil_div(E, 256)"], "block": [256], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_sigmoid_grouped_warp_rows",
                "grid":  ["ceil_div(T, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "bias", "idx", "w", "counts", "T", "E", "K", "NG", "TG",
                          "SCALE_MILLI"] } ] }
*/
// Starting kernel for router_topk_sigmoid_grouped: the baseline's algorithm (one warp per row,
// biased scores staged in shared memory, serial top-2 group sums, shuffle argmax rounds for the
// groups and the experts, fp32 weights) with tunable knobs:
//
//  - WARPS: rows (warps) per block (shared memory: 4.25 KB per warp).
//  - BLOCK_COUNTS: 1 accumulates the block's choices in a shared-memory histogram and adds it to
//    the global counts once per expert touched; 0 issues one global atomic per choice.
//  - FAST_EXP: 1 uses __expf (about 2 ulp plus a term growing with |x|: sigmoid stays within about
//    1e-7 absolute, inside the checker's 1e-6 near-tie margin) instead of expf.
//
// The defaults (WARPS=4, BLOCK_COUNTS=0, FAST_EXP=0) are the baseline's layout. The bench shapes
// are a few MB: launch latency, the serial group sums and the K scans dominate, not bandwidth.
// (Expectations, not yet measured on the H200.)

#ifndef WARPS
#define WARPS 4
#endif
#ifndef BLOCK_COUNTS
#define BLOCK_COUNTS 0
#endif
#ifndef FAST_EXP
#define FAST_EXP 0
#endif

namespace {

constexpr int kMaxExperts = 1024;  // the spec's bounds
constexpr int kMaxGroups = 64;

__device__ __forceinline__ float sigmoid(float x) {
#if FAST_EXP
  return 1.0f / (1.0f + __expf(-x));
#else
  return 1.0f / (1.0f + expf(-x));
#endif
}

// Warp argmax of (value, id): larger value, equal values the lower id.
__device__ __forceinline__ void warp_argmax(float& v, int& id) {
  for (int off = 16; off > 0; off >>= 1) {
    const float ov = __shfl_xor_sync(0xFFFFFFFFu, v, off);
    const int oid = __shfl_xor_sync(0xFFFFFFFFu, id, off);
    if (ov > v || (ov == v && oid < id)) {
      v = ov;
      id = oid;
    }
  }
}

}  // namespace

extern "C" __global__ void router_counts_zero(int* counts, int E) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E)
    counts[i] = 0;
}

// One row, by one warp; choices counted into hist (shared or global).
__device__ __forceinline__ void route_row(const float* __restrict__ logits,
                                          const float* __restrict__ bias, int* __restrict__ idx,
                                          float* __restrict__ w, int* hist, float* sc, float* gs,
                                          int row, int lane, int E, int K, int NG, int TG,
                                          int SCALE_MILLI) {
  const float* l = logits + static_cast<long long>(row) * E;
  for (int e = lane; e < E; e += 32) sc[e] = sigmoid(l[e]) + bias[e];
  __syncwarp();
  const int per = E / NG;
  for (int g = lane; g < NG; g += 32) {
    float a = -__int_as_float(0x7F800000), b = a;  // the two largest
    for (int i = 0; i < per; ++i) {
      const float v = sc[g * per + i];
      if (v > a) {
        b = a;
        a = v;
      } else if (v > b) {
        b = v;
      }
    }
    gs[g] = per == 1 ? a : a + b;
  }
  __syncwarp();
  unsigned long long kept = 0;
  for (int j = 0; j < TG; ++j) {
    float best = -__int_as_float(0x7F800000);
    int best_id = 0x7FFFFFFF;
    for (int g = lane; g < NG; g += 32) {
      if (!((kept >> g) & 1ull) && gs[g] > best) {
        best = gs[g];
        best_id = g;
      }
    }
    warp_argmax(best, best_id);
    kept |= 1ull << best_id;
  }
  int my_id = 0;
  float my_s = 0.0f, sum = 0.0f;
  for (int j = 0; j < K; ++j) {
    float best = -__int_as_float(0x7F800000);
    int best_id = 0x7FFFFFFF;
    for (int e = lane; e < E; e += 32) {
      if (((kept >> (e / per)) & 1ull) && sc[e] > best) {
        best = sc[e];
        best_id = e;
      }
    }
    warp_argmax(best, best_id);
    __syncwarp();  // every lane's scan of sc is done before the owner marks the choice
    if (best_id % 32 == lane)
      sc[best_id] = -__int_as_float(0x7F800000);  // taken
    __syncwarp();
    const float s = sigmoid(l[best_id]);
    sum += s;
    if (lane == j) {
      my_id = best_id;
      my_s = s;
    }
  }
  if (lane < K) {
    idx[static_cast<long long>(row) * K + lane] = my_id;
    w[static_cast<long long>(row) * K + lane] =
        my_s / sum * (static_cast<float>(SCALE_MILLI) / 1000.0f);
    atomicAdd(&hist[my_id], 1);
  }
}

// logits (T,E) f32, bias (E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32.
extern "C" __global__ void __launch_bounds__(32 * WARPS)
    router_topk_sigmoid_grouped_warp_rows(const float* __restrict__ logits,
                                          const float* __restrict__ bias, int* __restrict__ idx,
                                          float* __restrict__ w, int* __restrict__ counts, int T,
                                          int E, int K, int NG, int TG, int SCALE_MILLI) {
  __shared__ float scores_all[WARPS][kMaxExperts];
  __shared__ float group_all[WARPS][kMaxGroups];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int row = blockIdx.x * WARPS + warp;
#if BLOCK_COUNTS
  __shared__ int block_hist[kMaxExperts];
  for (int i = threadIdx.x; i < E; i += blockDim.x) block_hist[i] = 0;
  __syncthreads();
  int* hist = block_hist;
  if (row < T)
    route_row(logits, bias, idx, w, hist, scores_all[warp], group_all[warp], row, lane, E, K, NG,
              TG, SCALE_MILLI);
  __syncthreads();
  for (int i = threadIdx.x; i < E; i += blockDim.x) {
    if (block_hist[i] != 0)
      atomicAdd(&counts[i], block_hist[i]);
  }
#else
  if (row < T)
    route_row(logits, bias, idx, w, counts, scores_all[warp], group_all[warp], row, lane, E, K, NG,
              TG, SCALE_MILLI);
#endif
}
