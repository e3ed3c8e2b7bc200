/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_mxfp8_bf16_dequantize_thread_per_element",
                "grid":  ["ceil_div(M * K, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["q", "scales", "y", "M", "K"] } ] }
*/
// Baseline for mxfp8_dequantize: the kernel a competent CUDA user writes first. One thread per
// element: one E4M3 byte and its scale byte loaded, the E4M3 value decoded with cuda_fp8.h (exact
// in fp16, then fp32), multiplied by 2^(S-127) built from bits (S = 0 is the fp32 subnormal
// 2^-127; the multiply must not flush to zero), rounded with __float2bfloat16_rn; NaN q or scale
// 0xFF write the canonical 0x7FC0 explicitly. Correct, not tuned: byte loads, 2-byte stores, and
// 32 threads re-reading the same scale byte.

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

namespace {
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned short kBf16NaN = 0x7FC0;
}  // namespace

// q (M,K) e4m3, scales (M,K/32) e8m0, y (M,K) bf16; row-major, one thread per element.
extern "C" __global__ void sm90_mxfp8_bf16_dequantize_thread_per_element(
    const __nv_fp8_storage_t* __restrict__ q, const unsigned char* __restrict__ scales,
    __nv_bfloat16* __restrict__ y, int M, int K) {
  const long long n = static_cast<long long>(M) * K;
  const long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const __nv_fp8_storage_t qi = q[i];
  const unsigned s = scales[i / kBlock];  // K % 32 == 0: blocks run flat through memory
  if (s == 0xFFu || (qi & 0x7F) == 0x7F) {
    y[i] = __ushort_as_bfloat16(kBf16NaN);
    return;
  }
  const float v = __half2float(__half(__nv_cvt_fp8_to_halfraw(qi, __NV_E4M3)));
  const float scale = __uint_as_float(s == 0 ? 0x00400000u : s << 23);  // 2^(S-127)
  y[i] = __float2bfloat16_rn(__fmul_rn(v, scale));
}
