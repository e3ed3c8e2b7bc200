/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "moe_unpermute_combine_thread_per_element",
                "grid":  ["ceil_div(T * H, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["y_p", "w", "slot_row", "y_shared", "y", "T", "H", "K"] } ] }
*/
// Baseline for moe_unpermute_combine: the kernel a competent CUDA user writes first. One thread per
// output element: for j = 0..K-1 in order, acc = fmaf(w[t, j], y_p[slot_row[t, j], h], acc) from
// +0 (written as __fmaf_rn so the compiler cannot choose otherwise), the shared expert added after
// (shared=add), one __float2bfloat16_rn at the end. Correct, not tuned: 2-byte loads, and every
// thread re-reads its token's K weights and row indices.

#include <cuda_bf16.h>

#if !defined(WS_SHARED) || !defined(WS_SHARED_ADD)
#error "compile with the problem's parameters (-DWS_SHARED=..., -DWS_SHARED_ADD=1)"
#endif
#ifndef THREADS
#define THREADS 256
#endif

// y_p (MP,H) bf16, w (T,K) f32, slot_row (T,K) i32, y_shared (T,H) bf16, y (T,H) bf16.
extern "C" __global__ void moe_unpermute_combine_thread_per_element(
    const __nv_bfloat16* __restrict__ y_p, const float* __restrict__ w,
    const int* __restrict__ slot_row, const __nv_bfloat16* __restrict__ y_shared,
    __nv_bfloat16* __restrict__ y, int T, int H, int K) {
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= static_cast<long long>(T) * H)
    return;
  const long long t = i / H;
  const long long h = i % H;
  float acc = 0.0f;
  for (int j = 0; j < K; ++j) {
    const long long r = slot_row[t * K + j];
    acc = __fmaf_rn(w[t * K + j], __bfloat162float(y_p[r * H + h]), acc);
  }
#if WS_SHARED == WS_SHARED_ADD
  acc = __fadd_rn(acc, __bfloat162float(y_shared[i]));
#endif
  y[i] = __float2bfloat16_rn(acc);
}
