/* warpsmith:plan
{ "knobs":  { "THREADS": [128] },
  "launch": [ { "kernel": "router_counts_zero_naive",
                "grid":  ["ceil_div(E, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["counts", "E"] },
              { "kernel": "router_topk_softmax_naive",
                "grid":  ["ceil_div(T, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["logits", "idx", "w", "counts", "T", "E", "K"] } ] }
*/
// Trusted GPU reference for router_topk_softmax: one thread per row, the CPU reference's algorithm
// (problems/router_topk_softmax/reference.cc) operation for operation. Selection compares the fp32
// logits; the weights are computed in fp64 with one explicitly rounded IEEE operation per step
// (__dadd_rn, __dmul_rn, __ddiv_rn: never contracted into FMAs) and the same exp, so the bits
// equal the CPU reference's. Counts by integer atomics (order-free). Slow by design; never tune.

#if !defined(WS_WEIGHTS) || !defined(WS_WEIGHTS_RENORMALIZE) || !defined(WS_WEIGHTS_SOFTMAX)
#error "needs the parameters -DWS_WEIGHTS=<0|1> -DWS_WEIGHTS_RENORMALIZE=0 -DWS_WEIGHTS_SOFTMAX=1"
#endif
#ifndef THREADS
#define THREADS 128
#endif

#include "ref/exp_ref.cuh"

extern "C" __global__ void router_counts_zero_naive(int* counts, int E) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < E)
    counts[i] = 0;
}

// logits (T,E) f32, idx (T,K) i32, w (T,K) f32, counts (E) i32 (zeroed by the launch before).
extern "C" __global__ void router_topk_softmax_naive(const float* logits, int* idx, float* w,
                                                     int* counts, int T, int E, int K) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= T)
    return;
  const float* l = logits + static_cast<long long>(t) * E;
  int* out = idx + static_cast<long long>(t) * K;
  float* wo = w + static_cast<long long>(t) * K;
  float m = l[0];
  for (int i = 1; i < E; ++i) {
    if (l[i] > m)
      m = l[i];
  }
  // K passes; a strict > over ascending ids keeps the lower id on equal logits.
  for (int j = 0; j < K; ++j) {
    int best = -1;
    for (int i = 0; i < E; ++i) {
      bool taken = false;
      for (int jj = 0; jj < j; ++jj) taken = taken || out[jj] == i;
      if (taken)
        continue;
      if (best < 0 || l[i] > l[best])
        best = i;
    }
    out[j] = best;
  }
  const double dm = static_cast<double>(m);
  double sum = 0.0;
#if WS_WEIGHTS == WS_WEIGHTS_RENORMALIZE
  for (int j = 0; j < K; ++j)
    sum = ref_add(sum, exp_ref(ref_add(static_cast<double>(l[out[j]]), -dm)));
#else
  for (int i = 0; i < E; ++i) sum = ref_add(sum, exp_ref(ref_add(static_cast<double>(l[i]), -dm)));
#endif
  for (int j = 0; j < K; ++j) {
    const double p = exp_ref(ref_add(static_cast<double>(l[out[j]]), -dm));
    wo[j] = __double2float_rn(ref_div(p, sum));
    atomicAdd(&counts[out[j]], 1);
  }
}
