/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_rowwise",
                "grid":  ["ceil_div(M * (2 * I / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q", "scales", "M", "I"] },
              { "kernel": "sm90_bf16_dswiglu_mxfp8_quantize_colwise",
                "grid":  ["ceil_div(2 * I * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["hpre", "da", "q_t", "scales_t", "M", "I"] } ] }
*/
// Baseline for swiglu_quantize_bwd: what a competent CUDA user writes first, two kernels that
// each recompute the gradients (hpre and dA are read twice). Rowwise: one thread per 32-element
// block of a row of dhpre = [dg || du]; colwise: one thread per (column, 32-row block),
// neighbouring threads on neighbouring columns. Gradients in fp32 with expf, rounded to bf16, then
// amax in fp32, the E8M0 scale from the bits and cuda_fp8.h's saturating E4M3 conversion. Scalar
// loads. Correct, not tuned.

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

// dhpre[m][c] in fp32, rounded to bf16 and back: dg for c < I, du for c >= I.
__device__ float dswiglu_bf16(const __nv_bfloat16* hpre, const __nv_bfloat16* da, long long m,
                              long long c, int I) {
  const long long i = c < I ? c : c - I;
  const float g = __bfloat162float(hpre[m * 2 * I + i]);
  const float u = __bfloat162float(hpre[m * 2 * I + I + i]);
  const float d = __bfloat162float(da[m * I + i]);
  float v;
#if WS_VARIANT == WS_VARIANT_CLAMPED
  const float gc = fminf(g, 7.0f), uc = fmaxf(fminf(u, 7.0f), -7.0f);  // inputs are finite
  const float s = 1.0f / (1.0f + expf(-1.702f * gc));
  if (c >= I) v = (u >= -7.0f && u <= 7.0f) ? d * (gc * s) : 0.0f;
  else v = g <= 7.0f ? d * (uc + 1.0f) * (s * (1.0f + 1.702f * gc * (1.0f - s))) : 0.0f;
#else
  const float s = 1.0f / (1.0f + expf(-g));
  if (c >= I) v = d * (g * s);
  else v = d * u * (s * (1.0f + g * (1.0f - s)));
#endif
  return __bfloat162float(__float2bfloat16_rn(v));
}
}  // namespace

// hpre (M,2I), da (M,I); q (M,2I), scales (M,2I/32). Thread: row t / (2I/32), block t % (2I/32).
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_rowwise(
    const __nv_bfloat16* __restrict__ hpre, const __nv_bfloat16* __restrict__ da,
    __nv_fp8_storage_t* __restrict__ q, unsigned char* __restrict__ scales, int M, int I) {
  const long long blocks = 2LL * I / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * blocks) return;
  const long long m = t / blocks, b = t % blocks;
  float v[kBlock];
#pragma unroll
  for (int j = 0; j < kBlock; ++j) v[j] = dswiglu_bf16(hpre, da, m, b * kBlock + j, I);
  scales[t] = static_cast<unsigned char>(quantize32<kFloor>(v, q + m * 2 * I + b * kBlock));
}

// hpre (M,2I), da (M,I); q_t (2I,M), scales_t (2I,M/32). Thread: column t % 2I, block t / 2I.
extern "C" __global__ void sm90_bf16_dswiglu_mxfp8_quantize_colwise(
    const __nv_bfloat16* __restrict__ hpre, const __nv_bfloat16* __restrict__ da,
    __nv_fp8_storage_t* __restrict__ q_t, unsigned char* __restrict__ scales_t, int M, int I) {
  const long long blocks = M / kBlock;
  const long long cols = 2LL * I;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * cols) return;
  const long long c = t % cols, b = t / cols;
  float v[kBlock];
#pragma unroll
  for (int j = 0; j < kBlock; ++j) v[j] = dswiglu_bf16(hpre, da, b * kBlock + j, c, I);
  scales_t[c * blocks + b] =
      static_cast<unsigned char>(quantize32<kFloor>(v, q_t + c * M + b * kBlock));
}
