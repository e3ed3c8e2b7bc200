/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_rmsnorm_mxfp8_quantize_row_per_cta",
                "grid":  ["M"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "weight", "y", "q", "scales", "M", "H"] } ] }
*/
// Baseline for rmsnorm_quantize: what a competent CUDA user writes first. One CTA per row: each
// thread sums squares of a strided share of the row in fp32, a shared-memory tree reduces them,
// r = rsqrtf(mean + eps); then one thread per 32-element block recomputes its y values from x
// (second read, mostly from L1/L2), stores y, and quantizes the block (amax in fp32, E8M0 from the
// bits, cuda_fp8.h's saturating E4M3 conversion). Scalar loads and stores. Correct, not tuned.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned char kScaleNaN = 0xFF;
constexpr unsigned char kE4M3NaN = 0x7F;

// E8M0 scale of a block from its amax and NaN flag, per the problem's rounding.
__device__ int block_scale(float amax, bool has_nan) {
  if (has_nan) return kScaleNaN;
  if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    // OCP: floor(log2(amax)) - emax(E4M3) = 8, biased by 127, clamped.
    if (isinf(amax)) return kScaleNaN;
    if (amax == 0.0f) return 0;
    return min(max(ilogbf(amax) - 8 + 127, 0), 254);
  }
  // RCEIL: round amax / 448 up to a power of two.
  const float d = __fmul_rn(amax, 1.0f / 448.0f);
  const unsigned bits = __float_as_uint(d);
  const int e = static_cast<int>(bits >> 23);
  const unsigned mant = bits & 0x7FFFFF;
  if (isinf(d)) return 254;
  if (e == 0) return mant > 0x400000 ? 1 : 0;  // subnormal d
  return min(e + (mant != 0 ? 1 : 0), 254);
}
}  // namespace

// x (M,H), weight (H), y (M,H) bf16; q (M,H) e4m3; scales (M,H/32). CTA: one row.
extern "C" __global__ void __launch_bounds__(THREADS) sm90_bf16_rmsnorm_mxfp8_quantize_row_per_cta(
    const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ weight,
    __nv_bfloat16* __restrict__ y, __nv_fp8_storage_t* __restrict__ q,
    unsigned char* __restrict__ scales, int M, int H) {
  __shared__ float partial[THREADS];
  const long long row = blockIdx.x;
  const __nv_bfloat16* xr = x + row * H;

  float sum = 0.0f;
  for (int h = threadIdx.x; h < H; h += THREADS) {
    const float v = __bfloat162float(xr[h]);
    sum += v * v;
  }
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int s = THREADS / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  const float r = rsqrtf(partial[0] / H + 1e-6f);

  for (int b = threadIdx.x; b < H / kBlock; b += THREADS) {
    float v[kBlock];
    float amax = 0.0f;
    bool has_nan = false;
#pragma unroll
    for (int i = 0; i < kBlock; ++i) {
      const int h = b * kBlock + i;
      const __nv_bfloat16 normed = __float2bfloat16_rn(__bfloat162float(xr[h]) * r);
      const __nv_bfloat16 out = __float2bfloat16_rn(__bfloat162float(weight[h]) *
                                                    __bfloat162float(normed));
      y[row * H + h] = out;
      v[i] = __bfloat162float(out);
      has_nan |= isnan(v[i]);
      amax = fmaxf(amax, fabsf(v[i]));
    }
    const int s = block_scale(amax, has_nan);
    scales[row * (H / kBlock) + b] = static_cast<unsigned char>(s);
    __nv_fp8_storage_t* qb = q + row * H + b * kBlock;
    if (s == kScaleNaN) {
      for (int i = 0; i < kBlock; ++i) qb[i] = kE4M3NaN;
      continue;
    }
    const float rs = ldexpf(1.0f, 127 - s);
#pragma unroll
    for (int i = 0; i < kBlock; ++i) {
      qb[i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], rs), __NV_SATFINITE, __NV_E4M3);
    }
  }
}
