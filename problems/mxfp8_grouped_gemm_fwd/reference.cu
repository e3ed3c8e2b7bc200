/* warpsmith:plan
{ "knobs":  { "BM": [64], "BN": [64], "BK": [16], "TM": [4], "TN": [4] },
  "launch": [ { "kernel": "sm90_mxfp8_grouped_gemm_fwd_reference",
                "grid": ["ceil_div(N, BN)", "ceil_div(M, BM)", "E"],
                "block": ["(BM / TM) * (BN / TN)"], "smem": "0",
                "args": ["a", "a_scales", "b", "b_scales", "offs", "c", "M", "E", "N", "K"] } ] }
*/
// Trusted GPU reference for mxfp8_grouped_gemm_fwd: a plain shared-memory tiled GEMM (64x64 output
// tile, 4x4 per thread), products in fp32 summed in contraction order with fmaf. Every 32-element
// MX block's fp32 partial sum is scaled by 2^(Sa-127) * 2^(Sb-127) exactly (ldexpf) and added to
// the fp32 accumulator. Slow by design and never tuned; checked against the fp64 CPU reference by
// `warpsmith problems verify`.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

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
static_assert(kScaleBlock % kBK == 0, "slabs never straddle a scale block");
static_assert(kBM % kTM == 0 && kBN % kTN == 0, "a whole number of micro-tiles per tile");
static_assert(kThreads >= 1 && kThreads <= 1024, "threads per block");
static_assert(kBK * (kBM + kBN) * 4 <= 48 * 1024, "static shared memory");

// The exact value of an E4M3 byte (NaN for S.1111.111), through the exact fp16 conversion.
__device__ __forceinline__ float e4m3_value(unsigned char q) {
  return __half2float(__half(__nv_cvt_fp8_to_halfraw(q, __NV_E4M3)));
}

}  // namespace

// c [M,N] = MX(a [M,K]) * MX(b [g,N,K])^T per group g (blockIdx.z).
extern "C" __global__ void __launch_bounds__(kThreads) sm90_mxfp8_grouped_gemm_fwd_reference(
    const unsigned char* __restrict__ a, const unsigned char* __restrict__ a_scales,
    const unsigned char* __restrict__ b, const unsigned char* __restrict__ b_scales,
    const int* __restrict__ offs, __nv_bfloat16* __restrict__ c_out, int M, int E, int N, int K) {
  // Group g (blockIdx.z) holds rows [s, e) of the token dimension.
  const long long g = blockIdx.z;
  const long long s = g == 0 ? 0 : offs[g - 1], e = offs[g];
  const long long rows = e - s, cols = N, depth = K;
  const long long row0 = static_cast<long long>(blockIdx.y) * kBM;
  const long long col0 = static_cast<long long>(blockIdx.x) * kBN;
  if (row0 >= rows || col0 >= cols) return;
  __shared__ float As[kBK][kBM];
  __shared__ float Bs[kBK][kBN];
  const int tid = threadIdx.x;
  const int tr = tid / (kBN / kTN), tc = tid % (kBN / kTN);
  float acc[kTM][kTN];
  float part[kTM][kTN];  // the current scale block's partial sums
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      acc[i][j] = 0.0f;
      part[i][j] = 0.0f;
    }
  }
  for (long long k0 = 0; k0 < depth; k0 += kBK) {
    // Consecutive threads take consecutive contraction indices of one row.
    for (int i = tid; i < kBM * kBK; i += kThreads) {
      const long long r = row0 + i / kBK, k = k0 + i % kBK;
      As[i % kBK][i / kBK] = r < rows && k < depth ? e4m3_value(a[(s + r) * K + k]) : 0.0f;
    }
    for (int i = tid; i < kBN * kBK; i += kThreads) {
      const long long c = col0 + i / kBK, k = k0 + i % kBK;
      Bs[i % kBK][i / kBK] = c < cols && k < depth ? e4m3_value(b[(g * N + c) * K + k]) : 0.0f;
    }
    __syncthreads();
#pragma unroll 4
    for (int kk = 0; kk < kBK; ++kk) {
      float av[kTM], bv[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) av[i] = As[kk][tr * kTM + i];
#pragma unroll
      for (int j = 0; j < kTN; ++j) bv[j] = Bs[kk][tc * kTN + j];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) part[i][j] = fmaf(av[i], bv[j], part[i][j]);
      }
    }
    // Every 32 contraction elements (one MX block): the block's partial sum times both scales,
    // 2^(Sa-127) * 2^(Sb-127) applied as one exact power of two, into the fp32 accumulator.
    if ((k0 + kBK) % kScaleBlock == 0 || k0 + kBK >= depth) {
      const long long kb = k0 / kScaleBlock;
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        const long long r = row0 + tr * kTM + i;
        const int sa = r < rows ? static_cast<int>(a_scales[(s + r) * (K / 32) + kb]) : 127;
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          const long long c = col0 + tc * kTN + j;
          const int sb = c < cols ? static_cast<int>(b_scales[(g * N + c) * (K / 32) + kb]) : 127;
          const bool nan = sa == 0xFF || sb == 0xFF;
          acc[i][j] += nan ? __int_as_float(0x7FC00000) : ldexpf(part[i][j], sa + sb - 254);
          part[i][j] = 0.0f;
        }
      }
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const long long r = row0 + tr * kTM + i, c = col0 + tc * kTN + j;
      if (r < rows && c < cols)
        c_out[(s + r) * N + c] = __float2bfloat16_rn(acc[i][j]);
    }
  }
}
