/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_colwise_thread_per_block",
                "grid":  ["ceil_div(K * (M / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q_t", "scales_t", "M", "K"] } ] }
*/
// Baseline for mxfp8_quantize_colwise: the kernel a competent CUDA user writes first. One thread
// per (column, 32-row block), neighbouring threads on neighbouring columns, so each of the 32
// scalar bf16 loads of a warp reads 64 contiguous bytes of one row. amax in fp32, the E8M0 scale
// from the bits, each element scaled and converted with cuda_fp8.h's saturating E4M3 conversion,
// then 32 single-byte stores into the thread's row of q_t: each warp store instruction touches 32
// rows of q_t, M bytes apart. Correct, not tuned.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#include "ws/mx_naive.cuh"

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned char kScaleNaN = 0xFF;
constexpr unsigned char kE4M3NaN = 0x7F;
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;
}  // namespace

// x (M,K) row-major; q_t (K,M), scales_t (K,M/32) row-major. Thread t: column t % K, block t / K.
extern "C" __global__ void sm90_bf16_mxfp8_quantize_colwise_thread_per_block(
    const __nv_bfloat16* __restrict__ x, __nv_fp8_storage_t* __restrict__ q_t,
    unsigned char* __restrict__ scales_t, int M, int K) {
  const long long blocks = M / kBlock;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= blocks * K) return;
  const long long k = t % K, b = t / K;

  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    v[i] = __bfloat162float(x[(b * kBlock + i) * K + k]);
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  const int s = ws::mx_naive::block_scale<kFloor>(amax, has_nan);
  scales_t[k * blocks + b] = static_cast<unsigned char>(s);

  __nv_fp8_storage_t* q = q_t + k * M + b * kBlock;
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
