/* warpsmith:plan
{ "knobs":  { "BM": [128, 64], "BN": [128, 64], "BK": [32, 64], "WM": [64, 32], "WN": [32, 16] },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_fwd_mma",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)", "E"],
                "block": ["32 * (BM / WM) * (BN / WN)"], "smem": "0",
                "args": ["a", "a_scales", "b", "b_scales", "offs", "c", "M", "E", "N", "K"] } ] }
*/
// Starting kernel for mxfp8_grouped_gemm_fwd: a plain tensor-core tiled GEMM (mma.sync m16n8k16,
// bf16 in, fp32 accumulate, the Ampere-style instruction both sm_90a and sm_100a run). Each block
// stages a BM x BK slab of A and a BN x BK slab of B in shared memory as bf16; each warp owns a WM
// x WN piece of the BM x BN output tile as m16n8 tiles in registers; partial sums are promoted into
// fp32 accumulators once, after the whole contraction. MX operands are dequantized into bf16 with
// the E8M0 scale folded in (e4m3 * 2^(S-127)): exact while the result stays within bf16's range
// (scales from about 2^-124 to 2^120, which covers this problem's inputs), so the products are the
// MX products and only the accumulation order differs. Knobs: BM, BN (block tile), BK (slab depth),
// WM, WN (warp tile). No pipelining, no TMA, no wgmma/tcgen05, element-wise global loads: the way
// up is sm_90a wgmma (or tcgen05 on sm_100a) fed by TMA with a multi-stage pipeline.
//
// Evaluate:
//   build/warpsmith eval mxfp8_grouped_gemm_fwd problems/mxfp8_grouped_gemm_fwd/starting.cu
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "ws/mma_sync_tile.cuh"

#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 32
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 32
#endif

namespace {

constexpr int kBM = BM, kBN = BN, kBK = BK, kWM = WM, kWN = WN;
constexpr int kThreads = 32 * (kBM / kWM) * (kBN / kWN);
constexpr long long kPromote = 1ll << 62;  // one promotion, at the end

// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}

}  // namespace

// c [M,N] = MX(a [M,K]) * MX(b [g,N,K])^T per group g (blockIdx.z).
extern "C" __global__ void __launch_bounds__(kThreads) sm90_mxfp8_grouped_gemm_fwd_mma(
    const unsigned char* __restrict__ a, const unsigned char* __restrict__ a_scales,
    const unsigned char* __restrict__ b, const unsigned char* __restrict__ b_scales,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c_out, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
  const long long rows = e - s, cols = N, depth = K;
  // MX operands dequantized into bf16 with the E8M0 scale folded in (exact: see the header).
  const auto load_a = [&](long long r, long long k) {
    return ldexpf(e4m3_value(a[(s + r) * K + k]), a_scales[(s + r) * (K / 32) + k / 32] - 127);
  };
  const auto load_b = [&](long long c, long long k) {
    return ldexpf(e4m3_value(b[(g * N + c) * K + k]),
                  b_scales[(g * N + c) * (K / 32) + k / 32] - 127);
  };
  const auto promote = [](float part, long long, long long, long long) { return part; };
  const auto store = [&](long long r, long long c, float v) {
    c_out[(s + r) * N + c] = __float2bfloat16_rn(v);
  };
  ws::mma_sync_gemm<kBM, kBN, kBK, kWM, kWN, kPromote>(threadIdx.x, rows, cols, depth, load_a,
                                                       load_b, promote, store);
}
