/* warpsmith:plan
{ "knobs":  { "BM": [64], "BN": [64], "BK": [16], "TM": [4], "TN": [4] },
  "launch": [ { "kernel": "sm90_bf16_gemm_reference",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "b", "d", "M", "N", "K"] } ] }
*/
// Trusted GPU reference for bf16_gemm: a plain shared-memory tiled GEMM (64x64 output tile, 4x4 per
// thread), products in fp32 summed in contraction order with fmaf. Slow by design and never tuned;
// checked against the fp64 CPU reference by `warpsmith problems verify`.
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
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

}  // namespace

// d [M,N] = a [M,K] * b [N,K]^T, bf16 in and out, fp32 accumulation.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_bf16_gemm_reference(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,
    __nv_bfloat16* __restrict__ d, int M, int N, int K) {
  const long long rows = M, cols = N, depth = K;
  const auto load_a = [&](long long r, long long k) { return bf16_value(a[r * K + k]); };
  const auto load_b = [&](long long c, long long k) { return bf16_value(b[c * K + k]); };
  const auto store = [&](long long r, long long c, float v) {
    d[r * N + c] = __float2bfloat16_rn(v);
  };
  tiled_gemm<kBM, kBN, kBK, kTM, kTN>(threadIdx.x, rows, cols, depth, load_a, load_b, store);
}
