/* warpsmith:plan
{ "knobs":  { "BM": [128], "BN": [128], "BK": [32], "TM": [8], "TN": [8] },
  "launch": [ { "kernel": "sm90_fp8_rowwise_gemm_baseline",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "b", "a_scale", "b_scale", "d", "M", "N", "K"] } ] }
*/
// Baseline for fp8_rowwise_gemm: the shared-memory tiled fp32 GEMM a competent CUDA user writes
// first: 128x128 output tiles, 8x8 outputs per thread in registers, 32-deep shared-memory slabs,
// CUDA-core fmaf, fp32 accumulation. Correct, not tuned: no tensor cores, scalar loads, no
// pipelining.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "ws/tiled_fma_gemm.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif

namespace {

constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);

// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}

}  // namespace

// d [M,N] = (a [M,K] * b [N,K]^T) * a_scale[m] * b_scale[n]; e4m3 in, bf16 out, fp32 accumulation.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_fp8_rowwise_gemm_baseline(
    const unsigned char* __restrict__ a, const unsigned char* __restrict__ b,
    const float* __restrict__ a_scale, const float* __restrict__ b_scale,
    __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  const long long rows = M, cols = N, depth = K;
  ws::tiled_fma_gemm<kBM, kBN, kBK, kTM, kTN, 0>(
      threadIdx.x, rows, cols, depth,
      [&](long long r, long long k) { return e4m3_value(a[r * K + k]); },
      [&](long long c, long long k) { return e4m3_value(b[c * K + k]); },
      nullptr, nullptr,
      [&](long long r, long long c, float acc) {
        d[r * N + c] = __float2bfloat16_rn(acc * a_scale[r] * b_scale[c]);
      });
}
