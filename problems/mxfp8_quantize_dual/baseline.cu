/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_dual_rowwise",
                "grid":  ["ceil_div(M * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] },
              { "kernel": "sm90_bf16_mxfp8_quantize_dual_colwise",
                "grid":  ["ceil_div(K * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// Baseline for mxfp8_quantize_dual: what a competent CUDA user writes first, the two
// single-orientation kernels back to back (x is read twice). Rowwise: one thread per 32-element
// row block, scalar loads. Colwise: one thread per (column, 32-row block), neighbouring threads on
// neighbouring columns. amax in fp32, the E8M0 scale from the bits, cuda_fp8.h's saturating E4M3
// conversion. Correct, not tuned.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
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

namespace {
// One block: element i at x[i * x_stride], q[i]; writes the scale to *scale.
__device__ void quantize_block(const __nv_bfloat16* __restrict__ x, long long x_stride,
                               __nv_fp8_storage_t* __restrict__ q, unsigned char* scale) {
  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    v[i] = __bfloat162float(x[i * x_stride]);
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const int s = block_scale(amax, has_nan);
  *scale = static_cast<unsigned char>(s);
  if (s == kScaleNaN) {
    for (int i = 0; i < kBlock; ++i) q[i] = kE4M3NaN;
    return;
  }
  const float r = ldexpf(1.0f, 127 - s);  // 2^-127 is subnormal: needs no flush-to-zero
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
}
}  // namespace

// x (M,K); q (M,K), scales (M,K/32). Thread b: the b-th 32-element block in memory order.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_dual_rowwise(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q,
    unsigned char* __restrict__ scales, int M, int K) {
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= static_cast<long long>(M) * (K / kBlock)) return;
  quantize_block(x + b * kBlock, 1, q + b * kBlock, scales + b);
}

// x (M,K); q_t (K,M), scales_t (K,M/32). Thread t: column t % K, block t / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_dual_colwise(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q_t,
    unsigned char* __restrict__ scales_t, int M, int K) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * K) return;
  const long long k = t % K, b = t / K;
  quantize_block(x + b * kBlock * K + k, K, q_t + k * M + b * kBlock, scales_t + k * blocks + b);
}
