/* warpsmith:plan
{ "knobs":  { "BM": [128], "BN": [128], "BK": [32], "TM": [8], "TN": [8] },
  "launch": [ { "kernel": "sm90_bf16_gemm_baseline",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "b", "d", "M", "N", "K"] } ] }
*/
// Baseline for bf16_gemm: the shared-memory tiled fp32 GEMM a competent CUDA user writes first:
// 128x128 output tiles, 8x8 outputs per thread in registers, 32-deep shared-memory slabs, CUDA-core
// fmaf, fp32 accumulation. Correct, not tuned: no tensor cores, scalar loads, no pipelining.
#include <cuda_bf16.h>

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

// The exact value of a bf16 bit pattern.
__device__ __forceinline__ float bf16_value(unsigned short b) {
  return __uint_as_float(static_cast<unsigned>(b) << 16);
}

}  // namespace

// d [M,N] = a [M,K] * b [N,K]^T, bf16 in and out, fp32 accumulation.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_bf16_gemm_baseline(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,
    __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  const long long rows = M, cols = N, depth = K;
  ws::tiled_fma_gemm<kBM, kBN, kBK, kTM, kTN, 0>(
      threadIdx.x, rows, cols, depth,
      [&](long long r, long long k) { return bf16_value(a[r * K + k]); },
      [&](long long c, long long k) { return bf16_value(b[c * K + k]); },
      nullptr, nullptr,
      [&](long long r, long long c, float acc) { d[r * N + c] = __float2bfloat16_rn(acc); });
}
