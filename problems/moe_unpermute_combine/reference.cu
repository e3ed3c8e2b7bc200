/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "moe_unpermute_combine_naive",
                "grid":  ["ceil_div(T * H, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["y_p", "w", "slot_row", "y_shared", "y", "T", "H", "K"] } ] }
*/
// Trusted GPU reference for moe_unpermute_combine: one thread per output element, the rules of
// spec.json with every rounding explicit: __fmaf_rn per slot in slot order from +0, __fadd_rn for
// the shared expert, and the bf16 rounding (nearest even, NaN -> 0x7FC0) done on the bits. Slow by
// design; never tune this file.
//
// Checked bit for bit against problems/moe_unpermute_combine/reference.cc by
// `warpsmith problems verify`.

#if !defined(WS_SHARED) || !defined(WS_SHARED_NONE) || !defined(WS_SHARED_ADD)
#error "needs the parameters -DWS_SHARED=<0|1> -DWS_SHARED_NONE=0 -DWS_SHARED_ADD=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/bf16.cuh"

// y_p (MP,H) bf16, w (T,K) f32, slot_row (T,K) i32, y_shared (T,H) bf16, y (T,H) bf16.
extern "C" __global__ void moe_unpermute_combine_naive(const unsigned short* y_p, const float* w,
                                                       const int* slot_row,
                                                       const unsigned short* y_shared,
                                                       unsigned short* y, int T, int H, int K) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(T) * H)
    return;
  const long long t = i / H;
  const long long h = i % H;
  float acc = 0.0f;
  for (int j = 0; j < K; ++j) {
    const long long r = slot_row[t * K + j];
    acc = __fmaf_rn(w[t * K + j], bf16_float(y_p[r * H + h]), acc);
  }
#if WS_SHARED == WS_SHARED_ADD
  acc = __fadd_rn(acc, bf16_float(y_shared[i]));
#endif
  y[i] = bf16_rne(acc);
}
