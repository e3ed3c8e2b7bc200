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

namespace {

__device__ double ref_add(double a, double b) {
  return __dadd_rn(a, b);
}
__device__ double ref_mul(double a, double b) {
  return __dmul_rn(a, b);
}
__device__ double ref_div(double a, double b) {
  return __ddiv_rn(a, b);
}

// Round to nearest even integer, |x| < 2^52.
__device__ double rint_even(double x) {
  const double big = 4503599627370496.0;  // 2^52
  if (x >= 0)
    return ref_add(ref_add(x, big), -big);
  return -ref_add(ref_add(-x, big), -big);
}

__device__ double pow2(int e) {
  return __longlong_as_double(static_cast<long long>(e + 1023) << 52);
}

// e^x: Cody-Waite reduction by ln 2, then 1 + r (1 + r/2 (1 + ... (1 + r/13))).
__device__ double exp_ref(double x) {
  if (x != x)
    return x;
  if (x > 709.782712893384)
    return __longlong_as_double(0x7FF0000000000000ll);
  if (x < -746.0)
    return 0.0;
  const double n = rint_even(ref_mul(x, 1.4426950408889634));
  const double r = ref_add(ref_add(x, -ref_mul(n, 6.93147180369123816490e-01)),
                           -ref_mul(n, 1.90821492927058770002e-10));
  double p = 1.0;
  for (int i = 13; i >= 1; --i) p = ref_add(1.0, ref_div(ref_mul(r, p), static_cast<double>(i)));
  const int ni = static_cast<int>(n);
  const int n1 = ni / 2;
  return ref_mul(ref_mul(p, pow2(n1)), pow2(ni - n1));
}

}  // namespace

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
