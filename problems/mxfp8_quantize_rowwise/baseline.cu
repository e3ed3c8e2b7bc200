/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_rowwise_thread_per_block",
                "grid":  ["ceil_div(M * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] } ] }
*/
// Baseline for mxfp8_quantize_rowwise: the kernel a competent CUDA user writes first. One thread
// per 32-element block: scalar bf16 loads, amax in fp32, E8M0 scale from the bits, then each element
// scaled and converted with cuda_fp8.h's saturating E4M3 conversion. Correct, not tuned: each warp
// reads 32 blocks 64 bytes apart, two bytes per load.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned char kScaleNaN = 0xFF;
constexpr unsigned char kE4M3NaN = 0x7F;
}  // namespace

// x (M,K), q (M,K), scales (M,K/32); row-major, one thread per 32-element block.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_rowwise_thread_per_block(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q,
    unsigned char* __restrict__ scales, int M, int K) {
  const long long num_blocks = static_cast<long long>(M) * (K / kBlock);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= num_blocks) return;

  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    v[i] = __bfloat162float(x[b * kBlock + i]);
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }

  int s;
  if (has_nan) {
    s = kScaleNaN;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    // OCP: floor(log2(amax)) - emax(E4M3) = 8, biased by 127, clamped.
    if (isinf(amax)) s = kScaleNaN;
    else if (amax == 0.0f) s = 0;
    else s = min(max(ilogbf(amax) - 8 + 127, 0), 254);
  } else {
    // RCEIL: round amax / 448 up to a power of two.
    const float d = __fmul_rn(amax, 1.0f / 448.0f);
    const unsigned bits = __float_as_uint(d);
    const int e = static_cast<int>(bits >> 23);
    const unsigned mant = bits & 0x7FFFFF;
    if (isinf(d)) s = 254;
    else if (e == 0) s = mant > 0x400000 ? 1 : 0;  // subnormal d
    else s = min(e + (mant != 0 ? 1 : 0), 254);
  }
  scales[b] = static_cast<unsigned char>(s);

  if (s == kScaleNaN) {
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = kE4M3NaN;
    return;
  }
  const float r = ldexpf(1.0f, 127 - s);  // 2^-127 is subnormal: needs no flush-to-zero
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[b * kBlock + i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
}
