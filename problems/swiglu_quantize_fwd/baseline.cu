/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_rowwise",
                "grid":  ["ceil_div(M * (I / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "q", "scales", "M", "I"] },
              { "kernel": "sm90_bf16_swiglu_mxfp8_quantize_colwise",
                "grid":  ["ceil_div(I * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "q_t", "scales_t", "M", "I"] } ] }
*/
// Baseline for swiglu_quantize_fwd: what a competent CUDA user writes first, two kernels that
// each recompute the activation (hpre is read twice). Rowwise: one thread per 32-element block of
// a row of A; colwise: one thread per (column, 32-row block), neighbouring threads on neighbouring
// columns. A in fp32 with expf, rounded to bf16, then amax in fp32, the E8M0 scale from the bits
// and cuda_fp8.h's saturating E4M3 conversion. Scalar loads. Correct, not tuned.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "ws/mx_naive.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR) || \
    !defined(WS_VARIANT) || !defined(WS_VARIANT_STANDARD) || !defined(WS_VARIANT_CLAMPED)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1 -DWS_VARIANT=<0|1> -DWS_VARIANT_STANDARD=0 -DWS_VARIANT_CLAMPED=1"
#endif

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
using ws::mx_naive::quantize32;

// A = act(g, u) in fp32, rounded to bf16 and back (the value that is quantized).
__device__ float swiglu_bf16(__nv_bfloat16 gb, __nv_bfloat16 ub) {
  float g = __bfloat162float(gb), u = __bfloat162float(ub);
#if WS_VARIANT == WS_VARIANT_CLAMPED
  g = fminf(g, 7.0f);  // inputs are finite: fminf's NaN rule never matters here
  u = fmaxf(fminf(u, 7.0f), -7.0f);
  const float a = g / (1.0f + expf(-1.702f * g)) * (u + 1.0f);
#else
  const float a = g / (1.0f + expf(-g)) * u;
#endif
  return __bfloat162float(__float2bfloat16_rn(a));
}
}  // namespace

// hpre (M,2I) = gate || up; q (M,I), scales (M,I/32). Thread: row t / (I/32), block t % (I/32).
extern "C" __global__ void sm90_bf16_swiglu_mxfp8_quantize_rowwise(
    const __nv_bfloat16* __restrict__ hpre, __nv_fp8_storage_t* __restrict__ q,
    unsigned char* __restrict__ scales, int M, int I) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * (I / kBlock)) return;
  const long long m = t / (I / kBlock), b = t % (I / kBlock);
  const __nv_bfloat16* row = hpre + m * 2 * I;
  float v[kBlock];
#pragma unroll
  for (int j = 0; j < kBlock; ++j) v[j] = swiglu_bf16(row[b * kBlock + j], row[I + b * kBlock + j]);
  scales[t] = static_cast<unsigned char>(quantize32<kFloor>(v, q + m * I + b * kBlock));
}

// hpre (M,2I); q_t (I,M), scales_t (I,M/32). Thread: column t % I, block t / I.
extern "C" __global__ void sm90_bf16_swiglu_mxfp8_quantize_colwise(
    const __nv_bfloat16* __restrict__ hpre, __nv_fp8_storage_t* __restrict__ q_t,
    unsigned char* __restrict__ scales_t, int M, int I) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * I) return;
  const long long i = t % I, b = t / I;
  float v[kBlock];
#pragma unroll
  for (int j = 0; j < kBlock; ++j) {
    const __nv_bfloat16* row = hpre + (b * kBlock + j) * 2 * I;
    v[j] = swiglu_bf16(row[i], row[I + i]);
  }
  scales_t[i * blocks + b] =
      static_cast<unsigned char>(quantize32<kFloor>(v, q_t + i * M + b * kBlock));
}
