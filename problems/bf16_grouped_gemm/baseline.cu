/* warpsmith:plan
{ "knobs":  { "BM": [128], "BN": [128], "BK": [32], "TM": [8], "TN": [8] },
  "launch": [ { "kernel": "sm90_bf16_grouped_gemm_baseline",
                "grid": ["ceil_div((form == 0) * N + (form != 0) * K, BN)",
                         "ceil_div((form == 2) * N + (form != 2) * M, BM)",
                         "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "b", "offs", "out", "M", "E", "N", "K"] } ] }
*/
// Baseline for bf16_grouped_gemm: the shared-memory tiled fp32 GEMM a competent CUDA user writes
// first: 128x128 output tiles, 8x8 outputs per thread in registers, 32-deep shared-memory slabs,
// CUDA-core fmaf, fp32 accumulation. Correct, not tuned: no tensor cores, scalar loads, no
// pipelining.
#include <cuda_bf16.h>

#include "ws/tiled_fma_gemm.cuh"

#ifndef WS_FORM
#error "compile with -DWS_FORM (the problem's form parameter)"
#endif
#if WS_FORM == 0
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * K + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (c)) * K + (k)])
#define OUT_INDEX(r, c) ((s + (r)) * N + (c))
#elif WS_FORM == 1
#define LOAD_A(r, k) bf16_value(a[(s + (r)) * N + (k)])
#define LOAD_B(c, k) bf16_value(b[(g * N + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((s + (r)) * K + (c))
#else
#define LOAD_A(r, k) bf16_value(a[(s + (k)) * N + (r)])
#define LOAD_B(c, k) bf16_value(b[(s + (k)) * K + (c)])
#define OUT_INDEX(r, c) ((g * N + (r)) * K + (c))
#endif

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

// the three forms of spec.json (WS_FORM: 0 fwd, 1 dgrad, 2 wgrad); blockIdx.z is the group.
extern "C" __global__ void __launch_bounds__(kThreads) sm90_bf16_grouped_gemm_baseline(
    const unsigned short* __restrict__ a, const unsigned short* __restrict__ b,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ out, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
#if WS_FORM == 0  // fwd: out[s+r, c] = sum_k a[s+r, k] * b[g, c, k]
  const long long rows = e - s, cols = N, depth = K;
#elif WS_FORM == 1  // dgrad: out[s+r, c] = sum_n a[s+r, n] * b[g, n, c]
  const long long rows = e - s, cols = K, depth = N;
#else  // wgrad: out[g, r, c] = sum_{t in [s, e)} a[t, r] * b[t, c]
  const long long rows = N, cols = K, depth = e - s;
#endif
  ws::tiled_fma_gemm<kBM, kBN, kBK, kTM, kTN, 0>(
      threadIdx.x, rows, cols, depth,
      [&](long long r, long long k) { return LOAD_A(r, k); },
      [&](long long c, long long k) { return LOAD_B(c, k); },
      nullptr, nullptr,
      [&](long long r, long long c, float acc) {
        out[OUT_INDEX(r, c)] = __float2bfloat16_rn(acc);
      });
}
