/* warpsmith:plan
{ "knobs":  { "BM": [64], "BN": [64], "BK": [16], "TM": [4], "TN": [4] },
  "launch": [ { "kernel": "sm90_fp8_blockwise_grouped_gemm_reference",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)", "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "a_scales", "b", "b_scales", "offs", "c", "M", "E", "N", "K"] } ] }
*/
// Trusted GPU reference for fp8_blockwise_grouped_gemm: a plain shared-memory tiled GEMM (64x64
// output tile, 4x4 per thread), products in fp32 summed in contraction order with fmaf. Every
// 128-element block's fp32 partial sum is promoted: times the 1x128 activation scale and the
// 128x128 weight scale, added to the fp32 accumulator. Slow by design and never tuned; checked
// against the fp64 CPU reference by `warpsmith problems verify`.
#include <cuda_bf16.h>

#include "ref/tiled_gemm.cuh"

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 64
#endif
#ifndef BK
#define BK 16
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif

namespace {

constexpr int kBM = BM, kBN = BN, kBK = BK, kTM = TM, kTN = TN;
constexpr int kThreads = (kBM / kTM) * (kBN / kTN);
constexpr int kScaleBlock = 128;  // contraction elements per scale
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

}  // namespace

// c [M,N] = sum over 128-blocks j of a_scales[j, m] * b_scales[g, n/128, j] * (a * b^T)_j.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_fp8_blockwise_grouped_gemm_reference(
    const unsigned char* __restrict__ a, const float* __restrict__ a_scales,
    const unsigned char* __restrict__ b, const float* __restrict__ b_scales,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c_out, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
  const long long rows = e - s, cols = N, depth = K;
  const auto load_a = [&](long long r, long long k) { return e4m3_value(a[(s + r) * K + k]); };
  const auto load_b = [&](long long c, long long k) { return e4m3_value(b[(g * N + c) * K + k]); };
  const auto scale_a = [&](long long r, long long kb) { return a_scales[kb * M + s + r]; };
  const auto scale_b = [&](long long c, long long kb) {
    return b_scales[(g * (N / 128) + c / 128) * (K / 128) + kb];
  };
  const auto store = [&](long long r, long long c, float v) {
    c_out[(s + r) * N + c] = __float2bfloat16_rn(v);
  };
  // Every 128 contraction elements (one scale block): promotion of the fp32 partial sum, times
  // the activation's 1x128 scale and the weight's 128x128 scale, into the accumulator.
  block_scaled_tiled_gemm<kBM, kBN, kBK, kTM, kTN, kScaleBlock>(
      threadIdx.x, rows, cols, depth, load_a, load_b, scale_a, scale_b, 0.0f,
      [](float part, float sa, float sb) { return part * sa * sb; }, store);
}
