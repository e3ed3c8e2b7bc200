/* warpsmith:plan
{ "knobs":  { "THREADS": [128] },
  "launch": [ { "kernel": "router_counts_zero_naive",
                "grid":  ["ceil_div(E, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_sigmoid_grouped_naive",
                "grid":  ["ceil_div(T, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["logits", "bias", "idx", "w", "counts", "T", "E", "K", "NG", "TG",
                          "SCALE_MILLI"] } ] }
*/
// Trusted GPU reference for router_topk_sigmoid_grouped: one thread per row, the CPU reference's
// algorithm (problems/router_topk_sigmoid_grouped/reference.cc) operation for operation, in fp64
// with one explicitly rounded IEEE operation per step (__dadd_rn, __dmul_rn, __ddiv_rn: never
// contracted into FMAs) and the same exp, so the bits equal the CPU reference's. Scores are
// recomputed where needed instead of stored. Counts by integer atomics (order-free). Slow by
// design; never tune.

#ifndef THREADS
#define THREADS 128
#endif

#include "ref/exp_ref.cuh"

namespace {

__device__ double sigmoid_ref(double x) {
  if (x >= 0)
    return ref_div(1.0, ref_add(1.0, exp_ref(-x)));
  const double e = exp_ref(x);
  return ref_div(e, ref_add(1.0, e));
}

__device__ double biased(const float* l, const float* bias, int i) {
  return ref_add(sigmoid_ref(static_cast<double>(l[i])), static_cast<double>(bias[i]));
}

// The sum of the two largest biased scores of group g (a group of one: its score).
__device__ double group_score(const float* l, const float* bias, int g, int per) {
  const int base = g * per;
  int first = 0;
  for (int i = 1; i < per; ++i) {
    if (biased(l, bias, base + i) > biased(l, bias, base + first))
      first = i;
  }
  if (per == 1)
    return biased(l, bias, base);
  int second = first == 0 ? 1 : 0;
  for (int i = 0; i < per; ++i) {
    if (i != first && biased(l, bias, base + i) > biased(l, bias, base + second))
      second = i;
  }
  return ref_add(biased(l, bias, base + first), biased(l, bias, base + second));
}

}  // namespace

extern "C" __global__ void router_counts_zero_naive(int* counts, int E) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E)
    counts[i] = 0;
}

// logits (T,E) f32, bias (E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32 (zeroed by the
// launch before). NG <= 64 groups (a kept-group bit mask).
extern "C" __global__ void router_topk_sigmoid_grouped_naive(const float* logits, const float* bias,
                                                             int* idx, float* w, int* counts, int T,
                                                             int E, int K, int NG, int TG,
                                                             int SCALE_MILLI) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T)
    return;
  const float* l = logits + static_cast<long long>(t) * E;
  int* out = idx + static_cast<long long>(t) * K;
  float* wo = w + static_cast<long long>(t) * K;
  const int per = E / NG;
  unsigned long long kept = 0;
  for (int j = 0; j < TG; ++j) {
    int best = -1;
    double best_score = 0.0;
    for (int g = 0; g < NG; ++g) {
      if ((kept >> g) & 1ull)
        continue;
      const double s = group_score(l, bias, g, per);
      if (best < 0 || s > best_score) {
        best = g;
        best_score = s;
      }
    }
    kept |= 1ull << best;
  }
  for (int j = 0; j < K; ++j) {
    int best = -1;
    double best_score = 0.0;
    for (int i = 0; i < E; ++i) {
      if (!((kept >> (i / per)) & 1ull))
        continue;
      bool taken = false;
      for (int jj = 0; jj < j; ++jj) taken = taken || out[jj] == i;
      if (taken)
        continue;
      const double s = biased(l, bias, i);
      if (best < 0 || s > best_score) {
        best = i;
        best_score = s;
      }
    }
    out[j] = best;
  }
  // Weights from the unbiased scores.
  double sum = 0.0;
  for (int j = 0; j < K; ++j) sum = ref_add(sum, sigmoid_ref(static_cast<double>(l[out[j]])));
  const double scale = ref_div(static_cast<double>(SCALE_MILLI), 1000.0);
  for (int j = 0; j < K; ++j) {
    const double s = sigmoid_ref(static_cast<double>(l[out[j]]));
    wo[j] = __double2float_rn(ref_mul(ref_div(s, sum), scale));
    atomicAdd(&counts[out[j]], 1);
  }
}
