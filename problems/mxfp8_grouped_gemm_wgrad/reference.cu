/* warpsmith:plan
{ "knobs":  { "BM": [64], "BN": [64], "BK": [16], "TM": [4], "TN": [4] },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_wgrad_reference",
                "grid": ["ceil_div(K, BN)", "ceil_div(N, BM)", "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["dct",
                               "dct_scales",
                               "xt",
                               "xt_scales",
                               "offs",
                               "db",
                               "M",
                               "E",
                               "N",
                               "K"] } ] }
*/
// Trusted GPU reference for mxfp8_grouped_gemm_wgrad: a plain shared-memory tiled GEMM (64x64
// output tile, 4x4 per thread), products in fp32 summed in contraction order with fmaf. Every
// 32-element MX block's fp32 partial sum is scaled by 2^(Sa-127) * 2^(Sb-127) exactly (ldexpf) and
// added to the fp32 accumulator. Slow by design and never tuned; checked against the fp64 CPU
// reference by `warpsmith problems verify`.
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
constexpr int kScaleBlock = 32;  // contraction elements per scale
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

}  // namespace

// db [g,N,K] = MX(dct [N, s:e]) * MX(xt [K, s:e])^T per group g (blockIdx.z), f32 out.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_mxfp8_grouped_gemm_wgrad_reference(
    const unsigned char* __restrict__ dct, const unsigned char* __restrict__ dct_scales,
    const unsigned char* __restrict__ xt, const unsigned char* __restrict__ xt_scales,
    const int* __restrict__ offs, float* __restrict__ db, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
  // Contraction over the group's tokens; an empty group writes zeros.
  const long long rows = N, cols = K, depth = e - s;
  const auto load_a = [&](long long r, long long k) { return e4m3_value(dct[r * M + s + k]); };
  const auto load_b = [&](long long c, long long k) { return e4m3_value(xt[c * M + s + k]); };
  const auto scale_a = [&](long long r, long long kb) {
    return static_cast<int>(dct_scales[r * (M / 32) + s / 32 + kb]);
  };
  const auto scale_b = [&](long long c, long long kb) {
    return static_cast<int>(xt_scales[c * (M / 32) + s / 32 + kb]);
  };
  const auto store = [&](long long r, long long c, float v) { db[(g * N + r) * K + c] = v; };
  // Every 32 contraction elements (one MX block): the block's partial sum times both scales,
  // 2^(Sa-127) * 2^(Sb-127) applied as one exact power of two, into the fp32 accumulator; rows
  // and columns outside the problem take the neutral scale 127.
  block_scaled_tiled_gemm<kBM, kBN, kBK, kTM, kTN, kScaleBlock>(
      threadIdx.x, rows, cols, depth, load_a, load_b, scale_a, scale_b, 127,
      [](float part, int sa, int sb) { return mx_scaled(part, sa, sb); }, store);
}
