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
