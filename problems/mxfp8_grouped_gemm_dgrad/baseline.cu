/* warpsmith:plan
{ "knobs":  { "BM": [128], "BN": [128], "BK": [32], "TM": [8], "TN": [8] },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_dgrad_baseline",
                "grid": ["ceil_div(K, BN)", "ceil_div(M, BM)", "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["dc",
                               "dc_scales",
                               "bt",
                               "bt_scales",
                               "offs",
                               "da",
                               "M",
                               "E",
                               "N",
                               "K"] } ] }
*/
// Baseline for mxfp8_grouped_gemm_dgrad: the shared-memory tiled fp32 GEMM a competent CUDA user
// writes first: 128x128 output tiles, 8x8 outputs per thread in registers, 32-deep shared-memory
// slabs, CUDA-core fmaf, fp32 accumulation. Every 32-element MX block's fp32 partial sum is scaled
// by 2^(Sa-127) * 2^(Sb-127) exactly (ldexpf) and added to the fp32 accumulator. Correct, not
// tuned: no tensor cores, scalar loads, no pipelining.
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
constexpr int kScaleBlock = 32;  // contraction elements per scale

// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}

}  // namespace

// da [M,K] = MX(dc [M,N]) * MX(bt [g,K,N])^T per group g (blockIdx.z): contraction over N.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_mxfp8_grouped_gemm_dgrad_baseline(
    const unsigned char* __restrict__ dc, const unsigned char* __restrict__ dc_scales,
    const unsigned char* __restrict__ bt, const unsigned char* __restrict__ bt_scales,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ da, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
  const long long rows = e - s, cols = K, depth = N;
  ws::tiled_fma_gemm<kBM, kBN, kBK, kTM, kTN, kScaleBlock>(
      threadIdx.x, rows, cols, depth,
      [&](long long r, long long k) { return e4m3_value(dc[(s + r) * N + k]); },
      [&](long long c, long long k) { return e4m3_value(bt[(g * K + c) * N + k]); },
      [&](bool in, long long r, long long kb) {
        return in ? static_cast<int>(dc_scales[(s + r) * (N / 32) + kb]) : 127;
      },
      [&](float part, int sa, bool in, long long c, long long kb) {
        const int sb = in ? static_cast<int>(bt_scales[(g * K + c) * (N / 32) + kb]) : 127;
        const bool nan = sa == 0xFF || sb == 0xFF;
        return nan ? __int_as_float(0x7FC00000) : ldexpf(part, sa + sb - 254);
      },
      [&](long long r, long long c, float acc) { da[(s + r) * K + c] = __float2bfloat16_rn(acc); });
}
