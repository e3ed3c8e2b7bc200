/* warpsmith:plan
{ "knobs":  { "WARPS": [4] },
  "launch": [ { "kernel": "router_counts_zero",
                "grid":  ["ceil_div(E, 256)"], "block": [256], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_sigmoid_grouped_warp_per_row",
                "grid":  ["ceil_div(T, WARPS)"], "block": ["32 * WARPS"], "smem": "0",
                "args":  ["logits", "bias", "idx", "w", "counts", "T", "E", "K", "NG", "TG",
                          "SCALE_MILLI"] } ] }
*/
// Baseline for router_topk_sigmoid_grouped: the kernel a competent CUDA user writes first. One warp
// per row. The warp writes the row's biased scores sigmoid(l) + bias (fp32, expf) to its slice of
// shared memory; lane g then sums the two largest of group g; TG rounds of a shuffle argmax over
// the group scores keep the groups (equal scores: lower group id); K rounds of a shuffle argmax
// over the experts of kept groups choose the experts (equal scores: lower id). Weights: the chosen
// experts' unbiased sigmoid, normalized, times SCALE_MILLI / 1000. Counts by one global atomicAdd
// per choice after a launch that zeroes them. Correct, not tuned: serial group sums, K full scans
// of shared memory, a global atomic per choice.

#ifndef WARPS
#define WARPS 4
#endif

namespace {

constexpr int kMaxExperts = 1024;  // the spec's bounds
constexpr int kMaxGroups = 64;

__device__ __forceinline__ float sigmoid(float x) {
  return 1.0f / (1.0f + expf(-x));
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

// logits (T,E) f32, bias (E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32.
extern "C" __global__ void router_topk_sigmoid_grouped_warp_per_row(
    const float* __restrict__ logits, const float* __restrict__ bias, int* __restrict__ idx,
    float* __restrict__ w, int* __restrict__ counts, int T, int E, int K, int NG, int TG,
    int SCALE_MILLI) {
  __shared__ float scores_all[WARPS][kMaxExperts];
  __shared__ float group_all[WARPS][kMaxGroups];
  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int row = blockIdx.x * WARPS + warp;
  if (row >= T)
    return;  // whole warps leave together; no block-wide barrier below
  float* sc = scores_all[warp];
  float* gs = group_all[warp];
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
    atomicAdd(&counts[my_id], 1);
  }
}
